// Asynchronous copies: cuda::memcpy_async into shared memory completed by a
// cuda::barrier (cp.async + cp.async.mbarrier.arrive + mbarrier phases),
// a double-buffered pipeline over tiles with cuda::pipeline, and the
// primitives __pipeline_memcpy_async with zero fill (src-size smaller than
// the copy) and __pipeline_wait_prior.
#include "common.cuh"
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>
namespace cg = cooperative_groups;

#define T 128  // threads
#define TILE 256

__global__ void barrier_copy(const float *in, float *out, int rounds) {
    __shared__ float s[TILE];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    float acc = 0;
    for (int r = 0; r < rounds; r++) {
        cuda::memcpy_async(block, s, in + r * TILE, sizeof(float) * TILE, bar);
        bar.arrive_and_wait();
        acc += s[(threadIdx.x * 3 + r) % TILE];
        bar.arrive_and_wait(); // everyone read before the next copy
    }
    out[threadIdx.x] = acc;
}

__global__ void pipelined_sum(const float *in, float *out, int tiles) {
    __shared__ float s[2][TILE];
    auto block = cg::this_thread_block();
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    auto pipe = cuda::make_pipeline(block, &state);
    float acc = 0;
    int fetched = 0;
    for (int t = 0; t < tiles; t++) {
        for (; fetched < tiles && fetched < t + 2; fetched++) {
            pipe.producer_acquire();
            cuda::memcpy_async(block, s[fetched % 2], in + fetched * TILE, sizeof(float) * TILE, pipe);
            pipe.producer_commit();
        }
        pipe.consumer_wait();
        acc += s[t % 2][threadIdx.x] + s[t % 2][threadIdx.x + T];
        pipe.consumer_release();
    }
    out[threadIdx.x] = acc;
}

__global__ void zero_fill(const int *in, int *out) {
    __shared__ __align__(16) int s[T * 4];
    int t = threadIdx.x;
    // Thread t copies 16 bytes, the last 16 - (t % 5) * 4 of them zeros.
    __pipeline_memcpy_async(&s[t * 4], &in[t * 4], 16, 16 - (t % 5) * 4);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    for (int i = 0; i < 4; i++) out[t * 4 + i] = s[((t + 1) % T) * 4 + i];
}

int main() {
    const int rounds = 4, tiles = 6;
    float *hin = new float[TILE * tiles], hout[T];
    for (int i = 0; i < TILE * tiles; i++) hin[i] = (float)(i % 97);
    float *din, *dout;
    CHECK(cudaMalloc(&din, sizeof(float) * TILE * tiles));
    CHECK(cudaMalloc(&dout, sizeof hout));
    CHECK(cudaMemcpy(din, hin, sizeof(float) * TILE * tiles, cudaMemcpyHostToDevice));

    barrier_copy<<<1, T>>>(din, dout, rounds);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
    for (int t = 0; t < T; t++) {
        float want = 0;
        for (int r = 0; r < rounds; r++) want += hin[r * TILE + (t * 3 + r) % TILE];
        EXPECT(hout[t] == want, "barrier_copy[%d] = %g, expected %g", t, hout[t], want);
    }

    pipelined_sum<<<1, T>>>(din, dout, tiles);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
    for (int t = 0; t < T; t++) {
        float want = 0;
        for (int k = 0; k < tiles; k++) want += hin[k * TILE + t] + hin[k * TILE + t + T];
        EXPECT(hout[t] == want, "pipelined_sum[%d] = %g, expected %g", t, hout[t], want);
    }

    int hi[T * 4], ho[T * 4];
    for (int i = 0; i < T * 4; i++) hi[i] = i + 1;
    int *di, *dO;
    CHECK(cudaMalloc(&di, sizeof hi));
    CHECK(cudaMalloc(&dO, sizeof ho));
    CHECK(cudaMemcpy(di, hi, sizeof hi, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dO, 0xff, sizeof ho));
    zero_fill<<<1, T>>>(di, dO);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(ho, dO, sizeof ho, cudaMemcpyDeviceToHost));
    for (int t = 0; t < T; t++) {
        int src = (t + 1) % T, kept = src % 5;
        for (int i = 0; i < 4; i++) {
            int want = i < kept ? hi[src * 4 + i] : 0;
            EXPECT(ho[t * 4 + i] == want, "zero_fill[%d][%d] = %d, expected %d", t, i, ho[t * 4 + i], want);
        }
    }
    delete[] hin;
    return finish();
}
