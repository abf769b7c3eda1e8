#!/usr/bin/env bash
# Installs the CUDA toolkit pieces used to BUILD test programs (never needed at
# run time) into $ANYCUDA_TOOLKIT (see scripts/env.sh), from pinned PyPI wheels
# listed with sha256 hashes in scripts/cuda-toolkit-requirements.txt.
# Idempotent: a stamp file records what is installed; when it matches, this is
# a quick no-op. Nothing is ever written into the repository.
#
#   scripts/toolkit.sh            install if missing or outdated
#   scripts/toolkit.sh --force    reinstall
#   scripts/toolkit.sh --verify   (re)run the build checks on the installed toolkit
#
# Resulting layout (a normal CUDA toolkit root, relocatable):
#   $ANYCUDA_TOOLKIT/bin/nvcc (+ nvcc.profile, ptxas, fatbinary, nvlink, cudafe++)
#   $ANYCUDA_TOOLKIT/nvvm/{bin/cicc,libdevice/libdevice.10.bc}
#   $ANYCUDA_TOOLKIT/include            cudart + crt headers (13.x)
#   $ANYCUDA_TOOLKIT/include/cccl       thrust, cub, libcu++ (nvcc.profile adds it)
#   $ANYCUDA_TOOLKIT/lib                libcudart_static.a, libcudart.so(.13),
#                                       libcudadevrt.a, libnvvm.so; lib64 -> lib
#   $ANYCUDA_TOOLKIT/cu12/{include,lib} CUDA 12.9 cudart (headers, libcudart.so.12)
#   $ANYCUDA_TOOLKIT/include/cublas*.h  cuBLAS 13.10 headers (cu12/include: 12.9)
#   $ANYCUDA_TOOLKIT/cublas/lib         NVIDIA's libcublas(Lt).so.13, to link
#   $ANYCUDA_TOOLKIT/cu12/cublas/lib    ... and .so.12 (apart from lib/, which
#                                       shared-cudart programs have as RUNPATH:
#                                       at run time programs load anycuda's)
#   $ANYCUDA_TOOLKIT/include/nvrtc.h, nvJitLink.h   NVRTC 13.5, nvJitLink 13.5
#   $ANYCUDA_TOOLKIT/nvrtc/lib          NVIDIA's libnvrtc.so.13 (+ builtins) and
#                                       libnvJitLink.so.13: to link, and what
#                                       anycuda's libnvrtc/libnvJitLink load
#   $ANYCUDA_TOOLKIT/cu12/nvrtc/lib     ... libnvrtc.so.12 (12.9; nvrtc.h in
#                                       cu12/include)
#   $ANYCUDA_TOOLKIT/share/wheels       the wheels' dist-info (licenses, RECORD)
#   $ANYCUDA_TOOLKIT/.anycuda-toolkit-stamp
# There is no libcuda stub (lib/stubs) in the wheels: programs that call the
# driver API directly must dlopen libcuda.so.1.
#
# Building against the 12.x cudart (host code sees the 12.9 runtime headers,
# links libcudart.so.12; nvcc 13.5 still compiles the device code):
#   nvcc -cudart none -I$ANYCUDA_TOOLKIT/cu12/include x.cu \
#        -L$ANYCUDA_TOOLKIT/cu12/lib -l:libcudart.so.12
# `readelf -d` of the result shows NEEDED libcudart.so.12.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

REQ=scripts/cuda-toolkit-requirements.txt
LAYOUT="$ANYCUDA_TOOLKIT_LAYOUT" # scripts/env.sh; bump it there when the arrangement below changes
ROOT="$ANYCUDA_TOOLKIT"
STAMP_NAME=.anycuda-toolkit-stamp
want_stamp="layout=$LAYOUT req=$(sha256sum "$REQ" | cut -d' ' -f1) arch=$(uname -m)"

