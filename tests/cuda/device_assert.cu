// assert() in device code: a kernel whose asserts all hold completes
// normally; then one thread fails an assert, and the following
// synchronisation must return cudaErrorAssert. (The failed assertion's message
// goes to stderr.) Prints PASS when the error was the expected one.
#include "common.cuh"
#include <cassert>

__global__ void checks(const int *p, int n, int bad) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(p[i] != bad);
}

int main() {
    const int n = 256;
    int h[n], *d;
    for (int i = 0; i < n; i++) h[i] = i;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    checks<<<n / 64, 64>>>(d, n, -1); // no value is -1: passes
    CHECK_KERNEL();
    checks<<<n / 64, 64>>>(d, n, 77); // thread 77 fails its assert
    CHECK(cudaGetLastError());        // the launch itself is fine
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaErrorAssert) {
        printf("expected cudaErrorAssert from the sync, got %s\nFAIL %s\n", cudaGetErrorName(err),
               test_name());
        return 1;
    }
    // The error is sticky: the context stays unusable.
    err = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (err != cudaErrorAssert) {
        printf("expected the sticky cudaErrorAssert from cudaMemcpy, got %s\nFAIL %s\n",
               cudaGetErrorName(err), test_name());
        return 1;
    }
    return finish();
}
