include!("../cublas/build_exports.rs");

fn main() {
    generate("../cublas/exports/cublasLt.txt", "anycuda_cublas::lt", "libcublasLt.so.12");
}
