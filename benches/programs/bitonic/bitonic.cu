//@ small: 14
// One thread per key and one launch per step of the network (210 launches
// for 2^20 keys): many short launches.
#include "bitonic.h"

__global__ void step(uint32_t *keys, long j, long k) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    bt_step(keys, i, j, k);
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int lg = a.size ? (int)a.size : BT_DEFAULT;
    long n = 1L << lg;
    uint32_t *in = (uint32_t *)malloc(n * 4), *out = (uint32_t *)malloc(n * 4), *d;
    bt_input(in, n);
    CK(cudaMalloc(&d, n * 4));
    int threads = n < 256 ? (int)n : 256;
    BENCH_TIME("bitonic", a, {
        CK(cudaMemcpy(d, in, n * 4, cudaMemcpyHostToDevice));
        for (long k = 2; k <= n; k *= 2)
            for (long j = k / 2; j > 0; j /= 2) step<<<(unsigned)(n / threads), threads>>>(d, j, k);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(out, d, n * 4, cudaMemcpyDeviceToHost));
    double sum;
    int ok = bt_check(in, out, n, &sum);
    return bench_finish("bitonic", sum, ok);
}
