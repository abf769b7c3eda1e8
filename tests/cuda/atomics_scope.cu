// Floating-point atomics and atomics at block and system scope:
// atomicAdd on float and double (values chosen so every order gives the same
// exact sum), atomicExch on float; the _block variants (Add, Sub, Min, Max,
// Inc, Dec, CAS, Exch, And, Or, Xor; float and double add) on shared and
// global memory; the _system variants (Add on int/float/double/ull, Exch,
// CAS, Or) on managed memory, read by the host after the kernel.
#include "common.cuh"

#define BLOCKS 4
#define NT 256
#define N (BLOCKS * NT)

struct G {
    float fsum;
    double dsum;
    float fexch;
    int blk_add[BLOCKS], blk_sub[BLOCKS], blk_min[BLOCKS], blk_max[BLOCKS];
    unsigned blk_inc[BLOCKS], blk_dec[BLOCKS], blk_and[BLOCKS], blk_or[BLOCKS], blk_xor[BLOCKS];
    int blk_cas[BLOCKS], blk_exch_hits[BLOCKS];
    float blk_fsum[BLOCKS];
    double blk_dsum[BLOCKS];
};

struct Sys {
    int add;
    float fadd;
    double dadd;
    unsigned long long uadd;
    int exch_hits;
    unsigned or_;
    int cas;
};

__global__ void scoped(G *g, Sys *sys) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.x, t = threadIdx.x;
    __shared__ int s_add, s_cas, s_exch;
    __shared__ float s_f;
    __shared__ double s_d;
    if (t == 0) { s_add = 0; s_cas = 0; s_exch = -1; s_f = 0.0f; s_d = 0.0; }
    __syncthreads();

    atomicAdd(&g->fsum, (float)(i % 16) * 0.25f);        // exact in any order
    atomicAdd(&g->dsum, (double)i * 0.5);
    atomicExch(&g->fexch, 2.5f);

    atomicAdd_block(&s_add, t);
    atomicAdd_block(&s_f, (float)t * 0.5f);
    atomicAdd_block(&s_d, (double)t * 0.125);
    int old = s_cas, assumed;
    do {
        assumed = old;
        old = atomicCAS_block(&s_cas, assumed, assumed + 1);
    } while (old != assumed);
    if (atomicExch_block(&s_exch, t) == -1) atomicAdd_block(&g->blk_exch_hits[b], 1);
    atomicSub_block(&g->blk_sub[b], t);
    atomicMin_block(&g->blk_min[b], (t * 13) % 251 - 100);
    atomicMax_block(&g->blk_max[b], (t * 13) % 251 - 100);
    atomicInc_block(&g->blk_inc[b], 1000u);
    atomicDec_block(&g->blk_dec[b], 1000u);
    atomicAnd_block(&g->blk_and[b], ~(1u << (t % 32)) | 0xf0000000u);
    atomicOr_block(&g->blk_or[b], 1u << (t % 24));
    atomicXor_block(&g->blk_xor[b], (unsigned)t);
    __syncthreads();
    if (t == 0) {
        g->blk_add[b] = s_add;
        g->blk_cas[b] = s_cas;
        g->blk_fsum[b] = s_f;
        g->blk_dsum[b] = s_d;
    }

    atomicAdd_system(&sys->add, 2);
    atomicAdd_system(&sys->fadd, 0.75f);
    atomicAdd_system(&sys->dadd, 0.5);
    atomicAdd_system(&sys->uadd, 1ull << 33);
    if (atomicExch_system(&sys->exch_hits, 1) == 0) atomicAdd_system(&sys->cas, 1000);
    atomicOr_system(&sys->or_, 1u << (i % 32));
    int o = sys->cas, a;
    do {
        a = o;
        o = atomicCAS_system(&sys->cas, a, a + 1);
    } while (o != a);
}

