/* The same temporal blocking with OpenMP: each thread takes tiles, smooths
 * a tile with its halos ST_T times in two local buffers, writes the middle. */
#include "stencil.h"

static void pass(const float *in, float *out, long n) {
    long tiles = (n + ST_OUT - 1) / ST_OUT;
#pragma omp parallel for schedule(static)
    for (long b = 0; b < tiles; b++) {
        float buf[2][ST_TILE];
        long first = b * ST_OUT - ST_T;
        for (int t = 0; t < ST_TILE; t++) buf[0][t] = in[((first + t) % n + n) % n];
        int cur = 0;
        for (int s = 0; s < ST_T; s++) {
            buf[cur ^ 1][0] = buf[cur][0];
            buf[cur ^ 1][ST_TILE - 1] = buf[cur][ST_TILE - 1];
            for (int t = 1; t < ST_TILE - 1; t++) buf[cur ^ 1][t] = st_smooth(buf[cur][t - 1], buf[cur][t], buf[cur][t + 1]);
            cur ^= 1;
        }
        for (int t = ST_T; t < ST_TILE - ST_T; t++) {
            long o = b * ST_OUT + (t - ST_T);
            if (o < n) out[o] = buf[cur][t];
        }
    }
}

static float *run(const float *in, float *a, float *b, long n) {
    memcpy(a, in, n * sizeof(float));
    for (int s = 0; s < ST_STEPS / ST_T; s++) {
        pass(a, b, n);
        float *t = a;
        a = b;
        b = t;
    }
    return a;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : ST_DEFAULT;
    float *in = malloc(n * sizeof(float)), *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *out = x;
    st_input(in, n);
    BENCH_TIME("stencil", a, out = run(in, x, y, n));
    double sum;
    int ok = st_check(in, out, n, &sum);
    return bench_finish("stencil", sum, ok);
}
