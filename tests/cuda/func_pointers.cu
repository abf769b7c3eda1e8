// Device function pointers: a __device__ table of function pointers indexed
// at run time, a pointer to a __device__ function fetched to the host with
// cudaMemcpyFromSymbol and passed back as a kernel argument, function
// pointers stored in structs, and recursion through a function pointer.
#include "common.cuh"

typedef int (*binop)(int, int);

__device__ int op_add(int a, int b) { return a + b; }
__device__ int op_sub(int a, int b) { return a - b; }
__device__ int op_mul(int a, int b) { return a * b; }
__device__ int op_max(int a, int b) { return a > b ? a : b; }
__device__ int op_xor(int a, int b) { return a ^ b; }

__device__ binop g_table[5] = {op_add, op_sub, op_mul, op_max, op_xor};
__device__ binop g_mul_ptr = op_mul;

struct Step {
    binop f;
    int operand;
};

__device__ int fold(const Step *steps, int n, int acc) {
    return n == 0 ? acc : fold(steps + 1, n - 1, steps[0].f(acc, steps[0].operand));
}

__device__ int fib_via(int (*self)(int), int n);
__device__ int fib(int n) { return n < 2 ? n : fib_via(fib, n - 1) + fib_via(fib, n - 2); }
__device__ int fib_via(int (*self)(int), int n) { return self(n); }

__global__ void apply_table(const int *a, const int *b, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = g_table[((a[i] + i) % 5 + 5) % 5](a[i], b[i]);
}

__global__ void apply_arg(binop f, const int *a, const int *b, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(a[i], b[i]);
}

__global__ void programs(int *out) {
    int t = threadIdx.x;
    Step steps[4] = {{g_table[t % 5], t}, {op_mul, 3}, {g_table[(t + 2) % 5], 11}, {op_add, -t}};
    out[t] = fold(steps, 4, 100);
    if (t == 0) out[32] = fib(15);
}

static int host_op(int k, int a, int b) {
    switch (k) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a > b ? a : b;
    default: return a ^ b;
    }
}

int main() {
    const int n = 2000;
    int ha[n], hb[n], hr[n], *a, *b, *r;
    for (int i = 0; i < n; i++) { ha[i] = i % 97 - 40; hb[i] = (i * 31) % 53; }
    CHECK(cudaMalloc(&a, sizeof ha));
    CHECK(cudaMalloc(&b, sizeof hb));
    CHECK(cudaMalloc(&r, sizeof hr));
    CHECK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
    apply_table<<<(n + 255) / 256, 256>>>(a, b, r, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int k = ((ha[i] + i) % 5 + 5) % 5;
        EXPECT_EQ(hr[i], host_op(k, ha[i], hb[i]), "table", i);
    }

    binop mul = nullptr;
    CHECK(cudaMemcpyFromSymbol(&mul, g_mul_ptr, sizeof mul));
    EXPECT(mul != nullptr, "device function pointer is null");
    apply_arg<<<(n + 255) / 256, 256>>>(mul, a, b, r, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hr, r, sizeof hr, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_EQ(hr[i], ha[i] * hb[i], "pointer argument", i);

    int hp[33];
    programs<<<1, 32>>>(r);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hp, r, sizeof hp, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 32; t++) {
        int acc = host_op(t % 5, 100, t);
        acc = acc * 3;
        acc = host_op((t + 2) % 5, acc, 11);
        acc = acc - t;
        EXPECT_EQ(hp[t], acc, "fold", t);
    }
    EXPECT_EQ(hp[32], 610, "fib(15)", 32);
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(r));
    return finish();
}