int main() {
    G init = {};
    init.fexch = -1.0f;
    for (int b = 0; b < BLOCKS; b++) {
        init.blk_min[b] = 1 << 20; init.blk_max[b] = -(1 << 20);
        init.blk_dec[b] = 10; init.blk_and[b] = ~0u;
    }
    G *dg, h;
    Sys *sys; // managed: host and device see the same address
    CHECK(cudaMallocManaged(&sys, sizeof(Sys)));
    memset(sys, 0, sizeof(Sys));
    CHECK(cudaMalloc(&dg, sizeof(G)));
    CHECK(cudaMemcpy(dg, &init, sizeof init, cudaMemcpyHostToDevice));
    scoped<<<BLOCKS, NT>>>(dg, sys);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(&h, dg, sizeof h, cudaMemcpyDeviceToHost));

    float fsum = 0.0f;
    double dsum = 0.0;
    for (int i = 0; i < N; i++) { fsum += (float)(i % 16) * 0.25f; dsum += (double)i * 0.5; }
    EXPECT(h.fsum == fsum, "float atomicAdd: %g want %g", h.fsum, fsum);
    EXPECT(h.dsum == dsum, "double atomicAdd: %g want %g", h.dsum, dsum);
    EXPECT(h.fexch == 2.5f, "float atomicExch: %g", h.fexch);
    int mn = 1 << 20, mx = -(1 << 20), add = 0, sub = 0;
    unsigned andv = ~0u, orv = 0, xorv = 0;
    float fs = 0.0f;
    double ds = 0.0;
    for (int t = 0; t < NT; t++) {
        int v = (t * 13) % 251 - 100;
        mn = v < mn ? v : mn; mx = v > mx ? v : mx;
        add += t; sub -= t; fs += (float)t * 0.5f; ds += (double)t * 0.125;
        andv &= ~(1u << (t % 32)) | 0xf0000000u; orv |= 1u << (t % 24); xorv ^= (unsigned)t;
    }
    for (int b = 0; b < BLOCKS; b++) {
        EXPECT_EQ(h.blk_add[b], add, "atomicAdd_block (shared)", b);
        EXPECT_EQ(h.blk_cas[b], NT, "atomicCAS_block loop", b);
        EXPECT_EQ(h.blk_exch_hits[b], 1, "atomicExch_block first-hit count", b);
        EXPECT_EQ(h.blk_sub[b], sub, "atomicSub_block", b);
        EXPECT_EQ(h.blk_min[b], mn, "atomicMin_block", b);
        EXPECT_EQ(h.blk_max[b], mx, "atomicMax_block", b);
        EXPECT_EQ(h.blk_inc[b], (unsigned)NT, "atomicInc_block", b);
        EXPECT_EQ(h.blk_dec[b], (unsigned)(1000 - (NT - 11)), "atomicDec_block (wraps)", b);
        EXPECT_EQ(h.blk_and[b], andv, "atomicAnd_block", b);
        EXPECT_EQ(h.blk_or[b], orv, "atomicOr_block", b);
        EXPECT_EQ(h.blk_xor[b], xorv, "atomicXor_block", b);
        EXPECT(h.blk_fsum[b] == fs, "float atomicAdd_block[%d]: %g want %g", b, h.blk_fsum[b], fs);
        EXPECT(h.blk_dsum[b] == ds, "double atomicAdd_block[%d]: %g want %g", b, h.blk_dsum[b], ds);
    }
    EXPECT_EQ(sys->add, 2 * N, "atomicAdd_system int", 0);
    EXPECT(sys->fadd == 0.75f * N, "atomicAdd_system float: %g", sys->fadd);
    EXPECT(sys->dadd == 0.5 * N, "atomicAdd_system double: %g", sys->dadd);
    EXPECT_EQ(sys->uadd, (unsigned long long)N << 33, "atomicAdd_system ull", 0);
    EXPECT_EQ(sys->exch_hits, 1, "atomicExch_system", 0);
    EXPECT_EQ(sys->or_, 0xffffffffu, "atomicOr_system", 0);
    EXPECT_EQ(sys->cas, 1000 + N, "atomicCAS_system loop", 0);
    CHECK(cudaFree(dg));
    CHECK(cudaFree(sys));
    return finish();
}
