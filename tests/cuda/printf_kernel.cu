// printf in kernels. The harness compares stdout with printf_kernel.expected:
// every line is printed by exactly one thread (or by the host), so the output
// is deterministic. Host output is flushed before each launch so that it
// cannot be reordered with the device's output.
#include "common.cuh"

__global__ void formats() {
    printf("hello from the device\n");
    printf("int %d unsigned %u hex %x HEX %X octal %o\n", -42, 4000000000u, 255, 0xBEEF, 8);
    printf("long long %lld unsigned long long %llu\n", -9000000000ll, 18000000000000000000ull);
    printf("float %f exp %e general %g %g\n", 3.14159f, 1234.5, 0.0001, 1e-5);
    printf("width [%5d] left [%-5d] zero [%08.3f] plus [%+d] percent %%\n", 42, 42, 3.14159, 7);
    printf("string [%s] char [%c] precision [%.2f] [%10.4e]\n", "abc", 'Z', 2.71828, 31415.9265);
    printf("%d %d %d %d %d %d %d %d %d %d %d %d\n", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
}

__global__ void one_thread(int *data) {
    if (blockIdx.x == 2 && threadIdx.x == 5)
        printf("block %d thread %d of %d x %d sees %d\n", blockIdx.x, threadIdx.x, gridDim.x,
               blockDim.x, data[blockIdx.x * blockDim.x + threadIdx.x]);
}

__global__ void loop(int n) {
    for (int i = 0; i < n; i++) printf("line %d squared %d\n", i, i * i);
}

int main() {
    int *d, h[3 * 64];
    for (int i = 0; i < 3 * 64; i++) h[i] = i * 10;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    printf("host before kernels\n");
    fflush(stdout);
    formats<<<1, 1>>>();
    CHECK_KERNEL();
    printf("host between kernels\n");
    fflush(stdout);
    one_thread<<<3, 64>>>(d);
    CHECK_KERNEL();
    loop<<<1, 1>>>(4);
    CHECK_KERNEL();
    CHECK(cudaFree(d));
    return finish();
}
