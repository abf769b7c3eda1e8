// Double-precision math from libdevice checked against the host in long
// double, in units in the last place, with the maximum errors the CUDA
// programming guide documents (plus one ulp for the reference's own
// rounding): sin cos tan exp exp2 exp10 log log2 log10 erf erfc pow sqrt rsqrt
// cbrt atan2 sinh tanh fmod hypot; division, sqrt and fma must be exact;
// float<->double conversions; special values.
#include "common.cuh"

enum { SIN, COS, TAN, EXP, EXP2, EXP10, LOG, LOG2, LOG10, ERF, ERFC, POW, SQRT, RSQRT, CBRT,
       ATAN2, SINH, TANH, FMOD, HYPOT, DIV, FMA, NFUNC };
static const char *names[NFUNC] = {"sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2",
                                   "log10", "erf", "erfc", "pow", "sqrt", "rsqrt", "cbrt",
                                   "atan2", "sinh", "tanh", "fmod", "hypot", "div", "fma"};
static const double max_ulp[NFUNC] = {2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 5, 2, 0, 1, 1, 2, 2, 1, 0, 2, 0, 0};

#define N 2048

__global__ void eval(const double *x, const double *y, double *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N * NFUNC) return;
    int f = i / N;
    double a = x[i], b = y[i], r = 0;
    switch (f) {
    case SIN: r = sin(a); break;
    case COS: r = cos(a); break;
    case TAN: r = tan(a); break;
    case EXP: r = exp(a); break;
    case EXP2: r = exp2(a); break;
    case EXP10: r = exp10(a); break;
    case LOG: r = log(a); break;
    case LOG2: r = log2(a); break;
    case LOG10: r = log10(a); break;
    case ERF: r = erf(a); break;
    case ERFC: r = erfc(a); break;
    case POW: r = pow(a, b); break;
    case SQRT: r = sqrt(a); break;
    case RSQRT: r = rsqrt(a); break;
    case CBRT: r = cbrt(a); break;
    case ATAN2: r = atan2(a, b); break;
    case SINH: r = sinh(a); break;
    case TANH: r = tanh(a); break;
    case FMOD: r = fmod(a, b); break;
    case HYPOT: r = hypot(a, b); break;
    case DIV: r = a / b; break;
    case FMA: r = fma(a, b, a * 0.25); break;
    }
    out[i] = r;
}

#define NSPECIAL 10
__global__ void specials(double *o, float *of, const double *conv) {
    if (threadIdx.x != 0) return;
    volatile double zero = 0.0, inf = INFINITY, one = 1.0;
    o[0] = sin(inf);
    o[1] = log(zero);
    o[2] = exp(-inf);
    o[3] = pow(zero, zero);
    o[4] = pow(-2.0, 5.0);
    o[5] = sqrt(-one);
    o[6] = exp(800.0);
    o[7] = atan2(zero, -one);
    o[8] = (double)3.1f;
    o[9] = erf(-inf);
    for (int k = 0; k < 6; k++) of[k] = (float)conv[k];
}

static double ulp_of(double ref) {
    double m = fabs(ref);
    if (m < 2.2250738585072014e-308) return 4.9406564584124654e-324;
    int e;
    frexp(m, &e);
    return ldexp(1.0, e - 53);
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
    default: return 0;
    }
}

