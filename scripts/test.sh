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
