/* The same sum with OpenMP: each thread sums its part (vectorised: omp
 * simd), the threads' sums are added. */
#include "reduce.h"

static float run(const float *in, long n) {
    float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (long i = 0; i < n; i++) s += in[i];
    return s;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : RD_DEFAULT;
    float *in = malloc(n * sizeof(float)), sum = 0;
    rd_input(in, n);
    BENCH_TIME("reduce", a, sum = run(in, n));
    double ref = rd_reference(in, n);
    return bench_finish("reduce", sum, bench_close(sum, ref, 1e-5));
}
