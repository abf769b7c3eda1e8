/* NVRTC to the driver API, as run-time compiling programs do it:
 *   nvrtc_driver ARCH_OPTION cubin|ptx
 *   nvrtc_driver FILE file
 * compiles a kernel source (a C kernel and a template instantiated through
 * a name expression) with ARCH_OPTION (e.g. --gpu-architecture=sm_80),
 * takes the code with nvrtcGetCUBIN (cubin) or nvrtcGetPTX (ptx), loads it
 * with cuModuleLoadData and checks the kernels' results. The `file` form
 * loads FILE (what a ptxas wrote) with cuModuleLoad and checks its saxpy.
 * Prints PASS. */
#include <nvrtc.h>
#include <string.h>

#include "driver.h"

static const char *source =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "template <typename T> __global__ void scale(T *p, T s) { p[threadIdx.x] *= s; }\n";

#define NVRTC(x)                                                                       \
    do {                                                                               \
        nvrtcResult r_ = (x);                                                          \
        if (r_ != NVRTC_SUCCESS) {                                                     \
            printf("FAIL %s -> %d (%s)\n", #x, (int)r_, nvrtcGetErrorString(r_));      \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 3) {
        printf("usage: %s ARCH_OPTION cubin|ptx\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[2], "file") == 0) {
        driver_init();
        CUmodule mod;
        CU(cu.ModuleLoad(&mod, argv[1]));
        check_saxpy(mod, "saxpy");
        printf("PASS\n");
        return 0;
    }
    int major = 0, minor = 0;
    NVRTC(nvrtcVersion(&major, &minor));
    printf("NVRTC %d.%d\n", major, minor);
    nvrtcProgram prog;
    NVRTC(nvrtcCreateProgram(&prog, source, "kernels.cu", 0, NULL, NULL));
    NVRTC(nvrtcAddNameExpression(prog, "scale<int>"));
    const char *opts[] = {argv[1], "--std=c++17"};
    nvrtcResult rc = nvrtcCompileProgram(prog, 2, opts);
    size_t log_size = 0;
    NVRTC(nvrtcGetProgramLogSize(prog, &log_size));
    char *log = malloc(log_size + 1);
    NVRTC(nvrtcGetProgramLog(prog, log));
    if (rc != NVRTC_SUCCESS) {
        printf("FAIL compile: %s\n%s\n", nvrtcGetErrorString(rc), log);
        return 1;
    }
    const char *lowered = NULL;
    NVRTC(nvrtcGetLoweredName(prog, "scale<int>", &lowered));
    char scale_name[256];
    snprintf(scale_name, sizeof scale_name, "%s", lowered);

    size_t size = 0;
    char *image;
    if (strcmp(argv[2], "cubin") == 0) {
        NVRTC(nvrtcGetCUBINSize(prog, &size));
        if (size == 0) {
            printf("FAIL nvrtcGetCUBINSize: no code for %s\n", argv[1]);
            return 1;
        }
        image = malloc(size);
        memset(image, 0x55, size);
        NVRTC(nvrtcGetCUBIN(prog, image));
    } else {
        NVRTC(nvrtcGetPTXSize(prog, &size));
        image = malloc(size);
        memset(image, 0x55, size);
        NVRTC(nvrtcGetPTX(prog, image));
    }
    /* The size reported is the size written: the last byte is the PTX
     * container's NUL, not the fill. */
    printf("image: %zu bytes, last byte %d\n", size, image[size - 1]);
    NVRTC(nvrtcDestroyProgram(&prog));

    driver_init();
    CUmodule mod;
    CU(cu.ModuleLoadData(&mod, image));
    check_saxpy(mod, "saxpy");

    CUfunction f;
    CU(cu.ModuleGetFunction(&f, mod, scale_name));
    int host[32], out[32];
    for (int i = 0; i < 32; i++) host[i] = i - 7;
    CUdeviceptr d;
    CU(cu.MemAlloc(&d, sizeof host));
    CU(cu.MemcpyHtoD(d, host, sizeof host));
    int s = -3;
    void *args[] = {&d, &s};
    CU(cu.LaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, args, 0));
    CU(cu.CtxSynchronize());
    CU(cu.MemcpyDtoH(out, d, sizeof out));
    for (int i = 0; i < 32; i++) {
        if (out[i] != host[i] * s) {
            printf("FAIL scale<int>: %d, want %d\n", out[i], host[i] * s);
            return 1;
        }
    }
    printf("%s (scale<int>): 32 results correct\n", scale_name);
    printf("PASS\n");
    return 0;
}
