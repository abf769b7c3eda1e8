// Stream capture across streams and the rules of capture: a capture forked
// to two more streams through events and joined back (the captured graph's
// edges, the results of launching it), cudaStreamGetCaptureInfo and
// cudaStreamUpdateCaptureDependencies with a node added to the graph being
// captured, and the errors CUDA reports for what cannot be captured:
// synchronising or querying a capturing stream, cudaMalloc in a global-mode
// capture (allowed in relaxed mode and for a thread that switched to relaxed
// with cudaThreadExchangeStreamCaptureMode), the legacy stream while a
// blocking stream captures, querying an event recorded in a capture, a fork
// never joined back, ending a capture from another thread, capturing the
// legacy stream. Each invalidated capture must still be ended and returns
// no graph.
//@ variants: shared cu12
#include "common.cuh"
#include <thread>

#define N 2048

#if CUDART_VERSION >= 13000
#define CAPTURE_INFO(s, st, id, g, deps, n) cudaStreamGetCaptureInfo(s, st, id, g, deps, nullptr, n)
#define UPDATE_DEPS(s, deps, n, flags) cudaStreamUpdateCaptureDependencies(s, deps, nullptr, n, flags)
#define GET_EDGES(g, from, to, n) cudaGraphGetEdges(g, from, to, nullptr, n)
#else
#define CAPTURE_INFO(s, st, id, g, deps, n) cudaStreamGetCaptureInfo(s, st, id, g, deps, n)
#define UPDATE_DEPS(s, deps, n, flags) cudaStreamUpdateCaptureDependencies(s, deps, n, flags)
#define GET_EDGES(g, from, to, n) cudaGraphGetEdges(g, from, to, n)
#endif

__global__ void fill(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = v + i;
}

__global__ void combine(int *out, const int *a, const int *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = a[i] * 2 + b[i];
}

__global__ void add(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] += v;
}

// Ends a capture that an error invalidated: it must report that and give
// no graph.
static void expect_invalidated(cudaStream_t s, const char *what) {
    cudaGraph_t g = (cudaGraph_t)0x1;
    cudaError_t e = cudaStreamEndCapture(s, &g);
    EXPECT(e == cudaErrorStreamCaptureInvalidated && g == nullptr, "%s: cudaStreamEndCapture returned %s, graph %p", what,
           cudaGetErrorName(e), (void *)g);
    (void)cudaGetLastError();
}

