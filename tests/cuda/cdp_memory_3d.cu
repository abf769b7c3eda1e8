// The 3-D device-side memory operations of dynamic parallelism (CDP2):
// cudaMemcpy3DAsync (its parameters through a pointer to a
// cudaMemcpy3DParms in the thread's memory) and cudaMemset3DAsync (a
// cudaPitchedPtr and a cudaExtent passed by value), device to device, in
// stream order with the kernels the same thread launches into the stream:
// the copy made after a child launch copies what the child wrote. Source
// and destination positions, pitches and slice heights all differ. Errors:
// a host copy kind (cudaErrorInvalidMemcpyDirection), a row that does not
// fit its pitch or rows that do not fit their slice (cudaErrorInvalidValue),
// a NULL parameter pointer and a CUDA array operand (cudaErrorInvalidValue);
// an empty extent does nothing and succeeds, and one slice needs no height.
//@ nvcc-flags: -rdc=true
//@ variants: shared
#include "common.cuh"

// The source volume: 24 bytes x 6 rows x 4 slices; the destination 40 x 9 x 5.
const int SW = 24, SH = 6, SD = 4;
const int DW = 40, DH = 9, DD = 5;
// The copy: from (2, 1, 1) to (5, 2, 0), 10 bytes x 4 rows x 2 slices.
const int CX = 2, CY = 1, CZ = 1, TX = 5, TY = 2, TZ = 0, CW = 10, CH = 4, CDEPTH = 2;
// The memset: 7 bytes x 3 rows x 3 slices of 0x5a at the start of a third volume.
const int MW = 7, MH = 3, MD = 3;
const int NCODES = 11;

__device__ __host__ unsigned char pattern(int x, int y, int z) { return (unsigned char)(1 + x + 7 * y + 53 * z); }

// make_cudaExtent and make_cudaPos are host functions.
__device__ cudaExtent extent(size_t w, size_t h, size_t d) {
    cudaExtent e;
    e.width = w;
    e.height = h;
    e.depth = d;
    return e;
}
__device__ cudaPos pos(size_t x, size_t y, size_t z) {
    cudaPos p;
    p.x = x;
    p.y = y;
    p.z = z;
    return p;
}

// Writes the pattern into the source volume (each byte of each row).
__global__ void init(cudaPitchedPtr p) {
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    ((unsigned char *)p.ptr)[(z * p.ysize + y) * p.pitch + x] = pattern(x, y, z);
}

__global__ void parent(cudaPitchedPtr src, cudaPitchedPtr dst, cudaPitchedPtr set, int *codes) {
    cudaStream_t s;
    codes[0] = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    init<<<dim3(SH, SD), SW, 0, s>>>(src);
    // After the child in stream order: copies what it wrote.
    cudaMemcpy3DParms p = {0};
    p.srcPtr = src;
    p.srcPos = pos(CX, CY, CZ);
    p.dstPtr = dst;
    p.dstPos = pos(TX, TY, TZ);
    p.extent = extent(CW, CH, CDEPTH);
    p.kind = cudaMemcpyDeviceToDevice;
    codes[1] = cudaMemcpy3DAsync(&p, s);
    codes[2] = cudaMemset3DAsync(set, 0x5a, extent(MW, MH, MD), s);

    // Refused, and nothing happens.
    cudaMemcpy3DParms bad = p;
    bad.kind = cudaMemcpyHostToDevice;
    codes[3] = cudaMemcpy3DAsync(&bad, s);
    bad = p;
    bad.dstPos = pos(dst.pitch - CW + 1, 0, 0);  // the row runs past the pitch
    codes[4] = cudaMemcpy3DAsync(&bad, s);
    bad = p;
    bad.srcPtr.ysize = CY + CH - 1;  // the rows run past the slice
    codes[5] = cudaMemcpy3DAsync(&bad, s);
    cudaPitchedPtr short_set = set;
    short_set.ysize = MH - 1;
    codes[6] = cudaMemset3DAsync(short_set, 0, extent(MW, MH, MD), s);
    codes[7] = cudaMemcpy3DAsync(nullptr, s);
    bad = p;
    bad.srcArray = (cudaArray_t)src.ptr;
    codes[8] = cudaMemcpy3DAsync(&bad, s);
    // Accepted: an empty extent, and one slice with no height given (a 2-D
    // memset through the 3-D call; it writes 0x5a again, where the 3-D
    // memset already did).
    bad = p;
    bad.extent = extent(0, CH, CDEPTH);
    codes[9] = cudaMemcpy3DAsync(&bad, s);
    short_set.ysize = 0;
    codes[10] = cudaMemset3DAsync(short_set, 0x5a, extent(MW, MH, 1), s);
    cudaStreamDestroy(s);
}

