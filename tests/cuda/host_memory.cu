// Page-locked host memory: cudaMallocHost, cudaHostAlloc (mapped, portable,
// write-combined) with cudaHostGetDevicePointer and cudaHostGetFlags, kernels
// reading and writing mapped host memory directly (zero copy),
// cudaHostRegister / cudaHostUnregister of malloc'd memory, cudaMemcpy with
// cudaMemcpyDefault between every kind of pointer.
//@ variants: shared cu12
#include "common.cuh"

#define N 10000

__global__ void twice(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2 * in[i] + 1;
}

int main() {
    CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
    int *pinned, *mapped, *wc, *dmapped, *dwc;
    CHECK(cudaMallocHost(&pinned, N * sizeof(int)));
    CHECK(cudaHostAlloc(&mapped, N * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK(cudaHostAlloc(&wc, N * sizeof(int), cudaHostAllocMapped | cudaHostAllocWriteCombined));
    CHECK(cudaHostGetDevicePointer((void **)&dmapped, mapped, 0));
    CHECK(cudaHostGetDevicePointer((void **)&dwc, wc, 0));
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, mapped));
    EXPECT((flags & cudaHostAllocMapped) && (flags & cudaHostAllocPortable), "mapped flags %#x", flags);
    CHECK(cudaHostGetFlags(&flags, wc));
    EXPECT((flags & cudaHostAllocMapped) && (flags & cudaHostAllocWriteCombined), "wc flags %#x", flags);

    for (int i = 0; i < N; i++) { pinned[i] = i; mapped[i] = 3 * i; wc[i] = -1; }
    // zero copy: read mapped host memory, write write-combined mapped memory
    twice<<<(N + 255) / 256, 256>>>(dmapped, dwc, N);
    CHECK_KERNEL();
    for (int i = 0; i < N; i++) EXPECT_EQ(wc[i], 6 * i + 1, "zero-copy", i);

    // registered malloc'd memory
    int *reg = (int *)malloc(N * sizeof(int)), *dreg;
    for (int i = 0; i < N; i++) reg[i] = 7 * i;
    CHECK(cudaHostRegister(reg, N * sizeof(int), cudaHostRegisterMapped));
    CHECK(cudaHostGetDevicePointer((void **)&dreg, reg, 0));
    twice<<<(N + 255) / 256, 256>>>(dreg, dreg, N); // in place
    CHECK_KERNEL();
    for (int i = 0; i < N; i++) EXPECT_EQ(reg[i], 14 * i + 1, "registered", i);
    CHECK(cudaHostUnregister(reg));

    // cudaMemcpyDefault: the runtime infers the direction from the pointers
    int *d1, *d2, *plain = (int *)calloc(N, sizeof(int));
    CHECK(cudaMalloc(&d1, N * sizeof(int)));
    CHECK(cudaMalloc(&d2, N * sizeof(int)));
    CHECK(cudaMemcpy(d1, pinned, N * sizeof(int), cudaMemcpyDefault));   // pinned -> dev
    CHECK(cudaMemcpy(d2, d1, N * sizeof(int), cudaMemcpyDefault));       // dev -> dev
    twice<<<(N + 255) / 256, 256>>>(d2, d1, N);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(mapped, d1, N * sizeof(int), cudaMemcpyDefault));   // dev -> mapped
    CHECK(cudaMemcpy(plain, mapped, N * sizeof(int), cudaMemcpyDefault)); // host -> host
    CHECK(cudaMemcpy(d2, plain, N * sizeof(int), cudaMemcpyHostToDevice)); // pageable -> dev
    CHECK(cudaMemcpy(pinned, d2, N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT_EQ(pinned[i], 2 * i + 1, "cudaMemcpyDefault chain", i);

    // async copy from pageable memory on a stream
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < N; i++) plain[i] = N - i;
    CHECK(cudaMemcpyAsync(d1, plain, N * sizeof(int), cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(pinned, d1, N * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) EXPECT_EQ(pinned[i], N - i, "pageable async", i);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d1)); CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(pinned)); CHECK(cudaFreeHost(mapped)); CHECK(cudaFreeHost(wc));
    free(reg); free(plain);
    return finish();
}
