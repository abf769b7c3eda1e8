//! The documented argument checks: each gives its cuBLAS status, queues
//! nothing, and leaves the process and the handle usable; memory that is
//! not device memory is refused instead of crashing the process. Also the
//! exported symbols: every one is versioned as NVIDIA's library versions it.

mod common;
use common::env;
use std::ffi::{c_char, c_void, CStr};

type P = *const c_void;
type H = *mut c_void;
const INVALID: i32 = 7;
const NOT_INIT: i32 = 1;
const NOT_SUPPORTED: i32 = 15;

type Sgemm = unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32;

#[test]
fn gemm_argument_checks() {
    let e = env();
    let h = e.handle();
    let sgemm = e.blas.f::<Sgemm>("cublasSgemm_v2");
    let a = e.upload(&[0f32; 64]);
    let c = e.upload(&[1f32; 64]);
    let (al, be) = (1f32, 0f32);
    let (pa, pb): (P, P) = ((&al as *const f32).cast(), (&be as *const f32).cast());
    unsafe {
        // (transa, transb, m, n, k, lda, ldb, ldc) -> status
        let cases = [
            ((0, 0, 4, 4, 4, 4, 4, 4), 0),
            ((0, 0, -1, 4, 4, 4, 4, 4), INVALID),
            ((0, 0, 4, -1, 4, 4, 4, 4), INVALID),
            ((0, 0, 4, 4, -1, 4, 4, 4), INVALID),
            ((0, 0, 4, 4, 4, 3, 4, 4), INVALID), // lda < m
            ((1, 0, 4, 4, 2, 1, 4, 4), INVALID), // lda < k when transposed
            ((0, 0, 4, 4, 4, 4, 3, 4), INVALID), // ldb < k
            ((0, 1, 4, 2, 4, 4, 1, 4), INVALID), // ldb < n when transposed
            ((0, 0, 4, 4, 4, 4, 4, 3), INVALID), // ldc < m
            ((0, 0, 0, 4, 4, 1, 4, 1), 0),       // m = 0: ld >= 1 suffices
            ((3, 0, 4, 4, 4, 4, 4, 4), INVALID), // bad transa
            ((0, 7, 4, 4, 4, 4, 4, 4), INVALID), // bad transb
        ];
        for ((ta, tb, m, n, k, lda, ldb, ldc), want) in cases {
            let st = sgemm(h, ta, tb, m, n, k, pa, a as P, lda, a as P, ldb, pb, c as H, ldc);
            assert_eq!(st, want, "sgemm ta={ta} tb={tb} m={m} n={n} k={k} lda={lda} ldb={ldb} ldc={ldc}");
        }
        assert_eq!(sgemm(h, 0, 0, 4, 4, 4, std::ptr::null(), a as P, 4, a as P, 4, pb, c as H, 4), INVALID, "alpha NULL");
        assert_eq!(sgemm(h, 0, 0, 4, 4, 4, pa, a as P, 4, a as P, 4, std::ptr::null(), c as H, 4), INVALID, "beta NULL");
        assert_eq!(sgemm(std::ptr::null_mut(), 0, 0, 4, 4, 4, pa, a as P, 4, a as P, 4, pb, c as H, 4), NOT_INIT, "NULL handle");
        // Memory that is not device memory, or too small, is refused.
        let host = vec![0f32; 64];
        assert_eq!(sgemm(h, 0, 0, 4, 4, 4, pa, host.as_ptr().cast(), 4, a as P, 4, pb, c as H, 4), INVALID, "host A");
        assert_eq!(sgemm(h, 0, 0, 9, 9, 9, pa, a as P, 9, a as P, 9, pb, c as H, 9), INVALID, "A overruns its allocation");
        // Batch count and type combinations.
        let strided =
            e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, i64, P, i32, i64, P, H, i32, i64, i32) -> i32>(
                "cublasSgemmStridedBatched",
            );
        assert_eq!(strided(h, 0, 0, 2, 2, 2, pa, a as P, 2, 4, a as P, 2, 4, pb, c as H, 2, 4, -1), INVALID, "negative batch");
        assert_eq!(strided(h, 0, 0, 2, 2, 2, pa, a as P, 2, 4, a as P, 2, 4, pb, c as H, 2, 4, 0), 0, "empty batch");
        assert_eq!(strided(h, 0, 0, 2, 2, 2, pa, a as P, 2, 4, a as P, 2, 4, pb, c as H, 2, 4, 100), INVALID, "batch past the allocation");
        let ex =
            e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, P, P, i32, i32, P, i32, i32, P, H, i32, i32, i32, i32) -> i32>(
                "cublasGemmEx",
            );
        // f64 matrices with f32 compute, f16 output with 64F compute, A/B
        // of different types, 8-bit integers into 8-bit ones, 8-bit floats:
        // not in cuBLAS's table (or not here yet).
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 1, 2, a as P, 1, 2, pb, c as H, 1, 2, 68, -1), NOT_SUPPORTED);
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 2, 2, a as P, 2, 2, pb, c as H, 2, 2, 70, -1), NOT_SUPPORTED);
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 2, 2, a as P, 0, 2, pb, c as H, 0, 2, 68, -1), NOT_SUPPORTED);
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 3, 2, a as P, 3, 2, pb, c as H, 3, 2, 72, -1), NOT_SUPPORTED);
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 28, 2, a as P, 28, 2, pb, c as H, 0, 2, 68, -1), NOT_SUPPORTED);
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 0, 2, a as P, 0, 2, pb, c as H, 0, 2, 12345, -1), INVALID, "bad compute type");
        assert_eq!(ex(h, 0, 0, 2, 2, 2, pa, a as P, 0, 2, a as P, 0, 2, pb, c as H, 0, 2, 68, 5000), INVALID, "bad algo");
        // Only the valid 4x4 product ran: the rest of C is as it was.
        e.sync();
        let got = e.download::<f32>(c, 64);
        assert!(got[..16].iter().all(|&v| v == 0.0) && got[16..].iter().all(|&v| v == 1.0), "{got:?}");
        // The handle still works.
        assert_eq!(sgemm(h, 0, 0, 2, 2, 2, pa, a as P, 2, a as P, 2, pb, c as H, 2), 0);
        e.sync();
        assert_eq!(e.download::<f32>(c, 4), vec![0.0; 4]);
    }
    e.destroy(h);
}

