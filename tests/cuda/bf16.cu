// cuda_bf16.h: __nv_bfloat16 and __nv_bfloat162 arithmetic (add, sub, mul,
// div, fma, mul_rn, neg, abs, min, max, comparisons) on values where the host
// can compute the correctly rounded result in double; conversions
// float->bfloat16 in every rounding mode (ties, overflow, NaN, signed zero),
// bfloat16->float, int->bfloat16, half<->bfloat16 through float.
#include "common.cuh"
#include <cuda_bf16.h>

#define NOPS 10
#define NCONV 12

typedef __nv_bfloat16 bf;
static inline unsigned short bits(bf h) { __nv_bfloat16_raw r = h; return r.x; }
__device__ inline unsigned short dbits(bf h) { return __bfloat16_as_ushort(h); }

__global__ void ops(const bf *A, const bf *B, const bf *C, unsigned short *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bf a = A[i], b = B[i], c = C[i];
    unsigned short *o = out + i * NOPS;
    o[0] = dbits(__hadd(a, b));
    o[1] = dbits(__hsub(a, b));
    o[2] = dbits(__hmul(a, b));
    o[3] = dbits(__hdiv(a, b));
    o[4] = dbits(__hfma(a, b, c));
    o[5] = dbits(__hsub(__hmul_rn(a, b), c));
    o[6] = dbits(__habs(__hneg(a)));
    o[7] = dbits(__hmax(a, b));
    o[8] = (unsigned short)(__hlt(a, b) | (__heq(a, b) << 1) | (__hgt(a, c) << 2));
    __nv_bfloat162 x = __halves2bfloat162(a, b), y = __halves2bfloat162(c, a);
    __nv_bfloat162 s = __hmul2(__hadd2(x, y), x); // ((a+c)*a, (b+a)*b), two roundings
    o[9] = dbits(__low2bfloat16(s)) ^ (unsigned short)(dbits(__high2bfloat16(s)) * 5u);
}

__global__ void conversions(const float *f, unsigned short *out, float *back) {
    int i = threadIdx.x;
    if (i >= NCONV) return;
    out[i * 5 + 0] = dbits(__float2bfloat16_rn(f[i]));
    out[i * 5 + 1] = dbits(__float2bfloat16_rz(f[i]));
    out[i * 5 + 2] = dbits(__float2bfloat16_rd(f[i]));
    out[i * 5 + 3] = dbits(__float2bfloat16_ru(f[i]));
    out[i * 5 + 4] = dbits(__int2bfloat16_rn(i * 100003 - 500000));
    back[i] = __bfloat162float(__float2bfloat16(f[i]));
}

static double bd(bf h) { return (double)__bfloat162float(h); }
static bf rnd(double x) { return __double2bfloat16(x); }

