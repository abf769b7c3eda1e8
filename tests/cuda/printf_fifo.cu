// cudaLimitPrintfFifoSize: the program sets a small printf FIFO before its
// first printing kernel, reads it back, and prints more than it holds. How
// much of the output a device keeps between two synchronisations is the
// device's business (NVIDIA's FIFO is circular; anycuda's AMD buffer keeps
// the records that fit and says in the log how many it dropped), so the
// program checks the limit and that the kernel completes; the HIP test
// runner checks the log. Once a printing kernel has been launched, the FIFO's
// size is fixed: a later change is refused (cudaDeviceSetLimit's
// documentation).
#include "common.cuh"

__global__ void chatty(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("line %4d of the printf FIFO test\n", i);
}

int main() {
    CHECK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 4096));
    size_t fifo = 0;
    CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
    EXPECT(fifo >= 4096 && fifo < 65536, "printf FIFO size %zu", fifo);
    chatty<<<1, 200>>>(200);
    CHECK_KERNEL();
    CHECK_ERR(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1 << 20), cudaErrorInvalidValue);
    CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
    EXPECT(fifo >= 4096 && fifo < 65536, "printf FIFO size %zu after a refused change", fifo);
    // The heap's size is still open: no kernel that calls malloc ran.
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16u << 20));
    return finish();
}
