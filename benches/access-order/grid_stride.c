/* In which order should a CPU run the warps of a grid-stride loop?
 *
 * The memory accesses of `reduce` (benches/programs/reduce): 512 blocks of
 * 256 threads sum 16 Mi floats, each thread every 131,072nd element; a warp
 * of 32 lanes reads 128 consecutive bytes per iteration. The CPU engine
 * runs a block's warps one after the other, each through its whole loop
 * (with a software prefetch 8 iterations ahead). This program times that
 * order against warps taking turns every G iterations, with the same
 * vector loads, on all cores (blocks dynamically scheduled, as the runners
 * claim them), best of 15 repetitions each, all orders in the same run.
 *
 *   gcc -O3 -march=native -fopenmp grid_stride.c -o grid_stride && ./grid_stride
 *
 * Needs AVX-512F. Prints one line per order: its time and the sum (each
 * warp adds in the same order whatever the turns; the blocks' sums are
 * added in the order the dynamic schedule finishes them, so the last
 * digits vary from run to run). */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N (16L << 20)
#define BLOCKS 512
#define THREADS 256
#define WARPS (THREADS / 32)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One block; warps take turns every `turn` iterations (turn >= iters: each
 * warp runs its whole loop before the next starts). */
static float block(const float *a, int b, int iters, long stride, int turn) {
    __m512 acc[WARPS][2];
    for (int w = 0; w < WARPS; w++) acc[w][0] = acc[w][1] = _mm512_setzero_ps();
    for (int k0 = 0; k0 < iters; k0 += turn)
        for (int w = 0; w < WARPS; w++)
            for (int k = k0; k < k0 + turn && k < iters; k++) {
                const float *p = a + k * stride + (long)b * THREADS + w * 32;
                if (k + 8 < iters) {
                    _mm_prefetch((const char *)(p + 8 * stride), _MM_HINT_T0);
                    _mm_prefetch((const char *)(p + 8 * stride + 16), _MM_HINT_T0);
                }
                acc[w][0] = _mm512_add_ps(acc[w][0], _mm512_loadu_ps(p));
                acc[w][1] = _mm512_add_ps(acc[w][1], _mm512_loadu_ps(p + 16));
            }
    float s = 0;
    for (int w = 0; w < WARPS; w++) s += _mm512_reduce_add_ps(_mm512_add_ps(acc[w][0], acc[w][1]));
    return s;
}

int main(void) {
    float *a = aligned_alloc(64, N * sizeof(float));
    if (!a) return 1;
    for (long i = 0; i < N; i++) a[i] = (float)(i % 7) * 0.5f;
    long stride = (long)BLOCKS * THREADS;
    int iters = (int)(N / stride);
    int turns[] = {iters, 64, 32, 16, 8, 4};
    for (unsigned t = 0; t < sizeof turns / sizeof turns[0]; t++) {
        double best = 1e9;
        float sum = 0;
        for (int r = 0; r < 15; r++) {
            double t0 = now();
            float total = 0;
#pragma omp parallel for reduction(+ : total) schedule(dynamic, 1)
            for (int b = 0; b < BLOCKS; b++) total += block(a, b, iters, stride, turns[t]);
            double dt = now() - t0;
            if (dt < best) best = dt;
            sum = total;
        }
        if (turns[t] == iters)
            printf("each warp's whole loop in turn: %.3f ms (sum %.9g)\n", best * 1e3, sum);
        else
            printf("warps take turns every %3d iterations: %.3f ms (sum %.9g)\n", turns[t], best * 1e3, sum);
    }
    free(a);
    return 0;
}
