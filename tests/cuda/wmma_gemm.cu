// Tensor-core GEMMs through CUDA's own mma.h (nvcuda::wmma): half inputs
// with float and half accumulators (16x16x16, 32x8x16, 8x32x16), bf16
// (16x16x16), tf32 (16x16x8), int8 (16x16x16, signed and unsigned), double
// (8x8x4); every layout combination of A and B (f16), accumulators loaded
// and stored row- and column-major, strides larger than the tile, and
// element-wise scaling of an accumulator fragment. Inputs are small
// integers, so every product and sum is exact in any accumulation order.
#include "common.cuh"
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <type_traits>
using namespace nvcuda;

// C[M x N] = A[M x K] * B[K x N] + C, one warp per 16x16 (or MxN) tile.
template <int M, int N, int K, typename TF, typename TA, typename TC, typename LA, typename LB>
__global__ void gemm(const TA *a, const TA *b, TC *c, int m, int n, int k, int lda, int ldb, int ldc, bool c_row) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = n / N;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * M >= m) return;
    wmma::fragment<wmma::matrix_a, M, N, K, TF, LA> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, TF, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, TC> fc;
    wmma::layout_t cl = c_row ? wmma::mem_row_major : wmma::mem_col_major;
    TC *ct = c_row ? c + tm * M * ldc + tn * N : c + tn * N * ldc + tm * M;
    wmma::load_matrix_sync(fc, ct, ldc, cl);
    for (int kk = 0; kk < k; kk += K) {
        const TA *at = std::is_same<LA, wmma::row_major>::value ? a + tm * M * lda + kk : a + kk * lda + tm * M;
        const TA *bt = std::is_same<LB, wmma::row_major>::value ? b + kk * ldb + tn * N : b + tn * N * ldb + kk;
        wmma::load_matrix_sync(fa, at, lda);
        wmma::load_matrix_sync(fb, bt, ldb);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(ct, fc, ldc, cl);
}

__global__ void scale_tile(const half *a, const half *b, float *c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    for (int i = 0; i < fc.num_elements; i++) fc.x[i] = fc.x[i] * 2.0f;
    wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

template <typename T> T from_int(int v) { return (T)v; }
template <> half from_int<half>(int v) { return __int2half_rn(v); }
template <> __nv_bfloat16 from_int<__nv_bfloat16>(int v) { return __int2bfloat16_rn(v); }
template <typename T> double to_double(T v) { return (double)v; }
template <> double to_double<half>(half v) { return (double)__half2float(v); }
template <> double to_double<__nv_bfloat16>(__nv_bfloat16 v) { return (double)__bfloat162float(v); }

// Runs one GEMM of MxNxK tiles over an m x n x k problem and checks it.
template <int M, int N, int K, typename TF, typename TA, typename TC, typename LA, typename LB>
void run(const char *what, int lo, int hi, bool c_row) {
    const int m = 2 * M, n = 2 * N, k = 2 * K;
    const bool a_row = std::is_same<LA, wmma::row_major>::value, b_row = std::is_same<LB, wmma::row_major>::value;
    // Leading dimensions a little larger than the matrices (aligned to 16 elements).
    int lda = (a_row ? k : m) + 16, ldb = (b_row ? n : k) + 16, ldc = (c_row ? n : m) + 16;
    int arows = a_row ? m : k, brows = b_row ? k : n, crows = c_row ? m : n;
    TA *ha = new TA[arows * lda], *hb = new TA[brows * ldb];
    TC *hc = new TC[crows * ldc];
    double *ref = new double[m * n];
    unsigned seed = 12345;
    auto rnd = [&]() { seed = seed * 1103515245u + 12345u; return lo + (int)((seed >> 16) % (unsigned)(hi - lo + 1)); };
    for (int i = 0; i < arows * lda; i++) ha[i] = from_int<TA>(rnd());
    for (int i = 0; i < brows * ldb; i++) hb[i] = from_int<TA>(rnd());
    for (int i = 0; i < crows * ldc; i++) hc[i] = from_int<TC>(rnd());
    auto A = [&](int r, int q) { return to_double(a_row ? ha[r * lda + q] : ha[q * lda + r]); };
    auto B = [&](int r, int q) { return to_double(b_row ? hb[r * ldb + q] : hb[q * ldb + r]); };
    auto C = [&](int r, int q) -> TC & { return c_row ? hc[r * ldc + q] : hc[q * ldc + r]; };
    for (int r = 0; r < m; r++)
        for (int q = 0; q < n; q++) {
            double s = to_double(C(r, q));
            for (int x = 0; x < k; x++) s += A(r, x) * B(x, q);
            ref[r * n + q] = s;
        }
    TA *da, *db;
    TC *dc;
    CHECK(cudaMalloc(&da, sizeof(TA) * arows * lda));
    CHECK(cudaMalloc(&db, sizeof(TA) * brows * ldb));
    CHECK(cudaMalloc(&dc, sizeof(TC) * crows * ldc));
    CHECK(cudaMemcpy(da, ha, sizeof(TA) * arows * lda, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, hb, sizeof(TA) * brows * ldb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dc, hc, sizeof(TC) * crows * ldc, cudaMemcpyHostToDevice));
    int warps = (m / M) * (n / N);
    gemm<M, N, K, TF, TA, TC, LA, LB><<<warps, 32>>>(da, db, dc, m, n, k, lda, ldb, ldc, c_row);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hc, dc, sizeof(TC) * crows * ldc, cudaMemcpyDeviceToHost));
    for (int r = 0; r < m; r++)
        for (int q = 0; q < n; q++)
            EXPECT(to_double(C(r, q)) == ref[r * n + q], "%s a_row=%d b_row=%d c_row=%d: C[%d][%d] = %g, expected %g", what, a_row, b_row,
                   c_row, r, q, to_double(C(r, q)), ref[r * n + q]);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    delete[] ha;
    delete[] hb;
    delete[] hc;
    delete[] ref;
}

