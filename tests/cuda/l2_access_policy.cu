// L2 persistence as the CUDA programming guide shows it: size the
// persisting L2 from the device's limits, give a stream an access policy
// window over a hot buffer, run kernels in it, read the window back, copy
// the stream's attributes to another stream, and reset persisting lines.
// The hints change no result; they must be accepted and kept.
//@ variants: shared cu12
#include "common.cuh"
#include <algorithm>
#include <vector>

__global__ void axpy(const float *x, float *y, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

int main() {
    int dev = 0;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    EXPECT(prop.persistingL2CacheMaxSize > 0, "persistingL2CacheMaxSize %d", prop.persistingL2CacheMaxSize);
    EXPECT(prop.accessPolicyMaxWindowSize > 0, "accessPolicyMaxWindowSize %d", prop.accessPolicyMaxWindowSize);
    size_t set_aside = prop.persistingL2CacheMaxSize;
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set_aside));
    size_t got_limit = 0;
    CHECK(cudaDeviceGetLimit(&got_limit, cudaLimitPersistingL2CacheSize));
    EXPECT(got_limit == set_aside, "persisting L2 limit %zu, set %zu", got_limit, set_aside);

    const int n = 1 << 16;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; i++) {
        hx[i] = (float)(i % 31);
        hy[i] = (float)(i % 7);
    }
    CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    cudaStream_t s, t;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamCreate(&t));
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = x;
    attr.accessPolicyWindow.num_bytes = std::min((size_t)n * sizeof(float), (size_t)prop.accessPolicyMaxWindowSize);
    attr.accessPolicyWindow.hitRatio = 0.6f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr));
    cudaStreamAttrValue back = {};
    CHECK(cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &back));
    EXPECT(back.accessPolicyWindow.base_ptr == x && back.accessPolicyWindow.num_bytes == attr.accessPolicyWindow.num_bytes &&
               back.accessPolicyWindow.hitRatio == 0.6f && back.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting &&
               back.accessPolicyWindow.missProp == cudaAccessPropertyStreaming,
           "the window read back differs");
    // A window past the device's largest is refused.
    cudaStreamAttrValue big = attr;
    big.accessPolicyWindow.num_bytes = (size_t)prop.accessPolicyMaxWindowSize + 1;
    CHECK_ERR(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &big), cudaErrorInvalidValue);
    (void)cudaGetLastError();

    for (int k = 0; k < 4; k++) axpy<<<(n + 255) / 256, 256, 0, s>>>(x, y, n, 0.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));

    // Another stream takes the attributes; its own priority is unchanged.
    CHECK(cudaStreamCopyAttributes(t, s));
    cudaStreamAttrValue copied = {};
    CHECK(cudaStreamGetAttribute(t, cudaStreamAttributeAccessPolicyWindow, &copied));
    EXPECT(copied.accessPolicyWindow.base_ptr == x && copied.accessPolicyWindow.hitRatio == 0.6f, "the copied window differs");

    // Done with the hot data: normal accesses again, persisting lines reset.
    attr.accessPolicyWindow.num_bytes = 0;
    CHECK(cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr));
    CHECK(cudaCtxResetPersistingL2Cache());
    CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));

    CHECK(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_NEAR(hy[i], (float)(i % 7) + 2.0f * (float)(i % 31), 0, 0, "y", i);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(t));
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    return finish();
}
