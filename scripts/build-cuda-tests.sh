#!/usr/bin/env bash
# Builds the project's CUDA test programs (tests/cuda/*.cu) with the pinned
# toolkit from scripts/toolkit.sh: the PTX corpus for the parser tests and the
# executables the run-time tests execute.
#
#   scripts/build-cuda-tests.sh [OUTDIR]      (default: target/cuda-tests)
#
# Incremental: an artifact is rebuilt only when it is older than its source
# files, tests/cuda/*.cuh and tests/cuda/parts/*.cuh, this script or the
# toolkit's stamp. At most
# $CUDA_TESTS_JOBS (default 2) compilations run at once. Any failed
# compilation prints nvcc's output and makes the script exit 1.
#
# Output layout (paths relative to OUTDIR):
#   ptx/sm_80/<name>.ptx         nvcc -ptx -arch=sm_80
#   ptx/sm_90/<name>.ptx         nvcc -ptx -arch=sm_90
#   ptx/sm_80-G/<name>.ptx       nvcc -ptx -arch=sm_80 -G   (debug)
#   bin/static/<name>            every program: static cudart (nvcc's default),
#                                -gencode arch=compute_80,code=[compute_80,sm_80]
#                                (the fatbin holds sm_80 SASS and compute_80 PTX)
#   bin/shared/<name>            -cudart shared (NEEDED libcudart.so.13; RUNPATH
#                                points at $ANYCUDA_TOOLKIT/lib)
#   bin/cu12/<name>              host code against the CUDA 12.9 runtime: 12.9
#                                headers, -cudart none, linked with
#                                libcudart.so.12 (RUNPATH $ANYCUDA_TOOLKIT/cu12/lib)
#   bin/lz4/<name>               --compress-mode=speed (LZ4-compressed fatbin)
#   bin/nocomp/<name>            --no-compress
#   expected/<name>.stdout       copy of tests/cuda/<name>.expected, if any
#   logs/<variant>/<name>.log    nvcc's output for each artifact
#   manifest.tsv                 one line per artifact, tab-separated, with a
#                                "#" header line:
#       name  variant  kind  path  expected_stdout  cudart  flags
#     kind: ptx | exe; path and expected_stdout relative to OUTDIR
#     ("-" when the program's stdout is not compared, only its final
#     "PASS <name>" line and exit status 0); cudart: static | libcudart.so.13
#     | libcudart.so.12 | - (PTX); flags: the extra nvcc flags of the build.
#
# Which executable variants a program gets beyond bin/static is declared in
# its source with a comment line "//@ variants: shared cu12 lz4 nocomp".
# "//@ nvcc-flags: ..." adds flags to every build of the program (PTX and
# executables, e.g. --default-stream per-thread), "//@ link-flags: ..." to
# its executables only.
# "//@ sources: parts/a.cu parts/b.cu" makes a program of several files
# (paths relative to tests/cuda; files under tests/cuda/parts/ are never
# programs of their own): every build gets -rdc=true, its executables are
# compiled from the program's file and those (nvcc links the device code),
# its PTX from the program's file alone. The manifest's flags column then
# carries "sources:FILE" for each.
# "//@ gencode: arch=compute_80,code=compute_80" replaces the executables'
# -gencode (manifest flags "gencode:VALUE"), e.g. for PTX-only programs.
# "//@ libs: cublas cublasLt" links the executables with NVIDIA's cuBLAS
# libraries of the matching CUDA release (from the toolkit, kept off every
# RUNPATH); at run time the programs load anycuda's. The manifest's flags
# column then carries "libs:NAME".
set -euo pipefail
CALLER_PWD=$PWD
cd "$(dirname "$0")/.."
ROOT=$PWD
source scripts/env.sh