template <int M, int N, int K, typename TF, typename TA, typename TC>
void all_layouts(const char *what, int lo, int hi) {
    run<M, N, K, TF, TA, TC, wmma::row_major, wmma::row_major>(what, lo, hi, true);
    run<M, N, K, TF, TA, TC, wmma::row_major, wmma::col_major>(what, lo, hi, false);
    run<M, N, K, TF, TA, TC, wmma::col_major, wmma::row_major>(what, lo, hi, false);
    run<M, N, K, TF, TA, TC, wmma::col_major, wmma::col_major>(what, lo, hi, true);
}

int main() {
    all_layouts<16, 16, 16, half, half, float>("f16->f32 16x16x16", -8, 8);
    run<32, 8, 16, half, half, float, wmma::col_major, wmma::row_major>("f16->f32 32x8x16", -8, 8, true);
    run<8, 32, 16, half, half, float, wmma::row_major, wmma::col_major>("f16->f32 8x32x16", -8, 8, false);
    run<16, 16, 16, half, half, half, wmma::row_major, wmma::col_major>("f16->f16 16x16x16", -3, 3, true);
    run<16, 16, 16, __nv_bfloat16, __nv_bfloat16, float, wmma::col_major, wmma::col_major>("bf16->f32 16x16x16", -8, 8, false);
    run<16, 16, 8, wmma::precision::tf32, float, float, wmma::row_major, wmma::row_major>("tf32->f32 16x16x8", -8, 8, true);
    run<16, 16, 16, signed char, signed char, int, wmma::row_major, wmma::col_major>("s8->s32 16x16x16", -100, 100, true);
    run<16, 16, 16, unsigned char, unsigned char, int, wmma::col_major, wmma::row_major>("u8->s32 16x16x16", 0, 250, false);
    run<8, 8, 4, double, double, double, wmma::row_major, wmma::col_major>("f64 8x8x4", -1000, 1000, true);

    // Element-wise operations on an accumulator fragment apply to the matrix.
    half ha[256], hb[256];
    float hc[256];
    for (int i = 0; i < 256; i++) {
        ha[i] = __int2half_rn(i % 7 - 3);
        hb[i] = __int2half_rn(i % 5 - 2);
    }
    half *da, *db;
    float *dc;
    CHECK(cudaMalloc(&da, sizeof ha));
    CHECK(cudaMalloc(&db, sizeof hb));
    CHECK(cudaMalloc(&dc, sizeof hc));
    CHECK(cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
    scale_tile<<<1, 32>>>(da, db, dc);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hc, dc, sizeof hc, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 16; r++)
        for (int q = 0; q < 16; q++) {
            float s = 1.0f;
            for (int x = 0; x < 16; x++) s += __half2float(ha[r * 16 + x]) * __half2float(hb[x * 16 + q]);
            EXPECT(hc[r * 16 + q] == 2.0f * s, "scaled C[%d][%d] = %g, expected %g", r, q, hc[r * 16 + q], 2.0f * s);
        }
    return finish();
}
