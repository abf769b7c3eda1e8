//@ small: 512
// One thread per polynomial; the recursion of interval.h runs on the
// device (a recursive function, __fadd_rd/__fadd_ru/__fmul_rd/__fmul_ru).
#include "interval.h"

__global__ void isolate(const float *coef, int *count, float *acc, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float c[5];
    for (int j = 0; j < 5; j++) c[j] = coef[5 * i + j];
    float a = 0;
    count[i] = iv_isolate(c, -IV_R, IV_R, 0, &a);
    acc[i] = a;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int n = a.size ? (int)a.size : IV_DEFAULT;
    float *coef = (float *)malloc(n * 5 * sizeof(float)), *acc = (float *)malloc(n * sizeof(float));
    int *count = (int *)malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) iv_poly((uint32_t)i, coef + 5 * i);
    float *d_coef, *d_acc;
    int *d_count;
    CK(cudaMalloc(&d_coef, n * 5 * sizeof(float)));
    CK(cudaMalloc(&d_acc, n * sizeof(float)));
    CK(cudaMalloc(&d_count, n * sizeof(int)));
    CK(cudaMemcpy(d_coef, coef, n * 5 * sizeof(float), cudaMemcpyHostToDevice));
    BENCH_TIME("interval", a, {
        isolate<<<(n + 127) / 128, 128>>>(d_coef, d_count, d_acc, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(count, d_count, n * sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(acc, d_acc, n * sizeof(float), cudaMemcpyDeviceToHost));
    int ok = iv_check(coef, count, acc, n, 1 + n / 2048);
    return bench_finish("interval", iv_checksum(count, acc, n), ok);
}
