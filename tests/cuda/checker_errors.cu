// Kernels with the errors of anycuda's initcheck and racecheck
// (ANYCUDA_MEMCHECK=initcheck,racecheck; `anycuda memcheck --tool initcheck
// --tool racecheck -- PROGRAM`). Run without an argument, every kernel is
// used correctly and the results are checked (the tools must report
// nothing). Run with one of uninit, copy_back, race, the program makes that
// error; the tools report it on stderr and the launch goes on, as
// compute-sanitizer's do, so the program still checks what it can and
// passes; the harness (crates/libcuda/tests/programs.rs) checks the report.
// Built with -lineinfo so the PTX carries .loc lines.
//@ nvcc-flags: -lineinfo
#include "common.cuh"

__global__ void sum_into(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, in[i]); // LINE_READ
}

// Thread t writes tile[t]; thread t then reads its neighbour's element,
// after a barrier when `sync` is set, and with no barrier otherwise.
__global__ void rotate(int *out, int sync) {
    __shared__ int tile[64];
    int t = threadIdx.x;
    tile[t] = t * 3; // LINE_WRITE
    if (sync) __syncthreads();
    out[t] = tile[(t + 1) % 64]; // LINE_NEIGHBOUR
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "none";
    const int n = 64;
    int *in, *sum, *out;
    CHECK(cudaMalloc(&in, n * sizeof(int)));
    CHECK(cudaMalloc(&sum, sizeof(int)));
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    int h[n];
    for (int i = 0; i < n; i++) h[i] = i;
    // The last element is written only when no error is asked for.
    int written = strcmp(mode, "uninit") ? n : n - 1;
    CHECK(cudaMemcpy(in, h, written * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(sum, 0, sizeof(int)));
    sum_into<<<2, 32>>>(in, sum, n);
    CHECK_KERNEL();
    int s = 0;
    CHECK(cudaMemcpy(&s, sum, sizeof s, cudaMemcpyDeviceToHost));
    if (written == n && s != n * (n - 1) / 2) {
        printf("sum %d, want %d\n", s, n * (n - 1) / 2);
        g_failures++;
    }
    int sync = strcmp(mode, "race") ? 1 : 0;
    rotate<<<1, n>>>(out, sync);
    CHECK_KERNEL();
    int r[n];
    if (!strcmp(mode, "copy_back")) {
        // Twice the bytes the kernel wrote: the second half was never written.
        int *wide;
        CHECK(cudaMalloc(&wide, 2 * n * sizeof(int)));
        CHECK(cudaMemcpy(wide, out, n * sizeof(int), cudaMemcpyDeviceToDevice));
        int w[2 * n];
        CHECK(cudaMemcpy(w, wide, sizeof w, cudaMemcpyDeviceToHost));
        CHECK(cudaFree(wide));
    }
    CHECK(cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost));
    for (int i = 0; sync && i < n; i++)
        if (r[i] != ((i + 1) % n) * 3) {
            printf("out[%d] = %d, want %d\n", i, r[i], ((i + 1) % n) * 3);
            g_failures++;
        }
    if (strcmp(mode, "none") && strcmp(mode, "uninit") && strcmp(mode, "copy_back") && strcmp(mode, "race")) {
        printf("unknown mode %s\nFAIL %s\n", mode, test_name());
        return 1;
    }
    return finish();
}
