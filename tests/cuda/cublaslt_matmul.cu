// cuBLASLt through NVIDIA's header and -lcublasLt at build time; at run time
// the program must load anycuda's libcublasLt (it prints which file holds
// cublasLtMatmul on the line "loaded: PATH" for the harness to check).
// Checks against host references what PyTorch and similar callers do: the
// heuristic query, f32 with a bias and ReLU epilogue, f16 inputs with f32
// output and a GELU+bias epilogue, row-major layouts with C and D
// distinct, a strided batch, 8-bit integer products into 32-bit ones
// without an algorithm, a cuBLAS handle used as a cuBLASLt handle, stream
// order after a kernel, descriptors in the caller's memory, and an
// unsupported configuration refused with CUBLAS_STATUS_NOT_SUPPORTED.
//@ variants: shared cu12
//@ libs: cublasLt cublas
#include "common.cuh"
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <dlfcn.h>
#include <stdint.h>
#include <vector>

#define CHECK_BLAS(call)                                                                \
    do {                                                                                \
        cublasStatus_t s_ = (call);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)s_); \
            printf("FAIL %s\n", test_name_of(__FILE__));                                \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

__global__ void scale_by(float *a, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= s;
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

template <typename T>
static T *upload(const std::vector<T> &v) {
    T *d;
    CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T>
static std::vector<T> download(const T *d, size_t n) {
    std::vector<T> v(n);
    CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

// One matmul the way PyTorch's gemm_and_bias runs it: heuristic first.
static cublasStatus_t matmul(cublasLtHandle_t lt, cublasLtMatmulDesc_t op, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                             const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc, void *D,
                             cublasLtMatrixLayout_t ld, void *ws, size_t wsSize, cudaStream_t stream) {
    cublasLtMatmulPreference_t pref;
    CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsSize, sizeof wsSize));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (found != 1) return CUBLAS_STATUS_NOT_SUPPORTED;
    return cublasLtMatmul(lt, op, alpha, A, la, B, lb, beta, C, lc, D, ld, &result.algo, ws, wsSize, stream);
}

int main() {
    Dl_info info;
    if (dladdr((void *)&cublasLtMatmul, &info) && info.dli_fname) printf("loaded: %s\n", info.dli_fname);
    cublasLtHandle_t lt;
    CHECK_BLAS(cublasLtCreate(&lt));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    const size_t wsSize = 1 << 20;
    void *ws;
    CHECK(cudaMalloc(&ws, wsSize));

    const int m = 37, n = 29, k = 45;
    std::vector<float> A(m * k), B(k * n), bias(m);
    for (int i = 0; i < m * k; i++) A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < k * n; i++) B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < m; i++) bias[i] = (float)(i % 5) * 0.25f - 0.5f;
    float *dA = upload(A), *dB = upload(B), *dBias = upload(bias);
    float *dD;
    CHECK(cudaMalloc(&dD, m * n * 4));
    const float one = 1.0f, zero = 0.0f;

    // f32, A transposed (stored k x m), bias then ReLU, D = C in place.
    {
        cublasLtMatmulDesc_t op;
        CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t t = CUBLAS_OP_T;
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dBias, sizeof dBias));
        cublasLtMatrixLayout_t la, lb, lc;
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, m, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
        // The A of this product is the k x m matrix whose columns are A's.
        CHECK_BLAS(matmul(lt, op, &one, dA, la, dB, lb, &zero, dD, lc, dD, lc, ws, wsSize, stream));
        CHECK(cudaStreamSynchronize(stream));
        std::vector<float> got = download(dD, m * n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = bias[i];
                for (int p = 0; p < k; p++) s += (double)A[p + i * k] * B[p + j * k];
                double want = s > 0 ? s : 0;
                EXPECT(fabs(got[i + j * m] - want) <= 1e-4 * (1 + fabs(want)), "relu+bias D[%d,%d] = %f, want %f", i, j, got[i + j * m], want);
            }
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(op);
    }

    // f16 inputs, f32 output, GELU + bias, everything row-major, C and D
    // distinct (C = 1 everywhere, beta = 0.5).
    {
        std::vector<__half> hA(m * k), hB(k * n);
        for (int i = 0; i < m * k; i++) hA[i] = __float2half(A[i]);
        for (int i = 0; i < k * n; i++) hB[i] = __float2half(B[i]);
        __half *dhA = upload(hA), *dhB = upload(hB);
        float *dC = upload(std::vector<float>(m * n, 1.0f));
        cublasLtMatmulDesc_t op;
        CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dBias, sizeof dBias));
        cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
        cublasLtMatrixLayout_t la, lb, lc, ld;
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, m, k, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, k, n, n));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, n));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, m, n, n));
        for (cublasLtMatrixLayout_t l : {la, lb, lc, ld}) CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
        const float half_beta = 0.5f;
        CHECK_BLAS(matmul(lt, op, &one, dhA, la, dhB, lb, &half_beta, dC, lc, dD, ld, ws, wsSize, stream));
        CHECK(cudaStreamSynchronize(stream));
        std::vector<float> got = download(dD, m * n), gotC = download(dC, m * n);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0.5 + bias[i];
                for (int p = 0; p < k; p++) s += (double)__half2float(hA[i * k + p]) * __half2float(hB[p * n + j]);
                double want = gelu(s);
                EXPECT(fabs(got[i * n + j] - want) <= 1e-4 * (1 + fabs(want)), "gelu+bias D[%d,%d] = %f, want %f", i, j, got[i * n + j], want);
                EXPECT(gotC[i * n + j] == 1.0f, "C[%d,%d] changed to %f", i, j, gotC[i * n + j]);
            }
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(op);
        CHECK(cudaFree(dhA));
        CHECK(cudaFree(dhB));
        CHECK(cudaFree(dC));
    }

    // A strided batch of 3 f64 products (8 x 8 x 8), descriptors in the
    // caller's memory, a cuBLAS handle as the cuBLASLt handle.
    {
        const int s = 8, count = 3, stride = 80;
        std::vector<double> bA(stride * count), bB(stride * count);
        for (int i = 0; i < stride * count; i++) {
            bA[i] = (i % 9) - 4;
            bB[i] = (i % 7) - 3;
        }
        double *dbA = upload(bA), *dbB = upload(bB), *dbC = upload(std::vector<double>(stride * count, -1.0));
        cublasHandle_t blas;
        CHECK_BLAS(cublasCreate(&blas));
        cublasLtMatmulDescOpaque_t opMem;
        cublasLtMatrixLayoutOpaque_t lMem;
        CHECK_BLAS(cublasLtMatmulDescInit(&opMem, CUBLAS_COMPUTE_64F, CUDA_R_64F));
        CHECK_BLAS(cublasLtMatrixLayoutInit(&lMem, CUDA_R_64F, s, s, s));
        int c = count;
        int64_t st = stride;
        CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(&lMem, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &c, sizeof c));
        CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(&lMem, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st, sizeof st));
        const double done = 1.0, dzero = 0.0;
        CHECK_BLAS(matmul((cublasLtHandle_t)blas, &opMem, &done, dbA, &lMem, dbB, &lMem, &dzero, dbC, &lMem, dbC, &lMem, ws, wsSize, stream));
        CHECK(cudaStreamSynchronize(stream));
        std::vector<double> got = download(dbC, stride * count);
        for (int b = 0; b < count; b++) {
            for (int j = 0; j < s; j++)
                for (int i = 0; i < s; i++) {
                    double sum = 0;
                    for (int p = 0; p < s; p++) sum += bA[b * stride + i + p * s] * bB[b * stride + p + j * s];
                    EXPECT(got[b * stride + i + j * s] == sum, "batch %d D[%d,%d] = %f, want %f", b, i, j, got[b * stride + i + j * s], sum);
                }
            for (int g = s * s; g < stride; g++)
                EXPECT(got[b * stride + g] == -1.0, "gap after batch %d at %d changed to %f", b, g, got[b * stride + g]);
        }
        CHECK_BLAS(cublasDestroy(blas));
        CHECK(cudaFree(dbA));
        CHECK(cudaFree(dbB));
        CHECK(cudaFree(dbC));
    }

    // 8-bit integers into 32-bit ones, PyTorch's _int_mm: no algorithm, no
    // workspace, A transposed.
    {
        std::vector<int8_t> iA(m * k), iB(k * n);
        for (int i = 0; i < m * k; i++) iA[i] = (int8_t)((i * 37) % 255 - 127);
        for (int i = 0; i < k * n; i++) iB[i] = (int8_t)((i * 53) % 251 - 125);
        int8_t *diA = upload(iA), *diB = upload(iB);
        int32_t *diD;
        CHECK(cudaMalloc(&diD, m * n * 4));
        cublasLtMatmulDesc_t op;
        CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
        cublasOperation_t t = CUBLAS_OP_T;
        CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
        cublasLtMatrixLayout_t la, lb, lc;
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, k, m, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, k, n, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, m, n, m));
        const int32_t ione = 1, izero = 0;
        CHECK_BLAS(cublasLtMatmul(lt, op, &ione, diA, la, diB, lb, &izero, diD, lc, diD, lc, nullptr, nullptr, 0, stream));
        CHECK(cudaStreamSynchronize(stream));
        std::vector<int32_t> got = download(diD, m * n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                int32_t want = 0;
                for (int p = 0; p < k; p++) want += (int32_t)iA[p + i * k] * iB[p + j * k];
                EXPECT(got[i + j * m] == want, "int8 D[%d,%d] = %d, want %d", i, j, got[i + j * m], want);
            }
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(op);
        CHECK(cudaFree(diA));
        CHECK(cudaFree(diB));
        CHECK(cudaFree(diD));
    }

    // Stream order: a kernel scales A on the stream, the matmul reads it;
    // then an unsupported memory order is refused.
    {
        scale_by<<<(m * k + 255) / 256, 256, 0, stream>>>(dA, m * k, 2.0f);
        CHECK(cudaGetLastError());
        cublasLtMatmulDesc_t op;
        CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasLtMatrixLayout_t la, lb, lc;
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
        CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
        CHECK_BLAS(matmul(lt, op, &one, dA, la, dB, lb, &zero, dD, lc, dD, lc, ws, wsSize, stream));
        std::vector<float> got(m * n);
        CHECK(cudaMemcpyAsync(got.data(), dD, m * n * 4, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int p = 0; p < k; p++) s += 2.0 * A[i + p * m] * B[p + j * k];
                EXPECT(fabs(got[i + j * m] - s) <= 1e-4 * (1 + fabs(s)), "after kernel D[%d,%d] = %f, want %f", i, j, got[i + j * m], s);
            }
        cublasLtOrder_t col32 = CUBLASLT_ORDER_COL32;
        CHECK_BLAS(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &col32, sizeof col32));
        cublasStatus_t s = matmul(lt, op, &one, dA, la, dB, lb, &zero, dD, lc, dD, lc, ws, wsSize, stream);
        EXPECT(s == CUBLAS_STATUS_NOT_SUPPORTED, "COL32 order gave status %d (%s)", (int)s, cublasLtGetStatusName(s));
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(op);
    }

    size_t version = cublasLtGetVersion();
    EXPECT(version / 10000 == CUBLAS_VER_MAJOR, "cublasLtGetVersion %zu for headers of %d", version, CUBLAS_VER_MAJOR);
    CHECK_BLAS(cublasLtDestroy(lt));
    CHECK(cudaStreamDestroy(stream));
    if (g_failures) {
        printf("FAIL %s (%d mismatches)\n", test_name_of(__FILE__), g_failures);
        return 1;
    }
    printf("PASS %s\n", test_name_of(__FILE__));
    return 0;
}
