// Inline PTX (asm volatile): %laneid, lane masks (%lanemask_lt/_ge),
// prmt (byte permute, with sign replication), lop3 (three-input logic
// with an immediate truth table), bfe/bfi (bit-field extract/insert, signed
// and unsigned), add.cc/addc (64-bit add from 32-bit halves), a predicate.
#include "common.cuh"

struct Out {
    unsigned lane, lt, ge;
    unsigned prmt1, prmt2, lop_xor3, lop_maj, lop_sel;
    unsigned bfe_u;
    int bfe_s;
    unsigned bfi;
    unsigned long long wide;
    unsigned pred;
};

__global__ void ptx(const unsigned *a, const unsigned *b, const unsigned *c, Out *out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[t], y = b[t], z = c[t];
    Out o;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(o.lane));
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(o.lt));
    asm volatile("mov.u32 %0, %%lanemask_ge;" : "=r"(o.ge));
    asm volatile("prmt.b32 %0, %1, %2, 0x3210;" : "=r"(o.prmt1) : "r"(x), "r"(y));   // identity
    asm volatile("prmt.b32 %0, %1, %2, 0x4C85;" : "=r"(o.prmt2) : "r"(x), "r"(y));   // mixed, sign
    asm volatile("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(o.lop_xor3) : "r"(x), "r"(y), "r"(z));
    asm volatile("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(o.lop_maj) : "r"(x), "r"(y), "r"(z));
    asm volatile("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(o.lop_sel) : "r"(x), "r"(y), "r"(z));
    unsigned pos = z % 32, len = (y % 33);
    asm volatile("bfe.u32 %0, %1, %2, %3;" : "=r"(o.bfe_u) : "r"(x), "r"(pos), "r"(len));
    asm volatile("bfe.s32 %0, %1, %2, %3;" : "=r"(o.bfe_s) : "r"((int)x), "r"(pos), "r"(len));
    asm volatile("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(o.bfi) : "r"(y), "r"(x), "r"(pos), "r"(len));
    unsigned lo, hi;
    asm volatile("add.cc.u32 %0, %2, %3;\n\t"
                 "addc.u32 %1, %4, %5;"
                 : "=r"(lo), "=r"(hi)
                 : "r"(x), "r"(y), "r"(z), "r"(t));
    o.wide = ((unsigned long long)hi << 32) | lo;
    asm volatile("{\n\t"
                 ".reg .pred p;\n\t"
                 "setp.gt.u32 p, %1, %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t"
                 "}"
                 : "=r"(o.pred)
                 : "r"(x), "r"(y));
    out[t] = o;
}

static unsigned prmt(unsigned a, unsigned b, unsigned sel) {
    unsigned char bytes[8];
    for (int i = 0; i < 4; i++) { bytes[i] = (a >> (8 * i)) & 0xff; bytes[4 + i] = (b >> (8 * i)) & 0xff; }
    unsigned r = 0;
    for (int i = 0; i < 4; i++) {
        unsigned s = (sel >> (4 * i)) & 0xf;
        unsigned char v = bytes[s & 7];
        if (s & 8) v = (v & 0x80) ? 0xff : 0x00; // sign replicate
        r |= (unsigned)v << (8 * i);
    }
    return r;
}

static unsigned lop3(unsigned a, unsigned b, unsigned c, unsigned lut) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) {
        unsigned idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1);
        r |= ((lut >> idx) & 1) << i;
    }
    return r;
}

static unsigned bfe_u(unsigned x, unsigned pos, unsigned len) {
    unsigned r = 0;
    for (unsigned i = 0; i < len; i++) {
        unsigned bit = pos + i < 32 ? (x >> (pos + i)) & 1 : 0;
        r |= bit << i;
    }
    return r;
}

static int bfe_s(unsigned x, unsigned pos, unsigned len) {
    if (len == 0) return 0;
    unsigned sbit = (pos + len - 1 < 32) ? (x >> (pos + len - 1)) & 1 : (x >> 31) & 1;
    unsigned r = 0;
    for (unsigned i = 0; i < 32; i++) {
        unsigned bit = i < len ? (pos + i < 32 ? (x >> (pos + i)) & 1 : (x >> 31) & 1) : sbit;
        r |= bit << i;
    }
    return (int)r;
}

static unsigned bfi(unsigned f, unsigned base, unsigned pos, unsigned len) {
    unsigned r = base;
    for (unsigned i = 0; i < len && pos + i < 32; i++) {
        unsigned bit = (f >> i) & 1;
        r = (r & ~(1u << (pos + i))) | (bit << (pos + i));
    }
    return r;
}

int main() {
    const int n = 256;
    unsigned ha[n], hb[n], hc[n];
    unsigned s = 99;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u; ha[i] = s;
        s = s * 1664525u + 1013904223u; hb[i] = s;
        s = s * 1664525u + 1013904223u; hc[i] = s;
    }
    ha[0] = 0x00000f00u; hb[0] = 4; hc[0] = 8; // field 0xf at bit 8: sign-extends to -1
    unsigned *a, *b, *c;
    Out *out, *ho = new Out[n];
    CHECK(cudaMalloc(&a, sizeof ha));
    CHECK(cudaMalloc(&b, sizeof hb));
    CHECK(cudaMalloc(&c, sizeof hc));
    CHECK(cudaMalloc(&out, n * sizeof(Out)));
    CHECK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(c, hc, sizeof hc, cudaMemcpyHostToDevice));
    ptx<<<n / 64, 64>>>(a, b, c, out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(ho, out, n * sizeof(Out), cudaMemcpyDeviceToHost));
    for (int t = 0; t < n; t++) {
        const Out &o = ho[t];
        unsigned x = ha[t], y = hb[t], z = hc[t], lane = t % 32;
        unsigned pos = z % 32, len = y % 33;
        EXPECT_EQ(o.lane, lane, "laneid", t);
        EXPECT_EQ(o.lt, (1u << lane) - 1, "lanemask_lt", t);
        EXPECT_EQ(o.ge, ~((1u << lane) - 1), "lanemask_ge", t);
        EXPECT_EQ(o.prmt1, x, "prmt identity", t);
        EXPECT_EQ(o.prmt2, prmt(x, y, 0x4C85), "prmt", t);
        EXPECT_EQ(o.lop_xor3, x ^ y ^ z, "lop3 0x96", t);
        EXPECT_EQ(o.lop_maj, (x & y) | (x & z) | (y & z), "lop3 0xE8", t);
        EXPECT_EQ(o.lop_sel, (x & y) | (~x & z), "lop3 0xCA", t);
        EXPECT_EQ(o.lop_maj, lop3(x, y, z, 0xE8), "lop3 model", t);
        EXPECT_EQ(o.bfe_u, bfe_u(x, pos, len), "bfe.u32", t);
        EXPECT_EQ(o.bfe_s, bfe_s(x, pos, len), "bfe.s32", t);
        EXPECT_EQ(o.bfi, bfi(y, x, pos, len), "bfi.b32", t);
        unsigned lo = x + y, carry = lo < x;
        unsigned hi = z + (unsigned)t + carry;
        EXPECT_EQ(o.wide, ((unsigned long long)hi << 32) | lo, "add.cc/addc", t);
        EXPECT_EQ(o.pred, x > y ? 1u : 0u, "setp/selp", t);
    }
    EXPECT_EQ(ho[0].bfe_s, -1, "bfe.s32 sign", 0);
    EXPECT_EQ(ho[0].bfe_u, 15u, "bfe.u32 field", 0);
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c)); CHECK(cudaFree(out));
    delete[] ho;
    return finish();
}
