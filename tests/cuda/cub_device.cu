// CUB device-wide algorithms with the two-phase temporary storage protocol:
// DeviceReduce::Sum and ::Max, DeviceScan::InclusiveSum and ::ExclusiveSum,
// DeviceRadixSort::SortKeys (ascending, descending, a bit range) and
// ::SortPairs, all on a stream.
#include "common.cuh"
#include <cub/cub.cuh>
#include <algorithm>
#include <vector>

int main() {
    const int n = 200000;
    std::vector<int> h(n);
    for (int i = 0; i < n; i++) h[i] = (int)(((unsigned)i * 2246822519u) >> 8) % 100000 - 50000;
    int *in, *out, *keys_out, *vals, *vals_out;
    long long *sum;
    int *mx;
    CHECK(cudaMalloc(&in, n * sizeof(int)));
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    CHECK(cudaMalloc(&keys_out, n * sizeof(int)));
    CHECK(cudaMalloc(&vals, n * sizeof(int)));
    CHECK(cudaMalloc(&vals_out, n * sizeof(int)));
    CHECK(cudaMalloc(&sum, sizeof(long long)));
    CHECK(cudaMalloc(&mx, sizeof(int)));
    CHECK(cudaMemcpy(in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    std::vector<int> idx(n);
    for (int i = 0; i < n; i++) idx[i] = i;
    CHECK(cudaMemcpy(vals, idx.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    void *tmp = nullptr;
    size_t tmp_bytes = 0, need = 0;
    auto ensure = [&](size_t bytes) {
        if (bytes > tmp_bytes) {
            if (tmp) CHECK(cudaFree(tmp));
            CHECK(cudaMalloc(&tmp, bytes));
            tmp_bytes = bytes;
        }
    };
    // Sum into a wider type via a transform-free trick: sum of int into long long output
    need = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, need, in, sum, n, s));
    ensure(need);
    CHECK(cub::DeviceReduce::Sum(tmp, need, in, sum, n, s));
    need = 0;
    CHECK(cub::DeviceReduce::Max(nullptr, need, in, mx, n, s));
    ensure(need);
    CHECK(cub::DeviceReduce::Max(tmp, need, in, mx, n, s));
    long long hsum = 0;
    int hmx = 0;
    CHECK(cudaMemcpyAsync(&hsum, sum, sizeof hsum, cudaMemcpyDeviceToHost, s));
    CHECK(cudaMemcpyAsync(&hmx, mx, sizeof hmx, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    long long want_sum = 0;
    for (int x : h) want_sum += x;
    EXPECT_EQ(hsum, want_sum, "DeviceReduce::Sum", 0);
    EXPECT_EQ(hmx, *std::max_element(h.begin(), h.end()), "DeviceReduce::Max", 0);

    std::vector<int> r(n), r2(n);
    need = 0;
    CHECK(cub::DeviceScan::InclusiveSum(nullptr, need, in, out, n, s));
    ensure(need);
    CHECK(cub::DeviceScan::InclusiveSum(tmp, need, in, out, n, s));
    CHECK(cudaMemcpyAsync(r.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    need = 0;
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, need, in, out, n, s));
    ensure(need);
    CHECK(cub::DeviceScan::ExclusiveSum(tmp, need, in, out, n, s));
    CHECK(cudaMemcpyAsync(r2.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    int run = 0; // partial sums stay within int for these inputs
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(r2[i], run, "DeviceScan::ExclusiveSum", i);
        run += h[i];
        EXPECT_EQ(r[i], run, "DeviceScan::InclusiveSum", i);
    }

    std::vector<int> sorted = h;
    std::sort(sorted.begin(), sorted.end());
    need = 0;
    CHECK(cub::DeviceRadixSort::SortKeys(nullptr, need, in, keys_out, n, 0, 32, s));
    ensure(need);
    CHECK(cub::DeviceRadixSort::SortKeys(tmp, need, in, keys_out, n, 0, 32, s));
    CHECK(cudaMemcpyAsync(r.data(), keys_out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) EXPECT_EQ(r[i], sorted[i], "SortKeys", i);

    need = 0;
    CHECK(cub::DeviceRadixSort::SortKeysDescending(nullptr, need, in, keys_out, n, 0, 32, s));
    ensure(need);
    CHECK(cub::DeviceRadixSort::SortKeysDescending(tmp, need, in, keys_out, n, 0, 32, s));
    CHECK(cudaMemcpyAsync(r.data(), keys_out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) EXPECT_EQ(r[i], sorted[n - 1 - i], "SortKeysDescending", i);

    // pairs, sorting unsigned keys on bits 4..11 only: a stable sort by (key >> 4) & 0xff
    std::vector<unsigned> uk(n);
    for (int i = 0; i < n; i++) uk[i] = (unsigned)h[i] * 2654435761u;
    unsigned *ukeys, *ukeys_out;
    CHECK(cudaMalloc(&ukeys, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&ukeys_out, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(ukeys, uk.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    need = 0;
    CHECK(cub::DeviceRadixSort::SortPairs(nullptr, need, ukeys, ukeys_out, vals, vals_out, n, 4, 12, s));
    ensure(need);
    CHECK(cub::DeviceRadixSort::SortPairs(tmp, need, ukeys, ukeys_out, vals, vals_out, n, 4, 12, s));
    std::vector<unsigned> rk(n);
    CHECK(cudaMemcpyAsync(rk.data(), ukeys_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CHECK(cudaMemcpyAsync(r.data(), vals_out, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<int> order(n);
    for (int i = 0; i < n; i++) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return ((uk[a] >> 4) & 0xff) < ((uk[b] >> 4) & 0xff); });
    for (int i = 0; i < n; i++) {
        EXPECT_EQ(r[i], order[i], "SortPairs value (stable)", i);
        EXPECT_EQ(rk[i], uk[order[i]], "SortPairs key", i);
    }

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(tmp));
    CHECK(cudaFree(in)); CHECK(cudaFree(out)); CHECK(cudaFree(keys_out)); CHECK(cudaFree(vals));
    CHECK(cudaFree(vals_out)); CHECK(cudaFree(sum)); CHECK(cudaFree(mx)); CHECK(cudaFree(ukeys));
    CHECK(cudaFree(ukeys_out));
    return finish();
}
