/* Sum of floats in [0, 1). SIZE: the number of elements. */
#include "../bench.h"
#define RD_DEFAULT (16L << 20)
#define RD_THREADS 256
#define RD_BLOCKS 512

static void rd_input(float *in, long n) {
    for (long i = 0; i < n; i++) in[i] = bench_unit((uint32_t)i);
}
static double rd_reference(const float *in, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += in[i];
    return s;
}
