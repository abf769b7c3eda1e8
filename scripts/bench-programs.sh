#!/usr/bin/env bash
# The program suite of benches/programs: each CUDA program (nvcc, PTX for
# compute_80 plus sm_80 SASS, run unmodified through cudart and anycuda's
# libcuda.so.1 on the CPU backend) against the OpenMP C version of the same
# algorithm (GCC, -O3 -march=native -fopenmp, all cores).
#
#   scripts/bench-programs.sh build             build both versions of every program
#   scripts/bench-programs.sh run [-n N] [-p PROFILE | -l LIB] [PROGRAM...]
#                                               N alternating runs of each side (default 5)
#                                               at the default sizes, with the libcuda.so
#                                               of target/PROFILE (default release) or LIB
#   scripts/bench-programs.sh check [-p PROFILE | -l LIB] [PROGRAM...]
#                                               every program at its small size: both
#                                               versions must print PASS and agree
#
# Builds go to target/bench-programs/{cuda,omp}/NAME (incremental). `run`
# prints per program the median time of each side over the N runs, the ratio
# (OpenMP time / anycuda time: above 1 means anycuda is faster), the geometric
# mean of the ratios, and the warm-up run of the CUDA program (JIT compilation
# included). Each run of a program itself reports the median of its REPS
# timed repetitions (see benches/programs/bench.h); BENCH_REPS sets REPS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
source scripts/env.sh
SRC=benches/programs
OUT=target/bench-programs

die() { echo "bench-programs: error: $*" >&2; exit 1; }
mtime() { stat -c %Y "$1"; }
directive() { sed -n "s|^//@ $2:[[:space:]]*||p" "$1" | head -n1; }

