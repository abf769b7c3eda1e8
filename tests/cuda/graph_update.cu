// The way llama.cpp drives graphs, token after token: capture the step in
// relaxed mode, instantiate once, then for each new capture try
// cudaGraphExecUpdate and fall back to a new instantiation when the update
// fails (here: a step with one more kernel changes the topology, a memset
// where a kernel was changes a node's type); change kernel arguments of the
// captured graph through cudaGraphKernelNodeGetParams/SetParams (editing the
// returned kernelParams array) and of the executable graph with
// cudaGraphExecKernelNodeSetParams; launches through cudaLaunchKernelEx and
// cudaLaunchCooperativeKernel are captured too; cudaGraphInstantiateWithParams
// reports its result.
//@ variants: shared cu12
#include "common.cuh"

#define N 4096
#define STEPS 12

__global__ void scale_add(float *x, const float *w, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = x[i] * a + w[i];
}

__global__ void zero(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.0f;
}

__global__ void bump(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}

// What one "token" computes on the host: STEPS kernels, then an optional bump.
static void reference(float *x, const float *w, int token, bool extra) {
    for (int i = 0; i < N; i++) x[i] = 0.0f;
    for (int s = 0; s < STEPS; s++) {
        float a = 0.5f + 0.01f * (token + s);
        for (int i = 0; i < N; i++) x[i] = x[i] * a + w[i];
    }
    if (extra)
        for (int i = 0; i < N; i++) x[i] += 1.0f;
}

