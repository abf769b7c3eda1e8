// Shared-memory tiled matrix multiply C = A * B (float, 16x16 and 32x32 tiles,
// sizes not multiples of the tile), compared with a host product. Inputs are
// small integers so every result is exact.
//@ variants: shared cu12 lz4 nocomp
#include "common.cuh"

template <int TILE>
__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1]; // padded: no bank conflicts
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        int ak = t + threadIdx.x, bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

template <int TILE>
static void run(const float *dA, const float *dB, float *dC, const float *hA, const float *hB,
                float *hC, int M, int N, int K) {
    CHECK(cudaMemset(dC, 0, M * N * sizeof(float)));
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul<TILE><<<grid, block>>>(dA, dB, dC, M, N, K);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hC, dC, M * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = 0.0f;
            for (int k = 0; k < K; k++) want += hA[i * K + k] * hB[k * N + j];
            EXPECT(hC[i * N + j] == want, "tile %d C[%d][%d]: got %g want %g", TILE, i, j,
                   hC[i * N + j], want);
        }
}

int main() {
    const int M = 100, N = 77, K = 129;
    float *hA = new float[M * K], *hB = new float[K * N], *hC = new float[M * N];
    for (int i = 0; i < M * K; i++) hA[i] = (float)((i * 7) % 9 - 4);
    for (int i = 0; i < K * N; i++) hB[i] = (float)((i * 5) % 7 - 3);
    float *dA, *dB, *dC;
    CHECK(cudaMalloc(&dA, M * K * sizeof(float)));
    CHECK(cudaMalloc(&dB, K * N * sizeof(float)));
    CHECK(cudaMalloc(&dC, M * N * sizeof(float)));
    CHECK(cudaMemcpy(dA, hA, M * K * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, hB, K * N * sizeof(float), cudaMemcpyHostToDevice));
    run<16>(dA, dB, dC, hA, hB, hC, M, N, K);
    run<32>(dA, dB, dC, hA, hB, hC, M, N, K);
    CHECK(cudaFree(dA)); CHECK(cudaFree(dB)); CHECK(cudaFree(dC));
    delete[] hA; delete[] hB; delete[] hC;
    return finish();
}
