// Dynamic parallelism (CDP2): kernels that launch kernels, written from the
// CUDA programming guide's "CUDA Dynamic Parallelism" chapter.
//   - a recursive quicksort (children in device streams, several levels);
//   - children in one device stream, and in the NULL stream, run in order;
//   - a child sees the stores its parent made before the launch;
//   - a tail launch runs after the parent grid and its other children;
//   - fire-and-forget launches complete before the host sees the parent
//     complete; device-side events order two streams;
//   - device-side cudaMalloc passed to a child, freed by a tail launch;
//   - device-side cudaFuncGetAttributes and occupancy answer as the host's;
//   - errors: a bad configuration is returned by the launch and by
//     cudaGetLastError (per thread), the nesting depth limit, the pending
//     launch count limit, a fault in a child fails the parent's launch.
//@ nvcc-flags: -rdc=true
//@ variants: shared
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            printf("FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define EXPECT(c)                                                          \
    do {                                                                   \
        if (!(c)) {                                                        \
            printf("FAIL %s:%d: expected %s\n", __FILE__, __LINE__, #c);  \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

// ---- recursive quicksort --------------------------------------------------

__device__ void selection_sort(int *a, int lo, int hi) {
    for (int i = lo; i <= hi; ++i) {
        int m = i;
        for (int j = i + 1; j <= hi; ++j)
            if (a[j] < a[m]) m = j;
        int t = a[i]; a[i] = a[m]; a[m] = t;
    }
}

__device__ int max_sort_depth;

__global__ void quicksort(int *a, int lo, int hi, int depth) {
    atomicMax(&max_sort_depth, depth);
    if (hi - lo < 16 || depth >= 12) {
        selection_sort(a, lo, hi);
        return;
    }
    int pivot = a[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
        while (a[i] < pivot) ++i;
        while (a[j] > pivot) --j;
        if (i <= j) {
            int t = a[i]; a[i] = a[j]; a[j] = t;
            ++i; --j;
        }
    }
    // The two halves are independent: one stream each.
    if (lo < j) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(a, lo, j, depth + 1);
        cudaStreamDestroy(s);
    }
    if (i < hi) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(a, i, hi, depth + 1);
        cudaStreamDestroy(s);
    }
}

static void test_quicksort() {
    const int n = 20000;
    int *h = (int *)malloc(n * sizeof(int));
    unsigned x = 12345;
    for (int i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        h[i] = (int)(x >> 8) % 100000 - 50000;
    }
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(max_sort_depth, &zero, sizeof zero));
    quicksort<<<1, 1>>>(d, 0, n - 1, 0);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int *out = (int *)malloc(n * sizeof(int));
    CHECK(cudaMemcpy(out, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum_in = 0, sum_out = 0;
    for (int i = 0; i < n; ++i) { sum_in += h[i]; sum_out += out[i]; }
    EXPECT(sum_in == sum_out);
    for (int i = 1; i < n; ++i) EXPECT(out[i - 1] <= out[i]);
    int depth = 0;
    CHECK(cudaMemcpyFromSymbol(&depth, max_sort_depth, sizeof depth));
    EXPECT(depth >= 5);
    printf("quicksort: %d elements sorted, recursion depth %d\n", n, depth);
    CHECK(cudaFree(d));
    free(h);
    free(out);
}

// ---- ordering in one stream --------------------------------------------

struct Log {
    int next;
    int entries[64];
};

__global__ void append(Log *log, int tag) {
    log->entries[atomicAdd(&log->next, 1)] = tag;
}

__global__ void ordered_launches(Log *in_stream, Log *in_null) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int k = 0; k < 16; ++k) {
        append<<<1, 1, 0, s>>>(in_stream, k);
        append<<<1, 1>>>(in_null, 100 + k);
    }
    cudaStreamDestroy(s);
}

static void test_stream_order() {
    Log *d;
    CHECK(cudaMalloc(&d, 2 * sizeof(Log)));
    CHECK(cudaMemset(d, 0, 2 * sizeof(Log)));
    ordered_launches<<<1, 1>>>(d, d + 1);
    CHECK(cudaDeviceSynchronize());
    Log h[2];
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h[0].next == 16 && h[1].next == 16);
    for (int k = 0; k < 16; ++k) {
        EXPECT(h[0].entries[k] == k);
        EXPECT(h[1].entries[k] == 100 + k);
    }
    CHECK(cudaFree(d));
    printf("stream order: 16 launches in a device stream and 16 in the NULL stream ran in order\n");
}

// ---- a child sees its parent's stores -----------------------------------

__global__ void check_block(const int *values, int base, int *mismatches) {
    int i = threadIdx.x;
    if (values[i] != (base + i) * 3) atomicAdd(mismatches, 1);
}

