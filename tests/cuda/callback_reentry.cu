// Host functions and stream callbacks that call back into CUDA: the calls
// that would wait for the callback itself (synchronising its own stream or
// the device, a synchronous copy or memset behind it, cudaFree, an event
// recorded after it) fail with cudaErrorNotPermitted instead of
// deadlocking, and have no effect; the others (allocation, asynchronous
// work, waiting for an unrelated stream) work. The main thread waits with a
// deadline, so a deadlock fails the test instead of hanging it.
//@ variants: shared cu12
#include "common.cuh"
#include <atomic>
#include <chrono>
#include <thread>
#include <unistd.h>

#define N 256

__global__ void fill(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = v;
}

struct Ctx {
    cudaStream_t own, other;
    cudaEvent_t after;
    int *buf, *scratch;
    int host[N];
    cudaError_t own_sync, device_sync, sync_copy, sync_memset, free_buf, event_after;
    cudaError_t malloc_new, free_new_async, async_copy, other_sync, launch;
    int *fresh;
    std::atomic<int> done{0};
    std::atomic<int> recorded{0};
};

static void CUDART_CB host_fn(void *user) {
    Ctx *c = (Ctx *)user;
    // `after` is recorded by the main thread after it enqueued this
    // function, which may already be running then: wait for the record
    // (bounded), or the event would have no pending work yet.
    for (int i = 0; i < 1000 && !c->recorded.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c->own_sync = cudaStreamSynchronize(c->own);
    c->device_sync = cudaDeviceSynchronize();
    c->sync_copy = cudaMemcpy(c->buf, c->host, sizeof c->host, cudaMemcpyHostToDevice);
    c->sync_memset = cudaMemset(c->buf, 0x55, sizeof c->host);
    c->free_buf = cudaFree(c->buf);
    c->event_after = cudaEventSynchronize(c->after);
    c->malloc_new = cudaMalloc(&c->fresh, 64);
    c->free_new_async = cudaFreeAsync(c->fresh, c->other);
    c->async_copy = cudaMemcpyAsync(c->scratch, c->host, 16, cudaMemcpyHostToDevice, c->own);
    c->other_sync = cudaStreamSynchronize(c->other);
    (void)cudaGetLastError(); // clears the errors above
    fill<<<1, N, 0, c->other>>>(c->buf, 3);
    c->launch = cudaGetLastError();
    c->done.store(1);
}

static void CUDART_CB on_stream(cudaStream_t, cudaError_t, void *user) {
    Ctx *c = (Ctx *)user;
    c->own_sync = cudaStreamSynchronize(c->own);
    c->device_sync = cudaDeviceSynchronize();
    c->done.store(1);
}

static bool wait_done(Ctx &c) {
    for (int i = 0; i < 1000 && !c.done.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return c.done.load() == 1;
}

#define EXPECT_ERR(got, want, what) \
    EXPECT((got) == (want), "%s: got %s, expected %s", what, cudaGetErrorName(got), cudaGetErrorName(want))

int main() {
    Ctx c;
    CHECK(cudaStreamCreate(&c.own)); // blocking: legacy-stream work waits for it
    CHECK(cudaStreamCreateWithFlags(&c.other, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&c.after));
    CHECK(cudaMalloc(&c.buf, N * sizeof(int)));
    CHECK(cudaMalloc(&c.scratch, N * sizeof(int)));
    for (int i = 0; i < N; i++) c.host[i] = 1000 + i;
    fill<<<1, N, 0, c.own>>>(c.buf, 7);
    CHECK(cudaGetLastError());
    CHECK(cudaLaunchHostFunc(c.own, host_fn, &c));
    CHECK(cudaEventRecord(c.after, c.own));
    c.recorded.store(1);
    if (!wait_done(c)) {
        printf("the host function deadlocked\nFAIL %s\n", test_name());
        fflush(stdout);
        _exit(1);
    }
    CHECK(cudaStreamSynchronize(c.own));
    CHECK(cudaStreamSynchronize(c.other));
    EXPECT_ERR(c.own_sync, cudaErrorNotPermitted, "cudaStreamSynchronize(own stream)");
    EXPECT_ERR(c.device_sync, cudaErrorNotPermitted, "cudaDeviceSynchronize");
    EXPECT_ERR(c.sync_copy, cudaErrorNotPermitted, "cudaMemcpy");
    EXPECT_ERR(c.sync_memset, cudaErrorNotPermitted, "cudaMemset");
    EXPECT_ERR(c.free_buf, cudaErrorNotPermitted, "cudaFree");
    EXPECT_ERR(c.event_after, cudaErrorNotPermitted, "cudaEventSynchronize(event after the callback)");
    EXPECT_ERR(c.malloc_new, cudaSuccess, "cudaMalloc");
    EXPECT_ERR(c.free_new_async, cudaSuccess, "cudaFreeAsync");
    EXPECT_ERR(c.async_copy, cudaSuccess, "cudaMemcpyAsync");
    EXPECT_ERR(c.other_sync, cudaSuccess, "cudaStreamSynchronize(unrelated stream)");
    EXPECT_ERR(c.launch, cudaSuccess, "kernel launch");

    // The refused calls had no effect: the buffer is still allocated and
    // holds the kernel's 3s (the launch from the callback), not the copy's
    // values or the memset's bytes.
    int out[N];
    CHECK(cudaMemcpy(out, c.buf, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT_EQ(out[i], 3, "buffer", i);

    // A stream callback on the legacy stream.
    c.done.store(0);
    CHECK(cudaStreamAddCallback(0, on_stream, &c, 0));
    if (!wait_done(c)) {
        printf("the stream callback deadlocked\nFAIL %s\n", test_name());
        fflush(stdout);
        _exit(1);
    }
    CHECK(cudaDeviceSynchronize());
    EXPECT_ERR(c.own_sync, cudaSuccess, "cudaStreamSynchronize(another, idle stream) from a legacy-stream callback");
    EXPECT_ERR(c.device_sync, cudaErrorNotPermitted, "cudaDeviceSynchronize from a legacy-stream callback");
    int s4[4];
    CHECK(cudaMemcpy(s4, c.scratch, sizeof s4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++) EXPECT_EQ(s4[i], 1000 + i, "async copy from the callback", i);
    CHECK(cudaFree(c.buf));
    CHECK(cudaFree(c.scratch));
    return finish();
}