int main() {
    // a, b, c = k/16 with |k| <= 127: exactly representable, exact results in double
    const int n = 4096;
    bf *ha = new bf[n], *hb = new bf[n], *hc = new bf[n];
    for (int i = 0; i < n; i++) {
        ha[i] = __float2bfloat16((float)((i * 37) % 255 - 127) / 16.0f);
        int kb = (i * 101) % 255 - 127;
        hb[i] = __float2bfloat16((float)(kb == 0 ? 3 : kb) / 16.0f);
        hc[i] = __float2bfloat16((float)((i * 53) % 255 - 127) / 16.0f);
    }
    bf *A, *B, *C;
    unsigned short *out, *hout = new unsigned short[n * NOPS];
    CHECK(cudaMalloc(&A, n * sizeof(bf)));
    CHECK(cudaMalloc(&B, n * sizeof(bf)));
    CHECK(cudaMalloc(&C, n * sizeof(bf)));
    CHECK(cudaMalloc(&out, n * NOPS * sizeof(unsigned short)));
    CHECK(cudaMemcpy(A, ha, n * sizeof(bf), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(B, hb, n * sizeof(bf), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(C, hc, n * sizeof(bf), cudaMemcpyHostToDevice));
    ops<<<n / 128, 128>>>(A, B, C, out, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, out, n * NOPS * sizeof(unsigned short), cudaMemcpyDeviceToHost));
    const char *names[NOPS] = {"add", "sub", "mul", "div", "fma", "mul_rn-sub", "abs(neg)",
                               "max", "compare", "bfloat162"};
    for (int i = 0; i < n; i++) {
        double a = bd(ha[i]), b = bd(hb[i]), c = bd(hc[i]);
        unsigned short want[NOPS];
        want[0] = bits(rnd(a + b));
        want[1] = bits(rnd(a - b));
        want[2] = bits(rnd(a * b));
        want[3] = bits(rnd(a / b));
        want[4] = bits(rnd(a * b + c));
        want[5] = bits(rnd(bd(rnd(a * b)) - c));
        want[6] = bits(rnd(fabs(a)));
        want[7] = bits(rnd(a > b ? a : b));
        want[8] = (unsigned short)((a < b) | ((a == b) << 1) | ((a > c) << 2));
        double lo = bd(rnd(a + c)) * a, hi = bd(rnd(b + a)) * b;
        want[9] = bits(rnd(lo)) ^ (unsigned short)(bits(rnd(hi)) * 5u);
        for (int k = 0; k < NOPS; k++) {
            unsigned short got = hout[i * NOPS + k];
            bool ok = got == want[k] || (k == 7 && a == 0 && b == 0 && (got & 0x7fff) == 0);
            EXPECT(ok, "%s(%g, %g, %g): got %#06x want %#06x", names[k], a, b, c, got, want[k]);
        }
    }

    float hf[NCONV] = {1.0f, 1.00390625f /* 1+2^-8: tie */, 1.01171875f /* 1+3*2^-8: tie */,
                       -1.00390625f, 3.14159265f, 3.3895314e38f /* max bf16 */,
                       3.4e38f, -0.0f, INFINITY, NAN, 1e-40f /* float subnormal */,
                       -123456.789f};
    float *f, *back, hback[NCONV];
    unsigned short *cv, hcv[NCONV * 5];
    CHECK(cudaMalloc(&f, sizeof hf));
    CHECK(cudaMalloc(&back, sizeof hback));
    CHECK(cudaMalloc(&cv, sizeof hcv));
    CHECK(cudaMemcpy(f, hf, sizeof hf, cudaMemcpyHostToDevice));
    conversions<<<1, 32>>>(f, cv, back);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hcv, cv, sizeof hcv, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hback, back, sizeof hback, cudaMemcpyDeviceToHost));
    for (int i = 0; i < NCONV; i++) {
        unsigned short w[5] = {bits(__float2bfloat16_rn(hf[i])), bits(__float2bfloat16_rz(hf[i])),
                               bits(__float2bfloat16_rd(hf[i])), bits(__float2bfloat16_ru(hf[i])),
                               bits(__int2bfloat16_rn(i * 100003 - 500000))};
        for (int m = 0; m < 5; m++) {
            unsigned short got = hcv[i * 5 + m];
            bool nan_ok = m < 4 && hf[i] != hf[i] && (got & 0x7f80) == 0x7f80 && (got & 0x7f);
            EXPECT(got == w[m] || nan_ok, "conversion %d of %g: got %#06x want %#06x", m, hf[i],
                   got, w[m]);
        }
        float wb = __bfloat162float(__float2bfloat16(hf[i]));
        EXPECT(hback[i] == wb || (wb != wb && hback[i] != hback[i]), "bfloat162float(%g) = %g want %g",
               hf[i], hback[i], wb);
    }
    EXPECT_EQ(hcv[1 * 5 + 0], 0x3f80, "1+2^-8 rn (tie to even)", 1);
    EXPECT_EQ(hcv[2 * 5 + 0], 0x3f82, "1+3*2^-8 rn (tie to even)", 2);
    EXPECT_EQ(hcv[1 * 5 + 3], 0x3f81, "1+2^-8 ru", 1);
    EXPECT_EQ(hcv[3 * 5 + 2], 0xbf81, "-(1+2^-8) rd", 3);
    EXPECT_EQ(hcv[5 * 5 + 0], 0x7f7f, "max bf16", 5);
    EXPECT_EQ(hcv[6 * 5 + 0], 0x7f80, "3.4e38 rn -> inf", 6);
    EXPECT_EQ(hcv[6 * 5 + 1], 0x7f7f, "3.4e38 rz -> max", 6);
    EXPECT_EQ(hcv[7 * 5 + 0], 0x8000, "-0", 7);
    EXPECT_EQ(hcv[8 * 5 + 0], 0x7f80, "inf", 8);

    CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C)); CHECK(cudaFree(out));
    CHECK(cudaFree(f)); CHECK(cudaFree(back)); CHECK(cudaFree(cv));
    delete[] ha; delete[] hb; delete[] hc; delete[] hout;
    return finish();
}
