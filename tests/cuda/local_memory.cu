// Per-thread local memory: stack arrays indexed with run-time values (so they
// cannot live in registers), a local struct array, recursion (quicksort of a
// per-thread array and a recursive function with a deep call chain), and a
// large local array; cudaLimitStackSize raised for the recursion.
#include "common.cuh"

struct Pair { int key; float val; };

__device__ void quicksort(int *a, int lo, int hi) {
    if (lo >= hi) return;
    int p = a[(lo + hi) / 2], i = lo, j = hi;
    while (i <= j) {
        while (a[i] < p) i++;
        while (a[j] > p) j--;
        if (i <= j) { int t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    quicksort(a, lo, j);
    quicksort(a, i, hi);
}

__device__ int depth_sum(int d) { return d == 0 ? 0 : d + depth_sum(d - 1); }

__global__ void locals(const int *in, int *sorted, int *hist_out, float *pairs_out, int *depth) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a[32];
    for (int k = 0; k < 32; k++) a[k] = in[t * 32 + k];
    quicksort(a, 0, 31);
    for (int k = 0; k < 32; k++) sorted[t * 32 + k] = a[k];

    int hist[16] = {0};
    for (int k = 0; k < 32; k++) hist[a[k] & 15]++; // data-dependent index
    int h = 0;
    for (int k = 0; k < 16; k++) h = h * 3 + hist[k];
    hist_out[t] = h;

    Pair ps[8];
    for (int k = 0; k < 8; k++) ps[k] = Pair{a[k * 4] % 8, (float)k};
    float s = 0;
    for (int k = 0; k < 8; k++) s += ps[ps[k].key & 7].val * (k + 1);
    pairs_out[t] = s;

    volatile int big[1024]; // 4 KiB of local memory per thread
    for (int k = 0; k < 1024; k++) big[k] = k ^ t;
    int acc = 0;
    for (int k = 0; k < 1024; k += 37) acc += big[(k * 13 + t) % 1024];
    depth[t] = depth_sum(50 + t % 50) + acc;
}

int main() {
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 16 * 1024));
    const int nt = 256;
    int *hin = new int[nt * 32];
    unsigned s = 3;
    for (int i = 0; i < nt * 32; i++) { s = s * 1103515245u + 12345u; hin[i] = (int)(s >> 16) % 1000 - 300; }
    int *in, *sorted, *hist, *depth;
    float *pairs;
    CHECK(cudaMalloc(&in, nt * 32 * sizeof(int)));
    CHECK(cudaMalloc(&sorted, nt * 32 * sizeof(int)));
    CHECK(cudaMalloc(&hist, nt * sizeof(int)));
    CHECK(cudaMalloc(&pairs, nt * sizeof(float)));
    CHECK(cudaMalloc(&depth, nt * sizeof(int)));
    CHECK(cudaMemcpy(in, hin, nt * 32 * sizeof(int), cudaMemcpyHostToDevice));
    locals<<<nt / 64, 64>>>(in, sorted, hist, pairs, depth);
    CHECK_KERNEL();
    int *hs = new int[nt * 32], hh[nt], hd[nt];
    float hp[nt];
    CHECK(cudaMemcpy(hs, sorted, nt * 32 * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hh, hist, sizeof hh, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hp, pairs, sizeof hp, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd, depth, sizeof hd, cudaMemcpyDeviceToHost));
    for (int t = 0; t < nt; t++) {
        int a[32];
        for (int k = 0; k < 32; k++) a[k] = hin[t * 32 + k];
        for (int i = 1; i < 32; i++) // insertion sort on the host
            for (int j = i; j > 0 && a[j - 1] > a[j]; j--) { int x = a[j]; a[j] = a[j - 1]; a[j - 1] = x; }
        for (int k = 0; k < 32; k++) EXPECT_EQ(hs[t * 32 + k], a[k], "quicksort", t * 32 + k);
        int hist_[16] = {0};
        for (int k = 0; k < 32; k++) hist_[a[k] & 15]++;
        int h = 0;
        for (int k = 0; k < 16; k++) h = h * 3 + hist_[k];
        EXPECT_EQ(hh[t], h, "local histogram", t);
        int keys[8];
        for (int k = 0; k < 8; k++) keys[k] = a[k * 4] % 8;
        float sum = 0;
        for (int k = 0; k < 8; k++) sum += (float)(keys[k] & 7) * (k + 1);
        EXPECT(hp[t] == sum, "local structs[%d] = %g want %g", t, hp[t], sum);
        int d = 50 + t % 50, acc = 0;
        for (int k = 0; k < 1024; k += 37) acc += ((k * 13 + t) % 1024) ^ t;
        EXPECT_EQ(hd[t], d * (d + 1) / 2 + acc, "recursion + big local array", t);
    }
    CHECK(cudaFree(in)); CHECK(cudaFree(sorted)); CHECK(cudaFree(hist)); CHECK(cudaFree(pairs));
    CHECK(cudaFree(depth));
    delete[] hin; delete[] hs;
    return finish();
}
