// Graphs built with the node API: a fan-out/fan-in of kernels whose order is
// checked with atomic tickets, memset, memcpy and host nodes, a child graph
// node, event record and wait nodes linking two graphs on two streams,
// memory allocation and free nodes (an allocation valid between them, and
// one that outlives the launch until cudaFreeAsync), node queries (nodes,
// roots, edges, dependencies, dependents, types), cudaGraphClone with
// cudaGraphNodeFindInClone, cudaGraphExecKernelNodeSetParams, disabling a
// node in an executable graph, and cudaGraphDebugDotPrint.
//@ variants: shared cu12
#include "common.cuh"
#include <unistd.h>

#define N 1024

// CUDA 13 added edge data to the graph queries.
#if CUDART_VERSION >= 13000
#define GET_EDGES(g, from, to, n) cudaGraphGetEdges(g, from, to, nullptr, n)
#define GET_DEPS(node, deps, n) cudaGraphNodeGetDependencies(node, deps, nullptr, n)
#define GET_DEPENDENTS(node, deps, n) cudaGraphNodeGetDependentNodes(node, deps, nullptr, n)
#else
#define GET_EDGES(g, from, to, n) cudaGraphGetEdges(g, from, to, n)
#define GET_DEPS(node, deps, n) cudaGraphNodeGetDependencies(node, deps, n)
#define GET_DEPENDENTS(node, deps, n) cudaGraphNodeGetDependentNodes(node, deps, n)
#endif

__global__ void stamp(int *order, int *ticket, int id) {
    if (threadIdx.x == 0 && blockIdx.x == 0) order[id] = atomicAdd(ticket, 1);
}

__global__ void fill(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = v + i;
}

__global__ void add(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] += v;
}

static int g_host_calls = 0;
static void CUDART_CB host_count(void *arg) { g_host_calls += *(int *)arg; }

