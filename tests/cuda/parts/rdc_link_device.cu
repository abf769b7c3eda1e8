// The second file of the relocatable-device-code programs: a __device__
// function, __device__ and __constant__ variables and a kernel the other
// file uses, and a file-local function named like one in the other file.
#include "rdc_link.cuh"

__device__ int rdc_counter;
__device__ float rdc_scale_table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__constant__ int rdc_offset = 7;

__device__ float rdc_scale(float x, int i) { return x * rdc_scale_table[i & 3] + (float)rdc_offset; }

// Same name as the main file's own, different body: each file sees its own.
static __device__ __noinline__ int local_helper(int x) { return x + 1000; }

__device__ __noinline__ int device_side_helper(int x) { return local_helper(x); }

__global__ void rdc_other_kernel(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = twice(i) + local_helper(i);
        atomicAdd(&rdc_counter, 1);
    }
}
