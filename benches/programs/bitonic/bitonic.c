/* The same network with OpenMP: one parallel loop over the keys per step. */
#include "bitonic.h"

static void sort(uint32_t *keys, const uint32_t *in, long n) {
    memcpy(keys, in, n * 4);
    for (long k = 2; k <= n; k *= 2)
        for (long j = k / 2; j > 0; j /= 2) {
#pragma omp parallel for schedule(static)
            for (long i = 0; i < n; i++) bt_step(keys, i, j, k);
        }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int lg = a.size ? (int)a.size : BT_DEFAULT;
    long n = 1L << lg;
    uint32_t *in = malloc(n * 4), *out = malloc(n * 4);
    bt_input(in, n);
    BENCH_TIME("bitonic", a, sort(out, in, n));
    double sum;
    int ok = bt_check(in, out, n, &sum);
    return bench_finish("bitonic", sum, ok);
}
