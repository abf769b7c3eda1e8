//@ small: 1000000
// Global-memory atomics: a grid-stride loop, each thread adding one to the
// bin of each of its bytes with atomicAdd on the histogram in global memory.
#include "histogram.h"

__global__ void histogram(const unsigned char *d, long n, unsigned *hist) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        atomicAdd(&hist[d[i]], 1u);
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : HG_DEFAULT;
    unsigned char *d = (unsigned char *)malloc(n), *d_d;
    unsigned hist[HG_BINS], *d_hist;
    hg_input(d, n);
    CK(cudaMalloc(&d_d, n));
    CK(cudaMalloc(&d_hist, sizeof hist));
    CK(cudaMemcpy(d_d, d, n, cudaMemcpyHostToDevice));
    BENCH_TIME("histogram", a, {
        CK(cudaMemset(d_hist, 0, sizeof hist));
        histogram<<<256, 256>>>(d_d, n, d_hist);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(hist, d_hist, sizeof hist, cudaMemcpyDeviceToHost));
    double sum;
    int ok = hg_check(d, n, hist, &sum);
    return bench_finish("histogram", sum, ok);
}
