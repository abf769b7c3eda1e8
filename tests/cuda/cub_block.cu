// CUB block- and warp-level primitives: BlockReduce (sum, max, partial
// tile), BlockScan (inclusive/exclusive sum, with block aggregate),
// WarpReduce (sum, and segmented by logical warps of 16), WarpScan,
// BlockLoad/BlockStore with BLOCK_LOAD_TRANSPOSE, BlockRadixSort.
#include "common.cuh"
#include <cub/cub.cuh>
#include <cuda/functional>
#include <algorithm>

#define NT 128
#define IPT 4

__global__ void block_ops(const int *in, int *sum, int *mx, int *partial, int *incl, int *excl,
                          int *agg, int valid) {
    typedef cub::BlockReduce<int, NT> Reduce;
    typedef cub::BlockScan<int, NT> Scan;
    __shared__ typename Reduce::TempStorage rtmp;
    __shared__ typename Scan::TempStorage stmp;
    int t = threadIdx.x, b = blockIdx.x;
    int v = in[b * NT + t];
    int s = Reduce(rtmp).Sum(v);
    __syncthreads();
    int m = Reduce(rtmp).Reduce(v, cuda::maximum<int>{});
    __syncthreads();
    int p = Reduce(rtmp).Sum(v, valid); // only the first `valid` threads
    if (t == 0) { sum[b] = s; mx[b] = m; partial[b] = p; }
    int x, y, total;
    Scan(stmp).InclusiveSum(v, x);
    __syncthreads();
    Scan(stmp).ExclusiveSum(v, y, total);
    incl[b * NT + t] = x;
    excl[b * NT + t] = y;
    if (t == NT - 1) agg[b] = total;
}

__global__ void warp_ops(const int *in, int *wsum, int *hsum, int *wscan) {
    typedef cub::WarpReduce<int> WR;
    typedef cub::WarpReduce<int, 16> WR16;
    typedef cub::WarpScan<int> WS;
    __shared__ typename WR::TempStorage wr[NT / 32];
    __shared__ typename WR16::TempStorage wr16[NT / 16];
    __shared__ typename WS::TempStorage ws[NT / 32];
    int t = threadIdx.x;
    int v = in[t];
    int s = WR(wr[t / 32]).Sum(v);
    int h = WR16(wr16[t / 16]).Sum(v);
    int sc;
    WS(ws[t / 32]).InclusiveSum(v, sc);
    if (t % 32 == 0) wsum[t / 32] = s;
    if (t % 16 == 0) hsum[t / 16] = h;
    wscan[t] = sc;
}

__global__ void sort_block(int *data) {
    typedef cub::BlockLoad<int, NT, IPT, cub::BLOCK_LOAD_TRANSPOSE> Load;
    typedef cub::BlockStore<int, NT, IPT, cub::BLOCK_STORE_TRANSPOSE> Store;
    typedef cub::BlockRadixSort<int, NT, IPT> Sort;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
        typename Sort::TempStorage sort;
    } tmp;
    int items[IPT];
    int *base = data + blockIdx.x * NT * IPT;
    Load(tmp.load).Load(base, items);
    __syncthreads();
    Sort(tmp.sort).Sort(items);
    __syncthreads();
    Store(tmp.store).Store(base, items);
}

