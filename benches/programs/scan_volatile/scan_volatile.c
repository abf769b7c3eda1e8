/* The same three phases with OpenMP: every block of 256 scanned by a plain
 * loop (blocks spread over the threads), the block totals scanned, and the
 * offsets added. */
#include "scan_volatile.h"

static void run(const int *in, int *out, int *sums, long n, int nb) {
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        long lo = (long)b * SV_BLOCK, hi = lo + SV_BLOCK < n ? lo + SV_BLOCK : n;
        int acc = 0;
        for (long i = lo; i < hi; i++) out[i] = acc += in[i];
        sums[b] = acc;
    }
    int carry = 0;
    for (int b = 0; b < nb; b++) {
        int v = sums[b];
        sums[b] = carry;
        carry += v;
    }
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nb; b++) {
        long lo = (long)b * SV_BLOCK, hi = lo + SV_BLOCK < n ? lo + SV_BLOCK : n;
        for (long i = lo; i < hi; i++) out[i] += sums[b];
    }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SV_DEFAULT;
    int nb = (int)((n + SV_BLOCK - 1) / SV_BLOCK);
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int)), *ref = malloc(n * sizeof(int));
    int *sums = malloc(nb * sizeof(int));
    sv_input(in, n);
    BENCH_TIME("scan_volatile", a, run(in, out, sums, n, nb));
    sv_reference(in, ref, n);
    long bad = 0;
    for (long i = 0; i < n; i++) bad += out[i] != ref[i];
    return bench_finish("scan_volatile", sv_checksum(out, n), bad == 0);
}
