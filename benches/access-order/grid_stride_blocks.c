/* Should a CPU core interleave the warps of several blocks in a grid-stride
 * loop, not only the warps of one?
 *
 * The memory accesses of `saxpy` (benches/programs/saxpy): 512 blocks of
 * 256 threads update 16 Mi floats, y[i] = 0.5 x[i] + y[i], each thread
 * every 131,072nd element; a warp of 32 lanes reads and writes 128
 * consecutive bytes of each array per iteration. The CPU engine runs a
 * block's warps taking turns every 8 iterations (a turn every 64 bytes
 * loaded per lane), with a software prefetch 8 iterations ahead. Blocks
 * next to each other touch the bytes next to each other, so a core that
 * interleaved the warps of G consecutive blocks would stream G KiB at a
 * time instead of 1. This program times G = 1, 2, 4, 8, 16 with turns
 * every 8 and every 64 iterations, and the plain loop OpenMP runs, on all
 * cores (groups of blocks claimed dynamically), best of 9 repetitions,
 * twice.
 *
 *   gcc -O3 -march=native -fopenmp grid_stride_blocks.c -o grid_stride_blocks && ./grid_stride_blocks
 *
 * Needs AVX2 and FMA. Prints one line per order: its time per pass. */
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

/* Blocks b0 .. b0 + g - 1; all their warps take turns every `turn`
 * iterations. */
static void group(const float *x, float *y, int b0, int g, int iters, long stride, int turn) {
    __m256 a = _mm256_set1_ps(0.5f);
    for (int k0 = 0; k0 < iters; k0 += turn)
        for (int b = b0; b < b0 + g; b++)
            for (int w = 0; w < WARPS; w++)
                for (int k = k0; k < k0 + turn && k < iters; k++) {
                    long i = k * stride + (long)b * THREADS + w * 32;
                    if (k + 8 < iters) {
                        _mm_prefetch((const char *)(x + i + 8 * stride), _MM_HINT_T0);
                        _mm_prefetch((const char *)(y + i + 8 * stride), _MM_HINT_T0);
                    }
                    for (int q = 0; q < 32; q += 8)
                        _mm256_storeu_ps(y + i + q, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i + q), _mm256_loadu_ps(y + i + q)));
                }
}

int main(void) {
    float *x = aligned_alloc(64, N * sizeof(float)), *y = aligned_alloc(64, N * sizeof(float));
    if (!x || !y) return 1;
    for (long i = 0; i < N; i++) {
        x[i] = (float)(i % 7);
        y[i] = (float)(i % 5);
    }
    long stride = (long)BLOCKS * THREADS;
    int iters = (int)(N / stride);
    int groups[] = {1, 2, 4, 8, 16};
    for (int run = 0; run < 2; run++) {
        for (int gi = 0; gi < 5; gi++)
            for (int turn = 8; turn <= 64; turn *= 8) {
                int g = groups[gi];
                double best = 1e9;
                for (int r = 0; r < 9; r++) {
                    double t = now();
#pragma omp parallel for schedule(dynamic, 1)
                    for (int b = 0; b < BLOCKS; b += g) group(x, y, b, g, iters, stride, turn);
                    t = now() - t;
                    if (t < best) best = t;
                }
                printf("blocks %2d, turns every %2d iterations: %.2f ms per pass\n", g, turn, best * 1e3);
            }
        double best = 1e9;
        for (int r = 0; r < 9; r++) {
            double t = now();
#pragma omp parallel for schedule(static)
            for (long i = 0; i < N; i++) y[i] = 0.5f * x[i] + y[i];
            t = now() - t;
            if (t < best) best = t;
        }
        printf("plain loop: %.2f ms per pass\n", best * 1e3);
    }
    return 0;
}
