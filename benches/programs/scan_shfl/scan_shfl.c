/* Reduce-then-scan with OpenMP over the same tiles of 1024: the tiles'
 * totals in parallel, their scan, then each tile scanned from its offset. */
#include "scan_shfl.h"

static void run(const int *in, int *out, int *sums, long n, int nt) {
#pragma omp parallel for schedule(static)
    for (int t = 0; t < nt; t++) {
        long lo = (long)t * SS_TILE, hi = lo + SS_TILE < n ? lo + SS_TILE : n;
        int s = 0;
#pragma omp simd reduction(+ : s)
        for (long i = lo; i < hi; i++) s += in[i];
        sums[t] = s;
    }
    int carry = 0;
    for (int t = 0; t < nt; t++) {
        int v = sums[t];
        sums[t] = carry;
        carry += v;
    }
#pragma omp parallel for schedule(static)
    for (int t = 0; t < nt; t++) {
        long lo = (long)t * SS_TILE, hi = lo + SS_TILE < n ? lo + SS_TILE : n;
        int acc = sums[t];
        for (long i = lo; i < hi; i++) out[i] = acc += in[i];
    }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SS_DEFAULT;
    int nt = (int)((n + SS_TILE - 1) / SS_TILE);
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int)), *ref = malloc(n * sizeof(int));
    int *sums = malloc(nt * sizeof(int));
    ss_input(in, n);
    BENCH_TIME("scan_shfl", a, run(in, out, sums, n, nt));
    ss_reference(in, ref, n);
    long bad = 0;
    for (long i = 0; i < n; i++) bad += out[i] != ref[i];
    return bench_finish("scan_shfl", ss_checksum(out, n), bad == 0);
}
