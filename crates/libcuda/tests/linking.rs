//! `cuLink*` through the built libcuda.so on the CPU backend: hand-written
//! PTX modules linked and run (a kernel calling an `.extern` function and
//! writing an `.extern` variable another module defines), the logs, the
//! options, and fatbin, host-object and archive inputs.

mod common;
use common::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::OnceLock;

fn lib() -> &'static Lib {
    static L: OnceLock<Lib> = OnceLock::new();
    L.get_or_init(Lib::open_cpu)
}

fn setup() {
    let l = lib();
    api!(l; cuInit: fn(u32); cuDevicePrimaryCtxRetain: fn(*mut Ptr, i32); cuCtxSetCurrent: fn(Ptr););
    unsafe {
        assert_eq!(cuInit(0), SUCCESS);
        let mut c = null_mut();
        assert_eq!(cuDevicePrimaryCtxRetain(&mut c, 0), SUCCESS);
        assert_eq!(cuCtxSetCurrent(c), SUCCESS);
    }
}

// CUjit_option and CUjitInputType values.
const WALL_TIME: u32 = 2;
const INFO_LOG: u32 = 3;
const INFO_SIZE: u32 = 4;
const ERROR_LOG: u32 = 5;
const ERROR_SIZE: u32 = 6;
const OPT_LEVEL: u32 = 7;
const TARGET: u32 = 9;
const FALLBACK: u32 = 10;
const LOG_VERBOSE: u32 = 12;
const GLOBAL_SYMBOL_COUNT: u32 = 19;
const LTO: u32 = 20;
const IN_CUBIN: u32 = 0;
const IN_PTX: u32 = 1;
const IN_FATBIN: u32 = 2;
const IN_OBJECT: u32 = 3;
const IN_LIBRARY: u32 = 4;
const IN_NVVM: u32 = 5;

/// The kernel: `out[i] = scale(i)` for `i < n`, counting into `total`;
/// `scale` and `total` are defined elsewhere.
const KERNEL: &str = ".version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b32 r) scale(.param .b32 x);
.extern .global .align 4 .u32 total;
.visible .entry apply(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd0, [out];
    ld.param.u32 %r0, [n];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p0, %r1, %r0;
    @%p0 bra DONE;
    {
        .param .b32 a;
        .param .b32 b;
        st.param.b32 [a], %r1;
        call (b), scale, (a);
        ld.param.b32 %r2, [b];
    }
    mul.wide.u32 %rd1, %r1, 4;
    add.u64 %rd2, %rd0, %rd1;
    st.global.u32 [%rd2], %r2;
    atom.global.add.u32 %r3, [total], 1;
DONE:
    ret;
}
";

/// `scale(x) = 3x + K` and `total`, at a lower PTX version and target.
fn library_ptx(k: u32) -> String {
    format!(
        ".version 7.0
.target sm_70
.address_size 64
.visible .global .align 4 .u32 total = 5;
.visible .func (.param .b32 r) scale(.param .b32 x)
{{
    .reg .b32 %r<3>;
    ld.param.b32 %r0, [x];
    mad.lo.u32 %r1, %r0, 3, {k};
    st.param.b32 [r], %r1;
    ret;
}}
"
    )
}

/// An option value: the value itself in the pointer slot.
fn val(v: usize) -> *mut c_void {
    v as *mut c_void
}

struct Link {
    state: Ptr,
    info: Box<[u8; 4096]>,
    error: Box<[u8; 4096]>,
    values: Box<[*mut c_void; 6]>,
}

const OPTS: [u32; 6] = [INFO_LOG, INFO_SIZE, ERROR_LOG, ERROR_SIZE, WALL_TIME, LOG_VERBOSE];

