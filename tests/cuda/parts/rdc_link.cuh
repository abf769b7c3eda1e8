// Declarations shared by the relocatable-device-code programs (rdc_link,
// rdc_link_sass) and parts/rdc_link_device.cu, which defines them.
#pragma once

extern __device__ int rdc_counter;
extern __device__ float rdc_scale_table[4];
extern __constant__ int rdc_offset;
__device__ float rdc_scale(float x, int i);
__device__ int device_side_helper(int x);
__global__ void rdc_other_kernel(int *out, int n);

// Instantiated in both files: a weak definition in each, one kept.
template <typename T>
__device__ T twice(T x) {
    return x + x;
}
