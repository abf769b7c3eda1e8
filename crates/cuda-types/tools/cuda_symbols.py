#!/usr/bin/env python3
"""Regenerate or validate crates/cuda-types/src/symbols.rs from NVIDIA's headers.

The symbol table of the CUDA driver API (which ABI symbol a
cuGetProcAddress request for `name`@`version` resolves to) is encoded in two
places of the CUDA toolkit headers:

* the `PFN_<name>_v<version>[_ptds|_ptsz]` typedefs of cudaTypedefs.h (and
  cudaGLTypedefs.h, cudaEGLTypedefs.h, cudaVDPAUTypedefs.h,
  cudaProfilerTypedefs.h) give every version at which `name` changed ABI;
* cuda.h (and cudaGL.h, cudaEGL.h, cudaVDPAU.h, cudaProfiler.h) declare the
  ABI symbols themselves: `cuMemAlloc_v2`, and, once preprocessed with
  `__CUDA_API_VERSION_INTERNAL`, the old `cuMemAlloc` and the per-thread
  default stream variants `cuMemcpyHtoD_v2_ptds`.

The typedefs never name the symbol, so this tool pairs them: the versions of
`name` in ascending order take the declared symbols `name`, `name_v2`,
`name_v3`, ... in that order, and a `_ptds`/`_ptsz` typedef at version P
belongs to the symbol that `name`@P resolves to. Every pairing is checked
against the declarations (the symbol must exist and take as many parameters
as the typedef), so a header that breaks the rule is reported, not guessed.

Usage:
    cuda_symbols.py --check  SYMBOLS_RS HEADER...   # exit 1 and a diff if stale
    cuda_symbols.py --write  SYMBOLS_RS HEADER...   # rewrite the table
    cuda_symbols.py --print  HEADER...              # the table on stdout

HEADER is a list of header files or directories holding them; at least
cuda.h and cudaTypedefs.h must be among them. Pass the interop and profiler
headers too, or their functions (cuGLCtxCreate, cuProfilerStart, ...) drop
out of the table: the tool refuses to write a table that lost entries unless
--allow-removals is given. The headers come from the PyPI wheels
nvidia-cuda-runtime (include/) and nvidia-cuda-profiler-api, downloaded into
a scratch folder outside the repository; never commit them.

Needs a C preprocessor (`cc -E`, override with $CPP) and Python 3.8+.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

DECL_HEADERS = ["cuda.h", "cudaGL.h", "cudaEGL.h", "cudaVDPAU.h", "cudaProfiler.h"]
TYPEDEF_HEADERS = [
    "cudaTypedefs.h",
    "cudaGLTypedefs.h",
    "cudaEGLTypedefs.h",
    "cudaVDPAUTypedefs.h",
    "cudaProfilerTypedefs.h",
]
REQUIRED = ["cuda.h", "cudaTypedefs.h"]
# Third-party headers the interop headers include; only their presence
# matters to the preprocessor, not their content.
STUB_HEADERS = ["GL/gl.h", "EGL/egl.h", "EGL/eglext.h", "vdpau/vdpau.h"]
# Every preprocessor configuration under which NVIDIA's headers declare a
# distinct set of symbols: default (current names), per-thread default
# stream, and the driver's own view (old versions and all _ptds/_ptsz).
CONFIGS = [[], ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"], ["-D__CUDA_API_VERSION_INTERNAL"]]

PFN_RE = re.compile(r"^(cu\w+)_v(\d+)(_ptds|_ptsz)?$")
TYPEDEF_RE = re.compile(r"typedef\s+CUresult\s*\(\s*\*\s*PFN_(\w+)\s*\)\s*\(")
DECL_RE = re.compile(r"\bCUresult\s+(cu\w+)\s*\(")
# Functions that NVIDIA's cudart 13.5 requests through cuGetProcAddress
# (shared/notes/cudart-lookups.md: all at 13030, answered with the plain
# name) but that no public header declares, so their parameters are
# unknown. Kept here so that regenerating the table does not lose them.
UNDECLARED = {
    "cuSubgridCreate": 13030,
    "cuSubgridWorkerGridCreate": 13030,
    "cuSubgridWorksetCreate": 13030,
}
GENERATED_MARK = "// @table-start"
GENERATED_END = "// @table-end"


def fail(msg):
    sys.stderr.write("cuda_symbols.py: error: %s\n" % msg)
    sys.exit(2)


def collect_headers(paths):
    found = {}
    for p in paths:
        if os.path.isdir(p):
            for name in DECL_HEADERS + TYPEDEF_HEADERS:
                if os.path.isfile(os.path.join(p, name)):
                    found.setdefault(name, os.path.join(p, name))
        elif os.path.isfile(p):
            name = os.path.basename(p)
            if name not in DECL_HEADERS + TYPEDEF_HEADERS:
                fail("unexpected header %s (known: %s)" % (p, ", ".join(DECL_HEADERS + TYPEDEF_HEADERS)))
            found[name] = p
        else:
            fail("no such file or directory: %s" % p)
    for name in REQUIRED:
        if name not in found:
            fail("%s is required" % name)
    for name in DECL_HEADERS + TYPEDEF_HEADERS:
        if name not in found:
            sys.stderr.write("cuda_symbols.py: warning: %s not given\n" % name)
    return found


def param_count(text):
    """Top-level parameters of a C parameter list (text between the parens)."""
    text = text.strip()
    if text in ("", "void"):
        return 0
    depth = 0
    count = 1
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
    return count


def params_after(text, open_paren):
    """Text of the parenthesised list whose '(' is at open_paren."""
    depth = 0
    for i in range(open_paren, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_paren + 1 : i]
    fail("unbalanced parentheses in preprocessed headers")


def preprocess(headers, extra_flags):
    cpp = os.environ.get("CPP", "cc -E").split()
    with tempfile.TemporaryDirectory() as tmp:
        inc = os.path.join(tmp, "include")
        os.makedirs(inc)
        for name, path in headers.items():
            shutil.copy(path, os.path.join(inc, name))
        # A typedef header includes its declaration header; when that one is
        # missing, an empty stand-in lets the typedefs still be read.
        missing = [n for n in DECL_HEADERS if n not in headers]
        for stub in STUB_HEADERS + missing:
            os.makedirs(os.path.join(inc, os.path.dirname(stub)), exist_ok=True)
            open(os.path.join(inc, stub), "w").close()
        main = os.path.join(tmp, "all.c")
        with open(main, "w") as f:
            for name in DECL_HEADERS + TYPEDEF_HEADERS:
                if name in headers:
                    f.write("#include <%s>\n" % name)
        cmd = cpp + ["-P", "-I", inc] + extra_flags + [main]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if res.returncode != 0:
            fail("preprocessor failed: %s\n%s" % (" ".join(cmd), res.stderr))
        return " ".join(res.stdout.split())


def parse(headers):
    decls = {}  # ABI symbol -> parameter count
    typedefs = {}  # (api, version, suffix) -> parameter count
    api_order = []
    for flags in CONFIGS:
        text = preprocess(headers, flags)
        for m in DECL_RE.finditer(text):
            # cuda.h's `static inline cuGetProcAddress_v2_ptsz` wrapper is a
            # header convenience, not a symbol of the library.
            if "inline" in text[max(0, m.start() - 24) : m.start()]:
                continue
            n = param_count(params_after(text, m.end() - 1))
            prev = decls.setdefault(m.group(1), n)
            if prev != n:
                fail("%s declared with %d and %d parameters" % (m.group(1), prev, n))
        for m in TYPEDEF_RE.finditer(text):
            pm = PFN_RE.match(m.group(1))
            if not pm:
                fail("cannot parse typedef name PFN_%s" % m.group(1))
            api, ver, suffix = pm.group(1), int(pm.group(2)), pm.group(3) or ""
            n = param_count(params_after(text, m.end() - 1))
            typedefs[(api, ver, suffix)] = n
            if api not in api_order:
                api_order.append(api)
    return decls, typedefs, api_order


def build_table(decls, typedefs):
    """Returns ({api: [(ver, abi, params, (ptver, ptabi) | None)]}, problems)."""
    problems = []
    table = {}
    apis = sorted({k[0] for k in typedefs})
    for api in apis:
        plain = sorted(v for (a, v, s) in typedefs if a == api and s == "")
        pts = sorted((v, s) for (a, v, s) in typedefs if a == api and s != "")
        if not plain:
            problems.append("%s has only per-thread typedefs" % api)
            continue
        candidates = [api] + ["%s_v%d" % (api, i) for i in range(2, 10)]
        candidates = [c for c in candidates if c in decls]
        if len(candidates) != len(plain):
            if len(candidates) == 0 and len(plain) == 1:
                # Typedef without declaration: cudaProfilerTypedefs.h ships
                # with the runtime, cudaProfiler.h in another wheel. A
                # function with one version can only have the plain name.
                sys.stderr.write("cuda_symbols.py: warning: %s not declared; assuming symbol %s\n" % (api, api))
                candidates = [api]
            else:
                problems.append(
                    "%s: versions %s but declared symbols %s; cannot pair them" % (api, plain, candidates)
                )
                continue
        versions = []
        for ver, abi in zip(plain, candidates):
            n = typedefs[(api, ver, "")]
            if abi in decls and decls[abi] != n:
                problems.append(
                    "%s@%d: typedef has %d parameters, %s has %d" % (api, ver, n, abi, decls[abi])
                )
            versions.append([ver, abi, n, None])
        for ptver, suffix in pts:
            base = [v for v in versions if v[0] <= ptver]
            if not base:
                problems.append("%s: per-thread typedef v%d%s precedes every version" % (api, ptver, suffix))
                continue
            base = base[-1]
            ptabi = base[1] + suffix
            if ptabi not in decls and base[1] in decls:
                problems.append("%s: %s (from PFN_%s_v%d%s) is not declared" % (api, ptabi, api, ptver, suffix))
            if base[3] is not None:
                problems.append("%s: two per-thread variants for %s" % (api, base[1]))
            n = typedefs[(api, ptver, suffix)]
            if n != base[2]:
                problems.append("%s: %s has %d parameters, %s has %d" % (api, ptabi, n, base[1], base[2]))
            base[3] = (ptver, ptabi)
        table[api] = [tuple(v) for v in versions]
    mapped = set()
    for versions in table.values():
        for ver, abi, n, pt in versions:
            if abi in mapped:
                problems.append("%s is reached from two API names" % abi)
            mapped.add(abi)
            if pt:
                mapped.add(pt[1])
    # A declared symbol that no typedef leads to would have to be exported
    # without a cuGetProcAddress entry; no CUDA 13.5 header has one, so
    # such a symbol needs a person to decide where it belongs.
    for s in sorted(set(decls) - mapped):
        problems.append("%s is declared but no PFN typedef leads to it" % s)
    for api, ver in UNDECLARED.items():
        if api in table:
            sys.stderr.write("cuda_symbols.py: note: %s is declared now; drop it from UNDECLARED\n" % api)
        elif api in mapped:
            problems.append("%s (UNDECLARED) is a symbol of another function" % api)
        else:
            table[api] = [(ver, api, None, None)]
    return table, problems


def render(table):
    out = [GENERATED_MARK]
    out.append("// Maintained by tools/cuda_symbols.py from CUDA 13.5's headers; see tools/README.md.")
    out.append("// API name { since => ABI symbol(parameters) [per_thread since => ABI symbol], ... }")
    out.append("// Parameters are `?` for functions that no public header declares.")
    out.append("#[doc(hidden)]")
    out.append("#[macro_export]")
    out.append("macro_rules! __anycuda_api_list {")
    out.append("    ($callback:path, ($($prefix:tt)*)) => {")
    out.append("        $callback! {")
    out.append("            $($prefix)*")
    for api in sorted(table):
        out.append("            %s {" % api)
        for ver, abi, n, pt in table[api]:
            line = "                %d => %s(%s)" % (ver, abi, "?" if n is None else n)
            if pt:
                line += " per_thread %d => %s" % pt
            out.append(line + ",")
        out.append("            }")
    out.append("        }")
    out.append("    };")
    out.append("}")
    out.append(GENERATED_END)
    return "\n".join(out) + "\n"


def splice(existing, table_text):
    start = existing.find(GENERATED_MARK)
    end = existing.find(GENERATED_END)
    if start < 0 or end < 0:
        fail("markers %s / %s not found in the target file" % (GENERATED_MARK, GENERATED_END))
    end = existing.index("\n", end) + 1
    return existing[:start] + table_text + existing[end:]


def entries_of(text):
    """(api, abi) pairs of a rendered table, to notice removals."""
    out = set()
    api = None
    for line in text.splitlines():
        m = re.match(r"^\s+(cu\w+) \{$", line)
        if m:
            api = m.group(1)
            continue
        for m in re.finditer(r"=> (cu\w+)", line):
            out.add((api, m.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", metavar="SYMBOLS_RS")
    mode.add_argument("--write", metavar="SYMBOLS_RS")
    mode.add_argument("--print", action="store_true")
    ap.add_argument("--allow-removals", action="store_true")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()

    headers = collect_headers(args.headers)
    decls, typedefs, _ = parse(headers)
    table, problems = build_table(decls, typedefs)
    for p in problems:
        sys.stderr.write("cuda_symbols.py: problem: %s\n" % p)
    n_abi = sum(len(v) + sum(1 for x in v if x[3]) for v in table.values())
    sys.stderr.write("cuda_symbols.py: %d API names, %d ABI symbols\n" % (len(table), n_abi))
    text = render(table)
    if args.print:
        sys.stdout.write(text)
        return 0
    target = args.check or args.write
    with open(target) as f:
        existing = f.read()
    updated = splice(existing, text)
    if args.check:
        if updated == existing:
            sys.stderr.write("cuda_symbols.py: %s is up to date\n" % target)
            return 1 if problems else 0
        sys.stdout.writelines(
            difflib.unified_diff(existing.splitlines(True), updated.splitlines(True), target, "regenerated")
        )
        return 1
    if problems:
        fail("not writing a table with unresolved problems")
    removed = entries_of(existing) - entries_of(updated)
    if removed and not args.allow_removals:
        fail(
            "the new table drops %d entries (e.g. %s); missing headers? use --allow-removals if intended"
            % (len(removed), sorted(removed)[:5])
        )
    with open(target, "w") as f:
        f.write(updated)
    sys.stderr.write("cuda_symbols.py: wrote %s\n" % target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
