// Managed (unified) memory: cudaMallocManaged (global and cudaMemAttachHost),
// host writes then kernel reads/writes then host reads after synchronising,
// a __managed__ variable, cudaMemPrefetchAsync to the device and back to the
// host, cudaMemAdvise, cudaStreamAttachMemAsync, pointer attributes.
#include "common.cuh"

#define N (1 << 16)

__managed__ int g_counter = 5;
__managed__ float g_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};

__global__ void step(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a[i] = a[i] * 3 + (int)g_table[i % 4];
        atomicAdd(&g_counter, 1);
    }
}

int main() {
    int dev = 0, managed = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev));
    EXPECT(managed == 1, "cudaDevAttrManagedMemory = %d", managed);

    int *a, *b;
    CHECK(cudaMallocManaged(&a, N * sizeof(int)));
    CHECK(cudaMallocManaged(&b, N * sizeof(int), cudaMemAttachHost));
    for (int i = 0; i < N; i++) { a[i] = i; b[i] = -i; }
    g_table[3] = 10.0f; // host write to a __managed__ variable

    step<<<N / 256, 256>>>(a, N);
    CHECK_KERNEL();
    for (int i = 0; i < N; i++) {
        int want = i * 3 + (i % 4 == 3 ? 10 : i % 4 + 1);
        EXPECT_EQ(a[i], want, "managed a", i);
    }
    EXPECT_EQ(g_counter, 5 + N, "__managed__ counter", 0);

    // prefetch to the device, compute, prefetch back to the host
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaMemLocation to_dev = {}, to_host = {};
    to_dev.type = cudaMemLocationTypeDevice;
    to_dev.id = dev;
    to_host.type = cudaMemLocationTypeHost;
    to_host.id = 0;
    CHECK(cudaMemAdvise(a, N * sizeof(int), cudaMemAdviseSetPreferredLocation, to_dev));
    CHECK(cudaMemPrefetchAsync(a, N * sizeof(int), to_dev, 0, s));
    step<<<N / 256, 256, 0, s>>>(a, N);
    CHECK(cudaGetLastError());
    CHECK(cudaMemPrefetchAsync(a, N * sizeof(int), to_host, 0, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) {
        int v1 = i * 3 + (i % 4 == 3 ? 10 : i % 4 + 1);
        int want = v1 * 3 + (i % 4 == 3 ? 10 : i % 4 + 1);
        EXPECT_EQ(a[i], want, "managed a after prefetch", i);
    }
    EXPECT_EQ(g_counter, 5 + 2 * N, "__managed__ counter", 1);

    // memory attached to the host: attach to a stream, use there
    CHECK(cudaStreamAttachMemAsync(s, b, 0, cudaMemAttachSingle));
    step<<<N / 256, 256, 0, s>>>(b, N);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) EXPECT_EQ(b[i], -3 * i + (i % 4 == 3 ? 10 : i % 4 + 1), "b", i);

    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, a + 10));
    EXPECT(attr.type == cudaMemoryTypeManaged, "managed pointer type %d", (int)attr.type);
    EXPECT(attr.devicePointer == a + 10 && attr.hostPointer == a + 10, "managed pointers %p %p",
           attr.devicePointer, attr.hostPointer);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a)); CHECK(cudaFree(b));
    return finish();
}
