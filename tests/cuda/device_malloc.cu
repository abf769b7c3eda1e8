// Dynamic memory in kernels: malloc/free per thread, new/delete of arrays and
// of objects with constructors and destructors, memory allocated in one
// kernel and freed in another, cudaLimitMallocHeapSize (a block larger than
// the default 8 MiB heap fits in the 32 MiB one set here; one larger than
// the heap is null; freed blocks are reused).
#include "common.cuh"

struct Tracker {
    int value;
    int *dtor_count;
    __device__ Tracker(int v, int *c) : value(v * 2), dtor_count(c) {}
    __device__ ~Tracker() { atomicAdd(dtor_count, 1); }
};

__device__ int *g_shared_block = nullptr;

__global__ void per_thread(long long *sums, int *nulls, int *dtors) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = 16 + i % 50;
    int *p = (int *)malloc(n * sizeof(int));
    if (!p) { atomicAdd(nulls, 1); return; }
    for (int k = 0; k < n; k++) p[k] = i + k;
    double *q = new double[n];
    if (!q) { atomicAdd(nulls, 1); free(p); return; }
    for (int k = 0; k < n; k++) q[k] = p[k] * 0.5;
    Tracker *t = new Tracker(i, dtors);
    long long s = 0;
    for (int k = 0; k < n; k++) s += (long long)(q[k] * 2.0);
    sums[i] = s + (t ? t->value : -1000000);
    delete t;
    delete[] q;
    free(p);
}

__global__ void make_block(int n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        g_shared_block = (int *)malloc(n * sizeof(int));
        if (g_shared_block)
            for (int k = 0; k < n; k++) g_shared_block[k] = k * k;
    }
}

__global__ void use_and_free_block(int n, long long *out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        long long s = -1;
        if (g_shared_block) {
            s = 0;
            for (int k = 0; k < n; k++) s += g_shared_block[k];
            free(g_shared_block);
            g_shared_block = nullptr;
        }
        *out = s;
    }
}

__global__ void big_blocks(size_t fits, size_t too_big, int *out) {
    char *p = (char *)malloc(fits);
    out[0] = p != nullptr;
    if (p) {
        p[0] = 1;
        p[fits - 1] = 2;
        out[1] = p[0] + p[fits - 1];
        free(p);
    }
    char *q = (char *)malloc(too_big);
    out[2] = q == nullptr;
    if (q) free(q);
}

// Blocks freed are reused: a hundred 1 MiB blocks, one at a time, in a
// 32 MiB heap.
__global__ void reuse(int *out) {
    for (int k = 0; k < 100; k++) {
        char *p = (char *)malloc(1 << 20);
        if (!p) { *out = k; return; }
        p[k] = (char)k;
        free(p);
    }
    *out = 100;
}

// Uses no heap: launching it leaves the heap's size open.
__global__ void no_heap(int *p) { *p = 1; }

int main() {
    size_t heap = 0;
    int *scratch;
    CHECK(cudaMalloc(&scratch, sizeof(int)));
    no_heap<<<1, 1>>>(scratch);
    CHECK_KERNEL();
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 32u << 20));
    CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    EXPECT(heap >= (32u << 20), "heap limit %zu", heap);

    const int nt = 1024;
    long long *sums, hs[nt];
    int *nulls, *dtors, hn = 0, hd = 0;
    CHECK(cudaMalloc(&sums, sizeof hs));
    CHECK(cudaMalloc(&nulls, sizeof(int)));
    CHECK(cudaMalloc(&dtors, sizeof(int)));
    CHECK(cudaMemset(nulls, 0, sizeof(int)));
    CHECK(cudaMemset(dtors, 0, sizeof(int)));
    // Twice: the second launch allocates the blocks the first freed.
    for (int round = 1; round <= 2; round++) {
        per_thread<<<nt / 128, 128>>>(sums, nulls, dtors);
        CHECK_KERNEL();
        // Once a kernel that calls malloc has been launched, the heap's
        // size is fixed (cudaDeviceSetLimit's documentation).
        CHECK_ERR(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64u << 20), cudaErrorInvalidValue);
        CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
        CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
        EXPECT(heap >= (32u << 20) && heap < (64u << 20), "heap limit %zu after a refused change", heap);
        CHECK(cudaMemcpy(hs, sums, sizeof hs, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&hn, nulls, sizeof hn, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&hd, dtors, sizeof hd, cudaMemcpyDeviceToHost));
        EXPECT_EQ(hn, 0, "failed device allocations", round);
        EXPECT_EQ(hd, nt * round, "destructor calls", round);
        for (int i = 0; i < nt; i++) {
            int n = 16 + i % 50;
            long long want = 2LL * i;
            for (int k = 0; k < n; k++) want += i + k;
            EXPECT_EQ(hs[i], want, "per-thread sum", i);
        }
    }

    long long *out, hout = 0;
    CHECK(cudaMalloc(&out, sizeof(long long)));
    make_block<<<1, 32>>>(1000);
    CHECK_KERNEL();
    use_and_free_block<<<1, 32>>>(1000, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(&hout, out, sizeof hout, cudaMemcpyDeviceToHost));
    long long want = 0;
    for (int k = 0; k < 1000; k++) want += k * k;
    EXPECT_EQ(hout, want, "cross-kernel allocation", 0);

    int *flags, hf[3] = {0, 0, 0};
    CHECK(cudaMalloc(&flags, sizeof hf));
    big_blocks<<<1, 1>>>(20u << 20, 256u << 20, flags);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hf, flags, sizeof hf, cudaMemcpyDeviceToHost));
    EXPECT_EQ(hf[0], 1, "a 20 MiB block in the 32 MiB heap", 0);
    EXPECT_EQ(hf[1], 3, "the 20 MiB block's first and last bytes", 1);
    EXPECT_EQ(hf[2], 1, "a 256 MiB block is null", 2);
    reuse<<<1, 1>>>(flags);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hf, flags, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(hf[0], 100, "1 MiB blocks allocated and freed in turn", 0);

    CHECK(cudaFree(sums)); CHECK(cudaFree(nulls)); CHECK(cudaFree(dtors)); CHECK(cudaFree(out)); CHECK(cudaFree(flags));
    CHECK(cudaFree(scratch));
    return finish();
}
