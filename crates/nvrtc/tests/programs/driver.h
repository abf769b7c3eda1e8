/* The few CUDA driver API functions the test programs call, loaded with
 * dlopen("libcuda.so.1") (there is no libcuda to link against here). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleLoad)(CUmodule *, const char *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
    CUresult (*CtxSynchronize)(void);
} cu;

#define CU(x)                                                        \
    do {                                                             \
        CUresult r_ = (x);                                           \
        if (r_ != 0) {                                               \
            printf("FAIL %s:%d: %s -> CUDA error %d\n", __FILE__, __LINE__, #x, r_); \
            exit(1);                                                 \
        }                                                            \
    } while (0)

static void *sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        printf("FAIL libcuda.so.1 has no %s\n", name);
        exit(1);
    }
    return p;
}

/* Loads the driver and makes device 0's primary context current. */
static void driver_init(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        printf("FAIL dlopen(libcuda.so.1): %s\n", dlerror());
        exit(1);
    }
    *(void **)&cu.Init = sym(h, "cuInit");
    *(void **)&cu.DeviceGet = sym(h, "cuDeviceGet");
    *(void **)&cu.DeviceGetAttribute = sym(h, "cuDeviceGetAttribute");
    *(void **)&cu.PrimaryCtxRetain = sym(h, "cuDevicePrimaryCtxRetain");
    *(void **)&cu.CtxSetCurrent = sym(h, "cuCtxSetCurrent");
    *(void **)&cu.ModuleLoadData = sym(h, "cuModuleLoadData");
    *(void **)&cu.ModuleLoad = sym(h, "cuModuleLoad");
    *(void **)&cu.ModuleGetFunction = sym(h, "cuModuleGetFunction");
    *(void **)&cu.ModuleGetGlobal = sym(h, "cuModuleGetGlobal_v2");
    *(void **)&cu.MemAlloc = sym(h, "cuMemAlloc_v2");
    *(void **)&cu.MemcpyHtoD = sym(h, "cuMemcpyHtoD_v2");
    *(void **)&cu.MemcpyDtoH = sym(h, "cuMemcpyDtoH_v2");
    *(void **)&cu.LaunchKernel = sym(h, "cuLaunchKernel");
    *(void **)&cu.CtxSynchronize = sym(h, "cuCtxSynchronize");
    CUdevice d;
    CUcontext c;
    CU(cu.Init(0));
    CU(cu.DeviceGet(&d, 0));
    CU(cu.PrimaryCtxRetain(&c, d));
    CU(cu.CtxSetCurrent(c));
    int major = 0, minor = 0;
    CU(cu.DeviceGetAttribute(&major, 75, d));
    CU(cu.DeviceGetAttribute(&minor, 76, d));
    printf("device: compute capability %d.%d\n", major, minor);
}

/* Runs saxpy(a, x, y, n) from `mod` and checks y = a*x + y. */
static void check_saxpy(CUmodule mod, const char *name) {
    enum { N = 1000 };
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 2.0f * (float)i + 1.0f;
    }
    CUfunction f;
    CU(cu.ModuleGetFunction(&f, mod, name));
    CUdeviceptr dx, dy;
    CU(cu.MemAlloc(&dx, sizeof x));
    CU(cu.MemAlloc(&dy, sizeof y));
    CU(cu.MemcpyHtoD(dx, x, sizeof x));
    CU(cu.MemcpyHtoD(dy, y, sizeof y));
    float a = 3.0f;
    int n = N;
    void *args[] = {&a, &dx, &dy, &n};
    CU(cu.LaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, 0, args, 0));
    CU(cu.CtxSynchronize());
    CU(cu.MemcpyDtoH(out, dy, sizeof out));
    for (int i = 0; i < N; i++) {
        if (out[i] != a * x[i] + y[i]) {
            printf("FAIL %s: y[%d] = %f, want %f\n", name, i, out[i], a * x[i] + y[i]);
            exit(1);
        }
    }
    printf("%s: %d results correct\n", name, N);
}
