// Block-level reductions: a shared-memory tree reduction (256 threads), a
// warp-shuffle + shared-memory reduction (1024 threads), two passes over
// 1M elements, and a single-pass sum finished with atomicAdd.
//@ variants: shared cu12 lz4 nocomp
#include "common.cuh"

__global__ void tree_sum(const int *in, long long *out, int n) {
    __shared__ long long s[256];
    int t = threadIdx.x;
    long long acc = 0;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) acc += in[i];
    s[t] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__device__ int warp_sum(int v) {
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
    return v;
}

__global__ void shuffle_max_sum(const int *in, int *out_max, unsigned long long *out_sum, int n) {
    __shared__ int warp_max[32];
    __shared__ int warp_sums[32];
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;
    int m = i < n ? in[i] : -2147483647 - 1;
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xffffffff, m, off));
    int s = warp_sum(v);
    if (lane == 0) { warp_max[warp] = m; warp_sums[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x / 32;
        int mm = lane < nw ? warp_max[lane] : -2147483647 - 1;
        int ss = lane < nw ? warp_sums[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) mm = max(mm, __shfl_xor_sync(0xffffffff, mm, off));
        ss = warp_sum(ss);
        if (lane == 0) {
            out_max[blockIdx.x] = mm;
            atomicAdd(out_sum, (unsigned long long)(long long)ss);
        }
    }
}

int main() {
    const int n = 1 << 20;
    int *h = new int[n];
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        h[i] = (int)((i * 1103515245u + 12345u) >> 16) % 1000 - 400;
        sum += h[i];
    }
    int *d;
    long long *partial;
    const int blocks1 = 120;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMalloc(&partial, blocks1 * sizeof(long long)));
    CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));

    // Two passes: per-block partial sums, then one block over the partials.
    tree_sum<<<blocks1, 256>>>(d, partial, n);
    CHECK_KERNEL();
    long long hpartial[blocks1];
    CHECK(cudaMemcpy(hpartial, partial, sizeof hpartial, cudaMemcpyDeviceToHost));
    long long check = 0;
    for (int b = 0; b < blocks1; b++) {
        long long want = 0;
        for (int i = b * 256; i < n; i += blocks1 * 256)
            for (int t = 0; t < 256 && i + t < n; t++) want += h[i + t];
        EXPECT_EQ(hpartial[b], want, "tree partial", b);
        check += hpartial[b];
    }
    EXPECT_EQ(check, sum, "tree total", 0);

    // Single pass with 1024-thread blocks and an atomic to finish.
    const int blocks2 = n / 1024;
    int *dmax;
    unsigned long long *dsum;
    CHECK(cudaMalloc(&dmax, blocks2 * sizeof(int)));
    CHECK(cudaMalloc(&dsum, sizeof(unsigned long long)));
    CHECK(cudaMemset(dsum, 0, sizeof(unsigned long long)));
    shuffle_max_sum<<<blocks2, 1024>>>(d, dmax, dsum, n);
    CHECK_KERNEL();
    int *hmax = new int[blocks2];
    unsigned long long hsum;
    CHECK(cudaMemcpy(hmax, dmax, blocks2 * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks2; b++) {
        int m = h[b * 1024];
        for (int t = 1; t < 1024; t++) m = h[b * 1024 + t] > m ? h[b * 1024 + t] : m;
        EXPECT_EQ(hmax[b], m, "block max", b);
    }
    EXPECT_EQ((long long)hsum, sum, "atomic total", 0);

    CHECK(cudaFree(d)); CHECK(cudaFree(partial)); CHECK(cudaFree(dmax)); CHECK(cudaFree(dsum));
    delete[] h; delete[] hmax;
    return finish();
}
