// Per-thread default streams: built with --default-stream per-thread.
// Several host threads each use "their" default stream (stream 0) for
// memset/kernel/copy sequences concurrently and get their own results;
// work on the per-thread default stream does not wait for a blocking stream
// that is held up by a host function (with the legacy default stream this
// would wait, and the held-up host function would time out).
//@ nvcc-flags: --default-stream per-thread
#include "common.cuh"
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "build this program with --default-stream per-thread"
#endif

#define N (1 << 16)
#define NTHREADS 4

__global__ void affine(int *p, int a, int b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = p[i] * a + b + i;
}

static void worker(int id, int *result) {
    int *d;
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    for (int round = 0; round < 3; round++) {
        CHECK(cudaMemsetAsync(d, 0, N * sizeof(int), 0)); // stream 0 = this thread's stream
        affine<<<N / 256, 256>>>(d, 2, id * 100 + round);
        CHECK(cudaGetLastError());
        affine<<<N / 256, 256, 0, cudaStreamPerThread>>>(d, 3, id);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpyAsync(result, d, N * sizeof(int), cudaMemcpyDeviceToHost, 0));
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaFree(d));
}

static std::atomic<bool> g_release{false}, g_timed_out{false};

static void CUDART_CB hold(void *) {
    auto start = std::chrono::steady_clock::now();
    while (!g_release.load()) {
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
            g_timed_out = true;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

int main() {
    CHECK(cudaFree(0)); // initialise the context once
    std::vector<std::vector<int>> results(NTHREADS, std::vector<int>(N));
    std::vector<std::thread> threads;
    for (int t = 0; t < NTHREADS; t++) threads.emplace_back(worker, t, results[t].data());
    for (auto &th : threads) th.join();
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 0; i < N; i++) {
            int want = (((i + t * 100 + 2) * 3) + t + i); // only the last round survives
            EXPECT_EQ(results[t][i], want, "thread result", t * N + i);
        }

    // A blocking stream held up by a host function does not block stream 0.
    cudaStream_t blocking;
    CHECK(cudaStreamCreate(&blocking));
    CHECK(cudaLaunchHostFunc(blocking, hold, nullptr));
    int *d, h[16];
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    CHECK(cudaMemsetAsync(d, 0, N * sizeof(int), 0));
    affine<<<N / 256, 256>>>(d, 1, 5);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, 0));
    CHECK(cudaStreamSynchronize(0));
    bool was_held = !g_release.load() && !g_timed_out.load();
    g_release = true;
    CHECK(cudaStreamSynchronize(blocking));
    EXPECT(was_held, "the per-thread default stream waited for the blocking stream");
    EXPECT(!g_timed_out.load(), "host function timed out");
    for (int i = 0; i < 16; i++) EXPECT_EQ(h[i], 5 + i, "per-thread stream result", i);
    CHECK(cudaStreamDestroy(blocking));
    CHECK(cudaFree(d));
    return finish();
}
