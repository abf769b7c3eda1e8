// Interprocess events, as multi-process programs order their GPU work
// across processes: the parent makes an event with cudaEventInterprocess,
// records it after a kernel that cannot finish until the child lets it
// (it spins on a flag in interprocess memory), and starts a second process
// of this program with both handles on its command line. The child opens
// them, sees the event not complete, queues a kernel behind it with
// cudaStreamWaitEvent, releases the parent's kernel, and checks that its
// kernel ran after the parent's; then it records the same event after
// work of its own, which the parent's cudaEventSynchronize waits for.
//@ variants: shared cu12
#include "common.cuh"
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

// Words of the shared buffer: [0] the flag, [1 .. N] the parent's data,
// [N + 1 .. 2N] the child's.
const int N = 1 << 16;
const int WORDS = (4 << 20) / sizeof(int);

__global__ void wait_then_fill(volatile int *buf) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (buf[0] == 0) {
        }
        for (int i = 1; i <= N; i++) buf[i] = 7 * i;
        __threadfence_system();
    }
}

// Counts the parent's words that are not 7i yet.
__global__ void check_parent(const int *buf, int *wrong) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (i <= N && buf[i] != 7 * i) atomicAdd(wrong, 1);
}

__global__ void fill_child(int *buf) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    if (i <= N) buf[N + i] = 5 * i;
}

static void parse(const char *hex, char *out) {
    for (int i = 0; i < 64; i++) {
        unsigned v = 0;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            fprintf(stderr, "child: bad handle text\n");
            exit(1);
        }
        out[i] = (char)v;
    }
}

static int child(const char *mem_hex, const char *event_hex) {
    cudaIpcMemHandle_t mh;
    cudaIpcEventHandle_t eh;
    parse(mem_hex, mh.reserved);
    parse(event_hex, eh.reserved);
    int *buf = nullptr, *wrong = nullptr;
    cudaEvent_t ev;
    CHECK(cudaIpcOpenMemHandle((void **)&buf, mh, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaIpcOpenEventHandle(&ev, eh));
    // The parent's kernel spins until the flag is set: the record is not
    // complete, here as there.
    CHECK_ERR(cudaEventQuery(ev), cudaErrorNotReady);
    // Timing is off for an opened event.
    cudaEvent_t timed;
    CHECK(cudaEventCreate(&timed));
    CHECK(cudaEventRecord(timed, 0));
    CHECK(cudaEventSynchronize(timed));
    float ms = 0;
    CHECK_ERR(cudaEventElapsedTime(&ms, timed, ev), cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    CHECK(cudaEventDestroy(timed));

    cudaStream_t s, t;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&wrong, sizeof(int)));
    CHECK(cudaMemset(wrong, 0, sizeof(int)));
    // Behind the parent's record: runs only after the parent's kernel.
    CHECK(cudaStreamWaitEvent(s, ev, 0));
    check_parent<<<(N + 255) / 256, 256, 0, s>>>(buf, wrong);
    CHECK(cudaGetLastError());
    CHECK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
    // Release the parent's kernel.
    int one = 1;
    CHECK(cudaMemcpyAsync(buf, &one, sizeof one, cudaMemcpyHostToDevice, t));
    CHECK(cudaStreamSynchronize(t));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaEventQuery(ev));
    int w = -1;
    CHECK(cudaMemcpy(&w, wrong, sizeof w, cudaMemcpyDeviceToHost));
    EXPECT_EQ(w, 0, "parent's words the child's kernel found unwritten", 0);

    // The child's own record of the shared event.
    fill_child<<<(N + 255) / 256, 256, 0, s>>>(buf);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(t));
    CHECK(cudaFree(wrong));
    CHECK(cudaIpcCloseMemHandle(buf));
    return g_failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "child") == 0) return child(argv[2], argv[3]);

    int supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrIpcEventSupport, 0));
    EXPECT_EQ(supported, 1, "cudaDevAttrIpcEventSupport", 0);

    // Only interprocess events have handles.
    cudaEvent_t plain, ev;
    cudaIpcEventHandle_t eh;
    CHECK(cudaEventCreateWithFlags(&plain, cudaEventDisableTiming));
    EXPECT(cudaIpcGetEventHandle(&eh, plain) != cudaSuccess, "a handle for an event without cudaEventInterprocess");
    (void)cudaGetLastError();
    CHECK(cudaEventDestroy(plain));

    int *buf = nullptr;
    CHECK(cudaMalloc(&buf, WORDS * sizeof(int)));
    CHECK(cudaMemset(buf, 0, WORDS * sizeof(int)));
    cudaIpcMemHandle_t mh;
    CHECK(cudaIpcGetMemHandle(&mh, buf));
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    wait_then_fill<<<1, 32, 0, s>>>(buf);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(ev, s));
    CHECK(cudaIpcGetEventHandle(&eh, ev));
    cudaIpcEventHandle_t again;
    CHECK(cudaIpcGetEventHandle(&again, ev));
    EXPECT(memcmp(&eh, &again, sizeof eh) == 0, "two handles of one event differ");

    char mem_hex[129], event_hex[129];
    for (int i = 0; i < 64; i++) {
        snprintf(mem_hex + 2 * i, 3, "%02x", (unsigned char)mh.reserved[i]);
        snprintf(event_hex + 2 * i, 3, "%02x", (unsigned char)eh.reserved[i]);
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    EXPECT(len > 0, "readlink /proc/self/exe failed");
    exe[len > 0 ? len : 0] = 0;
    char *args[] = {exe, (char *)"child", mem_hex, event_hex, nullptr};
    pid_t pid;
    int rc = posix_spawn(&pid, exe, nullptr, nullptr, args, environ);
    EXPECT(rc == 0, "posix_spawn failed: %d", rc);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %#x)", status);
    if (rc != 0) {
        // Nothing will release the kernel: end without waiting for it.
        return finish();
    }
    // Released by the child; again here in case the child failed first.
    int one = 1;
    CHECK(cudaMemcpy(buf, &one, sizeof one, cudaMemcpyHostToDevice));

    // The child's record, made and completed in the child, is the event's
    // latest: complete here too.
    CHECK(cudaEventQuery(ev));
    CHECK(cudaEventSynchronize(ev));
    CHECK(cudaStreamSynchronize(s));
    int *host = (int *)malloc(2 * N * sizeof(int));
    CHECK(cudaMemcpy(host, buf + 1, 2 * N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 1; i <= N; i++) EXPECT_EQ(host[i - 1], 7 * i, "parent's words", i);
    for (int i = 1; i <= N; i++) EXPECT_EQ(host[N + i - 1], 5 * i, "child's words", i);
    free(host);
    CHECK(cudaEventDestroy(ev));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(buf));
    return finish();
}
