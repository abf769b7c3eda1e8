// Virtual functions in device code: objects of a small class hierarchy
// (abstract base, two levels of derived classes, a virtual destructor)
// constructed on the device with placement new, called through base pointers
// in a later kernel, destroyed through the base pointer.
#include "common.cuh"
#include <new>

struct Shape {
    int id;
    __device__ explicit Shape(int i) : id(i) {}
    __device__ virtual ~Shape() {}
    __device__ virtual float area() const = 0;
    __device__ virtual int sides() const { return 0; }
    __device__ virtual int kind() const = 0;
};

struct Rect : Shape {
    float w, h;
    __device__ Rect(int i, float w_, float h_) : Shape(i), w(w_), h(h_) {}
    __device__ float area() const override { return w * h; }
    __device__ int sides() const override { return 4; }
    __device__ int kind() const override { return 1; }
};

struct Square : Rect {
    __device__ Square(int i, float s) : Rect(i, s, s) {}
    __device__ int kind() const override { return 2; }
};

struct Tri : Shape {
    float b, h;
    int *dtor_count;
    __device__ Tri(int i, float b_, float h_, int *c) : Shape(i), b(b_), h(h_), dtor_count(c) {}
    __device__ ~Tri() override { atomicAdd(dtor_count, 1); }
    __device__ float area() const override { return 0.5f * b * h; }
    __device__ int sides() const override { return 3; }
    __device__ int kind() const override { return 3; }
};

#define SLOT 64 // bytes per object slot

__global__ void construct(char *storage, Shape **ptrs, int n, int *dtors) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    void *mem = storage + (size_t)i * SLOT;
    float a = (float)(i % 10 + 1);
    switch (i % 3) {
    case 0: ptrs[i] = new (mem) Rect(i, a, 2.0f); break;
    case 1: ptrs[i] = new (mem) Square(i, a); break;
    default: ptrs[i] = new (mem) Tri(i, a, 4.0f, dtors); break;
    }
}

__global__ void query(Shape **ptrs, int n, float *area, int *info) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Shape *s = ptrs[i];
    area[i] = s->area();
    info[i] = s->kind() * 100 + s->sides() * 10 + (s->id == i);
}

__global__ void destroy(Shape **ptrs, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ptrs[i]->~Shape();
}

int main() {
    const int n = 600;
    static_assert(sizeof(Tri) <= SLOT && sizeof(Square) <= SLOT, "slot too small");
    char *storage;
    Shape **ptrs;
    float *area, harea[n];
    int *info, hinfo[n], *dtors, hd = 0;
    CHECK(cudaMalloc(&storage, (size_t)n * SLOT));
    CHECK(cudaMalloc(&ptrs, n * sizeof(Shape *)));
    CHECK(cudaMalloc(&area, sizeof harea));
    CHECK(cudaMalloc(&info, sizeof hinfo));
    CHECK(cudaMalloc(&dtors, sizeof(int)));
    CHECK(cudaMemset(dtors, 0, sizeof(int)));
    construct<<<(n + 127) / 128, 128>>>(storage, ptrs, n, dtors);
    CHECK_KERNEL();
    query<<<(n + 63) / 64, 64>>>(ptrs, n, area, info);
    CHECK_KERNEL();
    destroy<<<(n + 127) / 128, 128>>>(ptrs, n);
    CHECK_KERNEL();
    CHECK(cudaMemcpy(harea, area, sizeof harea, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hinfo, info, sizeof hinfo, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&hd, dtors, sizeof hd, cudaMemcpyDeviceToHost));
    int tris = 0;
    for (int i = 0; i < n; i++) {
        float a = (float)(i % 10 + 1), want;
        int winfo;
        switch (i % 3) {
        case 0: want = a * 2.0f; winfo = 100 + 40 + 1; break;
        case 1: want = a * a; winfo = 200 + 40 + 1; break;
        default: want = 0.5f * a * 4.0f; winfo = 300 + 30 + 1; tris++; break;
        }
        EXPECT(harea[i] == want, "area[%d] = %g want %g", i, harea[i], want);
        EXPECT_EQ(hinfo[i], winfo, "kind/sides/id", i);
    }
    EXPECT_EQ(hd, tris, "virtual destructor calls", 0);
    CHECK(cudaFree(storage)); CHECK(cudaFree(ptrs)); CHECK(cudaFree(area)); CHECK(cudaFree(info));
    CHECK(cudaFree(dtors));
    return finish();
}
