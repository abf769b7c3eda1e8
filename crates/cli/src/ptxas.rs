//! anycuda's `ptxas`, which `anycuda run` points Triton to: see
//! [`anycuda_nvrtc::ptxas`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(anycuda_nvrtc::ptxas::main(&args));
}