int main() {
    cudaPitchedPtr src, dst, set;
    CHECK(cudaMalloc3D(&src, make_cudaExtent(SW, SH, SD)));
    CHECK(cudaMalloc3D(&dst, make_cudaExtent(DW, DH, DD)));
    CHECK(cudaMalloc3D(&set, make_cudaExtent(DW, DH, DD)));
    size_t src_bytes = src.pitch * SH * SD, dst_bytes = dst.pitch * DH * DD, set_bytes = set.pitch * DH * DD;
    CHECK(cudaMemset(src.ptr, 0, src_bytes));
    CHECK(cudaMemset(dst.ptr, 0x11, dst_bytes));
    CHECK(cudaMemset(set.ptr, 0x22, set_bytes));
    int *codes;
    CHECK(cudaMalloc(&codes, NCODES * sizeof(int)));
    CHECK(cudaMemset(codes, 0xff, NCODES * sizeof(int)));
    parent<<<1, 1>>>(src, dst, set, codes);
    CHECK_KERNEL();

    int h_codes[NCODES];
    CHECK(cudaMemcpy(h_codes, codes, sizeof h_codes, cudaMemcpyDeviceToHost));
    const int want[NCODES] = {cudaSuccess,      cudaSuccess,      cudaSuccess,      cudaErrorInvalidMemcpyDirection,
                              cudaErrorInvalidValue, cudaErrorInvalidValue, cudaErrorInvalidValue, cudaErrorInvalidValue,
                              cudaErrorInvalidValue, cudaSuccess,      cudaSuccess};
    for (int i = 0; i < NCODES; i++) EXPECT_EQ(h_codes[i], want[i], "device-side return code", i);

    unsigned char *h_dst = (unsigned char *)malloc(dst_bytes), *h_set = (unsigned char *)malloc(set_bytes);
    CHECK(cudaMemcpy(h_dst, dst.ptr, dst_bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(h_set, set.ptr, set_bytes, cudaMemcpyDeviceToHost));
    for (int z = 0; z < DD; z++)
        for (int y = 0; y < DH; y++)
            for (int x = 0; x < (int)dst.pitch; x++) {
                size_t at = (z * DH + y) * dst.pitch + x;
                int cx = x - TX, cy = y - TY, cz = z - TZ;
                bool copied = cx >= 0 && cx < CW && cy >= 0 && cy < CH && cz >= 0 && cz < CDEPTH;
                int want_dst = copied ? pattern(CX + cx, CY + cy, CZ + cz) : 0x11;
                EXPECT_EQ((int)h_dst[at], want_dst, "destination byte of the 3-D copy", (int)at);
            }
    for (int z = 0; z < DD; z++)
        for (int y = 0; y < DH; y++)
            for (int x = 0; x < (int)set.pitch; x++) {
                size_t at = (z * DH + y) * set.pitch + x;
                bool set_here = x < MW && y < MH && z < MD;
                EXPECT_EQ((int)h_set[at], set_here ? 0x5a : 0x22, "byte of the 3-D memset's volume", (int)at);
            }
    free(h_dst);
    free(h_set);
    return finish();
}
