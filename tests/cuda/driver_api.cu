// The CUDA driver API used directly, without cudart: cuInit, device queries,
// cuCtxCreate, cuModuleLoadData of a hand-written PTX module, cuModuleGetFunction,
// cuModuleGetGlobal, cuLaunchKernel with kernelParams and with the `extra`
// form (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), memory copies and memsets,
// cuFuncGetAttribute, and cuModuleLoadDataEx of invalid PTX (must fail with
// CUDA_ERROR_INVALID_PTX and leave a message in the JIT error log).
// The toolkit wheels carry no libcuda stub, so libcuda.so.1 is opened with
// dlopen and every entry point is looked up by its ABI name with dlsym.
//@ link-flags: -ldl
#include "common.cuh"
#include <cuda.h>
#include <dlfcn.h>

static const char *kPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .global .align 4 .u32 counter;

// out[i] = a * in[i] + out[i] for i < n; counts the threads that did work
.visible .entry scale_add(
    .param .u64 out_param,
    .param .u64 in_param,
    .param .f32 a_param,
    .param .u32 n_param
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .f32 %f<5>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [out_param];
    ld.param.u64 %rd2, [in_param];
    ld.param.f32 %f1, [a_param];
    ld.param.u32 %r1, [n_param];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f2, [%rd6];
    add.s64 %rd7, %rd3, %rd5;
    ld.global.f32 %f3, [%rd7];
    fma.rn.f32 %f4, %f1, %f2, %f3;
    st.global.f32 [%rd7], %f4;
    atom.global.add.u32 %r6, [counter], 1;
DONE:
    ret;
}
)PTX";

static const char *kBadPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64
.visible .entry broken()
{
    this_is_not_an_instruction %r1;
    ret;
}
)PTX";

#define DRV(call)                                                                          \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            const char *name_ = "?";                                                       \
            if (p_cuGetErrorName) p_cuGetErrorName(r_, &name_);                            \
            fprintf(stderr, "%s:%d: %s returned %s (%d)\n", __FILE__, __LINE__, #call,      \
                    name_, (int)r_);                                                       \
            printf("FAIL %s\n", test_name());                                              \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

// Entry points, by their exported (ABI) names.
static CUresult (*p_cuGetErrorName)(CUresult, const char **);
static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGetCount)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
static CUresult (*p_cuDeviceTotalMem)(size_t *, CUdevice);
static CUresult (*p_cuCtxCreate)(CUcontext *, unsigned, CUdevice);
static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuCtxDestroy)(CUcontext);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemsetD32)(CUdeviceptr, unsigned, size_t);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream, void **, void **);

template <typename F> static void load(void *lib, F &fn, const char *name) {
    fn = (F)dlsym(lib, name);
    if (!fn) {
        printf("libcuda.so.1 does not export %s\nFAIL %s\n", name, test_name());
        exit(1);
    }
}