/// `CUmemAllocationProp` (a pinned allocation on device 0).
#[repr(C)]
struct AllocationProp {
    kind: i32,
    handle_types: i32,
    location: [i32; 2],
    win32: *mut c_void,
    flags: [u8; 8],
}

/// A virtual-memory pool maps physical chunks side by side in one
/// reservation and hands out buffers that span several (llama.cpp's
/// does): such a buffer is device memory; one that runs past the last
/// mapping is refused.
#[test]
fn buffers_across_side_by_side_mappings_are_device_memory() {
    let e = env();
    let h = e.handle();
    let sgemm = e.blas.f::<Sgemm>("cublasSgemm_v2");
    type Reserve = unsafe extern "C" fn(*mut u64, usize, usize, u64, u64) -> i32;
    type Create = unsafe extern "C" fn(*mut u64, usize, *const AllocationProp, u64) -> i32;
    type Map = unsafe extern "C" fn(u64, usize, usize, u64, u64) -> i32;
    type SetAccess = unsafe extern "C" fn(u64, usize, *const [i32; 3], usize) -> i32;
    type Unmap = unsafe extern "C" fn(u64, usize) -> i32;
    type Release = unsafe extern "C" fn(u64) -> i32;
    type Copy = unsafe extern "C" fn(u64, *const c_void, usize) -> i32;
    let (reserve, create, map) =
        (e.cuda.f::<Reserve>("cuMemAddressReserve"), e.cuda.f::<Create>("cuMemCreate"), e.cuda.f::<Map>("cuMemMap"));
    let (set_access, unmap, release) =
        (e.cuda.f::<SetAccess>("cuMemSetAccess"), e.cuda.f::<Unmap>("cuMemUnmap"), e.cuda.f::<Release>("cuMemRelease"));
    let free = e.cuda.f::<Unmap>("cuMemAddressFree");
    let copy = e.cuda.f::<Copy>("cuMemcpyHtoD_v2");
    let gran = 2usize << 20;
    let prop = AllocationProp { kind: 1, handle_types: 0, location: [1, 0], win32: std::ptr::null_mut(), flags: [0; 8] };
    let (k, n) = (4usize, 256usize);
    let av: Vec<f32> = (0..4 * k).map(|i| i as f32 - 7.0).collect();
    let bv: Vec<f32> = (0..k * n).map(|i| (i % 13) as f32 * 0.5).collect();
    let a = e.upload(&av);
    let c = e.upload(&vec![0f32; 4 * n]);
    let (al, be) = (1f32, 0f32);
    let (pa, pb): (P, P) = ((&al as *const f32).cast(), (&be as *const f32).cast());
    unsafe {
        let mut r = 0u64;
        assert_eq!(reserve(&mut r, 2 * gran, 0, 0, 0), 0);
        let (mut h1, mut h2) = (0u64, 0u64);
        assert_eq!(create(&mut h1, gran, &prop, 0), 0);
        assert_eq!(create(&mut h2, gran, &prop, 0), 0);
        assert_eq!(map(r, gran, 0, h1, 0), 0);
        assert_eq!(map(r + gran as u64, gran, 0, h2, 0), 0);
        assert_eq!(set_access(r, 2 * gran, &[1, 0, 3], 1), 0);
        // B (4 KiB) starts 1 KiB before the second chunk.
        let b = r + gran as u64 - 1024;
        assert_eq!(copy(b, bv.as_ptr().cast(), 4 * k * n), 0);
        assert_eq!(sgemm(h, 0, 0, 4, n as i32, k as i32, pa, a as P, 4, b as P, k as i32, pb, c as H, 4), 0, "B across two mappings");
        e.sync();
        let got: Vec<f32> = e.download(c, 4 * n);
        for j in 0..n {
            for i in 0..4 {
                let want: f32 = (0..k).map(|l| av[l * 4 + i] * bv[j * k + l]).sum();
                assert_eq!(got[j * 4 + i], want, "C[{i}, {j}]");
            }
        }
        // Without the second chunk, B runs past the mapped memory.
        assert_eq!(unmap(r + gran as u64, gran), 0);
        assert_eq!(sgemm(h, 0, 0, 4, n as i32, k as i32, pa, a as P, 4, b as P, k as i32, pb, c as H, 4), INVALID, "B past the mapping");
        assert_eq!(unmap(r, gran), 0);
        assert_eq!(release(h1), 0);
        assert_eq!(release(h2), 0);
        assert_eq!(free(r, 2 * gran), 0);
    }
    e.free(a);
    e.free(c);
}