impl Link {
    /// `cuLinkCreate` with both log buffers, the wall time and verbose logs.
    fn new() -> Link {
        let l = lib();
        api!(l; cuLinkCreate_v2: fn(u32, *const u32, *mut *mut c_void, *mut Ptr););
        let mut info = Box::new([0u8; 4096]);
        let mut error = Box::new([0u8; 4096]);
        let mut values: Box<[*mut c_void; 6]> =
            Box::new([info.as_mut_ptr().cast(), val(4096), error.as_mut_ptr().cast(), val(4096), null_mut(), val(1)]);
        // The wall time slot receives a float; mark it to see it written.
        unsafe { values.as_mut_ptr().add(4).cast::<f32>().write(-1.0) };
        let mut state = null_mut();
        unsafe { assert_eq!(cuLinkCreate_v2(6, OPTS.as_ptr(), values.as_mut_ptr(), &mut state), SUCCESS) };
        Link { state, info, error, values }
    }
    fn add(&self, typ: u32, data: &[u8], name: &CStr) -> u32 {
        let l = lib();
        api!(l; cuLinkAddData_v2: fn(Ptr, u32, *mut c_void, usize, *const c_char, u32, *mut u32, *mut *mut c_void););
        unsafe { cuLinkAddData_v2(self.state, typ, data.as_ptr().cast_mut().cast(), data.len(), name.as_ptr(), 0, null_mut(), null_mut()) }
    }
    fn add_ptx(&self, text: &str, name: &CStr) -> u32 {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        self.add(IN_PTX, &bytes, name)
    }
    fn complete(&self) -> (u32, Vec<u8>) {
        let l = lib();
        api!(l; cuLinkComplete: fn(Ptr, *mut *mut c_void, *mut usize););
        let (mut p, mut n) = (null_mut(), 0usize);
        let r = unsafe { cuLinkComplete(self.state, &mut p, &mut n) };
        let image = if r == SUCCESS { unsafe { std::slice::from_raw_parts(p as *const u8, n).to_vec() } } else { Vec::new() };
        (r, image)
    }
    fn info(&self) -> String {
        CStr::from_bytes_until_nul(&self.info[..]).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
    }
    fn error(&self) -> String {
        CStr::from_bytes_until_nul(&self.error[..]).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
    }
    fn error_size(&self) -> usize {
        self.values[3] as usize
    }
    fn wall_ms(&self) -> f32 {
        unsafe { self.values.as_ptr().add(4).cast::<f32>().read() }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let l = lib();
        api!(l; cuLinkDestroy: fn(Ptr););
        unsafe { assert_eq!(cuLinkDestroy(self.state), SUCCESS) };
    }
}

/// Loads `image` as a module, runs `apply` on 64 threads and returns
/// `out` and `total`.
fn run_linked(image: &[u8]) -> (Vec<u32>, u32) {
    let l = lib();
    api!(l;
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleGetFunction: fn(*mut Ptr, Ptr, *const c_char);
        cuModuleGetGlobal_v2: fn(*mut u64, *mut usize, Ptr, *const c_char);
        cuModuleUnload: fn(Ptr);
        cuMemAlloc_v2: fn(*mut u64, usize);
        cuMemFree_v2: fn(u64);
        cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize);
        cuLaunchKernel: fn(Ptr, u32, u32, u32, u32, u32, u32, u32, Ptr, *mut *mut c_void, *mut *mut c_void);
        cuCtxSynchronize: fn();
    );
    unsafe {
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, image.as_ptr().cast()), SUCCESS);
        let mut f = null_mut();
        assert_eq!(cuModuleGetFunction(&mut f, m, c"apply".as_ptr()), SUCCESS);
        let mut out = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut out, 64 * 4), SUCCESS);
        let mut n = 50u32;
        let mut params = [(&mut out as *mut u64).cast::<c_void>(), (&mut n as *mut u32).cast()];
        assert_eq!(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()), SUCCESS);
        assert_eq!(cuCtxSynchronize(), SUCCESS);
        let mut host = vec![0u32; 64];
        assert_eq!(cuMemcpyDtoH_v2(host.as_mut_ptr().cast(), out, 64 * 4), SUCCESS);
        let (mut g, mut size) = (0u64, 0usize);
        assert_eq!(cuModuleGetGlobal_v2(&mut g, &mut size, m, c"total".as_ptr()), SUCCESS);
        assert_eq!(size, 4);
        let mut total = 0u32;
        assert_eq!(cuMemcpyDtoH_v2((&mut total as *mut u32).cast(), g, 4), SUCCESS);
        assert_eq!(cuMemFree_v2(out), SUCCESS);
        assert_eq!(cuModuleUnload(m), SUCCESS);
        host.truncate(50);
        (host, total)
    }
}

fn expected(k: u32) -> Vec<u32> {
    (0..50).map(|i| 3 * i + k).collect()
}

