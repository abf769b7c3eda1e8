// Inline-PTX tensor-core fragments: a 16x8x16 f16 mma.sync (f32
// accumulators) whose A and B fragments come from shared memory through
// ldmatrix (.x4 for A, .x2.trans for B, from row-major tiles with padded
// rows), an s8 m16n8k32 mma with .satfinite, and movmatrix transposing an
// accumulator-shaped 8x8 fragment. The expected fragments are computed on
// the host from the PTX ISA's layouts.
#include "common.cuh"
#include <cuda_fp16.h>
#include <stdint.h>

#define PITCH 24 // halves per shared-memory row: 16 + 8 padding

__global__ void hgemm_tile(const half *a, const half *b, float *d) {
    __shared__ __align__(16) half sa[16 * PITCH];
    __shared__ __align__(16) half sb[16 * PITCH];
    int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) {
        sa[(i / 16) * PITCH + i % 16] = a[i];
        sb[(i / 16) * PITCH + i % 16] = b[i]; // B is 16 (k) x 16 (n), row-major
    }
    __syncwarp();
    // A fragment: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
    int arow = (lane % 16), acol = (lane / 16) * 8;
    uint32_t aaddr = (uint32_t)__cvta_generic_to_shared(&sa[arow * PITCH + acol]);
    uint32_t a0, a1, a2, a3;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(aaddr));
    for (int nt = 0; nt < 2; nt++) {
        // B fragment (k x n, column-major in the fragment): rows k 0-7 and 8-15 of columns nt*8..nt*8+7, transposed.
        int brow = lane % 16;
        uint32_t baddr = (uint32_t)__cvta_generic_to_shared(&sb[brow * PITCH + nt * 8]);
        uint32_t b0, b1;
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(baddr));
        float c0 = 0.5f, c1 = 0.5f, c2 = 0.5f, c3 = 0.5f;
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        int g = lane / 4, t = lane % 4;
        d[g * 16 + nt * 8 + t * 2] = c0;
        d[g * 16 + nt * 8 + t * 2 + 1] = c1;
        d[(g + 8) * 16 + nt * 8 + t * 2] = c2;
        d[(g + 8) * 16 + nt * 8 + t * 2 + 1] = c3;
    }
}

__global__ void imma(const uint32_t *a, const uint32_t *b, const int *c, int *d) {
    int lane = threadIdx.x;
    uint32_t a0 = a[lane * 4], a1 = a[lane * 4 + 1], a2 = a[lane * 4 + 2], a3 = a[lane * 4 + 3];
    uint32_t b0 = b[lane * 2], b1 = b[lane * 2 + 1];
    int c0 = c[lane * 4], c1 = c[lane * 4 + 1], c2 = c[lane * 4 + 2], c3 = c[lane * 4 + 3];
    int d0, d1, d2, d3;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c0), "r"(c1), "r"(c2), "r"(c3));
    d[lane * 4] = d0;
    d[lane * 4 + 1] = d1;
    d[lane * 4 + 2] = d2;
    d[lane * 4 + 3] = d3;
}

__global__ void transpose(const uint32_t *in, uint32_t *out) {
    uint32_t v = in[threadIdx.x], r;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(v));
    out[threadIdx.x] = r;
}

