/* The surface of bezier.h with OpenMP: points spread over the threads. */
#include "bezier.h"

static void surface(const float *ctrl, float *pts, int m) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < m * m; i++)
        bz_point(ctrl, (float)(i % m) / (float)(m - 1), (float)(i / m) / (float)(m - 1), pts + 3 * (long)i);
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int m = a.size ? (int)a.size : BZ_DEFAULT;
    float ctrl[3 * BZ_N * BZ_N];
    bz_control(ctrl);
    float *pts = malloc((size_t)m * m * 3 * sizeof(float));
    BENCH_TIME("bezier", a, surface(ctrl, pts, m));
    double sum;
    int ok = bz_compare(ctrl, pts, m, &sum);
    return bench_finish("bezier", sum, ok);
}
