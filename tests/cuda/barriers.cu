// Barriers: __syncthreads inside loops and in block-uniform branches,
// __syncwarp (full and partial masks) ordering shared-memory exchanges
// within a warp, named barriers from PTX (bar.sync/bar.arrive with an id and
// a thread count) for a producer warp and a consumer warp, and warps that
// exit before a __syncthreads that the remaining warps still pass.
#include "common.cuh"

#define NT 128

__global__ void loops(int *out, int rounds) {
    __shared__ int s[NT];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    for (int r = 0; r < rounds; r++) {
        int left = s[(t + NT - 1) % NT];
        __syncthreads();
        s[t] = left + (r & 1 ? t : 1);
        __syncthreads();
        if (blockIdx.x % 2 == 0) { // uniform in the block
            s[t] ^= 1;
            __syncthreads();
        }
    }
    out[blockIdx.x * NT + t] = s[t];
}

__global__ void warp_exchange(int *out) {
    __shared__ int s[NT];
    int t = threadIdx.x, lane = t % 32;
    s[t] = t * 3;
    __syncwarp();
    int v = s[(t & ~31) + (31 - lane)];
    __syncwarp();
    s[t] = v;
    __syncwarp();
    int w = 0;
    if (lane < 16) { // half-warp exchange with a partial mask
        w = s[(t & ~15) + (15 - lane)];
        __syncwarp(0x0000ffff);
    }
    out[t] = v * 1000 + w;
}

__global__ void producer_consumer(int *out) {
    __shared__ int buf[2][32];
    int t = threadIdx.x, warp = t / 32, lane = t % 32;
    for (int round = 0; round < 4; round++) {
        int slot = round % 2;
        if (warp == 0) {
            buf[slot][lane] = round * 100 + lane;
            __threadfence_block();
            asm volatile("bar.arrive 1, 64;" ::: "memory");   // 64 = producer + consumer warp
            asm volatile("bar.sync 2, 64;" ::: "memory");     // wait until consumed
        } else if (warp == 1) {
            asm volatile("bar.sync 1, 64;" ::: "memory");
            out[round * 32 + lane] = buf[slot][31 - lane];
            asm volatile("bar.arrive 2, 64;" ::: "memory");
        }
    }
    // warps 2 and 3 never touch barriers 1 and 2
    __syncthreads();
    if (warp >= 2) out[128 + t - 64] = t;
}

__global__ void early_exit(int *out) {
    __shared__ int s[NT];
    int t = threadIdx.x;
    if (t >= 64) return; // warps 2 and 3 exit
    s[t] = t + 1;
    __syncthreads();
    out[t] = s[63 - t];
}

int main() {
    int *d, h[4 * NT];
    CHECK(cudaMalloc(&d, sizeof h));
    const int rounds = 7;
    loops<<<2, NT>>>(d, rounds);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, 2 * NT * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < 2; b++) {
        int s[NT], n[NT];
        for (int t = 0; t < NT; t++) s[t] = t;
        for (int r = 0; r < rounds; r++) {
            for (int t = 0; t < NT; t++) n[t] = s[(t + NT - 1) % NT] + (r & 1 ? t : 1);
            for (int t = 0; t < NT; t++) s[t] = b % 2 == 0 ? n[t] ^ 1 : n[t];
        }
        for (int t = 0; t < NT; t++) EXPECT_EQ(h[b * NT + t], s[t], "barrier loops", b * NT + t);
    }

    warp_exchange<<<1, NT>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, NT * sizeof(int), cudaMemcpyDeviceToHost));
    for (int t = 0; t < NT; t++) {
        int lane = t % 32, base = t & ~31;
        int v = (base + 31 - lane) * 3;
        int w = 0;
        if (lane < 16) {
            int u = (t & ~15) + (15 - lane); // its value after the first exchange
            w = (base + 31 - u % 32) * 3;
        }
        EXPECT_EQ(h[t], v * 1000 + w, "__syncwarp exchange", t);
    }

    CHECK(cudaMemset(d, 0xff, sizeof h));
    producer_consumer<<<1, NT>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, 192 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int r = 0; r < 4; r++)
        for (int l = 0; l < 32; l++) EXPECT_EQ(h[r * 32 + l], r * 100 + 31 - l, "named barriers", r * 32 + l);
    for (int t = 64; t < 128; t++) EXPECT_EQ(h[128 + t - 64], t, "other warps", t);

    early_exit<<<3, NT>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, 64 * sizeof(int), cudaMemcpyDeviceToHost));
    for (int t = 0; t < 64; t++) EXPECT_EQ(h[t], 64 - t, "exited warps", t);
    CHECK(cudaFree(d));
    return finish();
}
