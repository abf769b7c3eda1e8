include!("../cublas/build_exports.rs");

fn main() {
    generate_with_unsupported(
        "../cublas/exports/cublas.txt",
        "anycuda_cublas::abi",
        "../cublas/exports/cublas-unsupported.txt",
        "anycuda_cublas::unsupported",
        "libcublas.so.12",
    );
}
