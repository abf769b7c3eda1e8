// Cooperative groups inside a block: this_thread_block (rank, size, sync,
// group_index/thread_index), tiled_partition with static sizes 32/16/8/4/2
// and a dynamic size (8), tile shuffles and votes, cg::reduce with plus/greater
// and bit_and, cg::inclusive_scan/exclusive_scan, meta_group_rank/size.
#include "common.cuh"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

#define NT 256

struct Out {
    unsigned block_rank, block_size, tidx;
    int sum32, sum16, max8, and4, sum2;
    int shfl16, down8, any4, ballot32;
    int dyn_sum, dyn_rank, dyn_size;
    int meta_rank16, meta_size16;
    int incl32, excl8;
    int block_total;
};

template <unsigned N, typename Parent>
__device__ int tile_sum(cg::thread_block_tile<N, Parent> t, int v) {
    for (unsigned off = N / 2; off > 0; off /= 2) v += t.shfl_down(v, off);
    return t.shfl(v, 0);
}

__global__ void groups(const int *in, Out *out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ int total;
    unsigned r = block.thread_rank();
    int v = in[blockIdx.x * NT + r];
    Out o;
    o.block_rank = r;
    o.block_size = block.size();
    o.tidx = block.thread_index().x + 1000 * block.group_index().x;
    if (r == 0) total = 0;
    block.sync();
    atomicAdd(&total, v);
    block.sync();
    o.block_total = total;

    auto t32 = cg::tiled_partition<32>(block);
    auto t16 = cg::tiled_partition<16>(block);
    auto t8 = cg::tiled_partition<8>(block);
    auto t4 = cg::tiled_partition<4>(block);
    auto t2 = cg::tiled_partition<2>(block);
    o.sum32 = tile_sum(t32, v);
    o.sum16 = cg::reduce(t16, v, cg::plus<int>());
    o.max8 = cg::reduce(t8, v, cg::greater<int>());
    o.and4 = cg::reduce(t4, v | 0x1000, cg::bit_and<int>());
    o.sum2 = tile_sum(t2, v);
    o.shfl16 = t16.shfl(v, 15 - t16.thread_rank());
    o.down8 = t8.shfl_down(v, 3);
    o.any4 = t4.any(v > 90);
    o.ballot32 = (int)t32.ballot(v % 2 == 0);
    o.meta_rank16 = t16.meta_group_rank();
    o.meta_size16 = t16.meta_group_size();
    o.incl32 = cg::inclusive_scan(t32, v);
    o.excl8 = cg::exclusive_scan(t8, v);

    cg::thread_group dyn = cg::tiled_partition(block, 8); // dynamic partition (<= 32)
    __shared__ int dyn_sums[NT / 8];
    if (dyn.thread_rank() == 0) dyn_sums[r / 8] = 0;
    dyn.sync();
    atomicAdd(&dyn_sums[r / 8], v);
    dyn.sync();
    o.dyn_sum = dyn_sums[r / 8];
    o.dyn_rank = dyn.thread_rank();
    o.dyn_size = dyn.size();
    out[blockIdx.x * NT + r] = o;
}

int main() {
    const int nblocks = 3, n = nblocks * NT;
    int *h = new int[n];
    for (int i = 0; i < n; i++) h[i] = (i * 37 + 11) % 100;
    int *d;
    Out *dout, *hout = new Out[n];
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(Out)));
    CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    groups<<<nblocks, NT>>>(d, dout);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, dout, n * sizeof(Out), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        const Out &o = hout[i];
        int b = i / NT, r = i % NT;
        auto seg = [&](int size, auto f, int init) {
            int base = i / size * size, acc = init;
            for (int k = 0; k < size; k++) acc = f(acc, h[base + k]);
            return acc;
        };
        auto add = [](int a, int x) { return a + x; };
        EXPECT_EQ(o.block_rank, (unsigned)r, "block_rank", i);
        EXPECT_EQ(o.block_size, (unsigned)NT, "block_size", i);
        EXPECT_EQ(o.tidx, (unsigned)(r + 1000 * b), "thread_index", i);
        EXPECT_EQ(o.block_total, seg(NT, add, 0), "block_total", i);
        EXPECT_EQ(o.sum32, seg(32, add, 0), "sum32", i);
        EXPECT_EQ(o.sum16, seg(16, add, 0), "sum16", i);
        EXPECT_EQ(o.max8, seg(8, [](int a, int x) { return x > a ? x : a; }, -1), "max8", i);
        EXPECT_EQ(o.and4, seg(4, [](int a, int x) { return a & (x | 0x1000); }, -1), "and4", i);
        EXPECT_EQ(o.sum2, seg(2, add, 0), "sum2", i);
        EXPECT_EQ(o.shfl16, h[i / 16 * 16 + 15 - i % 16], "shfl16", i);
        EXPECT_EQ(o.down8, (i % 8 + 3 < 8) ? h[i + 3] : h[i], "down8", i);
        EXPECT_EQ(o.any4 != 0, seg(4, [](int a, int x) { return a | (x > 90); }, 0) != 0, "any4", i);
        unsigned ballot = 0;
        for (int k = 0; k < 32; k++) ballot |= (unsigned)(h[i / 32 * 32 + k] % 2 == 0) << k;
        EXPECT_EQ((unsigned)o.ballot32, ballot, "ballot32", i);
        EXPECT_EQ(o.meta_rank16, r / 16, "meta_group_rank", i);
        EXPECT_EQ(o.meta_size16, NT / 16, "meta_group_size", i);
        int incl = 0, excl = 0;
        for (int k = i / 32 * 32; k <= i; k++) incl += h[k];
        for (int k = i / 8 * 8; k < i; k++) excl += h[k];
        EXPECT_EQ(o.incl32, incl, "inclusive_scan32", i);
        EXPECT_EQ(o.excl8, excl, "exclusive_scan8", i);
        EXPECT_EQ(o.dyn_sum, seg(8, add, 0), "dynamic tile sum", i);
        EXPECT_EQ(o.dyn_rank, r % 8, "dynamic tile rank", i);
        EXPECT_EQ(o.dyn_size, 8, "dynamic tile size", i);
    }
    CHECK(cudaFree(d)); CHECK(cudaFree(dout));
    delete[] h; delete[] hout;
    return finish();
}
