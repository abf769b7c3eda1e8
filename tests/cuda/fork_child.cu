// fork() and CUDA, as with NVIDIA's driver: a child forked before the
// parent initialised CUDA uses CUDA normally; a child forked after it gets
// cudaErrorInitializationError from every call that needs the device, at
// once (never a hang, even with work pending in the parent's streams); the
// parent goes on unaffected. Each child has an alarm, so a hang fails the
// test instead of blocking it.
//@ variants: shared cu12
#include "common.cuh"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 1024

__global__ void fill(int *p, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) p[i] = v + i;
}

// Spins for about `ms` milliseconds of clock64() ticks (clock rate from the
// device), so the parent's stream is busy while it forks.
__global__ void spin(long long ticks) {
    long long start = clock64();
    while (clock64() - start < ticks) {
    }
}

// Fills a device buffer with v + i and checks it on the host; 0 when right.
static int fill_and_check(int v) {
    int *d = nullptr;
    if (cudaMalloc(&d, N * sizeof(int)) != cudaSuccess) return 1;
    fill<<<N / 256, 256>>>(d, v);
    if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) return 2;
    int h[N];
    if (cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
    for (int i = 0; i < N; i++)
        if (h[i] != v + i) return 4;
    return cudaFree(d) == cudaSuccess ? 0 : 5;
}

// Runs f in a child with a 30 s alarm; returns its exit status, or 100 +
// the signal that ended it (SIGALRM: it hung).
template <class F> static int in_child(F f) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 99;
    if (pid == 0) {
        alarm(30);
        _exit(f());
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 98;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int main() {
    // Before any CUDA call: the child starts CUDA itself.
    int r = in_child([] { return fill_and_check(11); });
    EXPECT(r == 0, "child forked before CUDA was initialised: status %d", r);

    EXPECT(fill_and_check(5) == 0, "parent before fork");

    // A stream with work still running at the fork.
    int clock_khz = 0;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    spin<<<1, 1, 0, s>>>((long long)clock_khz * 200); // about 200 ms
    CHECK(cudaGetLastError());

    r = in_child([s] {
        int *d = nullptr;
        int code = 0;
        // Every call that needs the device fails with the initialisation error.
        if (cudaStreamSynchronize(s) != cudaErrorInitializationError) code |= 1;
        if (cudaDeviceSynchronize() != cudaErrorInitializationError) code |= 2;
        if (cudaMalloc(&d, 64) != cudaErrorInitializationError) code |= 4;
        fill<<<1, 1>>>(d, 1);
        if (cudaGetLastError() == cudaSuccess) code |= 8;
        int dev = -1;
        cudaError_t e = cudaSetDevice(0);
        if (e != cudaErrorInitializationError && e != cudaSuccess) code |= 16;
        (void)dev;
        return code;
    });
    EXPECT(r == 0, "child forked after CUDA was initialised: status %d (bits: failed checks; 100+: signal)", r);

    // The parent is unaffected: its stream finishes, new work runs.
    CHECK(cudaStreamSynchronize(s));
    EXPECT(fill_and_check(9) == 0, "parent after fork");
    CHECK(cudaStreamDestroy(s));
    return finish();
}
