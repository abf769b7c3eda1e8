/* Bitonic sort of 2^SIZE unsigned keys: the network's log2(n)(log2(n)+1)/2
 * compare-exchange steps, one pass over the keys (one launch) each. */
#include "../bench.h"
#define BT_DEFAULT 20

static void bt_input(uint32_t *k, long n) {
    for (long i = 0; i < n; i++) k[i] = bench_hash((uint32_t)i * 747796405u + 1u);
}

BENCH_HD void bt_step(uint32_t *keys, long i, long j, long k) {
    long p = i ^ j;
    if (p > i) {
        uint32_t a = keys[i], b = keys[p];
        int up = (i & k) == 0;
        if (up ? a > b : a < b) {
            keys[i] = b;
            keys[p] = a;
        }
    }
}

static int bt_cmp(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static int bt_check(const uint32_t *in, const uint32_t *out, long n, double *checksum) {
    uint32_t *ref = (uint32_t *)malloc(n * sizeof(uint32_t));
    memcpy(ref, in, n * sizeof(uint32_t));
    qsort(ref, n, sizeof(uint32_t), bt_cmp);
    long bad = 0;
    uint32_t h = 0;
    for (long i = 0; i < n; i++) {
        if (out[i] != ref[i] && bad++ < 5) fprintf(stderr, "keys[%ld] = %u, expected %u\n", i, out[i], ref[i]);
        h = h * 31u + out[i];
    }
    free(ref);
    *checksum = h;
    return bad == 0;
}
