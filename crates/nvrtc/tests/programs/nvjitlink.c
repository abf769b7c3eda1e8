/* nvJitLink as numba-cuda and other run-time linkers use it:
 *   nvjitlink ptx|lto|mixed|cubin-input
 *   nvjitlink fatbin|object|library FILE
 * compiles two translation units with NVRTC (-rdc=true; `lto`: -dlto, to
 * LTO-IR): the kernel in one calls a function and reads a variable defined
 * in the other, and both use printf. Links them with nvJitLink for
 * -arch=sm_80 (PTX inputs; LTO-IR inputs with -lto; one of each), takes
 * nvJitLinkGetLinkedCubin, loads it with cuModuleLoadData and checks the
 * kernel's results. `cubin-input` adds NVIDIA machine code, which must be
 * refused with NVJITLINK_ERROR_INVALID_INPUT and a reason in the error
 * log. `fatbin` adds the caller's PTX as NVJITLINK_INPUT_ANY and the
 * callee from FILE (a fatbin of callee.cu) with nvJitLinkAddFile;
 * `object` and `library` the same from a host object of callee.cu
 * (nvcc -dc) or an archive holding it.
 * Prints PASS. */
#include <nvJitLink.h>
#include <nvrtc.h>
#include <string.h>

#include "driver.h"

static const char *caller =
    "extern \"C\" __device__ float twice(float);\n"
    "extern __device__ float bias;\n"
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = a * x[i] + twice(y[i]) * 0.5f + (bias - 1.0f);\n"
    "    if (i == 0) printf(\"caller: n=%d\\n\", n);\n"
    "}\n";

static const char *callee =
    "__device__ float bias = 1.0f;\n"
    "extern \"C\" __device__ float twice(float v) {\n"
    "    if (v < 0.0f) printf(\"callee: negative %f\\n\", v);\n"
    "    return 2.0f * v;\n"
    "}\n";

static char *compile(const char *src, const char *name, int lto, size_t *size) {
    nvrtcProgram p;
    if (nvrtcCreateProgram(&p, src, name, 0, NULL, NULL) != NVRTC_SUCCESS) {
        printf("FAIL nvrtcCreateProgram\n");
        exit(1);
    }
    const char *opts[] = {"-arch=sm_80", "-rdc=true", "-dlto"};
    nvrtcResult rc = nvrtcCompileProgram(p, lto ? 3 : 2, opts);
    if (rc != NVRTC_SUCCESS) {
        size_t n;
        nvrtcGetProgramLogSize(p, &n);
        char *log = malloc(n);
        nvrtcGetProgramLog(p, log);
        printf("FAIL compile %s: %s\n%s\n", name, nvrtcGetErrorString(rc), log);
        exit(1);
    }
    char *out;
    if (lto) {
        nvrtcGetLTOIRSize(p, size);
        out = malloc(*size);
        nvrtcGetLTOIR(p, out);
    } else {
        nvrtcGetPTXSize(p, size);
        out = malloc(*size);
        nvrtcGetPTX(p, out);
    }
    nvrtcDestroyProgram(&p);
    return out;
}

static void print_log(nvJitLinkHandle h, int error) {
    size_t n = 0;
    if (error) nvJitLinkGetErrorLogSize(h, &n); else nvJitLinkGetInfoLogSize(h, &n);
    if (n == 0) return;
    char *log = malloc(n);
    if (error) nvJitLinkGetErrorLog(h, log); else nvJitLinkGetInfoLog(h, log);
    printf("%s log: %s\n", error ? "error" : "info", log);
    free(log);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: %s ptx|lto|mixed|cubin-input\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    int lto_a = !strcmp(mode, "lto") || !strcmp(mode, "mixed");
    int lto_b = !strcmp(mode, "lto");
    size_t na, nb;
    char *a = compile(caller, "caller.cu", lto_a, &na);
    char *b = compile(callee, "callee.cu", lto_b, &nb);

    unsigned major = 0, minor = 0;
    if (nvJitLinkVersion(&major, &minor) != NVJITLINK_SUCCESS) {
        printf("FAIL nvJitLinkVersion\n");
        return 1;
    }
    printf("nvJitLink %u.%u\n", major, minor);
    const char *opts[] = {"-arch=sm_80", "-lto"};
    nvJitLinkHandle h;
    nvJitLinkResult r = nvJitLinkCreate(&h, (lto_a || lto_b) ? 2 : 1, opts);
    if (r != NVJITLINK_SUCCESS) {
        printf("FAIL nvJitLinkCreate -> %d\n", (int)r);
        return 1;
    }
    if (!strcmp(mode, "cubin-input")) {
        static const unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
        r = nvJitLinkAddData(h, NVJITLINK_INPUT_CUBIN, elf, sizeof elf, "machine.cubin");
        print_log(h, 1);
        if (r != NVJITLINK_ERROR_INVALID_INPUT) {
            printf("FAIL a cubin input: %d, not NVJITLINK_ERROR_INVALID_INPUT\n", (int)r);
            return 1;
        }
        nvJitLinkDestroy(&h);
        printf("PASS\n");
        return 0;
    }
    if (!strcmp(mode, "fatbin") || !strcmp(mode, "object") || !strcmp(mode, "library")) {
        if (argc < 3) {
            printf("usage: %s %s FILE\n", argv[0], mode);
            return 2;
        }
        nvJitLinkInputType kind = !strcmp(mode, "fatbin")   ? NVJITLINK_INPUT_FATBIN
                                  : !strcmp(mode, "object") ? NVJITLINK_INPUT_OBJECT
                                                            : NVJITLINK_INPUT_LIBRARY;
        r = nvJitLinkAddData(h, NVJITLINK_INPUT_ANY, a, na, "caller");
        if (r == NVJITLINK_SUCCESS) r = nvJitLinkAddFile(h, kind, argv[2]);
    } else {
        r = nvJitLinkAddData(h, lto_a ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX, a, na, "caller");
        if (r == NVJITLINK_SUCCESS) r = nvJitLinkAddData(h, lto_b ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX, b, nb, "callee");
    }
    if (r != NVJITLINK_SUCCESS) {
        print_log(h, 1);
        printf("FAIL nvJitLinkAddData -> %d\n", (int)r);
        return 1;
    }
    r = nvJitLinkComplete(h);
    print_log(h, 0);
    if (r != NVJITLINK_SUCCESS) {
        print_log(h, 1);
        printf("FAIL nvJitLinkComplete -> %d\n", (int)r);
        return 1;
    }
    size_t size = 0;
    if (nvJitLinkGetLinkedCubinSize(h, &size) != NVJITLINK_SUCCESS || size == 0) {
        printf("FAIL nvJitLinkGetLinkedCubinSize: %zu\n", size);
        return 1;
    }
    char *image = malloc(size);
    memset(image, 0x55, size);
    if (nvJitLinkGetLinkedCubin(h, image) != NVJITLINK_SUCCESS) {
        printf("FAIL nvJitLinkGetLinkedCubin\n");
        return 1;
    }
    size_t ptx_size = 0;
    nvJitLinkGetLinkedPtxSize(h, &ptx_size);
    printf("linked: %zu bytes, last byte %d, PTX %zu bytes\n", size, image[size - 1], ptx_size);
    nvJitLinkDestroy(&h);
    if (h != NULL) {
        printf("FAIL nvJitLinkDestroy left the handle\n");
        return 1;
    }

    driver_init();
    CUmodule mod;
    CU(cu.ModuleLoadData(&mod, image));
    check_saxpy(mod, "saxpy");
    printf("PASS\n");
    return 0;
}
