// Interprocess memory, as multi-process programs (PyTorch's
// multiprocessing, MPI ranks on one node) use it: the parent fills a
// 4 MiB device buffer, exports it with cudaIpcGetMemHandle and starts a
// second process of this program with the handle on its command line; the
// child opens the handle (twice: the same address, counted), checks the
// parent's data with a kernel, adds 1000 to every element in place and
// closes it; the parent then sees the child's writes in its own buffer.
//@ variants: shared cu12
#include "common.cuh"
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const int N = (4 << 20) / sizeof(int);

__global__ void fill(int *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 3 * i + 1;
}

// Counts elements that differ from 3i+1, then adds 1000 to each.
__global__ void check_and_bump(int *x, int n, int *wrong) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] != 3 * i + 1) atomicAdd(wrong, 1);
        x[i] += 1000;
    }
}

static int child(const char *hex) {
    cudaIpcMemHandle_t h;
    for (int i = 0; i < 64; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            fprintf(stderr, "child: bad handle text\n");
            return 1;
        }
        h.reserved[i] = (char)v;
    }
    int *p = nullptr, *q = nullptr, *wrong = nullptr;
    CHECK(cudaIpcOpenMemHandle((void **)&p, h, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cudaIpcOpenMemHandle((void **)&q, h, cudaIpcMemLazyEnablePeerAccess));
    EXPECT(p == q, "the same handle opened twice gave %p and %p", (void *)p, (void *)q);
    CHECK(cudaMalloc(&wrong, sizeof(int)));
    CHECK(cudaMemset(wrong, 0, sizeof(int)));
    check_and_bump<<<(N + 255) / 256, 256>>>(p, N, wrong);
    CHECK_KERNEL();
    int w = -1;
    CHECK(cudaMemcpy(&w, wrong, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(w, 0, "elements the child found wrong", 0);
    CHECK(cudaIpcCloseMemHandle(q));
    CHECK(cudaIpcCloseMemHandle(p));
    CHECK_ERR(cudaIpcCloseMemHandle(p), cudaErrorInvalidValue);
    CHECK(cudaFree(wrong));
    return g_failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "child") == 0) return child(argv[2]);

    int *buf = nullptr;
    CHECK(cudaMalloc(&buf, N * sizeof(int)));
    fill<<<(N + 255) / 256, 256>>>(buf, N);
    CHECK_KERNEL();
    cudaIpcMemHandle_t h;
    CHECK(cudaIpcGetMemHandle(&h, buf));
    // A handle is the process's to give away, not to open.
    void *self = nullptr;
    EXPECT(cudaIpcOpenMemHandle(&self, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess, "the exporter opened its own handle");
    (void)cudaGetLastError();

    char hex[129];
    for (int i = 0; i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)h.reserved[i]);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    EXPECT(len > 0, "readlink /proc/self/exe failed");
    exe[len > 0 ? len : 0] = 0;
    char *args[] = {exe, (char *)"child", hex, nullptr};
    pid_t pid;
    int rc = posix_spawn(&pid, exe, nullptr, nullptr, args, environ);
    EXPECT(rc == 0, "posix_spawn failed: %d", rc);
    int status = 0;
    if (rc == 0) waitpid(pid, &status, 0);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %#x)", status);

    int *host = (int *)malloc(N * sizeof(int));
    CHECK(cudaMemcpy(host, buf, N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT_EQ(host[i], 3 * i + 1 + 1000, "buf after the child", i);
    free(host);
    CHECK(cudaFree(buf));
    return finish();
}
