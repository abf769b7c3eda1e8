// Texture and surface objects: a 2-D float cudaArray read through a texture
// object with point sampling (unnormalised coordinates with clamp and border
// addressing, normalised coordinates with wrap), bilinear filtering (within
// the 8-bit weight precision of the hardware), a uchar4 array read as
// normalised floats, tex1Dfetch from linear memory, and a surface object
// written and read back (surf2Dwrite/surf2Dread), copied with
// cudaMemcpy2DToArray / cudaMemcpy2DFromArray.
#include "common.cuh"

#define W 37
#define H 21

__global__ void sample(cudaTextureObject_t clamp, cudaTextureObject_t border,
                       cudaTextureObject_t wrap, cudaTextureObject_t linear, float *out) {
    int x = threadIdx.x, y = blockIdx.x;
    float *o = out + (y * W + x) * 6;
    o[0] = tex2D<float>(clamp, x + 0.5f, y + 0.5f);                 // exact texel
    o[1] = tex2D<float>(clamp, x - 5.0f, y + 0.5f);                 // clamped in x
    o[2] = tex2D<float>(border, x + 0.5f, y + H + 0.5f);            // outside: border 0
    o[3] = tex2D<float>(wrap, (x + 0.5f) / W + 1.0f, (y + 0.5f) / H - 2.0f); // wraps
    o[4] = tex2D<float>(linear, x + 1.0f, y + 0.5f);                // halfway between x, x+1
    o[5] = tex2D<float>(clamp, x + 0.99f, y + 0.01f);               // still texel (x, y)
}

__global__ void sample_uchar4(cudaTextureObject_t t, float4 *out) {
    int x = threadIdx.x, y = blockIdx.x;
    out[y * W + x] = tex2D<float4>(t, x + 0.5f, y + 0.5f);
}

__global__ void fetch(cudaTextureObject_t t, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(t, i) * 2;
}

__global__ void surface(cudaSurfaceObject_t s, float *readback) {
    int x = threadIdx.x, y = blockIdx.x;
    float v = surf2Dread<float>(s, x * (int)sizeof(float), y);
    __syncthreads();
    surf2Dwrite(v * 10.0f + 1.0f, s, x * (int)sizeof(float), y);
    // reading out of range with the zero boundary mode gives 0
    readback[y * W + x] = surf2Dread<float>(s, (W + x) * (int)sizeof(float), y, cudaBoundaryModeZero);
}