#[test]
fn level_1_2_and_trsm_argument_checks() {
    let e = env();
    let h = e.handle();
    let x = e.upload(&[1f32; 64]);
    let one = 1f32;
    let p1: P = (&one as *const f32).cast();
    unsafe {
        let dot = e.blas.f::<unsafe extern "C" fn(H, i32, P, i32, P, i32, *mut f32) -> i32>("cublasSdot_v2");
        assert_eq!(dot(h, 4, x as P, 1, x as P, 1, std::ptr::null_mut()), INVALID, "result NULL");
        let axpy = e.blas.f::<unsafe extern "C" fn(H, i32, P, P, i32, H, i32) -> i32>("cublasSaxpy_v2");
        assert_eq!(axpy(h, 4, std::ptr::null(), x as P, 1, x as H, 1), INVALID, "alpha NULL");
        assert_eq!(axpy(h, 100, p1, x as P, 1, x as H, 1), INVALID, "x overruns");
        let gemv = e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, P, P, i32, P, i32, P, H, i32) -> i32>("cublasSgemv_v2");
        assert_eq!(gemv(h, 0, 4, 4, p1, x as P, 3, x as P, 1, p1, x as H, 1), INVALID, "lda < m");
        assert_eq!(gemv(h, 0, 4, 4, p1, x as P, 4, x as P, 0, p1, x as H, 1), INVALID, "incx 0");
        assert_eq!(gemv(h, 5, 4, 4, p1, x as P, 4, x as P, 1, p1, x as H, 1), INVALID, "bad trans");
        assert_eq!(gemv(h, 0, -4, 4, p1, x as P, 4, x as P, 1, p1, x as H, 1), INVALID, "m < 0");
        let ger = e.blas.f::<unsafe extern "C" fn(H, i32, i32, P, P, i32, P, i32, H, i32) -> i32>("cublasSger_v2");
        assert_eq!(ger(h, 4, 4, p1, x as P, 1, x as P, 0, x as H, 4), INVALID, "incy 0");
        assert_eq!(ger(h, 4, 4, p1, x as P, 1, x as P, 1, x as H, 2), INVALID, "lda < m");
        let trsm = e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, P, P, i32, H, i32) -> i32>("cublasStrsm_v2");
        assert_eq!(trsm(h, 2, 0, 0, 0, 2, 2, p1, x as P, 2, x as H, 2), INVALID, "bad side");
        assert_eq!(trsm(h, 0, 2, 0, 0, 2, 2, p1, x as P, 2, x as H, 2), INVALID, "bad uplo (FULL)");
        assert_eq!(trsm(h, 0, 0, 0, 2, 2, 2, p1, x as P, 2, x as H, 2), INVALID, "bad diag");
        assert_eq!(trsm(h, 1, 0, 0, 0, 2, 3, p1, x as P, 2, x as H, 2), INVALID, "lda < n on the right");
        assert_eq!(trsm(h, 0, 0, 0, 0, 3, 2, p1, x as P, 3, x as H, 2), INVALID, "ldb < m");
        let batched =
            e.blas.f::<unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, P, P, i32, H, i32, i32) -> i32>("cublasStrsmBatched");
        assert_eq!(batched(h, 0, 0, 0, 0, 2, 2, p1, x as P, 2, x as H, 2, -1), INVALID, "negative batch");
    }
    e.destroy(h);
}