__global__ void writes_then_launches(int *values, int *mismatches) {
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    values[gid] = gid * 3;
    __syncthreads();
    if (threadIdx.x == 0)
        check_block<<<1, blockDim.x>>>(values + blockIdx.x * blockDim.x, blockIdx.x * blockDim.x, mismatches);
}

static void test_parent_stores_visible() {
    int *values, *mismatches;
    CHECK(cudaMalloc(&values, 8 * 64 * sizeof(int)));
    CHECK(cudaMalloc(&mismatches, sizeof(int)));
    CHECK(cudaMemset(values, 0xff, 8 * 64 * sizeof(int)));
    CHECK(cudaMemset(mismatches, 0, sizeof(int)));
    writes_then_launches<<<8, 64>>>(values, mismatches);
    CHECK(cudaDeviceSynchronize());
    int m = -1;
    CHECK(cudaMemcpy(&m, mismatches, sizeof m, cudaMemcpyDeviceToHost));
    EXPECT(m == 0);
    CHECK(cudaFree(values));
    CHECK(cudaFree(mismatches));
    printf("visibility: 8 children each saw their parent block's 64 stores\n");
}

// ---- tail launch, fire-and-forget, events -------------------------------

struct Order {
    int counter;
    int parent_blocks_done;
    int child;         // when the ordinary child ran
    int tail;          // when the tail launch ran
    int tail_saw_blocks;
    int tail_saw_child;
    int fire_and_forget;
    int first_stream;  // when the child in stream 1 ran
    int second_stream; // when the child in stream 2 (after the event) ran
    int second_saw_first;
};

__global__ void tail_kernel(Order *o) {
    o->tail = atomicAdd(&o->counter, 1);
    o->tail_saw_blocks = o->parent_blocks_done;
    o->tail_saw_child = o->child >= 0;
}

__global__ void child_kernel(Order *o) { o->child = atomicAdd(&o->counter, 1); }

__global__ void fire_and_forget_kernel(Order *o) { o->fire_and_forget = 1; }

__global__ void first_stream_kernel(Order *o) { o->first_stream = atomicAdd(&o->counter, 1); }

__global__ void second_stream_kernel(Order *o) {
    o->second_stream = atomicAdd(&o->counter, 1);
    o->second_saw_first = o->first_stream >= 0;
}

__global__ void tail_parent(Order *o) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        // Launched first, from the first block: it must still wait for the
        // whole grid and for the ordinary child launched by the last block.
        tail_kernel<<<1, 1, 0, cudaStreamTailLaunch>>>(o);
        fire_and_forget_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(o);
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
        child_kernel<<<1, 1>>>(o);
        cudaStream_t s1, s2;
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
        cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
        cudaEvent_t e;
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        first_stream_kernel<<<1, 1, 0, s1>>>(o);
        cudaEventRecord(e, s1);
        cudaStreamWaitEvent(s2, e, 0);
        second_stream_kernel<<<1, 1, 0, s2>>>(o);
        cudaEventDestroy(e);
        cudaStreamDestroy(s1);
        cudaStreamDestroy(s2);
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&o->parent_blocks_done, 1);
}

static void test_tail_launch() {
    Order h = {0, 0, -1, -1, 0, 0, 0, -1, -1, 0};
    Order *d;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaEvent_t done;
    CHECK(cudaEventCreate(&done));
    tail_parent<<<16, 32, 0, stream>>>(d);
    CHECK(cudaEventRecord(done, stream));
    // The host sees the parent complete only with all its children.
    CHECK(cudaEventSynchronize(done));
    CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h.counter == 4);
    EXPECT(h.child >= 0 && h.tail > h.child);
    EXPECT(h.tail_saw_blocks == 16);
    EXPECT(h.tail_saw_child == 1);
    EXPECT(h.fire_and_forget == 1);
    EXPECT(h.first_stream >= 0 && h.second_stream > h.first_stream && h.second_saw_first == 1);
    CHECK(cudaEventDestroy(done));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(d));
    printf("tail launch: ran after the 16 parent blocks and the other children\n");
}

// ---- device-side cudaMalloc ---------------------------------------------

__global__ void sum_child(const int *p, int n, long long *out) {
    long long s = 0;
    for (int i = 0; i < n; ++i) s += p[i];
    *out = s;
}

__global__ void free_child(int *p) { cudaFree(p); }

__global__ void malloc_parent(int n, long long *out, int *status) {
    int *p = nullptr;
    cudaError_t e = cudaMalloc((void **)&p, n * sizeof(int));
    if (e != cudaSuccess || p == nullptr) {
        *status = 1;
        return;
    }
    for (int i = 0; i < n; ++i) p[i] = i + 1;
    sum_child<<<1, 1>>>(p, n, out);
    free_child<<<1, 1, 0, cudaStreamTailLaunch>>>(p);
    int dev = -1, count = 0, warp = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev != 0) *status = 2;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count != 1) *status = 3;
    if (cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0) != cudaSuccess || warp != 32) *status = 4;
}

