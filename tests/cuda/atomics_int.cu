// 32-bit integer atomics on int and unsigned, global and shared memory:
// atomicAdd, atomicSub, atomicExch, atomicMin, atomicMax, atomicInc, atomicDec,
// atomicCAS, atomicAnd, atomicOr, atomicXor, with many threads hitting the
// same address; results checked against the order-independent final value
// and, where the return values are a permutation, against that too.
#include "common.cuh"

#define BLOCKS 8
#define NT 256
#define N (BLOCKS * NT)

struct Slots {
    int add, sub, mn, mx, and_, or_, xor_, cas_count;
    unsigned uadd, umin, umax, inc, dec, uand, uor, uxor;
    int exch;
    int shared_sum, shared_min, shared_max;
};

__global__ void atomics(Slots *s, int *add_ret, unsigned *inc_ret, int *exch_seen) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __shared__ int ssum, smin, smax;
    if (threadIdx.x == 0) { ssum = 0; smin = 1 << 30; smax = -(1 << 30); }
    __syncthreads();
    int v = (i * 7919) % 1000 - 500;
    add_ret[i] = atomicAdd(&s->add, 3);
    atomicSub(&s->sub, i);
    atomicMin(&s->mn, v);
    atomicMax(&s->mx, v);
    atomicAnd(&s->and_, ~(1 << (i % 31)));
    atomicOr(&s->or_, 1 << (i % 23));
    atomicXor(&s->xor_, (int)((unsigned)i * 0x01010101u));
    atomicAdd(&s->uadd, (unsigned)i);
    atomicMin(&s->umin, (unsigned)(i + 17));
    atomicMax(&s->umax, (unsigned)i * 3u);
    inc_ret[i] = atomicInc(&s->inc, 99u);   // wraps to 0 after 99
    atomicDec(&s->dec, 999u);               // wraps to 999 at 0
    atomicAnd(&s->uand, 0xffffffffu ^ (1u << (i % 32)) ^ 0x80000000u);
    atomicOr(&s->uor, (unsigned)i << 8);
    atomicXor(&s->uxor, (unsigned)i);
    exch_seen[i] = atomicExch(&s->exch, i);
    // CAS loop: increment by 2 through compare-and-swap.
    int old = s->cas_count, assumed;
    do {
        assumed = old;
        old = atomicCAS(&s->cas_count, assumed, assumed + 2);
    } while (old != assumed);
    atomicAdd(&ssum, v);
    atomicMin(&smin, v);
    atomicMax(&smax, v);
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(&s->shared_sum, ssum);
        atomicMin(&s->shared_min, smin);
        atomicMax(&s->shared_max, smax);
    }
}

