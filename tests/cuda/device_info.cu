// Device and memory queries: cudaGetDeviceCount, cudaGetDevice/SetDevice,
// cudaDriverGetVersion/cudaRuntimeGetVersion, cudaGetDeviceProperties agreeing
// with cudaDeviceGetAttribute, cudaMemGetInfo before/after a 64 MiB
// allocation, cudaPointerGetAttributes on device, offset-device, pinned,
// managed and plain host pointers, cudaFuncGetAttributes (static shared
// size), occupancy, cudaDeviceGetLimit/SetLimit (stack size).
//@ variants: shared cu12
#include "common.cuh"

__global__ void uses_shared(float *out) {
    __shared__ float buf[1024]; // 4096 bytes of static shared memory
    buf[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = buf[1023 - threadIdx.x];
}

int main() {
    int count = 0, dev = -1, drv = 0, rt = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "device count %d", count);
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDevice(&dev));
    EXPECT(dev == 0, "current device %d", dev);
    CHECK(cudaDriverGetVersion(&drv));
    CHECK(cudaRuntimeGetVersion(&rt));
    EXPECT(rt == CUDART_VERSION, "runtime version %d, headers say %d", rt, CUDART_VERSION);
    EXPECT(drv >= rt, "driver version %d older than runtime %d", drv, rt);

    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int warp, maxt, sms, smem, major, minor, maxgx, maxbz;
    CHECK(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0));
    CHECK(cudaDeviceGetAttribute(&maxt, cudaDevAttrMaxThreadsPerBlock, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, 0));
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    CHECK(cudaDeviceGetAttribute(&maxgx, cudaDevAttrMaxGridDimX, 0));
    CHECK(cudaDeviceGetAttribute(&maxbz, cudaDevAttrMaxBlockDimZ, 0));
    EXPECT(p.name[0] != 0, "empty device name");
    EXPECT(warp == 32 && p.warpSize == 32, "warp size %d/%d", warp, p.warpSize);
    EXPECT(maxt == 1024 && p.maxThreadsPerBlock == 1024, "max threads %d/%d", maxt, p.maxThreadsPerBlock);
    EXPECT(sms >= 1 && p.multiProcessorCount == sms, "SM count %d/%d", sms, p.multiProcessorCount);
    EXPECT(smem >= 48 * 1024 && p.sharedMemPerBlock == (size_t)smem, "shared mem %d/%zu", smem,
           p.sharedMemPerBlock);
    EXPECT(p.major == major && p.minor == minor && major * 10 + minor >= 80,
           "compute capability %d.%d / %d.%d (need >= 8.0 for these tests)", p.major, p.minor,
           major, minor);
    EXPECT(maxgx == 2147483647 && p.maxGridSize[0] == maxgx, "max grid x %d", maxgx);
    EXPECT(maxbz == 64 && p.maxThreadsDim[2] == 64, "max block z %d", maxbz);
    EXPECT(p.unifiedAddressing == 1, "unified addressing %d", p.unifiedAddressing);

    size_t free0 = 0, total = 0, free1 = 0, total1 = 0;
    CHECK(cudaMemGetInfo(&free0, &total));
    EXPECT(total >= (64u << 20) && free0 <= total, "mem info free %zu total %zu", free0, total);
    EXPECT(p.totalGlobalMem >= total / 2 && p.totalGlobalMem / 2 <= total,
           "totalGlobalMem %zu vs cudaMemGetInfo %zu", p.totalGlobalMem, total);
    char *big;
    CHECK(cudaMalloc(&big, 64u << 20));
    CHECK(cudaMemset(big, 0, 64u << 20));
    CHECK(cudaMemGetInfo(&free1, &total1));
    // Free memory is shared with other processes (on a CPU device the
    // machine's available memory bounds it), which may release more than
    // this program allocates between two queries: only the total is fixed.
    // How allocations are counted is tested with a fixed budget in
    // crates/libcuda/tests/memory_limit.rs.
    EXPECT(total1 == total && free1 <= total1, "after 64 MiB: free %zu of %zu (was %zu of %zu)", free1, total1, free0, total);

    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, big));
    EXPECT(a.type == cudaMemoryTypeDevice && a.device == 0 && a.devicePointer == big &&
               a.hostPointer == nullptr,
           "device pointer attrs: type %d dev %d dptr %p hptr %p", (int)a.type, a.device,
           a.devicePointer, a.hostPointer);
    CHECK(cudaPointerGetAttributes(&a, big + 12345));
    EXPECT(a.type == cudaMemoryTypeDevice && a.devicePointer == big + 12345,
           "offset device pointer attrs: type %d dptr %p", (int)a.type, a.devicePointer);
    float *pinned, *managed;
    CHECK(cudaMallocHost(&pinned, 4096));
    CHECK(cudaMallocManaged(&managed, 4096));
    CHECK(cudaPointerGetAttributes(&a, pinned));
    EXPECT(a.type == cudaMemoryTypeHost && a.hostPointer == pinned && a.devicePointer != nullptr,
           "pinned pointer attrs: type %d hptr %p dptr %p", (int)a.type, a.hostPointer, a.devicePointer);
    CHECK(cudaPointerGetAttributes(&a, managed));
    EXPECT(a.type == cudaMemoryTypeManaged, "managed pointer type %d", (int)a.type);
    int stack_var = 0;
    CHECK(cudaPointerGetAttributes(&a, &stack_var));
    EXPECT(a.type == cudaMemoryTypeUnregistered, "plain host pointer type %d", (int)a.type);

    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, uses_shared));
    EXPECT(fa.sharedSizeBytes == 4096, "static shared size %zu", fa.sharedSizeBytes);
    EXPECT(fa.maxThreadsPerBlock >= 1024 / 2 && fa.maxThreadsPerBlock <= 1024, "func max threads %d",
           fa.maxThreadsPerBlock);
    EXPECT(fa.ptxVersion >= 80 || fa.binaryVersion >= 80, "ptx %d binary %d", fa.ptxVersion,
           fa.binaryVersion);
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, uses_shared, 1024, 0));
    EXPECT(blocks >= 1, "occupancy %d", blocks);

    size_t stack = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
    EXPECT(stack >= 4096, "stack limit %zu", stack);

    float *out, hout[1024];
    CHECK(cudaMalloc(&out, sizeof hout));
    uses_shared<<<1, 1024>>>(out);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 1024; i++) EXPECT(hout[i] == (float)(1023 - i), "uses_shared[%d]", i);

    CHECK(cudaFree(big)); CHECK(cudaFree(out)); CHECK(cudaFree(managed)); CHECK(cudaFreeHost(pinned));
    return finish();
}
