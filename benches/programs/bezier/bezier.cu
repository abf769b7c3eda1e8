//@ small: 96
//@ tolerance: 1e-5
// One thread per surface point; the control points in constant memory.
#include "bezier.h"

__constant__ float c_ctrl[3 * BZ_N * BZ_N];

__global__ void surface(float *pts, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m * m) return;
    bz_point(c_ctrl, (float)(i % m) / (float)(m - 1), (float)(i / m) / (float)(m - 1), pts + 3 * (long)i);
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int m = a.size ? (int)a.size : BZ_DEFAULT;
    float ctrl[3 * BZ_N * BZ_N];
    bz_control(ctrl);
    size_t bytes = (size_t)m * m * 3 * sizeof(float);
    float *pts = (float *)malloc(bytes), *d_pts;
    CK(cudaMalloc(&d_pts, bytes));
    CK(cudaMemcpyToSymbol(c_ctrl, ctrl, sizeof ctrl));
    BENCH_TIME("bezier", a, {
        surface<<<(m * m + 255) / 256, 256>>>(d_pts, m);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(pts, d_pts, bytes, cudaMemcpyDeviceToHost));
    double sum;
    int ok = bz_compare(ctrl, pts, m, &sum);
    return bench_finish("bezier", sum, ok);
}
