// An out-of-bounds device access (a store far outside any allocation) must
// make the following synchronisation return cudaErrorIllegalAddress; the
// error is sticky (later calls return it too). Prints PASS when the errors
// were the expected ones.
#include "common.cuh"

__global__ void ok(int *p) { p[threadIdx.x] = threadIdx.x; }

__global__ void bad(int *p, long long offset) {
    if (threadIdx.x == 3) p[offset] = 42; // far beyond the allocation
}

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 256 * sizeof(int)));
    ok<<<1, 256>>>(d);
    CHECK_KERNEL();
    bad<<<1, 32>>>(d, 1ll << 40); // 4 TiB past the start
    CHECK(cudaGetLastError());    // the launch itself is valid
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaErrorIllegalAddress) {
        printf("expected cudaErrorIllegalAddress from the sync, got %s\nFAIL %s\n",
               cudaGetErrorName(err), test_name());
        return 1;
    }
    int h[4];
    err = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (err != cudaErrorIllegalAddress) {
        printf("expected the sticky cudaErrorIllegalAddress from cudaMemcpy, got %s\nFAIL %s\n",
               cudaGetErrorName(err), test_name());
        return 1;
    }
    return finish();
}
