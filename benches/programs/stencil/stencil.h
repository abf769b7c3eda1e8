/* ST_STEPS steps of 3-point smoothing on a ring of SIZE floats, in tiles of
 * ST_TILE with ST_T steps per pass (temporal blocking): a tile with its
 * halo of ST_T on each side is smoothed ST_T times in fast memory, and its
 * middle ST_TILE - 2*ST_T values are kept. */
#include "../bench.h"
#define ST_DEFAULT (4L << 20)
#define ST_TILE 256
#define ST_T 8
#define ST_OUT (ST_TILE - 2 * ST_T)
#define ST_STEPS 64

static void st_input(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = bench_unit((uint32_t)i * 3u);
}
BENCH_HD float st_smooth(float l, float c, float r) { return 0.25f * l + 0.5f * c + 0.25f * r; }

static int st_check(const float *in, const float *out, long n, double *checksum) {
    float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
    memcpy(a, in, n * sizeof(float));
    for (int s = 0; s < ST_STEPS; s++) {
        for (long i = 0; i < n; i++) b[i] = st_smooth(a[(i + n - 1) % n], a[i], a[(i + 1) % n]);
        float *t = a;
        a = b;
        b = t;
    }
    double sum = 0;
    long bad = 0;
    for (long i = 0; i < n; i++) {
        sum += out[i] * (double)(i % 5 + 1);
        if (fabsf(out[i] - a[i]) > 1e-5f && bad++ < 5) fprintf(stderr, "x[%ld] = %.8g, expected %.8g\n", i, out[i], a[i]);
    }
    free(a);
    free(b);
    *checksum = sum;
    return bad == 0;
}
