// Stream-ordered allocation: cudaMallocAsync/cudaFreeAsync on streams (use
// within the stream, free in another stream after an event), the default
// memory pool (release threshold attribute, reserved/used memory
// attributes), an explicit pool from cudaMemPoolCreate with
// cudaMallocFromPoolAsync, cudaMemPoolTrimTo.
#include "common.cuh"

#define N (1 << 18)

__global__ void iota(int *p, int n, int base) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + i;
}

__global__ void sum_into(const int *p, int n, unsigned long long *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, (unsigned long long)p[i]);
}

int main() {
    int dev = 0, pools = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev));
    EXPECT(pools == 1, "cudaDevAttrMemoryPoolsSupported = %d", pools);

    cudaMemPool_t def;
    CHECK(cudaDeviceGetDefaultMemPool(&def, dev));
    unsigned long long threshold = 1ull << 30, got = 0;
    CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &threshold));
    CHECK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &got));
    EXPECT(got == threshold, "release threshold %llu", got);

    cudaStream_t s1, s2;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    unsigned long long *sum, hsum[4];
    CHECK(cudaMalloc(&sum, sizeof hsum));
    CHECK(cudaMemset(sum, 0, sizeof hsum));

    // Allocate, use and free in one stream, several rounds (memory is reused).
    for (int r = 0; r < 3; r++) {
        int *p;
        CHECK(cudaMallocAsync((void **)&p, N * sizeof(int), s1));
        iota<<<N / 256, 256, 0, s1>>>(p, N, r * 10);
        CHECK(cudaGetLastError());
        sum_into<<<N / 256, 256, 0, s1>>>(p, N, sum + r);
        CHECK(cudaGetLastError());
        CHECK(cudaFreeAsync(p, s1));
    }
    unsigned long long used = 1, reserved = 0;
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrUsedMemCurrent, &used));
    CHECK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReservedMemCurrent, &reserved));
    EXPECT(used == 0, "pool used memory after frees: %llu", used);
    EXPECT(reserved >= used, "pool reserved %llu < used %llu", reserved, used);

    // Allocated in s1, used in s2 after an event, freed in s2.
    int *q;
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK(cudaMallocAsync((void **)&q, N * sizeof(int), s1));
    iota<<<N / 256, 256, 0, s1>>>(q, N, 7);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s1));
    CHECK(cudaStreamWaitEvent(s2, ev, 0));
    sum_into<<<N / 256, 256, 0, s2>>>(q, N, sum + 3);
    CHECK(cudaGetLastError());
    CHECK(cudaFreeAsync(q, s2));
    CHECK(cudaStreamSynchronize(s2));

    // An explicit pool.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CHECK(cudaMemPoolCreate(&pool, &props));
    int *r;
    CHECK(cudaMallocFromPoolAsync((void **)&r, N * sizeof(int), pool, s1));
    iota<<<N / 256, 256, 0, s1>>>(r, N, -5);
    CHECK(cudaGetLastError());
    int hr[16];
    CHECK(cudaMemcpyAsync(hr, r + N - 16, sizeof hr, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaFreeAsync(r, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < 16; i++) EXPECT_EQ(hr[i], -5 + N - 16 + i, "pool allocation", i);
    CHECK(cudaMemPoolTrimTo(pool, 0));
    CHECK(cudaMemPoolTrimTo(def, 0));
    CHECK(cudaMemPoolDestroy(pool));

    CHECK(cudaMemcpy(hsum, sum, sizeof hsum, cudaMemcpyDeviceToHost));
    unsigned long long base = (unsigned long long)N * (N - 1) / 2;
    for (int k = 0; k < 3; k++) EXPECT_EQ(hsum[k], base + (unsigned long long)N * k * 10, "round sum", k);
    EXPECT_EQ(hsum[3], base + (unsigned long long)N * 7, "cross-stream sum", 3);

    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s1)); CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(sum));
    return finish();
}
