// Warp-level reductions: a butterfly sum with __shfl_xor_sync, a tree sum with
// __shfl_down_sync (int, float, double), __reduce_add/min/max/and/or/xor_sync
// (sm_80 redux.sync), on 64 warps.
#include "common.cuh"

#define NWARPS 64
#define N (NWARPS * 32)

struct Out {
    int xor_sum, down_sum;
    float fsum;
    double dsum;
    unsigned radd, rand_, ror, rxor;
    int rmin, rmax;
    unsigned umin, umax;
};

__global__ void reduce(const int *in, Out *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    int v = in[i];
    int a = v;
    for (int off = 16; off > 0; off >>= 1) a += __shfl_xor_sync(0xffffffff, a, off);
    int b = v;
    for (int off = 16; off > 0; off >>= 1) b += __shfl_down_sync(0xffffffff, b, off);
    float f = v * 0.5f;
    for (int off = 16; off > 0; off >>= 1) f += __shfl_down_sync(0xffffffff, f, off);
    double d = v * 0.25;
    for (int off = 16; off > 0; off >>= 1) d += __shfl_down_sync(0xffffffff, d, off);
    unsigned u = (unsigned)v;
    Out o;
    o.xor_sum = a;
    o.down_sum = b;
    o.fsum = f;
    o.dsum = d;
    o.radd = __reduce_add_sync(0xffffffff, u);
    o.rand_ = __reduce_and_sync(0xffffffff, u | 0x100);
    o.ror = __reduce_or_sync(0xffffffff, u);
    o.rxor = __reduce_xor_sync(0xffffffff, u);
    o.rmin = __reduce_min_sync(0xffffffff, v);
    o.rmax = __reduce_max_sync(0xffffffff, v);
    o.umin = __reduce_min_sync(0xffffffff, u);
    o.umax = __reduce_max_sync(0xffffffff, u);
    if (lane == 0 || lane == 17) out[i / 32 * 2 + (lane != 0)] = o;
}

int main() {
    int h[N];
    for (int i = 0; i < N; i++) h[i] = ((i * 2654435761u) >> 20) % 2001 - 1000;
    int *d;
    Out *dout, hout[NWARPS * 2];
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMalloc(&dout, sizeof hout));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    reduce<<<N / 256, 256>>>(d, dout);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, dout, sizeof hout, cudaMemcpyDeviceToHost));
    for (int w = 0; w < NWARPS; w++) {
        int sum = 0, mn = 1 << 30, mx = -(1 << 30);
        unsigned a = ~0u, o = 0, x = 0, umn = ~0u, umx = 0;
        for (int l = 0; l < 32; l++) {
            int v = h[w * 32 + l];
            unsigned u = (unsigned)v;
            sum += v;
            mn = v < mn ? v : mn; mx = v > mx ? v : mx;
            umn = u < umn ? u : umn; umx = u > umx ? u : umx;
            a &= u | 0x100; o |= u; x ^= u;
        }
        const Out &l0 = hout[w * 2], &l17 = hout[w * 2 + 1];
        EXPECT_EQ(l0.xor_sum, sum, "xor_sum lane0", w);
        EXPECT_EQ(l17.xor_sum, sum, "xor_sum lane17", w);
        EXPECT_EQ(l0.down_sum, sum, "down_sum", w);
        // halves are exact, quarters too: all sums are exact in float/double
        EXPECT(l0.fsum == sum * 0.5f, "fsum[%d] = %g want %g", w, l0.fsum, sum * 0.5f);
        EXPECT(l0.dsum == sum * 0.25, "dsum[%d] = %g want %g", w, l0.dsum, sum * 0.25);
        for (int k = 0; k < 2; k++) {
            const Out &r = hout[w * 2 + k];
            EXPECT_EQ(r.radd, (unsigned)sum, "reduce_add", w);
            EXPECT_EQ(r.rand_, a, "reduce_and", w);
            EXPECT_EQ(r.ror, o, "reduce_or", w);
            EXPECT_EQ(r.rxor, x, "reduce_xor", w);
            EXPECT_EQ(r.rmin, mn, "reduce_min", w);
            EXPECT_EQ(r.rmax, mx, "reduce_max", w);
            EXPECT_EQ(r.umin, umn, "reduce_umin", w);
            EXPECT_EQ(r.umax, umx, "reduce_umax", w);
        }
    }
    CHECK(cudaFree(d)); CHECK(cudaFree(dout));
    return finish();
}
