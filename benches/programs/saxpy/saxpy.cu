//@ small: 1000000
// A grid-stride loop, the way CUDA's programming guide writes element-wise
// kernels: a fixed grid whose threads each step by the grid's width.
#include "saxpy.h"

__global__ void saxpy(float a, const float *x, float *y, long n) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = fmaf(a, x[i], y[i]);
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SX_DEFAULT;
    float *x = (float *)malloc(n * sizeof(float)), *y0 = (float *)malloc(n * sizeof(float));
    float *y = (float *)malloc(n * sizeof(float)), *d_x, *d_y;
    sx_input(x, y0, n);
    CK(cudaMalloc(&d_x, n * sizeof(float)));
    CK(cudaMalloc(&d_y, n * sizeof(float)));
    CK(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));
    BENCH_TIME("saxpy", a, {
        CK(cudaMemcpy(d_y, y0, n * sizeof(float), cudaMemcpyHostToDevice));
        for (int p = 0; p < SX_PASSES; p++) saxpy<<<SX_BLOCKS, SX_THREADS>>>(SX_A, d_x, d_y, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost));
    double sum;
    int ok = sx_check(x, y0, y, n, &sum);
    return bench_finish("saxpy", sum, ok);
}
