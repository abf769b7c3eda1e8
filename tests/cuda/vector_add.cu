// Vector arithmetic on float, double and int: c = a + b, saxpy, element-wise
// multiply, with a grid-stride loop and a size that is not a multiple of the
// block size.
//@ variants: shared cu12 lz4 nocomp
#include "common.cuh"

__global__ void add_f32(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void saxpy(float alpha, const float *x, float *y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = alpha * x[i] + y[i];
}

__global__ void mul_f64(const double *a, const double *b, double *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i] - 0.5 * a[i];
}

__global__ void int_ops(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = (a[i] * 3 - b[i]) ^ (a[i] >> 2);
}

int main() {
    const int n = 100003; // not a multiple of any block size
    float *ha = new float[n], *hb = new float[n], *hc = new float[n];
    double *da_h = new double[n], *db_h = new double[n], *dc_h = new double[n];
    int *ia = new int[n], *ib = new int[n], *ic = new int[n];
    for (int i = 0; i < n; i++) {
        ha[i] = (float)(i % 1000) * 0.25f;
        hb[i] = (float)(i % 37) - 18.0f;
        da_h[i] = i * 0.001;
        db_h[i] = 3.0 - (i % 11);
        ia[i] = i * 7 - 5000;
        ib[i] = (i % 91) - 45;
    }

    float *a, *b, *c;
    double *da, *db, *dc;
    int *xa, *xb, *xc;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMalloc(&c, n * sizeof(float)));
    CHECK(cudaMalloc(&da, n * sizeof(double)));
    CHECK(cudaMalloc(&db, n * sizeof(double)));
    CHECK(cudaMalloc(&dc, n * sizeof(double)));
    CHECK(cudaMalloc(&xa, n * sizeof(int)));
    CHECK(cudaMalloc(&xb, n * sizeof(int)));
    CHECK(cudaMalloc(&xc, n * sizeof(int)));
    CHECK(cudaMemcpy(a, ha, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(da, da_h, n * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, db_h, n * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(xa, ia, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(xb, ib, n * sizeof(int), cudaMemcpyHostToDevice));

    const int bs = 256, grid = (n + bs - 1) / bs;
    add_f32<<<grid, bs>>>(a, b, c, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hc, c, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(hc[i] == ha[i] + hb[i], "add_f32[%d]: %g", i, hc[i]);

    // saxpy in place on b, with fewer threads than elements (grid-stride).
    saxpy<<<64, 128>>>(2.5f, a, b, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(hc, b, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = __builtin_fmaf(2.5f, ha[i], hb[i]); // nvcc contracts to fma
        float want2 = 2.5f * ha[i] + hb[i];
        EXPECT(hc[i] == want || hc[i] == want2, "saxpy[%d]: %g vs %g", i, hc[i], want);
    }

    mul_f64<<<grid, bs>>>(da, db, dc, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(dc_h, dc, n * sizeof(double), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        double want = da_h[i] * db_h[i] - 0.5 * da_h[i];
        EXPECT_NEAR(dc_h[i], want, 1e-12, 1e-12, "mul_f64", i);
    }

    int_ops<<<grid, bs>>>(xa, xb, xc, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(ic, xc, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT_EQ(ic[i], (ia[i] * 3 - ib[i]) ^ (ia[i] >> 2), "int_ops", i);

    CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
    CHECK(cudaFree(da)); CHECK(cudaFree(db)); CHECK(cudaFree(dc));
    CHECK(cudaFree(xa)); CHECK(cudaFree(xb)); CHECK(cudaFree(xc));
    delete[] ha; delete[] hb; delete[] hc; delete[] da_h; delete[] db_h; delete[] dc_h;
    delete[] ia; delete[] ib; delete[] ic;
    return finish();
}