programs() {
    local d
    for d in "$SRC"/*/; do
        d=${d%/}; [ -f "$d/$(basename "$d").cu" ] && basename "$d"
    done
}

build() {
    scripts/toolkit.sh >/dev/null
    local NVCC="$ANYCUDA_TOOLKIT/bin/nvcc" name dir newest t f
    [ -x "$NVCC" ] || die "no nvcc at $NVCC"
    mkdir -p "$OUT/cuda" "$OUT/omp" "$OUT/logs"
    for name in $(programs); do
        dir="$SRC/$name"
        newest=$(mtime scripts/bench-programs.sh)
        for f in "$dir"/* "$SRC/bench.h"; do
            t=$(mtime "$f"); [ "$t" -gt "$newest" ] && newest=$t
        done
        if [ ! -e "$OUT/cuda/$name" ] || [ "$(mtime "$OUT/cuda/$name")" -lt "$newest" ]; then
            echo "  cuda/$name"
            # shellcheck disable=SC2046
            "$NVCC" -O3 -gencode "arch=compute_80,code=[compute_80,sm_80]" \
                $(directive "$dir/$name.cu" nvcc-flags) \
                "$dir/$name.cu" -o "$OUT/cuda/$name" >"$OUT/logs/$name.cuda.log" 2>&1 \
                || { cat "$OUT/logs/$name.cuda.log" >&2; die "nvcc failed for $name"; }
        fi
        if [ ! -e "$OUT/omp/$name" ] || [ "$(mtime "$OUT/omp/$name")" -lt "$newest" ]; then
            echo "  omp/$name"
            gcc -std=gnu11 -O3 -march=native -fopenmp -Wall "$dir/$name.c" -o "$OUT/omp/$name" -lm \
                >"$OUT/logs/$name.omp.log" 2>&1 \
                || { cat "$OUT/logs/$name.omp.log" >&2; die "gcc failed for $name"; }
        fi
    done
}

PROFILE=release
LIB=
N=5
parse() {
    SELECTED=()
    while [ $# -gt 0 ]; do
        case "$1" in
            -n) N="$2"; shift 2 ;;
            -p) PROFILE="$2"; shift 2 ;;
            -l) LIB=$(realpath "$2"); shift 2 ;;
            -*) die "unknown option $1" ;;
            *) SELECTED+=("$1"); shift ;;
        esac
    done
    [ ${#SELECTED[@]} -gt 0 ] || mapfile -t SELECTED < <(programs)
}

libdir() {
    local lib="${LIB:-$ROOT/target/$PROFILE/libcuda.so}"
    [ -e "$lib" ] || die "no $lib: cargo build -p anycuda-libcuda$([ "$PROFILE" = release ] && echo " --release")"
    LIBDIR=$(mktemp -d)
    ln -s "$lib" "$LIBDIR/libcuda.so.1"
    CACHE=$(mktemp -d)
    trap 'rm -rf "$LIBDIR" "$CACHE"' EXIT
}

run_cuda() { # name args... -> stdout
    local name="$1"; shift
    LD_LIBRARY_PATH="$LIBDIR" ANYCUDA_BACKEND=cpu ANYCUDA_CACHE_DIR="$CACHE" \
        ANYCUDA_JIT_TIER="${ANYCUDA_JIT_TIER:-opt}" "$OUT/cuda/$name" "$@"
}
run_omp() { local name="$1"; shift; "$OUT/omp/$name" "$@"; }
field() { sed -n "s|^$1 [^ ]* ||p" | head -n1; } # KEY < output -> value

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

cmd_run() {
    parse "$@"
    build >/dev/null
    libdir
    local reps="${BENCH_REPS:-5}" name i o c tc to first
    echo "library: ${LIB:-target/$PROFILE/libcuda.so}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1); $N alternating runs, $reps repetitions each"
    printf '%-16s %12s %12s %8s %12s\n' program "OpenMP ms" "anycuda ms" ratio "first ms"
    local logsum=0 count=0
    for name in "${SELECTED[@]}"; do
        : >"$OUT/$name.omp.times"; : >"$OUT/$name.cuda.times"; : >"$OUT/$name.first"
        for ((i = 0; i < N; i++)); do
            o=$(run_omp "$name" 0 "$reps") || die "$name (OpenMP) failed: $o"
            c=$(run_cuda "$name" 0 "$reps") || die "$name (anycuda) failed: $c"
            grep -q "^PASS $name" <<<"$o" || die "$name (OpenMP) did not pass: $o"
            grep -q "^PASS $name" <<<"$c" || die "$name (anycuda) did not pass: $c"
            field TIME <<<"$o" >>"$OUT/$name.omp.times"
            field TIME <<<"$c" >>"$OUT/$name.cuda.times"
            field FIRST <<<"$c" >>"$OUT/$name.first"
        done
        to=$(median <"$OUT/$name.omp.times"); tc=$(median <"$OUT/$name.cuda.times")
        first=$(median <"$OUT/$name.first")
        printf '%-16s %12.3f %12.3f %7.2fx %12.1f\n' "$name" "$to" "$tc" "$(awk "BEGIN{print $to/$tc}")" "$first"
        logsum=$(awk "BEGIN{print $logsum + log($to/$tc)}"); count=$((count + 1))
    done
    printf 'geometric mean of the ratios: %.2fx\n' "$(awk "BEGIN{print exp($logsum/$count)}")"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}

cmd_check() {
    PROFILE=debug
    parse "$@"
    build
    libdir
    local name o c small tol vo vc fail=0
    for name in "${SELECTED[@]}"; do
        small=$(directive "$SRC/$name/$name.cu" small)
        tol=$(directive "$SRC/$name/$name.cu" tolerance); tol=${tol:-0}
        [ -n "$small" ] || die "$name.cu has no //@ small: line"
        o=$(run_omp "$name" "$small" 1 2>&1) || true
        c=$(run_cuda "$name" "$small" 1 2>&1) || true
        vo=$(field CHECK <<<"$o"); vc=$(field CHECK <<<"$c")
        if ! grep -q "^PASS $name" <<<"$o"; then echo "FAIL $name (OpenMP): $o"; fail=1; continue; fi
        if ! grep -q "^PASS $name" <<<"$c"; then echo "FAIL $name (anycuda): $c"; fail=1; continue; fi
        if ! awk -v a="$vo" -v b="$vc" -v t="$tol" 'BEGIN{d=a-b; if(d<0)d=-d; m=(a<0?-a:a); if(m<1)m=1; exit !(d<=t*m)}'; then
            echo "FAIL $name: checksums differ: OpenMP $vo, anycuda $vc (tolerance $tol)"; fail=1; continue
        fi
        echo "ok   $name (checksum $vc)"
    done
    return $fail
}

case "${1:-}" in
    build) build ;;
    run) shift; cmd_run "$@" ;;
    check) shift; cmd_check "$@" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 2 ;;
esac
