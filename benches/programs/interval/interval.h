/* Root isolation by interval bisection: for each of SIZE quartic
 * polynomials, the interval [-IV_R, IV_R] is halved recursively; a half
 * whose enclosure of p (Horner's scheme in interval arithmetic, every sum
 * and product rounded outward: down for lower bounds, up for upper bounds)
 * excludes 0 is dropped, one still holding 0 at depth IV_DEPTH counts as a
 * candidate. Per polynomial: the number of candidates and the sum of their
 * lower ends. Rounding is directed, so every version gives the same bits. */
#include "../bench.h"
#define IV_DEFAULT 16384
#define IV_DEPTH 14
#define IV_R 4.0f

#if defined(__CUDA_ARCH__)
#define iv_add_rd __fadd_rd
#define iv_add_ru __fadd_ru
#define iv_mul_rd __fmul_rd
#define iv_mul_ru __fmul_ru
#elif defined(__AVX512F__)
#include <immintrin.h>
/* AVX-512's rounding given with the instruction. */
static inline float iv_add_rd(float a, float b) {
    return _mm_cvtss_f32(_mm_add_round_ss(_mm_set_ss(a), _mm_set_ss(b), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}
static inline float iv_add_ru(float a, float b) {
    return _mm_cvtss_f32(_mm_add_round_ss(_mm_set_ss(a), _mm_set_ss(b), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
}
static inline float iv_mul_rd(float a, float b) {
    return _mm_cvtss_f32(_mm_mul_round_ss(_mm_set_ss(a), _mm_set_ss(b), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}
static inline float iv_mul_ru(float a, float b) {
    return _mm_cvtss_f32(_mm_mul_round_ss(_mm_set_ss(a), _mm_set_ss(b), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
}
#else
/* Portable: the rounded-to-nearest result, moved one step when the exact
 * result lies on the other side (the sum's error by Knuth's two-sum, the
 * product exact in double). Finite operands only. */
static inline float iv_add_dir(float a, float b, int up) {
    volatile float s = a + b;
    float bb = s - a;
    float e = (a - (s - bb)) + (b - bb);
    if (up) return e > 0 ? nextafterf(s, INFINITY) : s;
    return e < 0 ? nextafterf(s, -INFINITY) : s;
}
static inline float iv_mul_dir(float a, float b, int up) {
    double p = (double)a * (double)b;
    float r = (float)p;
    if (up) return (double)r < p ? nextafterf(r, INFINITY) : r;
    return (double)r > p ? nextafterf(r, -INFINITY) : r;
}
static inline float iv_add_rd(float a, float b) { return iv_add_dir(a, b, 0); }
static inline float iv_add_ru(float a, float b) { return iv_add_dir(a, b, 1); }
static inline float iv_mul_rd(float a, float b) { return iv_mul_dir(a, b, 0); }
static inline float iv_mul_ru(float a, float b) { return iv_mul_dir(a, b, 1); }
#endif

/* Coefficients c[0..4] of polynomial k: a product of four random linear
 * factors (its roots in the interval), expanded. */
static void iv_poly(uint32_t k, float *c) {
    float r[4];
    for (int i = 0; i < 4; i++) r[i] = (bench_unit(k * 4u + (uint32_t)i) * 2.0f - 1.0f) * 3.5f;
    c[0] = 1;
    c[1] = c[2] = c[3] = c[4] = 0;
    for (int i = 0; i < 4; i++) /* multiply by (x - r[i]) */
        for (int j = i + 1; j > 0; j--) c[j] = c[j - 1] - r[i] * c[j];
    /* c[0] is now the leading coefficient, c[4] the constant term. */
    for (int j = 0; j < 5; j++) c[j] = (float)(int)(c[j] * 64.0f) / 64.0f;
}

/* [lo, hi] times [a, b], rounded outward. */
BENCH_HD void iv_mul(float lo, float hi, float a, float b, float *rlo, float *rhi) {
    float p1 = iv_mul_rd(lo, a), p2 = iv_mul_rd(lo, b), p3 = iv_mul_rd(hi, a), p4 = iv_mul_rd(hi, b);
    float q1 = iv_mul_ru(lo, a), q2 = iv_mul_ru(lo, b), q3 = iv_mul_ru(hi, a), q4 = iv_mul_ru(hi, b);
    *rlo = fminf(fminf(p1, p2), fminf(p3, p4));
    *rhi = fmaxf(fmaxf(q1, q2), fmaxf(q3, q4));
}

BENCH_HD int iv_isolate(const float *c, float lo, float hi, int depth, float *acc) {
    float flo = c[0], fhi = c[0];
    for (int j = 1; j < 5; j++) {
        float a, b;
        iv_mul(flo, fhi, lo, hi, &a, &b);
        flo = iv_add_rd(a, c[j]);
        fhi = iv_add_ru(b, c[j]);
    }
    if (flo > 0.0f || fhi < 0.0f) return 0;
    if (depth == IV_DEPTH) {
        *acc += lo;
        return 1;
    }
    float mid = 0.5f * (lo + hi);
    return iv_isolate(c, lo, mid, depth + 1, acc) + iv_isolate(c, mid, hi, depth + 1, acc);
}

static double iv_checksum(const int *count, const float *acc, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)count[i] * (i % 7 + 1) + (double)acc[i];
    return s;
}

/* Checks every polynomial whose index is a multiple of `stride` against the
 * host; the bits must be equal. */
static int iv_check(const float *coef, const int *count, const float *acc, int n, int stride) {
    int bad = 0;
    for (int i = 0; i < n; i += stride) {
        float a = 0;
        int k = iv_isolate(coef + 5 * i, -IV_R, IV_R, 0, &a);
        if ((k != count[i] || a != acc[i]) && bad++ < 5)
            fprintf(stderr, "polynomial %d: %d candidates (sum %.9g), expected %d (%.9g)\n", i, count[i], acc[i], k, a);
    }
    return bad == 0;
}
