# Environment for building anycuda; sourced by the other scripts.
export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}"
export ANYCUDA_TOOLKIT="${ANYCUDA_TOOLKIT:-${XDG_CACHE_HOME:-$HOME/.cache}/anycuda/toolkit}"
