// Launch-configuration errors are reported at launch and are not sticky:
// a block of 2048 threads -> cudaErrorInvalidConfiguration, a block of
// 1024 x 2 threads -> the same, blockDim.z of 65 -> the same, a grid of 0
// blocks -> the same, too much static+dynamic shared memory ->
// cudaErrorInvalidValue; cudaGetLastError returns the error once and then
// cudaSuccess; afterwards a valid launch runs and gives the right answer.
#include "common.cuh"

__global__ void fill(int *p, int v) { p[blockIdx.x * blockDim.x + threadIdx.x] = v; }

// The driver API documents CUDA_ERROR_INVALID_VALUE for an invalid launch
// configuration, which the runtime reports as cudaErrorInvalidValue unless
// it checks the configuration itself (cudaErrorInvalidConfiguration); both
// are accepted for configuration errors until checked on NVIDIA hardware.
static void expect_launch_error(const char *what, cudaError_t want, cudaError_t also = cudaSuccess) {
    cudaError_t peek = cudaPeekAtLastError();
    cudaError_t got = cudaGetLastError();
    cudaError_t after = cudaGetLastError();
    bool ok = peek == got && (got == want || (also != cudaSuccess && got == also));
    EXPECT(ok, "%s: got %s / %s, expected %s", what,
           cudaGetErrorName(peek), cudaGetErrorName(got), cudaGetErrorName(want));
    EXPECT(after == cudaSuccess, "%s: error not cleared (%s)", what, cudaGetErrorName(after));
}

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 4096 * sizeof(int)));
    CHECK(cudaMemset(d, 0, 4096 * sizeof(int)));

    fill<<<1, 2048>>>(d, 1);
    expect_launch_error("2048 threads", cudaErrorInvalidConfiguration, cudaErrorInvalidValue);
    fill<<<1, dim3(1024, 2)>>>(d, 1);
    expect_launch_error("1024x2 threads", cudaErrorInvalidConfiguration, cudaErrorInvalidValue);
    fill<<<1, dim3(1, 1, 65)>>>(d, 1);
    expect_launch_error("blockDim.z 65", cudaErrorInvalidConfiguration, cudaErrorInvalidValue);
    fill<<<0, 32>>>(d, 1);
    expect_launch_error("empty grid", cudaErrorInvalidConfiguration, cudaErrorInvalidValue);
    fill<<<1, 32, 1 << 30>>>(d, 1);
    expect_launch_error("1 GiB of dynamic shared memory", cudaErrorInvalidValue);

    // nothing ran, and the device still works
    CHECK(cudaDeviceSynchronize());
    int h[4096];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4096; i++) EXPECT_EQ(h[i], 0, "no failed launch wrote memory", i);
    fill<<<4, 1024>>>(d, 7);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4096; i++) EXPECT_EQ(h[i], 7, "valid launch", i);
    CHECK(cudaFree(d));
    return finish();
}
