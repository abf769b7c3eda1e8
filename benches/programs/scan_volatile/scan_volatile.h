/* Inclusive prefix sum of small integers, in blocks of 256 elements: each
 * block is scanned, the block totals are scanned, and every block adds the
 * total of the blocks before it. SIZE: the number of elements. */
#include "../bench.h"
#define SV_BLOCK 256
#define SV_DEFAULT (6656L * SV_BLOCK)

static void sv_input(int *in, long n) {
    for (long i = 0; i < n; i++) in[i] = (int)(bench_hash((uint32_t)i) & 15);
}

static void sv_reference(const int *in, int *out, long n) {
    int acc = 0;
    for (long i = 0; i < n; i++) out[i] = acc += in[i];
}

static double sv_checksum(const int *out, long n) {
    uint32_t h = 0;
    for (long i = 0; i < n; i++) h = h * 31u + (uint32_t)out[i];
    return (double)h;
}
