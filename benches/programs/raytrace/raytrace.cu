//@ small: 64
//@ tolerance: 1e-4
// One thread per pixel, 16x16 blocks; the path tracer of raytrace.h.
#include "raytrace.h"

__global__ void render(float *img, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    rt_vec c = rt_pixel(x, y, w, h);
    float *p = img + 3 * ((long)y * w + x);
    p[0] = c.x;
    p[1] = c.y;
    p[2] = c.z;
}

int main(int argc, char **argv) {
    bench_args a = bench_parse(argc, argv);
    int w = a.size ? (int)a.size : RT_DEFAULT, h = w;
    size_t bytes = (size_t)w * h * 3 * sizeof(float);
    float *img = (float *)malloc(bytes), *d_img;
    CK(cudaMalloc(&d_img, bytes));
    dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
    BENCH_TIME("raytrace", a, {
        render<<<grid, block>>>(d_img, w, h);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
    });
    CK(cudaMemcpy(img, d_img, bytes, cudaMemcpyDeviceToHost));
    double sum;
    int ok = rt_compare(img, w, h, &sum);
    return bench_finish("raytrace", sum, ok);
}
