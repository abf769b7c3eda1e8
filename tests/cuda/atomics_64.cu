// 64-bit atomics: unsigned long long atomicAdd, atomicExch, atomicMin,
// atomicMax, atomicCAS, atomicAnd, atomicOr, atomicXor; long long atomicMin,
// atomicMax, atomicAnd, atomicOr, atomicXor; a double max built from a
// 64-bit atomicCAS loop; unsigned short atomicCAS (sm_70+).
#include "common.cuh"

#define BLOCKS 6
#define NT 256
#define N (BLOCKS * NT)

struct S {
    unsigned long long add, mn, mx, and_, or_, xor_, cas, exch;
    long long smin, smax, sand, sor, sxor;
    double dmax;
    unsigned short us[2];
};

__device__ double atomic_max_double(double *p, double v) {
    unsigned long long *a = (unsigned long long *)p;
    unsigned long long old = *a, assumed;
    do {
        assumed = old;
        if (__longlong_as_double(assumed) >= v) break;
        old = atomicCAS(a, assumed, (unsigned long long)__double_as_longlong(v));
    } while (old != assumed);
    return __longlong_as_double(old);
}

__device__ unsigned long long val(int i) { return (unsigned long long)(i + 1) * 0x100000001ull; }

__global__ void atomics(S *s, unsigned long long *exch_ret) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long v = val(i);
    long long sv = (long long)(i - N / 2) * 5000000000ll;
    atomicAdd(&s->add, v);
    atomicMin(&s->mn, v ^ 0xffff00000000ull);
    atomicMax(&s->mx, v ^ 0xffff00000000ull);
    atomicAnd(&s->and_, ~(1ull << (i % 64)) | (1ull << 63));
    atomicOr(&s->or_, 1ull << (i % 61));
    atomicXor(&s->xor_, v);
    exch_ret[i] = atomicExch(&s->exch, v);
    unsigned long long old = s->cas, assumed;
    do {
        assumed = old;
        old = atomicCAS(&s->cas, assumed, assumed + 0x100000001ull);
    } while (old != assumed);
    atomicMin(&s->smin, sv);
    atomicMax(&s->smax, sv);
    atomicAnd(&s->sand, ~(1ll << (i % 40)));
    atomicOr(&s->sor, 1ll << (i % 50 + 10));
    atomicXor(&s->sxor, sv);
    atomic_max_double(&s->dmax, (double)((i * 37) % N) * 0.125 - 7.0);
    if (i < 100) {
        unsigned short o = s->us[0], a;
        do {
            a = o;
            o = atomicCAS(&s->us[0], a, (unsigned short)(a + 3));
        } while (o != a);
    }
}

int main() {
    S init = {};
    init.mn = ~0ull; init.and_ = ~0ull; init.cas = 7; init.exch = 0;
    init.smin = 0x7fffffffffffffffll; init.smax = -0x7fffffffffffffffll - 1; init.sand = -1;
    init.dmax = -1e300; init.us[0] = 65400; init.us[1] = 4242;
    S *ds, h;
    unsigned long long *exch_ret, *hex = new unsigned long long[N];
    CHECK(cudaMalloc(&ds, sizeof(S)));
    CHECK(cudaMalloc(&exch_ret, N * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(ds, &init, sizeof init, cudaMemcpyHostToDevice));
    atomics<<<BLOCKS, NT>>>(ds, exch_ret);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(&h, ds, sizeof h, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hex, exch_ret, N * sizeof(unsigned long long), cudaMemcpyDeviceToHost));

    unsigned long long add = 0, mn = ~0ull, mx = 0, and_ = ~0ull, or_ = 0, xor_ = 0;
    long long smin = 0x7fffffffffffffffll, smax = -0x7fffffffffffffffll - 1, sand = -1, sor = 0,
              sxor = 0;
    double dmax = -1e300;
    for (int i = 0; i < N; i++) {
        unsigned long long v = (unsigned long long)(i + 1) * 0x100000001ull;
        long long sv = (long long)(i - N / 2) * 5000000000ll;
        add += v;
        unsigned long long m = v ^ 0xffff00000000ull;
        mn = m < mn ? m : mn; mx = m > mx ? m : mx;
        and_ &= ~(1ull << (i % 64)) | (1ull << 63);
        or_ |= 1ull << (i % 61);
        xor_ ^= v;
        smin = sv < smin ? sv : smin; smax = sv > smax ? sv : smax;
        sand &= ~(1ll << (i % 40)); sor |= 1ll << (i % 50 + 10); sxor ^= sv;
        double d = (double)((i * 37) % N) * 0.125 - 7.0;
        dmax = d > dmax ? d : dmax;
    }
    EXPECT_EQ(h.add, add, "ull add", 0);
    EXPECT_EQ(h.mn, mn, "ull min", 0);
    EXPECT_EQ(h.mx, mx, "ull max", 0);
    EXPECT_EQ(h.and_, and_, "ull and", 0);
    EXPECT_EQ(h.or_, or_, "ull or", 0);
    EXPECT_EQ(h.xor_, xor_, "ull xor", 0);
    EXPECT_EQ(h.cas, 7 + (unsigned long long)N * 0x100000001ull, "ull cas loop", 0);
    EXPECT_EQ(h.smin, smin, "ll min", 0);
    EXPECT_EQ(h.smax, smax, "ll max", 0);
    EXPECT_EQ(h.sand, sand, "ll and", 0);
    EXPECT_EQ(h.sor, sor, "ll or", 0);
    EXPECT_EQ(h.sxor, sxor, "ll xor", 0);
    EXPECT(h.dmax == dmax, "double max via CAS: %g want %g", h.dmax, dmax);
    EXPECT_EQ(h.us[0], (unsigned short)(65400 + 300), "ushort cas (wraps)", 0);
    EXPECT_EQ(h.us[1], 4242, "ushort neighbour untouched", 0);
    // Exch: old values are 0 and every value but the final one, once each.
    bool *seen = new bool[N + 1]();
    for (int i = 0; i < N; i++) {
        unsigned long long o = hex[i];
        unsigned long long k = o / 0x100000001ull;
        EXPECT(o % 0x100000001ull == 0 && k <= N && !seen[k], "exch old %llx", o);
        if (o % 0x100000001ull == 0 && k <= N) seen[k] = true;
    }
    EXPECT(seen[0], "exch: initial value never returned");
    EXPECT(h.exch % 0x100000001ull == 0 && h.exch / 0x100000001ull >= 1 &&
               !seen[h.exch / 0x100000001ull],
           "exch final %llx", h.exch);
    CHECK(cudaFree(ds)); CHECK(cudaFree(exch_ret));
    delete[] hex; delete[] seen;
    return finish();
}
