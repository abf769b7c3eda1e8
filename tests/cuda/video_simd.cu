// Video instructions and other PTX nvcc emits only from inline assembly,
// checked against host models written from the PTX ISA's pseudocode:
// SIMD video (vadd4.sat, vsub2, vabsdiff4.add, vavrg2 with selectors,
// vmin4/vmax2 with a lane mask, vset4.add), scalar video (vadd with byte
// selectors and .sat, vsub.max, vabsdiff with a merged destination, vshl
// .clamp, vset), vmad, cvt.pack.sat, vector-typed registers, a 64-bit
// borrow chain (sub.cc/subc.cc/subc) and a carry read after a subtraction,
// and `extern __shared__` arrays of two kernels and a device function that
// all alias the dynamic shared window.
#include "common.cuh"

struct Out {
    unsigned simd[8];
    unsigned scalar[6];
    unsigned vmad, pack, vec_sum, vec_swap;
    unsigned long long diff;
    unsigned carry_after_sub;
};

__global__ void video(const unsigned *in, Out *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = in[3 * t], y = in[3 * t + 1], z = in[3 * t + 2];
    Out o;
    asm("vadd4.u32.u32.u32.sat %0, %1, %2, %3;" : "=r"(o.simd[0]) : "r"(x), "r"(y), "r"(z));
    asm("vsub2.s32.s32.s32 %0, %1, %2, %3;" : "=r"(o.simd[1]) : "r"(x), "r"(y), "r"(z));
    asm("vabsdiff4.u32.u32.u32.add %0, %1, %2, %3;" : "=r"(o.simd[2]) : "r"(x), "r"(y), "r"(z));
    asm("vavrg2.s32.s32.s32 %0, %1.h01, %2.h32, %3;" : "=r"(o.simd[3]) : "r"(x), "r"(y), "r"(z));
    asm("vmin4.s32.s32.s32 %0.b20, %1, %2, %3;" : "=r"(o.simd[4]) : "r"(x), "r"(y), "r"(z));
    asm("vmax2.u32.u32.s32.sat %0.h1, %1, %2, %3;" : "=r"(o.simd[5]) : "r"(x), "r"(y), "r"(z));
    asm("vset4.s32.u32.lt.add %0, %1, %2, %3;" : "=r"(o.simd[6]) : "r"(x), "r"(y), "r"(z));
    asm("vset2.u32.u32.ne %0, %1.h10, %2.h10, %3;" : "=r"(o.simd[7]) : "r"(x), "r"(y), "r"(z));
    asm("vadd.u32.u32.s32.sat %0, %1.b1, %2.b3;" : "=r"(o.scalar[0]) : "r"(x), "r"(y));
    asm("vsub.s32.s32.s32.max %0, %1, %2, %3;" : "=r"(o.scalar[1]) : "r"(x), "r"(y), "r"(z));
    asm("vabsdiff.u32.s32.s32.sat %0.h1, %1.h0, %2.h1, %3;" : "=r"(o.scalar[2]) : "r"(x), "r"(y), "r"(z));
    asm("vshl.u32.u32.u32.clamp %0, %1, %2.b0;" : "=r"(o.scalar[3]) : "r"(x), "r"(y));
    asm("vset.u32.s32.ge.add %0, %1, %2, %3;" : "=r"(o.scalar[4]) : "r"(x), "r"(y), "r"(z));
    asm("vmax.s32.s32.u32.sat %0, %1.h1, %2.b2;" : "=r"(o.scalar[5]) : "r"(x), "r"(y));
    asm("vmad.s32.u32.u32.sat.shr15 %0, %1.h0, %2.h1, -%3;" : "=r"(o.vmad) : "r"(x), "r"(y), "r"(z));
    asm("cvt.pack.sat.s8.s32.b32 %0, %1, %2, %3;" : "=r"(o.pack) : "r"((int)x >> 24), "r"((int)y >> 20), "r"(z));
    asm("{\n\t"
        ".reg .v4 .u32 v;\n\t"
        ".reg .v2 .u32 w;\n\t"
        "ld.global.v2.u32 w, [%2];\n\t"
        "mov.v4.u32 v, {w.y, w.x, %3, %3};\n\t"
        "add.u32 %0, v.x, v.z;\n\t"
        "add.u32 %0, %0, v.w;\n\t"
        "mov.b32 %1, v.x;\n\t"
        "}"
        : "=r"(o.vec_sum), "=r"(o.vec_swap)
        : "l"(in + 2 * t), "r"(z)); // 8-byte aligned, as .v2.u32 needs
    unsigned long long a = ((unsigned long long)y << 32) | x, b = ((unsigned long long)x << 32) | z, d;
    unsigned lo, hi, cf;
    asm("sub.cc.u32 %0, %3, %4;\n\t"
        "subc.cc.u32 %1, %5, %6;\n\t"
        "subc.u32 %2, 0, 0;"
        : "=r"(lo), "=r"(hi), "=r"(cf)
        : "r"((unsigned)a), "r"((unsigned)b), "r"((unsigned)(a >> 32)), "r"((unsigned)(b >> 32)));
    d = ((unsigned long long)hi << 32) | lo;
    o.diff = d + cf; // cf: 0 without a borrow, 0xffffffff (-1) with one
    asm("sub.cc.u32 %0, %1, %2;\n\t"
        "addc.u32 %0, 0, 0;"
        : "=r"(o.carry_after_sub)
        : "r"(x), "r"(y));
    out[t] = o;
}

