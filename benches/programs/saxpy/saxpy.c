/* The same update with OpenMP: a parallel, vectorised loop per pass. */
#include "saxpy.h"

static void run(const float *x, float *y, const float *y0, long n) {
    memcpy(y, y0, n * sizeof(float));
    for (int p = 0; p < SX_PASSES; p++) {
#pragma omp parallel for simd schedule(static)
        for (long i = 0; i < n; i++) y[i] = fmaf(SX_A, x[i], y[i]);
    }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SX_DEFAULT;
    float *x = malloc(n * sizeof(float)), *y0 = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    sx_input(x, y0, n);
    BENCH_TIME("saxpy", a, run(x, y, y0, n));
    double sum;
    int ok = sx_check(x, y0, y, n, &sum);
    return bench_finish("saxpy", sum, ok);
}
