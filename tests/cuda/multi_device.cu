// Two devices, as multi-GPU programs use them through the runtime: each
// device gets half of a vector and runs the kernel on its half with its own
// stream; peer access between them is queried and enabled; a kernel on
// device 0 reads device 1's half directly, and cudaMemcpyPeer moves the
// halves between devices. Needs two devices (the test harnesses run it with
// ANYCUDA_CPU_DEVICES=2 on the CPU and ANYCUDA_HIP_EMULATED_DEVICES=2 on the
// emulated AMD GPUs); with fewer it fails.
//@ run-env: ANYCUDA_CPU_DEVICES=2
//@ variants: shared cu12
#include "common.cuh"
#include <vector>

__global__ void scale(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + (float)i;
}

// out[i] = a[i] + b[i]; b may live on the other device.
__global__ void add(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

int main() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 2, "this program needs two devices, found %d", count);
    if (count < 2) return finish();
    const int n = 1 << 14, half = n / 2;
    std::vector<float> h(n);
    for (int i = 0; i < n; i++) h[i] = (float)(i % 97);

    float *d[2];
    cudaStream_t s[2];
    cudaDeviceProp props[2];
    for (int dev = 0; dev < 2; dev++) {
        CHECK(cudaSetDevice(dev));
        CHECK(cudaGetDeviceProperties(&props[dev], dev));
        CHECK(cudaMalloc(&d[dev], half * sizeof(float)));
        CHECK(cudaStreamCreate(&s[dev]));
        CHECK(cudaMemcpyAsync(d[dev], h.data() + dev * half, half * sizeof(float), cudaMemcpyHostToDevice, s[dev]));
        scale<<<(half + 255) / 256, 256, 0, s[dev]>>>(d[dev], half, dev ? 3.0f : 2.0f);
        CHECK(cudaGetLastError());
        cudaPointerAttributes attr;
        CHECK(cudaPointerGetAttributes(&attr, d[dev]));
        EXPECT_EQ(attr.device, dev, "attr.device", dev);
    }
    EXPECT(memcmp(props[0].uuid.bytes, props[1].uuid.bytes, 16) != 0, "the devices share a UUID");
    for (int dev = 0; dev < 2; dev++) {
        CHECK(cudaSetDevice(dev));
        CHECK(cudaStreamSynchronize(s[dev]));
    }

    int can01 = -1, can10 = -1, can00 = -1;
    CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
    CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
    CHECK(cudaDeviceCanAccessPeer(&can00, 0, 0));
    EXPECT(can01 == 1 && can10 == 1 && can00 == 0, "canAccessPeer 0->1 %d, 1->0 %d, 0->0 %d", can01, can10, can00);
    int atomics = -1;
    CHECK(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, 0, 1));
    EXPECT_EQ(atomics, 1, "native atomics", 0);

    // Device 0 reads device 1's half directly.
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceEnablePeerAccess(1, 0));
    CHECK_ERR(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
    CHECK_ERR(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled); // the runtime keeps the error
    float *sum;
    CHECK(cudaMalloc(&sum, half * sizeof(float)));
    add<<<(half + 255) / 256, 256>>>(d[0], d[1], sum, half);
    CHECK_KERNEL();
    std::vector<float> got(half);
    CHECK(cudaMemcpy(got.data(), sum, half * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < half; i++) {
        float want = (2.0f * h[i] + i) + (3.0f * h[half + i] + i);
        EXPECT_NEAR(got[i], want, 0, 0, "sum", i);
    }

    // Device 1's half to device 0 and back to the host.
    float *copy;
    CHECK(cudaMalloc(&copy, half * sizeof(float)));
    CHECK(cudaMemcpyPeer(copy, 0, d[1], 1, half * sizeof(float)));
    CHECK(cudaMemcpy(got.data(), copy, half * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < half; i++) EXPECT_NEAR(got[i], 3.0f * h[half + i] + i, 0, 0, "peer copy", i);

    CHECK(cudaDeviceDisablePeerAccess(1));
    CHECK_ERR(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
    CHECK(cudaFree(sum));
    CHECK(cudaFree(copy));
    for (int dev = 0; dev < 2; dev++) {
        CHECK(cudaSetDevice(dev));
        CHECK(cudaStreamDestroy(s[dev]));
        CHECK(cudaFree(d[dev]));
    }
    return finish();
}
