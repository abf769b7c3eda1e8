/* The same recursion with OpenMP: polynomials spread over the threads
 * (dynamic: they cost different amounts). */
#include "interval.h"

static void run(const float *coef, int *count, float *acc, int n) {
#pragma omp parallel for schedule(dynamic, 64)
    for (int i = 0; i < n; i++) {
        float a = 0;
        count[i] = iv_isolate(coef + 5 * i, -IV_R, IV_R, 0, &a);
        acc[i] = a;
    }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int n = a.size ? (int)a.size : IV_DEFAULT;
    float *coef = malloc(n * 5 * sizeof(float)), *acc = malloc(n * sizeof(float));
    int *count = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) iv_poly((uint32_t)i, coef + 5 * i);
    BENCH_TIME("interval", a, run(coef, count, acc, n));
    int ok = iv_check(coef, count, acc, n, 1 + n / 2048);
    return bench_finish("interval", iv_checksum(count, acc, n), ok);
}
