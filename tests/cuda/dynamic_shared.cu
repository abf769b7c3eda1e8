// Dynamic shared memory: extern __shared__ arrays sized at launch, one buffer
// carved into arrays of different types (alignment), and more than 48 KiB
// after opting in with cudaFuncSetAttribute(MaxDynamicSharedMemorySize).
// Asking for that much without opting in must fail the launch with
// cudaErrorInvalidValue (not sticky: the next launch works).
#include "common.cuh"

__global__ void reverse(const int *in, int *out, int n) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    for (int i = t; i < n; i += blockDim.x) s[i] = in[blockIdx.x * n + i];
    __syncthreads();
    for (int i = t; i < n; i += blockDim.x) out[blockIdx.x * n + i] = s[n - 1 - i];
}

__global__ void mixed(double *out, int nd, int ni) {
    extern __shared__ double dbuf[]; // doubles first, then ints, then chars
    int *ibuf = (int *)(dbuf + nd);
    char *cbuf = (char *)(ibuf + ni);
    int t = threadIdx.x;
    for (int i = t; i < nd; i += blockDim.x) dbuf[i] = i * 0.5;
    for (int i = t; i < ni; i += blockDim.x) ibuf[i] = i * 3;
    for (int i = t; i < 64; i += blockDim.x) cbuf[i] = (char)i;
    __syncthreads();
    if (t == 0) {
        double s = 0;
        for (int i = 0; i < nd; i++) s += dbuf[i];
        for (int i = 0; i < ni; i++) s += ibuf[i];
        for (int i = 0; i < 64; i++) s += cbuf[i];
        out[blockIdx.x] = s;
    }
}

int main() {
    // 1) several sizes of one extern array
    const int sizes[] = {1, 33, 1000, 4096, 12000};
    for (int n : sizes) {
        const int blocks = 3;
        int *h = new int[blocks * n], *r = new int[blocks * n], *din, *dout;
        for (int i = 0; i < blocks * n; i++) h[i] = i * 7 - 3;
        CHECK(cudaMalloc(&din, blocks * n * sizeof(int)));
        CHECK(cudaMalloc(&dout, blocks * n * sizeof(int)));
        CHECK(cudaMemcpy(din, h, blocks * n * sizeof(int), cudaMemcpyHostToDevice));
        reverse<<<blocks, 128, n * sizeof(int)>>>(din, dout, n);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(r, dout, blocks * n * sizeof(int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; b++)
            for (int i = 0; i < n; i++)
                EXPECT(r[b * n + i] == h[b * n + n - 1 - i], "reverse n=%d [%d][%d]", n, b, i);
        CHECK(cudaFree(din)); CHECK(cudaFree(dout));
        delete[] h; delete[] r;
    }

    // 2) mixed types in one buffer
    double *dsum, hsum[2];
    CHECK(cudaMalloc(&dsum, sizeof hsum));
    const int nd = 100, ni = 77;
    mixed<<<2, 64, nd * sizeof(double) + ni * sizeof(int) + 64>>>(dsum, nd, ni);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hsum, dsum, sizeof hsum, cudaMemcpyDeviceToHost));
    double want = 0;
    for (int i = 0; i < nd; i++) want += i * 0.5;
    for (int i = 0; i < ni; i++) want += i * 3;
    for (int i = 0; i < 64; i++) want += i;
    EXPECT(hsum[0] == want && hsum[1] == want, "mixed sums %g %g want %g", hsum[0], hsum[1], want);

    // 3) beyond 48 KiB
    int dev = 0, optin = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const int big = 96 * 1024;
    EXPECT(optin >= big, "opt-in shared memory per block: %d", optin);
    const int n = big / sizeof(int);
    int *h = new int[n], *r = new int[n], *din, *dout;
    for (int i = 0; i < n; i++) h[i] = i ^ 0x5555;
    CHECK(cudaMalloc(&din, big));
    CHECK(cudaMalloc(&dout, big));
    CHECK(cudaMemcpy(din, h, big, cudaMemcpyHostToDevice));
    reverse<<<1, 256, big>>>(din, dout, n); // not opted in yet
    CHECK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, reverse));
    EXPECT(fa.maxDynamicSharedSizeBytes == big, "maxDynamicSharedSizeBytes %d", fa.maxDynamicSharedSizeBytes);
    reverse<<<1, 256, big>>>(din, dout, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(r, dout, big, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(r[i] == h[n - 1 - i], "big reverse [%d]", i);
    CHECK(cudaFree(din)); CHECK(cudaFree(dout)); CHECK(cudaFree(dsum));
    delete[] h; delete[] r;
    return finish();
}
