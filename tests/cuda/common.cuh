// Shared helpers for anycuda's self-checking CUDA test programs.
//
// Every program checks its own results on the host, prints what mismatched,
// and ends with the line "PASS <name>" (exit 0) or "FAIL <name>" (exit 1),
// where <name> is the source file's name without ".cu".
// Every CUDA API call goes through CHECK(), which prints the error name and
// exits 1 when the call does not return cudaSuccess.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
    do {                                                                                \
        cudaError_t check_err_ = (call);                                                \
        if (check_err_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s returned %s (%d): %s\n", __FILE__, __LINE__,     \
                    #call, cudaGetErrorName(check_err_), (int)check_err_,               \
                    cudaGetErrorString(check_err_));                                    \
            printf("FAIL %s\n", test_name_of(__FILE__));                                \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

// Checks a kernel launch (configuration errors) and then waits for it.
#define CHECK_KERNEL()                                                                  \
    do {                                                                                \
        CHECK(cudaGetLastError());                                                      \
        CHECK(cudaDeviceSynchronize());                                                 \
    } while (0)

// Expects a specific error code from a call.
#define CHECK_ERR(call, expected)                                                       \
    do {                                                                                \
        cudaError_t check_err_ = (call);                                                \
        if (check_err_ != (expected)) {                                                 \
            fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s\n", __FILE__,      \
                    __LINE__, #call, cudaGetErrorName(check_err_), (int)check_err_,     \
                    cudaGetErrorName(expected));                                        \
            printf("FAIL %s\n", test_name_of(__FILE__));                                \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static int g_failures = 0;

// The program's name: its source file's name without directories and ".cu".
// Called through macros so that __FILE__ is the including .cu file.
static inline const char *test_name_of(const char *f) {
    static char name[128];
    if (!name[0]) {
        const char *s = strrchr(f, '/');
        s = s ? s + 1 : f;
        size_t n = strlen(s);
        if (n > 3 && strcmp(s + n - 3, ".cu") == 0) n -= 3;
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, s, n);
        name[n] = 0;
    }
    return name;
}

// Records a failure; prints at most 20 messages in total.
#define EXPECT(cond, ...)                                                               \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            if (g_failures < 20) {                                                      \
                fprintf(stderr, "%s:%d: mismatch: ", __FILE__, __LINE__);               \
                fprintf(stderr, __VA_ARGS__);                                           \
                fprintf(stderr, "\n");                                                  \
            }                                                                           \
            g_failures++;                                                               \
        }                                                                               \
    } while (0)

#define EXPECT_EQ(a, b, what, idx)                                                      \
    EXPECT((a) == (b), "%s[%lld]: got %lld, expected %lld", what, (long long)(idx),     \
           (long long)(a), (long long)(b))

static inline bool close_rel(double got, double want, double rel, double abs_tol) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return fabs(got - want) <= abs_tol + rel * fabs(want);
}

#define EXPECT_NEAR(got, want, rel, abs_tol, what, idx)                                 \
    EXPECT(close_rel((double)(got), (double)(want), rel, abs_tol),                      \
           "%s[%lld]: got %.9g, expected %.9g", what, (long long)(idx), (double)(got),  \
           (double)(want))

// Prints the final line; returns the process exit code: `return finish();`
static inline int finish_impl(const char *file) {
    fflush(stderr);
    if (g_failures) {
        printf("%d mismatches\nFAIL %s\n", g_failures, test_name_of(file));
        return 1;
    }
    printf("PASS %s\n", test_name_of(file));
    return 0;
}
#define finish() finish_impl(__FILE__)
#define test_name() test_name_of(__FILE__)
