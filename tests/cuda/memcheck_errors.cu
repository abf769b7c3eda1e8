// Kernels with memory errors for anycuda's checked mode (ANYCUDA_MEMCHECK=1,
// `anycuda memcheck -- PROGRAM`). Run without an argument, every kernel is
// used correctly and the results are checked (checked mode must report
// nothing). Run with one of read, write, freed, shared, misaligned, null, the
// program makes that error and expects the synchronisation after it to
// return cudaErrorIllegalAddress (cudaErrorMisalignedAddress for misaligned),
// sticky afterwards, as compute-sanitizer's memcheck and NVIDIA's driver
// report them; the harness (crates/libcuda/tests/programs.rs) checks the
// report on stderr. Built with -lineinfo so the PTX carries .loc lines.
//@ nvcc-flags: -lineinfo
#include "common.cuh"

__global__ void scale(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * 2.0f; // LINE_SCALE
}

__global__ void store_at(char *p, long long offset) {
    if (threadIdx.x == 0) *(int *)(p + offset) = 7; // LINE_STORE
}

__global__ void shared_sum(int *out) {
    __shared__ int tile[32];
    tile[threadIdx.x] = threadIdx.x; // LINE_SHARED
    __syncthreads();
    if (threadIdx.x == 0) {
        int s = 0;
        for (int i = 0; i < 32; i++) s += tile[i];
        *out = s;
    }
}

static int expect(cudaError_t want) {
    cudaError_t err = cudaDeviceSynchronize();
    if (err != want) {
        printf("expected %s from the sync, got %s\nFAIL %s\n", cudaGetErrorName(want), cudaGetErrorName(err), test_name());
        return 1;
    }
    int h = 0;
    int *d = nullptr;
    err = cudaMalloc(&d, sizeof h);
    if (err != want) {
        printf("expected the sticky %s, got %s\nFAIL %s\n", cudaGetErrorName(want), cudaGetErrorName(err), test_name());
        return 1;
    }
    return finish();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "none";
    const int n = 40;
    float *in, *out;
    int *sum;
    char *bytes;
    CHECK(cudaMalloc(&in, n * sizeof(float)));
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMalloc(&sum, sizeof(int)));
    CHECK(cudaMalloc(&bytes, 64));
    float h[n];
    for (int i = 0; i < n; i++) h[i] = (float)i;
    CHECK(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));

    if (!strcmp(mode, "none")) {
        scale<<<2, 32>>>(in, out, n);
        CHECK_KERNEL();
        store_at<<<1, 32>>>(bytes, 60);
        CHECK_KERNEL();
        shared_sum<<<1, 32>>>(sum);
        CHECK_KERNEL();
        float r[n];
        int s = 0, w = 0;
        CHECK(cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&s, sum, sizeof s, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&w, bytes + 60, sizeof w, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++)
            if (r[i] != 2.0f * i) {
                printf("out[%d] = %g, want %g\n", i, r[i], 2.0f * i);
                g_failures++;
            }
        if (s != 496 || w != 7) {
            printf("sum %d (want 496), word %d (want 7)\n", s, w);
            g_failures++;
        }
        return finish();
    }
    if (!strcmp(mode, "read")) {
        scale<<<2, 32>>>(in, out, n + 1); // thread 8 of block 1 reads in[40]
        return expect(cudaErrorIllegalAddress);
    }
    if (!strcmp(mode, "write")) {
        store_at<<<1, 32>>>(bytes, 64); // just past the 64 bytes
        return expect(cudaErrorIllegalAddress);
    }
    if (!strcmp(mode, "freed")) {
        CHECK(cudaFree(bytes));
        store_at<<<1, 32>>>(bytes, 8);
        return expect(cudaErrorIllegalAddress);
    }
    if (!strcmp(mode, "shared")) {
        shared_sum<<<1, 33>>>(sum); // thread 32 writes tile[32]
        return expect(cudaErrorIllegalAddress);
    }
    if (!strcmp(mode, "misaligned")) {
        store_at<<<1, 32>>>(bytes, 2);
        return expect(cudaErrorMisalignedAddress);
    }
    if (!strcmp(mode, "null")) {
        store_at<<<1, 32>>>(nullptr, 16);
        return expect(cudaErrorIllegalAddress);
    }
    printf("unknown mode %s\nFAIL %s\n", mode, test_name());
    return 1;
}
