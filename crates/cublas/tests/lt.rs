//! cuBLASLt's matmul against an f64 reference for every attribute
//! combination anycuda supports: the type table (f16/bf16/f32/f64,
//! complex, 8-bit integers into 32-bit ones and into f32), transposes,
//! column- and row-major layouts of each matrix, padded leading
//! dimensions, C and D the same matrix or distinct (of another layout),
//! beta zero (C full of NaN, never read), host and device scalars, strided
//! batches (with a broadcast A), and the epilogues (ReLU, GELU, bias of
//! D's type or another, aux output of the GELU input), with or without the
//! heuristic's algorithm. Padding and the gaps between batch matrices must
//! stay untouched.

mod common;
use common::data::T;
use common::{env, Rng};
use num_complex::Complex64 as C64;
use std::ffi::c_void;

type P = *const c_void;
type H = *mut c_void;

const COL: i32 = 0;
const ROW: i32 = 1;
const SENTINEL: f64 = 7.0;

// cublasComputeType_t
const C16F: i32 = 64;
const C32F: i32 = 68;
const C32F_FAST_TF32: i32 = 77;
const C64F: i32 = 70;
const C32I: i32 = 72;

// cublasLtMatmulDescAttributes_t
const DESC_POINTER_MODE: i32 = 2;
const DESC_TRANSA: i32 = 3;
const DESC_TRANSB: i32 = 4;
const DESC_EPILOGUE: i32 = 7;
const DESC_BIAS_POINTER: i32 = 8;
const DESC_BIAS_BATCH_STRIDE: i32 = 10;
const DESC_AUX_POINTER: i32 = 11;
const DESC_AUX_LD: i32 = 12;
const DESC_AUX_BATCH_STRIDE: i32 = 13;
const DESC_BIAS_DATA_TYPE: i32 = 26;
// cublasLtMatrixLayoutAttribute_t
const LAYOUT_ORDER: i32 = 1;
const LAYOUT_BATCH_COUNT: i32 = 5;
const LAYOUT_STRIDED_BATCH_OFFSET: i32 = 6;
// cublasLtEpilogue_t
const EPI_DEFAULT: u32 = 1;
const EPI_RELU: u32 = 2;
const EPI_BIAS: u32 = 4;
const EPI_RELU_BIAS: u32 = 6;
const EPI_GELU: u32 = 32;
const EPI_GELU_BIAS: u32 = 36;
const EPI_GELU_AUX: u32 = 160;
const EPI_GELU_AUX_BIAS: u32 = 164;

/// The cuBLASLt entry points, from the built libcublasLt.so.
pub struct Lt {
    pub create: unsafe extern "C" fn(*mut H) -> i32,
    pub destroy: unsafe extern "C" fn(H) -> i32,
    pub layout: unsafe extern "C" fn(*mut H, i32, u64, u64, i64) -> i32,
    pub layout_set: unsafe extern "C" fn(H, i32, P, usize) -> i32,
    pub layout_destroy: unsafe extern "C" fn(H) -> i32,
    pub desc: unsafe extern "C" fn(*mut H, i32, i32) -> i32,
    pub desc_set: unsafe extern "C" fn(H, i32, P, usize) -> i32,
    pub desc_destroy: unsafe extern "C" fn(H) -> i32,
    pub pref: unsafe extern "C" fn(*mut H) -> i32,
    pub pref_set: unsafe extern "C" fn(H, i32, P, usize) -> i32,
    pub pref_destroy: unsafe extern "C" fn(H) -> i32,
    pub heuristic: unsafe extern "C" fn(H, H, H, H, H, H, H, i32, *mut [u8; 96], *mut i32) -> i32,
    #[allow(clippy::type_complexity)]
    pub matmul: unsafe extern "C" fn(H, H, P, P, H, P, H, P, P, H, H, H, P, H, usize, H) -> i32,
}

/// The log of this test program's libraries: every failing cuBLASLt call
/// writes its reason there (set before the libraries are first used).
fn log_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cublaslt-test-{}.log", std::process::id()))
}

fn setup() -> &'static common::Env {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var("ANYCUDA_LOG", "debug");
        std::env::set_var("ANYCUDA_LOG_FILE", log_path());
    });
    env()
}

pub fn lt() -> Lt {
    let e = setup();
    let l = &e.lt;
    Lt {
        create: l.f("cublasLtCreate"),
        destroy: l.f("cublasLtDestroy"),
        layout: l.f("cublasLtMatrixLayoutCreate"),
        layout_set: l.f("cublasLtMatrixLayoutSetAttribute"),
        layout_destroy: l.f("cublasLtMatrixLayoutDestroy"),
        desc: l.f("cublasLtMatmulDescCreate"),
        desc_set: l.f("cublasLtMatmulDescSetAttribute"),
        desc_destroy: l.f("cublasLtMatmulDescDestroy"),
        pref: l.f("cublasLtMatmulPreferenceCreate"),
        pref_set: l.f("cublasLtMatmulPreferenceSetAttribute"),
        pref_destroy: l.f("cublasLtMatmulPreferenceDestroy"),
        heuristic: l.f("cublasLtMatmulAlgoGetHeuristic"),
        matmul: l.f("cublasLtMatmul"),
    }
}

/// Sets an attribute of any plain type.
///
/// # Safety
/// `f` must be a cuBLASLt `...SetAttribute` and `d` its descriptor.
pub unsafe fn set<V: Copy>(f: unsafe extern "C" fn(H, i32, P, usize) -> i32, d: H, attr: i32, v: V) {
    assert_eq!(f(d, attr, (&v as *const V).cast(), std::mem::size_of::<V>()), 0, "set attribute {attr}");
}

/// A matrix as stored: `rows x cols`, order, leading dimension, batch.
#[derive(Debug, Clone, Copy)]
struct Stored {
    t: T,
    rows: usize,
    cols: usize,
    order: i32,
    ld: usize,
    /// Elements between batch matrices (0: one matrix for all).
    stride: usize,
}

impl Stored {
    fn new(t: T, rows: usize, cols: usize, order: i32, pad: usize, gap: usize) -> Stored {
        let ld = if order == COL { rows } else { cols }.max(1) + pad;
        let major = if order == COL { cols } else { rows };
        Stored { t, rows, cols, order, ld, stride: ld * major + gap }
    }
    fn at(&self, i: usize, j: usize) -> usize {
        if self.order == COL {
            i + j * self.ld
        } else {
            i * self.ld + j
        }
    }
    /// Elements the whole batch spans.
    fn len(&self, count: usize) -> usize {
        let major = if self.order == COL { self.cols } else { self.rows };
        self.stride * (count - 1) + self.ld * major
    }
    unsafe fn layout(&self, l: &Lt, count: usize) -> H {
        let mut d: H = std::ptr::null_mut();
        let (r, c) = (self.rows as u64, self.cols as u64);
        assert_eq!((l.layout)(&mut d, self.t.cuda(), r, c, self.ld as i64), 0);
        set(l.layout_set, d, LAYOUT_ORDER, self.order);
        if count > 1 {
            set(l.layout_set, d, LAYOUT_BATCH_COUNT, count as i32);
            set(l.layout_set, d, LAYOUT_STRIDED_BATCH_OFFSET, self.stride as i64);
        }
        d
    }
}

