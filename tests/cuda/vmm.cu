// The virtual memory management API as an allocator uses it (llama.cpp's
// and PyTorch's pools): reserve 64 GiB of address space (no memory), create
// physical allocations, map them, grant access, grow the mapped range with a
// second allocation right after the first, run kernels and copies on buffers
// that straddle the two, map one allocation at a second address (both show
// the same bytes), export one as a POSIX file descriptor and import it back
// as a second handle to the same memory, query access and handles, and the
// errors CUDA defines
// (misaligned sizes, mapping over a mapping, unmapping part of one, freeing
// a reservation that still has mappings, copying to memory without access,
// more physical memory than the device has).
// The driver functions come from cudaGetDriverEntryPointByVersion, i.e.
// through cuGetProcAddress, as programs linked only with cudart get them.
//@ variants: shared cu12
#include "common.cuh"
#include <cuda.h>
#include <stdint.h>
#include <unistd.h>

#define DRV(call)                                                                          \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)r_); \
            printf("FAIL %s\n", test_name());                                              \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define DRV_ERR(call, expected)                                                            \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        EXPECT(r_ == (expected), "%s returned %d, expected %d", #call, (int)r_, (int)(expected)); \
    } while (0)

static CUresult (*pGranularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
static CUresult (*pReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*pAddressFree)(CUdeviceptr, size_t);
static CUresult (*pCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
static CUresult (*pRelease)(CUmemGenericAllocationHandle);
static CUresult (*pMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*pUnmap)(CUdeviceptr, size_t);
static CUresult (*pSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*pGetAccess)(unsigned long long *, const CUmemLocation *, CUdeviceptr);
static CUresult (*pRetain)(CUmemGenericAllocationHandle *, void *);
static CUresult (*pProps)(CUmemAllocationProp *, CUmemGenericAllocationHandle);
static CUresult (*pAttr)(int *, CUdevice_attribute, CUdevice);
static CUresult (*pExport)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
static CUresult (*pImport)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);

template <typename F> static void entry(F &fn, const char *name) {
    cudaDriverEntryPointQueryResult q;
    void *p = nullptr;
    CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !p) {
        printf("no driver entry point %s\nFAIL %s\n", name, test_name());
        exit(1);
    }
    fn = (F)p;
}

// Resident memory of this process in KiB (Linux).
static long rss_kb() {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    fclose(f);
    return kb;
}

__global__ void fill(unsigned *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)(i * 2654435761u) ^ seed;
}

__global__ void add_one(unsigned *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] += 1;
}

static unsigned want(size_t i, unsigned seed) { return (unsigned)(i * 2654435761u) ^ seed; }

