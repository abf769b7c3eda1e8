// Mipmapped textures: a mipmapped array filled level by level, sampled with
// tex2DLod (explicit level of detail) and tex2DGrad (the level from the
// coordinates' derivatives), with point and linear filtering between
// levels, the level clamps of the texture descriptor, the runtime's level
// queries, and cubemap and layered mipmaps (texCubemapLod,
// tex2DLayeredLod). The host reference follows the CUDA
// programming guide's mipmapping rules; the cases are chosen so that no
// result depends on rounding at a boundary: levels of detail away from
// the point filter's halfway points, fractions of 1/4 between levels (any
// fixed-point weight of 8 or more bits is exact), derivative lengths that
// are whole numbers of texels.
//@ variants: shared cu12
#include "common.cuh"

#define W 16
#define H 8
#define LEVELS 4
#define N 64

// Level l of W x H: texel (x, y) holds 100 * (l + 1) + y * (W >> l) + x.
static float texel(int level, int x, int y) {
    int w = W >> level;
    return 100.0f * (level + 1) + y * w + x;
}

__global__ void at_lod(cudaTextureObject_t t, const float4 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLod<float>(t, c[i].x, c[i].y, c[i].z);
}

__global__ void cube_lod(cudaTextureObject_t t, const float4 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = texCubemapLod<float>(t, c[i].x, c[i].y, c[i].z, c[i].w);
}

__global__ void layered_lod(cudaTextureObject_t t, const float4 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayeredLod<float>(t, c[i].x, c[i].y, (int)c[i].z, c[i].w);
}

// A mipmapped array of `slices` layers or faces of S x S texels and
// `levels` levels whose texels hold 100 * (level + 1) + 10 * slice.
static cudaMipmappedArray_t sliced_mipmaps(int s, int slices, int levels, unsigned flags) {
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaMipmappedArray_t m;
    CHECK(cudaMallocMipmappedArray(&m, &fd, make_cudaExtent(s, s, slices), levels, flags));
    for (int l = 0; l < levels; l++) {
        cudaArray_t a;
        CHECK(cudaGetMipmappedArrayLevel(&a, m, l));
        int w = s >> l;
        float *host = (float *)malloc(sizeof(float) * w * w * slices);
        for (int k = 0; k < slices; k++)
            for (int t = 0; t < w * w; t++) host[k * w * w + t] = 100.0f * (l + 1) + 10.0f * k;
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(host, w * sizeof(float), w, w);
        p.dstArray = a;
        p.extent = make_cudaExtent(w, w, slices);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        free(host);
    }
    return m;
}

static cudaTextureObject_t point_mip_texture(cudaMipmappedArray_t m, float max_level) {
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeMipmappedArray;
    rd.res.mipmap.mipmap = m;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 1;
    td.mipmapFilterMode = cudaFilterModePoint;
    td.maxMipmapLevelClamp = max_level;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, NULL));
    return t;
}

__global__ void at_grad(cudaTextureObject_t t, const float2 *c, const float4 *g, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DGrad<float>(t, c[i].x, c[i].y, make_float2(g[i].x, g[i].y), make_float2(g[i].z, g[i].w));
}

