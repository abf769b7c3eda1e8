// Warp shuffles in every mode: __shfl_sync (broadcast, arbitrary source,
// out-of-range source wraps modulo width), __shfl_up_sync, __shfl_down_sync,
// __shfl_xor_sync, each with width 32, 16, 8 and 4, on int, float, double and
// long long, plus a shuffle with a partial member mask.
#include "common.cuh"

#define NT 128 // 4 warps
#define NCASES 12

__global__ void shuffles(int *out, float *outf, double *outd, long long *outl) {
    int t = threadIdx.x;
    int lane = t % 32;
    int v = t * 10 + 1;
    int widths[4] = {32, 16, 8, 4};
    for (int wi = 0; wi < 4; wi++) {
        int w = widths[wi];
        int *o = out + wi * NCASES * NT;
        o[0 * NT + t] = __shfl_sync(0xffffffff, v, 3, w);                 // broadcast
        o[1 * NT + t] = __shfl_sync(0xffffffff, v, (lane * 7 + 5), w);    // any lane, wraps
        o[2 * NT + t] = __shfl_up_sync(0xffffffff, v, 1, w);
        o[3 * NT + t] = __shfl_up_sync(0xffffffff, v, 3, w);
        o[4 * NT + t] = __shfl_down_sync(0xffffffff, v, 1, w);
        o[5 * NT + t] = __shfl_down_sync(0xffffffff, v, 5, w);
        o[6 * NT + t] = __shfl_xor_sync(0xffffffff, v, 1, w);
        o[7 * NT + t] = __shfl_xor_sync(0xffffffff, v, w - 1, w);
        o[8 * NT + t] = __shfl_xor_sync(0xffffffff, v, 2, w);
        o[9 * NT + t] = __shfl_sync(0xffffffff, v, -1, w);                // negative source
        o[10 * NT + t] = __shfl_down_sync(0xffffffff, v, 0, w);
        o[11 * NT + t] = __shfl_up_sync(0xffffffff, v, w, w);             // delta == width
    }
    outf[t] = __shfl_down_sync(0xffffffff, (float)t * 0.5f, 2);
    outd[t] = __shfl_xor_sync(0xffffffff, (double)t * 0.25 + 1e10, 5);
    outl[t] = __shfl_up_sync(0xffffffff, (long long)t << 40 | 7, 4);
}

// Only the even lanes take part.
__global__ void partial(int *out) {
    int lane = threadIdx.x % 32;
    out[threadIdx.x] = -1;
    if (lane % 2 == 0) {
        int v = threadIdx.x * 3;
        out[threadIdx.x] = __shfl_sync(0x55555555, v, (lane + 2) % 32);
    }
}

static int src_lane(int c, int lane, int w) {
    int base = lane & ~(w - 1), l = lane % w;
    switch (c) {
    case 0: return base + 3 % w;
    case 1: return base + ((lane * 7 + 5) % w);
    case 2: return l >= 1 ? lane - 1 : lane;
    case 3: return l >= 3 ? lane - 3 : lane;
    case 4: return l + 1 < w ? lane + 1 : lane;
    case 5: return l + 5 < w ? lane + 5 : lane;
    case 6: return base + ((l ^ 1) % w);
    case 7: return base + (l ^ (w - 1));
    case 8: return base + ((l ^ 2) % w);
    case 9: return base + ((-1) & (w - 1));
    case 10: return lane;
    case 11: return lane; // delta >= width: own value
    }
    return -1;
}

int main() {
    int *d, *h = new int[4 * NCASES * NT];
    float *df, hf[NT];
    double *dd, hd[NT];
    long long *dl, hl[NT];
    CHECK(cudaMalloc(&d, 4 * NCASES * NT * sizeof(int)));
    CHECK(cudaMalloc(&df, NT * sizeof(float)));
    CHECK(cudaMalloc(&dd, NT * sizeof(double)));
    CHECK(cudaMalloc(&dl, NT * sizeof(long long)));
    shuffles<<<1, NT>>>(d, df, dd, dl);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, d, 4 * NCASES * NT * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hf, df, sizeof hf, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hl, dl, sizeof hl, cudaMemcpyDeviceToHost));
    int widths[4] = {32, 16, 8, 4};
    for (int wi = 0; wi < 4; wi++)
        for (int c = 0; c < NCASES; c++)
            for (int t = 0; t < NT; t++) {
                int warp = t / 32 * 32, lane = t % 32;
                int want = (warp + src_lane(c, lane, widths[wi])) * 10 + 1;
                int got = h[(wi * NCASES + c) * NT + t];
                EXPECT(got == want, "width %d case %d thread %d: got %d want %d", widths[wi], c,
                       t, got, want);
            }
    for (int t = 0; t < NT; t++) {
        int lane = t % 32, w = t / 32 * 32;
        EXPECT(hf[t] == (float)(lane + 2 < 32 ? t + 2 : t) * 0.5f, "float down[%d]", t);
        EXPECT(hd[t] == (double)(w + (lane ^ 5)) * 0.25 + 1e10, "double xor[%d]", t);
        EXPECT(hl[t] == ((long long)(lane >= 4 ? t - 4 : t) << 40 | 7), "long long up[%d]", t);
    }

    int hp[64];
    partial<<<1, 64>>>(d);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hp, d, sizeof hp, cudaMemcpyDeviceToHost));
    for (int t = 0; t < 64; t++) {
        int lane = t % 32;
        int want = lane % 2 == 0 ? (t / 32 * 32 + (lane + 2) % 32) * 3 : -1;
        EXPECT_EQ(hp[t], want, "partial", t);
    }
    CHECK(cudaFree(d)); CHECK(cudaFree(df)); CHECK(cudaFree(dd)); CHECK(cudaFree(dl));
    delete[] h;
    return finish();
}
