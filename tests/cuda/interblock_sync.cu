// Blocks of one grid that depend on each other: a chained scan where block
// b spin-waits (volatile loads + __threadfence) on a flag published by block
// b-1 ("decoupled" ordering by a ticket taken with atomicAdd, so it works in
// any block schedule), and a last-block-done reduction (threadfence +
// atomicInc ticket). The grid is small enough to be co-resident.
#include "common.cuh"

#define NT 128
#define BLOCKS 8

__device__ unsigned g_ticket;
__device__ unsigned g_done;

__global__ void chained_scan(const int *in, int *out, volatile int *carry, volatile int *flags) {
    __shared__ int s[NT];
    __shared__ int order, prefix;
    if (threadIdx.x == 0) order = atomicAdd(&g_ticket, 1); // the order blocks start in
    __syncthreads();
    int b = order, t = threadIdx.x;
    int v = in[b * NT + t];
    s[t] = v;
    __syncthreads();
    for (int off = 1; off < NT; off *= 2) { // inclusive scan within the block
        int x = t >= off ? s[t - off] : 0;
        __syncthreads();
        s[t] += x;
        __syncthreads();
    }
    if (t == 0) {
        int p = 0;
        if (b > 0) {
            while (flags[b - 1] == 0) { } // wait for the previous block's carry
            __threadfence();
            p = carry[b - 1];
        }
        carry[b] = p + s[NT - 1];
        __threadfence();
        flags[b] = 1;
        prefix = p;
    }
    __syncthreads();
    out[b * NT + t] = s[t] + prefix;
}

__global__ void last_block_sum(const int *in, int *partial, int *total) {
    __shared__ bool last;
    __shared__ int s[NT];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * NT + t];
    __syncthreads();
    for (int st = NT / 2; st > 0; st /= 2) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) {
        partial[blockIdx.x] = s[0];
        __threadfence();
        unsigned ticket = atomicInc(&g_done, gridDim.x);
        last = ticket == gridDim.x - 1;
    }
    __syncthreads();
    if (last && t == 0) {
        int sum = 0;
        for (int b = 0; b < gridDim.x; b++) sum += ((volatile int *)partial)[b];
        *total = sum;
    }
}

int main() {
    const int n = BLOCKS * NT;
    int h[n];
    for (int i = 0; i < n; i++) h[i] = (i * 17) % 23 - 11;
    int *in, *out, *carry, *flags, *partial, *total;
    CHECK(cudaMalloc(&in, sizeof h));
    CHECK(cudaMalloc(&out, sizeof h));
    CHECK(cudaMalloc(&carry, BLOCKS * sizeof(int)));
    CHECK(cudaMalloc(&flags, BLOCKS * sizeof(int)));
    CHECK(cudaMalloc(&partial, BLOCKS * sizeof(int)));
    CHECK(cudaMalloc(&total, sizeof(int)));
    CHECK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    for (int rep = 0; rep < 3; rep++) {
        unsigned zero = 0;
        CHECK(cudaMemcpyToSymbol(g_ticket, &zero, sizeof zero));
        CHECK(cudaMemcpyToSymbol(g_done, &zero, sizeof zero));
        CHECK(cudaMemset(flags, 0, BLOCKS * sizeof(int)));
        CHECK(cudaMemset(out, 0, sizeof h));
        chained_scan<<<BLOCKS, NT>>>(in, out, carry, flags);
        CHECK_KERNEL();
        last_block_sum<<<BLOCKS, NT>>>(in, partial, total);
        CHECK_KERNEL();
        int r[n], ht;
        CHECK(cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&ht, total, sizeof ht, cudaMemcpyDeviceToHost));
        int run = 0;
        for (int i = 0; i < n; i++) {
            run += h[i];
            EXPECT_EQ(r[i], run, "chained scan", i);
        }
        EXPECT_EQ(ht, run, "last-block total", rep);
    }
    CHECK(cudaFree(in)); CHECK(cudaFree(out)); CHECK(cudaFree(carry)); CHECK(cudaFree(flags));
    CHECK(cudaFree(partial)); CHECK(cudaFree(total));
    return finish();
}
