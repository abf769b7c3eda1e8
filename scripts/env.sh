# Environment for building anycuda; sourced by the other scripts.
export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}"
# How scripts/toolkit.sh arranges the CUDA toolkit; bumped when that
# changes. Each layout installs into a directory of its own, so checkouts
# of different layouts on one machine do not reinstall over each other.
export ANYCUDA_TOOLKIT_LAYOUT=3
export ANYCUDA_TOOLKIT="${ANYCUDA_TOOLKIT:-${XDG_CACHE_HOME:-$HOME/.cache}/anycuda/toolkit-$ANYCUDA_TOOLKIT_LAYOUT}"
