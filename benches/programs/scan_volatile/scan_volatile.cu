// Block scan in the warp-synchronous style of pre-Volta CUDA code: each warp
//@ small: 70000
// scans its 32 values in `volatile` shared memory without barriers (a zeroed
// half warp in front of each warp's values replaces the lane tests), warp
// totals are scanned by warp 0 the same way, and a barrier separates the
// phases. Three launches: block scans, a scan of the block totals by one
// block, and the addition of each block's offset.
#include "scan_volatile.h"

__device__ __forceinline__ int warp_scan(volatile int *s, int lane, int v) {
    s[lane] = 0;
    int i = lane + 32;
    s[i] = v;
    s[i] = v = v + s[i - 1];
    s[i] = v = v + s[i - 2];
    s[i] = v = v + s[i - 4];
    s[i] = v = v + s[i - 8];
    s[i] = v = v + s[i - 16];
    return v;
}

// Inclusive scan of SV_BLOCK values held one per thread; returns this
// thread's inclusive prefix and leaves the block total in *total.
__device__ int block_scan(int v, int *total) {
    __shared__ int warps[SV_BLOCK / 32][64];
    __shared__ int sums[64];
    __shared__ int offsets[SV_BLOCK / 32];
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int incl = warp_scan(warps[w], lane, v);
    if (lane == 31) offsets[w] = incl;
    __syncthreads();
    if (w == 0) {
        int x = lane < SV_BLOCK / 32 ? offsets[lane] : 0;
        int y = warp_scan(sums, lane, x);
        if (lane < SV_BLOCK / 32) offsets[lane] = y - x;
        if (lane == SV_BLOCK / 32 - 1) sums[0] = y;
    }
    __syncthreads();
    *total = sums[0];
    int r = incl + offsets[w];
    __syncthreads(); // the shared arrays are reused by the next call
    return r;
}

__global__ void scan_blocks(const int *in, int *out, int *block_sums, long n) {
    long i = (long)blockIdx.x * SV_BLOCK + threadIdx.x;
    int total;
    int r = block_scan(i < n ? in[i] : 0, &total);
    if (i < n) out[i] = r;
    if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

// One block: exclusive scan of the block totals, SV_BLOCK at a time. (Not
// unrolled: unrolled, the kernel exceeds the size up to which anycuda runs
// kernels as lockstep warps, and thread by thread the warp-synchronous scan
// would not be lockstep.)
__global__ void scan_totals(int *block_sums, int nb) {
    int carry = 0;
#pragma unroll 1
    for (int base = 0; base < nb; base += SV_BLOCK) {
        int i = base + threadIdx.x;
        int v = i < nb ? block_sums[i] : 0;
        int total;
        int r = block_scan(v, &total);
        if (i < nb) block_sums[i] = carry + r - v;
        carry += total;
    }
}

__global__ void add_offsets(int *out, const int *block_sums, long n) {
    long i = (long)blockIdx.x * SV_BLOCK + threadIdx.x;
    if (i < n) out[i] += block_sums[blockIdx.x];
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SV_DEFAULT;
    int nb = (int)((n + SV_BLOCK - 1) / SV_BLOCK);
    int *in = (int *)malloc(n * sizeof(int)), *out = (int *)malloc(n * sizeof(int));
    int *ref = (int *)malloc(n * sizeof(int));
    sv_input(in, n);
    int *d_in, *d_out, *d_sums;
    CK(cudaMalloc(&d_in, n * sizeof(int)));
    CK(cudaMalloc(&d_out, n * sizeof(int)));
    CK(cudaMalloc(&d_sums, nb * sizeof(int)));
    CK(cudaMemcpy(d_in, in, n * sizeof(int), cudaMemcpyHostToDevice));
    BENCH_TIME("scan_volatile", a, {
        scan_blocks<<<nb, SV_BLOCK>>>(d_in, d_out, d_sums, n);
        scan_totals<<<1, SV_BLOCK>>>(d_sums, nb);
        add_offsets<<<nb, SV_BLOCK>>>(d_out, d_sums, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(out, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
    sv_reference(in, ref, n);
    long bad = 0;
    for (long i = 0; i < n; i++)
        if (out[i] != ref[i] && bad++ < 5) fprintf(stderr, "out[%ld] = %d, expected %d\n", i, out[i], ref[i]);
    return bench_finish("scan_volatile", sv_checksum(out, n), bad == 0);
}
