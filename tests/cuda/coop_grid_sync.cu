// Grid-wide synchronisation with cooperative groups: a kernel launched with
// cudaLaunchCooperativeKernel whose phases exchange data between blocks
// through global memory, separated by grid.sync() (also inside a loop);
// grid_group queries (size, thread_rank, num_blocks, block_rank, is_valid).
#include "common.cuh"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define BLOCKS 4
#define NT 128
#define N (BLOCKS * NT)
#define ROUNDS 8

__global__ void phases(int *a, int *b, int *info, long long *total) {
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    if (i == 0) {
        info[0] = grid.is_valid();
        info[1] = (int)grid.size();
        info[2] = (int)grid.num_blocks();
    }
    if (threadIdx.x == 0) info[3 + blockIdx.x] = (int)grid.block_rank();
    a[i] = i;
    grid.sync();
    // Each round reads values written by other blocks in the previous round.
    for (int r = 0; r < ROUNDS; r++) {
        b[i] = a[(i + NT + 1) % N] + a[(i + N / 2) % N] + r;
        grid.sync();
        a[i] = b[i] % 100003;
        grid.sync();
    }
    if (i == 0) {
        long long s = 0;
        for (int k = 0; k < N; k++) s += a[k];
        *total = s;
    }
}

int main() {
    int coop = 0, dev = 0, sms = 0, per_sm = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, NT, 0));
    EXPECT(coop == 1, "cudaDevAttrCooperativeLaunch = %d", coop);
    EXPECT(sms * per_sm >= BLOCKS, "only %d x %d co-resident blocks", sms, per_sm);

    int *a, *b, *info;
    long long *total;
    CHECK(cudaMalloc(&a, N * sizeof(int)));
    CHECK(cudaMalloc(&b, N * sizeof(int)));
    CHECK(cudaMalloc(&info, (3 + BLOCKS) * sizeof(int)));
    CHECK(cudaMalloc(&total, sizeof(long long)));
    void *args[] = {&a, &b, &info, &total};
    CHECK(cudaLaunchCooperativeKernel((void *)phases, dim3(BLOCKS), dim3(NT), args, 0, 0));
    CHECK_KERNEL();

    int ha[N], hinfo[3 + BLOCKS];
    long long htotal;
    CHECK(cudaMemcpy(ha, a, sizeof ha, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hinfo, info, sizeof hinfo, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&htotal, total, sizeof htotal, cudaMemcpyDeviceToHost));
    int ea[N], eb[N];
    for (int i = 0; i < N; i++) ea[i] = i;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < N; i++) eb[i] = ea[(i + NT + 1) % N] + ea[(i + N / 2) % N] + r;
        for (int i = 0; i < N; i++) ea[i] = eb[i] % 100003;
    }
    long long want = 0;
    for (int i = 0; i < N; i++) {
        EXPECT_EQ(ha[i], ea[i], "a", i);
        want += ea[i];
    }
    EXPECT_EQ(htotal, want, "total", 0);
    EXPECT_EQ(hinfo[0], 1, "is_valid", 0);
    EXPECT_EQ(hinfo[1], N, "grid size", 0);
    EXPECT_EQ(hinfo[2], BLOCKS, "num_blocks", 0);
    for (int k = 0; k < BLOCKS; k++) EXPECT_EQ(hinfo[3 + k], k, "block_rank", k);
    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(info)); CHECK(cudaFree(total));
    return finish();
}
