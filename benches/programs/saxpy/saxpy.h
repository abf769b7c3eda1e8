/* y = a x + y over SIZE floats, repeated SX_PASSES times: a memory-bound
 * element-wise update. SIZE: the number of elements. */
#include "../bench.h"
#define SX_DEFAULT (16L << 20)
#define SX_THREADS 256
#define SX_BLOCKS 512
#define SX_PASSES 4
#define SX_A 0.5f

static void sx_input(float *x, float *y, long n) {
    for (long i = 0; i < n; i++) {
        x[i] = bench_unit((uint32_t)i);
        y[i] = bench_unit((uint32_t)i ^ 0x9e3779b9u);
    }
}
/* The result after SX_PASSES updates, element by element (the same fused
 * multiply-add as both versions, in the same order). */
static int sx_check(const float *x, const float *y0, const float *y, long n, double *checksum) {
    long bad = 0;
    double s = 0;
    for (long i = 0; i < n; i++) {
        float v = y0[i];
        for (int p = 0; p < SX_PASSES; p++) v = fmaf(SX_A, x[i], v);
        if (v != y[i] && bad++ < 5) fprintf(stderr, "y[%ld] = %.9g, expected %.9g\n", i, y[i], v);
        s += y[i] * (double)(i % 7 + 1);
    }
    *checksum = s;
    return bad == 0;
}