static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureAddressMode mode,
                                    cudaTextureFilterMode filter, bool normalized,
                                    cudaTextureReadMode read = cudaReadModeElementType) {
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = mode;
    td.filterMode = filter;
    td.readMode = read;
    td.normalizedCoords = normalized;
    cudaTextureObject_t t = 0;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

int main() {
    float h[W * H];
    for (int i = 0; i < W * H; i++) h[i] = (float)(i % 101) * 0.5f;
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &fd, W, H, cudaArraySurfaceLoadStore));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, h, W * sizeof(float), W * sizeof(float), H,
                              cudaMemcpyHostToDevice));
    cudaTextureObject_t tclamp = make_tex(arr, cudaAddressModeClamp, cudaFilterModePoint, false);
    cudaTextureObject_t tborder = make_tex(arr, cudaAddressModeBorder, cudaFilterModePoint, false);
    cudaTextureObject_t twrap = make_tex(arr, cudaAddressModeWrap, cudaFilterModePoint, true);
    cudaTextureObject_t tlin = make_tex(arr, cudaAddressModeClamp, cudaFilterModeLinear, false);
    float *out, *hout = new float[W * H * 6];
    CHECK(cudaMalloc(&out, W * H * 6 * sizeof(float)));
    sample<<<H, W>>>(tclamp, tborder, twrap, tlin, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, out, W * H * 6 * sizeof(float), cudaMemcpyDeviceToHost));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const float *o = hout + (y * W + x) * 6;
            float texel = h[y * W + x];
            int cx = x - 5 < 0 ? 0 : x - 5; // texel floor(x - 5), clamped
            float lin_want = x + 1 < W ? 0.5f * (h[y * W + x] + h[y * W + x + 1]) : texel;
            EXPECT(o[0] == texel, "point (%d,%d): %g want %g", x, y, o[0], texel);
            EXPECT(o[1] == h[y * W + cx], "clamp (%d,%d): %g want %g", x, y, o[1], h[y * W + cx]);
            EXPECT(o[2] == 0.0f, "border (%d,%d): %g", x, y, o[2]);
            EXPECT(o[3] == texel, "wrap (%d,%d): %g want %g", x, y, o[3], texel);
            EXPECT(fabsf(o[4] - lin_want) <= 51.0f / 256.0f + 1e-4f, "linear (%d,%d): %g want %g",
                   x, y, o[4], lin_want);
            EXPECT(o[5] == texel, "point inside texel (%d,%d): %g want %g", x, y, o[5], texel);
        }

    // uchar4, read as normalised floats
    uchar4 hc[W * H];
    for (int i = 0; i < W * H; i++) hc[i] = make_uchar4(i % 256, (i * 3) % 256, 255, 0);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<uchar4>();
    cudaArray_t carr;
    CHECK(cudaMallocArray(&carr, &cd, W, H));
    CHECK(cudaMemcpy2DToArray(carr, 0, 0, hc, W * sizeof(uchar4), W * sizeof(uchar4), H,
                              cudaMemcpyHostToDevice));
    cudaTextureObject_t tc = make_tex(carr, cudaAddressModeClamp, cudaFilterModePoint, false,
                                      cudaReadModeNormalizedFloat);
    float4 *o4, *h4 = new float4[W * H];
    CHECK(cudaMalloc(&o4, W * H * sizeof(float4)));
    sample_uchar4<<<H, W>>>(tc, o4);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h4, o4, W * H * sizeof(float4), cudaMemcpyDeviceToHost));
    for (int i = 0; i < W * H; i++) {
        EXPECT(fabsf(h4[i].x - hc[i].x / 255.0f) < 1e-6f && fabsf(h4[i].y - hc[i].y / 255.0f) < 1e-6f &&
                   h4[i].z == 1.0f && h4[i].w == 0.0f,
               "uchar4 normalised [%d]: %g %g %g %g", i, h4[i].x, h4[i].y, h4[i].z, h4[i].w);
    }

    // 1-D texture over linear memory
    const int n = 1000;
    int hl[n], *lin, *lout, hr[n];
    for (int i = 0; i < n; i++) hl[i] = i * i - 500;
    CHECK(cudaMalloc(&lin, sizeof hl));
    CHECK(cudaMalloc(&lout, sizeof hr));
    CHECK(cudaMemcpy(lin, hl, sizeof hl, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeLinear;
    rd.res.linear.devPtr = lin;
    rd.res.linear.desc = cudaCreateChannelDesc<int>();
    rd.res.linear.sizeInBytes = sizeof hl;
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tl;
    CHECK(cudaCreateTextureObject(&tl, &rd, &td, nullptr));
    fetch<<<(n + 127) / 128, 128>>>(tl, lout, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hr, lout, sizeof hr, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_EQ(hr[i], 2 * hl[i], "tex1Dfetch", i);

    // surface read-modify-write on the float array
    cudaResourceDesc sd = {};
    sd.resType = cudaResourceTypeArray;
    sd.res.array.array = arr;
    cudaSurfaceObject_t surf;
    CHECK(cudaCreateSurfaceObject(&surf, &sd));
    float *rb, hrb[W * H], back[W * H];
    CHECK(cudaMalloc(&rb, sizeof hrb));
    surface<<<H, W>>>(surf, rb);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hrb, rb, sizeof hrb, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy2DFromArray(back, W * sizeof(float), arr, 0, 0, W * sizeof(float), H,
                                cudaMemcpyDeviceToHost));
    for (int i = 0; i < W * H; i++) {
        EXPECT(back[i] == h[i] * 10.0f + 1.0f, "surface write [%d]: %g", i, back[i]);
        EXPECT(hrb[i] == 0.0f, "surface zero boundary [%d]: %g", i, hrb[i]);
    }

    CHECK(cudaDestroySurfaceObject(surf));
    CHECK(cudaDestroyTextureObject(tclamp)); CHECK(cudaDestroyTextureObject(tborder));
    CHECK(cudaDestroyTextureObject(twrap)); CHECK(cudaDestroyTextureObject(tlin));
    CHECK(cudaDestroyTextureObject(tc)); CHECK(cudaDestroyTextureObject(tl));
    CHECK(cudaFreeArray(arr)); CHECK(cudaFreeArray(carr));
    CHECK(cudaFree(out)); CHECK(cudaFree(o4)); CHECK(cudaFree(lin)); CHECK(cudaFree(lout));
    CHECK(cudaFree(rb));
    delete[] hout; delete[] h4;
    return finish();
}