static void test_device_malloc() {
    long long *out;
    int *status;
    CHECK(cudaMalloc(&out, sizeof(long long)));
    CHECK(cudaMalloc(&status, sizeof(int)));
    CHECK(cudaMemset(out, 0, sizeof(long long)));
    CHECK(cudaMemset(status, 0, sizeof(int)));
    malloc_parent<<<1, 1>>>(1000, out, status);
    CHECK(cudaDeviceSynchronize());
    long long s = 0;
    int st = -1;
    CHECK(cudaMemcpy(&s, out, sizeof s, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&st, status, sizeof st, cudaMemcpyDeviceToHost));
    EXPECT(st == 0);
    EXPECT(s == 1000LL * 1001 / 2);
    CHECK(cudaFree(out));
    CHECK(cudaFree(status));
    printf("device malloc: a child summed the parent's cudaMalloc'd array\n");
}

// ---- device-side queries --------------------------------------------------

__global__ void with_shared(int *out) {
    __shared__ int tile[300];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

__global__ void query(cudaFuncAttributes *attrs, int *blocks, int *status) {
    *status = cudaFuncGetAttributes(attrs, (const void *)with_shared);
    status[1] = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)with_shared, 128, 40000);
    status[2] = cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks + 1, (const void *)with_shared, 256, 0,
                                                                       cudaOccupancyDefault);
}

static void test_queries() {
    cudaFuncAttributes *d_attrs;
    int *d_blocks, *d_status;
    CHECK(cudaMalloc(&d_attrs, sizeof(cudaFuncAttributes)));
    CHECK(cudaMalloc(&d_blocks, 2 * sizeof(int)));
    CHECK(cudaMalloc(&d_status, 3 * sizeof(int)));
    CHECK(cudaMemset(d_status, 0xff, 3 * sizeof(int)));
    query<<<1, 1>>>(d_attrs, d_blocks, d_status);
    CHECK(cudaDeviceSynchronize());
    cudaFuncAttributes dev, host;
    int blocks[2], status[3], host_blocks[2];
    CHECK(cudaMemcpy(&dev, d_attrs, sizeof dev, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(blocks, d_blocks, sizeof blocks, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(status, d_status, sizeof status, cudaMemcpyDeviceToHost));
    EXPECT(status[0] == cudaSuccess && status[1] == cudaSuccess && status[2] == cudaSuccess);
    // The device answers as the host does.
    CHECK(cudaFuncGetAttributes(&host, with_shared));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&host_blocks[0], with_shared, 128, 40000));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&host_blocks[1], with_shared, 256, 0));
    EXPECT(dev.sharedSizeBytes == host.sharedSizeBytes && dev.sharedSizeBytes >= 1200);
    EXPECT(dev.constSizeBytes == host.constSizeBytes && dev.localSizeBytes == host.localSizeBytes);
    EXPECT(dev.maxThreadsPerBlock == host.maxThreadsPerBlock && dev.numRegs == host.numRegs);
    EXPECT(dev.ptxVersion == host.ptxVersion && dev.binaryVersion == host.binaryVersion);
    EXPECT(dev.maxDynamicSharedSizeBytes == host.maxDynamicSharedSizeBytes);
    if (!(blocks[0] == host_blocks[0] && blocks[1] == host_blocks[1] && blocks[0] > 0))
        printf("occupancy: device %d %d, host %d %d\n", blocks[0], blocks[1], host_blocks[0], host_blocks[1]);
    EXPECT(blocks[0] == host_blocks[0] && blocks[1] == host_blocks[1] && blocks[0] > 0);
    CHECK(cudaFree(d_attrs));
    CHECK(cudaFree(d_blocks));
    CHECK(cudaFree(d_status));
    printf("queries: device-side cudaFuncGetAttributes and occupancy agree with the host's\n");
}

// ---- errors ---------------------------------------------------------------

struct Errors {
    int launch_result;
    int last_error;
    int peek_before;
    int last_error_again;
    int other_thread;
    int ran;
};

__global__ void never_runs(Errors *e) { atomicAdd(&e->ran, 1); }