int main() {
    const int blocks = 6, n = blocks * NT, valid = 77;
    int h[n];
    for (int i = 0; i < n; i++) h[i] = (i * 7919) % 2001 - 1000;
    int *in, *sum, *mx, *partial, *incl, *excl, *agg;
    CHECK(cudaMalloc(&in, sizeof h));
    CHECK(cudaMalloc(&sum, blocks * sizeof(int)));
    CHECK(cudaMalloc(&mx, blocks * sizeof(int)));
    CHECK(cudaMalloc(&partial, blocks * sizeof(int)));
    CHECK(cudaMalloc(&incl, sizeof h));
    CHECK(cudaMalloc(&excl, sizeof h));
    CHECK(cudaMalloc(&agg, blocks * sizeof(int)));
    CHECK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    block_ops<<<blocks, NT>>>(in, sum, mx, partial, incl, excl, agg, valid);
    CHECK_KERNEL();
    int hsum[blocks], hmx[blocks], hpart[blocks], hincl[n], hexcl[n], hagg[blocks];
    CHECK(cudaMemcpy(hsum, sum, sizeof hsum, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hmx, mx, sizeof hmx, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hpart, partial, sizeof hpart, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hincl, incl, sizeof hincl, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hexcl, excl, sizeof hexcl, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hagg, agg, sizeof hagg, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++) {
        int s = 0, m = -1 << 30, p = 0, run = 0;
        for (int t = 0; t < NT; t++) {
            int v = h[b * NT + t];
            EXPECT_EQ(hexcl[b * NT + t], run, "BlockScan exclusive", b * NT + t);
            run += v;
            EXPECT_EQ(hincl[b * NT + t], run, "BlockScan inclusive", b * NT + t);
            s += v; m = v > m ? v : m;
            if (t < valid) p += v;
        }
        EXPECT_EQ(hsum[b], s, "BlockReduce sum", b);
        EXPECT_EQ(hmx[b], m, "BlockReduce max", b);
        EXPECT_EQ(hpart[b], p, "BlockReduce partial", b);
        EXPECT_EQ(hagg[b], s, "BlockScan aggregate", b);
    }

    int *wsum, *hs16, *wscan, hw[NT / 32], hh[NT / 16], hsc[NT];
    CHECK(cudaMalloc(&wsum, sizeof hw));
    CHECK(cudaMalloc(&hs16, sizeof hh));
    CHECK(cudaMalloc(&wscan, sizeof hsc));
    warp_ops<<<1, NT>>>(in, wsum, hs16, wscan);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hw, wsum, sizeof hw, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hh, hs16, sizeof hh, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hsc, wscan, sizeof hsc, cudaMemcpyDeviceToHost));
    for (int w = 0; w < NT / 32; w++) {
        int s = 0;
        for (int l = 0; l < 32; l++) { s += h[w * 32 + l]; EXPECT_EQ(hsc[w * 32 + l], s, "WarpScan", w * 32 + l); }
        EXPECT_EQ(hw[w], s, "WarpReduce", w);
    }
    for (int w = 0; w < NT / 16; w++) {
        int s = 0;
        for (int l = 0; l < 16; l++) s += h[w * 16 + l];
        EXPECT_EQ(hh[w], s, "WarpReduce<16>", w);
    }

    const int sblocks = 3, sn = sblocks * NT * IPT;
    int hsort[sn], *dsort;
    for (int i = 0; i < sn; i++) hsort[i] = (int)((i * 2654435761u) >> 7) - (1 << 24);
    CHECK(cudaMalloc(&dsort, sizeof hsort));
    CHECK(cudaMemcpy(dsort, hsort, sizeof hsort, cudaMemcpyHostToDevice));
    sort_block<<<sblocks, NT>>>(dsort);
    CHECK_KERNEL();
    int rs[sn];
    CHECK(cudaMemcpy(rs, dsort, sizeof rs, cudaMemcpyDeviceToHost));
    for (int b = 0; b < sblocks; b++) std::sort(hsort + b * NT * IPT, hsort + (b + 1) * NT * IPT);
    for (int i = 0; i < sn; i++) EXPECT_EQ(rs[i], hsort[i], "BlockRadixSort", i);

    CHECK(cudaFree(in)); CHECK(cudaFree(sum)); CHECK(cudaFree(mx)); CHECK(cudaFree(partial));
    CHECK(cudaFree(incl)); CHECK(cudaFree(excl)); CHECK(cudaFree(agg)); CHECK(cudaFree(wsum));
    CHECK(cudaFree(hs16)); CHECK(cudaFree(wscan)); CHECK(cudaFree(dsort));
    return finish();
}
