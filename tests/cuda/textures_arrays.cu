// CUDA arrays, texture objects and surface objects beyond the basics,
// checked against a host reference written from the CUDA programming
// guide's texture-fetching formulas: point and linear filtering (9-bit
// fixed-point weights with 8 fractional bits) in every address mode with
// normalised coordinates, 2-D layered and 3-D arrays, tex2Dgather,
// cubemaps, 16-bit integer textures read as elements and as normalised
// floats; surfaces in 1-D (uchar4), 3-D (float2) and layered 2-D, with the
// clamp and zero boundary modes; array copies (3-D, array to array,
// 1-D arrays through the legacy calls) and the API's error codes.
//@ variants: shared cu12
#include "common.cuh"

#define W 16
#define H 8
#define D 4
#define L 3

__global__ void sample2d(cudaTextureObject_t t, const float2 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, c[i].x, c[i].y);
}

__global__ void sample1d(cudaTextureObject_t t, const float *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, c[i]);
}

__global__ void sample_rgba(cudaTextureObject_t t, float4 *out) {
    int x = threadIdx.x, y = blockIdx.x;
    out[y * W + x] = tex2D<float4>(t, x + 0.5f, y + 0.5f);
}

__global__ void sample_layered(cudaTextureObject_t t, const float2 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float>(t, c[i].x, c[i].y, i % L);
}

__global__ void sample3d(cudaTextureObject_t t, const float4 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float>(t, c[i].x, c[i].y, c[i].z);
}

__global__ void gather(cudaTextureObject_t t, const float2 *c, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2Dgather<float4>(t, c[i].x, c[i].y, 0);
}

__global__ void cube(cudaTextureObject_t t, const float4 *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = texCubemap<float>(t, c[i].x, c[i].y, c[i].z);
}

__global__ void short2_reads(cudaTextureObject_t elem, cudaTextureObject_t norm, short2 *e, float4 *f) {
    int x = threadIdx.x, y = blockIdx.x;
    e[y * W + x] = tex2D<short2>(elem, x + 0.5f, y + 0.5f);
    f[y * W + x] = tex2D<float4>(norm, x + 0.5f, y + 0.5f);
}

__global__ void surfaces(cudaSurfaceObject_t s1, cudaSurfaceObject_t s3, cudaSurfaceObject_t sl, float *zero_reads) {
    int x = threadIdx.x;
    // 1-D uchar4: read, modify, write back; a store past the end with the
    // clamp mode lands on the last element.
    uchar4 v = surf1Dread<uchar4>(s1, x * 4);
    surf1Dwrite(make_uchar4(v.x + 1, v.y + 2, v.z + 3, v.w + 4), s1, x * 4);
    // 3-D float2: every element (x, y, z) = (x + 10 y, z).
    for (int z = 0; z < D; z++)
        for (int y = 0; y < H; y++) surf3Dwrite(make_float2(x + 10.0f * y, (float)z), s3, x * 8, y, z);
    // layered 2-D float
    for (int l = 0; l < L; l++)
        for (int y = 0; y < H; y++) surf2DLayeredwrite(100.0f * l + y + x * 0.25f, sl, x * 4, y, l);
    // zero mode: reads out of range give 0, stores out of range do nothing
    surf2DLayeredwrite(-1.0f, sl, (W + x) * 4, 0, 0, cudaBoundaryModeZero);
    zero_reads[x] = surf2DLayeredread<float>(sl, x * 4, H + 3, 1, cudaBoundaryModeZero);
}

__global__ void clamp_store(cudaSurfaceObject_t s1) {
    // Stores past the end clamp to the last element (W - 1).
    if (threadIdx.x == 0) surf1Dwrite(make_uchar4(9, 8, 7, 6), s1, (W + 5) * 4, cudaBoundaryModeClamp);
}

// ---- host reference (CUDA programming guide, "Texture Fetching") ----

static float frac(float x) { return x - floorf(x); }

