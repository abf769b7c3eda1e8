/* A path tracer: per pixel, RT_SAMPLES jittered rays into a scene of
 * spheres, each bouncing diffusely (a random direction from sin/cos of a
 * random angle and square roots) up to RT_BOUNCES times; a per-pixel
 * xorshift generator. Rays diverge: they hit different spheres, stop after
 * different numbers of bounces. SIZE: the image's width and height. */
#include "../bench.h"
#define RT_DEFAULT 384
#define RT_SAMPLES 4
#define RT_BOUNCES 4
#define RT_SPHERES 9

typedef struct {
    float x, y, z;
} rt_vec;

BENCH_HD rt_vec rt_v(float x, float y, float z) {
    rt_vec r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
BENCH_HD float rt_dot(rt_vec a, rt_vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
BENCH_HD rt_vec rt_add(rt_vec a, rt_vec b) { return rt_v(a.x + b.x, a.y + b.y, a.z + b.z); }
BENCH_HD rt_vec rt_sub(rt_vec a, rt_vec b) { return rt_v(a.x - b.x, a.y - b.y, a.z - b.z); }
BENCH_HD rt_vec rt_scale(rt_vec a, float s) { return rt_v(a.x * s, a.y * s, a.z * s); }
BENCH_HD rt_vec rt_norm(rt_vec a) { return rt_scale(a, 1.0f / sqrtf(rt_dot(a, a))); }
BENCH_HD rt_vec rt_cross(rt_vec a, rt_vec b) {
    return rt_v(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

BENCH_HD float rt_rand(uint32_t *s) {
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

/* Sphere k: centre, radius, albedo (the scene is computed, not stored). */
BENCH_HD void rt_sphere(int k, rt_vec *c, float *r, rt_vec *albedo) {
    if (k == 0) {
        *c = rt_v(0.0f, -1000.0f, 0.0f);
        *r = 999.0f;
        *albedo = rt_v(0.6f, 0.6f, 0.55f);
        return;
    }
    float a = 0.7853982f * (float)k;
    *c = rt_v(2.2f * cosf(a), -0.4f + 0.15f * (float)(k % 3), 2.2f * sinf(a) - 1.0f);
    *r = 0.45f + 0.05f * (float)(k % 4);
    *albedo = rt_v(0.3f + 0.08f * (float)k, 0.9f - 0.07f * (float)k, 0.2f + 0.1f * (float)(k % 5));
}

/* The colour of one pixel (the sum over its samples, divided). */
BENCH_HD rt_vec rt_pixel(int px, int py, int w, int h) {
    uint32_t seed = bench_hash((uint32_t)(py * w + px) * 2654435761u + 1u) | 1u;
    rt_vec sum = rt_v(0, 0, 0);
    rt_vec eye = rt_v(0.0f, 0.6f, 5.0f);
    for (int s = 0; s < RT_SAMPLES; s++) {
        float u = ((float)px + rt_rand(&seed)) / (float)w * 2.0f - 1.0f;
        float v = 1.0f - ((float)py + rt_rand(&seed)) / (float)h * 2.0f;
        rt_vec dir = rt_norm(rt_v(u * 1.2f, v * 1.2f - 0.2f, -2.0f));
        rt_vec org = eye;
        rt_vec att = rt_v(1, 1, 1);
        rt_vec col = rt_v(0, 0, 0);
        for (int b = 0; b < RT_BOUNCES; b++) {
            float best = 1e30f;
            int hit = -1;
            rt_vec hc = rt_v(0, 0, 0), ha = hc;
            for (int k = 0; k < RT_SPHERES; k++) {
                rt_vec c, alb;
                float r;
                rt_sphere(k, &c, &r, &alb);
                rt_vec oc = rt_sub(org, c);
                float hb = rt_dot(oc, dir);
                float disc = hb * hb - (rt_dot(oc, oc) - r * r);
                if (disc > 0.0f) {
                    float t = -hb - sqrtf(disc);
                    if (t > 1e-3f && t < best) {
                        best = t;
                        hit = k;
                        hc = c;
                        ha = alb;
                    }
                }
            }
            if (hit < 0) {
                float sky = 0.5f * (dir.y + 1.0f);
                col = rt_v(att.x * (1.0f - 0.5f * sky), att.y * (1.0f - 0.3f * sky), att.z);
                break;
            }
            org = rt_add(org, rt_scale(dir, best));
            rt_vec n = rt_norm(rt_sub(org, hc));
            /* A cosine-weighted direction around the normal. */
            float phi = 6.2831853f * rt_rand(&seed);
            float r2 = rt_rand(&seed);
            float sr = sqrtf(r2);
            rt_vec t1 = rt_norm(fabsf(n.x) > 0.5f ? rt_cross(rt_v(0, 1, 0), n) : rt_cross(rt_v(1, 0, 0), n));
            rt_vec t2 = rt_cross(n, t1);
            dir = rt_norm(rt_add(rt_add(rt_scale(t1, cosf(phi) * sr), rt_scale(t2, sinf(phi) * sr)),
                                 rt_scale(n, sqrtf(1.0f - r2))));
            att = rt_v(att.x * ha.x, att.y * ha.y, att.z * ha.z);
        }
        sum = rt_add(sum, col);
    }
    return rt_scale(sum, 1.0f / RT_SAMPLES);
}

/* Compares an image with the host's, pixel by pixel: rounding differences
 * in the math functions may send a ray elsewhere, so a few pixels may
 * differ; the image as a whole must not. */
static int rt_compare(const float *img, int w, int h, double *checksum) {
    double sum = 0, err = 0;
    long off = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            rt_vec r = rt_pixel(x, y, w, h);
            const float *p = img + 3 * ((long)y * w + x);
            double d = fabs(p[0] - r.x) + fabs(p[1] - r.y) + fabs(p[2] - r.z);
            err += d;
            off += d > 1e-3;
            sum += (double)p[0] + p[1] + p[2];
        }
    *checksum = sum;
    long n = (long)w * h;
    if (off > n / 100 + 1 || err > 1e-3 * n) {
        fprintf(stderr, "%ld of %ld pixels differ from the host's, mean error %g\n", off, n, err / n);
        return 0;
    }
    return 1;
}