int main() {
    // f16 16x16 tile through ldmatrix and mma.
    half ha[256], hb[256];
    for (int i = 0; i < 256; i++) {
        ha[i] = __int2half_rn((i * 7) % 9 - 4);
        hb[i] = __int2half_rn((i * 5) % 7 - 3);
    }
    half *da, *db;
    float *dd, hd[256];
    CHECK(cudaMalloc(&da, sizeof ha));
    CHECK(cudaMalloc(&db, sizeof hb));
    CHECK(cudaMalloc(&dd, sizeof hd));
    CHECK(cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
    hgemm_tile<<<1, 32>>>(da, db, dd);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hd, dd, sizeof hd, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 16; r++)
        for (int q = 0; q < 16; q++) {
            float s = 0.5f;
            for (int k = 0; k < 16; k++) s += __half2float(ha[r * 16 + k]) * __half2float(hb[k * 16 + q]);
            EXPECT(hd[r * 16 + q] == s, "hgemm D[%d][%d] = %g, expected %g", r, q, hd[r * 16 + q], s);
        }

    // s8 m16n8k32 with saturation: A (16x32), B (32x8) as the ISA lays them out.
    int8_t A[16][32], B[32][8];
    int C[16][8];
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 32; k++) A[r][k] = (int8_t)((r * 37 + k * 11) % 255 - 127);
    for (int k = 0; k < 32; k++)
        for (int q = 0; q < 8; q++) B[k][q] = (int8_t)((k * 13 + q * 29) % 255 - 127);
    for (int r = 0; r < 16; r++)
        for (int q = 0; q < 8; q++) C[r][q] = (r + q) % 3 == 0 ? 2147483647 - 1000 : (r + q) % 3 == 1 ? -2147483647 + 1000 : r * q;
    uint32_t fa[32 * 4], fb[32 * 2];
    int fc[32 * 4], fd[32 * 4];
    for (int lane = 0; lane < 32; lane++) {
        int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 16; i++) {
            int row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
            int col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
            uint32_t byte = (uint8_t)A[row][col];
            if (i % 4 == 0) fa[lane * 4 + i / 4] = 0;
            fa[lane * 4 + i / 4] |= byte << (8 * (i % 4));
        }
        for (int i = 0; i < 8; i++) {
            int row = t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
            uint32_t byte = (uint8_t)B[row][g];
            if (i % 4 == 0) fb[lane * 2 + i / 4] = 0;
            fb[lane * 2 + i / 4] |= byte << (8 * (i % 4));
        }
        for (int i = 0; i < 4; i++) fc[lane * 4 + i] = C[i < 2 ? g : g + 8][t * 2 + (i & 1)];
    }
    uint32_t *dfa, *dfb;
    int *dfc, *dfd;
    CHECK(cudaMalloc(&dfa, sizeof fa));
    CHECK(cudaMalloc(&dfb, sizeof fb));
    CHECK(cudaMalloc(&dfc, sizeof fc));
    CHECK(cudaMalloc(&dfd, sizeof fd));
    CHECK(cudaMemcpy(dfa, fa, sizeof fa, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dfb, fb, sizeof fb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dfc, fc, sizeof fc, cudaMemcpyHostToDevice));
    imma<<<1, 32>>>(dfa, dfb, dfc, dfd);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(fd, dfd, sizeof fd, cudaMemcpyDeviceToHost));
    for (int lane = 0; lane < 32; lane++)
        for (int i = 0; i < 4; i++) {
            int row = i < 2 ? lane / 4 : lane / 4 + 8, col = (lane % 4) * 2 + (i & 1);
            long long s = C[row][col];
            for (int k = 0; k < 32; k++) s += (long long)A[row][k] * B[k][col];
            if (s > 2147483647LL) s = 2147483647LL;
            if (s < -2147483648LL) s = -2147483648LL;
            EXPECT(fd[lane * 4 + i] == (int)s, "imma lane %d d%d = %d, expected %lld", lane, i, fd[lane * 4 + i], s);
        }

    // movmatrix: lane l holds row l/4, columns 2(l%4) and 2(l%4)+1 of an
    // 8x8 b16 matrix; afterwards, the same of its transpose.
    uint32_t tin[32], tout[32];
    for (int l = 0; l < 32; l++) {
        int r = l / 4, c = 2 * (l % 4);
        tin[l] = (uint32_t)(r * 8 + c) | (uint32_t)(r * 8 + c + 1) << 16;
    }
    uint32_t *dti, *dto;
    CHECK(cudaMalloc(&dti, sizeof tin));
    CHECK(cudaMalloc(&dto, sizeof tout));
    CHECK(cudaMemcpy(dti, tin, sizeof tin, cudaMemcpyHostToDevice));
    transpose<<<1, 32>>>(dti, dto);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(tout, dto, sizeof tout, cudaMemcpyDeviceToHost));
    for (int l = 0; l < 32; l++) {
        int r = l / 4, c = 2 * (l % 4);
        uint32_t want = (uint32_t)(c * 8 + r) | (uint32_t)((c + 1) * 8 + r) << 16;
        EXPECT(tout[l] == want, "movmatrix lane %d = %#x, expected %#x", l, tout[l], want);
    }
    return finish();
}
