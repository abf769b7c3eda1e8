// Relocatable device code (nvcc -rdc=true), PTX only: the kernel here calls
// a __device__ function and uses __device__/__constant__ variables defined
// in parts/rdc_link_device.cu; the program's fatbin holds each file's PTX
// and cudart hands them to the driver to link (see parts/rdc_link_main.cuh).
//@ sources: parts/rdc_link_device.cu
//@ gencode: arch=compute_80,code=compute_80
//@ variants: shared cu12 lz4
#include "parts/rdc_link_main.cuh"

int main() { return rdc_link_main(__FILE__); }