#[test]
fn two_ptx_modules_link_and_run() {
    setup();
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    assert_eq!(link.add_ptx(&library_ptx(1), c"scale.ptx"), SUCCESS);
    let (r, image) = link.complete();
    assert_eq!(r, SUCCESS, "{}", link.error());
    assert_eq!(image.last(), Some(&0), "the image is NUL-terminated PTX");
    assert!(link.info().contains("linked 2 input(s): kernel.ptx, scale.ptx"), "{}", link.info());
    assert!(link.wall_ms() >= 0.0, "wall time written: {}", link.wall_ms());
    // The linked module takes the higher version and target.
    let text = std::str::from_utf8(&image[..image.len() - 1]).expect("text");
    assert!(text.starts_with(".version 8.0\n.target sm_80\n"), "{text}");
    let (out, total) = run_linked(&image);
    assert_eq!(out, expected(1));
    assert_eq!(total, 5 + 50, "the kernel counted into the other module's variable");

    // The same image loads as a library.
    let l = lib();
    api!(l;
        cuLibraryLoadData: fn(*mut Ptr, *const c_void, *mut u32, *mut *mut c_void, u32, *mut u32, *mut *mut c_void, u32);
        cuLibraryGetKernel: fn(*mut Ptr, Ptr, *const c_char);
        cuLibraryUnload: fn(Ptr);
    );
    unsafe {
        let mut lib_h = null_mut();
        assert_eq!(cuLibraryLoadData(&mut lib_h, image.as_ptr().cast(), null_mut(), null_mut(), 0, null_mut(), null_mut(), 0), SUCCESS);
        let mut k = null_mut();
        assert_eq!(cuLibraryGetKernel(&mut k, lib_h, c"apply".as_ptr()), SUCCESS);
        assert_eq!(cuLibraryUnload(lib_h), SUCCESS);
    }
}

#[test]
fn link_errors_are_in_the_error_log() {
    setup();
    // Nothing defines scale and total.
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    let (r, _) = link.complete();
    assert_eq!(r, INVALID_PTX);
    let e = link.error();
    assert!(e.contains("error   : Undefined reference to 'scale' in 'kernel.ptx'"), "{e}");
    assert!(e.contains("error   : Undefined reference to 'total' in 'kernel.ptx'"), "{e}");
    assert_eq!(link.error_size(), e.len() + 1, "the error log size is written back");

    // Two strong definitions.
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    assert_eq!(link.add_ptx(&library_ptx(1), c"one.ptx"), SUCCESS);
    assert_eq!(link.add_ptx(&library_ptx(2), c"two.ptx"), SUCCESS);
    let (r, _) = link.complete();
    assert_eq!(r, INVALID_PTX);
    assert!(link.error().contains("Multiple definition of 'scale' in 'two.ptx', first defined in 'one.ptx'"), "{}", link.error());

    // Different address sizes.
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    assert_eq!(link.add_ptx(&library_ptx(1).replace(".address_size 64", ".address_size 32"), c"small.ptx"), SUCCESS);
    let (r, _) = link.complete();
    assert_eq!(r, INVALID_PTX);
    assert!(link.error().contains("'small.ptx' has address size 32"), "{}", link.error());

    // Nothing added; input that is not PTX.
    let link = Link::new();
    assert_eq!(link.complete().0, INVALID_VALUE);
    assert_eq!(link.add_ptx("this is not PTX", c"junk.ptx"), INVALID_PTX, "PTX is checked when added");
    assert!(link.error().contains("junk.ptx: the PTX does not parse"), "{}", link.error());
}

