/* The same histogram with OpenMP as its users write it: a private
 * histogram per thread (an array reduction), added at the end. */
#include "histogram.h"

static void run(const unsigned char *d, long n, unsigned *hist) {
    memset(hist, 0, HG_BINS * sizeof(unsigned));
#pragma omp parallel for reduction(+ : hist[:HG_BINS]) schedule(static)
    for (long i = 0; i < n; i++) hist[d[i]]++;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : HG_DEFAULT;
    unsigned char *d = malloc(n);
    unsigned hist[HG_BINS];
    hg_input(d, n);
    BENCH_TIME("histogram", a, run(d, n, hist));
    double sum;
    int ok = hg_check(d, n, hist, &sum);
    return bench_finish("histogram", sum, ok);
}