int main() {
    double *hx = new double[N * NFUNC], *hy = new double[N * NFUNC], *hr = new double[N * NFUNC];
    unsigned long long s = 7;
    auto rnd = [&](double lo, double hi) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return lo + (hi - lo) * (double)(s >> 11) / 9007199254740992.0;
    };
    for (int f = 0; f < NFUNC; f++)
        for (int i = 0; i < N; i++) {
            double a = 0, b = 1;
            switch (f) {
            case SIN: case COS: a = rnd(-100, 100); break;
            case TAN: a = rnd(-1.5, 1.5); break;
            case EXP: a = rnd(-700, 700); break;
            case EXP2: a = rnd(-1000, 1000); break;
            case EXP10: a = rnd(-300, 300); break;
            case LOG: case LOG2: case LOG10: a = exp(rnd(-700, 700)); break;
            case ERF: a = rnd(-6, 6); break;
            case ERFC: a = rnd(-3, 25); break;
            case POW: a = rnd(0.001, 100); b = rnd(-50, 50); break;
            case SQRT: case RSQRT: case CBRT: a = exp(rnd(-600, 600)); break;
            case ATAN2: a = rnd(-10, 10); b = rnd(-10, 10); break;
            case SINH: a = rnd(-50, 50); break;
            case TANH: a = rnd(-20, 20); break;
            case FMOD: a = rnd(-1e6, 1e6); b = rnd(0.5, 300); break;
            case HYPOT: a = rnd(-1e100, 1e100); b = rnd(-1e100, 1e100); break;
            case DIV: a = rnd(-1e100, 1e100); b = rnd(1e-50, 1e50); break;
            case FMA: a = rnd(-1e10, 1e10); b = rnd(-1e-10, 1e10); break;
            }
            hx[f * N + i] = a;
            hy[f * N + i] = b;
        }
    double *x, *y, *out;
    CHECK(cudaMalloc(&x, N * NFUNC * sizeof(double)));
    CHECK(cudaMalloc(&y, N * NFUNC * sizeof(double)));
    CHECK(cudaMalloc(&out, N * NFUNC * sizeof(double)));
    CHECK(cudaMemcpy(x, hx, N * NFUNC * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy, N * NFUNC * sizeof(double), cudaMemcpyHostToDevice));
    eval<<<N * NFUNC / 256, 256>>>(x, y, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hr, out, N * NFUNC * sizeof(double), cudaMemcpyDeviceToHost));
    for (int f = 0; f < NFUNC; f++)
        for (int i = 0; i < N; i++) {
            double a = hx[f * N + i], b = hy[f * N + i], got = hr[f * N + i], err;
            if (f == SQRT) err = got == sqrt(a) ? 0 : 1e9;
            else if (f == DIV) err = got == a / b ? 0 : 1e9;
            else if (f == FMA) err = got == fma(a, b, a * 0.25) ? 0 : 1e9;
            else if (f == FMOD) err = got == fmod(a, b) ? 0 : 1e9;
            else {
                long double ref = ref_of(f, a, b);
                err = (double)(fabsl((long double)got - ref) / ulp_of((double)ref));
            }
            EXPECT(err <= max_ulp[f] + 1, "%s(%.17g, %.17g) = %.17g (%.2f ulp)", names[f], a, b,
                   got, err);
        }

    double *sp, hs[NSPECIAL], hconv[6] = {1.0 / 3.0, 1e300, -1e-50, 0.1, 16777217.0, -0.0}, *conv;
    float *spf, hf[6];
    CHECK(cudaMalloc(&sp, sizeof hs));
    CHECK(cudaMalloc(&spf, sizeof hf));
    CHECK(cudaMalloc(&conv, sizeof hconv));
    CHECK(cudaMemcpy(conv, hconv, sizeof hconv, cudaMemcpyHostToDevice));
    specials<<<1, 32>>>(sp, spf, conv);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hs, sp, sizeof hs, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hf, spf, sizeof hf, cudaMemcpyDeviceToHost));
    EXPECT(isnan(hs[0]), "sin(inf) = %g", hs[0]);
    EXPECT(isinf(hs[1]) && hs[1] < 0, "log(0) = %g", hs[1]);
    EXPECT(hs[2] == 0.0, "exp(-inf) = %g", hs[2]);
    EXPECT(hs[3] == 1.0, "pow(0, 0) = %g", hs[3]);
    EXPECT(hs[4] == -32.0, "pow(-2, 5) = %g", hs[4]);
    EXPECT(isnan(hs[5]), "sqrt(-1) = %g", hs[5]);
    EXPECT(isinf(hs[6]) && hs[6] > 0, "exp(800) = %g", hs[6]);
    EXPECT(hs[7] == 3.141592653589793, "atan2(0, -1) = %.17g", hs[7]);
    EXPECT(hs[8] == (double)3.1f, "(double)3.1f = %.17g", hs[8]);
    EXPECT(hs[9] == -1.0, "erf(-inf) = %g", hs[9]);
    for (int k = 0; k < 6; k++) {
        float want = (float)hconv[k];
        EXPECT(memcmp(&hf[k], &want, 4) == 0, "(float)%.17g = %.9g want %.9g", hconv[k], hf[k], want);
    }
    CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(out)); CHECK(cudaFree(sp));
    CHECK(cudaFree(spf)); CHECK(cudaFree(conv));
    delete[] hx; delete[] hy; delete[] hr;
    return finish();
}