#[derive(Debug, Clone, Copy)]
struct Case {
    compute: i32,
    scale: T,
    ab: T,
    cd: T,
    /// Unit roundoff of the arithmetic (0: exact integers).
    u: f64,
    m: usize,
    n: usize,
    k: usize,
    ta: i32,
    tb: i32,
    /// Orders of A, B, C, D.
    order: [i32; 4],
    pad: usize,
    in_place: bool,
    beta_zero: bool,
    device: bool,
    count: usize,
    broadcast_a: bool,
    epilogue: u32,
    /// The bias type when set explicitly (else D's).
    bias_type: Option<T>,
    heuristic: bool,
    /// Alpha, when not the default.
    alpha: Option<f64>,
}

impl Case {
    fn base(compute: i32, scale: T, ab: T, cd: T, u: f64) -> Case {
        Case {
            compute,
            scale,
            ab,
            cd,
            u,
            m: 13,
            n: 9,
            k: 11,
            ta: 0,
            tb: 0,
            order: [COL; 4],
            pad: 0,
            in_place: true,
            beta_zero: false,
            device: false,
            count: 1,
            broadcast_a: false,
            epilogue: EPI_DEFAULT,
            bias_type: None,
            heuristic: true,
            alpha: None,
        }
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn op_at(x: &[C64], s: &Stored, base: usize, op: i32, i: usize, j: usize) -> C64 {
    match op {
        0 => x[base + s.at(i, j)],
        1 => x[base + s.at(j, i)],
        _ => x[base + s.at(j, i)].conj(),
    }
}

/// Runs one case; returns a description of the first mismatch.
fn run(c: Case, seed: u64) -> Result<(), String> {
    let l = lt();
    let e = env();
    let mut rng = Rng::new(seed);
    let (m, n, k, count) = (c.m, c.n, c.k, c.count);
    let (ar, ac) = if c.ta == 0 { (m, k) } else { (k, m) };
    let (br, bc) = if c.tb == 0 { (k, n) } else { (n, k) };
    let mut sa = Stored::new(c.ab, ar, ac, c.order[0], c.pad, 5);
    if c.broadcast_a {
        sa.stride = 0;
    }
    let sb = Stored::new(c.ab, br, bc, c.order[1], c.pad, 3);
    let sc = Stored::new(c.cd, m, n, c.order[2], c.pad, 7);
    let sd = if c.in_place { sc } else { Stored::new(c.cd, m, n, c.order[3], c.pad + 1, 2) };
    // Operands full of random values where the matrices are, sentinels
    // in the padding and gaps.
    let fill = |s: &Stored, rng: &mut Rng| -> Vec<C64> {
        let mut v = vec![C64::new(SENTINEL, 0.0); s.len(count)];
        let vals = s.t.random(v.len(), rng);
        for b in 0..count {
            for j in 0..s.cols {
                for i in 0..s.rows {
                    let p = b * s.stride + s.at(i, j);
                    v[p] = vals[p];
                }
            }
        }
        v
    };
    let a = fill(&sa, &mut rng);
    let b = fill(&sb, &mut rng);
    let mut cm = fill(&sc, &mut rng);
    // Integers have no NaN: a value that matters if it were read.
    let unread = if c.cd == T::I32 { C64::new(123_456.0, 0.0) } else { C64::new(f64::NAN, f64::NAN) };
    if c.beta_zero {
        for bi in 0..count {
            for j in 0..n {
                for i in 0..m {
                    cm[bi * sc.stride + sc.at(i, j)] = unread;
                }
            }
        }
    }
    let dm = if c.in_place { cm.clone() } else { vec![C64::new(SENTINEL, 0.0); sd.len(count)] };
    let int = c.u == 0.0;
    assert_eq!(int, c.cd == T::I32);
    let cplx = c.scale.complex();
    let alpha = if let Some(v) = c.alpha {
        C64::new(v, 0.0)
    } else if int {
        C64::new(3.0, 0.0)
    } else {
        c.scale.round(C64::new(0.75, if cplx { 0.25 } else { 0.0 }))
    };
    let beta = if c.beta_zero {
        C64::new(0.0, 0.0)
    } else if int {
        C64::new(-2.0, 0.0)
    } else {
        c.scale.round(C64::new(-0.5, if cplx { 0.125 } else { 0.0 }))
    };
    let has_bias = c.epilogue & EPI_BIAS != 0;
    let has_aux = c.epilogue & 128 != 0;
    let bias_t = c.bias_type.unwrap_or(c.cd);
    let bias: Vec<C64> = bias_t.random(m * count, &mut rng);
    let aux_ld = m.div_ceil(8) * 8 + 8;
    let aux_stride = aux_ld * n + 16;
    let aux_len = aux_stride * (count - 1) + aux_ld * n;

    let da = e.upload(&c.ab.encode(&a));
    let db = e.upload(&c.ab.encode(&b));
    let dc = e.upload(&c.cd.encode(&cm));
    let dd = if c.in_place { dc } else { e.upload(&c.cd.encode(&dm)) };
    let dbias = e.upload(&bias_t.encode(&bias));
    let daux = e.upload(&c.cd.encode(&vec![C64::new(SENTINEL, 0.0); aux_len]));
    let (ha, hb) = (c.scale.encode(&[alpha]), c.scale.encode(&[beta]));
    let (pa, pb): (P, P) = if c.device { (e.upload(&ha) as P, e.upload(&hb) as P) } else { (ha.as_ptr().cast(), hb.as_ptr().cast()) };
    let st = unsafe {
        let mut h: H = std::ptr::null_mut();
        assert_eq!((l.create)(&mut h), 0);
        let mut desc: H = std::ptr::null_mut();
        assert_eq!((l.desc)(&mut desc, c.compute, c.scale.cuda()), 0);
        set(l.desc_set, desc, DESC_TRANSA, c.ta);
        set(l.desc_set, desc, DESC_TRANSB, c.tb);
        set(l.desc_set, desc, DESC_POINTER_MODE, c.device as i32);
        if c.epilogue != EPI_DEFAULT {
            set(l.desc_set, desc, DESC_EPILOGUE, c.epilogue);
        }
        if has_bias {
            set(l.desc_set, desc, DESC_BIAS_POINTER, dbias);
            if let Some(t) = c.bias_type {
                set(l.desc_set, desc, DESC_BIAS_DATA_TYPE, t.cuda());
            }
            if count > 1 {
                set(l.desc_set, desc, DESC_BIAS_BATCH_STRIDE, m as i64);
            }
        }
        if has_aux {
            set(l.desc_set, desc, DESC_AUX_POINTER, daux);
            set(l.desc_set, desc, DESC_AUX_LD, aux_ld as i64);
            set(l.desc_set, desc, DESC_AUX_BATCH_STRIDE, aux_stride as i64);
        }
        let (la, lb, lc) = (sa.layout(&l, count), sb.layout(&l, count), sc.layout(&l, count));
        let ld = if c.in_place { lc } else { sd.layout(&l, count) };
        let mut pref: H = std::ptr::null_mut();
        assert_eq!((l.pref)(&mut pref), 0);
        set(l.pref_set, pref, 1, 1u64 << 20);
        let mut result = [0u8; 96];
        let mut algo: P = std::ptr::null();
        if c.heuristic {
            let mut found = 0;
            let s = (l.heuristic)(h, desc, la, lb, lc, ld, pref, 1, &mut result, &mut found);
            if s != 0 || found != 1 {
                return Err(format!("{c:?}: heuristic status {s}, {found} algorithms"));
            }
            algo = result.as_ptr().cast();
        }
        let ws = e.alloc(1 << 20);
        let st =
            (l.matmul)(h, desc, pa, da as P, la, db as P, lb, pb, dc as P, lc, dd as H, ld, algo, ws as H, 1 << 20, std::ptr::null_mut());
        e.sync();
        e.free(ws);
        for d in [la, lb, lc] {
            assert_eq!((l.layout_destroy)(d), 0);
        }
        if !c.in_place {
            assert_eq!((l.layout_destroy)(ld), 0);
        }
        assert_eq!((l.desc_destroy)(desc), 0);
        assert_eq!((l.pref_destroy)(pref), 0);
        assert_eq!((l.destroy)(h), 0);
        st
    };
    if st != 0 {
        return Err(format!("{c:?}: cublasLtMatmul returned {st}"));
    }
    let got = c.cd.decode(&e.download::<u8>(dd, sd.len(count) * c.cd.size()));
    let got_aux = c.cd.decode(&e.download::<u8>(daux, aux_len * c.cd.size()));
    let got_c = if c.in_place { Vec::new() } else { c.cd.decode(&e.download::<u8>(dc, sc.len(count) * c.cd.size())) };
    for p in [da, db, dc, dbias, daux] {
        e.free(p);
    }
    if !c.in_place {
        e.free(dd);
    }
    if c.device {
        e.free(pa as u64);
        e.free(pb as u64);
    }
    // Where D's matrices are, and where the aux matrices are.
    let mut in_d = vec![false; got.len()];
    let mut in_aux = vec![false; got_aux.len()];
    let eps_out = c.cd.eps();
    for bi in 0..count {
        for j in 0..n {
            for i in 0..m {
                let mut s = C64::new(0.0, 0.0);
                let mut mag = 0.0;
                for p in 0..k {
                    let x = op_at(&a, &sa, bi * sa.stride, c.ta, i, p);
                    let y = op_at(&b, &sb, bi * sb.stride, c.tb, p, j);
                    s += x * y;
                    mag += x.norm() * y.norm();
                }
                let cij = if c.beta_zero { C64::new(0.0, 0.0) } else { beta * cm[bi * sc.stride + sc.at(i, j)] };
                let bv = if has_bias { bias[bi * m + i] } else { C64::new(0.0, 0.0) };
                let pre = alpha * s + cij + bv;
                let want = match c.epilogue & !(EPI_BIAS | 128) {
                    EPI_RELU => C64::new(pre.re.max(0.0), 0.0),
                    EPI_GELU => C64::new(gelu(pre.re), 0.0),
                    _ => pre,
                };
                let tol = (2.0 * k as f64 + 4.0) * c.u * (alpha.norm() * mag + cij.norm() + bv.norm())
                    + 4.0 * c.u * pre.norm()
                    + 2.0 * eps_out * want.norm()
                    + 1e-300;
                let pd = bi * sd.stride + sd.at(i, j);
                in_d[pd] = true;
                let g = got[pd];
                if int {
                    // Wrapping 32-bit arithmetic, as the accumulator's.
                    let w = (want.re as i64) as i32 as f64;
                    if g.re != w {
                        return Err(format!("{c:?}: D[{bi}][{i},{j}] = {}, want {w}", g.re));
                    }
                } else if (g - want).norm().partial_cmp(&tol) != Some(std::cmp::Ordering::Less) && (g - want).norm() != tol {
                    return Err(format!("{c:?}: D[{bi}][{i},{j}] = {g}, want {want} (tolerance {tol:e})"));
                }
                if has_aux {
                    let q = bi * aux_stride + i + j * aux_ld;
                    in_aux[q] = true;
                    let ga = got_aux[q];
                    let tol = tol + 2.0 * eps_out * pre.norm();
                    if (ga - pre).norm().partial_cmp(&tol) != Some(std::cmp::Ordering::Less) && (ga - pre).norm() != tol {
                        return Err(format!("{c:?}: aux[{bi}][{i},{j}] = {ga}, want {pre}"));
                    }
                }
            }
        }
    }
    for (p, v) in got.iter().enumerate() {
        if !in_d[p] && v.re != SENTINEL {
            return Err(format!("{c:?}: D's padding or gap at {p} changed to {v}"));
        }
    }
    for (p, v) in got_aux.iter().enumerate() {
        if !in_aux[p] && v.re != SENTINEL {
            return Err(format!("{c:?}: the aux matrix's padding at {p} changed to {v}"));
        }
    }
    if !c.in_place {
        for (p, v) in got_c.iter().enumerate() {
            let w = cm[p];
            if !(v == &w || (v.re.is_nan() && w.re.is_nan())) {
                return Err(format!("{c:?}: C at {p} changed from {w} to {v} (D is another matrix)"));
            }
        }
    }
    Ok(())
}

const U32: f64 = 1.0 / (1u64 << 24) as f64;
const U64: f64 = 1.0 / (1u64 << 53) as f64;

/// The type table: (compute, scale, A/B, C/D, unit roundoff).
fn type_table() -> Vec<(i32, T, T, T, f64)> {
    vec![
        (C32F, T::S, T::S, T::S, U32),
        (C32F_FAST_TF32, T::S, T::S, T::S, U32),
        (C32F, T::S, T::H, T::H, U32),
        (C32F, T::S, T::H, T::S, U32),
        (C32F, T::S, T::BF, T::BF, U32),
        (C32F, T::S, T::BF, T::S, U32),
        (C16F, T::H, T::H, T::H, U32),
        (C32F, T::S, T::I8, T::S, U32),
        (C64F, T::D, T::D, T::D, U64),
        (C32F, T::C, T::C, T::C, U32),
        (C64F, T::Z, T::Z, T::Z, U64),
        (C32I, T::I32, T::I8, T::I32, 0.0),
    ]
}

#[test]
fn matmul_types_transposes_and_layouts() {
    let orders = [[COL, COL, COL, COL], [ROW, ROW, ROW, ROW], [ROW, COL, COL, ROW], [COL, ROW, ROW, COL]];
    let mut seed = 1;
    let mut failures = Vec::new();
    for (compute, scale, ab, cd, u) in type_table() {
        let ops: &[i32] = if scale.complex() { &[0, 1, 2] } else { &[0, 1] };
        for &ta in ops {
            for &tb in ops {
                for (oi, order) in orders.iter().enumerate() {
                    seed += 1;
                    let mut c = Case::base(compute, scale, ab, cd, u);
                    c.ta = ta;
                    c.tb = tb;
                    c.order = *order;
                    // Rotate the other settings through the cases.
                    let r = seed as usize;
                    c.pad = r % 3;
                    c.in_place = order[2] == order[3] && r.is_multiple_of(2);
                    c.beta_zero = r % 3 == 1;
                    c.device = r % 4 >= 2;
                    c.heuristic = oi != 3;
                    if let Err(e) = run(c, seed) {
                        failures.push(e);
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn matmul_epilogues() {
    let epilogues = [EPI_DEFAULT, EPI_RELU, EPI_BIAS, EPI_RELU_BIAS, EPI_GELU, EPI_GELU_BIAS, EPI_GELU_AUX, EPI_GELU_AUX_BIAS];
    let types = [
        (C32F, T::S, T::S, T::S, U32, None),
        (C32F, T::S, T::H, T::H, U32, None),
        (C32F, T::S, T::H, T::H, U32, Some(T::S)),
        (C32F, T::S, T::BF, T::S, U32, Some(T::BF)),
        (C32F, T::S, T::BF, T::BF, U32, None),
        (C64F, T::D, T::D, T::D, U64, None),
    ];
    let mut seed = 1000;
    let mut failures = Vec::new();
    for (compute, scale, ab, cd, u, bias_type) in types {
        for epi in epilogues {
            for count in [1, 3] {
                seed += 1;
                let mut c = Case::base(compute, scale, ab, cd, u);
                c.epilogue = epi;
                c.bias_type = bias_type;
                c.count = count;
                c.ta = (seed % 2) as i32;
                c.order = if seed % 3 == 0 { [ROW, COL, ROW, ROW] } else { [COL; 4] };
                c.beta_zero = seed % 4 == 0;
                c.in_place = seed % 5 != 0;
                if !c.in_place {
                    c.order[3] = ROW;
                }
                if let Err(e) = run(c, seed) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn matmul_batches_shapes_and_scalars() {
    let mut failures = Vec::new();
    let mut seed = 2000;
    for (compute, scale, ab, cd, u) in type_table() {
        for variant in 0..4 {
            seed += 1;
            let mut c = Case::base(compute, scale, ab, cd, u);
            c.count = 3;
            match variant {
                // Strided batch with gaps, host scalars, C distinct from D.
                0 => {
                    c.in_place = false;
                    c.pad = 2;
                }
                // A broadcast to every product (stride 0), device scalars.
                1 => {
                    c.broadcast_a = true;
                    c.device = true;
                    c.ta = 1;
                }
                // Shapes with a dimension of 1 and beta zero.
                2 => {
                    c.m = 1;
                    c.n = 17;
                    c.k = 1;
                    c.beta_zero = true;
                    c.order = [ROW, ROW, COL, COL];
                }
                // A larger product (the all-cores path) without batches.
                _ => {
                    c.count = 1;
                    c.m = 96;
                    c.n = 80;
                    c.k = 72;
                    c.tb = 1;
                    c.heuristic = false;
                }
            }
            if let Err(e) = run(c, seed) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn matmul_skinny_products_with_row_major_op_a() {
    // op(A) with its k elements adjacent (row-major A, or a transposed
    // column-major one) and few columns: the product runs a block of rows
    // at a time on transposed copies; with a bias and ReLU, and a batch.
    let mut failures = Vec::new();
    let mut seed = 4000;
    for (compute, scale, ab, cd, u) in type_table() {
        for (ta, order_a, count) in [(0, ROW, 1), (1, COL, 2), (1, COL, 1)] {
            seed += 1;
            let mut c = Case::base(compute, scale, ab, cd, u);
            c.m = 300;
            c.n = 7;
            c.k = 41;
            c.ta = ta;
            c.order = [order_a, COL, COL, COL];
            c.count = count;
            c.pad = 1;
            if count == 1 && matches!(cd, T::S | T::H | T::BF) {
                c.epilogue = EPI_RELU_BIAS;
            }
            if let Err(e) = run(c, seed) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn integer_products_wrap_like_a_32_bit_accumulator() {
    // alpha P passes 2^31 and wraps; k above 1024 takes the f64 path.
    let mut c = Case::base(C32I, T::I32, T::I8, T::I32, 0.0);
    c.alpha = Some(1_000_003.0);
    c.k = 1500;
    c.m = 5;
    c.n = 4;
    run(c, 77).unwrap();
    c.ta = 1;
    c.tb = 1;
    c.order = [ROW, COL, COL, COL];
    run(c, 78).unwrap();
}

// ---- descriptors, checks, algorithms ---------------------------------------

const INVALID: i32 = 7;
const NOT_INIT: i32 = 1;
const NOT_SUPPORTED: i32 = 15;
const ALLOC_FAILED: i32 = 3;

type GetAttr = unsafe extern "C" fn(H, i32, *mut c_void, usize, *mut usize) -> i32;

unsafe fn get<V: Copy + Default>(f: GetAttr, d: H, attr: i32) -> V {
    let mut v = V::default();
    let mut written = 0usize;
    assert_eq!(f(d, attr, (&mut v as *mut V).cast(), std::mem::size_of::<V>(), &mut written), 0, "get attribute {attr}");
    assert_eq!(written, std::mem::size_of::<V>());
    v
}

#[test]
fn descriptors_keep_attributes_and_check_sizes() {
    let l = lt();
    let e = env();
    let lget: GetAttr = e.lt.f("cublasLtMatrixLayoutGetAttribute");
    let dget: GetAttr = e.lt.f("cublasLtMatmulDescGetAttribute");
    let pget: GetAttr = e.lt.f("cublasLtMatmulPreferenceGetAttribute");
    unsafe {
        // Layouts: creation values, defaults, every attribute's size.
        let mut lay: H = std::ptr::null_mut();
        assert_eq!((l.layout)(&mut lay, T::H.cuda(), 12, 34, 56), 0);
        assert_eq!(get::<u32>(lget, lay, 0), T::H.cuda() as u32);
        assert_eq!(get::<i32>(lget, lay, LAYOUT_ORDER), COL);
        assert_eq!((get::<u64>(lget, lay, 2), get::<u64>(lget, lay, 3), get::<i64>(lget, lay, 4)), (12, 34, 56));
        assert_eq!(get::<i32>(lget, lay, LAYOUT_BATCH_COUNT), 1);
        assert_eq!(get::<i64>(lget, lay, LAYOUT_STRIDED_BATCH_OFFSET), 0);
        let sizes = [(0, 4), (1, 4), (2, 8), (3, 8), (4, 8), (5, 4), (6, 8), (7, 8), (8, 4), (9, 8), (10, 8), (11, 8), (12, 4), (13, 4)];
        for (attr, size) in sizes {
            let mut need = 0usize;
            assert_eq!(lget(lay, attr, std::ptr::null_mut(), 0, &mut need), 0);
            assert_eq!(need, size, "layout attribute {attr}");
            let v = [0x5au8; 8];
            assert_eq!((l.layout_set)(lay, attr, v.as_ptr().cast(), size + 1), INVALID, "layout attribute {attr}, wrong size");
        }
        set(l.layout_set, lay, LAYOUT_ORDER, ROW);
        set(l.layout_set, lay, LAYOUT_STRIDED_BATCH_OFFSET, -5i64);
        assert_eq!(get::<i32>(lget, lay, LAYOUT_ORDER), ROW);
        assert_eq!(get::<i64>(lget, lay, LAYOUT_STRIDED_BATCH_OFFSET), -5);
        // Grouped batches: only the defaults.
        set(l.layout_set, lay, 9, 0u64);
        assert_eq!(get::<u64>(lget, lay, 9), 0);
        assert_eq!((l.layout_set)(lay, 9, (&8u64 as *const u64).cast(), 8), NOT_SUPPORTED, "a grouped rows array");
        assert_eq!((l.layout_set)(lay, 99, [0u8; 8].as_ptr().cast(), 4), INVALID, "unknown attribute");
        assert_eq!((l.layout_set)(lay, 1, std::ptr::null(), 4), INVALID, "NULL buf");
        let mut v = 0u64;
        assert_eq!(lget(lay, 0, (&mut v as *mut u64).cast(), 8, std::ptr::null_mut()), INVALID, "size mismatch");
        assert_eq!(lget(lay, 0, std::ptr::null_mut(), 0, std::ptr::null_mut()), INVALID, "size 0 without sizeWritten");
        assert_eq!((l.layout_destroy)(lay), 0);
        assert_eq!((l.layout_destroy)(std::ptr::null_mut()), 0, "destroying NULL");

        // Matmul descriptors: defaults and a round trip through every
        // attribute cuBLASLt documents, with its size.
        let mut d: H = std::ptr::null_mut();
        assert_eq!((l.desc)(&mut d, C32F, T::S.cuda()), 0);
        assert_eq!(get::<i32>(dget, d, 0), C32F);
        assert_eq!(get::<i32>(dget, d, 1), T::S.cuda());
        assert_eq!(get::<i32>(dget, d, DESC_TRANSA), 0);
        assert_eq!(get::<u32>(dget, d, DESC_EPILOGUE), EPI_DEFAULT);
        assert_eq!(get::<i32>(dget, d, 6), 2, "fill mode FULL");
        assert_eq!(get::<i32>(dget, d, DESC_BIAS_DATA_TYPE), -1);
        let desc_sizes = [
            (0, 4),
            (1, 4),
            (2, 4),
            (3, 4),
            (4, 4),
            (5, 4),
            (6, 4),
            (7, 4),
            (8, 8),
            (10, 8),
            (11, 8),
            (12, 8),
            (13, 8),
            (14, 8),
            (15, 4),
            (17, 8),
            (18, 8),
            (19, 8),
            (20, 8),
            (21, 8),
            (22, 4),
            (23, 8),
            (24, 8),
            (25, 1),
            (26, 4),
            (31, 4),
            (32, 4),
            (33, 4),
            (34, 4),
            (35, 4),
            (36, 8),
            (37, 4),
            (38, 8),
            (39, 8),
            (40, 8),
            (41, 4),
        ];
        for (attr, size) in desc_sizes {
            let mut need = 0usize;
            assert_eq!(dget(d, attr, std::ptr::null_mut(), 0, &mut need), 0, "desc attribute {attr}");
            assert_eq!(need, size, "desc attribute {attr}");
            let v: [u8; 8] = std::array::from_fn(|i| (attr as u8).wrapping_mul(7).wrapping_add(i as u8 + 1));
            assert_eq!((l.desc_set)(d, attr, v.as_ptr().cast(), size), 0);
            let mut back = [0u8; 8];
            assert_eq!(dget(d, attr, back.as_mut_ptr().cast(), size, std::ptr::null_mut()), 0);
            assert_eq!(back[..size], v[..size], "desc attribute {attr} round trip");
        }
        for attr in [9, 16, 27, 42] {
            assert_eq!((l.desc_set)(d, attr, [0u8; 8].as_ptr().cast(), 4), INVALID, "desc attribute {attr} does not exist");
        }
        assert_eq!((l.desc_destroy)(d), 0);

        // Preferences.
        let mut p: H = std::ptr::null_mut();
        assert_eq!((l.pref)(&mut p), 0);
        assert_eq!(get::<u64>(pget, p, 1), 0, "no workspace by default");
        assert_eq!(get::<u32>(pget, p, 5), 256);
        assert_eq!(get::<u64>(pget, p, 12), u64::MAX);
        set(l.pref_set, p, 1, 4096u64);
        assert_eq!(get::<u64>(pget, p, 1), 4096);
        assert_eq!((l.pref_set)(p, 2, [0u8; 8].as_ptr().cast(), 4), INVALID, "attribute 2 does not exist");
        assert_eq!((l.pref_destroy)(p), 0);

        // Descriptors in the caller's memory (cublasLt...Init).
        let init: unsafe extern "C" fn(H, usize, i32, u64, u64, i64) -> i32 = e.lt.f("cublasLtMatrixLayoutInit_internal");
        // CUDA 12's headers give the layout 8 words, CUDA 13's 14.
        let mut mem = [0u64; 8];
        let lp: H = mem.as_mut_ptr().cast();
        assert_eq!(init(lp, 56, 0, 4, 4, 4), ALLOC_FAILED, "too little memory");
        assert_eq!(init(lp, 64, 0, 4, 5, 6), 0);
        assert_eq!(get::<u64>(lget, lp, 3), 5);
        assert_eq!((l.layout_destroy)(lp), 0);
        assert_eq!(lget(lp, 3, [0u8; 8].as_mut_ptr().cast(), 8, std::ptr::null_mut()), INVALID, "a destroyed descriptor");
        assert_eq!((l.layout_destroy)(lp), INVALID, "destroyed twice");
        let garbage = [0x1234_5678u64; 14];
        assert_eq!(lget(garbage.as_ptr() as H, 3, [0u8; 8].as_mut_ptr().cast(), 8, std::ptr::null_mut()), INVALID, "never initialised");
        let dinit: unsafe extern "C" fn(H, usize, i32, i32) -> i32 = e.lt.f("cublasLtMatmulDescInit_internal");
        let mut dmem = [0u64; 32];
        assert_eq!(dinit(dmem.as_mut_ptr().cast(), 256, C64F, T::D.cuda()), 0);
        assert_eq!(get::<i32>(dget, dmem.as_mut_ptr().cast(), 0), C64F);
        let pinit: unsafe extern "C" fn(H, usize) -> i32 = e.lt.f("cublasLtMatmulPreferenceInit_internal");
        let mut pmem = [0u64; 8];
        assert_eq!(pinit(pmem.as_mut_ptr().cast(), 64), 0);
        assert_eq!(get::<u32>(pget, pmem.as_mut_ptr().cast(), 8), 256);
    }
}

/// A valid f32 configuration (16 x 8 x 4, column-major, D = C) to break
/// one attribute at a time.
struct Setup {
    h: H,
    desc: H,
    a: H,
    b: H,
    c: H,
    pref: H,
    da: u64,
    db: u64,
    dc: u64,
}

const M: usize = 16;
const N: usize = 8;
const K: usize = 4;

impl Setup {
    fn new() -> Setup {
        let l = lt();
        let e = env();
        unsafe {
            let mut s = Setup {
                h: std::ptr::null_mut(),
                desc: std::ptr::null_mut(),
                a: std::ptr::null_mut(),
                b: std::ptr::null_mut(),
                c: std::ptr::null_mut(),
                pref: std::ptr::null_mut(),
                da: e.upload(&[1f32; M * K]),
                db: e.upload(&[1f32; K * N]),
                dc: e.upload(&[5f32; M * N]),
            };
            assert_eq!((l.create)(&mut s.h), 0);
            assert_eq!((l.desc)(&mut s.desc, C32F, T::S.cuda()), 0);
            assert_eq!((l.layout)(&mut s.a, T::S.cuda(), M as u64, K as u64, M as i64), 0);
            assert_eq!((l.layout)(&mut s.b, T::S.cuda(), K as u64, N as u64, K as i64), 0);
            assert_eq!((l.layout)(&mut s.c, T::S.cuda(), M as u64, N as u64, M as i64), 0);
            assert_eq!((l.pref)(&mut s.pref), 0);
            s
        }
    }

    /// (heuristic status, algorithms found, matmul status).
    fn try_run(&self) -> (i32, i32, i32) {
        self.try_run_with(self.h, 1.0, self.da, self.dc)
    }

    fn try_run_with(&self, h: H, alpha: f32, a: u64, c: u64) -> (i32, i32, i32) {
        let l = lt();
        let beta = 1f32;
        unsafe {
            let mut result = [0u8; 96];
            let mut found = -1;
            let hs = (l.heuristic)(h, self.desc, self.a, self.b, self.c, self.c, self.pref, 1, &mut result, &mut found);
            let ms = (l.matmul)(
                h,
                self.desc,
                (&alpha as *const f32).cast(),
                a as P,
                self.a,
                self.db as P,
                self.b,
                (&beta as *const f32).cast(),
                c as P,
                self.c,
                c as H,
                self.c,
                std::ptr::null(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
            );
            env().sync();
            (hs, found, ms)
        }
    }

    fn c_values(&self) -> Vec<f32> {
        env().download::<f32>(self.dc, M * N)
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let l = lt();
        unsafe {
            for d in [self.a, self.b, self.c] {
                (l.layout_destroy)(d);
            }
            (l.desc_destroy)(self.desc);
            (l.pref_destroy)(self.pref);
            (l.destroy)(self.h);
        }
        let e = env();
        for p in [self.da, self.db, self.dc] {
            e.free(p);
        }
    }
}

fn log_text() -> String {
    std::fs::read_to_string(log_path()).unwrap_or_default()
}

#[test]
fn unsupported_configurations_fail_with_not_supported_and_a_log_line() {
    let l = lt();
    // (what to break, the words the log line must carry)
    type Break<'a> = Box<dyn Fn(&Setup) + 'a>;
    let cases: Vec<(Break<'_>, &str)> = vec![
        (Box::new(|s| unsafe { set(l.layout_set, s.a, LAYOUT_ORDER, 2i32) }), "CUBLASLT_ORDER_COL32"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_EPILOGUE, 136u32) }), "DRELU"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_EPILOGUE, 130u32) }), "RELU_AUX"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_EPILOGUE, 512u32) }), "BGRADA/B"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 17, s.da) }), "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 21, s.da) }), "CUBLASLT_MATMUL_DESC_AMAX_D_POINTER"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 31, 1i32) }), "scaling mode"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_POINTER_MODE, 2i32) }), "alpha as a device vector"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 5, 1i32) }), "TRANSC"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 6, 0i32) }), "FILL_MODE"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 39, 4i64) }), "ALPHA/BETA_BATCH_STRIDE"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 1, T::H.cuda()) }), "not a combination"),
        (Box::new(|s| unsafe { set(l.layout_set, s.a, 8, 1u32) }), "pointer-array"),
        (Box::new(|s| unsafe { set(l.layout_set, s.c, 7, 64i64) }), "planar complex"),
        (
            Box::new(|s| unsafe {
                set(l.layout_set, s.a, 0, 28u32);
                set(l.layout_set, s.b, 0, 28u32);
            }),
            "CUDA_R_8F_E4M3",
        ),
        (Box::new(|s| unsafe { set(l.layout_set, s.b, 0, T::H.cuda() as u32) }), "A and B must have the same type"),
        (
            Box::new(|s| unsafe { set(l.layout_set, s.c, 0, T::H.cuda() as u32) }),
            "A CUDA_R_32F, B CUDA_R_32F, C CUDA_R_16F, D CUDA_R_16F: not a combination",
        ),
    ];
    for (i, (brk, words)) in cases.iter().enumerate() {
        let s = Setup::new();
        brk(&s);
        let before = log_text().len();
        let (hs, found, ms) = s.try_run();
        assert_eq!((hs, found, ms), (NOT_SUPPORTED, 0, NOT_SUPPORTED), "case {i} ({words})");
        assert!(s.c_values().iter().all(|&v| v == 5.0), "case {i}: D was written");
        let log = log_text();
        let new = &log[before.min(log.len())..];
        assert!(
            new.lines().any(|line| line.contains("cublasLtMatmul") && line.contains("NOT_SUPPORTED") && line.contains(words)),
            "case {i}: no log line naming {words:?} in:\n{new}"
        );
    }
    // The baseline works.
    let s = Setup::new();
    assert_eq!(s.try_run(), (0, 1, 0));
    assert!(s.c_values().iter().all(|&v| v == 5.0 + K as f32));
}

#[test]
fn invalid_arguments_are_refused() {
    let l = lt();
    let e = env();
    type Break<'a> = Box<dyn Fn(&Setup) + 'a>;
    let layout_cases: Vec<(Break<'_>, &str)> = vec![
        (Box::new(|s| unsafe { set(l.layout_set, s.b, 2, (K + 1) as u64) }), "B rows != k"),
        (Box::new(|s| unsafe { set(l.layout_set, s.c, 3, (N + 1) as u64) }), "C shape != D shape... and D"),
        (Box::new(|s| unsafe { set(l.layout_set, s.a, 4, (M - 1) as i64) }), "lda < rows"),
        (Box::new(|s| unsafe { set(l.layout_set, s.a, LAYOUT_ORDER, ROW) }), "row-major A with ld 16 spans 244 elements, more than A's 64"),
        (
            Box::new(|s| unsafe {
                set(l.layout_set, s.a, LAYOUT_ORDER, ROW);
                set(l.layout_set, s.a, 4, K as i64 - 1);
            }),
            "row-major lda < cols",
        ),
        (
            Box::new(|s| unsafe {
                set(l.layout_set, s.a, LAYOUT_ORDER, ROW);
                set(l.layout_set, s.a, 4, K as i64);
            }),
            "row-major A with ld = cols is valid",
        ),
        (Box::new(|s| unsafe { set(l.layout_set, s.a, LAYOUT_BATCH_COUNT, 2i32) }), "batch counts differ"),
        (Box::new(|s| unsafe { set(l.layout_set, s.a, LAYOUT_ORDER, 9i32) }), "bad order"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_TRANSA, 5i32) }), "bad transa"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_EPILOGUE, EPI_BIAS) }), "bias epilogue without a bias"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, DESC_EPILOGUE, 3u32) }), "not an epilogue"),
        (Box::new(|s| unsafe { set(l.desc_set, s.desc, 0, 1234i32) }), "not a compute type"),
    ];
    for (i, (brk, what)) in layout_cases.iter().enumerate() {
        let s = Setup::new();
        brk(&s);
        let got = s.try_run();
        let want = if what.ends_with("is valid") {
            (0, 1, 0)
        } else if what.contains("spans") {
            // The configuration is valid; the memory is too small.
            (0, 1, INVALID)
        } else {
            (INVALID, 0, INVALID)
        };
        assert_eq!(got, want, "case {i} ({what})");
    }
    let s = Setup::new();
    // Handles.
    assert_eq!(s.try_run_with(std::ptr::null_mut(), 1.0, s.da, s.dc), (NOT_INIT, -1, NOT_INIT));
    let mut dead: H = std::ptr::null_mut();
    unsafe {
        assert_eq!((l.create)(&mut dead), 0);
        assert_eq!((l.destroy)(dead), 0);
        assert_eq!((l.destroy)(dead), NOT_INIT);
    }
    assert_eq!(s.try_run_with(dead, 1.0, s.da, s.dc), (NOT_INIT, -1, NOT_INIT));
    // Memory that is not device memory, or too small.
    let host = vec![1f32; M * K];
    assert_eq!(s.try_run_with(s.h, 1.0, host.as_ptr() as u64, s.dc).2, INVALID, "host A");
    let small = e.upload(&[0f32; 8]);
    assert_eq!(s.try_run_with(s.h, 1.0, small, s.dc).2, INVALID, "A overruns its allocation");
    assert_eq!(s.try_run_with(s.h, 1.0, s.da, 0).2, INVALID, "C NULL with beta 1");
    e.free(small);
    assert!(s.c_values().iter().all(|&v| v == 5.0), "D was written");
    unsafe {
        let beta = 1f32;
        let one = 1f32;
        let m = |alpha: P, beta: P, ws: H, ws_size: usize, algo: P| {
            (l.matmul)(
                s.h,
                s.desc,
                alpha,
                s.da as P,
                s.a,
                s.db as P,
                s.b,
                beta,
                s.dc as P,
                s.c,
                s.dc as H,
                s.c,
                algo,
                ws,
                ws_size,
                std::ptr::null_mut(),
            )
        };
        let pb = (&beta as *const f32).cast();
        let pa = (&one as *const f32).cast();
        assert_eq!(m(std::ptr::null(), pb, std::ptr::null_mut(), 0, std::ptr::null()), INVALID, "alpha NULL");
        assert_eq!(m(pa, std::ptr::null(), std::ptr::null_mut(), 0, std::ptr::null()), INVALID, "beta NULL");
        assert_eq!(m(pa, pb, std::ptr::null_mut(), 64, std::ptr::null()), INVALID, "workspace NULL with a size");
        let junk = [9u64; 8];
        assert_eq!(m(pa, pb, std::ptr::null_mut(), 0, junk.as_ptr().cast()), INVALID, "not an algorithm");
        // An algorithm configured beyond what it supports.
        let mut found = 0;
        let mut r = [0u8; 96];
        assert_eq!((l.heuristic)(s.h, s.desc, s.a, s.b, s.c, s.c, s.pref, 1, &mut r, &mut found), 0);
        let cfg_set: unsafe extern "C" fn(*mut u8, i32, P, usize) -> i32 = e.lt.f("cublasLtMatmulAlgoConfigSetAttribute");
        assert_eq!(cfg_set(r.as_mut_ptr(), 2, (&4i32 as *const i32).cast(), 4), 0);
        assert_eq!(m(pa, pb, std::ptr::null_mut(), 0, r.as_ptr().cast()), INVALID, "split-k 4");
        // The heuristic's own checks.
        assert_eq!((l.heuristic)(s.h, s.desc, s.a, s.b, s.c, s.c, s.pref, 0, &mut r, &mut found), INVALID, "0 requested");
        assert_eq!((l.heuristic)(s.h, s.desc, s.a, s.b, s.c, s.c, s.pref, 1, &mut r, std::ptr::null_mut()), INVALID);
        assert_eq!((l.heuristic)(s.h, s.desc, s.a, s.b, s.c, s.c, std::ptr::null_mut(), 1, &mut r, &mut found), INVALID, "no preference");
        assert_eq!((l.heuristic)(s.h, s.desc, std::ptr::null_mut(), s.b, s.c, s.c, s.pref, 1, &mut r, &mut found), INVALID, "no Adesc");
    }
    env().sync();
    assert!(s.c_values().iter().all(|&v| v == 5.0), "D was written");
    // C and D the same memory but described differently (not in place).
    let mut d2: H = std::ptr::null_mut();
    unsafe {
        assert_eq!((l.layout)(&mut d2, T::S.cuda(), M as u64, N as u64, M as i64), 0);
        set(l.layout_set, d2, LAYOUT_ORDER, ROW);
        set(l.layout_set, d2, 4, N as i64);
        let (one, beta) = (1f32, 1f32);
        let st = (l.matmul)(
            s.h,
            s.desc,
            (&one as *const f32).cast(),
            s.da as P,
            s.a,
            s.db as P,
            s.b,
            (&beta as *const f32).cast(),
            s.dc as P,
            s.c,
            s.dc as H,
            d2,
            std::ptr::null(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        );
        assert_eq!(st, INVALID, "in place with different layouts");
        (l.layout_destroy)(d2);
    }
    // The library and the process live on: the same setup still works.
    assert_eq!(s.try_run(), (0, 1, 0));
}

