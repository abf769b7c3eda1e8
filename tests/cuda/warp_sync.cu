// Warp-synchronous code: lanes of a warp exchange values through shared or
// global memory without barriers, relying on a converged warp executing
// each instruction for all of its lanes (as NVIDIA GPUs do). An 8x8 DCT
// whose threads write a column of a shared tile and read a row, a transpose
// and a butterfly through volatile shared memory, the classic unrolled
// last-warp reduction, an exchange through global memory; saxpy, whose
// lanes touch only their own elements, with arrays that overlap; and a
// widening copy whose loads and stores have different sizes, in place.
#include "common.cuh"

#define TILES 64

__constant__ float dct_coef[64];

// 8 threads per 8x8 tile (4 tiles per warp): thread c transforms column c
// and writes it to column c of the tile, then transforms row c, which the
// tile's other 7 threads wrote. No barrier in between.
__global__ void dct8x8(const float* in, float* out) {
    __shared__ float tile[8][8][9];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int c = threadIdx.x & 7, t = threadIdx.x >> 3;
    const float* x = in + (g >> 3) * 64;
    for (int r = 0; r < 8; r++) {
        float acc = 0.0f;
        for (int n = 0; n < 8; n++) acc += dct_coef[r * 8 + n] * x[n * 8 + c];
        tile[t][r][c] = acc;
    }
    float* y = out + (g >> 3) * 64 + c * 8;
    for (int k = 0; k < 8; k++) {
        float acc = 0.0f;
        for (int n = 0; n < 8; n++) acc += dct_coef[k * 8 + n] * tile[t][c][n];
        y[k] = acc;
    }
}

// out[i] = in[warp's first + (lane & 3) * 8 + (lane >> 2)].
__global__ void transpose32(const int* in, int* out) {
    volatile __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, first = threadIdx.x - lane;
    s[threadIdx.x] = in[i];
    out[i] = s[first + (lane & 3) * 8 + (lane >> 2)];
}

// Every lane ends with its warp's sum: butterfly steps over shared slots.
__global__ void butterfly(const int* in, int* out) {
    volatile __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, first = threadIdx.x - lane;
    int v = in[i];
    for (int k = 1; k < 32; k <<= 1) {
        s[threadIdx.x] = v;
        v += s[first + (lane ^ k)];
    }
    out[i] = v;
}

__device__ void warp_reduce(volatile int* s, int tid) {
    s[tid] += s[tid + 32];
    s[tid] += s[tid + 16];
    s[tid] += s[tid + 8];
    s[tid] += s[tid + 4];
    s[tid] += s[tid + 2];
    s[tid] += s[tid + 1];
}

// Sum of each block's 256 inputs: halving with barriers down to 64, then
// the last warp without one.
__global__ void reduce256(const int* in, int* out) {
    __shared__ int s[256];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    for (int k = 128; k > 32; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid < 32) warp_reduce(s, tid);
    if (tid == 0) out[blockIdx.x] = s[0];
}

// out[i] = what lane i ^ 1 stored to buf one statement earlier.
__global__ void exchange(volatile int* buf, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[i] = i * 3 + 1;
    out[i] = buf[i ^ 1];
}

__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// out[i] = in[i] widened: 4-byte loads, 8-byte stores through one index.
// With out over in, lane i's store covers in[2i] and in[2i + 1], which
// lanes 2i and 2i + 1 load; a converged warp loads them all first.
__global__ void widen(int n, const int* in, long long* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}

static int failures = 0;

static void expect(bool ok, const char* what, int i, double got, double want) {
    if (!ok && failures++ < 10) printf("%s[%d] = %g, expected %g\n", what, i, got, want);
}