__global__ void bad_configuration(Errors *e) {
    if (threadIdx.x == 0) {
        // 2048 threads per block: more than any device allows.
        void *buf = cudaGetParameterBufferV2((void *)never_runs, dim3(1), dim3(2048), 0);
        if (buf) {
            *(Errors **)buf = e;
            e->launch_result = cudaLaunchDeviceV2(buf, 0);
        }
        never_runs<<<1, 2048>>>(e);
    }
    __syncthreads();
    // The last error is thread 0's alone.
    if (threadIdx.x == 1) e->other_thread = cudaPeekAtLastError();
    __syncthreads();
    if (threadIdx.x == 0) {
        e->peek_before = cudaPeekAtLastError();
        e->last_error = cudaGetLastError();
        e->last_error_again = cudaGetLastError();
    }
}

__device__ int deepest;
__device__ int depth_error;

__global__ void nest(int depth) {
    atomicMax(&deepest, depth);
    nest<<<1, 1>>>(depth + 1);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) depth_error = e;
}

__global__ void count_child(int *ran) { atomicAdd(ran, 1); }

__global__ void many_launches(int count, int *ok, int *exceeded, int *other, int *ran) {
    for (int i = 0; i < count; ++i) {
        count_child<<<1, 1>>>(ran);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) atomicAdd(ok, 1);
        else if (e == cudaErrorLaunchPendingCountExceeded) atomicAdd(exceeded, 1);
        else atomicAdd(other, 1);
    }
}

__global__ void faulting_child(int *p) { *p = 1; __trap(); }

__global__ void faulting_parent(int *p) { faulting_child<<<1, 1>>>(p); }

static void test_errors() {
    Errors *e;
    CHECK(cudaMalloc(&e, sizeof(Errors)));
    CHECK(cudaMemset(e, 0, sizeof(Errors)));
    bad_configuration<<<1, 2>>>(e);
    CHECK(cudaDeviceSynchronize());
    Errors h;
    CHECK(cudaMemcpy(&h, e, sizeof h, cudaMemcpyDeviceToHost));
    EXPECT(h.launch_result == cudaErrorInvalidConfiguration);
    EXPECT(h.peek_before == cudaErrorInvalidConfiguration);
    EXPECT(h.last_error == cudaErrorInvalidConfiguration);
    EXPECT(h.last_error_again == cudaSuccess);
    EXPECT(h.other_thread == cudaSuccess);
    EXPECT(h.ran == 0);
    printf("errors: a bad configuration is returned by the launch and by cudaGetLastError of that thread only\n");

    int zero = 0;
    CHECK(cudaMemcpyToSymbol(deepest, &zero, sizeof zero));
    CHECK(cudaMemcpyToSymbol(depth_error, &zero, sizeof zero));
    nest<<<1, 1>>>(0);
    CHECK(cudaDeviceSynchronize());
    int deep = 0, derr = 0;
    CHECK(cudaMemcpyFromSymbol(&deep, deepest, sizeof deep));
    CHECK(cudaMemcpyFromSymbol(&derr, depth_error, sizeof derr));
    EXPECT(derr == cudaErrorLaunchMaxDepthExceeded);
    EXPECT(deep >= 23 && deep <= 24);
    printf("errors: nesting stopped at depth %d with cudaErrorLaunchMaxDepthExceeded\n", deep);

    size_t limit = 0;
    CHECK(cudaDeviceGetLimit(&limit, cudaLimitDevRuntimePendingLaunchCount));
    EXPECT(limit == 2048);
    CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 32));
    int *counts;
    CHECK(cudaMalloc(&counts, 4 * sizeof(int)));
    CHECK(cudaMemset(counts, 0, 4 * sizeof(int)));
    many_launches<<<1, 1>>>(200, counts, counts + 1, counts + 2, counts + 3);
    CHECK(cudaDeviceSynchronize());
    int c[4];
    CHECK(cudaMemcpy(c, counts, sizeof c, cudaMemcpyDeviceToHost));
    // Every launch either ran or was refused for the pending count; none
    // was refused while fewer than 32 were pending.
    EXPECT(c[0] + c[1] == 200 && c[2] == 0);
    EXPECT(c[0] >= 32 && c[3] == c[0]);
    CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 2048));
    printf("errors: pending launch limit 32: %d launched, %d refused with cudaErrorLaunchPendingCountExceeded\n", c[0], c[1]);

    // A child's fault is its parent launch's (sticky) error.
    int *p;
    CHECK(cudaMalloc(&p, sizeof(int)));
    faulting_parent<<<1, 1>>>(p);
    cudaError_t r = cudaDeviceSynchronize();
    EXPECT(r == cudaErrorLaunchFailure);
    printf("errors: a trap in a child failed the parent's launch: %s\n", cudaGetErrorName(r));
}

int main() {
    test_quicksort();
    test_stream_order();
    test_parent_stores_visible();
    test_tail_launch();
    test_device_malloc();
    test_queries();
    test_errors();
    printf("PASS dynamic_parallelism\n");
    return 0;
}