int main() {
    cudaStream_t s0, s1, s2, blocking;
    CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaStreamCreate(&blocking));
    cudaEvent_t fork, j1, j2;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&j1, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&j2, cudaEventDisableTiming));
    int *a, *b, *out, *h;
    CHECK(cudaMalloc(&a, N * sizeof(int)));
    CHECK(cudaMalloc(&b, N * sizeof(int)));
    CHECK(cudaMalloc(&out, N * sizeof(int)));
    CHECK(cudaMallocHost(&h, N * sizeof(int)));

    // ---- fork s0 -> {s1, s2}, join back into s0 ----
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(out, 0, N * sizeof(int), s0));
    CHECK(cudaEventRecord(fork, s0));
    CHECK(cudaStreamWaitEvent(s1, fork, 0));
    CHECK(cudaStreamWaitEvent(s2, fork, 0));
    cudaStreamCaptureStatus st;
    CHECK(cudaStreamIsCapturing(s1, &st));
    EXPECT(st == cudaStreamCaptureStatusActive, "s1 joined the capture: status %d", (int)st);
    fill<<<N / 256, 256, 0, s1>>>(a, 10);
    fill<<<N / 256, 256, 0, s2>>>(b, 1000);
    CHECK(cudaEventRecord(j1, s1));
    CHECK(cudaEventRecord(j2, s2));
    CHECK(cudaStreamWaitEvent(s0, j1, 0));
    CHECK(cudaStreamWaitEvent(s0, j2, 0));
    unsigned long long id0 = 0, id1 = 0;
    const cudaGraphNode_t *deps = nullptr;
    size_t ndeps = 0;
    cudaGraph_t capturing = nullptr;
    CHECK(CAPTURE_INFO(s0, &st, &id0, &capturing, &deps, &ndeps));
    CHECK(CAPTURE_INFO(s1, &st, &id1, nullptr, nullptr, nullptr));
    EXPECT(id0 != 0 && id0 == id1, "one capture sequence: ids %llu %llu", id0, id1);
    EXPECT(ndeps == 2 && capturing != nullptr, "s0 depends on both forks: %zu", ndeps);
    combine<<<N / 256, 256, 0, s0>>>(out, a, b);
    // A node added by hand to the graph being captured, then made the
    // stream's dependency.
    int plus = 3;
    void *add_args[] = {&out, &plus};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add;
    kp.gridDim = dim3(N / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = add_args;
    CHECK(CAPTURE_INFO(s0, &st, nullptr, nullptr, &deps, &ndeps));
    EXPECT(ndeps == 1, "one dependency after the combine: %zu", ndeps);
    cudaGraphNode_t manual;
    CHECK(cudaGraphAddKernelNode(&manual, capturing, deps, ndeps, &kp));
    CHECK(UPDATE_DEPS(s0, &manual, 1, cudaStreamSetCaptureDependencies));
    CHECK(cudaMemcpyAsync(h, out, N * sizeof(int), cudaMemcpyDeviceToHost, s0));
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s0, &g));
    EXPECT(g == capturing, "the graph being captured is the one returned");
    CHECK(cudaStreamIsCapturing(s1, &st));
    EXPECT(st == cudaStreamCaptureStatusNone, "s1 left the capture: status %d", (int)st);
    size_t nodes = 0, edges = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    CHECK(GET_EDGES(g, nullptr, nullptr, &edges));
    // memset, fill a, fill b, combine, add, copy; memset->a, memset->b,
    // a->combine, b->combine, combine->add, add->copy.
    EXPECT(nodes == 6 && edges == 6, "%zu nodes, %zu edges", nodes, edges);
    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (int rep = 0; rep < 2; rep++) {
        memset(h, 0, N * sizeof(int));
        CHECK(cudaGraphLaunch(x, s0));
        CHECK(cudaStreamSynchronize(s0));
        for (int i = 0; i < N; i++) EXPECT_EQ(h[i], (10 + i) * 2 + 1000 + i + 3, "forked capture", i);
    }

    // ---- what cannot be captured ----
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaStreamSynchronize(s0), cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamIsCapturing(s0, &st));
    EXPECT(st == cudaStreamCaptureStatusInvalidated, "status after synchronising: %d", (int)st);
    expect_invalidated(s0, "cudaStreamSynchronize");

    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaStreamQuery(s0), cudaErrorStreamCaptureUnsupported);
    expect_invalidated(s0, "cudaStreamQuery");

    int *extra = nullptr;
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK_ERR(cudaMalloc(&extra, 256), cudaErrorStreamCaptureUnsupported);
    expect_invalidated(s0, "cudaMalloc in a global capture");

    // Relaxed mode allows it; so does switching this thread to relaxed.
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed));
    CHECK(cudaMalloc(&extra, 256));
    CHECK(cudaFree(extra));
    fill<<<N / 256, 256, 0, s0>>>(a, 1);
    CHECK(cudaStreamEndCapture(s0, &g));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    EXPECT(mode == cudaStreamCaptureModeGlobal, "the previous mode: %d", (int)mode);
    CHECK(cudaMalloc(&extra, 256));
    CHECK(cudaFree(extra));
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    CHECK(cudaStreamEndCapture(s0, &g));
    CHECK(cudaGraphDestroy(g));

    // The legacy stream while a blocking stream captures.
    CHECK(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeRelaxed));
    CHECK_ERR(cudaStreamIsCapturing(cudaStreamLegacy, &st), cudaErrorStreamCaptureImplicit);
    CHECK_ERR(cudaMemsetAsync(a, 0, 16, cudaStreamLegacy), cudaErrorStreamCaptureImplicit);
    expect_invalidated(blocking, "legacy stream work");
    // A non-blocking stream's capture leaves the legacy stream usable.
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed));
    CHECK(cudaMemsetAsync(a, 0, 16, cudaStreamLegacy));
    CHECK(cudaStreamEndCapture(s0, &g));
    CHECK(cudaGraphDestroy(g));

    // An event recorded in a capture cannot be queried or waited for.
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s0));
    CHECK_ERR(cudaEventQuery(fork), cudaErrorCapturedEvent);
    CHECK_ERR(cudaEventSynchronize(fork), cudaErrorCapturedEvent);
    (void)cudaGetLastError();
    // An event recorded outside the capture cannot be waited on inside it.
    CHECK(cudaEventRecord(j1, s1));
    CHECK_ERR(cudaStreamWaitEvent(s0, j1, 0), cudaErrorStreamCaptureIsolation);
    expect_invalidated(s0, "waiting on an outside event");

    // A fork that is never joined back.
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, s0));
    CHECK(cudaStreamWaitEvent(s1, fork, 0));
    fill<<<N / 256, 256, 0, s1>>>(a, 2);
    g = (cudaGraph_t)0x1;
    CHECK_ERR(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureUnjoined);
    EXPECT(g == nullptr, "no graph from an unjoined capture");
    (void)cudaGetLastError();
    CHECK(cudaStreamIsCapturing(s1, &st));
    EXPECT(st == cudaStreamCaptureStatusNone, "the forked stream left the capture: %d", (int)st);

    // A global capture is ended by the thread that began it.
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    cudaError_t other = cudaSuccess;
    std::thread t([&] {
        cudaGraph_t tg = nullptr;
        other = cudaStreamEndCapture(s0, &tg);
    });
    t.join();
    EXPECT(other == cudaErrorStreamCaptureWrongThread, "ending from another thread: %s", cudaGetErrorName(other));
    CHECK(cudaStreamEndCapture(s0, &g));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed));
    std::thread t2([&] {
        cudaGraph_t tg = nullptr;
        other = cudaStreamEndCapture(s0, &tg);
        if (tg) cudaGraphDestroy(tg);
    });
    t2.join();
    EXPECT(other == cudaSuccess, "a relaxed capture ends on any thread: %s", cudaGetErrorName(other));

    // The legacy stream cannot be captured.
    CHECK_ERR(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported);
    (void)cudaGetLastError();

    // Everything still works afterwards.
    CHECK(cudaGraphLaunch(x, s0));
    CHECK(cudaStreamSynchronize(s0));
    EXPECT_EQ(h[5], (10 + 5) * 2 + 1000 + 5 + 3, "after the errors", 5);
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(capturing));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaFree(out));
    CHECK(cudaFreeHost(h));
    return finish();
}
