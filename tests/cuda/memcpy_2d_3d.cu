// Pitched and 3-D memory: cudaMallocPitch, cudaMemset2D (a sub-rectangle),
// cudaMemcpy2D host->device->device->host with different pitches, a kernel on
// pitched rows, cudaMalloc3D, cudaMemset3D, cudaMemcpy3D (host <-> device and
// a device sub-box), cudaMemcpy2DAsync, cudaMemset2DAsync.
//@ variants: lz4 nocomp
#include "common.cuh"

__global__ void bump(char *base, size_t pitch, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        int *row = (int *)(base + y * pitch);
        row[x] += y * 1000;
    }
}

int main() {
    // ---- 2-D ----
    const int W = 100, H = 37; // elements (int)
    size_t pitch = 0, pitch2 = 0;
    int *d, *d2;
    CHECK(cudaMallocPitch((void **)&d, &pitch, W * sizeof(int), H));
    CHECK(cudaMallocPitch((void **)&d2, &pitch2, W * sizeof(int), H));
    EXPECT(pitch >= W * sizeof(int) && pitch2 >= W * sizeof(int), "pitch %zu", pitch);
    int *h = new int[W * H], *back = new int[W * H];
    for (int i = 0; i < W * H; i++) h[i] = i;
    CHECK(cudaMemcpy2D(d, pitch, h, W * sizeof(int), W * sizeof(int), H, cudaMemcpyHostToDevice));
    bump<<<dim3((W + 15) / 16, (H + 15) / 16), dim3(16, 16)>>>((char *)d, pitch, W, H);
    CHECK_KERNEL();
    // device -> device between different pitches, then set a sub-rectangle
    CHECK(cudaMemcpy2D(d2, pitch2, d, pitch, W * sizeof(int), H, cudaMemcpyDeviceToDevice));
    // bytes 0x01: rows 5..14, columns 10..29 (ints)
    CHECK(cudaMemset2D((char *)d2 + 5 * pitch2 + 10 * sizeof(int), pitch2, 0x01,
                       20 * sizeof(int), 10));
    CHECK(cudaMemcpy2D(back, W * sizeof(int), d2, pitch2, W * sizeof(int), H,
                       cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int want = y * W + x + y * 1000;
            if (y >= 5 && y < 15 && x >= 10 && x < 30) want = 0x01010101;
            EXPECT(back[y * W + x] == want, "2d (%d,%d): %d want %d", x, y, back[y * W + x], want);
        }
    // a column strip to a narrower host buffer (host pitch 8 ints), async
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    int strip[H * 8];
    CHECK(cudaMemset2DAsync(d2, pitch2, 0, 2 * sizeof(int), H, s));
    CHECK(cudaMemcpy2DAsync(strip, 8 * sizeof(int), d2, pitch2, 8 * sizeof(int), H,
                            cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < 8; x++) {
            int want = x < 2 ? 0 : y * W + x + y * 1000;
            EXPECT(strip[y * 8 + x] == want, "strip (%d,%d): %d want %d", x, y, strip[y * 8 + x], want);
        }

    // ---- 3-D ----
    const int X = 20, Y = 9, Z = 7; // floats
    cudaExtent ext = make_cudaExtent(X * sizeof(float), Y, Z);
    cudaPitchedPtr p3;
    CHECK(cudaMalloc3D(&p3, ext));
    EXPECT(p3.pitch >= X * sizeof(float) && p3.xsize == X * sizeof(float) && p3.ysize == (size_t)Y,
           "cudaMalloc3D pitch %zu xsize %zu ysize %zu", p3.pitch, p3.xsize, p3.ysize);
    CHECK(cudaMemset3D(p3, 0, ext));
    float *h3 = new float[X * Y * Z], *b3 = new float[X * Y * Z];
    for (int i = 0; i < X * Y * Z; i++) h3[i] = (float)i * 0.5f;
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(h3, X * sizeof(float), X, Y);
    up.dstPtr = p3;
    up.extent = ext;
    up.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&up));
    // zero a sub-box: x 2..5, y 1..3, z 2..4 (bytes 0)
    cudaPitchedPtr sub = p3;
    sub.ptr = (char *)p3.ptr + 2 * p3.pitch * Y + 1 * p3.pitch + 2 * sizeof(float);
    CHECK(cudaMemset3D(sub, 0, make_cudaExtent(4 * sizeof(float), 3, 3)));
    // copy device box (x 0..X, y 0..Y, z 1..Z) to a second 3-D allocation at z 0
    cudaPitchedPtr q3;
    CHECK(cudaMalloc3D(&q3, ext));
    CHECK(cudaMemset3D(q3, 0xff, ext));
    cudaMemcpy3DParms dd = {};
    dd.srcPtr = p3;
    dd.srcPos = make_cudaPos(0, 0, 1);
    dd.dstPtr = q3;
    dd.dstPos = make_cudaPos(0, 0, 0);
    dd.extent = make_cudaExtent(X * sizeof(float), Y, Z - 1);
    dd.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaMemcpy3D(&dd));
    cudaMemcpy3DParms down = {};
    down.srcPtr = q3;
    down.dstPtr = make_cudaPitchedPtr(b3, X * sizeof(float), X, Y);
    down.extent = ext;
    down.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&down));
    for (int z = 0; z < Z; z++)
        for (int y = 0; y < Y; y++)
            for (int x = 0; x < X; x++) {
                int sz = z + 1;
                float want;
                unsigned bits;
                if (sz >= Z) { // never written: 0xffffffff (a NaN)
                    memcpy(&bits, &b3[(z * Y + y) * X + x], 4);
                    EXPECT(bits == 0xffffffffu, "3d tail (%d,%d,%d): %#x", x, y, z, bits);
                    continue;
                }
                want = h3[(sz * Y + y) * X + x];
                if (x >= 2 && x < 6 && y >= 1 && y < 4 && sz >= 2 && sz < 5) want = 0.0f;
                EXPECT(b3[(z * Y + y) * X + x] == want, "3d (%d,%d,%d): %g want %g", x, y, z,
                       b3[(z * Y + y) * X + x], want);
            }
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d)); CHECK(cudaFree(d2)); CHECK(cudaFree(p3.ptr)); CHECK(cudaFree(q3.ptr));
    delete[] h; delete[] back; delete[] h3; delete[] b3;
    return finish();
}