#[test]
fn handles_settings_and_strings() {
    let e = env();
    unsafe {
        let create = e.blas.f::<unsafe extern "C" fn(*mut H) -> i32>("cublasCreate_v2");
        assert_eq!(create(std::ptr::null_mut()), INVALID);
        let h = e.handle();
        let destroy = e.blas.f::<unsafe extern "C" fn(H) -> i32>("cublasDestroy_v2");
        for (get, set, good, bad) in [
            ("cublasGetPointerMode_v2", "cublasSetPointerMode_v2", 1, 2),
            ("cublasGetAtomicsMode", "cublasSetAtomicsMode", 1, 5),
            ("cublasGetMathMode", "cublasSetMathMode", 3 | 16, 6),
        ] {
            let g = e.blas.f::<unsafe extern "C" fn(H, *mut i32) -> i32>(get);
            let s = e.blas.f::<unsafe extern "C" fn(H, i32) -> i32>(set);
            let mut v = -1;
            assert_eq!(g(h, &mut v), 0);
            assert_eq!(v, 0, "{get} default");
            assert_eq!(s(h, good), 0);
            assert_eq!(s(h, bad), INVALID, "{set}({bad})");
            assert_eq!(g(h, &mut v), 0);
            assert_eq!(v, good);
            assert_eq!(g(h, std::ptr::null_mut()), INVALID);
            assert_eq!(g(std::ptr::null_mut(), &mut v), NOT_INIT);
        }
        let ws = e.alloc(1 << 12);
        let set_ws = e.blas.f::<unsafe extern "C" fn(H, H, usize) -> i32>("cublasSetWorkspace_v2");
        assert_eq!(set_ws(h, ws as H, 1 << 12), 0);
        assert_eq!(set_ws(h, (ws + 4) as H, 16), INVALID, "unaligned workspace");
        let mut ver = 0;
        assert_eq!(e.blas.f::<unsafe extern "C" fn(H, *mut i32) -> i32>("cublasGetVersion_v2")(h, &mut ver), 0);
        assert_eq!(ver, 131000, "the libcublas.so.13 of cuBLAS 13.10.0");
        let prop = e.blas.f::<unsafe extern "C" fn(i32, *mut i32) -> i32>("cublasGetProperty");
        let mut v = 0;
        assert_eq!(prop(0, &mut v), 0);
        assert_eq!(v, 13);
        assert_eq!(prop(1, &mut v), 0);
        assert_eq!(v, 10);
        assert_eq!(prop(3, &mut v), INVALID);
        assert_eq!(e.blas.f::<unsafe extern "C" fn() -> usize>("cublasGetCudartVersion")(), 13050);
        let name = e.blas.f::<unsafe extern "C" fn(i32) -> *const c_char>("cublasGetStatusName");
        let string = e.blas.f::<unsafe extern "C" fn(i32) -> *const c_char>("cublasGetStatusString");
        assert_eq!(CStr::from_ptr(name(7)).to_str().unwrap(), "CUBLAS_STATUS_INVALID_VALUE");
        assert_eq!(CStr::from_ptr(string(7)).to_str().unwrap(), "an unsupported value or parameter was passed to the function");
        assert_eq!(CStr::from_ptr(name(999)).to_str().unwrap(), "unrecognized status");
        assert_eq!(destroy(h), 0);
        assert_eq!(destroy(h), NOT_INIT, "destroyed twice");
    }
}

