// Single-precision math from libdevice checked against the host in long
// double, in units in the last place, with the maximum errors the CUDA
// programming guide documents (plus one ulp for the reference's own
// rounding): sinf cosf tanf expf exp2f exp10f logf log2f log10f erff erfcf
// powf sqrtf rsqrtf cbrtf atan2f sinhf tanhf fmodf hypotf; IEEE division and
// sqrtf must be exact; special values; fast intrinsics (__sinf, __expf,
// __logf, __fdividef) within absolute/relative bounds.
#include "common.cuh"

enum { SIN, COS, TAN, EXP, EXP2, EXP10, LOG, LOG2, LOG10, ERF, ERFC, POW, SQRT, RSQRT, CBRT,
       ATAN2, SINH, TANH, FMOD, HYPOT, DIV, NFUNC };
static const char *names[NFUNC] = {"sinf", "cosf", "tanf", "expf", "exp2f", "exp10f", "logf",
                                   "log2f", "log10f", "erff", "erfcf", "powf", "sqrtf", "rsqrtf",
                                   "cbrtf", "atan2f", "sinhf", "tanhf", "fmodf", "hypotf", "div"};
// documented maximum ulp errors (CUDA C++ Programming Guide, mathematical functions)
static const double max_ulp[NFUNC] = {2, 2, 4, 2, 2, 2, 1, 1, 2, 2, 4, 4, 0, 2, 1, 3, 3, 2, 0, 3, 0};

#define N 2048

__global__ void eval(const float *x, const float *y, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * NFUNC) return;
    int f = i / N;
    float a = x[i], b = y[i], r = 0;
    switch (f) {
    case SIN: r = sinf(a); break;
    case COS: r = cosf(a); break;
    case TAN: r = tanf(a); break;
    case EXP: r = expf(a); break;
    case EXP2: r = exp2f(a); break;
    case EXP10: r = exp10f(a); break;
    case LOG: r = logf(a); break;
    case LOG2: r = log2f(a); break;
    case LOG10: r = log10f(a); break;
    case ERF: r = erff(a); break;
    case ERFC: r = erfcf(a); break;
    case POW: r = powf(a, b); break;
    case SQRT: r = sqrtf(a); break;
    case RSQRT: r = rsqrtf(a); break;
    case CBRT: r = cbrtf(a); break;
    case ATAN2: r = atan2f(a, b); break;
    case SINH: r = sinhf(a); break;
    case TANH: r = tanhf(a); break;
    case FMOD: r = fmodf(a, b); break;
    case HYPOT: r = hypotf(a, b); break;
    case DIV: r = a / b; break;
    }
    out[i] = r;
}

#define NSPECIAL 14
__global__ void specials(float *o) {
    if (threadIdx.x != 0) return;
    volatile float zero = 0.0f, inf = INFINITY, one = 1.0f;
    o[0] = sinf(inf);          // NaN
    o[1] = logf(zero);         // -inf
    o[2] = logf(-one);         // NaN
    o[3] = expf(-inf);         // 0
    o[4] = powf(zero, zero);   // 1
    o[5] = powf(-2.0f, 3.0f);  // -8
    o[6] = powf(-2.0f, 0.5f);  // NaN
    o[7] = sqrtf(-zero);       // -0
    o[8] = rsqrtf(zero);       // inf
    o[9] = erff(inf);          // 1
    o[10] = expf(100.0f);      // inf
    o[11] = tanhf(-inf);       // -1
    o[12] = atan2f(zero, -one); // pi
    o[13] = fmodf(one, zero);  // NaN
}

__global__ void intrinsics(const float *x, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float a = x[i];
    out[i * 4 + 0] = __sinf(a);            // a in [-pi, pi]
    out[i * 4 + 1] = __expf(a);
    out[i * 4 + 2] = __logf(a + 4.0f);     // in [0.86, 7.14]
    out[i * 4 + 3] = __fdividef(a, 1.7f);
}