# A relative OUTDIR is taken from the caller's working directory; the default
# from the repository root.
if [ $# -ge 1 ]; then
    case "$1" in /*) OUT="$1" ;; *) OUT="$CALLER_PWD/$1" ;; esac
else
    OUT="$ROOT/target/cuda-tests"
fi
JOBS="${CUDA_TESTS_JOBS:-2}"
SRC_DIR=tests/cuda

die() { echo "build-cuda-tests: error: $*" >&2; exit 1; }

OUT=$(realpath -m "$OUT")
case "$OUT/" in
    "$(realpath -m "$ROOT/tests")/"*) die "the output folder must not be inside tests/ ($OUT)" ;;
esac
mkdir -p "$OUT"

scripts/toolkit.sh
TK="$ANYCUDA_TOOLKIT"
NVCC="$TK/bin/nvcc"
[ -x "$NVCC" ] || die "no nvcc at $NVCC"
STAMP="$TK/.anycuda-toolkit-stamp"

start=$(date +%s)
shopt -s nullglob
sources=("$SRC_DIR"/*.cu)
[ ${#sources[@]} -gt 0 ] || die "no programs in $SRC_DIR"
headers=("$SRC_DIR"/*.cuh "$SRC_DIR"/parts/*.cuh)
shopt -u nullglob
set -f # no globbing from here on: flags such as code=[compute_80,sm_80] are literal
self="scripts/build-cuda-tests.sh"

# A file's modification time in seconds (GNU stat).
mtime() { stat -c %Y "$1"; }
common_newest=$(mtime "$self")
for f in "${headers[@]}" "$STAMP"; do
    [ -e "$f" ] || continue
    t=$(mtime "$f"); [ "$t" -gt "$common_newest" ] && common_newest=$t
done

directive() { # file, key -> value of "//@ key: value" (empty if absent)
    sed -n "s|^//@ $2:[[:space:]]*||p" "$1" | head -n1
}

# ---- job list ---------------------------------------------------------------
# Each job: heavy \t source \t variant \t output path \t nvcc arguments (separated
# by \x1f; "LINK" marks where the link-only arguments start).
jobs_file="$OUT/.jobs"
manifest_tmp="$OUT/.manifest.tmp"
: >"$jobs_file"
printf '#name\tvariant\tkind\tpath\texpected_stdout\tcudart\tflags\n' >"$manifest_tmp"

GENCODE=(-gencode "arch=compute_80,code=[compute_80,sm_80]")
n_heavy=0
for src in "${sources[@]}"; do
    name=$(basename "$src" .cu)
    variants=$(directive "$src" variants)
    nvcc_flags=$(directive "$src" nvcc-flags)
    link_flags=$(directive "$src" link-flags)
    libs=$(directive "$src" libs)
    extra_srcs=""; src_tags=""
    for x in $(directive "$src" sources); do
        [ -f "$SRC_DIR/$x" ] || die "$src: no source '$x' in $SRC_DIR"
        extra_srcs="$extra_srcs $SRC_DIR/$x"; src_tags="$src_tags sources:$x"
    done
    if [ -n "$extra_srcs" ]; then
        nvcc_flags="-rdc=true $nvcc_flags"
    fi
    gencode=$(directive "$src" gencode)
    if [ -n "$gencode" ]; then
        PROG_GENCODE=(-gencode "$gencode"); src_tags="$src_tags gencode:$gencode"
    else
        PROG_GENCODE=("${GENCODE[@]}")
    fi
    libs13=""; libs12=""; lib_tags=""
    for l in $libs; do
        case "$l" in cublas|cublasLt) ;; *) die "$src: unknown library '$l'" ;; esac
        libs13="$libs13 -l$l"; libs12="$libs12 -l:lib$l.so.12"; lib_tags="$lib_tags libs:$l"
    done
    if [ -n "$libs" ]; then
        libs13="-L$TK/cublas/lib$libs13 -Xlinker -rpath-link=$TK/cublas/lib"
        libs12="-L$TK/cu12/cublas/lib$libs12 -Xlinker -rpath-link=$TK/cu12/cublas/lib"
    fi
    for v in $variants; do
        case "$v" in shared|cu12|lz4|nocomp) ;; *) die "$src: unknown variant '$v'" ;; esac
    done
    expected="-"
    if [ -f "$SRC_DIR/$name.expected" ]; then
        mkdir -p "$OUT/expected"
        if [ ! -e "$OUT/expected/$name.stdout" ] || ! cmp -s "$SRC_DIR/$name.expected" "$OUT/expected/$name.stdout"; then
            cp "$SRC_DIR/$name.expected" "$OUT/expected/$name.stdout"
        fi
        expected="expected/$name.stdout"
    fi
    # CCCL programs compile slowly: schedule them first.
    heavy=0
    grep -qE '#include <(thrust|cub)/' "$src" && heavy=1 && n_heavy=$((n_heavy + 1))

    add() { # variant kind relpath cudart manifest_flags nvcc-args...
        local variant="$1" kind="$2" rel="$3" cudart="$4" mflags="$5"; shift 5
        local exp="-"; [ "$kind" = exe ] && exp="$expected"
        mflags=$(echo $mflags) # squeeze blanks (globbing is off)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$variant" "$kind" "$rel" "$exp" "$cudart" \
            "${mflags:--}" >>"$manifest_tmp"
        local IFS=$'\x1f' # arguments are kept apart by the unit separator
        printf '%s\t%s\t%s\t%s\t%s\n' "$heavy" "$src" "$variant" "$rel" "$*" >>"$jobs_file"
    }
    add sm_80 ptx "ptx/sm_80/$name.ptx" - "$nvcc_flags" -ptx -arch=sm_80 $nvcc_flags
    add sm_90 ptx "ptx/sm_90/$name.ptx" - "$nvcc_flags" -ptx -arch=sm_90 $nvcc_flags
    add sm_80-G ptx "ptx/sm_80-G/$name.ptx" - "-G $nvcc_flags" -ptx -arch=sm_80 -G $nvcc_flags
    lib_tags="$lib_tags$src_tags"
    add static exe "bin/static/$name" static "$nvcc_flags$lib_tags" "${PROG_GENCODE[@]}" $nvcc_flags $extra_srcs LINK $link_flags $libs13
    for v in $variants; do
        case "$v" in
            shared) add shared exe "bin/shared/$name" libcudart.so.13 "-cudart shared $nvcc_flags$lib_tags" \
                        "${PROG_GENCODE[@]}" -cudart shared $nvcc_flags $extra_srcs LINK $link_flags $libs13 -Xlinker -rpath="$TK/lib" ;;
            cu12)   if [ -z "$extra_srcs" ]; then
                        add cu12 exe "bin/cu12/$name" libcudart.so.12 "cudart-12.9 $nvcc_flags$lib_tags" \
                            "${PROG_GENCODE[@]}" -cudart none -I"$TK/cu12/include" $nvcc_flags \
                            LINK $link_flags $libs12 -L"$TK/cu12/lib" -l:libcudart.so.12 -Xlinker -rpath="$TK/cu12/lib"
                    else
                        # -cudart none would skip nvcc's device link: -cudart
                        # shared with the 12.9 directory first picks its
                        # libcudart.so (-> .so.12) and libcudadevrt.a.
                        add cu12 exe "bin/cu12/$name" libcudart.so.12 "cudart-12.9 $nvcc_flags$lib_tags" \
                            "${PROG_GENCODE[@]}" -cudart shared -I"$TK/cu12/include" $nvcc_flags $extra_srcs \
                            LINK $link_flags $libs12 -L"$TK/cu12/lib" -Xlinker -rpath="$TK/cu12/lib"
                    fi ;;
            lz4)    add lz4 exe "bin/lz4/$name" static "--compress-mode=speed $nvcc_flags$lib_tags" \
                        "${PROG_GENCODE[@]}" --compress-mode=speed $nvcc_flags $extra_srcs LINK $link_flags $libs13 ;;
            nocomp) add nocomp exe "bin/nocomp/$name" static "--no-compress $nvcc_flags$lib_tags" \
                        "${PROG_GENCODE[@]}" --no-compress $nvcc_flags $extra_srcs LINK $link_flags $libs13 ;;
        esac
    done
done

# ---- run the jobs -------------------------------------------------------------
fail_file="$OUT/.failed"
: >"$fail_file"
compiled=0
uptodate=0

build_one() { # src variant rel args...
    local src="$1" variant="$2" rel="$3"; shift 3
    local out="$OUT/$rel" name log tmp
    name=$(basename "$src" .cu)
    log="$OUT/logs/$variant/$name.log"
    mkdir -p "$(dirname "$out")" "$(dirname "$log")"
    tmp="$out.tmp.$$"
    local args=() a
    for a in "$@"; do
        [ "$a" = LINK ] || args+=("$a")
    done
    local t0 t1
    t0=$(date +%s)
    if "$NVCC" "${args[@]}" "$src" -o "$tmp" >"$log" 2>&1; then
        mv -f "$tmp" "$out"
        t1=$(date +%s)
        echo "  $rel ($((t1 - t0))s)"
    else
        rm -f "$tmp"
        {
            echo "build-cuda-tests: FAILED: $rel"
            echo "  command: $NVCC ${args[*]} $src -o $out"
            sed 's/^/  | /' "$log"
        } >&2
        echo "$rel" >>"$fail_file"
        return 1
    fi
}

running=0
# heavy jobs first, keeping the original order otherwise
while IFS=$'\t' read -r heavy src variant rel args; do
    out="$OUT/$rel"
    IFS=$'\x1f' read -r -a argv <<<"$args"
    if [ -e "$out" ]; then
        t=$(mtime "$out")
        newest=$(mtime "$src")
        for a in "${argv[@]}"; do # the program's other source files
            case "$a" in "$SRC_DIR"/*.cu) s=$(mtime "$a"); [ "$s" -gt "$newest" ] && newest=$s ;; esac
        done
        if [ "$t" -ge "$newest" ] && [ "$t" -ge "$common_newest" ]; then
            uptodate=$((uptodate + 1))
            continue
        fi
    fi
    compiled=$((compiled + 1))
    build_one "$src" "$variant" "$rel" "${argv[@]}" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done < <(sort -s -t$'\t' -k1,1r "$jobs_file")
wait || true

rm -f "$jobs_file"
if [ -s "$fail_file" ]; then
    rm -f "$manifest_tmp"
    echo "build-cuda-tests: $(wc -l <"$fail_file") compilation(s) failed:" >&2
    sed 's/^/  /' "$fail_file" >&2
    rm -f "$fail_file"
    exit 1
fi
rm -f "$fail_file"
mv -f "$manifest_tmp" "$OUT/manifest.tsv"

total=$(($(wc -l <"$OUT/manifest.tsv") - 1))
echo "build-cuda-tests: ${#sources[@]} programs, $total artifacts ($compiled built, $uptodate up to date," \
     "$n_heavy CCCL programs) in $(($(date +%s) - start))s -> $OUT/manifest.tsv"
