/* Histogram of SIZE bytes into 256 bins. */
#include "../bench.h"
#define HG_DEFAULT (64L << 20)
#define HG_BINS 256

static void hg_input(unsigned char *d, long n) {
    for (long i = 0; i < n; i++) {
        uint32_t h = bench_hash((uint32_t)i);
        d[i] = (unsigned char)((h & 255) < 64 ? h >> 24 & 15 : h >> 8); /* a quarter in 16 bins */
    }
}
static int hg_check(const unsigned char *d, long n, const unsigned *hist, double *checksum) {
    unsigned ref[HG_BINS] = {0};
    for (long i = 0; i < n; i++) ref[d[i]]++;
    int bad = 0;
    double s = 0;
    for (int b = 0; b < HG_BINS; b++) {
        if (hist[b] != ref[b] && bad++ < 5) fprintf(stderr, "bin %d = %u, expected %u\n", b, hist[b], ref[b]);
        s += (double)hist[b] * (b + 1);
    }
    *checksum = s;
    return bad == 0;
}