cleanup_dirs=()
cleanup() { if [ ${#cleanup_dirs[@]} -gt 0 ]; then rm -rf "${cleanup_dirs[@]}"; fi; }
trap cleanup EXIT
log() { echo "toolkit: $*"; }
die() { echo "toolkit: error: $*" >&2; exit 1; }

# Build checks: each flavour of build the project relies on. $1 = toolkit root.
verify() {
    local tk="$1" d
    d=$(mktemp -d "${TMPDIR:-/tmp}/anycuda-toolkit-verify.XXXXXX")
    cleanup_dirs+=("$d")
    cat >"$d/t.cu" <<'EOF'
#include <cstdio>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <cub/block/block_reduce.cuh>
namespace cg = cooperative_groups;
__global__ void k(float *o, const float *a) {
    auto b = cg::this_thread_block();
    typedef cub::BlockReduce<float, 64> R;
    __shared__ typename R::TempStorage tmp;
    float v = R(tmp).Sum(a[b.thread_rank()]);
    if (b.thread_rank() == 0) o[0] = v + __half2float(__float2half(sinf(1.0f)));
}
int main() {
    thrust::device_vector<float> a(64, 1.0f), o(1);
    k<<<1, 64>>>(thrust::raw_pointer_cast(o.data()), thrust::raw_pointer_cast(a.data()));
    printf("%f %f\n", (float)o[0], thrust::reduce(a.begin(), a.end()));
    return cudaDeviceSynchronize() != cudaSuccess;
}
EOF
    cat >"$d/s.cu" <<'EOF'
#include <cstdio>
__global__ void k(int *p) { p[threadIdx.x] = threadIdx.x; }
int main() {
    int *p;
    if (cudaMalloc(&p, 128) != cudaSuccess) return 1;
    k<<<1, 32>>>(p);
    printf("%d\n", (int)cudaDeviceSynchronize());
    return 0;
}
EOF
    local nvcc="$tk/bin/nvcc"
    run() { # name, args...
        local name="$1"; shift
        if ! "$nvcc" "$@" >"$d/log" 2>&1; then
            cat "$d/log" >&2
            die "build check '$name' failed: nvcc $*"
        fi
    }
    run ptx-sm80      -ptx -arch=sm_80 "$d/t.cu" -o "$d/t.ptx"
    grep -q '^\.target sm_80' "$d/t.ptx" || die "ptx check: no .target sm_80"
    run static-sm90   -arch=sm_90 "$d/t.cu" -o "$d/t-static"
    run cudart-shared -arch=sm_90 -cudart shared "$d/s.cu" -o "$d/s-shared"
    readelf -d "$d/s-shared" | grep -q 'NEEDED.*libcudart\.so\.13' || die "-cudart shared: libcudart.so.13 not NEEDED"
    if readelf -d "$d/t-static" | grep -q 'NEEDED.*libcudart'; then die "static build needs libcudart.so"; fi
    run debug-G       -arch=sm_80 -G "$d/s.cu" -o "$d/s-G"
    run lz4           -arch=sm_80 --compress-mode=speed "$d/s.cu" -o "$d/s-lz4"
    run no-compress   -arch=sm_80 --no-compress "$d/s.cu" -o "$d/s-nocomp"
    run per-thread    -arch=sm_80 --default-stream per-thread "$d/s.cu" -o "$d/s-ptds"
    run cudart12      -arch=sm_80 -cudart none -I"$tk/cu12/include" "$d/s.cu" -o "$d/s-cu12" \
                      -L"$tk/cu12/lib" -l:libcudart.so.12
    readelf -d "$d/s-cu12" | grep -q 'NEEDED.*libcudart\.so\.12' || die "cu12 build: libcudart.so.12 not NEEDED"
    cat >"$d/b.cu" <<'EOF'
#include <cublas_v2.h>
int main() { cublasHandle_t h; return cublasCreate(&h) != CUBLAS_STATUS_SUCCESS; }
EOF
    run cublas13      -arch=sm_80 "$d/b.cu" -o "$d/b13" -L"$tk/cublas/lib" -lcublas -Xlinker -rpath-link="$tk/cublas/lib"
    readelf -d "$d/b13" | grep -q 'NEEDED.*libcublas\.so\.13' || die "cublas build: libcublas.so.13 not NEEDED"
    run cublas12      -arch=sm_80 -cudart none -I"$tk/cu12/include" "$d/b.cu" -o "$d/b12" -L"$tk/cu12/lib" -l:libcudart.so.12 \
                      -L"$tk/cu12/cublas/lib" -l:libcublas.so.12 -Xlinker -rpath-link="$tk/cu12/cublas/lib"
    readelf -d "$d/b12" | grep -q 'NEEDED.*libcublas\.so\.12' || die "cu12 cublas build: libcublas.so.12 not NEEDED"
    cat >"$d/r13.c" <<'EOF'
#include <nvrtc.h>
#include <nvJitLink.h>
int main(void) { int a, b; unsigned c, e; return nvrtcVersion(&a, &b) != NVRTC_SUCCESS || nvJitLinkVersion(&c, &e) != NVJITLINK_SUCCESS; }
EOF
    cat >"$d/r12.c" <<'EOF'
#include <nvrtc.h>
int main(void) { int a, b; return nvrtcVersion(&a, &b) != NVRTC_SUCCESS; }
EOF
    run nvrtc13       "$d/r13.c" -o "$d/r13" -L"$tk/nvrtc/lib" -l:libnvrtc.so.13 -l:libnvJitLink.so.13
    readelf -d "$d/r13" | grep -q 'NEEDED.*libnvJitLink\.so\.13' || die "nvrtc build: libnvJitLink.so.13 not NEEDED"
    run nvrtc12       -I"$tk/cu12/include" "$d/r12.c" -o "$d/r12" -L"$tk/cu12/nvrtc/lib" -l:libnvrtc.so.12
    readelf -d "$d/r12" | grep -q 'NEEDED.*libnvrtc\.so\.12' || die "cu12 nvrtc build: libnvrtc.so.12 not NEEDED"
    log "build checks passed (ptx, static, shared, -G, lz4, no-compress, per-thread, cudart 12, cublas 13 and 12, nvrtc 13 and 12, nvJitLink)"
}

force=0
case "${1:-}" in
    "") ;;
    --force) force=1 ;;
    --verify)
        [ -x "$ROOT/bin/nvcc" ] || die "no toolkit at $ROOT; run scripts/toolkit.sh first"
        verify "$ROOT"; exit 0 ;;
    *) die "usage: $0 [--force|--verify]" ;;