#[test]
fn jit_options_are_honoured_noted_or_refused() {
    setup();
    let l = lib();
    api!(l;
        cuLinkCreate_v2: fn(u32, *const u32, *mut *mut c_void, *mut Ptr);
        cuLinkDestroy: fn(Ptr);
        cuModuleLoadDataEx: fn(*mut Ptr, *const c_void, u32, *const u32, *mut *mut c_void);
        cuModuleUnload: fn(Ptr);
    );
    let create = |opts: &[u32], vals: &[usize]| unsafe {
        let mut v: Vec<*mut c_void> = vals.iter().map(|&x| x as *mut c_void).collect();
        let mut s = null_mut();
        let r = cuLinkCreate_v2(opts.len() as u32, opts.as_ptr(), v.as_mut_ptr(), &mut s);
        if r == SUCCESS {
            assert_eq!(cuLinkDestroy(s), SUCCESS);
        }
        r
    };
    assert_eq!(create(&[99], &[0]), INVALID_VALUE, "an option number CUDA does not have");
    assert_eq!(create(&[OPT_LEVEL], &[5]), INVALID_VALUE);
    assert_eq!(create(&[OPT_LEVEL], &[3]), SUCCESS);
    assert_eq!(create(&[TARGET], &[12345]), INVALID_VALUE, "not a CUjit_target");
    assert_eq!(create(&[TARGET], &[80]), SUCCESS);
    assert_eq!(create(&[FALLBACK], &[2]), INVALID_VALUE);
    assert_eq!(create(&[FALLBACK], &[1]), SUCCESS);
    assert_eq!(create(&[LTO], &[1]), SUCCESS);
    assert_eq!(create(&[GLOBAL_SYMBOL_COUNT], &[1]), NOT_SUPPORTED, "host relocations cannot be honoured");
    assert_eq!(create(&[GLOBAL_SYMBOL_COUNT], &[0]), SUCCESS);

    // Options anycuda cannot honour are said in the info log of the call.
    let mut info = [0u8; 1024];
    let opts = [INFO_LOG, INFO_SIZE, LTO, TARGET];
    let mut vals: [*mut c_void; 4] = [info.as_mut_ptr().cast(), val(1024), val(1), val(80)];
    let ptx = [KERNEL.as_bytes(), b"\0"].concat();
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    assert_eq!(link.add_ptx(&library_ptx(4), c"scale.ptx"), SUCCESS);
    let (r, image) = link.complete();
    assert_eq!(r, SUCCESS);
    unsafe {
        let mut m = null_mut();
        assert_eq!(cuModuleLoadDataEx(&mut m, image.as_ptr().cast(), 4, opts.as_ptr(), vals.as_mut_ptr()), SUCCESS);
        let text = CStr::from_bytes_until_nul(&info).expect("NUL").to_string_lossy().into_owned();
        assert!(text.contains("CU_JIT_LTO accepted with no effect"), "{text}");
        assert!(text.contains("CU_JIT_TARGET CU_TARGET_COMPUTE_80 accepted"), "{text}");
        assert_eq!(vals[1] as usize, text.len() + 1);
        assert_eq!(cuModuleUnload(m), SUCCESS);
    }
    // Link-level notes reach cuLinkComplete's info log.
    let mut info = [0u8; 1024];
    let mut vals: [*mut c_void; 3] = [info.as_mut_ptr().cast(), val(1024), val(2)];
    unsafe {
        let mut s = null_mut();
        assert_eq!(cuLinkCreate_v2(3, [INFO_LOG, INFO_SIZE, 14].as_ptr(), vals.as_mut_ptr(), &mut s), SUCCESS);
        api!(l;
            cuLinkAddData_v2: fn(Ptr, u32, *mut c_void, usize, *const c_char, u32, *mut u32, *mut *mut c_void);
            cuLinkComplete: fn(Ptr, *mut *mut c_void, *mut usize);
        );
        let mut a = KERNEL.as_bytes().to_vec();
        a.push(0);
        let mut b = library_ptx(0).into_bytes();
        b.push(0);
        assert_eq!(cuLinkAddData_v2(s, IN_PTX, a.as_mut_ptr().cast(), a.len(), c"a".as_ptr(), 0, null_mut(), null_mut()), SUCCESS);
        assert_eq!(cuLinkAddData_v2(s, IN_PTX, b.as_mut_ptr().cast(), b.len(), c"b".as_ptr(), 0, null_mut(), null_mut()), SUCCESS);
        let (mut p, mut n) = (null_mut(), 0usize);
        assert_eq!(cuLinkComplete(s, &mut p, &mut n), SUCCESS);
        let text = CStr::from_bytes_until_nul(&info).expect("NUL").to_string_lossy().into_owned();
        assert!(text.contains("CU_JIT_CACHE_MODE 2 accepted with no effect"), "{text}");
        assert!(text.contains("linked 2 input(s): a, b"), "{text}");
        assert_eq!(cuLinkDestroy(s), SUCCESS);
    }

    // Input types.
    let link = Link::new();
    assert_eq!(link.add(IN_NVVM, b"BC\xc0\xde", c"lto.bc"), NOT_SUPPORTED);
    assert!(link.error().contains("NVVM IR"), "{}", link.error());
    assert_eq!(link.add(9, &ptx, c"x"), INVALID_VALUE);
    assert_eq!(link.add(IN_CUBIN, &ptx, c"x"), SUCCESS, "PTX given as a cubin is still PTX");
}

