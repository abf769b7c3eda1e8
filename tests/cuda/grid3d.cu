// 3-D grids of 3-D blocks (up to 1024 threads: 16x8x8, 8x8x16, 1024x1x1,
// 1x1x64): each thread writes a linear id derived from its coordinates; a 3-D
// 7-point stencil.
//@ variants: lz4 nocomp
#include "common.cuh"

__global__ void ids(unsigned *out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) {
        unsigned tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
        unsigned bid = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        out[(z * ny + y) * nx + x] = bid * 1024u + tid;
    }
}

__global__ void stencil(const float *in, float *out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x <= 0 || y <= 0 || z <= 0 || x >= n - 1 || y >= n - 1 || z >= n - 1) return;
    int i = (z * n + y) * n + x;
    out[i] = 6.0f * in[i] - in[i - 1] - in[i + 1] - in[i - n] - in[i + n] - in[i - n * n] -
             in[i + n * n];
}

int main() {
    const int nx = 40, ny = 18, nz = 70;
    const int total = nx * ny * nz;
    unsigned *d, *h = new unsigned[total];
    CHECK(cudaMalloc(&d, total * sizeof(unsigned)));
    dim3 blocks[] = {dim3(16, 8, 8), dim3(8, 8, 16), dim3(1024, 1, 1), dim3(1, 1, 64), dim3(3, 5, 7)};
    for (dim3 b : blocks) {
        dim3 g((nx + b.x - 1) / b.x, (ny + b.y - 1) / b.y, (nz + b.z - 1) / b.z);
        CHECK(cudaMemset(d, 0, total * sizeof(unsigned)));
        ids<<<g, b>>>(d, nx, ny, nz);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(h, d, total * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int z = 0; z < nz; z++)
            for (int y = 0; y < ny; y++)
                for (int x = 0; x < nx; x++) {
                    unsigned tid = ((z % b.z) * b.y + (y % b.y)) * b.x + (x % b.x);
                    unsigned bid = ((z / b.z) * g.y + (y / b.y)) * g.x + (x / b.x);
                    unsigned got = h[(z * ny + y) * nx + x];
                    EXPECT(got == bid * 1024u + tid, "block %ux%ux%u at (%d,%d,%d): got %u want %u",
                           b.x, b.y, b.z, x, y, z, got, bid * 1024u + tid);
                }
    }

    const int n = 32, n3 = n * n * n;
    float *hin = new float[n3], *hout = new float[n3], *in, *out;
    for (int i = 0; i < n3; i++) hin[i] = (float)((i * 37) % 101);
    CHECK(cudaMalloc(&in, n3 * sizeof(float)));
    CHECK(cudaMalloc(&out, n3 * sizeof(float)));
    CHECK(cudaMemcpy(in, hin, n3 * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(out, 0, n3 * sizeof(float)));
    stencil<<<dim3(n / 8, n / 8, n / 16), dim3(8, 8, 16)>>>(in, out, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, out, n3 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int z = 0; z < n; z++)
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                int i = (z * n + y) * n + x;
                float want = 0.0f;
                if (x > 0 && y > 0 && z > 0 && x < n - 1 && y < n - 1 && z < n - 1)
                    want = 6.0f * hin[i] - hin[i - 1] - hin[i + 1] - hin[i - n] - hin[i + n] -
                           hin[i - n * n] - hin[i + n * n];
                EXPECT(hout[i] == want, "stencil (%d,%d,%d): %g vs %g", x, y, z, hout[i], want);
            }
    CHECK(cudaFree(d)); CHECK(cudaFree(in)); CHECK(cudaFree(out));
    delete[] h; delete[] hin; delete[] hout;
    return finish();
}