// Address mode on an integer texel index.
static bool address(int i, int n, cudaTextureAddressMode m, int *out) {
    switch (m) {
    case cudaAddressModeWrap: *out = ((i % n) + n) % n; return true;
    case cudaAddressModeMirror: {
        int p = ((i % (2 * n)) + 2 * n) % (2 * n);
        *out = p >= n ? 2 * n - 1 - p : p;
        return true;
    }
    case cudaAddressModeBorder:
        if (i < 0 || i >= n) return false;
        *out = i;
        return true;
    default: *out = i < 0 ? 0 : (i >= n ? n - 1 : i); return true;
    }
}

static float texel(const float *t, int w, int h, int i, int j, cudaTextureAddressMode m, float border) {
    int x, y;
    if (!address(i, w, m, &x) || !address(j, h, m, &y)) return border;
    return t[y * w + x];
}

// Normalised coordinates (x, y).
static float ref2d(const float *t, int w, int h, float x, float y, cudaTextureAddressMode m, bool linear) {
    float u = x * w, v = y * h;
    if (!linear) return texel(t, w, h, (int)floorf(u), (int)floorf(v), m, 0.0f);
    float xb = u - 0.5f, yb = v - 0.5f;
    int i = (int)floorf(xb), j = (int)floorf(yb);
    // alpha and beta in 9-bit fixed point with 8 fractional bits
    float a = rintf(frac(xb) * 256.0f) / 256.0f, b = rintf(frac(yb) * 256.0f) / 256.0f;
    return (1 - a) * (1 - b) * texel(t, w, h, i, j, m, 0.0f) + a * (1 - b) * texel(t, w, h, i + 1, j, m, 0.0f) +
           (1 - a) * b * texel(t, w, h, i, j + 1, m, 0.0f) + a * b * texel(t, w, h, i + 1, j + 1, m, 0.0f);
}

