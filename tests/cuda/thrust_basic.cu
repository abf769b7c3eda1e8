// Thrust (CCCL) on device_vector: sequence, transform with a functor,
// sort and sort_by_key, stable_sort with a comparator, inclusive and
// exclusive scan, reduce (sum, max), count_if, unique, copy_if, gather
// through host_vector round trips.
#include "common.cuh"
#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/unique.h>
#include <algorithm>
#include <vector>

struct Hash {
    __host__ __device__ int operator()(int i) const { return (int)(((unsigned)i * 2654435761u) >> 12) % 10007; }
};
struct IsOdd {
    __host__ __device__ bool operator()(int x) const { return x & 1; }
};
struct ByLastDigit {
    __host__ __device__ bool operator()(int a, int b) const { return a % 10 < b % 10; }
};

int main() {
    const int n = 100000;
    thrust::device_vector<int> idx(n);
    thrust::sequence(idx.begin(), idx.end());
    thrust::device_vector<int> v(n);
    thrust::transform(idx.begin(), idx.end(), v.begin(), Hash());
    std::vector<int> h(n);
    for (int i = 0; i < n; i++) h[i] = Hash()(i);
    thrust::host_vector<int> back = v;
    for (int i = 0; i < n; i++) EXPECT_EQ(back[i], h[i], "transform", i);

    long long sum = thrust::reduce(v.begin(), v.end(), 0LL, thrust::plus<long long>());
    int mx = thrust::reduce(v.begin(), v.end(), -1, thrust::maximum<int>());
    long long hsum = 0;
    for (int x : h) hsum += x;
    EXPECT_EQ(sum, hsum, "reduce sum", 0);
    EXPECT_EQ(mx, *std::max_element(h.begin(), h.end()), "reduce max", 0);
    int odd = (int)thrust::count_if(v.begin(), v.end(), IsOdd());
    EXPECT_EQ(odd, (int)std::count_if(h.begin(), h.end(), [](int x) { return x & 1; }), "count_if", 0);

    thrust::device_vector<int> scan(n);
    thrust::inclusive_scan(v.begin(), v.end(), scan.begin());
    thrust::host_vector<int> hs = scan;
    long long run = 0;
    for (int i = 0; i < n; i++) { run += h[i]; EXPECT_EQ((long long)hs[i], run, "inclusive_scan", i); }
    thrust::exclusive_scan(v.begin(), v.end(), scan.begin(), 5);
    hs = scan;
    run = 5;
    for (int i = 0; i < n; i++) { EXPECT_EQ((long long)hs[i], run, "exclusive_scan", i); run += h[i]; }

    // stable sort by last digit keeps the original order inside each digit
    thrust::device_vector<int> st = v;
    thrust::stable_sort(st.begin(), st.end(), ByLastDigit());
    std::vector<int> hst = h;
    std::stable_sort(hst.begin(), hst.end(), [](int a, int b) { return a % 10 < b % 10; });
    thrust::host_vector<int> rst = st;
    for (int i = 0; i < n; i++) EXPECT_EQ(rst[i], hst[i], "stable_sort", i);

    thrust::device_vector<int> keys = v, vals = idx;
    thrust::sort_by_key(keys.begin(), keys.end(), vals.begin());
    thrust::host_vector<int> hk = keys, hv = vals;
    for (int i = 0; i < n; i++) {
        if (i) EXPECT(hk[i - 1] <= hk[i], "sort_by_key order at %d", i);
        EXPECT(hv[i] >= 0 && hv[i] < n && h[hv[i]] == hk[i], "sort_by_key value at %d", i);
    }
    std::vector<int> sorted = h;
    std::sort(sorted.begin(), sorted.end());
    thrust::sort(v.begin(), v.end());
    back = v;
    for (int i = 0; i < n; i++) EXPECT_EQ(back[i], sorted[i], "sort", i);
    auto end = thrust::unique(v.begin(), v.end());
    int nu = (int)(end - v.begin());
    int hnu = (int)(std::unique(sorted.begin(), sorted.end()) - sorted.begin());
    EXPECT_EQ(nu, hnu, "unique count", 0);

    thrust::device_vector<int> odds(n);
    auto oend = thrust::copy_if(idx.begin(), idx.end(), odds.begin(), IsOdd());
    EXPECT_EQ((int)(oend - odds.begin()), n / 2, "copy_if count", 0);
    EXPECT_EQ((int)odds[0], 1, "copy_if first", 0);
    EXPECT_EQ((int)odds[n / 2 - 1], n - 1, "copy_if last", 0);
    CHECK(cudaDeviceSynchronize());
    return finish();
}
