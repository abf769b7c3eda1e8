#!/usr/bin/env bash
# The main job: builds anycuda, compiles unmodified CUDA programs with
# NVIDIA's nvcc (static cudart), and runs them on the CPU through anycuda's
# libcuda.so.1, printing their self-checked results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/env.sh

cargo build --release --quiet -p anycuda-cli -p anycuda-libcuda

out=target/demo
mkdir -p "$out"
for p in vector_add matmul_tiled warp_shuffle thrust_basic; do
    if [ ! -x "$out/$p" ] || [ "tests/cuda/$p.cu" -nt "$out/$p" ]; then
        echo "nvcc: building $p"
        "$ANYCUDA_TOOLKIT/bin/nvcc" -O2 -arch=sm_80 -Itests/cuda "tests/cuda/$p.cu" -o "$out/$p"
    fi
done

target/release/anycuda info
for p in vector_add matmul_tiled warp_shuffle thrust_basic; do
    echo
    echo "\$ anycuda run -- $out/$p"
    target/release/anycuda run -- "$out/$p"
done