esac

if [ $force = 0 ] && [ -f "$ROOT/$STAMP_NAME" ] && [ -x "$ROOT/bin/nvcc" ] \
    && [ "$(cat "$ROOT/$STAMP_NAME")" = "$want_stamp" ]; then
    exit 0
fi

case "$(uname -m)" in
    x86_64|aarch64) ;;
    *) die "no pinned CUDA wheels for $(uname -m) (only x86_64 and aarch64); set ANYCUDA_TOOLKIT to an existing toolkit with the same layout" ;;
esac

# Refuse to replace a directory we did not create (for example a real CUDA
# installation someone pointed ANYCUDA_TOOLKIT at).
if [ -e "$ROOT" ] && [ ! -f "$ROOT/$STAMP_NAME" ] && [ -n "$(ls -A "$ROOT" 2>/dev/null)" ]; then
    die "$ROOT exists and was not installed by this script; remove it or point ANYCUDA_TOOLKIT elsewhere"
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        log "installing python3-pip"
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip
    fi
    python3 -m pip --version >/dev/null 2>&1 || die "python3 -m pip is not available; install pip"
fi

start=$(date +%s)
parent=$(dirname "$ROOT")
mkdir -p "$parent"
stage=$(mktemp -d "$parent/.toolkit-stage.XXXXXX")
cleanup_dirs+=("$stage")

log "downloading pinned wheels ($REQ)"
python3 -m pip download --disable-pip-version-check -q --no-deps --only-binary=:all: \
    --require-hashes -r "$REQ" -d "$stage/wheels" \
    || die "pip download failed"