#[test]
fn a_cublas_handle_serves_as_a_cublaslt_handle() {
    let s = Setup::new();
    let e = env();
    let h = e.handle();
    assert_eq!(s.try_run_with(h, 2.0, s.da, s.dc), (0, 1, 0));
    assert!(s.c_values().iter().all(|&v| v == 5.0 + 2.0 * K as f32));
    e.destroy(h);
    assert_eq!(s.try_run_with(h, 2.0, s.da, s.dc), (NOT_INIT, -1, NOT_INIT), "a destroyed cuBLAS handle");
}

#[test]
fn algorithm_queries() {
    let s = Setup::new();
    let e = env();
    let lt = &e.lt;
    unsafe {
        let ids: unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, i32, *mut i32, *mut i32) -> i32 = lt.f("cublasLtMatmulAlgoGetIds");
        let (mut list, mut count) = ([-1i32; 4], 0);
        assert_eq!(ids(s.h, C32F, 0, 2, 2, 2, 2, 4, list.as_mut_ptr(), &mut count), 0);
        assert_eq!((count, list[0]), (1, 0));
        assert_eq!(ids(s.h, C32F, 0, 28, 28, 0, 0, 4, list.as_mut_ptr(), &mut count), NOT_SUPPORTED, "8-bit floats");
        let init: unsafe extern "C" fn(H, i32, i32, i32, i32, i32, i32, i32, *mut [u8; 64]) -> i32 = lt.f("cublasLtMatmulAlgoInit");
        let mut algo = [0u8; 64];
        assert_eq!(init(s.h, C32F, 0, 0, 0, 0, 0, 1, &mut algo), INVALID, "algorithm 1");
        assert_eq!(init(s.h, C32F, 0, 0, 0, 0, 0, 0, &mut algo), 0);
        let check: unsafe extern "C" fn(H, H, H, H, H, H, *const [u8; 64], *mut [u8; 96]) -> i32 = lt.f("cublasLtMatmulAlgoCheck");
        let mut r = [0xffu8; 96];
        assert_eq!(check(s.h, s.desc, s.a, s.b, s.c, s.c, &algo, &mut r), 0);
        assert_eq!(usize::from_ne_bytes(r[64..72].try_into().unwrap()), 0, "workspace size");
        assert_eq!(i32::from_ne_bytes(r[72..76].try_into().unwrap()), 0, "state");
        let cap: GetAttr = lt.f("cublasLtMatmulAlgoCapGetAttribute");
        let algo_p: H = algo.as_mut_ptr().cast();
        assert_eq!(get::<i32>(cap, algo_p, 3), 1, "strided batches");
        assert_eq!(get::<i32>(cap, algo_p, 4), 1, "out-of-place results");
        assert_eq!(get::<i32>(cap, algo_p, 0), 0, "no split-k");
        let mask = get::<u32>(cap, algo_p, 12);
        assert_eq!(mask & (EPI_RELU | EPI_BIAS | EPI_GELU | 128), EPI_RELU | EPI_BIAS | EPI_GELU | 128, "epilogue mask {mask:#x}");
        let mut need = 0;
        assert_eq!(cap(algo_p, 6, std::ptr::null_mut(), 0, &mut need), 0);
        assert_eq!(need, 4, "one tile id");
        let mut tiles = [7u32; 4];
        assert_eq!(cap(algo_p, 6, tiles.as_mut_ptr().cast(), 16, &mut need), 0);
        assert_eq!((tiles[0], need), (0, 4));
        assert_eq!(cap(algo_p, 99, tiles.as_mut_ptr().cast(), 4, &mut need), INVALID);
        let cfg_get: GetAttr = lt.f("cublasLtMatmulAlgoConfigGetAttribute");
        let cfg_set: unsafe extern "C" fn(H, i32, P, usize) -> i32 = lt.f("cublasLtMatmulAlgoConfigSetAttribute");
        assert_eq!(get::<i32>(cfg_get, algo_p, 0), 0, "algorithm id");
        assert_eq!(get::<i32>(cfg_get, algo_p, 2), 1, "split-k count");
        assert_eq!(cfg_set(algo_p, 0, (&3i32 as *const i32).cast(), 4), INVALID, "the id is read-only");
        assert_eq!(cfg_set(algo_p, 7, (&0u16 as *const u16).cast(), 2), 0, "inner shape id, 16 bits");
        assert_eq!(check(s.h, s.desc, s.a, s.b, s.c, s.c, &algo, &mut r), 0);
        assert_eq!(cfg_set(algo_p, 1, (&20u32 as *const u32).cast(), 4), 0);
        assert_eq!(check(s.h, s.desc, s.a, s.b, s.c, s.c, &algo, &mut r), INVALID, "tile 20 is not supported");
        // The heuristics cache's capacity.
        let getc: unsafe extern "C" fn(*mut usize) -> i32 = lt.f("cublasLtHeuristicsCacheGetCapacity");
        let setc: unsafe extern "C" fn(usize) -> i32 = lt.f("cublasLtHeuristicsCacheSetCapacity");
        assert_eq!(setc(17), 0);
        let mut cap_v = 0;
        assert_eq!(getc(&mut cap_v), 0);
        assert_eq!(cap_v, 17);
        assert_eq!(getc(std::ptr::null_mut()), INVALID);
    }
}