// Two kernels and a device function, each with its own extern array.
extern __shared__ unsigned dyn_a[];
__device__ unsigned peek(int i) {
    extern __shared__ unsigned char dyn_c[];
    return ((unsigned *)dyn_c)[i];
}
__global__ void write_then_peek(unsigned *out) {
    extern __shared__ unsigned short dyn_b[];
    ((unsigned *)dyn_b)[threadIdx.x] = threadIdx.x * 3 + 1;
    __syncthreads();
    out[threadIdx.x] = peek(threadIdx.x ^ 1) + dyn_a[threadIdx.x];
}

static int sx(unsigned v, int bits) { return (int)(v << (32 - bits)) >> (32 - bits); }
static long long el(unsigned long long pool, int k, int w, bool s) {
    unsigned v = (unsigned)((pool >> (k * w)) & ((1ull << w) - 1));
    return s ? (long long)sx(v, w) : (long long)v;
}
static long long clampll(long long v, long long lo, long long hi) { return v < lo ? lo : v > hi ? hi : v; }

// The SIMD pseudocode. op: 0 add, 1 sub, 2 avrg, 3 absdiff, 4 min, 5 max,
// 6 set (cmp: 0 lt, 1 ne). asel/bsel: lane i's element, lane 0 first.
static unsigned simd(int lanes, int op, int cmp, bool ds, bool as, bool bs, bool sat, bool add, unsigned mask,
                     const int *asel, const int *bsel, unsigned a, unsigned b, unsigned c) {
    int w = 32 / lanes;
    unsigned long long pool = ((unsigned long long)b << 32) | a, field = (1ull << w) - 1;
    unsigned d = add ? c : 0;
    for (int i = 0; i < lanes; i++) {
        long long va = el(pool, asel[i], w, as), vb = el(pool, bsel[i], w, bs), t;
        switch (op) {
        case 0: t = va + vb; break;
        case 1: t = va - vb; break;
        case 2: t = (va + vb >= 0) ? (va + vb + 1) >> 1 : (va + vb) >> 1; break;
        case 3: t = va > vb ? va - vb : vb - va; break;
        case 4: t = va < vb ? va : vb; break;
        case 5: t = va > vb ? va : vb; break;
        default: t = cmp == 0 ? va < vb : va != vb; break;
        }
        if (sat) t = ds ? clampll(t, -(1ll << (w - 1)), (1ll << (w - 1)) - 1) : clampll(t, 0, (1ll << w) - 1);
        bool on = (mask >> i) & 1;
        if (add) {
            if (on) d += (unsigned)t;
        } else {
            unsigned lane = on ? (unsigned)(t & field) : (unsigned)((c >> (i * w)) & field);
            d |= lane << (i * w);
        }
    }
    return d;
}

// Scalar part select: sel < 0 the word, 0..3 a byte, 4..5 a halfword.
static long long part(unsigned x, int sel, bool s) {
    if (sel < 0) return s ? (long long)(int)x : (long long)x;
    int w = sel < 4 ? 8 : 16, k = sel < 4 ? sel : sel - 4;
    return el(x, k, w, s);
}
static long long s33(long long v) { return (long long)((unsigned long long)v << 31) >> 31; }

