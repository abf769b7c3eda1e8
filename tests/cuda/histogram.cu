// A 256-bin histogram of 1M bytes: a privatised version (per-block shared
// memory histogram merged with global atomics) and a direct global-atomics
// version; both must equal the host count.
//@ variants: shared cu12 lz4 nocomp
#include "common.cuh"

#define BINS 256

__global__ void hist_shared(const unsigned char *in, int n, unsigned *bins) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[in[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}

__global__ void hist_global(const unsigned char *in, int n, unsigned *bins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[in[i]], 1u);
}

int main() {
    const int n = 1 << 20;
    unsigned char *h = new unsigned char[n];
    unsigned want[BINS] = {};
    unsigned x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        // skewed: low bins are much more frequent (contention)
        unsigned char v = (unsigned char)((x >> 24) & ((x >> 8) & 1 ? 0x0f : 0xff));
        h[i] = v;
        want[v]++;
    }
    unsigned char *d;
    unsigned *bins, got[BINS];
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMalloc(&bins, sizeof got));
    CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));

    CHECK(cudaMemset(bins, 0, sizeof got));
    hist_shared<<<64, 256>>>(d, n, bins);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(got, bins, sizeof got, cudaMemcpyDeviceToHost));
    for (int b = 0; b < BINS; b++) EXPECT_EQ(got[b], want[b], "shared histogram", b);

    CHECK(cudaMemset(bins, 0, sizeof got));
    hist_global<<<n / 512, 512>>>(d, n, bins);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(got, bins, sizeof got, cudaMemcpyDeviceToHost));
    for (int b = 0; b < BINS; b++) EXPECT_EQ(got[b], want[b], "global histogram", b);

    CHECK(cudaFree(d)); CHECK(cudaFree(bins));
    delete[] h;
    return finish();
}
