// Kernel launches through NVIDIA's cudart onto anycuda's driver with the
// mock backend: the kernels' PTX names are ones the mock implements, so
// this exercises cuLibraryLoadData with the fatbin wrapper, PTX selection,
// cuLibraryGetKernel / cuLibraryGetModule, launches with CUkernel and
// CUfunction handles, attributes, occupancy and sticky faults.
// `kernels sass-only` expects the binary to hold no PTX.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static int failures = 0;
#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            printf("%s:%d: %s -> %s (%d)\n", __FILE__, __LINE__, #call,               \
                   cudaGetErrorName(e_), (int)e_);                                    \
            printf("FAIL kernels\n");                                                 \
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

// Bodies are for nvcc; the mock backend runs its own Rust versions.
extern "C" __global__ void mock_fill_u32(unsigned *p, unsigned v, unsigned n) {
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) p[i] = v;
}
extern "C" __global__ void mock_copy_u32(unsigned *d, const unsigned *s, unsigned n) {
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
}
extern "C" __global__ void mock_fault() { *(volatile int *)8 = 1; }

int main(int argc, char **argv) {
    bool sass_only = argc > 1 && strcmp(argv[1], "sass-only") == 0;
    unsigned *d = nullptr, *d2 = nullptr;
    CHECK(cudaMalloc(&d, 64 * sizeof(unsigned)));
    CHECK(cudaMalloc(&d2, 64 * sizeof(unsigned)));
    mock_fill_u32<<<1, 32>>>(d, 0xabcu, 64);
    cudaError_t e = cudaGetLastError();
    if (sass_only) {
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        EXPECT(e == cudaErrorNoKernelImageForDevice, "SASS-only launch gave %s", cudaGetErrorName(e));
        if (failures) { printf("FAIL kernels\n"); return 1; }
        printf("PASS kernels sass-only\n");
        return 0;
    }
    CHECK(e);
    CHECK(cudaDeviceSynchronize());
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    mock_copy_u32<<<1, 64, 0, s>>>(d2, d, 64);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    unsigned h[64];
    CHECK(cudaMemcpy(h, d2, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) EXPECT(h[i] == 0xabcu, "h[%d] = %x", i, h[i]);

    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, mock_fill_u32));
    EXPECT(fa.maxThreadsPerBlock > 0 && fa.maxThreadsPerBlock <= 1024, "max threads %d", fa.maxThreadsPerBlock);
    int nb = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, mock_fill_u32, 128, 0));
    EXPECT(nb > 0, "occupancy %d", nb);
    int grid = 0, block = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&grid, &block, mock_fill_u32, 0, 0));
    EXPECT(block > 0 && grid > 0, "potential %d x %d", grid, block);

    // A bad configuration is refused at launch, not sticky.
    mock_fill_u32<<<1, 2048>>>(d, 1u, 1u);
    e = cudaGetLastError();
    EXPECT(e != cudaSuccess, "2048 threads per block accepted");
    CHECK(cudaDeviceSynchronize());

    // A fault is sticky.
    mock_fault<<<1, 1>>>();
    CHECK(cudaGetLastError());
    e = cudaDeviceSynchronize();
    EXPECT(e == cudaErrorIllegalAddress, "fault gave %s", cudaGetErrorName(e));
    void *x = nullptr;
    e = cudaMalloc(&x, 16);
    EXPECT(e == cudaErrorIllegalAddress, "after the fault cudaMalloc gave %s", cudaGetErrorName(e));
    if (failures) {
        printf("FAIL kernels (%d checks)\n", failures);
        return 1;
    }
    printf("PASS kernels\n");
    return 0;
}
