// The host side and kernel of rdc_link and rdc_link_sass (the same program
// built two ways): a kernel calling a __device__ function and writing a
// __device__ variable defined in parts/rdc_link_device.cu, a kernel defined
// there, and the variables reached from the host by symbol.
#include "../common.cuh"
#include "rdc_link.cuh"

static __device__ __noinline__ int local_helper(int x) { return x + 1; }

__global__ void rdc_kernel(float *out, const float *in, int *ints, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = rdc_scale(in[i], i);
        ints[i] = twice(i) + local_helper(i) + device_side_helper(i);
        atomicAdd(&rdc_counter, 1);
    }
}

static int rdc_link_main(const char *file) {
    // The program's name is its main file's (CHECK here would see this one).
    test_name_of(file);
    const int n = 300;
    float *in, *out;
    int *ints;
    CHECK(cudaMallocManaged(&in, n * sizeof(float)));
    CHECK(cudaMallocManaged(&out, n * sizeof(float)));
    CHECK(cudaMallocManaged(&ints, n * sizeof(int)));
    for (int i = 0; i < n; i++) in[i] = 0.5f * i;
    const float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};

    rdc_kernel<<<(n + 127) / 128, 128>>>(out, in, ints, n);
    CHECK_KERNEL();
    for (int i = 0; i < n; i++) {
        EXPECT(out[i] == in[i] * table[i & 3] + 7.0f, "out[%d] = %g", i, out[i]);
        EXPECT_EQ(ints[i], 2 * i + (i + 1) + (i + 1000), "ints", i);
    }

    rdc_other_kernel<<<(n + 127) / 128, 128>>>(ints, n);
    CHECK_KERNEL();
    for (int i = 0; i < n; i++) EXPECT_EQ(ints[i], 2 * i + i + 1000, "other kernel", i);

    int counter = -1;
    CHECK(cudaMemcpyFromSymbol(&counter, rdc_counter, sizeof counter));
    EXPECT_EQ(counter, 2 * n, "counter", 0);

    // The host reaches the other file's variables by symbol.
    const int offset = 10;
    CHECK(cudaMemcpyToSymbol(rdc_offset, &offset, sizeof offset));
    const float doubled[4] = {2.0f, 4.0f, 6.0f, 8.0f};
    CHECK(cudaMemcpyToSymbol(rdc_scale_table, doubled, sizeof doubled));
    rdc_kernel<<<(n + 127) / 128, 128>>>(out, in, ints, n);
    CHECK_KERNEL();
    for (int i = 0; i < n; i++) EXPECT(out[i] == in[i] * doubled[i & 3] + 10.0f, "second run: out[%d] = %g", i, out[i]);
    CHECK(cudaMemcpyFromSymbol(&counter, rdc_counter, sizeof counter));
    EXPECT_EQ(counter, 3 * n, "counter after the second run", 0);

    CHECK(cudaFree(in));
    CHECK(cudaFree(out));
    CHECK(cudaFree(ints));
    return finish_impl(file);
}
