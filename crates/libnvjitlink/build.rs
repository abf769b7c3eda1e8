include!("../cublas/build_exports.rs");

fn main() {
    generate("../nvrtc/exports/nvJitLink.txt", "anycuda_nvrtc::jitlink", "libnvJitLink.so.13");
}