log "unpacking"
# zipfile -e does not keep the executable bits; restore them from the entries.
python3 - "$stage/x" "$stage"/wheels/*.whl <<'EOF'
import os, sys, zipfile
dest = sys.argv[1]
for whl in sys.argv[2:]:
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            path = z.extract(info, dest)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(path, mode | 0o444)
EOF

x="$stage/x"
r="$stage/root"
[ -x "$x/nvidia/cu13/bin/nvcc" ] || die "unexpected wheel layout: no nvidia/cu13/bin/nvcc"
[ -d "$x/nvidia/cuda_runtime/lib" ] || die "unexpected wheel layout: no nvidia/cuda_runtime/lib (cu12)"
[ -f "$x/nvidia/cu13/lib/libcublas.so.13" ] || die "unexpected wheel layout: no nvidia/cu13/lib/libcublas.so.13"
[ -f "$x/nvidia/cublas/lib/libcublas.so.12" ] || die "unexpected wheel layout: no nvidia/cublas/lib/libcublas.so.12 (cu12)"
[ -f "$x/nvidia/cu13/lib/libnvrtc.so.13" ] || die "unexpected wheel layout: no nvidia/cu13/lib/libnvrtc.so.13"
[ -f "$x/nvidia/cu13/lib/libnvJitLink.so.13" ] || die "unexpected wheel layout: no nvidia/cu13/lib/libnvJitLink.so.13"
[ -f "$x/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ] || die "unexpected wheel layout: no nvidia/cuda_nvrtc/lib/libnvrtc.so.12 (cu12)"
mv "$x/nvidia/cu13" "$r"
mv "$x/nvidia/cuda_runtime" "$r/cu12"
# NVIDIA's cuBLAS only links programs: its libraries stay out of lib/ (the
# RUNPATH of shared-cudart programs) so nothing finds them at run time.
mkdir -p "$r/cublas/lib" "$r/cu12/cublas/lib"
mv "$r/lib/libcublas.so.13" "$r/lib/libcublasLt.so.13" "$r/cublas/lib/"
rm -f "$r"/lib/libnvblas.so.*
mv "$x"/nvidia/cublas/include/* "$r/cu12/include/"
mv "$x/nvidia/cublas/lib/libcublas.so.12" "$x/nvidia/cublas/lib/libcublasLt.so.12" "$r/cu12/cublas/lib/"
# NVRTC and nvJitLink likewise stay apart from lib/: at run time programs
# load anycuda's, which load these (libnvrtc finds its builtins library
# beside itself).
mkdir -p "$r/nvrtc/lib" "$r/cu12/nvrtc/lib"
mv "$r"/lib/libnvrtc.so.13 "$r"/lib/libnvrtc-builtins.so.* "$r"/lib/libnvJitLink.so.13 "$r/nvrtc/lib/"
mv "$x"/nvidia/cuda_nvrtc/include/nvrtc.h "$r/cu12/include/"
mv "$x"/nvidia/cuda_nvrtc/lib/libnvrtc.so.12 "$x"/nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.* "$r/cu12/nvrtc/lib/"
ln -s libnvrtc.so.13 "$r/nvrtc/lib/libnvrtc.so"
ln -s libnvJitLink.so.13 "$r/nvrtc/lib/libnvJitLink.so"
ln -s libnvrtc.so.12 "$r/cu12/nvrtc/lib/libnvrtc.so"
ln -s libcublas.so.13 "$r/cublas/lib/libcublas.so"
ln -s libcublasLt.so.13 "$r/cublas/lib/libcublasLt.so"
ln -s libcublas.so.12 "$r/cu12/cublas/lib/libcublas.so"
ln -s libcublasLt.so.12 "$r/cu12/cublas/lib/libcublasLt.so"
mkdir -p "$r/share/wheels"
mv "$x"/*.dist-info "$r/share/wheels/"
# Unversioned names for the linker (-lcudart with -cudart shared), lib64 for
# tools that expect it.
ln -s libcudart.so.13 "$r/lib/libcudart.so"
ln -s libnvvm.so.4 "$r/lib/libnvvm.so"
ln -s lib "$r/lib64"
ln -s libcudart.so.12 "$r/cu12/lib/libcudart.so"
ln -s lib "$r/cu12/lib64"
for f in "$r/bin/nvcc" "$r/bin/ptxas" "$r/bin/fatbinary" "$r/bin/nvlink" "$r/bin/cudafe++" \
         "$r/nvvm/bin/cicc" "$r/nvvm/libdevice/libdevice.10.bc" "$r/include/crt/host_config.h" \
         "$r/include/cccl/thrust/version.h" "$r/include/cccl/cub/cub.cuh" "$r/include/cuda_runtime.h" \
         "$r/lib/libcudart_static.a" "$r/lib/libcudart.so.13" "$r/cu12/lib/libcudart.so.12" \
         "$r/cu12/include/cuda_runtime.h" "$r/include/cublas_v2.h" "$r/cu12/include/cublas_v2.h" \
         "$r/cublas/lib/libcublasLt.so.13" "$r/cu12/cublas/lib/libcublasLt.so.12" \
         "$r/include/nvrtc.h" "$r/include/nvJitLink.h" "$r/cu12/include/nvrtc.h" \
         "$r/nvrtc/lib/libnvrtc.so.13" "$r/nvrtc/lib/libnvJitLink.so.13" "$r/cu12/nvrtc/lib/libnvrtc.so.12"; do
    [ -e "$f" ] || die "missing after unpacking: ${f#"$r"/}"
done
grep -v '^#' "$REQ" | grep -o '^[a-z0-9-]*==[^ ]*' >"$r/share/wheels/versions.txt"

log "checking the toolkit"
verify "$r"

echo "$want_stamp" >"$r/$STAMP_NAME"
if [ -e "$ROOT" ]; then
    old="$stage/old"
    mv "$ROOT" "$old"
fi
mv "$r" "$ROOT"
log "installed $(paste -sd' ' "$ROOT/share/wheels/versions.txt") into $ROOT in $(( $(date +%s) - start ))s"
