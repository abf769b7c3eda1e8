// Host callbacks in streams: cudaStreamAddCallback and cudaLaunchHostFunc run
// in stream order, after the preceding kernel and copy completed (they see the
// copied data), before later work in the same stream starts (a later copy
// reads what the callback wrote into pinned memory), with their user data; a
// callback on the legacy default stream; cross-stream order via an event.
//@ variants: shared cu12
#include "common.cuh"
#include <atomic>

#define N 4096

static std::atomic<int> g_seq{0};

struct Record {
    int seq = -1;
    int status = -1;
    long long sum = -1;
    const int *data = nullptr;
    int *write_to = nullptr;
    int write_value = 0;
};

static void CUDART_CB on_stream(cudaStream_t, cudaError_t status, void *user) {
    Record *r = (Record *)user;
    r->status = (int)status;
    r->seq = g_seq.fetch_add(1);
    long long s = 0;
    for (int i = 0; i < N; i++) s += r->data[i];
    r->sum = s;
}

static void CUDART_CB host_fn(void *user) {
    Record *r = (Record *)user;
    r->seq = g_seq.fetch_add(1);
    if (r->data) {
        long long s = 0;
        for (int i = 0; i < N; i++) s += r->data[i];
        r->sum = s;
    }
    if (r->write_to)
        for (int i = 0; i < N; i++) r->write_to[i] = r->write_value + i;
}

__global__ void fill(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = v + (i % 7);
}

__global__ void add_from(int *dst, const int *src) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) dst[i] += src[i];
}

int main() {
    int *h1, *h2, *hin, *d1, *d2;
    CHECK(cudaMallocHost(&h1, N * sizeof(int)));
    CHECK(cudaMallocHost(&h2, N * sizeof(int)));
    CHECK(cudaMallocHost(&hin, N * sizeof(int)));
    CHECK(cudaMalloc(&d1, N * sizeof(int)));
    CHECK(cudaMalloc(&d2, N * sizeof(int)));
    memset(h1, 0, N * sizeof(int));
    memset(h2, 0, N * sizeof(int));
    memset(hin, 0, N * sizeof(int));
    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));

    Record r1, r2, r3, r4, r5;
    // s1: kernel -> copy -> callback (sees the copy) -> host func writes hin ->
    //     copy hin to the device -> kernel uses it -> copy -> host func sums.
    fill<<<N / 256, 256, 0, s1>>>(d1, 100);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h1, d1, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
    r1.data = h1;
    CHECK(cudaStreamAddCallback(s1, on_stream, &r1, 0));
    r2.write_to = hin;
    r2.write_value = 1000;
    CHECK(cudaLaunchHostFunc(s1, host_fn, &r2));
    CHECK(cudaMemcpyAsync(d2, hin, N * sizeof(int), cudaMemcpyHostToDevice, s1));
    add_from<<<N / 256, 256, 0, s1>>>(d1, d2);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h2, d1, N * sizeof(int), cudaMemcpyDeviceToHost, s1));
    r3.data = h2;
    CHECK(cudaLaunchHostFunc(s1, host_fn, &r3));
    CHECK(cudaEventRecord(ev, s1));
    // s2 waits for s1's event, recorded after r3: its callback runs after r3.
    CHECK(cudaStreamWaitEvent(s2, ev, 0));
    r4.data = h2;
    CHECK(cudaStreamAddCallback(s2, on_stream, &r4, 0));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaStreamSynchronize(s2));
    // legacy default stream
    r5.data = h1;
    CHECK(cudaLaunchHostFunc(0, host_fn, &r5));
    CHECK(cudaDeviceSynchronize());

    long long sum1 = 0, sum2 = 0;
    for (int i = 0; i < N; i++) {
        sum1 += 100 + i % 7;
        sum2 += 100 + i % 7 + 1000 + i;
    }
    EXPECT_EQ(r1.status, (int)cudaSuccess, "callback status", 1);
    EXPECT_EQ(r4.status, (int)cudaSuccess, "callback status", 4);
    EXPECT_EQ(r1.sum, sum1, "callback saw the copied data", 1);
    EXPECT_EQ(r3.sum, sum2, "host func saw the second copy", 3);
    EXPECT_EQ(r4.sum, sum2, "cross-stream callback saw the data", 4);
    EXPECT_EQ(r5.sum, sum1, "default-stream host func", 5);
    EXPECT_EQ(r1.seq, 0, "order", 1);
    EXPECT_EQ(r2.seq, 1, "order", 2);
    EXPECT_EQ(r3.seq, 2, "order", 3);
    EXPECT_EQ(r4.seq, 3, "order", 4);
    EXPECT_EQ(r5.seq, 4, "order", 5);
    for (int i = 0; i < N; i++) EXPECT_EQ(h2[i], 100 + i % 7 + 1000 + i, "h2", i);

    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s1)); CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(d1)); CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(h1)); CHECK(cudaFreeHost(h2)); CHECK(cudaFreeHost(hin));
    return finish();
}
