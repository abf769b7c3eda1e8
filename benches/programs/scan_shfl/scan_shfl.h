/* Inclusive prefix sum of small integers by reduce-then-scan over tiles of
 * 1024 (256 threads x 4 consecutive items): the tiles' totals, their scan,
 * then each tile scanned from its offset. SIZE: the number of elements. */
#include "../bench.h"
#define SS_THREADS 256
#define SS_ITEMS 4
#define SS_TILE (SS_THREADS * SS_ITEMS)
#define SS_DEFAULT (8L << 20)

static void ss_input(int *in, long n) {
    for (long i = 0; i < n; i++) in[i] = (int)(bench_hash((uint32_t)i ^ 0x5bd1e995u) & 7);
}
static void ss_reference(const int *in, int *out, long n) {
    int acc = 0;
    for (long i = 0; i < n; i++) out[i] = acc += in[i];
}
static double ss_checksum(const int *out, long n) {
    uint32_t h = 0;
    for (long i = 0; i < n; i++) h = h * 31u + (uint32_t)out[i];
    return (double)h;
}
