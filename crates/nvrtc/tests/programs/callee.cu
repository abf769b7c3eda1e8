// The callee of nvjitlink.c's link, as a file: built by the tests into a
// fatbin holding only PTX (nvcc -fatbin -rdc=true
// -gencode arch=compute_80,code=compute_80) and added with
// nvJitLinkAddFile.
__device__ float bias = 1.0f;
extern "C" __device__ float twice(float v) {
    if (v < 0.0f) printf("callee: negative %f\n", v);
    return 2.0f * v;
}