int main() {
    Slots init = {};
    init.add = 10; init.sub = 0; init.mn = 1 << 30; init.mx = -(1 << 30);
    init.and_ = -1; init.or_ = 0; init.xor_ = 0x5a5a5a5a;
    init.uadd = 0; init.umin = ~0u; init.umax = 0; init.inc = 0; init.dec = 5;
    init.uand = ~0u; init.uor = 0; init.uxor = 0; init.exch = -1; init.cas_count = 1;
    init.shared_sum = 0; init.shared_min = 1 << 30; init.shared_max = -(1 << 30);
    Slots *ds, h;
    int *add_ret, *exch_seen;
    unsigned *inc_ret;
    CHECK(cudaMalloc(&ds, sizeof(Slots)));
    CHECK(cudaMalloc(&add_ret, N * sizeof(int)));
    CHECK(cudaMalloc(&inc_ret, N * sizeof(unsigned)));
    CHECK(cudaMalloc(&exch_seen, N * sizeof(int)));
    CHECK(cudaMemcpy(ds, &init, sizeof init, cudaMemcpyHostToDevice));
    atomics<<<BLOCKS, NT>>>(ds, add_ret, inc_ret, exch_seen);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(&h, ds, sizeof h, cudaMemcpyDeviceToHost));
    int *hadd = new int[N], *hexch = new int[N];
    unsigned *hinc = new unsigned[N];
    CHECK(cudaMemcpy(hadd, add_ret, N * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hinc, inc_ret, N * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hexch, exch_seen, N * sizeof(int), cudaMemcpyDeviceToHost));

    int sub = 0, mn = 1 << 30, mx = -(1 << 30), and_ = -1, or_ = 0, xor_ = 0x5a5a5a5a, vsum = 0;
    unsigned uadd = 0, umin = ~0u, umax = 0, uand = ~0u, uor = 0, uxor = 0;
    for (int i = 0; i < N; i++) {
        int v = (i * 7919) % 1000 - 500;
        sub -= i; vsum += v;
        mn = v < mn ? v : mn; mx = v > mx ? v : mx;
        and_ &= ~(1 << (i % 31)); or_ |= 1 << (i % 23); xor_ ^= (int)((unsigned)i * 0x01010101u);
        uadd += i;
        umin = (unsigned)(i + 17) < umin ? i + 17 : umin;
        umax = (unsigned)i * 3u > umax ? i * 3u : umax;
        uand &= 0xffffffffu ^ (1u << (i % 32)) ^ 0x80000000u;
        uor |= (unsigned)i << 8; uxor ^= (unsigned)i;
    }
    EXPECT_EQ(h.add, 10 + 3 * N, "add", 0);
    EXPECT_EQ(h.sub, sub, "sub", 0);
    EXPECT_EQ(h.mn, mn, "min", 0);
    EXPECT_EQ(h.mx, mx, "max", 0);
    EXPECT_EQ(h.and_, and_, "and", 0);
    EXPECT_EQ(h.or_, or_, "or", 0);
    EXPECT_EQ(h.xor_, xor_, "xor", 0);
    EXPECT_EQ(h.uadd, uadd, "unsigned add", 0);
    EXPECT_EQ(h.umin, umin, "unsigned min", 0);
    EXPECT_EQ(h.umax, umax, "unsigned max", 0);
    EXPECT_EQ(h.inc, (unsigned)(N % 100), "inc", 0);
    // dec: 5 -> 0 after 5 steps, then wraps to 999 and counts down
    EXPECT_EQ(h.dec, (unsigned)(999 - ((N - 6) % 1000)), "dec", 0);
    EXPECT_EQ(h.uand, uand, "unsigned and", 0);
    EXPECT_EQ(h.uor, uor, "unsigned or", 0);
    EXPECT_EQ(h.uxor, uxor, "unsigned xor", 0);
    EXPECT_EQ(h.cas_count, 1 + 2 * N, "cas loop", 0);
    EXPECT_EQ(h.shared_sum, vsum, "shared add", 0);
    EXPECT_EQ(h.shared_min, mn, "shared min", 0);
    EXPECT_EQ(h.shared_max, mx, "shared max", 0);
    // atomicAdd returned every old value exactly once: 10, 13, ..., 10 + 3(N-1)
    bool *seen = new bool[N]();
    for (int i = 0; i < N; i++) {
        int k = (hadd[i] - 10) / 3;
        EXPECT(hadd[i] >= 10 && (hadd[i] - 10) % 3 == 0 && k < N && !seen[k],
               "atomicAdd old value %d (thread %d)", hadd[i], i);
        if (k >= 0 && k < N) seen[k] = true;
    }
    // atomicInc returned each of 0..99 exactly N/100 or N/100+1 times
    int counts[100] = {};
    for (int i = 0; i < N; i++) {
        EXPECT(hinc[i] < 100, "atomicInc old value %u", hinc[i]);
        if (hinc[i] < 100) counts[hinc[i]]++;
    }
    for (int k = 0; k < 100; k++) EXPECT_EQ(counts[k], N / 100 + (k < N % 100), "inc count", k);
    // atomicExch: the old values are -1 and all thread ids but the final one
    int missing = -2, minus_one = 0;
    bool *ex = new bool[N]();
    for (int i = 0; i < N; i++) {
        if (hexch[i] == -1) minus_one++;
        else if (hexch[i] >= 0 && hexch[i] < N) {
            EXPECT(!ex[hexch[i]], "atomicExch returned %d twice", hexch[i]);
            ex[hexch[i]] = true;
        } else EXPECT(false, "atomicExch returned %d", hexch[i]);
    }
    for (int i = 0; i < N; i++) if (!ex[i]) missing = i;
    EXPECT_EQ(minus_one, 1, "atomicExch initial value seen", 0);
    EXPECT_EQ(h.exch, missing, "atomicExch final value", 0);
    CHECK(cudaFree(ds)); CHECK(cudaFree(add_ret)); CHECK(cudaFree(inc_ret)); CHECK(cudaFree(exch_seen));
    delete[] hadd; delete[] hexch; delete[] hinc; delete[] seen; delete[] ex;
    return finish();
}