static cudaKernelNodeParams kernel(void *func, void **args) {
    cudaKernelNodeParams kp = {};
    kp.func = func;
    kp.gridDim = dim3(N / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = args;
    return kp;
}

int main() {
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    int *d, *order, *ticket, *h;
    CHECK(cudaMalloc(&d, N * sizeof(int)));
    CHECK(cudaMalloc(&order, 8 * sizeof(int)));
    CHECK(cudaMalloc(&ticket, sizeof(int)));
    CHECK(cudaMallocHost(&h, N * sizeof(int)));

    // ---- fan-out / fan-in: memset -> a -> {b, c} -> d -> copy -> host ----
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t reset, a, b, c, dn, copy, host;
    cudaMemsetParams mp = {};
    mp.dst = ticket;
    mp.value = 0;
    mp.elementSize = 4;
    mp.width = 1;
    mp.height = 1;
    CHECK(cudaGraphAddMemsetNode(&reset, g, nullptr, 0, &mp));
    int ids[4] = {0, 1, 2, 3};
    void *args_a[] = {&order, &ticket, &ids[0]}, *args_b[] = {&order, &ticket, &ids[1]};
    void *args_c[] = {&order, &ticket, &ids[2]}, *args_d[] = {&order, &ticket, &ids[3]};
    cudaKernelNodeParams kp = kernel((void *)stamp, args_a);
    kp.gridDim = dim3(1);
    kp.blockDim = dim3(32);
    CHECK(cudaGraphAddKernelNode(&a, g, &reset, 1, &kp));
    kp.kernelParams = args_c; // c added before b: insertion order is not the rule
    CHECK(cudaGraphAddKernelNode(&c, g, &a, 1, &kp));
    kp.kernelParams = args_b;
    CHECK(cudaGraphAddKernelNode(&b, g, &a, 1, &kp));
    cudaGraphNode_t bc[] = {b, c};
    kp.kernelParams = args_d;
    CHECK(cudaGraphAddKernelNode(&dn, g, bc, 2, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&copy, g, &dn, 1, h, order, 4 * sizeof(int), cudaMemcpyDeviceToHost));
    int inc = 1;
    cudaHostNodeParams hp = {host_count, &inc};
    CHECK(cudaGraphAddHostNode(&host, g, &copy, 1, &hp));

    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 7, "%zu nodes", count);
    CHECK(cudaGraphGetRootNodes(g, nullptr, &count));
    EXPECT(count == 1, "%zu root nodes", count);
    CHECK(GET_EDGES(g, nullptr, nullptr, &count));
    EXPECT(count == 7, "%zu edges", count);
    cudaGraphNode_t deps[4];
    count = 4;
    CHECK(GET_DEPS(dn, deps, &count));
    EXPECT(count == 2 && deps[0] == b && deps[1] == c, "d's dependencies (%zu)", count);
    count = 4;
    CHECK(GET_DEPENDENTS(a, deps, &count));
    EXPECT(count == 2 && deps[0] == c && deps[1] == b, "a's dependents (%zu)", count);
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(copy, &type));
    EXPECT(type == cudaGraphNodeTypeMemcpy, "node type %d", (int)type);
    CHECK(cudaGraphNodeGetType(host, &type));
    EXPECT(type == cudaGraphNodeTypeHost, "node type %d", (int)type);

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int rep = 0; rep < 3; rep++) {
        memset(h, 0xff, 4 * sizeof(int));
        CHECK(cudaGraphLaunch(exec, s1));
        CHECK(cudaStreamSynchronize(s1));
        EXPECT(h[0] == 0 && h[3] == 3 && h[1] >= 1 && h[1] <= 2 && h[2] >= 1 && h[2] <= 2 && h[1] != h[2],
               "tickets a=%d b=%d c=%d d=%d", h[0], h[1], h[2], h[3]);
    }
    EXPECT_EQ(g_host_calls, 3, "host node calls", 0);

    // A changed argument in the executable graph only; a disabled node.
    int *ticket2;
    CHECK(cudaMalloc(&ticket2, sizeof(int)));
    CHECK(cudaMemset(ticket2, 0, sizeof(int)));
    void *args_d2[] = {&order, &ticket2, &ids[3]};
    kp.kernelParams = args_d2;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, dn, &kp));
    CHECK(cudaGraphNodeSetEnabled(exec, b, 0));
    unsigned enabled = 1;
    CHECK(cudaGraphNodeGetEnabled(exec, b, &enabled));
    EXPECT(enabled == 0, "node b enabled after disabling");
    CHECK(cudaMemset(order, 0x7f, 4 * sizeof(int)));
    CHECK(cudaGraphLaunch(exec, s1));
    CHECK(cudaStreamSynchronize(s1));
    EXPECT(h[0] == 0 && h[2] == 1 && h[1] == 0x7f7f7f7f && h[3] == 0, "with b disabled and d on its own ticket: %d %d %d %d",
           h[0], h[1], h[2], h[3]);
    cudaKernelNodeParams got = {};
    CHECK(cudaGraphKernelNodeGetParams(dn, &got));
    EXPECT(*(int **)got.kernelParams[1] == ticket, "the graph's node still uses the first ticket");

    // Clone; the original may go.
    cudaGraph_t clone;
    CHECK(cudaGraphClone(&clone, g));
    cudaGraphNode_t dn_clone;
    CHECK(cudaGraphNodeFindInClone(&dn_clone, dn, clone));
    CHECK(cudaGraphNodeGetType(dn_clone, &type));
    EXPECT(type == cudaGraphNodeTypeKernel && dn_clone != dn, "the clone of d");
    char dot[64];
    snprintf(dot, sizeof dot, "/tmp/graph_nodes_%d.dot", (int)getpid());
    CHECK(cudaGraphDebugDotPrint(clone, dot, cudaGraphDebugDotFlagsVerbose));
    FILE *f = fopen(dot, "r");
    char text[4096] = {};
    if (f) {
        size_t got_bytes = fread(text, 1, sizeof text - 1, f);
        text[got_bytes] = 0;
        fclose(f);
        unlink(dot);
    }
    EXPECT(strstr(text, "digraph") && strstr(text, "->"), "DOT output: %.80s", text);
    CHECK(cudaGraphDestroy(g));
    cudaGraphExec_t exec_clone;
    CHECK(cudaGraphInstantiate(&exec_clone, clone, 0));
    CHECK(cudaGraphLaunch(exec_clone, s1));
    CHECK(cudaStreamSynchronize(s1));
    EXPECT(h[0] == 0 && h[3] == 3, "the clone runs: %d %d", h[0], h[3]);
    EXPECT_EQ(g_host_calls, 5, "host node calls", 1);

    // ---- a child graph: fill -> add, inside memset -> child -> copy ----
    cudaGraph_t child, parent;
    CHECK(cudaGraphCreate(&child, 0));
    CHECK(cudaGraphCreate(&parent, 0));
    int base = 100, plus = 7;
    void *fill_args[] = {&d, &base}, *add_args[] = {&d, &plus};
    cudaGraphNode_t cf, ca, pm, pc, pcopy;
    kp = kernel((void *)fill, fill_args);
    CHECK(cudaGraphAddKernelNode(&cf, child, nullptr, 0, &kp));
    kp = kernel((void *)add, add_args);
    CHECK(cudaGraphAddKernelNode(&ca, child, &cf, 1, &kp));
    mp.dst = d;
    mp.width = N;
    CHECK(cudaGraphAddMemsetNode(&pm, parent, nullptr, 0, &mp));
    CHECK(cudaGraphAddChildGraphNode(&pc, parent, &pm, 1, child));
    CHECK(cudaGraphAddMemcpyNode1D(&pcopy, parent, &pc, 1, h, d, N * sizeof(int), cudaMemcpyDeviceToHost));
    cudaGraph_t embedded;
    CHECK(cudaGraphChildGraphNodeGetGraph(pc, &embedded));
    CHECK(cudaGraphGetNodes(embedded, nullptr, &count));
    EXPECT(count == 2, "the child graph node holds %zu nodes", count);
    cudaGraphExec_t pexec;
    CHECK(cudaGraphInstantiate(&pexec, parent, 0));
    CHECK(cudaGraphLaunch(pexec, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 100 + i + 7, "child graph", i);

    // ---- event nodes: graph 1 on s1 records, graph 2 on s2 waits ----
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaGraph_t g1, g2;
    CHECK(cudaGraphCreate(&g1, 0));
    CHECK(cudaGraphCreate(&g2, 0));
    cudaGraphNode_t k1, r1, w2, k2, c2;
    int v1 = 1000, v2 = 5;
    void *a1[] = {&d, &v1}, *a2[] = {&d, &v2};
    kp = kernel((void *)fill, a1);
    CHECK(cudaGraphAddKernelNode(&k1, g1, nullptr, 0, &kp));
    CHECK(cudaGraphAddEventRecordNode(&r1, g1, &k1, 1, ev));
    CHECK(cudaGraphAddEventWaitNode(&w2, g2, nullptr, 0, ev));
    kp = kernel((void *)add, a2);
    CHECK(cudaGraphAddKernelNode(&k2, g2, &w2, 1, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&c2, g2, &k2, 1, h, d, N * sizeof(int), cudaMemcpyDeviceToHost));
    cudaEvent_t got_ev;
    CHECK(cudaGraphEventRecordNodeGetEvent(r1, &got_ev));
    EXPECT(got_ev == ev, "event of the record node");
    cudaGraphExec_t x1, x2;
    CHECK(cudaGraphInstantiate(&x1, g1, 0));
    CHECK(cudaGraphInstantiate(&x2, g2, 0));
    CHECK(cudaGraphLaunch(x1, s1));
    CHECK(cudaGraphLaunch(x2, s2));
    CHECK(cudaStreamSynchronize(s2));
    for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 1000 + i + 5, "event record/wait nodes", i);

    // ---- memory nodes: alloc -> fill -> copy -> free, launched twice ----
    cudaGraph_t gm;
    CHECK(cudaGraphCreate(&gm, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N * sizeof(int);
    cudaGraphNode_t alloc, use, back, freen;
    CHECK(cudaGraphAddMemAllocNode(&alloc, gm, nullptr, 0, &ap));
    int *m = (int *)ap.dptr;
    EXPECT(m != nullptr, "the allocation node's address");
    int v3 = 42;
    void *a3[] = {&m, &v3};
    kp = kernel((void *)fill, a3);
    CHECK(cudaGraphAddKernelNode(&use, gm, &alloc, 1, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&back, gm, &use, 1, h, m, N * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaGraphAddMemFreeNode(&freen, gm, &back, 1, m));
    cudaGraphExec_t xm;
    CHECK(cudaGraphInstantiate(&xm, gm, 0));
    for (int rep = 0; rep < 2; rep++) {
        memset(h, 0, N * sizeof(int));
        CHECK(cudaGraphLaunch(xm, s1));
        CHECK(cudaStreamSynchronize(s1));
        for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 42 + i, "allocation node memory", i);
    }
    // An allocation the graph does not free: usable after the launch, and
    // the graph cannot run again until it is freed.
    cudaGraph_t ga;
    CHECK(cudaGraphCreate(&ga, 0));
    cudaGraphNode_t alloc2, use2;
    CHECK(cudaGraphAddMemAllocNode(&alloc2, ga, nullptr, 0, &ap));
    int *m2 = (int *)ap.dptr;
    void *a4[] = {&m2, &v3};
    kp = kernel((void *)fill, a4);
    CHECK(cudaGraphAddKernelNode(&use2, ga, &alloc2, 1, &kp));
    cudaGraphExec_t xa;
    CHECK(cudaGraphInstantiate(&xa, ga, 0));
    CHECK(cudaGraphLaunch(xa, s1));
    CHECK(cudaMemcpyAsync(h, m2, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
    CHECK(cudaStreamSynchronize(s1));
    for (int i = 0; i < N; i++) EXPECT_EQ(h[i], 42 + i, "memory outliving the launch", i);
    CHECK_ERR(cudaGraphLaunch(xa, s1), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    CHECK(cudaFreeAsync(m2, s1));
    CHECK(cudaGraphLaunch(xa, s1));
    CHECK(cudaFreeAsync(m2, s1));
    CHECK(cudaStreamSynchronize(s1));

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphExecDestroy(exec_clone));
    CHECK(cudaGraphExecDestroy(pexec));
    CHECK(cudaGraphExecDestroy(x1));
    CHECK(cudaGraphExecDestroy(x2));
    CHECK(cudaGraphExecDestroy(xm));
    CHECK(cudaGraphExecDestroy(xa));
    CHECK(cudaGraphDestroy(clone));
    CHECK(cudaGraphDestroy(child));
    CHECK(cudaGraphDestroy(parent));
    CHECK(cudaGraphDestroy(g1));
    CHECK(cudaGraphDestroy(g2));
    CHECK(cudaGraphDestroy(gm));
    CHECK(cudaGraphDestroy(ga));
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaFree(d));
    CHECK(cudaFree(order));
    CHECK(cudaFree(ticket));
    CHECK(cudaFree(ticket2));
    CHECK(cudaFreeHost(h));
    return finish();
}