static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
unsafe extern "C" fn log_cb(msg: *const c_char) {
    LOGGED.lock().unwrap().push(CStr::from_ptr(msg).to_string_lossy().into_owned());
}

#[test]
fn logger_callback_sees_calls() {
    let e = env();
    unsafe {
        let set = e.blas.f::<unsafe extern "C" fn(Option<unsafe extern "C" fn(*const c_char)>) -> i32>("cublasSetLoggerCallback");
        let get = e.blas.f::<unsafe extern "C" fn(*mut Option<unsafe extern "C" fn(*const c_char)>) -> i32>("cublasGetLoggerCallback");
        assert_eq!(set(Some(log_cb)), 0);
        let mut cb = None;
        assert_eq!(get(&mut cb), 0);
        assert!(cb.is_some());
        let mut v = 0;
        e.blas.f::<unsafe extern "C" fn(H, *mut i32) -> i32>("cublasGetVersion_v2")(std::ptr::null_mut(), &mut v);
        assert_eq!(set(None), 0);
        assert!(LOGGED.lock().unwrap().iter().any(|m| m.contains("cublasGetVersion_v2")), "{:?}", LOGGED.lock().unwrap());
    }
}

/// The dynamic symbols of a shared object: (name, version) of each defined one.
fn exports(path: &std::path::Path) -> Vec<(String, String)> {
    // Versions from readelf, which names them per symbol.
    let out = std::process::Command::new("readelf").args(["--dyn-syms", "-W"]).arg(path).output().expect("readelf");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[6] != "UND" && f[4] == "GLOBAL").then(|| {
                let (n, v) = f[7].split_once('@').unwrap_or((f[7], ""));
                (n.to_string(), v.trim_start_matches('@').to_string())
            })
        })
        .collect()
}

