// `exit` inside called functions ends only the threads that execute it:
// they stop in the function and never come back to its callers, while the
// other threads of the same warp take the function's result and go on.
// Calls nested two deep, a call through a device function pointer, and a
// warp collective among the threads that are left.
#include "common.cuh"

__device__ __noinline__ int leave_if_odd(int t) {
    if (t & 1) asm volatile("exit;");
    return t * 3;
}

__device__ __noinline__ int outer(int t) {
    int v = leave_if_odd(t);
    return v + 1;
}

__device__ __noinline__ int leave_if_multiple_of_3(int t) {
    if (t % 3 == 0) asm volatile("exit;");
    return t - 1;
}

__device__ int (*g_leave)(int) = leave_if_multiple_of_3;

__global__ void direct(int *out, int *after) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    out[t] = outer(t);
    after[t] = 1;
}

__global__ void indirect(int *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int (*f)(int) = g_leave;
    out[t] = f(t);
}

// The even lanes that are left add their values with a shuffle over their
// own mask: lanes that exited take no part.
__global__ void collective_after(int *out) {
    int lane = threadIdx.x & 31;
    int v = leave_if_odd(lane);
    unsigned even = 0x55555555u;
    int sum = v;
    for (int d = 2; d < 32; d <<= 1) sum += __shfl_xor_sync(even, sum, d);
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

int main() {
    const int n = 256;
    int *out, *after, h_out[n], h_after[n];
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    CHECK(cudaMalloc(&after, n * sizeof(int)));

    CHECK(cudaMemset(out, 0xff, n * sizeof(int)));
    CHECK(cudaMemset(after, 0xff, n * sizeof(int)));
    direct<<<2, 128>>>(out, after);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_after, after, sizeof h_after, cudaMemcpyDeviceToHost));
    for (int t = 0; t < n; t++) {
        EXPECT_EQ(h_out[t], (t & 1) ? -1 : 3 * t + 1, "direct", t);
        EXPECT_EQ(h_after[t], (t & 1) ? -1 : 1, "after the call", t);
    }

    CHECK(cudaMemset(out, 0xff, n * sizeof(int)));
    indirect<<<4, 64>>>(out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost));
    for (int t = 0; t < n; t++) EXPECT_EQ(h_out[t], t % 3 == 0 ? -1 : t - 1, "through a pointer", t);

    CHECK(cudaMemset(out, 0xff, n * sizeof(int)));
    collective_after<<<2, 128>>>(out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h_out, out, sizeof h_out, cudaMemcpyDeviceToHost));
    // Sum of 3 * lane over the even lanes of a warp: 3 * (0 + 2 + ... + 30).
    for (int t = 0; t < n; t++) EXPECT_EQ(h_out[t], (t & 1) ? -1 : 3 * 240, "shuffle after exits", t);

    CHECK(cudaFree(out));
    CHECK(cudaFree(after));
    return finish();
}
