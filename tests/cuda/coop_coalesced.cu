// Cooperative groups made of coalesced threads: coalesced_threads() in full
// and partially filled warps, binary_partition and labeled_partition of a
// 32-thread tile (size, rank, shfl, reduce), tiled_partition of a coalesced
// group, and the aggregated-atomic pattern in a divergent branch (one atomic
// per coalesced group, every thread gets a unique slot).
#include "common.cuh"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

#define NT 96

struct Info {
    int all_size, all_rank;
    int bin_size, bin_rank, bin_sum, bin_first;
    int lab_size, lab_rank, lab_max;
    int sub_size, sub_rank;
};

__global__ void partitions(const int *in, Info *info, int *slots, int *counter) {
    int t = threadIdx.x;
    int v = in[t];
    Info o;
    cg::coalesced_group all = cg::coalesced_threads();
    o.all_size = all.size();
    o.all_rank = all.thread_rank();
    cg::coalesced_group sub = cg::tiled_partition(all, 4);
    o.sub_size = sub.size();
    o.sub_rank = sub.thread_rank();

    auto tile = cg::tiled_partition<32>(cg::this_thread_block());
    cg::coalesced_group bin = cg::binary_partition(tile, v % 2 == 1);
    o.bin_size = bin.size();
    o.bin_rank = bin.thread_rank();
    o.bin_sum = cg::reduce(bin, v, cg::plus<int>());
    o.bin_first = bin.shfl(v, 0);
    cg::coalesced_group lab = cg::labeled_partition(tile, v % 3);
    o.lab_size = lab.size();
    o.lab_rank = lab.thread_rank();
    o.lab_max = cg::reduce(lab, v, cg::greater<int>());
    info[t] = o;

    if (v % 4 == 0) {
        cg::coalesced_group g = cg::coalesced_threads();
        int base = 0;
        if (g.thread_rank() == 0) base = atomicAdd(counter, (int)g.size());
        base = g.shfl(base, 0);
        slots[base + g.thread_rank()] = t;
    }
}

__global__ void partial_warp(int *out) {
    cg::coalesced_group all = cg::coalesced_threads();
    cg::coalesced_group sub = cg::tiled_partition(all, 4);
    out[threadIdx.x * 4 + 0] = all.size();
    out[threadIdx.x * 4 + 1] = all.thread_rank();
    out[threadIdx.x * 4 + 2] = sub.size();
    out[threadIdx.x * 4 + 3] = sub.thread_rank();
}

int main() {
    int h[NT];
    for (int i = 0; i < NT; i++) h[i] = (i * 29 + 7) % 64;
    int *d, *slots, *counter;
    Info *dinfo, hinfo[NT];
    // Large enough for the partial-warp test's 40 * 4 results too.
    CHECK(cudaMalloc(&d, 40 * 4 * sizeof(int) > sizeof h ? 40 * 4 * sizeof(int) : sizeof h));
    CHECK(cudaMalloc(&dinfo, sizeof hinfo));
    CHECK(cudaMalloc(&slots, NT * sizeof(int)));
    CHECK(cudaMalloc(&counter, sizeof(int)));
    CHECK(cudaMemset(slots, 0xff, NT * sizeof(int)));
    CHECK(cudaMemset(counter, 0, sizeof(int)));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    partitions<<<1, NT>>>(d, dinfo, slots, counter);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hinfo, dinfo, sizeof hinfo, cudaMemcpyDeviceToHost));
    for (int t = 0; t < NT; t++) {
        const Info &o = hinfo[t];
        int w = t / 32 * 32, lane = t % 32;
        EXPECT_EQ(o.all_size, 32, "coalesced size", t);
        EXPECT_EQ(o.all_rank, lane, "coalesced rank", t);
        EXPECT_EQ(o.sub_size, 4, "tiled coalesced size", t);
        EXPECT_EQ(o.sub_rank, lane % 4, "tiled coalesced rank", t);
        int bsize = 0, brank = 0, bsum = 0, bfirst = -1, lsize = 0, lrank = 0, lmax = -1;
        for (int l = 0; l < 32; l++) {
            int u = h[w + l];
            if (u % 2 == h[t] % 2) {
                if (bfirst < 0) bfirst = u;
                bsize++; bsum += u;
                if (l < lane) brank++;
            }
            if (u % 3 == h[t] % 3) {
                lsize++; lmax = u > lmax ? u : lmax;
                if (l < lane) lrank++;
            }
        }
        EXPECT_EQ(o.bin_size, bsize, "binary_partition size", t);
        EXPECT_EQ(o.bin_rank, brank, "binary_partition rank", t);
        EXPECT_EQ(o.bin_sum, bsum, "binary_partition sum", t);
        EXPECT_EQ(o.bin_first, bfirst, "binary_partition shfl(0)", t);
        EXPECT_EQ(o.lab_size, lsize, "labeled_partition size", t);
        EXPECT_EQ(o.lab_rank, lrank, "labeled_partition rank", t);
        EXPECT_EQ(o.lab_max, lmax, "labeled_partition max", t);
    }
    int hslots[NT], hcount;
    CHECK(cudaMemcpy(hslots, slots, sizeof hslots, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hcount, counter, sizeof hcount, cudaMemcpyDeviceToHost));
    int want = 0;
    bool seen[NT] = {};
    for (int t = 0; t < NT; t++) want += h[t] % 4 == 0;
    EXPECT_EQ(hcount, want, "aggregated counter", 0);
    for (int s = 0; s < NT; s++) {
        if (s < want) {
            int t = hslots[s];
            EXPECT(t >= 0 && t < NT && h[t] % 4 == 0 && !seen[t], "slot %d holds %d", s, t);
            if (t >= 0 && t < NT) seen[t] = true;
        } else {
            EXPECT_EQ(hslots[s], -1, "unused slot", s);
        }
    }

    int hp[40 * 4];
    partial_warp<<<1, 40>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hp, d, sizeof hp, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 40; t++) {
        int lane = t % 32, size = t < 32 ? 32 : 8;
        EXPECT_EQ(hp[t * 4 + 0], size, "partial warp size", t);
        EXPECT_EQ(hp[t * 4 + 1], lane, "partial warp rank", t);
        EXPECT_EQ(hp[t * 4 + 2], 4, "partial warp tile size", t);
        EXPECT_EQ(hp[t * 4 + 3], lane % 4, "partial warp tile rank", t);
    }
    CHECK(cudaFree(d)); CHECK(cudaFree(dinfo)); CHECK(cudaFree(slots)); CHECK(cudaFree(counter));
    return finish();
}
