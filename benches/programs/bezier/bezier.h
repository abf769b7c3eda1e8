/* A Bezier surface of degree BZ_DEG in both directions evaluated on a
 * SIZE x SIZE grid of parameters: for each point, two nested loops over the
 * control points, each weight a binomial times powers of u, 1-u, v, 1-v
 * (powf, as the formula reads). */
#include "../bench.h"
#define BZ_DEFAULT 512
#define BZ_DEG 7
#define BZ_N (BZ_DEG + 1)

static void bz_control(float *ctrl) { /* BZ_N x BZ_N points, xyz */
    for (int i = 0; i < BZ_N; i++)
        for (int j = 0; j < BZ_N; j++) {
            float *p = ctrl + 3 * (i * BZ_N + j);
            p[0] = (float)i / BZ_DEG;
            p[1] = (float)j / BZ_DEG;
            p[2] = bench_unit((uint32_t)(i * BZ_N + j)) * 2.0f - 1.0f;
        }
}

BENCH_HD float bz_binom(int n, int k) {
    float r = 1.0f;
    for (int i = 1; i <= k; i++) r = r * (float)(n - k + i) / (float)i;
    return r;
}

BENCH_HD void bz_point(const float *ctrl, float u, float v, float *out) {
    float x = 0, y = 0, z = 0;
    for (int i = 0; i < BZ_N; i++) {
        float bu = bz_binom(BZ_DEG, i) * powf(u, (float)i) * powf(1.0f - u, (float)(BZ_DEG - i));
        for (int j = 0; j < BZ_N; j++) {
            float bv = bz_binom(BZ_DEG, j) * powf(v, (float)j) * powf(1.0f - v, (float)(BZ_DEG - j));
            const float *p = ctrl + 3 * (i * BZ_N + j);
            float b = bu * bv;
            x += b * p[0];
            y += b * p[1];
            z += b * p[2];
        }
    }
    out[0] = x;
    out[1] = y;
    out[2] = z;
}

/* Checks every 7th point against the host and sums all. */
static int bz_compare(const float *ctrl, const float *pts, int m, double *checksum) {
    double sum = 0;
    long bad = 0;
    for (long k = 0; k < (long)m * m; k++) {
        const float *p = pts + 3 * k;
        sum += (double)p[0] + 2.0 * p[1] + 3.0 * p[2];
        if (k % 7) continue;
        float r[3];
        bz_point(ctrl, (float)(k % m) / (float)(m - 1), (float)(k / m) / (float)(m - 1), r);
        for (int c = 0; c < 3; c++)
            if (fabsf(p[c] - r[c]) > 1e-4f && bad++ < 5) fprintf(stderr, "point %ld[%d] = %g, expected %g\n", k, c, p[c], r[c]);
    }
    *checksum = sum;
    return bad == 0;
}
