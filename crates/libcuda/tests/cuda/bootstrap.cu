// The cudart contract without kernels: NVIDIA's runtime bootstraps against
// anycuda's libcuda.so.1 (cuGetProcAddress, export tables, integrity check,
// primary context) and uses memory, streams and events. Prints "PASS
// bootstrap" and exits 0 when every check holds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static int failures = 0;

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            printf("%s:%d: %s -> %s (%d): %s\n", __FILE__, __LINE__, #call,           \
                   cudaGetErrorName(e_), (int)e_, cudaGetErrorString(e_));            \
            printf("FAIL bootstrap\n");                                               \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define EXPECT(cond, ...)                                                             \
    do {                                                                              \
        if (!(cond)) {                                                                \
            printf("%s:%d: expected %s: ", __FILE__, __LINE__, #cond);                \
            printf(__VA_ARGS__);                                                      \
            printf("\n");                                                             \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static void CUDART_CB on_host(void *p) { *(int *)p += 1; }

int main() {
    int count = 0, drv = 0, rt = 0;
    CHECK(cudaDriverGetVersion(&drv));
    CHECK(cudaRuntimeGetVersion(&rt));
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "%d devices", count);
    EXPECT(drv >= 12000, "driver version %d", drv);

    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    EXPECT(strncmp(p.name, "anycuda", 7) == 0, "name '%s'", p.name);
    EXPECT(p.warpSize == 32, "warp size %d", p.warpSize);
    EXPECT(p.maxThreadsPerBlock == 1024, "max threads %d", p.maxThreadsPerBlock);
    EXPECT(p.totalGlobalMem > (64u << 20), "total memory %zu", p.totalGlobalMem);
    EXPECT(p.major * 10 + p.minor >= 50, "compute capability %d.%d", p.major, p.minor);
    int v = 0;
    CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxBlockDimZ, 0));
    EXPECT(v == 64, "max block z %d", v);
    CHECK(cudaSetDevice(0));

    // Device memory, explicit copies, memset.
    const size_t n = 1 << 20;
    unsigned char *h = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 7 + 3);
    unsigned char *d = nullptr, *d2 = nullptr;
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMalloc(&d2, n));
    CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d2, d, n, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(back, d2, n, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(h, back, n) == 0, "round trip through device memory differs");
    CHECK(cudaMemset(d + 100, 0xab, 1000));
    CHECK(cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost));
    EXPECT(back[99] == h[99] && back[100] == 0xab && back[1099] == 0xab && back[1100] == h[1100],
           "memset bytes %02x %02x %02x %02x", back[99], back[100], back[1099], back[1100]);
    CHECK(cudaMemcpy(back, d, n, cudaMemcpyDefault));

    size_t free0 = 0, total = 0;
    CHECK(cudaMemGetInfo(&free0, &total));
    EXPECT(total > 0 && free0 <= total, "mem info %zu / %zu", free0, total);

    // 2-D copies with pitched memory.
    size_t pitch = 0;
    float *img = nullptr;
    CHECK(cudaMallocPitch((void **)&img, &pitch, 100 * sizeof(float), 50));
    EXPECT(pitch >= 100 * sizeof(float), "pitch %zu", pitch);
    float *hostimg = (float *)malloc(100 * 50 * sizeof(float)), *hostback = (float *)malloc(100 * 50 * sizeof(float));
    for (int i = 0; i < 100 * 50; i++) hostimg[i] = (float)i * 0.5f;
    CHECK(cudaMemcpy2D(img, pitch, hostimg, 100 * sizeof(float), 100 * sizeof(float), 50, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy2D(hostback, 100 * sizeof(float), img, pitch, 100 * sizeof(float), 50, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(hostimg, hostback, 100 * 50 * sizeof(float)) == 0, "2-D round trip differs");

    // Pinned memory, streams, events, async copies, host functions.
    unsigned char *pinned = nullptr;
    CHECK(cudaMallocHost(&pinned, n));
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t e0, e1, enotime;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaEventCreateWithFlags(&enotime, cudaEventDisableTiming));
    CHECK(cudaEventRecord(e0, s1));
    CHECK(cudaMemsetAsync(d2, 0x5a, n, s1));
    CHECK(cudaMemcpyAsync(pinned, d2, n, cudaMemcpyDeviceToHost, s1));
    int counter = 0;
    CHECK(cudaLaunchHostFunc(s1, on_host, &counter));
    CHECK(cudaEventRecord(e1, s1));
    CHECK(cudaStreamWaitEvent(s2, e1, 0));
    CHECK(cudaMemcpyAsync(d, d2, n, cudaMemcpyDeviceToDevice, s2));
    CHECK(cudaEventRecord(enotime, s2));
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaEventSynchronize(e1));
    EXPECT(counter == 1, "host function ran %d times", counter);
    EXPECT(pinned[0] == 0x5a && pinned[n - 1] == 0x5a, "async copy gave %02x %02x", pinned[0], pinned[n - 1]);
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    EXPECT(ms >= 0.0f, "elapsed %f ms", ms);
    cudaError_t te = cudaEventElapsedTime(&ms, e0, enotime);
    EXPECT(te == cudaErrorInvalidResourceHandle, "elapsed time with a no-timing event: %d", (int)te);
    CHECK(cudaEventQuery(e1));
    CHECK(cudaStreamQuery(s1));
    CHECK(cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost));
    EXPECT(back[0] == 0x5a && back[n / 2] == 0x5a, "stream-ordered copy gave %02x", back[0]);

    // Pointer attributes.
    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, d + 10));
    EXPECT(a.type == cudaMemoryTypeDevice && a.device == 0 && a.devicePointer == d + 10, "device attrs type %d", (int)a.type);
    CHECK(cudaPointerGetAttributes(&a, pinned));
    EXPECT(a.type == cudaMemoryTypeHost && a.hostPointer == pinned, "pinned attrs type %d", (int)a.type);
    CHECK(cudaPointerGetAttributes(&a, h));
    EXPECT(a.type == cudaMemoryTypeUnregistered, "malloc'd attrs type %d", (int)a.type);

    // Errors come back as the runtime's codes.
    EXPECT(cudaFree((void *)0x1234) != cudaSuccess, "freeing garbage succeeded");
    cudaGetLastError();

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaEventDestroy(enotime));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(img));
    CHECK(cudaFree(d));
    CHECK(cudaFree(d2));
    free(h);
    free(back);
    free(hostimg);
    free(hostback);
    if (failures) {
        printf("FAIL bootstrap (%d checks)\n", failures);
        return 1;
    }
    printf("PASS bootstrap (driver %d, runtime %d, %s)\n", drv, rt, p.name);
    return 0;
}
