// Warp votes: __all_sync, __any_sync, __ballot_sync (full and partial member
// masks), __activemask in a partially filled warp, __match_any_sync and
// __match_all_sync on int and long long, __syncthreads_count/_and/_or.
#include "common.cuh"

#define NT 80 // warps of 32, 32 and 16 threads

struct Votes {
    int all_even, any_big, all_pos, any_none;
    unsigned ballot, ballot_partial, active, match_any, match_all, match_all_pred;
    unsigned match_any64, match_all_pred_diff;
    int count, and_, or_;
};

__global__ void votes(Votes *out) {
    int t = threadIdx.x, lane = t % 32;
    Votes v;
    unsigned full = __activemask(); // every existing lane of this warp
    v.active = full;
    v.all_even = __all_sync(full, t % 2 == 0);
    v.any_big = __any_sync(full, t == 70);
    v.all_pos = __all_sync(full, t >= 0);
    v.any_none = __any_sync(full, t < 0);
    v.ballot = __ballot_sync(full, (t % 3) == 0);
    v.ballot_partial = 0;
    if (lane < 8) v.ballot_partial = __ballot_sync(0xff & full, lane & 1);
    v.match_any = __match_any_sync(full, t % 5);
    int pred = 0;
    v.match_all = __match_all_sync(full, t / 32, &pred);
    v.match_all_pred = pred;
    v.match_any64 = __match_any_sync(full, (long long)(t % 3) << 33);
    int pred2 = 1;
    unsigned m = __match_all_sync(full, t, &pred2); // differs unless the warp has 1 lane
    v.match_all_pred_diff = (m << 1) | (unsigned)pred2;
    v.count = __syncthreads_count(t % 4 == 1);
    v.and_ = __syncthreads_and(t < 1000);
    v.or_ = __syncthreads_or(t == 79);
    out[t] = v;
}

int main() {
    Votes *d, h[NT];
    CHECK(cudaMalloc(&d, sizeof h));
    votes<<<1, NT>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int t = 0; t < NT; t++) {
        int warp = t / 32, lane = t % 32, base = warp * 32;
        int nlanes = warp < 2 ? 32 : NT - 64;
        unsigned full = nlanes == 32 ? 0xffffffffu : (1u << nlanes) - 1;
        const Votes &v = h[t];
        EXPECT(v.active == full, "activemask[%d] = %#x want %#x", t, v.active, full);
        EXPECT(v.all_even == 0, "all_even[%d]", t);
        EXPECT((v.any_big != 0) == (warp == 2), "any_big[%d]", t);
        EXPECT(v.all_pos != 0, "all_pos[%d]", t);
        EXPECT(v.any_none == 0, "any_none[%d]", t);
        unsigned ballot = 0, many = 0, m64 = 0;
        for (int l = 0; l < nlanes; l++) {
            if ((base + l) % 3 == 0) ballot |= 1u << l;
            if ((base + l) % 5 == t % 5) many |= 1u << l;
            if ((base + l) % 3 == t % 3) m64 |= 1u << l;
        }
        EXPECT(v.ballot == ballot, "ballot[%d] = %#x want %#x", t, v.ballot, ballot);
        EXPECT(v.ballot_partial == (lane < 8 ? 0xaau : 0u), "ballot_partial[%d] = %#x", t,
               v.ballot_partial);
        EXPECT(v.match_any == many, "match_any[%d] = %#x want %#x", t, v.match_any, many);
        EXPECT(v.match_all == full && v.match_all_pred == 1, "match_all[%d] = %#x pred %u", t,
               v.match_all, v.match_all_pred);
        EXPECT(v.match_any64 == m64, "match_any64[%d] = %#x want %#x", t, v.match_any64, m64);
        EXPECT(v.match_all_pred_diff == 0, "match_all differing[%d] = %#x", t,
               v.match_all_pred_diff);
        EXPECT(v.count == 20, "syncthreads_count[%d] = %d", t, v.count);
        EXPECT(v.and_ != 0, "syncthreads_and[%d]", t);
        EXPECT(v.or_ != 0, "syncthreads_or[%d]", t);
    }
    CHECK(cudaFree(d));
    return finish();
}
