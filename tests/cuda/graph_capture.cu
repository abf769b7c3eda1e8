// CUDA graphs: capture a sequence of memset, kernels, a host function and a
// copy on a stream (cudaStreamBeginCapture/EndCapture), instantiate and launch
// the graph several times, inspect its nodes, update the executable graph
// from a second capture with another kernel argument (cudaGraphExecUpdate),
// and build a small graph by hand (cudaGraphAddKernelNode with a dependency).
//@ variants: shared cu12
#include "common.cuh"

#define N 4096

__global__ void add(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] += v + i;
}

__global__ void twice(int *p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] *= 2;
}

static int g_host_calls = 0;
static void CUDART_CB host_count(void *) { g_host_calls++; }

int main() {
    int *d, *h;
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    CHECK(cudaMallocHost(&h, N * sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(d, 0, N * sizeof(int), s));
    add<<<N / 256, 256, 0, s>>>(d, 3);
    twice<<<N / 256, 256, 0, s>>>(d);
    CHECK(cudaLaunchHostFunc(s, host_count, nullptr));
    CHECK(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, s));
    cudaStreamCaptureStatus st;
    CHECK(cudaStreamIsCapturing(s, &st));
    EXPECT(st == cudaStreamCaptureStatusActive, "capture status %d", (int)st);
    CHECK(cudaStreamEndCapture(s, &g));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    EXPECT(nodes == 5, "captured %zu nodes, expected 5", nodes);

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int rep = 0; rep < 3; rep++) {
        memset(h, 0xff, N * sizeof(int));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 2 * (3 + i), "graph launch", i);
    }
    EXPECT_EQ(g_host_calls, 3, "host node calls", 0);

    // node types and kernel node parameters of the captured graph
    cudaGraphNode_t all[8];
    size_t count = 8;
    CHECK(cudaGraphGetNodes(g, all, &count));
    int kernels = 0, memsets = 0, memcpys = 0, hosts = 0;
    for (size_t k = 0; k < count; k++) {
        cudaGraphNodeType type;
        CHECK(cudaGraphNodeGetType(all[k], &type));
        if (type == cudaGraphNodeTypeKernel) {
            kernels++;
            cudaKernelNodeParams p;
            CHECK(cudaGraphKernelNodeGetParams(all[k], &p));
            EXPECT(p.gridDim.x == N / 256 && p.blockDim.x == 256 && p.sharedMemBytes == 0,
                   "kernel node dims %u x %u", p.gridDim.x, p.blockDim.x);
        }
        memsets += type == cudaGraphNodeTypeMemset;
        memcpys += type == cudaGraphNodeTypeMemcpy;
        hosts += type == cudaGraphNodeTypeHost;
    }
    EXPECT(kernels == 2 && memsets == 1 && memcpys == 1 && hosts == 1,
           "node types: %d kernels, %d memsets, %d memcpys, %d host", kernels, memsets, memcpys, hosts);

    // capture the same sequence with another argument and update the executable graph
    cudaGraph_t g_new;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(d, 0, N * sizeof(int), s));
    add<<<N / 256, 256, 0, s>>>(d, 10);
    twice<<<N / 256, 256, 0, s>>>(d);
    CHECK(cudaLaunchHostFunc(s, host_count, nullptr));
    CHECK(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &g_new));
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(exec, g_new, &info));
    EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 2 * (10 + i), "updated graph launch", i);
    EXPECT_EQ(g_host_calls, 4, "host node calls", 1);

    // a graph built by hand: add(d, 1) -> twice(d)
    cudaGraph_t g2;
    CHECK(cudaGraphCreate(&g2, 0));
    int one = 1;
    void *add_args[] = {&d, &one};
    void *twice_args[] = {&d};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add;
    kp.gridDim = dim3(N / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = add_args;
    cudaGraphNode_t n1, n2;
    CHECK(cudaGraphAddKernelNode(&n1, g2, nullptr, 0, &kp));
    kp.func = (void *)twice;
    kp.kernelParams = twice_args;
    CHECK(cudaGraphAddKernelNode(&n2, g2, &n1, 1, &kp));
    cudaGraphExec_t exec2;
    CHECK(cudaGraphInstantiate(&exec2, g2, 0));
    CHECK(cudaMemset(d, 0, N * sizeof(int)));
    CHECK(cudaGraphLaunch(exec2, s));
    CHECK(cudaGraphLaunch(exec2, s));
    CHECK(cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 2 * (2 * (1 + i) + 1 + i), "hand-built graph", i);

    CHECK(cudaGraphExecDestroy(exec)); CHECK(cudaGraphExecDestroy(exec2));
    CHECK(cudaGraphDestroy(g)); CHECK(cudaGraphDestroy(g2)); CHECK(cudaGraphDestroy(g_new));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d)); CHECK(cudaFreeHost(h));
    return finish();
}
