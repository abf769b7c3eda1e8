// Device-side memory operations of dynamic parallelism (CDP2), as the CUDA
// programming guide's device runtime API lists them: cudaMemcpyAsync,
// cudaMemcpy2DAsync, cudaMemsetAsync and cudaMemset2DAsync from a kernel,
// device to device, in stream order with the kernels the same thread
// launches into the stream: a copy made after a child launch copies what
// the child wrote, a later launch sees the copy, and a tail launch sees
// everything. Errors: a host copy kind (cudaErrorInvalidMemcpyDirection),
// a pitch below the row width (cudaErrorInvalidPitchValue), and a copy
// from an address outside any allocation fails the parent's launch.
//@ nvcc-flags: -rdc=true
//@ variants: shared
#include "common.cuh"

const int N = 1000;
const int W = 24, H = 5, PITCH = 32;

__global__ void fill(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = 3 * i + 1;
}

// b[i] == 3i+1 for every i, else counts into bad[0].
__global__ void check_copy(const int *b, int n, int *bad) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && b[i] != 3 * i + 1) atomicAdd(bad, 1);
}

// Runs last: the 2-D copy and memset of the parent are done.
__global__ void check_2d(const unsigned char *grid2, const unsigned char *copy2, int *bad) {
    for (int r = 0; r < H; r++)
        for (int c = 0; c < PITCH; c++) {
            unsigned char set = grid2[r * PITCH + c], copied = copy2[r * PITCH + c];
            // memset2D wrote 0x5a in the first W bytes of each row, the rest
            // keeps the host's 0x11; the 2-D copy took the same W bytes.
            if (set != (c < W ? 0x5a : 0x11)) atomicAdd(bad + 1, 1);
            if (copied != (c < W ? 0x5a : 0x22)) atomicAdd(bad + 2, 1);
        }
}

__global__ void parent(int *a, int *b, unsigned char *grid2, unsigned char *copy2, int *bad, int *codes) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    cudaStream_t s;
    codes[0] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    fill<<<(N + 127) / 128, 128, 0, s>>>(a, N);
    // After the child in stream order: copies what it wrote.
    codes[1] = cudaMemcpyAsync(b, a, N * sizeof(int), cudaMemcpyDeviceToDevice, s);
    check_copy<<<(N + 127) / 128, 128, 0, s>>>(b, N, bad);
    // Clear a after the check, with the default kind.
    codes[2] = cudaMemsetAsync(a, 0, N * sizeof(int), s);
    codes[3] = cudaMemset2DAsync(grid2, PITCH, 0x5a, W, H, s);
    codes[4] = cudaMemcpy2DAsync(copy2, PITCH, grid2, PITCH, W, H, cudaMemcpyDefault, s);
    // Refused: host kinds, and pitches below the width.
    codes[5] = cudaMemcpyAsync(b, a, 4, cudaMemcpyHostToDevice, s);
    codes[6] = cudaGetLastError();
    codes[7] = cudaMemcpy2DAsync(copy2, W - 1, grid2, PITCH, W, H, cudaMemcpyDeviceToDevice, s);
    codes[8] = cudaMemset2DAsync(grid2, W - 1, 0, W, H, s);
    // Empty work does nothing and succeeds.
    codes[9] = cudaMemcpyAsync(b, nullptr, 0, cudaMemcpyDeviceToDevice, s);
    check_2d<<<1, 1, 0, cudaStreamTailLaunch>>>(grid2, copy2, bad);
    codes[10] = cudaStreamDestroy(s);
}

__global__ void wild_copy(int *dst, const int *src, int *code) {
    if (threadIdx.x == 0) *code = cudaMemcpyAsync(dst, src, 64, cudaMemcpyDeviceToDevice, 0);
}

int main() {
    int *a, *b, *bad, *codes;
    unsigned char *grid2, *copy2;
    CHECK(cudaMalloc(&a, N * sizeof(int)));
    CHECK(cudaMalloc(&b, N * sizeof(int)));
    CHECK(cudaMalloc(&bad, 3 * sizeof(int)));
    CHECK(cudaMalloc(&codes, 11 * sizeof(int)));
    CHECK(cudaMalloc(&grid2, H * PITCH));
    CHECK(cudaMalloc(&copy2, H * PITCH));
    CHECK(cudaMemset(a, 0xff, N * sizeof(int)));
    CHECK(cudaMemset(b, 0, N * sizeof(int)));
    CHECK(cudaMemset(bad, 0, 3 * sizeof(int)));
    CHECK(cudaMemset(codes, 0xff, 11 * sizeof(int)));
    CHECK(cudaMemset(grid2, 0x11, H * PITCH));
    CHECK(cudaMemset(copy2, 0x22, H * PITCH));
    parent<<<2, 32>>>(a, b, grid2, copy2, bad, codes);
    CHECK_KERNEL();

    int h_codes[11], h_bad[3];
    CHECK(cudaMemcpy(h_codes, codes, sizeof h_codes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_bad, bad, sizeof h_bad, cudaMemcpyDeviceToHost));
    const int want[11] = {cudaSuccess, cudaSuccess, cudaSuccess, cudaSuccess, cudaSuccess, cudaErrorInvalidMemcpyDirection,
                          cudaErrorInvalidMemcpyDirection, cudaErrorInvalidPitchValue, cudaErrorInvalidPitchValue, cudaSuccess,
                          cudaSuccess};
    for (int i = 0; i < 11; i++) EXPECT_EQ(h_codes[i], want[i], "device-side return code", i);
    EXPECT_EQ(h_bad[0], 0, "words the copy after the child got wrong", 0);
    EXPECT_EQ(h_bad[1], 0, "bytes the 2-D memset got wrong", 1);
    EXPECT_EQ(h_bad[2], 0, "bytes the 2-D copy got wrong", 2);
    int *h_a = (int *)malloc(N * sizeof(int)), *h_b = (int *)malloc(N * sizeof(int));
    CHECK(cudaMemcpy(h_a, a, N * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_b, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        EXPECT_EQ(h_a[i], 0, "a after the device-side memset", i);
        EXPECT_EQ(h_b[i], 3 * i + 1, "b after the device-side copy", i);
    }
    free(h_a);
    free(h_b);

    // A copy from no allocation: accepted by the call (the address is
    // checked when the copy runs) and the launch fails, as a copy engine's
    // fault would fail it.
    int *code;
    CHECK(cudaMalloc(&code, sizeof(int)));
    wild_copy<<<1, 1>>>(b, (const int *)0x10, code);
    CHECK(cudaGetLastError());
    cudaError_t e = cudaDeviceSynchronize();
    EXPECT(e == cudaErrorIllegalAddress, "a device-side copy from address 0x10 gave %s", cudaGetErrorName(e));
    return finish();
}