int main() {
    // A 2 GiB device on anycuda's CPU backend: far less than the machine
    // has, so free memory is exactly the device's size less what is
    // allocated (with more, the machine's available memory would bound it
    // and other processes would move it). Other drivers ignore it.
    setenv("ANYCUDA_DEVICE_MEMORY", "2G", 1);
    CHECK(cudaFree(0));
    entry(pGranularity, "cuMemGetAllocationGranularity");
    entry(pReserve, "cuMemAddressReserve");
    entry(pAddressFree, "cuMemAddressFree");
    entry(pCreate, "cuMemCreate");
    entry(pRelease, "cuMemRelease");
    entry(pMap, "cuMemMap");
    entry(pUnmap, "cuMemUnmap");
    entry(pSetAccess, "cuMemSetAccess");
    entry(pGetAccess, "cuMemGetAccess");
    entry(pRetain, "cuMemRetainAllocationHandle");
    entry(pProps, "cuMemGetAllocationPropertiesFromHandle");
    entry(pAttr, "cuDeviceGetAttribute");
    entry(pExport, "cuMemExportToShareableHandle");
    entry(pImport, "cuMemImportFromShareableHandle");

    int supported = 0;
    DRV(pAttr(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    EXPECT(supported == 1, "virtual memory management supported = %d", supported);

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0, rec = 0;
    DRV(pGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    DRV(pGranularity(&rec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    EXPECT(gran > 0 && rec % gran == 0, "granularity %zu, recommended %zu", gran, rec);

    // 64 GiB of address space: no memory.
    size_t free0 = 0, total = 0;
    CHECK(cudaMemGetInfo(&free0, &total));
    long rss0 = rss_kb();
    const size_t space = 64ull << 30;
    CUdeviceptr base = 0;
    DRV(pReserve(&base, space, 0, 0, 0));
    EXPECT(base % gran == 0, "reservation %llx not aligned to %zu", (unsigned long long)base, gran);
    size_t free1 = 0;
    CHECK(cudaMemGetInfo(&free1, &total));
    EXPECT(free1 == free0, "reserving changed free memory: %zu -> %zu", free0, free1);
    EXPECT(rss_kb() - rss0 < 4096, "reserving 64 GiB made %ld KiB resident", rss_kb() - rss0);

    // The first chunk of a growing pool.
    const size_t chunk = 4 * gran;
    CUmemGenericAllocationHandle h1, h2;
    DRV_ERR(pCreate(&h1, chunk + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    DRV(pCreate(&h1, chunk, &prop, 0));
    DRV_ERR(pMap(base + 4096, chunk, 0, h1, 0), CUDA_ERROR_INVALID_VALUE);
    DRV(pMap(base, chunk, 0, h1, 0));
    DRV_ERR(pMap(base + gran, gran, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); // over a mapping
    // Mapped but not accessible yet: copies fail cleanly.
    unsigned probe = 7;
    CHECK_ERR(cudaMemcpy((void *)base, &probe, 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    (void)cudaGetLastError(); // the expected error is not sticky
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV(pSetAccess(base, chunk, &access, 1));
    unsigned long long flags = 0;
    DRV(pGetAccess(&flags, &prop.location, base + 123));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "access flags %llu", flags);
    size_t free2 = 0;
    CHECK(cudaMemGetInfo(&free2, &total));
    EXPECT(free0 - free2 == chunk, "a %zu-byte allocation took %zu bytes", chunk, free0 - free2);

    // Physical memory counts against the device's.
    CUmemGenericAllocationHandle too_big;
    DRV_ERR(pCreate(&too_big, (total / gran + 1) * gran, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

    // The pool grows: a second allocation right after the first.
    DRV(pCreate(&h2, chunk, &prop, 0));
    DRV(pMap(base + chunk, chunk, 0, h2, 0));
    DRV(pSetAccess(base + chunk, chunk, &access, 1));

    // A kernel fills both chunks; a buffer straddling them is copied back.
    unsigned *p = (unsigned *)base;
    const size_t n = 2 * chunk / 4;
    fill<<<64, 256>>>(p, n, 0x1234);
    CHECK_KERNEL();
    const size_t straddle = 1 << 20;
    unsigned *h = (unsigned *)malloc(straddle);
    const size_t first = (chunk - straddle / 2) / 4;
    CHECK(cudaMemcpy(h, p + first, straddle, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < straddle / 4; i++) EXPECT_EQ(h[i], want(first + i, 0x1234), "across the chunks", first + i);
    // Device-to-device within the pool, then a kernel on the copy.
    CHECK(cudaMemcpy(p + 16, p + first, straddle, cudaMemcpyDeviceToDevice));
    add_one<<<16, 256>>>(p + 16, straddle / 4);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, p + 16, straddle, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < straddle / 4; i++) EXPECT_EQ(h[i], want(first + i, 0x1234) + 1, "copied and incremented", i);
    CHECK(cudaMemset(p, 0, 64));
    CHECK(cudaMemcpy(h, p, 64, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++) EXPECT_EQ(h[i], 0u, "memset", i);

    // The same physical memory at a second address, 32 GiB further on.
    CUdeviceptr alias = base + (32ull << 30);
    DRV(pMap(alias, chunk, 0, h1, 0));
    DRV(pSetAccess(alias, chunk, &access, 1));
    unsigned *q = (unsigned *)alias;
    // (p[16...] holds the incremented copy made above.)
    CHECK(cudaMemcpy(h, q + 1000, 4096, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 1024; i++) EXPECT_EQ(h[i], want(first + 1000 - 16 + i, 0x1234) + 1, "the alias shows the same bytes", i);
    fill<<<8, 256>>>(q, chunk / 4, 0xbeef);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, p + 5000, 4096, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 1024; i++) EXPECT_EQ(h[i], want(5000 + i, 0xbeef), "writes through the alias", i);

    // Handles and properties.
    CUmemGenericAllocationHandle again = 0;
    DRV(pRetain(&again, (void *)(alias + 12345)));
    EXPECT(again == h1, "cuMemRetainAllocationHandle gave another handle");
    DRV(pRelease(again));
    CUmemAllocationProp got = {};
    DRV(pProps(&got, h2));
    EXPECT(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.location.id == 0,
           "properties of the handle");

    // Errors CUDA defines.
    DRV_ERR(pUnmap(base, gran), CUDA_ERROR_INVALID_VALUE);          // part of a mapping
    DRV_ERR(pAddressFree(base, space), CUDA_ERROR_INVALID_VALUE);   // still mapped
    DRV_ERR(pAddressFree(base, gran), CUDA_ERROR_INVALID_VALUE);    // not the reservation's size
    DRV_ERR(pMap(base + space, gran, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); // not reserved

    // Shareable handles: exported as a file descriptor, imported as a new
    // handle to the same memory, mapped at a third address.
    int fd_supported = 0;
    DRV(pAttr(&fd_supported, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0));
    EXPECT(fd_supported == 1, "POSIX file descriptor handles supported = %d", fd_supported);
    int fd = -1;
    DRV_ERR(pExport(&fd, h1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_INVALID_VALUE); // not requested
    CUmemAllocationProp shared_prop = prop;
    shared_prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle hs, himp;
    DRV(pCreate(&hs, gran, &shared_prop, 0));
    DRV(pExport(&fd, hs, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    EXPECT(fd >= 0, "exported descriptor %d", fd);
    DRV(pImport(&himp, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr sa = base + (40ull << 30), sb = base + (48ull << 30);
    DRV(pMap(sa, gran, 0, hs, 0));
    DRV(pMap(sb, gran, 0, himp, 0));
    DRV(pSetAccess(sa, gran, &access, 1));
    DRV(pSetAccess(sb, gran, &access, 1));
    fill<<<4, 256>>>((unsigned *)sa, gran / 4, 0x5a5a);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(h, (void *)sb, 4096, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 1024; i++) EXPECT_EQ(h[i], want(i, 0x5a5a), "the imported handle maps the same memory", i);
    DRV(pUnmap(sa, gran));
    DRV(pUnmap(sb, gran));
    DRV(pRelease(hs));
    DRV(pRelease(himp));

    // Released handles keep mapped memory alive until it is unmapped.
    DRV(pRelease(h1));
    DRV(pRelease(h2));
    CHECK(cudaMemcpy(h, q + 5000, 16, cudaMemcpyDeviceToHost));
    EXPECT_EQ(h[0], want(5000, 0xbeef), "still mapped after release", 0);
    DRV(pUnmap(base, 2 * chunk)); // both chunks in one call, as a pool shrinks
    DRV(pUnmap(alias, chunk));
    CHECK_ERR(cudaMemcpy(h, p, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    size_t free3 = 0;
    CHECK(cudaMemGetInfo(&free3, &total));
    EXPECT(free3 == free0, "unmapping and releasing gave the memory back: %zu -> %zu", free0, free3);
    DRV(pAddressFree(base, space));
    free(h);
    return finish();
}