int main() {
    const int n = 256;
    unsigned h[3 * n];
    unsigned s = 7;
    const unsigned edges[] = {0, 1, 0xffffffffu, 0x80000000u, 0x7fffffffu, 0x80808080u, 0x7f7f7f7fu, 0xff00ff00u, 0x00ff00ffu, 0x8000ffffu};
    for (int i = 0; i < 3 * n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (i % 5 == 0) ? edges[(s >> 8) % 10] : s;
    }
    unsigned *in;
    Out *out, *ho = new Out[n];
    CHECK(cudaMalloc(&in, sizeof h));
    CHECK(cudaMalloc(&out, n * sizeof(Out)));
    CHECK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    video<<<n / 64, 64>>>(in, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(ho, out, n * sizeof(Out), cudaMemcpyDeviceToHost));
    const int a4[] = {0, 1, 2, 3}, b4[] = {4, 5, 6, 7}, a2[] = {0, 1}, b2[] = {2, 3};
    const int av2[] = {1, 0}, bv2[] = {2, 3};
    for (int t = 0; t < n; t++) {
        const Out &o = ho[t];
        unsigned x = h[3 * t], y = h[3 * t + 1], z = h[3 * t + 2];
        EXPECT_EQ(o.simd[0], simd(4, 0, 0, false, false, false, true, false, 15, a4, b4, x, y, z), "vadd4.sat", t);
        EXPECT_EQ(o.simd[1], simd(2, 1, 0, true, true, true, false, false, 3, a2, b2, x, y, z), "vsub2", t);
        EXPECT_EQ(o.simd[2], simd(4, 3, 0, false, false, false, false, true, 15, a4, b4, x, y, z), "vabsdiff4.add", t);
        EXPECT_EQ(o.simd[3], simd(2, 2, 0, true, true, true, false, false, 3, av2, bv2, x, y, z), "vavrg2 selectors", t);
        EXPECT_EQ(o.simd[4], simd(4, 4, 0, true, true, true, false, false, 5, a4, b4, x, y, z), "vmin4 mask", t);
        EXPECT_EQ(o.simd[5], simd(2, 5, 0, false, false, true, true, false, 2, a2, b2, x, y, z), "vmax2.sat mask", t);
        EXPECT_EQ(o.simd[6], simd(4, 6, 0, false, true, false, false, true, 15, a4, b4, x, y, z), "vset4.add", t);
        EXPECT_EQ(o.simd[7], simd(2, 6, 1, false, false, false, false, false, 3, a2, a2, x, y, z), "vset2 selectors", t);
        // vadd.u32.u32.s32.sat d, x.b1, y.b3
        EXPECT_EQ(o.scalar[0], (unsigned)clampll(part(x, 1, false) + part(y, 3, true), 0, 0xffffffffll), "vadd.sat", t);
        long long vs = s33((long long)(int)x - (long long)(int)y);
        EXPECT_EQ(o.scalar[1], (unsigned)(vs > (long long)(int)z ? vs : (long long)(int)z), "vsub.max", t);
        long long ad = part(x, 4, true) - part(y, 5, true);
        ad = clampll(ad < 0 ? -ad : ad, 0, 0xffff);
        EXPECT_EQ(o.scalar[2], ((unsigned)(ad & 0xffff) << 16) | (z & 0xffff), "vabsdiff merge", t);
        long long sh = (long long)part(y, 0, false);
        sh = sh > 32 ? 32 : sh;
        EXPECT_EQ(o.scalar[3], (unsigned)((unsigned long long)x << sh), "vshl.clamp", t);
        EXPECT_EQ(o.scalar[4], ((long long)x >= (long long)(int)y ? 1u : 0u) + z, "vset.ge.add", t);
        long long mx = part(x, 5, true) > part(y, 2, false) ? part(x, 5, true) : part(y, 2, false);
        EXPECT_EQ(o.scalar[5], (unsigned)clampll(mx, -0x80000000ll, 0x7fffffffll), "vmax.sat", t);
        // vmad: -z makes the final result signed; c = ~z plus one.
        __int128 m = (__int128)(x & 0xffff) * (y >> 16) + (__int128)(int)~z + 1;
        long long r = (long long)(m >> 15);
        EXPECT_EQ(o.vmad, (unsigned)clampll(r, -0x80000000ll, 0x7fffffffll), "vmad", t);
        long long pa = clampll((int)x >> 24, -128, 127), pb = clampll((int)y >> 20, -128, 127);
        EXPECT_EQ(o.pack, ((unsigned)pb & 0xff) | (((unsigned)pa & 0xff) << 8) | (z << 16), "cvt.pack.sat", t);
        EXPECT_EQ(o.vec_sum, h[2 * t + 1] + 2 * z, "vector registers", t);
        EXPECT_EQ(o.vec_swap, h[2 * t + 1], "vector element", t);
        unsigned long long va = ((unsigned long long)y << 32) | x, vb = ((unsigned long long)x << 32) | z;
        unsigned long long want = va - vb + (va < vb ? 0xffffffffull : 0);
        EXPECT_EQ(o.diff, want, "sub.cc/subc borrow chain", t);
        EXPECT_EQ(o.carry_after_sub, x >= y ? 1u : 0u, "carry after sub.cc", t);
    }
    // The shared-memory aliasing kernel: one block of 64 threads.
    unsigned *sh_out, hs[64];
    CHECK(cudaMalloc(&sh_out, sizeof hs));
    write_then_peek<<<1, 64, 64 * sizeof(unsigned)>>>(sh_out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hs, sh_out, sizeof hs, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++) EXPECT_EQ(hs[i], (unsigned)((i ^ 1) * 3 + 1 + i * 3 + 1), "extern shared aliasing", i);
    CHECK(cudaFree(in)); CHECK(cudaFree(out)); CHECK(cudaFree(sh_out));
    delete[] ho;
    return finish();
}