int main() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("cannot load libcuda.so.1: %s\nFAIL %s\n", dlerror(), test_name());
        return 1;
    }
    load(lib, p_cuGetErrorName, "cuGetErrorName");
    load(lib, p_cuInit, "cuInit");
    load(lib, p_cuDriverGetVersion, "cuDriverGetVersion");
    load(lib, p_cuDeviceGetCount, "cuDeviceGetCount");
    load(lib, p_cuDeviceGet, "cuDeviceGet");
    load(lib, p_cuDeviceGetName, "cuDeviceGetName");
    load(lib, p_cuDeviceGetAttribute, "cuDeviceGetAttribute");
    load(lib, p_cuDeviceTotalMem, "cuDeviceTotalMem_v2");
    load(lib, p_cuCtxCreate, "cuCtxCreate_v2");
    load(lib, p_cuCtxGetCurrent, "cuCtxGetCurrent");
    load(lib, p_cuCtxSynchronize, "cuCtxSynchronize");
    load(lib, p_cuCtxDestroy, "cuCtxDestroy_v2");
    load(lib, p_cuModuleLoadData, "cuModuleLoadData");
    load(lib, p_cuModuleLoadDataEx, "cuModuleLoadDataEx");
    load(lib, p_cuModuleGetFunction, "cuModuleGetFunction");
    load(lib, p_cuModuleGetGlobal, "cuModuleGetGlobal_v2");
    load(lib, p_cuModuleUnload, "cuModuleUnload");
    load(lib, p_cuFuncGetAttribute, "cuFuncGetAttribute");
    load(lib, p_cuMemAlloc, "cuMemAlloc_v2");
    load(lib, p_cuMemFree, "cuMemFree_v2");
    load(lib, p_cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    load(lib, p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    load(lib, p_cuMemsetD32, "cuMemsetD32_v2");
    load(lib, p_cuLaunchKernel, "cuLaunchKernel");

    DRV(p_cuInit(0));
    int version = 0, count = 0;
    DRV(p_cuDriverGetVersion(&version));
    DRV(p_cuDeviceGetCount(&count));
    EXPECT(version >= 12000, "driver version %d", version);
    EXPECT(count >= 1, "device count %d", count);
    CUdevice dev;
    DRV(p_cuDeviceGet(&dev, 0));
    char name[256] = {};
    DRV(p_cuDeviceGetName(name, sizeof name, dev));
    EXPECT(name[0] != 0, "empty device name");
    int warp = 0, major = 0;
    DRV(p_cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    DRV(p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    EXPECT(warp == 32, "warp size %d", warp);
    EXPECT(major >= 5, "compute capability major %d", major);
    size_t total = 0;
    DRV(p_cuDeviceTotalMem(&total, dev));
    EXPECT(total > 0, "total memory %zu", total);

    CUcontext ctx, cur = nullptr;
    DRV(p_cuCtxCreate(&ctx, 0, dev));
    DRV(p_cuCtxGetCurrent(&cur));
    EXPECT(cur == ctx, "cuCtxCreate did not make the context current");

    CUmodule mod;
    DRV(p_cuModuleLoadData(&mod, kPtx));
    CUfunction fn;
    DRV(p_cuModuleGetFunction(&fn, mod, "scale_add"));
    CUdeviceptr counter;
    size_t counter_size = 0;
    DRV(p_cuModuleGetGlobal(&counter, &counter_size, mod, "counter"));
    EXPECT(counter_size == 4, "counter size %zu", counter_size);
    int nregs = -1, maxthreads = 0;
    DRV(p_cuFuncGetAttribute(&nregs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn));
    DRV(p_cuFuncGetAttribute(&maxthreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn));
    EXPECT(nregs >= 0 && maxthreads >= 256, "function attributes: %d regs, %d threads", nregs, maxthreads);

    const unsigned n = 10000;
    float *hin = new float[n], *hout = new float[n];
    for (unsigned i = 0; i < n; i++) { hin[i] = (float)(i % 100); hout[i] = 1.0f; }
    CUdeviceptr din, dout;
    DRV(p_cuMemAlloc(&din, n * sizeof(float)));
    DRV(p_cuMemAlloc(&dout, n * sizeof(float)));
    DRV(p_cuMemcpyHtoD(din, hin, n * sizeof(float)));
    DRV(p_cuMemsetD32(dout, 0x3f800000u, n)); // 1.0f
    DRV(p_cuMemsetD32(counter, 0, 1));

    // 1) kernelParams: an array of pointers to each argument
    float a = 2.0f;
    void *params[] = {&dout, &din, &a, (void *)&n};
    DRV(p_cuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    // 2) extra: one buffer with the arguments at their ABI offsets
    struct {
        CUdeviceptr out, in;
        float a;
        unsigned n;
    } buf = {dout, din, 0.5f, n};
    static_assert(sizeof buf == 24, "argument buffer layout");
    size_t buf_size = sizeof buf;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &buf_size,
                     CU_LAUNCH_PARAM_END};
    DRV(p_cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, nullptr, extra));
    DRV(p_cuCtxSynchronize());
    DRV(p_cuMemcpyDtoH(hout, dout, n * sizeof(float)));
    unsigned hcount = 0;
    DRV(p_cuMemcpyDtoH(&hcount, counter, sizeof hcount));
    for (unsigned i = 0; i < n; i++) {
        float want = 0.5f * hin[i] + (2.0f * hin[i] + 1.0f);
        EXPECT(hout[i] == want, "out[%u] = %g want %g", i, hout[i], want);
    }
    EXPECT_EQ(hcount, 2 * n, "counter", 0);

    // invalid PTX: CUDA_ERROR_INVALID_PTX with a message in the error log
    char log[4096] = {};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(size_t)sizeof log};
    CUmodule bad = nullptr;
    CUresult r = p_cuModuleLoadDataEx(&bad, kBadPtx, 2, opts, vals);
    EXPECT(r == CUDA_ERROR_INVALID_PTX, "loading invalid PTX returned %d", (int)r);
    EXPECT(log[0] != 0, "empty JIT error log");

    DRV(p_cuMemFree(din));
    DRV(p_cuMemFree(dout));
    DRV(p_cuModuleUnload(mod));
    DRV(p_cuCtxDestroy(ctx));
    delete[] hin; delete[] hout;
    return finish();
}
