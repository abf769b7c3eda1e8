// Benchmark kernels, compiled to PTX by nvcc when the benchmark runs.

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// The same with a grid-stride loop (a fixed grid covers any n).
extern "C" __global__ void saxpy_grid(int n, float a, const float* x, float* y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}

#define TILE 16
extern "C" __global__ void sgemm_tiled(int n, const float* A, const float* B, float* C) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

// Each block sums 256 * 8 elements: a grid-stride accumulation, a warp
// shuffle reduction, then one partial per block.
extern "C" __global__ void reduce_sum(int n, const float* x, float* partial) {
    __shared__ float warp_sums[8];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x * 8 + threadIdx.x; i < (blockIdx.x + 1) * blockDim.x * 8 && i < n; i += blockDim.x)
        v += x[i];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (threadIdx.x == 0) partial[blockIdx.x] = v;
    }
}

// Matrix-vector product y = A x, one block of 128 threads per row of A
// (row-major, `cols` floats, `cols` even): each thread accumulates float2
// pairs with a block-stride loop, each warp sums with butterfly shuffles,
// the warps' sums meet in shared memory and warp 0 sums them. The shape of
// the matrix-vector kernels of LLM inference engines.
extern "C" __global__ void matvec_rows(int cols, const float* A, const float* x, float* y) {
    __shared__ float warp_sums[32];
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    if (tid < 32) warp_sums[tid] = 0.0f;
    __syncthreads();
    const float2* a2 = (const float2*)(A + (long long)row * cols);
    const float2* x2 = (const float2*)x;
    float acc = 0.0f;
    for (int c = tid; c < cols / 2; c += blockDim.x) {
        float2 a = a2[c];
        float2 b = x2[c];
        acc = fmaf(a.x, b.x, acc);
        acc = fmaf(a.y, b.y, acc);
    }
    for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, m);
    warp_sums[tid >> 5] = acc;
    __syncthreads();
    if (tid < 32) {
        acc = warp_sums[tid];
        for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, m);
        if (tid == 0) y[row] = acc;
    }
}

// 256-bin histogram of bytes: per-block shared histogram, then global.
extern "C" __global__ void histogram(int n, const unsigned char* data, unsigned int* bins) {
    __shared__ unsigned int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// Repeated 3-point smoothing of each block's 256 values in shared memory,
// with a barrier inside the loop.
extern "C" __global__ void smooth(int iters, const float* in, float* out) {
    __shared__ float s[258];
    int t = threadIdx.x;
    int base = blockIdx.x * 256;
    s[t + 1] = in[base + t];
    if (t == 0) { s[0] = 0.0f; s[257] = 0.0f; }
    __syncthreads();
    for (int k = 0; k < iters; ++k) {
        float v = (s[t] + s[t + 1] + s[t + 2]) * (1.0f / 3.0f);
        __syncthreads();
        s[t + 1] = v;
        __syncthreads();
    }
    out[base + t] = s[t + 1];
}

// Inclusive scan of each block's 256 values (Hillis-Steele) over volatile
// shared memory, with barriers inside the loop: nvcc makes every access to
// `s` an `ld.volatile.shared` / `st.volatile.shared`.
extern "C" __global__ void block_scan(int n, const unsigned* in, unsigned* out) {
    volatile __shared__ unsigned s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    s[t] = i < n ? in[i] : 0u;
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {
        unsigned v = t >= off ? s[t - off] : 0u;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (i < n) out[i] = s[t];
}

// The same scan without `volatile`: plain shared loads and stores.
extern "C" __global__ void block_scan_plain(int n, const unsigned* in, unsigned* out) {
    __shared__ unsigned s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    s[t] = i < n ? in[i] : 0u;
    __syncthreads();
    for (int off = 1; off < 256; off <<= 1) {
        unsigned v = t >= off ? s[t - off] : 0u;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (i < n) out[i] = s[t];
}

// Nothing but barriers: the cost of a block-wide barrier round trip.
extern "C" __global__ void barriers(int iters) {
    for (int i = 0; i < iters; ++i) __syncthreads();
}

extern "C" __global__ void empty() {}

// Tensor-core GEMM through wmma: each warp computes a 16x16 tile of C
// (4 warps, a 32x32 block tile), A and B half row-major, C float.
#include <mma.h>
extern "C" __global__ void wmma_gemm(int n, const half* A, const half* B, float* C) {
    using namespace nvcuda;
    int warp = threadIdx.x / 32;
    int row = blockIdx.y * 32 + (warp / 2) * 16, col = blockIdx.x * 32 + (warp % 2) * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + row * n + k, n);
        wmma::load_matrix_sync(b, B + k * n + col, n);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + row * n + col, c, n, wmma::mem_row_major);
}