#[test]
fn exported_symbols_carry_nvidia_versions() {
    for (lib, soname) in [
        ("libcublas.so", "libcublas.so.13"),
        ("libcublas12.so", "libcublas.so.12"),
        ("libcublasLt.so", "libcublasLt.so.13"),
        ("libcublasLt12.so", "libcublasLt.so.12"),
    ] {
        let path = common::built(lib);
        let syms = exports(&path);
        assert!(!syms.is_empty(), "{lib} exports nothing");
        for (n, v) in &syms {
            assert_eq!(v, soname, "{lib}: {n} has version {v:?}");
        }
        let out = std::process::Command::new("readelf").arg("-d").arg(&path).output().expect("readelf");
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("Library soname: [{soname}]")), "{lib} soname");
        // Against NVIDIA's own library, where the toolkit has it.
        let tk = std::env::var("ANYCUDA_TOOLKIT").ok().map(std::path::PathBuf::from);
        let nv =
            tk.map(|t| if soname.ends_with(".12") { t.join("cu12/cublas/lib").join(soname) } else { t.join("cublas/lib").join(soname) });
        if let Some(nv) = nv.filter(|p| p.exists()) {
            let theirs: std::collections::HashMap<String, String> = exports(&nv).into_iter().collect();
            for (n, v) in &syms {
                assert_eq!(theirs.get(n), Some(v), "{lib}: {n}@{v} is not exported so by NVIDIA's {soname}");
            }
        }
    }
}

/// Every function NVIDIA's libcublas.so.13 and .12 both export is exported
/// (where the toolkit has NVIDIA's libraries), so programs linked against
/// it load; the ones anycuda does not implement fail clearly.
#[test]
fn every_nvidia_function_is_there_and_unimplemented_ones_fail() {
    let tk = std::env::var("ANYCUDA_TOOLKIT").ok().map(std::path::PathBuf::from);
    if let Some(tk) = tk.filter(|t| t.join("cublas/lib/libcublas.so.13").exists() && t.join("cu12/cublas/lib/libcublas.so.12").exists()) {
        let names = |p: std::path::PathBuf| -> std::collections::HashSet<String> { exports(&p).into_iter().map(|(n, _)| n).collect() };
        let ours = names(common::built("libcublas.so"));
        let v13 = names(tk.join("cublas/lib/libcublas.so.13"));
        let v12 = names(tk.join("cu12/cublas/lib/libcublas.so.12"));
        let mut missing: Vec<&String> = v13.intersection(&v12).filter(|n| n.starts_with("cublas") && !ours.contains(*n)).collect();
        missing.sort();
        assert!(missing.is_empty(), "not exported: {missing:?}");
    }
    let e = env();
    let mut h: H = std::ptr::null_mut();
    type Create = unsafe extern "C" fn(*mut H) -> i32;
    type GeqrfBatched = unsafe extern "C" fn(H, i32, i32, *mut P, i32, *mut P, *mut i32, i32) -> i32;
    type Sdot = unsafe extern "C" fn(i32, P, i32, P, i32) -> f32;
    type Isamax = unsafe extern "C" fn(i32, P, i32) -> i32;
    type GetError = unsafe extern "C" fn() -> i32;
    unsafe {
        assert_eq!(e.blas.f::<Create>("cublasCreate_v2")(&mut h), 0);
        let geqrf = e.blas.f::<GeqrfBatched>("cublasDgeqrfBatched");
        let mut info = 0;
        assert_eq!(geqrf(h, 4, 4, std::ptr::null_mut(), 4, std::ptr::null_mut(), &mut info, 1), NOT_SUPPORTED);
        // The legacy API: the result says nothing valid, cublasGetError why.
        let get_error = e.blas.f::<GetError>("cublasGetError");
        assert_eq!(get_error(), 0);
        let x = e.upload(&[1f32; 4]);
        let xp = x as usize as P;
        assert!(e.blas.f::<Sdot>("cublasSdot")(4, xp, 1, xp, 1).is_nan());
        assert_eq!(get_error(), NOT_SUPPORTED);
        assert_eq!(get_error(), 0);
        assert_eq!(e.blas.f::<Isamax>("cublasIsamax")(4, xp, 1), 0);
        assert_eq!(get_error(), NOT_SUPPORTED);
    }
}
