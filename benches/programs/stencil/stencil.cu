//@ small: 50000
//@ tolerance: 1e-6
// Temporal blocking in shared memory: a block of ST_TILE threads loads its
// tile with halos, smooths it ST_T times with a barrier per step, and writes
// the middle; ST_STEPS / ST_T launches.
#include "stencil.h"

__global__ void smooth(const float *in, float *out, long n) {
    __shared__ float buf[2][ST_TILE];
    int t = threadIdx.x;
    long first = (long)blockIdx.x * ST_OUT - ST_T;
    long g = ((first + t) % n + n) % n;
    buf[0][t] = in[g];
    __syncthreads();
    int cur = 0;
    for (int s = 0; s < ST_T; s++) {
        if (t > 0 && t < ST_TILE - 1) buf[cur ^ 1][t] = st_smooth(buf[cur][t - 1], buf[cur][t], buf[cur][t + 1]);
        cur ^= 1;
        __syncthreads();
    }
    long o = (long)blockIdx.x * ST_OUT + (t - ST_T);
    if (t >= ST_T && t < ST_TILE - ST_T && o < n) out[o] = buf[cur][t];
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : ST_DEFAULT;
    float *in = (float *)malloc(n * sizeof(float)), *out = (float *)malloc(n * sizeof(float));
    st_input(in, n);
    float *d_a, *d_b;
    CK(cudaMalloc(&d_a, n * sizeof(float)));
    CK(cudaMalloc(&d_b, n * sizeof(float)));
    unsigned blocks = (unsigned)((n + ST_OUT - 1) / ST_OUT);
    BENCH_TIME("stencil", a, {
        CK(cudaMemcpy(d_a, in, n * sizeof(float), cudaMemcpyHostToDevice));
        for (int s = 0; s < ST_STEPS / ST_T; s++) {
            smooth<<<blocks, ST_TILE>>>(d_a, d_b, n);
            float *t = d_a;
            d_a = d_b;
            d_b = t;
        }
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(out, d_a, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum;
    int ok = st_check(in, out, n, &sum);
    return bench_finish("stencil", sum, ok);
}
