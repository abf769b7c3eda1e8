#!/usr/bin/env bash
# Installs what building and testing anycuda needs on Debian 12, skipping
# whatever is already present. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

# libopenblas-dev: the CPU BLAS the cuBLAS GEMM benchmark measures against
# (crates/cublas/benches/gemm.rs).
need_pkgs=()
# libamdhip64-5: Debian's ROCm 5.2 HIP runtime, only so that the HIP
# backend's tests can check its bindings against a real runtime.
# clang-19, llvm-19 (llvm-objdump-19), python3.11 and libpython3.11: the AMD
# ISA emulator that the HIP test double (crates/hip-emulated) runs in-process.
# cmake, ninja-build, curl: scripts/llama.sh downloads and builds llama.cpp.
for p in llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev lld-19 build-essential pkg-config python3 python3-pip libamdhip64-5 \
    clang-19 llvm-19 python3.11 libpython3.11 libopenblas-dev cmake ninja-build curl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "setup: installing ${need_pkgs[*]}"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo is missing; install Rust (https://rustup.rs) first" >&2
    exit 1
fi

# rustfmt and clippy run as quality gates in scripts/test.sh.
for c in rustfmt clippy; do
    if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
        echo "setup: adding the Rust component $c"
        rustup component add "$c"
    fi
done

# The CUDA toolkit is only used to build test programs (never at run time).
scripts/toolkit.sh
