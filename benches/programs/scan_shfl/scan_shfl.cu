//@ small: 300000
// Prefix sum in the style of CUB's block scan: each thread owns 4
// consecutive items (one 16-byte load), scans them itself, the threads'
// totals are scanned within each warp with __shfl_up_sync, the warps' totals
// by warp 0 the same way, with a barrier between the phases. Reduce, then
// scan: the tiles' totals (warp shuffles down, then across warps), one block
// scanning the totals, then every tile scanned from its offset.
#include "scan_shfl.h"

__device__ __forceinline__ int warp_inclusive(int v) {
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        int y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += y;
    }
    return v;
}

__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
    return v;
}

// Exclusive scan of one value per thread of the block; *total: the sum.
__device__ int block_exclusive(int v, int *total) {
    __shared__ int warp_offsets[SS_THREADS / 32];
    __shared__ int block_total;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int incl = warp_inclusive(v);
    if (lane == 31) warp_offsets[w] = incl;
    __syncthreads();
    if (w == 0) {
        int x = lane < SS_THREADS / 32 ? warp_offsets[lane] : 0;
        int y = warp_inclusive(x);
        if (lane < SS_THREADS / 32) warp_offsets[lane] = y - x;
        if (lane == 31) block_total = y;
    }
    __syncthreads();
    int r = warp_offsets[w] + incl - v;
    *total = block_total;
    __syncthreads(); // the shared variables are reused by the next call
    return r;
}

__device__ __forceinline__ int4 load_items(const int *in, long base, long n) {
    if (base + SS_ITEMS <= n) return *(const int4 *)(in + base);
    int4 r = {0, 0, 0, 0};
    if (base < n) r.x = in[base];
    if (base + 1 < n) r.y = in[base + 1];
    if (base + 2 < n) r.z = in[base + 2];
    return r;
}

__global__ void reduce_tiles(const int *in, int *tile_sums, long n) {
    __shared__ int partial[SS_THREADS / 32];
    long base = (long)blockIdx.x * SS_TILE + threadIdx.x * SS_ITEMS;
    int4 v = load_items(in, base, n);
    int s = warp_sum(v.x + v.y + v.z + v.w);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        int x = threadIdx.x < SS_THREADS / 32 ? partial[threadIdx.x] : 0;
        x = warp_sum(x);
        if (threadIdx.x == 0) tile_sums[blockIdx.x] = x;
    }
}

__global__ void scan_totals(int *tile_sums, int nt) {
    int carry = 0;
    for (int base = 0; base < nt; base += SS_THREADS) {
        int i = base + threadIdx.x;
        int v = i < nt ? tile_sums[i] : 0, total;
        int r = block_exclusive(v, &total);
        if (i < nt) tile_sums[i] = carry + r;
        carry += total;
    }
}

__global__ void scan_tiles(const int *in, int *out, const int *tile_sums, long n) {
    long base = (long)blockIdx.x * SS_TILE + threadIdx.x * SS_ITEMS;
    int4 v = load_items(in, base, n);
    v.y += v.x;
    v.z += v.y;
    v.w += v.z;
    int total;
    int off = tile_sums[blockIdx.x] + block_exclusive(v.w, &total);
    v.x += off;
    v.y += off;
    v.z += off;
    v.w += off;
    if (base + SS_ITEMS <= n) {
        *(int4 *)(out + base) = v;
    } else {
        if (base < n) out[base] = v.x;
        if (base + 1 < n) out[base + 1] = v.y;
        if (base + 2 < n) out[base + 2] = v.z;
    }
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    long n = a.size ? a.size : SS_DEFAULT;
    int nt = (int)((n + SS_TILE - 1) / SS_TILE);
    int *in = (int *)malloc(n * sizeof(int)), *out = (int *)malloc(n * sizeof(int));
    int *ref = (int *)malloc(n * sizeof(int));
    ss_input(in, n);
    int *d_in, *d_out, *d_sums;
    CK(cudaMalloc(&d_in, n * sizeof(int)));
    CK(cudaMalloc(&d_out, n * sizeof(int)));
    CK(cudaMalloc(&d_sums, nt * sizeof(int)));
    CK(cudaMemcpy(d_in, in, n * sizeof(int), cudaMemcpyHostToDevice));
    BENCH_TIME("scan_shfl", a, {
        reduce_tiles<<<nt, SS_THREADS>>>(d_in, d_sums, n);
        scan_totals<<<1, SS_THREADS>>>(d_sums, nt);
        scan_tiles<<<nt, SS_THREADS>>>(d_in, d_out, d_sums, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(out, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
    ss_reference(in, ref, n);
    long bad = 0;
    for (long i = 0; i < n; i++)
        if (out[i] != ref[i] && bad++ < 5) fprintf(stderr, "out[%ld] = %d, expected %d\n", i, out[i], ref[i]);
    return bench_finish("scan_shfl", ss_checksum(out, n), bad == 0);
}
