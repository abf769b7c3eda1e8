// The library is loaded as libamdhip64.so (or .so.6, ROCm 6's soname).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libamdhip64.so.6");
    println!("cargo:rerun-if-changed=build.rs");
}