#[test]
fn versions_and_status_strings() {
    let e = setup();
    let lt12 = common::Lib::open_path(common::built("libcublasLt12.so"));
    unsafe {
        for (lib, version, cudart, major) in [(&e.lt, 131000usize, 13050usize, 13), (&lt12, 120901, 12090, 12)] {
            assert_eq!(lib.f::<unsafe extern "C" fn() -> usize>("cublasLtGetVersion")(), version);
            assert_eq!(lib.f::<unsafe extern "C" fn() -> usize>("cublasLtGetCudartVersion")(), cudart);
            let mut v = 0;
            assert_eq!(lib.f::<unsafe extern "C" fn(i32, *mut i32) -> i32>("cublasLtGetProperty")(0, &mut v), 0);
            assert_eq!(v, major);
        }
        let name: unsafe extern "C" fn(i32) -> *const std::ffi::c_char = e.lt.f("cublasLtGetStatusName");
        let text: unsafe extern "C" fn(i32) -> *const std::ffi::c_char = e.lt.f("cublasLtGetStatusString");
        assert_eq!(std::ffi::CStr::from_ptr(name(15)).to_str().unwrap(), "CUBLAS_STATUS_NOT_SUPPORTED");
        assert_eq!(std::ffi::CStr::from_ptr(text(7)).to_str().unwrap(), "an unsupported value or parameter was passed to the function");
    }
}
