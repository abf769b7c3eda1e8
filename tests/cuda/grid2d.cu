// 2-D grids of 2-D blocks, including 32x32 = 1024-thread blocks: every thread
// writes its own coordinates; a matrix transpose through a 2-D launch.
//@ variants: shared cu12
#include "common.cuh"

__global__ void coords(int *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        int t = threadIdx.y * blockDim.x + threadIdx.x;
        out[y * w + x] = (x << 16) | (y << 4) | ((t == blockDim.x * blockDim.y - 1) ? 1 : 0);
    }
}

__global__ void transpose(const float *in, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[x * h + y] = in[y * w + x];
}

__global__ void dims(int *out) {
    if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0) {
        out[0] = gridDim.x; out[1] = gridDim.y; out[2] = gridDim.z;
        out[3] = blockDim.x; out[4] = blockDim.y; out[5] = blockDim.z;
    }
}

int main() {
    const int w = 333, h = 129; // not multiples of the block size
    int *d;
    CHECK(cudaMalloc(&d, w * h * sizeof(int)));
    int *hd = new int[w * h];
    dim3 blocks[] = {dim3(32, 32), dim3(16, 8), dim3(1, 64), dim3(64, 1), dim3(7, 5)};
    for (dim3 b : blocks) {
        CHECK(cudaMemset(d, 0xff, w * h * sizeof(int)));
        dim3 g((w + b.x - 1) / b.x, (h + b.y - 1) / b.y);
        coords<<<g, b>>>(d, w, h);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hd, d, w * h * sizeof(int), cudaMemcpyDeviceToHost));
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                bool last = (x % b.x == b.x - 1) && (y % b.y == b.y - 1);
                int want = (x << 16) | (y << 4) | (last ? 1 : 0);
                EXPECT(hd[y * w + x] == want, "block %ux%u (%d,%d): got %#x want %#x", b.x, b.y,
                       x, y, hd[y * w + x], want);
            }
    }

    float *in, *out, *hin = new float[w * h], *hout = new float[w * h];
    for (int i = 0; i < w * h; i++) hin[i] = (float)i * 0.5f;
    CHECK(cudaMalloc(&in, w * h * sizeof(float)));
    CHECK(cudaMalloc(&out, w * h * sizeof(float)));
    CHECK(cudaMemcpy(in, hin, w * h * sizeof(float), cudaMemcpyHostToDevice));
    transpose<<<dim3((w + 31) / 32, (h + 31) / 32), dim3(32, 32)>>>(in, out, w, h);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, out, w * h * sizeof(float), cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            EXPECT(hout[x * h + y] == hin[y * w + x], "transpose (%d,%d)", x, y);

    int hdims[6];
    dims<<<dim3(5, 3), dim3(32, 32)>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hdims, d, sizeof hdims, cudaMemcpyDeviceToHost));
    int want[6] = {5, 3, 1, 32, 32, 1};
    for (int i = 0; i < 6; i++) EXPECT_EQ(hdims[i], want[i], "dims", i);

    CHECK(cudaFree(d)); CHECK(cudaFree(in)); CHECK(cudaFree(out));
    delete[] hd; delete[] hin; delete[] hout;
    return finish();
}
