#!/usr/bin/env bash
# Runs setup, then every test of the project.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh

# The CUDA programs of tests/cuda: the PTX corpus of the parser tests and
# the executables the driver tests run (incremental).
scripts/build-cuda-tests.sh
# The program suite of benches/programs (CUDA and OpenMP versions): the
# driver's tests run each at a small size (incremental).
scripts/bench-programs.sh build

# Quality gates: formatting (rustfmt.toml) and clippy without warnings
# (the allow list is [workspace.lints] in Cargo.toml).
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings

# Every crate of the workspace (benchmarks are built, not run).
cargo test --workspace
# cuBLAS once more on a one-thread pool: epilogues, small batched
# products, solves, geam/dgmm and batched LU then run on the calling
# thread, a path of their own.
RAYON_NUM_THREADS=1 cargo test -p anycuda-cublas --quiet --test gemm --test lt --test lu --test rankk --test geam --test level
cargo check --workspace --benches --quiet

# llama.cpp's CUDA build on anycuda (scripts/llama.sh ci): a build without
# FlashAttention kernels, test-backend-ops' MUL_MAT group on CUDA0 and text
# generation with CUDA0's tokens checked against the CPU backend's. The
# build is cached (~/.cache/anycuda/llama); the first one takes about 20
# minutes on two cores. ANYCUDA_TEST_LLAMA=0 leaves this stage out.
if [ "${ANYCUDA_TEST_LLAMA:-1}" != 0 ]; then
    scripts/llama.sh ci
fi
