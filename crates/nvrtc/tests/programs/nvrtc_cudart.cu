// NVRTC with the CUDA runtime: the cubin NVRTC returns for the device's
// own architecture (asked with -arch=sm_XX from cudaGetDeviceProperties)
// loaded with cudaLibraryLoadData and launched with cudaLaunchKernel.
// Prints PASS.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <nvrtc.h>

#define CUDA(x)                                                                               \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

static const char *source =
    "extern \"C\" __global__ void square(int *p, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) p[i] = p[i] * p[i];\n"
    "}\n";

int main() {
    cudaDeviceProp prop;
    CUDA(cudaGetDeviceProperties(&prop, 0));
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", prop.major, prop.minor);
    printf("compiling for %s\n", arch);
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, source, "square.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
        printf("FAIL nvrtcCreateProgram\n");
        return 1;
    }
    const char *opts[] = {arch};
    nvrtcResult rc = nvrtcCompileProgram(prog, 1, opts);
    if (rc != NVRTC_SUCCESS) {
        printf("FAIL compile: %s\n", nvrtcGetErrorString(rc));
        return 1;
    }
    size_t size = 0;
    nvrtcGetCUBINSize(prog, &size);
    if (size == 0) {
        printf("FAIL no cubin\n");
        return 1;
    }
    std::vector<char> cubin(size);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);

    cudaLibrary_t lib;
    CUDA(cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    cudaKernel_t kernel;
    CUDA(cudaLibraryGetKernel(&kernel, lib, "square"));
    const int n = 4096;
    std::vector<int> host(n);
    for (int i = 0; i < n; i++) host[i] = i - 2000;
    int *d;
    CUDA(cudaMalloc(&d, n * sizeof(int)));
    CUDA(cudaMemcpy(d, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int count = n;
    void *args[] = {&d, &count};
    CUDA(cudaLaunchKernel((const void *)kernel, dim3((n + 255) / 256), dim3(256), args, 0, nullptr));
    std::vector<int> out(n);
    CUDA(cudaMemcpy(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        if (out[i] != host[i] * host[i]) {
            printf("FAIL square[%d] = %d, want %d\n", i, out[i], host[i] * host[i]);
            return 1;
        }
    }
    printf("square: %d results correct\n", n);
    CUDA(cudaLibraryUnload(lib));
    printf("PASS\n");
    return 0;
}