// The texel of level `level` under normalised coordinates (u, v), clamped.
static float point(int level, float u, float v) {
    int w = W >> level, h = H >> level;
    int x = (int)floorf(u * w), y = (int)floorf(v * h);
    x = x < 0 ? 0 : (x >= w ? w - 1 : x);
    y = y < 0 ? 0 : (y >= h ? h - 1 : y);
    return texel(level, x, y);
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The nearest level of a level of detail within [lo, hi].
static int nearest(float lod, float lo, float hi) {
    float l = clampf(clampf(lod, lo, hi), 0.0f, LEVELS - 1);
    int n = (int)ceilf(l + 0.5f) - 1;
    return n < 0 ? 0 : n;
}

static void expect(const char *what, int i, float got, float want) {
    EXPECT(got == want, "%s[%d]: got %.6f, expected %.6f", what, i, got, want);
}

int main() {
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaMipmappedArray_t mip;
    CHECK(cudaMallocMipmappedArray(&mip, &fd, make_cudaExtent(W, H, 0), LEVELS));
    for (int l = 0; l < LEVELS; l++) {
        cudaArray_t a;
        CHECK(cudaGetMipmappedArrayLevel(&a, mip, l));
        cudaExtent e;
        CHECK(cudaArrayGetInfo(NULL, &e, NULL, a));
        int w = W >> l, h = H >> l;
        if ((int)e.width != w || (int)e.height != h) {
            EXPECT(false, "level %d is %zu x %zu, expected %d x %d", l, e.width, e.height, w, h);
        }
        float host[W * H];
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) host[y * w + x] = texel(l, x, y);
        CHECK(cudaMemcpy2DToArray(a, 0, 0, host, w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice));
    }
    cudaArray_t past;
    CHECK_ERR(cudaGetMipmappedArrayLevel(&past, mip, LEVELS), cudaErrorInvalidValue);
    (void)cudaGetLastError(); // the runtime keeps that error as the last one

    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeMipmappedArray;
    rd.res.mipmap.mipmap = mip;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 1;
    td.mipmapFilterMode = cudaFilterModePoint;
    td.maxMipmapLevelClamp = LEVELS - 1;
    cudaTextureObject_t nearest_tex, linear_tex, clamped_tex;
    CHECK(cudaCreateTextureObject(&nearest_tex, &rd, &td, NULL));
    td.mipmapFilterMode = cudaFilterModeLinear;
    CHECK(cudaCreateTextureObject(&linear_tex, &rd, &td, NULL));
    td.mipmapFilterMode = cudaFilterModePoint;
    td.minMipmapLevelClamp = 1;
    td.maxMipmapLevelClamp = 2;
    CHECK(cudaCreateTextureObject(&clamped_tex, &rd, &td, NULL));

    // Coordinates on a grid of level-0 texel centres, levels of detail
    // away from halfway points (nearest) and at quarters (linear).
    float4 hc[N];
    float2 hg_c[N];
    float4 hg[N];
    const float lods[8] = {-1.0f, 0.0f, 0.3f, 1.0f, 1.7f, 2.2f, 3.0f, 6.0f};
    const float quarters[8] = {0.0f, 0.25f, 0.5f, 0.75f, 1.25f, 2.0f, 2.5f, 3.0f};
    for (int i = 0; i < N; i++) {
        float u = ((i * 5) % W + 0.5f) / W, v = ((i * 3) % H + 0.5f) / H;
        hc[i] = make_float4(u, v, lods[i % 8], 0.0f);
        hg_c[i] = make_float2(u, v);
        // Derivatives of 1, 2, 3, 4 or 8 level-0 texels, along x or y,
        // split between the two axes of one derivative as (3, 4) -> 5.
        float len[5] = {1.0f, 2.0f, 3.0f, 4.0f, 8.0f};
        float k = len[i % 5];
        switch ((i / 5) % 3) {
        case 0: hg[i] = make_float4(k / W, 0.0f, 0.0f, 0.5f / H); break;
        case 1: hg[i] = make_float4(0.0f, 0.0f, 0.0f, k / H); break;
        default: hg[i] = make_float4(0.6f * k / W, 0.8f * k / H, 0.0f, 0.0f); break;
        }
    }
    float4 *dc;
    float2 *dgc;
    float4 *dg;
    float *dout;
    CHECK(cudaMalloc(&dc, sizeof hc));
    CHECK(cudaMalloc(&dgc, sizeof hg_c));
    CHECK(cudaMalloc(&dg, sizeof hg));
    CHECK(cudaMalloc(&dout, N * sizeof(float)));
    CHECK(cudaMemcpy(dgc, hg_c, sizeof hg_c, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dg, hg, sizeof hg, cudaMemcpyHostToDevice));
    float out[N];

    // tex2DLod, nearest level.
    CHECK(cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice));
    at_lod<<<2, 32>>>(nearest_tex, dc, dout, N);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) expect("lod nearest", i, out[i], point(nearest(hc[i].z, 0, LEVELS - 1), hc[i].x, hc[i].y));

    // Level clamps [1, 2].
    at_lod<<<2, 32>>>(clamped_tex, dc, dout, N);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) expect("lod clamped", i, out[i], point(nearest(hc[i].z, 1, 2), hc[i].x, hc[i].y));

    // tex2DLod, linear between levels at quarter fractions.
    for (int i = 0; i < N; i++) hc[i].z = quarters[i % 8];
    CHECK(cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice));
    at_lod<<<2, 32>>>(linear_tex, dc, dout, N);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        float l = clampf(hc[i].z, 0, LEVELS - 1);
        int lo = (int)floorf(l);
        float f = l - lo;
        float a = point(lo, hc[i].x, hc[i].y);
        float want = f == 0.0f ? a : (1.0f - f) * a + f * point(lo + 1, hc[i].x, hc[i].y);
        expect("lod linear", i, out[i], want);
    }

    // tex2DGrad: the level of detail is log2 of the longer derivative in
    // level-0 texels (1 -> 0, 2 -> 1, 3 -> 1.58, 4 -> 2, 8 -> 3).
    at_grad<<<2, 32>>>(nearest_tex, dgc, dg, dout, N);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        float dx = sqrtf(hg[i].x * W * hg[i].x * W + hg[i].y * H * hg[i].y * H);
        float dy = sqrtf(hg[i].z * W * hg[i].z * W + hg[i].w * H * hg[i].w * H);
        float rho = dx > dy ? dx : dy;
        expect("grad", i, out[i], point(nearest(log2f(rho), 0, LEVELS - 1), hg_c[i].x, hg_c[i].y));
    }

    // Cubemaps: the face of the direction's major axis (+x, -x, +y, -y,
    // +z, -z), at levels 0 to 2 of 8 x 8 faces.
    {
        cudaMipmappedArray_t cm = sliced_mipmaps(8, 6, 3, cudaArrayCubemap);
        cudaTextureObject_t ct = point_mip_texture(cm, 2);
        const float dirs[6][3] = {{1, 0.2f, -0.3f}, {-1, 0.1f, 0.4f}, {0.3f, 1, -0.2f}, {-0.1f, -1, 0.2f}, {0.2f, -0.4f, 1}, {0.1f, 0.3f, -1}};
        float4 q[18];
        for (int i = 0; i < 18; i++) q[i] = make_float4(dirs[i % 6][0], dirs[i % 6][1], dirs[i % 6][2], (float)(i / 6));
        CHECK(cudaMemcpy(dc, q, sizeof q, cudaMemcpyHostToDevice));
        cube_lod<<<1, 32>>>(ct, dc, dout, 18);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(out, dout, 18 * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < 18; i++) expect("cube lod", i, out[i], 100.0f * (i / 6 + 1) + 10.0f * (i % 6));
        CHECK(cudaDestroyTextureObject(ct));
        CHECK(cudaFreeMipmappedArray(cm));
    }
    // Layered: layer k of each level, levels 0 to 3 of 16 x 16 layers.
    {
        cudaMipmappedArray_t lm = sliced_mipmaps(16, 3, 4, cudaArrayLayered);
        cudaTextureObject_t lt = point_mip_texture(lm, 3);
        float4 q[12];
        for (int i = 0; i < 12; i++) q[i] = make_float4(0.3f, 0.6f, (float)(i % 3), (float)(i / 3));
        CHECK(cudaMemcpy(dc, q, sizeof q, cudaMemcpyHostToDevice));
        layered_lod<<<1, 32>>>(lt, dc, dout, 12);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(out, dout, 12 * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < 12; i++) expect("layered lod", i, out[i], 100.0f * (i / 3 + 1) + 10.0f * (i % 3));
        CHECK(cudaDestroyTextureObject(lt));
        CHECK(cudaFreeMipmappedArray(lm));
    }

    CHECK(cudaDestroyTextureObject(nearest_tex));
    CHECK(cudaDestroyTextureObject(linear_tex));
    CHECK(cudaDestroyTextureObject(clamped_tex));
    CHECK(cudaFreeMipmappedArray(mip));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dgc));
    CHECK(cudaFree(dg));
    CHECK(cudaFree(dout));
    return finish();
}
