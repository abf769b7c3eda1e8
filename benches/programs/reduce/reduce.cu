//@ small: 1000003
//@ tolerance: 1e-5
// Sum reduction in the programming guide's style: a grid-stride loop per
// thread, a tree in shared memory with a barrier per level down to 64
// values, the last warp's levels by __shfl_down_sync; one partial sum per
// block, then one block sums the partials the same way.
#include "reduce.h"

__device__ float block_sum(float v) {
    __shared__ float s[RD_THREADS];
    int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int half = RD_THREADS / 2; half > 32; half /= 2) {
        if (t < half) s[t] += s[t + half];
        __syncthreads();
    }
    if (t < 32) {
        v = s[t] + s[t + 32];
        for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
    }
    return v; // thread 0's is the block's sum
}

__global__ void reduce(const float *in, float *out, long n) {
    float v = 0;
    for (long i = (long)blockIdx.x * RD_THREADS + threadIdx.x; i < n; i += (long)gridDim.x * RD_THREADS) v += in[i];
    v = block_sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : RD_DEFAULT;
    float *in = (float *)malloc(n * sizeof(float));
    rd_input(in, n);
    float *d_in, *d_part, *d_sum, sum = 0;
    CK(cudaMalloc(&d_in, n * sizeof(float)));
    CK(cudaMalloc(&d_part, RD_BLOCKS * sizeof(float)));
    CK(cudaMalloc(&d_sum, sizeof(float)));
    CK(cudaMemcpy(d_in, in, n * sizeof(float), cudaMemcpyHostToDevice));
    BENCH_TIME("reduce", a, {
        reduce<<<RD_BLOCKS, RD_THREADS>>>(d_in, d_part, n);
        reduce<<<1, RD_THREADS>>>(d_part, d_sum, RD_BLOCKS);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(&sum, d_sum, sizeof(float), cudaMemcpyDeviceToHost));
    double ref = rd_reference(in, n);
    int ok = bench_close(sum, ref, 1e-5);
    if (!ok) fprintf(stderr, "sum %.9g, expected %.9g\n", sum, ref);
    return bench_finish("reduce", sum, ok);
}
