/* The path tracer of raytrace.h with OpenMP: rows of pixels spread over the
 * threads (dynamic: rows cost different amounts). */
#include "raytrace.h"

static void render(float *img, int w, int h) {
#pragma omp parallel for schedule(dynamic, 4)
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            rt_vec c = rt_pixel(x, y, w, h);
            float *p = img + 3 * ((long)y * w + x);
            p[0] = c.x;
            p[1] = c.y;
            p[2] = c.z;
        }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int w = a.size ? (int)a.size : RT_DEFAULT, h = w;
    float *img = malloc((size_t)w * h * 3 * sizeof(float));
    BENCH_TIME("raytrace", a, render(img, w, h));
    double sum;
    int ok = rt_compare(img, w, h, &sum);
    return bench_finish("raytrace", sum, ok);
}
