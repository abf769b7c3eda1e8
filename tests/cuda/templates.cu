// Templates in device code: kernels templated on the element type and on
// integer parameters (block size, unroll factor), functor and in-kernel
// lambda arguments, compile-time recursion, variadic templates, if constexpr,
// template specialisation, a templated __device__ struct with static members.
#include "common.cuh"
#include <type_traits>

template <int N> struct Fact { static constexpr long long value = N * Fact<N - 1>::value; };
template <> struct Fact<0> { static constexpr long long value = 1; };

template <typename T> __device__ T sum_all(T v) { return v; }
template <typename T, typename... R> __device__ T sum_all(T v, R... rest) { return v + sum_all<T>(rest...); }

template <typename T> struct Traits { static __device__ T scale() { return T(3); } };
template <> struct Traits<double> { static __device__ double scale() { return 0.5; } };

struct Square { template <typename T> __device__ T operator()(T x) const { return x * x; } };
struct AddK { int k; template <typename T> __device__ T operator()(T x) const { return x + T(k); } };

template <typename T, typename F>
__global__ void map(const T *in, T *out, int n, F f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v = f(in[i]) * Traits<T>::scale();
        if constexpr (std::is_integral<T>::value) v += sum_all<T>(1, 2, 3);      // +6
        else v += sum_all<T>(T(0.25), T(0.25));                                 // +0.5
        out[i] = v;
    }
}

template <int BLOCK, int UNROLL, typename T>
__global__ void block_sum(const T *in, T *out, int n) {
    __shared__ T s[BLOCK];
    T acc = T(0);
    int base = blockIdx.x * BLOCK * UNROLL + threadIdx.x;
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        int i = base + u * BLOCK;
        if (i < n) acc += in[i];
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int st = BLOCK / 2; st > 0; st /= 2) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

__global__ void lambdas(int *out, long long *fact) {
    int i = threadIdx.x;
    auto twice = [](int x) { return 2 * x; };
    int bias = 7;
    auto with_capture = [=](int x) { return twice(x) + bias; };
    out[i] = with_capture(i);
    if (i == 0) *fact = Fact<15>::value;
}

template <typename T>
static void check_map(const char *what, int n, T eps) {
    T *h = new T[n], *r = new T[n], *d_in, *d_out;
    for (int i = 0; i < n; i++) h[i] = T(i % 100);
    CHECK(cudaMalloc(&d_in, n * sizeof(T)));
    CHECK(cudaMalloc(&d_out, n * sizeof(T)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(T), cudaMemcpyHostToDevice));
    map<<<(n + 127) / 128, 128>>>(d_in, d_out, n, Square());
    CHECK_KERNEL();
    CHECK(cudaMemcpy(r, d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
    T scale = std::is_same<T, double>::value ? T(0.5) : T(3);
    T add = std::is_integral<T>::value ? T(6) : T(0.5);
    for (int i = 0; i < n; i++)
        EXPECT_NEAR(r[i], h[i] * h[i] * scale + add, 0, eps, what, i);
    map<<<(n + 127) / 128, 128>>>(d_in, d_out, n, AddK{5});
    CHECK_KERNEL();
    CHECK(cudaMemcpy(r, d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_NEAR(r[i], (h[i] + T(5)) * scale + add, 0, eps, what, i);
    CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    delete[] h; delete[] r;
}

template <int BLOCK, int UNROLL>
static void check_sum(int n) {
    int *h = new int[n], *d_in, *d_out;
    for (int i = 0; i < n; i++) h[i] = i % 13 - 6;
    int blocks = (n + BLOCK * UNROLL - 1) / (BLOCK * UNROLL);
    int *r = new int[blocks];
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, blocks * sizeof(int)));
    CHECK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    block_sum<BLOCK, UNROLL, int><<<blocks, BLOCK>>>(d_in, d_out, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(r, d_out, blocks * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++) {
        int want = 0;
        for (int i = b * BLOCK * UNROLL; i < (b + 1) * BLOCK * UNROLL && i < n; i++) want += h[i];
        EXPECT(r[b] == want, "block_sum<%d,%d>[%d] = %d want %d", BLOCK, UNROLL, b, r[b], want);
    }
    CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    delete[] h; delete[] r;
}

int main() {
    check_map<int>("map<int>", 1000, 0);
    check_map<float>("map<float>", 1000, 0.0f);
    check_map<double>("map<double>", 1000, 0.0);
    check_map<long long>("map<long long>", 1000, 0);
    check_sum<64, 1>(5000);
    check_sum<128, 4>(5000);
    check_sum<256, 2>(5000);
    int *d, h[64];
    long long *f, hf;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMalloc(&f, sizeof hf));
    lambdas<<<1, 64>>>(d, f);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hf, f, sizeof hf, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) EXPECT_EQ(h[i], 2 * i + 7, "lambda", i);
    EXPECT_EQ(hf, 1307674368000LL, "Fact<15>", 0);
    CHECK(cudaFree(d)); CHECK(cudaFree(f));
    return finish();
}
