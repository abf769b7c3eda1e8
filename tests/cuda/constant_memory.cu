// __constant__ and __device__ variables: cudaMemcpyToSymbol (with an offset),
// cudaMemcpyFromSymbol, cudaGetSymbolAddress / cudaGetSymbolSize, a constant
// table read with uniform and per-thread indices, a __device__ array updated
// by one kernel and read by the next, a constant struct.
//@ variants: shared cu12 lz4 nocomp
#include "common.cuh"

struct Params {
    float scale;
    int offset;
    int table_len;
};

__constant__ float c_table[256];
__constant__ Params c_params;
__device__ int g_accum[64];
__device__ int g_initialised[4] = {10, 20, 30, 40};

__global__ void use_constants(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float uniform = c_table[blockIdx.x % c_params.table_len];     // same for the block
        float varying = c_table[(i * 7) % c_params.table_len];        // per-thread index
        out[i] = (uniform + varying) * c_params.scale + c_params.offset;
        atomicAdd(&g_accum[i % 64], 1);
    }
}

__global__ void read_device_vars(int *out) {
    int t = threadIdx.x;
    out[t] = g_accum[t] + (t < 4 ? g_initialised[t] : 0);
}

int main() {
    float table[256];
    for (int i = 0; i < 256; i++) table[i] = (float)i * 0.25f;
    CHECK(cudaMemcpyToSymbol(c_table, table, sizeof table));
    // overwrite entries 100..109 through an offset copy
    float patch[10];
    for (int i = 0; i < 10; i++) { patch[i] = -1.0f - i; table[100 + i] = patch[i]; }
    CHECK(cudaMemcpyToSymbol(c_table, patch, sizeof patch, 100 * sizeof(float)));
    Params p = {1.5f, -3, 200};
    CHECK(cudaMemcpyToSymbol(c_params, &p, sizeof p));
    size_t size = 0;
    void *addr = nullptr;
    CHECK(cudaGetSymbolSize(&size, g_accum));
    CHECK(cudaGetSymbolAddress(&addr, g_accum));
    EXPECT(size == 64 * sizeof(int) && addr != nullptr, "g_accum size %zu addr %p", size, addr);
    CHECK(cudaMemset(addr, 0, size));

    const int n = 10000;
    float *out, *h = new float[n];
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    use_constants<<<(n + 127) / 128, 128>>>(out, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = (table[(i / 128) % 200] + table[(i * 7) % 200]) * 1.5f + -3;
        EXPECT(h[i] == want, "out[%d] = %g want %g", i, h[i], want);
    }
    int *d, hd[64];
    CHECK(cudaMalloc(&d, sizeof hd));
    read_device_vars<<<1, 64>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hd, d, sizeof hd, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 64; t++) {
        int want = n / 64 + (t < n % 64) + (t < 4 ? 10 * (t + 1) : 0);
        EXPECT_EQ(hd[t], want, "device variables", t);
    }
    int acc[64];
    CHECK(cudaMemcpyFromSymbol(acc, g_accum, sizeof acc));
    for (int t = 0; t < 64; t++) EXPECT_EQ(acc[t], n / 64 + (t < n % 64), "cudaMemcpyFromSymbol", t);
    Params back;
    CHECK(cudaMemcpyFromSymbol(&back, c_params, sizeof back));
    EXPECT(back.scale == 1.5f && back.offset == -3 && back.table_len == 200, "constant struct readback");
    CHECK(cudaFree(out)); CHECK(cudaFree(d));
    delete[] h;
    return finish();
}