static double ulp_of(double ref) {
    double m = fabs(ref);
    if (m < 1.1754943508222875e-38) return 1.401298464324817e-45; // float subnormal spacing
    int e;
    frexp(m, &e);           // m = f * 2^e, f in [0.5, 1)
    return ldexp(1.0, e - 24);
}

static long double ref_of(int f, long double a, long double b) {
    switch (f) {
    case SIN: return sinl(a);
    case COS: return cosl(a);
    case TAN: return tanl(a);
    case EXP: return expl(a);
    case EXP2: return exp2l(a);
    case EXP10: return powl(10.0L, a);
    case LOG: return logl(a);
    case LOG2: return log2l(a);
    case LOG10: return log10l(a);
    case ERF: return erfl(a);
    case ERFC: return erfcl(a);
    case POW: return powl(a, b);
    case SQRT: return sqrtl(a);
    case RSQRT: return 1.0L / sqrtl(a);
    case CBRT: return cbrtl(a);
    case ATAN2: return atan2l(a, b);
    case SINH: return sinhl(a);
    case TANH: return tanhl(a);
    case FMOD: return fmodl(a, b);
    case HYPOT: return hypotl(a, b);
    case DIV: return a / b;
    }
    return 0;
}

int main() {
    float *hx = new float[N * NFUNC], *hy = new float[N * NFUNC], *hr = new float[N * NFUNC];
    unsigned s = 1;
    auto rnd = [&](float lo, float hi) {
        s = s * 1664525u + 1013904223u;
        return lo + (hi - lo) * (float)((s >> 8) & 0xffffff) / 16777216.0f;
    };
    for (int f = 0; f < NFUNC; f++)
        for (int i = 0; i < N; i++) {
            float a = 0, b = 1;
            switch (f) {
            case SIN: case COS: a = rnd(-100.0f, 100.0f); break;
            case TAN: a = rnd(-1.5f, 1.5f); break;
            case EXP: a = rnd(-80.0f, 80.0f); break;
            case EXP2: a = rnd(-120.0f, 120.0f); break;
            case EXP10: a = rnd(-35.0f, 35.0f); break;
            case LOG: case LOG2: case LOG10: a = expf(rnd(-80.0f, 80.0f)); break;
            case ERF: a = rnd(-4.0f, 4.0f); break;
            case ERFC: a = rnd(-2.0f, 8.0f); break;
            case POW: a = rnd(0.01f, 10.0f); b = rnd(-8.0f, 8.0f); break;
            case SQRT: case RSQRT: case CBRT: a = expf(rnd(-40.0f, 40.0f)); break;
            case ATAN2: a = rnd(-10.0f, 10.0f); b = rnd(-10.0f, 10.0f); break;
            case SINH: a = rnd(-20.0f, 20.0f); break;
            case TANH: a = rnd(-10.0f, 10.0f); break;
            case FMOD: a = rnd(-1000.0f, 1000.0f); b = rnd(0.5f, 30.0f); break;
            case HYPOT: a = rnd(-1e3f, 1e3f); b = rnd(-1e3f, 1e3f); break;
            case DIV: a = rnd(-1e6f, 1e6f); b = rnd(0.001f, 1000.0f); break;
            }
            hx[f * N + i] = a;
            hy[f * N + i] = b;
        }
    float *x, *y, *out;
    CHECK(cudaMalloc(&x, N * NFUNC * sizeof(float)));
    CHECK(cudaMalloc(&y, N * NFUNC * sizeof(float)));
    CHECK(cudaMalloc(&out, N * NFUNC * sizeof(float)));
    CHECK(cudaMemcpy(x, hx, N * NFUNC * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy, N * NFUNC * sizeof(float), cudaMemcpyHostToDevice));
    eval<<<N * NFUNC / 256, 256>>>(x, y, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hr, out, N * NFUNC * sizeof(float), cudaMemcpyDeviceToHost));
    for (int f = 0; f < NFUNC; f++) {
        double worst = 0;
        for (int i = 0; i < N; i++) {
            long double ref = ref_of(f, hx[f * N + i], hy[f * N + i]);
            double got = hr[f * N + i];
            double err;
            if (isinf((double)ref) || fabsl(ref) > 3.4028234663852886e38L)
                err = isinf(got) && (got > 0) == (ref > 0) ? 0 : 1e9;
            else
                err = (double)(fabsl((long double)got - ref) / ulp_of((double)ref));
            if (max_ulp[f] == 0) // correctly rounded: must equal the rounded reference
                err = got == (double)(float)ref ? 0 : 1e9;
            EXPECT(err <= max_ulp[f] + 1, "%s(%.9g, %.9g) = %.9g, reference %.12Lg (%.2f ulp)",
                   names[f], hx[f * N + i], hy[f * N + i], got, ref, err);
            worst = err > worst ? err : worst;
        }
        (void)worst;
    }

    float *sp, hs[NSPECIAL];
    CHECK(cudaMalloc(&sp, sizeof hs));
    specials<<<1, 32>>>(sp);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hs, sp, sizeof hs, cudaMemcpyDeviceToHost));
    EXPECT(isnan(hs[0]), "sinf(inf) = %g", hs[0]);
    EXPECT(isinf(hs[1]) && hs[1] < 0, "logf(0) = %g", hs[1]);
    EXPECT(isnan(hs[2]), "logf(-1) = %g", hs[2]);
    EXPECT(hs[3] == 0.0f, "expf(-inf) = %g", hs[3]);
    EXPECT(hs[4] == 1.0f, "powf(0, 0) = %g", hs[4]);
    EXPECT(hs[5] == -8.0f, "powf(-2, 3) = %g", hs[5]);
    EXPECT(isnan(hs[6]), "powf(-2, 0.5) = %g", hs[6]);
    EXPECT(hs[7] == 0.0f && signbit(hs[7]), "sqrtf(-0) = %g", hs[7]);
    EXPECT(isinf(hs[8]) && hs[8] > 0, "rsqrtf(0) = %g", hs[8]);
    EXPECT(hs[9] == 1.0f, "erff(inf) = %g", hs[9]);
    EXPECT(isinf(hs[10]) && hs[10] > 0, "expf(100) = %g", hs[10]);
    EXPECT(hs[11] == -1.0f, "tanhf(-inf) = %g", hs[11]);
    EXPECT(hs[12] == 3.14159274f, "atan2f(0, -1) = %.9g", hs[12]);
    EXPECT(isnan(hs[13]), "fmodf(1, 0) = %g", hs[13]);

    float *ix, *io, hx2[N], ho[N * 4];
    for (int i = 0; i < N; i++) hx2[i] = -3.14159f + 6.28318f * i / N;
    CHECK(cudaMalloc(&ix, sizeof hx2));
    CHECK(cudaMalloc(&io, sizeof ho));
    CHECK(cudaMemcpy(ix, hx2, sizeof hx2, cudaMemcpyHostToDevice));
    intrinsics<<<N / 256, 256>>>(ix, io);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(ho, io, sizeof ho, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        double a = hx2[i];
        EXPECT_NEAR(ho[i * 4 + 0], sin(a), 0, 1e-6, "__sinf", i);       // 2^-21.41 absolute
        EXPECT_NEAR(ho[i * 4 + 1], exp(a), 2e-6, 0, "__expf", i);
        EXPECT_NEAR(ho[i * 4 + 2], log((double)(hx2[i] + 4.0f)), 1e-6, 1e-6, "__logf", i);
        EXPECT_NEAR(ho[i * 4 + 3], a / 1.7f, 5e-7, 0, "__fdividef", i);
    }
    CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(out)); CHECK(cudaFree(sp));
    CHECK(cudaFree(ix)); CHECK(cudaFree(io));
    delete[] hx; delete[] hy; delete[] hr;
    return finish();
}
