/* Shared by every program of the suite, CUDA (C++) and OpenMP (C) alike:
 * arguments, the host clock, the median, the deterministic inputs and the
 * machine-readable result lines.
 *
 *   PROGRAM [SIZE [REPS]]
 *
 * SIZE scales the problem (each program says how; 0 or absent: its default),
 * REPS is the number of timed repetitions after one warm-up (default 5).
 * Output, one line each:
 *   FIRST <name> <ms>     the warm-up run (includes JIT compilation on anycuda)
 *   TIME <name> <ms>      median of the timed repetitions
 *   CHECK <name> <value>  a checksum of the result, compared across versions
 *   PASS <name> | FAIL <name>   the result against the host computation
 */
#ifndef ANYCUDA_BENCH_H
#define ANYCUDA_BENCH_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Functions of the algorithm shared by the kernel, the OpenMP version and
 * the host reference. */
#ifdef __CUDACC__
#define BENCH_HD __host__ __device__ inline
#else
#define BENCH_HD static inline
#endif

static double bench_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

typedef struct {
    long size; /* 0: the program's default */
    int reps;
} bench_args;

static bench_args bench_parse(int argc, char **argv) {
    bench_args a;
    a.size = argc > 1 ? atol(argv[1]) : 0;
    a.reps = argc > 2 ? atoi(argv[2]) : 5;
    if (a.size < 0) a.size = 0;
    if (a.reps < 1) a.reps = 1;
    if (a.reps > 1000) a.reps = 1000;
    return a;
}

static int bench_cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A 32-bit integer hash (a multiply-xorshift mix): the inputs of every
 * program, identical on both sides. */
BENCH_HD uint32_t bench_hash(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* A float in [0, 1) from a hash (24 random bits, exact). */
BENCH_HD float bench_unit(uint32_t x) { return (float)(bench_hash(x) >> 8) * (1.0f / 16777216.0f); }

/* Runs `run` (which does the whole timed work, including the wait for the
 * device) once as a warm-up, then `reps` times, and prints the FIRST and
 * TIME lines. */
#define BENCH_TIME(name, args, ...)                                            \
    do {                                                                       \
        double t0_ = bench_now_ms();                                           \
        __VA_ARGS__;                                                           \
        printf("FIRST %s %.3f\n", name, bench_now_ms() - t0_);                 \
        double times_[1000];                                                   \
        for (int r_ = 0; r_ < (args).reps; r_++) {                             \
            double t_ = bench_now_ms();                                        \
            __VA_ARGS__;                                                       \
            times_[r_] = bench_now_ms() - t_;                                  \
        }                                                                      \
        printf("TIME %s %.3f\n", name, bench_median(times_, (args).reps));     \
    } while (0)

/* Prints the CHECK and PASS/FAIL lines and returns the exit status. */
static int bench_finish(const char *name, double checksum, int ok) {
    printf("CHECK %s %.9g\n", name, checksum);
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    fflush(stdout);
    return ok ? 0 : 1;
}

/* True when a and b agree to a relative tolerance. */
static inline int bench_close(double a, double b, double rel) {
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= rel * (m > 1.0 ? m : 1.0);
}

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define CK(call)                                                               \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,      \
                    cudaGetErrorString(e_));                                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#endif

#endif
