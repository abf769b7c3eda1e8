include!("../cublas/build_exports.rs");
include!("../nvrtc/exports/select.rs");

fn main() {
    let list = select("../nvrtc/exports/nvrtc.txt", "13");
    generate_with(&list, "anycuda_nvrtc::nvrtc", "::<crate::Lib>", "libnvrtc.so.13");
}
