// cuBLAS through NVIDIA's headers and -lcublas at build time; at run time
// the program must load anycuda's libcublas (it prints which file holds
// cublasSgemm_v2 on the line "loaded: PATH" for the harness to check).
// Checks products of every transpose pair against a host reference,
// GemmEx with f16 inputs, strided and pointer-array batches, level 1/2
// calls, a batched triangular solve, device pointer mode, a documented
// argument error, and stream order with a kernel writing an operand.
//@ variants: shared cu12
//@ libs: cublas
#include "common.cuh"
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <dlfcn.h>
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

__global__ void fill(float *a, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = v + i % 3;
}

static float at(const std::vector<float> &x, int ld, cublasOperation_t op, int i, int j) {
    return op == CUBLAS_OP_N ? x[i + j * ld] : x[j + i * ld];
}

int main() {
    Dl_info info;
    if (dladdr((void *)&cublasSgemm_v2, &info) && info.dli_fname) printf("loaded: %s\n", info.dli_fname);
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CHECK_BLAS(cublasSetStream(h, stream));

    const int m = 37, n = 29, k = 45, ld = 50;
    std::vector<float> A(ld * 50), B(ld * 50), C(ld * n);
    for (size_t i = 0; i < A.size(); i++) A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (size_t i = 0; i < B.size(); i++) B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    for (size_t i = 0; i < C.size(); i++) C[i] = (float)(i % 5);
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, A.size() * 4));
    CHECK(cudaMalloc(&dB, B.size() * 4));
    CHECK(cudaMalloc(&dC, C.size() * 4));
    CHECK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));

    cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T};
    const float alpha = 1.5f, beta = -0.5f;
    for (cublasOperation_t ta : ops)
        for (cublasOperation_t tb : ops) {
            CHECK(cudaMemcpy(dC, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
            CHECK_BLAS(cublasSgemm(h, ta, tb, m, n, k, &alpha, dA, ld, dB, ld, &beta, dC, ld));
            std::vector<float> got(C.size());
            CHECK(cudaMemcpyAsync(got.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost, stream));
            CHECK(cudaStreamSynchronize(stream));
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    double s = 0;
                    for (int p = 0; p < k; p++) s += (double)at(A, ld, ta, i, p) * at(B, ld, tb, p, j);
                    double want = alpha * s + beta * C[i + j * ld];
                    EXPECT(fabs(got[i + j * ld] - want) <= 1e-4 * (1 + fabs(want)), "sgemm %d%d C[%d,%d] = %f, want %f", ta, tb, i, j, got[i + j * ld], want);
                }
        }

    // GemmEx: f16 A and B, f32 C, f32 compute.
    std::vector<__half> hA(m * k), hB(k * n);
    for (int i = 0; i < m * k; i++) hA[i] = __float2half(A[i]);
    for (int i = 0; i < k * n; i++) hB[i] = __float2half(B[i]);
    __half *dhA, *dhB;
    CHECK(cudaMalloc(&dhA, m * k * 2));
    CHECK(cudaMalloc(&dhB, k * n * 2));
    CHECK(cudaMemcpy(dhA, hA.data(), m * k * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dhB, hB.data(), k * n * 2, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dhA, CUDA_R_16F, m, dhB, CUDA_R_16F, k, &zero, dC, CUDA_R_32F, m,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    {
        std::vector<float> got(m * n);
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaMemcpy(got.data(), dC, m * n * 4, cudaMemcpyDeviceToHost));
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int p = 0; p < k; p++) s += (double)__half2float(hA[i + p * m]) * __half2float(hB[p + j * k]);
                EXPECT(fabs(got[i + j * m] - s) <= 1e-4 * (1 + fabs(s)), "gemmEx C[%d,%d] = %f, want %f", i, j, got[i + j * m], s);
            }
    }

    // Strided and pointer-array batches of 4 small products (8x8x8).
    const int bs = 8, count = 4, stride = 64;
    std::vector<double> bA(stride * count), bB(stride * count), bC(stride * count);
    for (int i = 0; i < stride * count; i++) {
        bA[i] = (i % 9) - 4;
        bB[i] = (i % 7) - 3;
    }
    double *dbA, *dbB, *dbC;
    CHECK(cudaMalloc(&dbA, stride * count * 8));
    CHECK(cudaMalloc(&dbB, stride * count * 8));
    CHECK(cudaMalloc(&dbC, stride * count * 8));
    CHECK(cudaMemcpy(dbA, bA.data(), stride * count * 8, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dbB, bB.data(), stride * count * 8, cudaMemcpyHostToDevice));
    const double done = 1.0, dzero = 0.0;
    for (int mode = 0; mode < 2; mode++) {
        CHECK(cudaMemset(dbC, 0, stride * count * 8));
        if (mode == 0) {
            CHECK_BLAS(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, bs, bs, bs, &done, dbA, bs, stride, dbB, bs, stride, &dzero, dbC, bs, stride, count));
        } else {
            double *pa[count], *pb[count], *pc[count];
            for (int b = 0; b < count; b++) {
                pa[b] = dbA + b * stride;
                pb[b] = dbB + b * stride;
                pc[b] = dbC + b * stride;
            }
            double **dpa, **dpb, **dpc;
            CHECK(cudaMalloc(&dpa, sizeof pa));
            CHECK(cudaMalloc(&dpb, sizeof pb));
            CHECK(cudaMalloc(&dpc, sizeof pc));
            CHECK(cudaMemcpy(dpa, pa, sizeof pa, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dpb, pb, sizeof pb, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dpc, pc, sizeof pc, cudaMemcpyHostToDevice));
            CHECK_BLAS(cublasDgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, bs, bs, bs, &done, dpa, bs, dpb, bs, &dzero, dpc, bs, count));
        }
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaMemcpy(bC.data(), dbC, stride * count * 8, cudaMemcpyDeviceToHost));
        for (int b = 0; b < count; b++)
            for (int j = 0; j < bs; j++)
                for (int i = 0; i < bs; i++) {
                    double s = 0;
                    for (int p = 0; p < bs; p++) s += bA[b * stride + i + p * bs] * bB[b * stride + p + j * bs];
                    EXPECT(bC[b * stride + i + j * bs] == s, "batched mode %d [%d][%d,%d] = %f, want %f", mode, b, i, j, bC[b * stride + i + j * bs], s);
                }
    }

    // Level 1 and 2: axpy, dot (host and device result), nrm2, iamax, gemv.
    {
        const int len = 100;
        std::vector<float> x(len), y(len);
        for (int i = 0; i < len; i++) {
            x[i] = (i % 10) - 4.5f;
            y[i] = (i % 7) * 0.25f;
        }
        float *dx, *dy, *dres;
        CHECK(cudaMalloc(&dx, len * 4));
        CHECK(cudaMalloc(&dy, len * 4));
        CHECK(cudaMalloc(&dres, 4));
        CHECK(cudaMemcpy(dx, x.data(), len * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dy, y.data(), len * 4, cudaMemcpyHostToDevice));
        float dot = 0, nrm = 0;
        int imax = 0;
        CHECK_BLAS(cublasSdot(h, len, dx, 1, dy, 1, &dot));
        CHECK_BLAS(cublasSnrm2(h, len, dx, 1, &nrm));
        CHECK_BLAS(cublasIsamax(h, len, dx, 1, &imax));
        double wdot = 0, wn = 0;
        int wmax = 1;
        for (int i = 0; i < len; i++) {
            wdot += (double)x[i] * y[i];
            wn += (double)x[i] * x[i];
            if (fabs(x[i]) > fabs(x[wmax - 1])) wmax = i + 1;
        }
        EXPECT(fabs(dot - wdot) < 1e-3, "sdot %f want %f", dot, wdot);
        EXPECT(fabs(nrm - sqrt(wn)) < 1e-3, "snrm2 %f want %f", nrm, sqrt(wn));
        EXPECT_EQ(imax, wmax, "isamax", 0);
        CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
        CHECK_BLAS(cublasSdot(h, len, dx, 1, dy, 1, dres));
        float ddot = 0;
        CHECK(cudaMemcpyAsync(&ddot, dres, 4, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        EXPECT(fabs(ddot - wdot) < 1e-3, "sdot (device result) %f want %f", ddot, wdot);
        CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
        const float two = 2.0f;
        CHECK_BLAS(cublasSaxpy(h, len, &two, dx, 1, dy, 1));
        // gemv: y2 = A(10x10 of x) * y
        float *dy2;
        CHECK(cudaMalloc(&dy2, 10 * 4));
        CHECK_BLAS(cublasSgemv(h, CUBLAS_OP_T, 10, 10, &one, dx, 10, dy, 1, &zero, dy2, 1));
        std::vector<float> gy(len), gy2(10);
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaMemcpy(gy.data(), dy, len * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(gy2.data(), dy2, 40, cudaMemcpyDeviceToHost));
        for (int i = 0; i < len; i++) EXPECT(gy[i] == y[i] + 2 * x[i], "saxpy y[%d] = %f", i, gy[i]);
        for (int j = 0; j < 10; j++) {
            double s = 0;
            for (int i = 0; i < 10; i++) s += (double)x[i + j * 10] * gy[i];
            EXPECT(fabs(gy2[j] - s) < 1e-3, "sgemv y[%d] = %f, want %f", j, gy2[j], s);
        }
    }

    // A batched lower-triangular solve: L X = B with L = [[2,0],[1,4]].
    {
        float L[4] = {2, 1, 0, 4}, Bm[4] = {2, 5, 4, 10};
        float *dL, *dBm;
        CHECK(cudaMalloc(&dL, 16));
        CHECK(cudaMalloc(&dBm, 16));
        CHECK(cudaMemcpy(dL, L, 16, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dBm, Bm, 16, cudaMemcpyHostToDevice));
        float **dpl, **dpb;
        CHECK(cudaMalloc(&dpl, 8));
        CHECK(cudaMalloc(&dpb, 8));
        CHECK(cudaMemcpy(dpl, &dL, 8, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dpb, &dBm, 8, cudaMemcpyHostToDevice));
        CHECK_BLAS(cublasStrsmBatched(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 2, 2, &one, dpl, 2, dpb, 2, 1));
        CHECK(cudaStreamSynchronize(stream));
        CHECK(cudaMemcpy(Bm, dBm, 16, cudaMemcpyDeviceToHost));
        float want[4] = {1, 1, 2, 2};
        for (int i = 0; i < 4; i++) EXPECT(Bm[i] == want[i], "strsmBatched X[%d] = %f, want %f", i, Bm[i], want[i]);
    }

    // Stream order: a kernel writes A on the stream, the product reads it.
    {
        fill<<<4, 256, 0, stream>>>(dA, ld * 50, 1.0f);
        CHECK(cudaGetLastError());
        CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 1, 3, &one, dA, 3, dB, 3, &zero, dC, 3));
        std::vector<float> got(3);
        CHECK(cudaMemcpyAsync(got.data(), dC, 12, cudaMemcpyDeviceToHost, stream));
        CHECK(cudaStreamSynchronize(stream));
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int p = 0; p < 3; p++) s += (1.0 + (i + p * 3) % 3) * B[p];
            EXPECT(fabs(got[i] - s) < 1e-5, "after kernel C[%d] = %f, want %f", i, got[i], s);
        }
    }

    // A documented argument error.
    cublasStatus_t bad = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, dA, 3, dB, 4, &zero, dC, 4);
    EXPECT(bad == CUBLAS_STATUS_INVALID_VALUE, "lda < m gave status %d", (int)bad);
    int version = 0;
    CHECK_BLAS(cublasGetVersion(h, &version));
    EXPECT(version / 10000 == CUBLAS_VER_MAJOR, "cublasGetVersion %d for headers of %d", version, CUBLAS_VER_MAJOR);

    CHECK_BLAS(cublasDestroy(h));
    CHECK(cudaStreamDestroy(stream));
    if (g_failures) {
        printf("FAIL %s (%d mismatches)\n", test_name_of(__FILE__), g_failures);
        return 1;
    }
    printf("PASS %s\n", test_name_of(__FILE__));
    return 0;
}
