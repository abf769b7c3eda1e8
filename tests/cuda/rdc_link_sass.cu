// rdc_link built as nvcc builds by default (-gencode
// arch=compute_80,code=[compute_80,sm_80]): the device-linked fatbin holds
// sm_80 machine code only, each file's prelinked fatbin its PTX.
//@ sources: parts/rdc_link_device.cu
#include "parts/rdc_link_main.cuh"

int main() { return rdc_link_main(__FILE__); }
