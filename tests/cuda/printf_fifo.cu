// cudaLimitPrintfFifoSize: the program sets a small printf FIFO before its
// first printing kernel, reads it back, and prints more than it holds. How
// much of the output a device keeps between two synchronisations is the
// device's business (NVIDIA's FIFO is circular; anycuda's AMD buffer keeps
// the records that fit and says in the log how many it dropped), so the
// program checks the limit and that the kernel completes; the HIP test
// runner checks the log.
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
    return finish();
}