// Captures one token's work on `s` in relaxed mode.
static cudaGraph_t capture(cudaStream_t s, float *x, const float *w, int token, bool extra, bool memset_first) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    if (memset_first)
        CHECK(cudaMemsetAsync(x, 0, N * sizeof(float), s));
    else
        zero<<<N / 256, 256, 0, s>>>(x, N); // the same work as a kernel node
    for (int st = 0; st < STEPS; st++) {
        float a = 0.5f + 0.01f * (token + st);
        if (st % 3 == 1) {
            // cudaLaunchKernelEx, as newer code launches
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(N / 256);
            cfg.blockDim = dim3(256);
            cfg.stream = s;
            int n = N;
            CHECK(cudaLaunchKernelEx(&cfg, scale_add, x, w, a, n));
        } else if (st % 3 == 2) {
            int n = N;
            void *args[] = {&x, &w, &a, &n};
            // one block: every block of a cooperative launch must fit at once
            CHECK(cudaLaunchCooperativeKernel((void *)scale_add, dim3(1), dim3(256), args, 0, s));
        } else {
            scale_add<<<N / 256, 256, 0, s>>>(x, w, a, N);
        }
    }
    if (extra) bump<<<N / 256, 256, 0, s>>>(x, 1.0f, N);
    CHECK(cudaStreamEndCapture(s, &g));
    return g;
}

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x, *w, *h, *ref;
    CHECK(cudaMalloc(&x, N * sizeof(float)));
    CHECK(cudaMalloc(&w, N * sizeof(float)));
    CHECK(cudaMallocHost(&h, N * sizeof(float)));
    ref = (float *)malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) h[i] = (float)(i % 17) * 0.25f;
    CHECK(cudaMemcpy(w, h, N * sizeof(float), cudaMemcpyHostToDevice));

    cudaGraphExec_t exec = nullptr;
    int updates = 0, instantiations = 0, topology_failures = 0, type_failures = 0;
    for (int token = 0; token < 8; token++) {
        bool extra = token == 3 || token == 4;  // the step's shape changes for two tokens
        bool odd_first = token == 6;            // a kernel where a memset was
        cudaGraph_t g = capture(s, x, w, token, extra, !odd_first);
        if (exec) {
            cudaGraphExecUpdateResultInfo info;
            cudaError_t e = cudaGraphExecUpdate(exec, g, &info);
            if (e == cudaSuccess) {
                EXPECT(info.result == cudaGraphExecUpdateSuccess, "token %d: success with result %d", token, (int)info.result);
                updates++;
            } else {
                EXPECT(e == cudaErrorGraphExecUpdateFailure, "token %d: update returned %s", token, cudaGetErrorName(e));
                topology_failures += info.result == cudaGraphExecUpdateErrorTopologyChanged;
                type_failures += info.result == cudaGraphExecUpdateErrorNodeTypeChanged;
                (void)cudaGetLastError();
                CHECK(cudaGraphExecDestroy(exec));
                exec = nullptr;
            }
        }
        if (!exec) {
            CHECK(cudaGraphInstantiate(&exec, g, 0));
            instantiations++;
        }
        CHECK(cudaGraphDestroy(g));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaMemcpyAsync(h, x, N * sizeof(float), cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        float *hw = (float *)malloc(N * sizeof(float));
        CHECK(cudaMemcpy(hw, w, N * sizeof(float), cudaMemcpyDeviceToHost));
        reference(ref, hw, token, extra);
        free(hw);
        for (int i = 0; i < N; i++) EXPECT_NEAR(h[i], ref[i], 1e-5, 1e-5, "token output", token * N + i);
    }
    // Tokens 0 and 3 (shape change), 5 (shape back), 6 (type change) and
    // 7 (type back) instantiate; 1, 2 and 4 update.
    EXPECT(instantiations == 5 && updates == 3, "%d instantiations, %d updates", instantiations, updates);
    EXPECT(topology_failures == 2 && type_failures == 2, "%d topology, %d node type failures", topology_failures, type_failures);

    // Arguments of a captured kernel node, the old llama.cpp way: read the
    // parameters, replace one pointer in the returned kernelParams array,
    // set them back, then update the executable graph from the graph.
    float *x2;
    CHECK(cudaMalloc(&x2, N * sizeof(float)));
    CHECK(cudaMemset(x2, 0, N * sizeof(float)));
    cudaGraph_t g = capture(s, x, w, 0, false, true);
    cudaGraphExec_t ex2;
    cudaGraphInstantiateParams ip = {};
    CHECK(cudaGraphInstantiateWithParams(&ex2, g, &ip));
    EXPECT(ip.result_out == cudaGraphInstantiateSuccess && ip.errNode_out == nullptr, "instantiate result %d", (int)ip.result_out);
    cudaGraphNode_t nodes[32];
    size_t count = 32;
    CHECK(cudaGraphGetNodes(g, nodes, &count));
    int changed = 0;
    for (size_t k = 0; k < count; k++) {
        cudaGraphNodeType type;
        CHECK(cudaGraphNodeGetType(nodes[k], &type));
        if (type != cudaGraphNodeTypeKernel) continue;
        cudaKernelNodeParams p;
        CHECK(cudaGraphKernelNodeGetParams(nodes[k], &p));
        EXPECT(p.func == (void *)scale_add, "kernel node %zu: function %p", k, p.func);
        EXPECT(*(float **)p.kernelParams[0] == x, "kernel node %zu: first argument", k);
        p.kernelParams[0] = &x2;
        CHECK(cudaGraphKernelNodeSetParams(nodes[k], &p));
        changed++;
    }
    EXPECT(changed == STEPS, "%d kernel nodes", changed);
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(ex2, g, &info));
    CHECK(cudaMemset(x, 0, N * sizeof(float)));
    CHECK(cudaGraphLaunch(ex2, s));
    CHECK(cudaMemcpyAsync(h, x2, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    float *hw = (float *)malloc(N * sizeof(float));
    CHECK(cudaMemcpy(hw, w, N * sizeof(float), cudaMemcpyDeviceToHost));
    reference(ref, hw, 0, false);
    for (int i = 0; i < N; i++) EXPECT_NEAR(h[i], ref[i], 1e-5, 1e-5, "kernels moved to x2", i);

    // The executable graph alone: its last kernel node scales by 0 now.
    cudaKernelNodeParams p;
    CHECK(cudaGraphKernelNodeGetParams(nodes[count - 1], &p));
    float zero = 0.0f;
    p.kernelParams[2] = &zero;
    CHECK(cudaGraphExecKernelNodeSetParams(ex2, nodes[count - 1], &p));
    CHECK(cudaGraphLaunch(ex2, s));
    CHECK(cudaMemcpyAsync(h, x2, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < N; i++) EXPECT_NEAR(h[i], hw[i], 1e-6, 1e-6, "the last step scales by zero", i);

    free(hw);
    free(ref);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphExecDestroy(ex2));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(x));
    CHECK(cudaFree(x2));
    CHECK(cudaFree(w));
    CHECK(cudaFreeHost(h));
    return finish();
}
