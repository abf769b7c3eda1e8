include!("../cublas/build_exports.rs");

fn main() {
    generate("../cublas/exports/cublas.txt", "anycuda_cublas::abi", "libcublas.so.13");
}