int main() {
    const double pi = 3.14159265358979323846;
    float coef[64];
    for (int k = 0; k < 8; k++)
        for (int n = 0; n < 8; n++) coef[k * 8 + n] = (float)((k == 0 ? sqrt(0.125) : 0.5) * cos((2 * n + 1) * k * pi / 16));
    CHECK(cudaMemcpyToSymbol(dct_coef, coef, sizeof coef));

    // DCT.
    {
        static float x[TILES * 64], y[TILES * 64];
        for (int i = 0; i < TILES * 64; i++) x[i] = (float)((i * 37) % 255) - 128.0f;
        float *dx, *dy;
        CHECK(cudaMalloc(&dx, sizeof x));
        CHECK(cudaMalloc(&dy, sizeof y));
        CHECK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
        CHECK(cudaMemset(dy, 0, sizeof y));
        dct8x8<<<TILES * 8 / 64, 64>>>(dx, dy);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost));
        for (int t = 0; t < TILES; t++) {
            float col[8][8];
            for (int r = 0; r < 8; r++)
                for (int c = 0; c < 8; c++) {
                    float acc = 0.0f;
                    for (int n = 0; n < 8; n++) acc += coef[r * 8 + n] * x[t * 64 + n * 8 + c];
                    col[r][c] = acc;
                }
            for (int c = 0; c < 8; c++)
                for (int k = 0; k < 8; k++) {
                    float want = 0.0f;
                    for (int n = 0; n < 8; n++) want += coef[k * 8 + n] * col[c][n];
                    int i = t * 64 + c * 8 + k;
                    expect(fabsf(y[i] - want) <= 1e-3f * (1.0f + fabsf(want)), "dct", i, y[i], want);
                }
        }
        CHECK(cudaFree(dx));
        CHECK(cudaFree(dy));
    }

    // Transpose, butterfly, reduction, exchange.
    {
        const int n = 1024;
        static int in[n], out[n], sums[n / 256];
        for (int i = 0; i < n; i++) in[i] = (int)((i * 2654435761u) >> 16) % 1000 - 500;
        int *din, *dout, *dbuf;
        CHECK(cudaMalloc(&din, sizeof in));
        CHECK(cudaMalloc(&dout, sizeof out));
        CHECK(cudaMalloc(&dbuf, sizeof out));
        CHECK(cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice));

        transpose32<<<n / 256, 256>>>(din, dout);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            int lane = i & 31;
            int want = in[i - lane + (lane & 3) * 8 + (lane >> 2)];
            expect(out[i] == want, "transpose32", i, out[i], want);
        }

        butterfly<<<n / 256, 256>>>(din, dout);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int j = i - (i & 31); j < i - (i & 31) + 32; j++) want += in[j];
            expect(out[i] == want, "butterfly", i, out[i], want);
        }

        reduce256<<<n / 256, 256>>>(din, dout);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(sums, dout, sizeof sums, cudaMemcpyDeviceToHost));
        for (int b = 0; b < n / 256; b++) {
            int want = 0;
            for (int j = 0; j < 256; j++) want += in[b * 256 + j];
            expect(sums[b] == want, "reduce256", b, sums[b], want);
        }

        exchange<<<n / 128, 128>>>(dbuf, dout);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) expect(out[i] == (i ^ 1) * 3 + 1, "exchange", i, out[i], (i ^ 1) * 3 + 1);
        CHECK(cudaFree(din));
        CHECK(cudaFree(dout));
        CHECK(cudaFree(dbuf));
    }

    // saxpy: separate arrays, in place, and y one element past x within a
    // warp (every lane loads x before any lane stores y).
    {
        const int n = 4096;
        static float h[2 * n], r[2 * n];
        for (int i = 0; i < 2 * n; i++) h[i] = (float)(i % 97);
        float* d;
        CHECK(cudaMalloc(&d, sizeof h));
        CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        saxpy<<<n / 256, 256>>>(n, 2.0f, d, d + n);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) expect(r[n + i] == 2.0f * h[i] + h[n + i], "saxpy", i, r[n + i], 2.0f * h[i] + h[n + i]);

        CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        saxpy<<<n / 256, 256>>>(n, 2.0f, d, d);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) expect(r[i] == 3.0f * h[i], "saxpy in place", i, r[i], 3.0f * h[i]);

        CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        saxpy<<<1, 32>>>(32, 2.0f, d, d + 1);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, d, sizeof r, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 32; i++) expect(r[1 + i] == 2.0f * h[i] + h[1 + i], "saxpy overlapping", i, r[1 + i], 2.0f * h[i] + h[1 + i]);
        CHECK(cudaFree(d));
    }

    // widen: separate arrays (the ranges the launch touches are apart),
    // then out over in within one warp (every lane loads before any
    // lane stores).
    {
        const int n = 4096;
        static int h[3 * n];
        static long long r[n];
        for (int i = 0; i < 3 * n; i++) h[i] = i * 7 - 3000;
        int* d;
        CHECK(cudaMalloc(&d, sizeof h));
        CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        widen<<<n / 256, 256>>>(n, d, (long long*)(d + n));
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, d + n, n * sizeof(long long), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) expect(r[i] == h[i], "widen", i, (double)r[i], h[i]);

        CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
        widen<<<1, 32>>>(32, d, (long long*)d);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, d, 32 * sizeof(long long), cudaMemcpyDeviceToHost));
        for (int i = 0; i < 32; i++) expect(r[i] == h[i], "widen overlapping", i, (double)r[i], h[i]);
        CHECK(cudaFree(d));
    }

    if (failures) {
        printf("FAIL %s\n", test_name_of(__FILE__));
        return 1;
    }
    printf("PASS %s\n", test_name_of(__FILE__));
    return 0;
}
