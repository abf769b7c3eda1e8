// Streams and events: work split over 4 non-blocking streams with
// cudaMemcpyAsync / cudaMemsetAsync on pinned memory, cross-stream ordering
// with cudaStreamWaitEvent, cudaEventSynchronize/Query, cudaStreamQuery,
// cudaEventElapsedTime (non-negative, and ordered: total >= a part), events
// created with cudaEventDisableTiming (elapsed time must fail with
// cudaErrorInvalidResourceHandle), stream priorities, cudaStreamGetFlags.
//@ variants: shared cu12
#include "common.cuh"

#define NS 4
#define CHUNK (1 << 16)

__global__ void scale(float *p, int n, float f, float add) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * f + add;
}

int main() {
    float *h, *d;
    const int n = NS * CHUNK;
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    for (int i = 0; i < n; i++) h[i] = (float)(i % 1000);

    cudaStream_t s[NS];
    int lo = 0, hi = 0;
    CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    for (int k = 0; k < NS; k++)
        CHECK(cudaStreamCreateWithPriority(&s[k], cudaStreamNonBlocking, k % 2 ? hi : lo));
    unsigned flags = 0;
    CHECK(cudaStreamGetFlags(s[0], &flags));
    EXPECT(flags == cudaStreamNonBlocking, "stream flags %u", flags);
    int prio = 12345;
    CHECK(cudaStreamGetPriority(s[1], &prio));
    EXPECT(prio == hi, "stream priority %d want %d", prio, hi);

    cudaEvent_t start, stop, done[NS], notime;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventCreateWithFlags(&notime, cudaEventDisableTiming));
    for (int k = 0; k < NS; k++) CHECK(cudaEventCreate(&done[k]));

    CHECK(cudaEventRecord(start, s[0]));
    CHECK(cudaStreamWaitEvent(s[1], start, 0));
    CHECK(cudaStreamWaitEvent(s[2], start, 0));
    CHECK(cudaStreamWaitEvent(s[3], start, 0));
    for (int k = 0; k < NS; k++) {
        float *dp = d + k * CHUNK, *hp = h + k * CHUNK;
        CHECK(cudaMemsetAsync(dp, 0, CHUNK * sizeof(float), s[k]));
        CHECK(cudaMemcpyAsync(dp, hp, CHUNK * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        scale<<<CHUNK / 256, 256, 0, s[k]>>>(dp, CHUNK, 2.0f, (float)k);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(done[k], s[k]));
    }
    // Stream 0 continues on chunk 1 only after stream 1 is done with it.
    CHECK(cudaStreamWaitEvent(s[0], done[1], 0));
    scale<<<CHUNK / 256, 256, 0, s[0]>>>(d + CHUNK, CHUNK, 1.0f, 0.5f);
    CHECK(cudaGetLastError());
    // ... and copies everything back once streams 2 and 3 are done too.
    CHECK(cudaStreamWaitEvent(s[0], done[2], 0));
    CHECK(cudaStreamWaitEvent(s[0], done[3], 0));
    for (int k = 0; k < NS; k++)
        CHECK(cudaMemcpyAsync(h + k * CHUNK, d + k * CHUNK, CHUNK * sizeof(float),
                              cudaMemcpyDeviceToHost, s[0]));
    CHECK(cudaEventRecord(notime, s[0]));
    CHECK(cudaEventRecord(stop, s[0]));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventQuery(stop));
    CHECK(cudaEventQuery(notime));
    for (int k = 0; k < NS; k++) {
        CHECK(cudaEventSynchronize(done[k]));
        CHECK(cudaEventQuery(done[k]));
    }
    for (int k = 0; k < NS; k++) {
        CHECK(cudaStreamSynchronize(s[k]));
        CHECK(cudaStreamQuery(s[k]));
    }

    for (int i = 0; i < n; i++) {
        int k = i / CHUNK;
        float want = (float)(i % 1000) * 2.0f + (float)k;
        if (k == 1) want += 0.5f;
        EXPECT(h[i] == want, "h[%d] = %g want %g", i, h[i], want);
    }

    float total = -1.0f, part = -1.0f, dummy;
    CHECK(cudaEventElapsedTime(&total, start, stop));
    CHECK(cudaEventElapsedTime(&part, start, done[2]));
    EXPECT(total >= 0.0f && part >= 0.0f && total >= part, "elapsed total %g part %g", total, part);
    CHECK_ERR(cudaEventElapsedTime(&dummy, start, notime), cudaErrorInvalidResourceHandle);

    for (int k = 0; k < NS; k++) {
        CHECK(cudaEventDestroy(done[k]));
        CHECK(cudaStreamDestroy(s[k]));
    }
    CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop)); CHECK(cudaEventDestroy(notime));
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(h));
    return finish();
}