static cudaTextureObject_t make_tex(cudaArray_t a, cudaTextureAddressMode mode, bool linear, bool normalized,
                                    cudaTextureReadMode read = cudaReadModeElementType) {
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = mode;
    td.filterMode = linear ? cudaFilterModeLinear : cudaFilterModePoint;
    td.readMode = read;
    td.normalizedCoords = normalized;
    cudaTextureObject_t t = 0;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

static cudaSurfaceObject_t make_surf(cudaArray_t a) {
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a;
    cudaSurfaceObject_t s = 0;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    return s;
}

#define N 256

int main() {
    float h2[W * H];
    for (int i = 0; i < W * H; i++) h2[i] = (float)((i * 37) % 101) - 20.0f;
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t a2;
    CHECK(cudaMallocArray(&a2, &fd, W, H));
    CHECK(cudaMemcpy2DToArray(a2, 0, 0, h2, W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));

    // Coordinates spread over [-2, 3) in both directions, away from texel
    // boundaries by at least 1/64 of a texel.
    float2 hc[N];
    for (int i = 0; i < N; i++) {
        float u = -2.0f + 5.0f * (float)((i * 53) % N) / N + 0.3f / (W * 16);
        float v = -2.0f + 5.0f * (float)((i * 29 + 7) % N) / N + 0.7f / (H * 16);
        hc[i] = make_float2(u, v);
    }
    float2 *dc;
    float *dout, hout[N];
    CHECK(cudaMalloc(&dc, sizeof hc));
    CHECK(cudaMalloc(&dout, N * sizeof(float)));
    CHECK(cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice));
    const cudaTextureAddressMode modes[] = {cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror,
                                            cudaAddressModeBorder};
    const char *names[] = {"wrap", "clamp", "mirror", "border"};
    for (int m = 0; m < 4; m++)
        for (int linear = 0; linear < 2; linear++) {
            cudaTextureObject_t t = make_tex(a2, modes[m], linear, true);
            sample2d<<<N / 64, 64>>>(t, dc, dout, N);
            CHECK_KERNEL();
            CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
            for (int i = 0; i < N; i++) {
                float want = ref2d(h2, W, H, hc[i].x, hc[i].y, modes[m], linear);
                EXPECT(fabsf(hout[i] - want) <= 1e-4f, "%s %s (%g, %g): %g want %g", names[m],
                       linear ? "linear" : "point", hc[i].x, hc[i].y, hout[i], want);
            }
            CHECK(cudaDestroyTextureObject(t));
        }

    // A 2-D texture over pitched device memory (cudaMallocPitch), linear
    // filtering with unnormalised coordinates and clamping.
    {
        float *pitched;
        size_t pitch;
        CHECK(cudaMallocPitch(&pitched, &pitch, W * sizeof(float), H));
        CHECK(cudaMemcpy2D(pitched, pitch, h2, W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
        cudaResourceDesc rd = {};
        rd.resType = cudaResourceTypePitch2D;
        rd.res.pitch2D.devPtr = pitched;
        rd.res.pitch2D.desc = fd;
        rd.res.pitch2D.width = W;
        rd.res.pitch2D.height = H;
        rd.res.pitch2D.pitchInBytes = pitch;
        cudaTextureDesc td = {};
        td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
        td.filterMode = cudaFilterModeLinear;
        td.readMode = cudaReadModeElementType;
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
        float2 pc[N];
        for (int i = 0; i < N; i++) pc[i] = make_float2(hc[i].x * W, hc[i].y * H);
        CHECK(cudaMemcpy(dc, pc, sizeof pc, cudaMemcpyHostToDevice));
        sample2d<<<N / 64, 64>>>(t, dc, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            float want = ref2d(h2, W, H, pc[i].x / W, pc[i].y / H, cudaAddressModeClamp, true);
            EXPECT(fabsf(hout[i] - want) <= 1e-4f, "pitch2D linear (%g, %g): %g want %g", pc[i].x, pc[i].y, hout[i], want);
        }
        // Each texture operation reads the memory as it is at launch.
        CHECK(cudaMemset2D(pitched, pitch, 0, W * sizeof(float), H));
        sample2d<<<N / 64, 64>>>(t, dc, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) EXPECT(hout[i] == 0.0f, "pitch2D after memset [%d]: %g", i, hout[i]);
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFree(pitched));
        CHECK(cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice));
    }

    // 1-D array, linear filtering with wrapping normalised coordinates: the
    // taps at both ends wrap around.
    {
        const int n1 = 10;
        float h1[n1];
        for (int i = 0; i < n1; i++) h1[i] = (float)(i * i) - 7.0f;
        cudaArray_t a1;
        CHECK(cudaMallocArray(&a1, &fd, n1));
        CHECK(cudaMemcpy2DToArray(a1, 0, 0, h1, sizeof h1, sizeof h1, 1, cudaMemcpyHostToDevice));
        cudaTextureObject_t t = make_tex(a1, cudaAddressModeWrap, true, true);
        float c1[N], *d1;
        for (int i = 0; i < N; i++) c1[i] = -1.5f + 3.0f * i / N + 0.0013f;
        CHECK(cudaMalloc(&d1, sizeof c1));
        CHECK(cudaMemcpy(d1, c1, sizeof c1, cudaMemcpyHostToDevice));
        sample1d<<<N / 64, 64>>>(t, d1, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            float xb = c1[i] * n1 - 0.5f;
            int k = (int)floorf(xb);
            float a = rintf(frac(xb) * 256.0f) / 256.0f;
            float want = (1 - a) * texel(h1, n1, 1, k, 0, cudaAddressModeWrap, 0) + a * texel(h1, n1, 1, k + 1, 0, cudaAddressModeWrap, 0);
            EXPECT(fabsf(hout[i] - want) <= 1e-4f, "1d linear wrap (%g): %g want %g", c1[i], hout[i], want);
        }
        CHECK(cudaFree(d1));
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(a1));
    }

    // uchar4 with sRGB: colour channels are decoded, alpha is not.
    {
        static uchar4 hq[W * H];
        for (int i = 0; i < W * H; i++) hq[i] = make_uchar4(i * 2, 255 - i, (i * 7) % 256, i);
        cudaChannelFormatDesc qd = cudaCreateChannelDesc<uchar4>();
        cudaArray_t aq;
        CHECK(cudaMallocArray(&aq, &qd, W, H));
        CHECK(cudaMemcpy2DToArray(aq, 0, 0, hq, W * sizeof(uchar4), W * sizeof(uchar4), H, cudaMemcpyHostToDevice));
        cudaResourceDesc rd = {};
        rd.resType = cudaResourceTypeArray;
        rd.res.array.array = aq;
        cudaTextureDesc td = {};
        td.readMode = cudaReadModeNormalizedFloat;
        td.sRGB = 1;
        cudaTextureObject_t t;
        CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
        float4 *dq, hres[W * H];
        CHECK(cudaMalloc(&dq, sizeof hres));
        sample_rgba<<<H, W>>>(t, dq);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hres, dq, sizeof hres, cudaMemcpyDeviceToHost));
        auto lin = [](unsigned char v) {
            float c = v / 255.0f;
            return c <= 0.04045f ? c / 12.92f : powf((c + 0.055f) / 1.055f, 2.4f);
        };
        for (int i = 0; i < W * H; i++) {
            float4 w = make_float4(lin(hq[i].x), lin(hq[i].y), lin(hq[i].z), hq[i].w / 255.0f);
            EXPECT(fabsf(hres[i].x - w.x) <= 1e-6f && fabsf(hres[i].y - w.y) <= 1e-6f && fabsf(hres[i].z - w.z) <= 1e-6f &&
                       hres[i].w == w.w,
                   "sRGB [%d]: %g %g %g %g want %g %g %g %g", i, hres[i].x, hres[i].y, hres[i].z, hres[i].w, w.x, w.y, w.z, w.w);
        }
        CHECK(cudaFree(dq));
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(aq));
    }

    // tex2Dgather: the four texels of the bilinear footprint, in the order
    // (i, j+1), (i+1, j+1), (i+1, j), (i, j), clamped.
    {
        cudaTextureObject_t t = make_tex(a2, cudaAddressModeClamp, false, false);
        float2 gc[N];
        for (int i = 0; i < N; i++) gc[i] = make_float2(-1.0f + (W + 2) * (float)i / N, 0.6f + (H - 1) * (float)((i * 7) % N) / N);
        float4 *go, ho[N];
        CHECK(cudaMalloc(&go, sizeof ho));
        CHECK(cudaMemcpy(dc, gc, sizeof gc, cudaMemcpyHostToDevice));
        gather<<<N / 64, 64>>>(t, dc, go, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(ho, go, sizeof ho, cudaMemcpyDeviceToHost));
        for (int k = 0; k < N; k++) {
            int i = (int)floorf(gc[k].x - 0.5f), j = (int)floorf(gc[k].y - 0.5f);
            float w4[4] = {texel(h2, W, H, i, j + 1, cudaAddressModeClamp, 0), texel(h2, W, H, i + 1, j + 1, cudaAddressModeClamp, 0),
                           texel(h2, W, H, i + 1, j, cudaAddressModeClamp, 0), texel(h2, W, H, i, j, cudaAddressModeClamp, 0)};
            EXPECT(ho[k].x == w4[0] && ho[k].y == w4[1] && ho[k].z == w4[2] && ho[k].w == w4[3],
                   "gather (%g, %g): %g %g %g %g want %g %g %g %g", gc[k].x, gc[k].y, ho[k].x, ho[k].y, ho[k].z, ho[k].w,
                   w4[0], w4[1], w4[2], w4[3]);
        }
        CHECK(cudaFree(go));
        CHECK(cudaDestroyTextureObject(t));
    }

    // 2-D layered: every layer its own image, linear filtering within it.
    {
        static float hl[L * W * H];
        for (int i = 0; i < L * W * H; i++) hl[i] = (float)((i * 13) % 71) * 0.5f;
        cudaArray_t al;
        CHECK(cudaMalloc3DArray(&al, &fd, make_cudaExtent(W, H, L), cudaArrayLayered));
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(hl, W * sizeof(float), W, H);
        p.dstArray = al;
        p.extent = make_cudaExtent(W, H, L);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t t = make_tex(al, cudaAddressModeWrap, true, true);
        CHECK(cudaMemcpy(dc, hc, sizeof hc, cudaMemcpyHostToDevice));
        sample_layered<<<N / 64, 64>>>(t, dc, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            float want = ref2d(hl + (i % L) * W * H, W, H, hc[i].x, hc[i].y, cudaAddressModeWrap, true);
            EXPECT(fabsf(hout[i] - want) <= 1e-4f, "layered %d (%g, %g): %g want %g", i % L, hc[i].x, hc[i].y, hout[i], want);
        }
        // The descriptor says what was created.
        cudaChannelFormatDesc cfd;
        cudaExtent ext;
        unsigned int flags;
        CHECK(cudaArrayGetInfo(&cfd, &ext, &flags, al));
        EXPECT(ext.width == W && ext.height == H && ext.depth == L && flags == cudaArrayLayered && cfd.x == 32 &&
                   cfd.f == cudaChannelFormatKindFloat,
               "layered array info: %zu x %zu x %zu flags %u", ext.width, ext.height, ext.depth, flags);
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(al));
    }

    // 3-D, point sampling with unnormalised coordinates: texel (x, y, z).
    {
        static float h3[W * H * D];
        for (int i = 0; i < W * H * D; i++) h3[i] = (float)i;
        cudaArray_t a3;
        CHECK(cudaMalloc3DArray(&a3, &fd, make_cudaExtent(W, H, D)));
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(h3, W * sizeof(float), W, H);
        p.dstArray = a3;
        p.extent = make_cudaExtent(W, H, D);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t t = make_tex(a3, cudaAddressModeClamp, false, false);
        float4 c3[N], *d3;
        for (int i = 0; i < N; i++) c3[i] = make_float4((i % 19) - 1.5f, (i % 11) - 1.2f, (i % 7) - 1.1f, 0);
        CHECK(cudaMalloc(&d3, sizeof c3));
        CHECK(cudaMemcpy(d3, c3, sizeof c3, cudaMemcpyHostToDevice));
        sample3d<<<N / 64, 64>>>(t, d3, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            int x, y, z;
            address((int)floorf(c3[i].x), W, cudaAddressModeClamp, &x);
            address((int)floorf(c3[i].y), H, cudaAddressModeClamp, &y);
            address((int)floorf(c3[i].z), D, cudaAddressModeClamp, &z);
            float want = h3[(z * H + y) * W + x];
            EXPECT(hout[i] == want, "3d (%g, %g, %g): %g want %g", c3[i].x, c3[i].y, c3[i].z, hout[i], want);
        }
        // Copy the 3-D array back through a pitched device buffer.
        cudaPitchedPtr pp;
        CHECK(cudaMalloc3D(&pp, make_cudaExtent(W * sizeof(float), H, D)));
        cudaMemcpy3DParms q = {};
        q.srcArray = a3;
        q.dstPtr = pp;
        q.extent = make_cudaExtent(W, H, D);
        q.kind = cudaMemcpyDeviceToDevice;
        CHECK(cudaMemcpy3D(&q));
        static float back[W * H * D];
        cudaMemcpy3DParms r = {};
        r.srcPtr = pp;
        r.dstPtr = make_cudaPitchedPtr(back, W * sizeof(float), W, H);
        r.extent = make_cudaExtent(W * sizeof(float), H, D);
        r.kind = cudaMemcpyDeviceToHost;
        CHECK(cudaMemcpy3D(&r));
        for (int i = 0; i < W * H * D; i++) EXPECT(back[i] == h3[i], "3d array round trip [%d]: %g", i, back[i]);
        // A copy that does not fit the array is refused.
        q.extent = make_cudaExtent(W, H, D + 1);
        EXPECT(cudaMemcpy3D(&q) == cudaErrorInvalidValue, "a copy past the array's depth is refused");
        cudaGetLastError();
        CHECK(cudaFree(pp.ptr));
        CHECK(cudaFree(d3));
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(a3));
    }

    // Cubemap: each 4x4 face holds its face number * 100 + texel index.
    {
        const int F = 4;
        static float hf[6 * F * F];
        for (int i = 0; i < 6 * F * F; i++) hf[i] = (float)((i / (F * F)) * 100 + i % (F * F));
        cudaArray_t ac;
        CHECK(cudaMalloc3DArray(&ac, &fd, make_cudaExtent(F, F, 6), cudaArrayCubemap));
        cudaMemcpy3DParms p = {};
        p.srcPtr = make_cudaPitchedPtr(hf, F * sizeof(float), F, F);
        p.dstArray = ac;
        p.extent = make_cudaExtent(F, F, 6);
        p.kind = cudaMemcpyHostToDevice;
        CHECK(cudaMemcpy3D(&p));
        cudaTextureObject_t t = make_tex(ac, cudaAddressModeClamp, false, true);
        float4 cc[N], *dcc;
        for (int i = 0; i < N; i++) {
            float a = 0.9f * ((i % 9) / 4.0f - 1.0f) + 0.013f, b = 0.9f * (((i / 9) % 9) / 4.0f - 1.0f) + 0.017f;
            float s = (i % 2) ? 1.0f : -1.0f;
            switch ((i / 2) % 3) {
            case 0: cc[i] = make_float4(s, a, b, 0); break;
            case 1: cc[i] = make_float4(a, s, b, 0); break;
            default: cc[i] = make_float4(a, b, s, 0); break;
            }
        }
        CHECK(cudaMalloc(&dcc, sizeof cc));
        CHECK(cudaMemcpy(dcc, cc, sizeof cc, cudaMemcpyHostToDevice));
        cube<<<N / 64, 64>>>(t, dcc, dout, N);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            // Face selection and (s, t) from the programming guide's table.
            float x = cc[i].x, y = cc[i].y, z = cc[i].z;
            float ax = fabsf(x), ay = fabsf(y), az = fabsf(z), m, sc, tc;
            int face;
            if (ax >= ay && ax >= az) { face = x > 0 ? 0 : 1; m = ax; sc = x > 0 ? -z : z; tc = -y; }
            else if (ay >= az) { face = y > 0 ? 2 : 3; m = ay; sc = x; tc = y > 0 ? z : -z; }
            else { face = z > 0 ? 4 : 5; m = az; sc = z > 0 ? x : -x; tc = -y; }
            float s = (sc / m + 1) / 2, tt = (tc / m + 1) / 2;
            int u, v;
            address((int)floorf(s * F), F, cudaAddressModeClamp, &u);
            address((int)floorf(tt * F), F, cudaAddressModeClamp, &v);
            float want = hf[face * F * F + v * F + u];
            EXPECT(hout[i] == want, "cube (%g, %g, %g): %g want %g", x, y, z, hout[i], want);
        }
        CHECK(cudaFree(dcc));
        CHECK(cudaDestroyTextureObject(t));
        CHECK(cudaFreeArray(ac));
    }

    // short2: element type (integers) and normalised floats (v / 32767, at least -1).
    {
        static short2 hs[W * H];
        for (int i = 0; i < W * H; i++) hs[i] = make_short2((short)(i * 517 - 32768), (short)(-i * 251));
        cudaChannelFormatDesc sd = cudaCreateChannelDesc<short2>();
        cudaArray_t as;
        CHECK(cudaMallocArray(&as, &sd, W, H));
        CHECK(cudaMemcpy2DToArray(as, 0, 0, hs, W * sizeof(short2), W * sizeof(short2), H, cudaMemcpyHostToDevice));
        cudaTextureObject_t te = make_tex(as, cudaAddressModeClamp, false, false);
        cudaTextureObject_t tn = make_tex(as, cudaAddressModeClamp, false, false, cudaReadModeNormalizedFloat);
        short2 *de, he[W * H];
        float4 *df, hf4[W * H];
        CHECK(cudaMalloc(&de, sizeof he));
        CHECK(cudaMalloc(&df, sizeof hf4));
        short2_reads<<<H, W>>>(te, tn, de, df);
        CHECK_KERNEL();
        CHECK(cudaMemcpy(he, de, sizeof he, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hf4, df, sizeof hf4, cudaMemcpyDeviceToHost));
        for (int i = 0; i < W * H; i++) {
            EXPECT(he[i].x == hs[i].x && he[i].y == hs[i].y, "short2 element [%d]: %d %d", i, he[i].x, he[i].y);
            float wx = fmaxf(hs[i].x / 32767.0f, -1.0f), wy = fmaxf(hs[i].y / 32767.0f, -1.0f);
            EXPECT(hf4[i].x == wx && hf4[i].y == wy && hf4[i].z == 0.0f && hf4[i].w == 1.0f,
                   "short2 normalised [%d]: %g %g %g %g want %g %g 0 1", i, hf4[i].x, hf4[i].y, hf4[i].z, hf4[i].w, wx, wy);
        }
        CHECK(cudaFree(de));
        CHECK(cudaFree(df));
        CHECK(cudaDestroyTextureObject(te));
        CHECK(cudaDestroyTextureObject(tn));
        CHECK(cudaFreeArray(as));
    }

    // Surfaces.
    {
        cudaChannelFormatDesc c4 = cudaCreateChannelDesc<uchar4>();
        cudaChannelFormatDesc f2 = cudaCreateChannelDesc<float2>();
        cudaArray_t s1a, s3a, sla;
        CHECK(cudaMallocArray(&s1a, &c4, W, 0, cudaArraySurfaceLoadStore));
        CHECK(cudaMalloc3DArray(&s3a, &f2, make_cudaExtent(W, H, D), cudaArraySurfaceLoadStore));
        CHECK(cudaMalloc3DArray(&sla, &fd, make_cudaExtent(W, H, L), cudaArraySurfaceLoadStore | cudaArrayLayered));
        uchar4 h1[W], b1[W];
        for (int i = 0; i < W; i++) h1[i] = make_uchar4(i, 2 * i, 3 * i, 4 * i);
        CHECK(cudaMemcpy2DToArray(s1a, 0, 0, h1, sizeof h1, sizeof h1, 1, cudaMemcpyHostToDevice));
        cudaSurfaceObject_t s1 = make_surf(s1a), s3 = make_surf(s3a), sl = make_surf(sla);
        float *dz, hz[W];
        CHECK(cudaMalloc(&dz, sizeof hz));
        surfaces<<<1, W>>>(s1, s3, sl, dz);
        CHECK_KERNEL();
        clamp_store<<<1, 32>>>(s1);
        CHECK_KERNEL();
        CHECK(cudaMemcpy2DFromArray(b1, sizeof b1, s1a, 0, 0, sizeof b1, 1, cudaMemcpyDeviceToHost));
        for (int i = 0; i < W; i++) {
            uchar4 w = i == W - 1 ? make_uchar4(9, 8, 7, 6) : make_uchar4(i + 1, 2 * i + 2, 3 * i + 3, 4 * i + 4);
            EXPECT(b1[i].x == w.x && b1[i].y == w.y && b1[i].z == w.z && b1[i].w == w.w, "surface 1d [%d]: %d %d %d %d", i,
                   b1[i].x, b1[i].y, b1[i].z, b1[i].w);
        }
        static float2 h3[W * H * D];
        cudaMemcpy3DParms p = {};
        p.srcArray = s3a;
        p.dstPtr = make_cudaPitchedPtr(h3, W * sizeof(float2), W, H);
        p.extent = make_cudaExtent(W, H, D);
        p.kind = cudaMemcpyDeviceToHost;
        CHECK(cudaMemcpy3D(&p));
        for (int z = 0; z < D; z++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float2 v = h3[(z * H + y) * W + x];
                    EXPECT(v.x == x + 10.0f * y && v.y == (float)z, "surface 3d (%d,%d,%d): %g %g", x, y, z, v.x, v.y);
                }
        static float hl[W * H * L];
        p = cudaMemcpy3DParms{};
        p.srcArray = sla;
        p.dstPtr = make_cudaPitchedPtr(hl, W * sizeof(float), W, H);
        p.extent = make_cudaExtent(W, H, L);
        p.kind = cudaMemcpyDeviceToHost;
        CHECK(cudaMemcpy3D(&p));
        for (int l = 0; l < L; l++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    float v = hl[(l * H + y) * W + x], w = 100.0f * l + y + x * 0.25f;
                    EXPECT(v == w, "surface layered (%d,%d,%d): %g want %g", x, y, l, v, w);
                }
        CHECK(cudaMemcpy(hz, dz, sizeof hz, cudaMemcpyDeviceToHost));
        for (int i = 0; i < W; i++) EXPECT(hz[i] == 0.0f, "zero-mode read [%d]: %g", i, hz[i]);
        // Array to array, then back to the host.
        cudaArray_t copy;
        CHECK(cudaMallocArray(&copy, &c4, W, 0));
        CHECK(cudaMemcpy2DArrayToArray(copy, 0, 0, s1a, 0, 0, W * sizeof(uchar4), 1));
        uchar4 b2[W];
        CHECK(cudaMemcpy2DFromArray(b2, sizeof b2, copy, 0, 0, sizeof b2, 1, cudaMemcpyDeviceToHost));
        EXPECT(memcmp(b1, b2, sizeof b1) == 0, "array to array copy");
        // A surface needs cudaArraySurfaceLoadStore.
        cudaResourceDesc rd = {};
        rd.resType = cudaResourceTypeArray;
        rd.res.array.array = copy;
        cudaSurfaceObject_t bad;
        EXPECT(cudaCreateSurfaceObject(&bad, &rd) == cudaErrorInvalidValue, "surface on an array without load/store");
        cudaGetLastError();
        // The resource description comes back as given.
        cudaResourceDesc got;
        CHECK(cudaGetSurfaceObjectResourceDesc(&got, s3));
        EXPECT(got.resType == cudaResourceTypeArray && got.res.array.array == s3a, "surface resource description");
        CHECK(cudaFreeArray(copy));
        CHECK(cudaDestroySurfaceObject(s1));
        CHECK(cudaDestroySurfaceObject(s3));
        CHECK(cudaDestroySurfaceObject(sl));
        CHECK(cudaFreeArray(s1a));
        CHECK(cudaFreeArray(s3a));
        CHECK(cudaFreeArray(sla));
        CHECK(cudaFree(dz));
    }

    // Errors: 3 channels, a zero width, a copy outside the array.
    {
        cudaChannelFormatDesc bad = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
        cudaArray_t a;
        cudaError_t e = cudaMallocArray(&a, &bad, W, H);
        EXPECT(e == cudaErrorInvalidChannelDescriptor, "three channels: %s", cudaGetErrorName(e));
        cudaGetLastError();
        EXPECT(cudaMalloc3DArray(&a, &fd, make_cudaExtent(0, H, 0)) == cudaErrorInvalidValue, "zero width is refused");
        cudaGetLastError();
        float row[W + 1] = {};
        EXPECT(cudaMemcpy2DToArray(a2, 0, 0, row, sizeof row, sizeof row, 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
               "a row longer than the array is refused");
        cudaGetLastError();
    }

    CHECK(cudaFreeArray(a2));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dout));
    return finish();
}