/// A fatbin holding one PTX entry for compute_80.
fn fatbin(ptx: &str) -> Vec<u8> {
    let mut payload = ptx.as_bytes().to_vec();
    payload.push(0);
    let padded = payload.len().next_multiple_of(8);
    let mut h = vec![0u8; 0x50];
    h[0..2].copy_from_slice(&1u16.to_le_bytes());
    h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    h[4..8].copy_from_slice(&0x50u32.to_le_bytes());
    h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
    h[0x18..0x1c].copy_from_slice(&(8u32 << 16).to_le_bytes());
    h[0x1c..0x20].copy_from_slice(&80u32.to_le_bytes());
    h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
    h[0x38..0x40].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    let mut body = h;
    body.extend_from_slice(&payload);
    body.resize(0x50 + padded, 0);
    let mut fb = Vec::new();
    fb.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&0x10u16.to_le_bytes());
    fb.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fb.extend_from_slice(&body);
    fb
}

/// A relocatable x86-64 ELF object whose `section` holds `data`, as
/// `nvcc -dc` leaves device code in a host object.
fn host_object(section: &str, data: &[u8]) -> Vec<u8> {
    let mut shstrtab = b"\0".to_vec();
    let name_off = shstrtab.len() as u32;
    shstrtab.extend_from_slice(section.as_bytes());
    shstrtab.push(0);
    let strtab_name = shstrtab.len() as u32;
    shstrtab.extend_from_slice(b".shstrtab\0");
    let data_off = 64u64;
    let str_off = data_off + data.len().next_multiple_of(8) as u64;
    let sh_off = (str_off + shstrtab.len() as u64).next_multiple_of(8);
    let mut o = vec![0u8; 64];
    o[0..4].copy_from_slice(b"\x7fELF");
    o[4] = 2; // 64-bit
    o[5] = 1; // little-endian
    o[6] = 1;
    o[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
    o[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    o[20..24].copy_from_slice(&1u32.to_le_bytes());
    o[40..48].copy_from_slice(&sh_off.to_le_bytes());
    o[52..54].copy_from_slice(&64u16.to_le_bytes());
    o[58..60].copy_from_slice(&64u16.to_le_bytes());
    o[60..62].copy_from_slice(&3u16.to_le_bytes());
    o[62..64].copy_from_slice(&2u16.to_le_bytes());
    o.extend_from_slice(data);
    o.resize(str_off as usize, 0);
    o.extend_from_slice(&shstrtab);
    o.resize(sh_off as usize, 0);
    let sh = |name: u32, typ: u32, off: u64, size: u64, align: u64| {
        let mut s = vec![0u8; 64];
        s[0..4].copy_from_slice(&name.to_le_bytes());
        s[4..8].copy_from_slice(&typ.to_le_bytes());
        s[24..32].copy_from_slice(&off.to_le_bytes());
        s[32..40].copy_from_slice(&size.to_le_bytes());
        s[48..56].copy_from_slice(&align.to_le_bytes());
        s
    };
    o.extend_from_slice(&[0u8; 64]);
    o.extend_from_slice(&sh(name_off, 1, data_off, data.len() as u64, 8));
    o.extend_from_slice(&sh(strtab_name, 3, str_off, shstrtab.len() as u64, 1));
    o
}

/// An `ar` archive of `members`.
fn archive(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut a = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", format!("{name}/"), 0, 0, 0, 644, data.len());
        assert_eq!(header.len(), 60);
        a.extend_from_slice(header.as_bytes());
        a.extend_from_slice(data);
        if data.len() % 2 == 1 {
            a.push(b'\n');
        }
    }
    a
}

#[test]
fn fatbins_host_objects_and_archives_link() {
    setup();
    // A fatbin and a host object.
    let link = Link::new();
    assert_eq!(link.add(IN_FATBIN, &fatbin(KERNEL), c"kernel.fatbin"), SUCCESS);
    assert_eq!(link.add(IN_OBJECT, &host_object("__nv_relfatbin", &fatbin(&library_ptx(7))), c"scale.o"), SUCCESS);
    let (r, image) = link.complete();
    assert_eq!(r, SUCCESS, "{}", link.error());
    assert_eq!(run_linked(&image).0, expected(7));

    // An object without device code.
    let link = Link::new();
    assert_eq!(link.add(IN_OBJECT, &host_object(".text", b"\x90\x90\x90\x90"), c"host.o"), INVALID_IMAGE);
    assert!(link.error().contains("no device code"), "{}", link.error());

    // An archive: the member defining scale is linked; one whose kernel
    // would clash is not, as it defines nothing needed.
    let clash = KERNEL
        .replace(".extern .func (.param .b32 r) scale(.param .b32 x);\n", ".visible .global .u32 unused;\n")
        .replace("call (b), scale, (a);", "mov.b32 %r9, 0;")
        .replace(".reg .b32 %r<6>;", ".reg .b32 %r<10>;");
    let other = host_object(".nv_fatbin", &fatbin(&clash));
    let scale = host_object("__nv_relfatbin", &fatbin(&library_ptx(9)));
    let notes = b"not an object\n".to_vec();
    let lib_a = archive(&[("clash.o", &other), ("README", &notes), ("scale.o", &scale)]);
    let link = Link::new();
    assert_eq!(link.add(IN_PTX, &[KERNEL.as_bytes(), b"\0"].concat(), c"kernel.ptx"), SUCCESS);
    assert_eq!(link.add(IN_LIBRARY, &lib_a, c"libscale.a"), SUCCESS, "{}", link.error());
    assert!(link.info().contains("libscale.a:README left out"), "{}", link.info());
    let (r, image) = link.complete();
    assert_eq!(r, SUCCESS, "{}", link.error());
    assert!(link.info().contains("linked 2 input(s): kernel.ptx, libscale.a:scale.o"), "{}", link.info());
    assert!(link.info().contains("'libscale.a:scale.o' is linked: it defines"), "{}", link.info());
    assert_eq!(run_linked(&image).0, expected(9));

    // The same archive from a file.
    let dir = std::env::temp_dir().join(format!("anycuda-link-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("libscale.a");
    std::fs::write(&path, &lib_a).expect("write");
    let cpath = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("path");
    let l = lib();
    api!(l; cuLinkAddFile_v2: fn(Ptr, u32, *const c_char, u32, *mut u32, *mut *mut c_void););
    let link = Link::new();
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    unsafe {
        assert_eq!(cuLinkAddFile_v2(link.state, IN_LIBRARY, cpath.as_ptr(), 0, null_mut(), null_mut()), SUCCESS);
        assert_eq!(cuLinkAddFile_v2(link.state, IN_LIBRARY, c"/nonexistent/lib.a".as_ptr(), 0, null_mut(), null_mut()), FILE_NOT_FOUND);
    }
    let (r, image) = link.complete();
    assert_eq!(r, SUCCESS, "{}", link.error());
    assert_eq!(run_linked(&image).0, expected(9));
    let _ = std::fs::remove_dir_all(&dir);

    // Without the archive, nothing defines scale.
    let link = Link::new();
    assert_eq!(link.add(IN_LIBRARY, &archive(&[("clash.o", &other)]), c"libother.a"), SUCCESS);
    assert_eq!(link.add_ptx(KERNEL, c"kernel.ptx"), SUCCESS);
    assert_eq!(link.complete().0, INVALID_PTX);
    assert!(link.error().contains("Undefined reference to 'scale' in 'kernel.ptx'"), "{}", link.error());
}

/// A fatbin holding only an sm_80 machine-code entry (as nvlink leaves the
/// device-linked fatbin of an `-rdc` program built with SASS), or nothing.
fn sass_fatbin(with_entry: bool) -> Vec<u8> {
    let mut body = Vec::new();
    if with_entry {
        let payload = b"\x7fELF-placeholder";
        let padded = payload.len().next_multiple_of(8);
        let mut h = vec![0u8; 0x40];
        h[0..2].copy_from_slice(&2u16.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&80u32.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
        body.extend_from_slice(&h);
        body.extend_from_slice(payload);
        body.resize(0x40 + padded, 0);
    }
    let mut fb = Vec::new();
    fb.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&0x10u16.to_le_bytes());
    fb.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fb.extend_from_slice(&body);
    fb
}

/// The fatbin wrapper nvcc's device link makes (`__fatBinC_Wrapper_t`,
/// version 2): the device-linked fatbin and the NULL-terminated list of the
/// translation units' prelinked fatbins.
#[repr(C)]
struct Wrapper {
    magic: u32,
    version: u32,
    fatbin: *const u8,
    prelinked: *const *const u8,
}

#[test]
fn rdc_images_link_their_prelinked_fatbins_at_load() {
    setup();
    let l = lib();
    api!(l;
        cuModuleLoadData: fn(*mut Ptr, *const c_void);
        cuModuleLoadFatBinary: fn(*mut Ptr, *const c_void);
        cuModuleUnload: fn(Ptr);
        cuLibraryLoadData: fn(*mut Ptr, *const c_void, *mut u32, *mut *mut c_void, u32, *mut u32, *mut *mut c_void, u32);
        cuLibraryGetKernel: fn(*mut Ptr, Ptr, *const c_char);
        cuLibraryGetModule: fn(*mut Ptr, Ptr);
        cuLibraryUnload: fn(Ptr);
    );
    let kernel = fatbin(KERNEL);
    let scale = fatbin(&library_ptx(11));
    for with_sass in [false, true] {
        let main = sass_fatbin(with_sass);
        let list = [kernel.as_ptr(), scale.as_ptr(), std::ptr::null()];
        let w = Wrapper { magic: 0x4662_43B1, version: 2, fatbin: main.as_ptr(), prelinked: list.as_ptr() };
        let wp = (&w as *const Wrapper).cast::<c_void>();
        unsafe {
            // cudart 13 loads it as a library, older ones as a module.
            let mut lib_h = null_mut();
            assert_eq!(cuLibraryLoadData(&mut lib_h, wp, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0), SUCCESS);
            let mut k = null_mut();
            assert_eq!(cuLibraryGetKernel(&mut k, lib_h, c"apply".as_ptr()), SUCCESS);
            assert_eq!(cuLibraryUnload(lib_h), SUCCESS);
            let mut m = null_mut();
            assert_eq!(cuModuleLoadFatBinary(&mut m, wp), SUCCESS);
            assert_eq!(cuModuleUnload(m), SUCCESS);
        }
        // And the linked code runs: load the same wrapper through the
        // helper's path (cuModuleLoadData takes any image).
        let bytes = unsafe { std::slice::from_raw_parts(wp.cast::<u8>(), std::mem::size_of::<Wrapper>()) };
        assert_eq!(run_linked(bytes).0, expected(11));
    }
    // One unit only: the other's definitions are missing.
    let main = sass_fatbin(false);
    let list = [kernel.as_ptr(), std::ptr::null()];
    let w = Wrapper { magic: 0x4662_43B1, version: 2, fatbin: main.as_ptr(), prelinked: list.as_ptr() };
    unsafe {
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, (&w as *const Wrapper).cast()), INVALID_PTX);
    }
    // A list that runs into unmapped memory is an invalid image, not a fault.
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE) as usize;
        let map = libc::mmap(null_mut(), 2 * page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        assert_ne!(map, libc::MAP_FAILED);
        assert_eq!(libc::mprotect(map.cast::<u8>().add(page).cast(), page, libc::PROT_NONE), 0);
        // The last pointer of the first page, not NULL; the next one unmapped.
        let slot = map.cast::<u8>().add(page - 8).cast::<*const u8>();
        slot.write(kernel.as_ptr());
        let w = Wrapper { magic: 0x4662_43B1, version: 2, fatbin: main.as_ptr(), prelinked: slot };
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, (&w as *const Wrapper).cast()), INVALID_IMAGE);
        // A pointer in the list to unmapped memory.
        slot.write(map.cast::<u8>().add(page));
        let w = Wrapper { magic: 0x4662_43B1, version: 2, fatbin: main.as_ptr(), prelinked: slot };
        assert_eq!(cuModuleLoadData(&mut m, (&w as *const Wrapper).cast()), INVALID_IMAGE);
        libc::munmap(map, 2 * page);
    }
}
