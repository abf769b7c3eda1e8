// __trap() in device code: a kernel in which no thread traps completes
// normally; then one thread of one block traps (inside a called
// function), and the following synchronisation must return
// cudaErrorLaunchFailure, sticky, while the process goes on. Prints PASS
// when the errors were the expected ones.
#include "common.cuh"

__device__ __noinline__ void check_value(int v, int bad) {
    if (v == bad) __trap();
}

__global__ void traps_on(const int *p, int *out, int n, int bad) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        check_value(p[i], bad);
        out[i] = p[i] + 1;
    }
}

int main() {
    const int n = 256;
    int h[n], *d, *out;
    for (int i = 0; i < n; i++) h[i] = i;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMalloc(&out, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    traps_on<<<n / 64, 64>>>(d, out, n, -1); // no value is -1: no trap
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_EQ(h[i], i + 1, "out", i);
    traps_on<<<n / 64, 64>>>(d, out, n, 77); // thread 13 of block 1 traps
    CHECK(cudaGetLastError());               // the launch itself is fine
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaErrorLaunchFailure) {
        printf("expected cudaErrorLaunchFailure from the sync, got %s\nFAIL %s\n", cudaGetErrorName(err),
               test_name());
        return 1;
    }
    // The error is sticky: the context stays unusable.
    err = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (err != cudaErrorLaunchFailure) {
        printf("expected the sticky cudaErrorLaunchFailure from cudaMemcpy, got %s\nFAIL %s\n",
               cudaGetErrorName(err), test_name());
        return 1;
    }
    return finish();
}
