// Dynamic memory in kernels: malloc/free per thread, new/delete of arrays and
// of objects with constructors and destructors, memory allocated in one
// kernel and freed in another, cudaLimitMallocHeapSize.
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

int main() {
    size_t heap = 0;
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
    per_thread<<<nt / 128, 128>>>(sums, nulls, dtors);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hs, sums, sizeof hs, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hn, nulls, sizeof hn, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hd, dtors, sizeof hd, cudaMemcpyDeviceToHost));
    EXPECT_EQ(hn, 0, "failed device allocations", 0);
    EXPECT_EQ(hd, nt, "destructor calls", 0);
    for (int i = 0; i < nt; i++) {
        int n = 16 + i % 50;
        long long want = 2LL * i;
        for (int k = 0; k < n; k++) want += i + k;
        EXPECT_EQ(hs[i], want, "per-thread sum", i);
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

    CHECK(cudaFree(sums)); CHECK(cudaFree(nulls)); CHECK(cudaFree(dtors)); CHECK(cudaFree(out));
    return finish();
}
