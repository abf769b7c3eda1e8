//! The cases every architecture runs: the C API's checks and errors, then
//! PTX kernels compiled by anycuda's compiler, launched through the API
//! and run on the emulator, compared with results computed here.

use super::{Args, Hip, P, SUCCESS};
use crate::hipcall;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::null_mut;

const INVALID_VALUE: c_int = 1;
const OUT_OF_MEMORY: c_int = 2;
const INVALID_MEMCPY_DIRECTION: c_int = 21;
const INVALID_DEVICE: c_int = 101;
const INVALID_HANDLE: c_int = 400;
const NOT_FOUND: c_int = 500;
const HOST_MEMORY_ALREADY_REGISTERED: c_int = 712;
const HOST_MEMORY_NOT_REGISTERED: c_int = 713;
const LAUNCH_FAILURE: c_int = 719;

fn kernel(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels").join(format!("{name}.ptx"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A deterministic sequence (64-bit LCG).
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s >> 11
    }
}

pub fn device_and_properties(h: &Hip) {
    let mut n = -1;
    assert_eq!(hipcall!(h, hipGetDeviceCount: fn(*mut c_int)(&mut n)), SUCCESS);
    assert_eq!(n, 1);
    let mut d = -1;
    assert_eq!(hipcall!(h, hipGetDevice: fn(*mut c_int)(&mut d)), SUCCESS);
    assert_eq!(d, 0);
    assert_eq!(hipcall!(h, hipSetDevice: fn(c_int)(0)), SUCCESS);
    assert_eq!(hipcall!(h, hipSetDevice: fn(c_int)(1)), INVALID_DEVICE);
    // The last error sticks until read, then resets.
    assert_eq!(hipcall!(h, hipGetDevice: fn(*mut c_int)(&mut d)), SUCCESS);
    assert_eq!(hipcall!(h, hipPeekAtLastError: fn()()), INVALID_DEVICE);
    assert_eq!(hipcall!(h, hipGetLastError: fn()()), INVALID_DEVICE);
    assert_eq!(hipcall!(h, hipGetLastError: fn()()), SUCCESS);
    assert_eq!(hipcall!(h, hipInit: fn(c_uint)(1)), INVALID_VALUE);

    let attr = |a: c_int| {
        let mut v = -7;
        let e = hipcall!(h, hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int)(&mut v, a, 0));
        (e, v)
    };
    assert_eq!(attr(87), (SUCCESS, h.wave_size() as c_int), "warp size");
    assert_eq!(attr(74), (SUCCESS, 65536), "shared memory per block");
    assert_eq!(attr(56), (SUCCESS, 1024), "threads per block");
    let (e, cus) = attr(63);
    assert!(e == SUCCESS && cus > 0, "multiprocessors");
    assert_eq!(attr(23), (SUCCESS, if h.arch == "gfx90a" { 9 } else { 11 }), "major");
    assert_eq!(attr(21).0, INVALID_VALUE, "LUID is not reported");
    let mut v = 0;
    assert_eq!(hipcall!(h, hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int)(&mut v, 87, 1)), INVALID_DEVICE);

    let mut name = [0 as c_char; 128];
    assert_eq!(hipcall!(h, hipDeviceGetName: fn(*mut c_char, c_int, c_int)(name.as_mut_ptr(), 128, 0)), SUCCESS);
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    assert!(name.contains("emulated"), "{name}");
    let mut short = [0x55 as c_char; 6];
    assert_eq!(hipcall!(h, hipDeviceGetName: fn(*mut c_char, c_int, c_int)(short.as_mut_ptr(), 6, 0)), SUCCESS);
    assert_eq!(unsafe { CStr::from_ptr(short.as_ptr()) }.to_bytes(), &name.as_bytes()[..5]);

    let mut total = 0usize;
    assert_eq!(hipcall!(h, hipDeviceTotalMem: fn(*mut usize, c_int)(&mut total, 0)), SUCCESS);
    assert_eq!(total, 4 << 30);
    let mut prop = vec![0u8; 1472];
    assert_eq!(hipcall!(h, hipGetDevicePropertiesR0600: fn(*mut u8, c_int)(prop.as_mut_ptr(), 0)), SUCCESS);
    let name_in_props = CStr::from_bytes_until_nul(&prop[..256]).expect("name").to_string_lossy();
    assert_eq!(name_in_props, name);
    assert_eq!(usize::from_le_bytes(prop[288..296].try_into().expect("8 bytes")), total);
    let expected_arch = if h.arch == "gfx90a" { "gfx90a:sramecc+:xnack-" } else { "gfx1100" };
    assert_eq!(h.gcn_arch_name, expected_arch);
    assert_eq!(c_int::from_le_bytes(prop[308..312].try_into().expect("4 bytes")), h.wave_size() as c_int);
    assert_eq!(c_int::from_le_bytes(prop[584..588].try_into().expect("4 bytes")), attr(67).1, "pciBusID");
    let mut uuid = [0u8; 16];
    assert_eq!(hipcall!(h, hipDeviceGetUuid: fn(*mut u8, c_int)(uuid.as_mut_ptr(), 0)), SUCCESS);
    assert_eq!(&prop[256..272], &uuid);

    let mut bus = [0 as c_char; 16];
    assert_eq!(hipcall!(h, hipDeviceGetPCIBusId: fn(*mut c_char, c_int, c_int)(bus.as_mut_ptr(), 16, 0)), SUCCESS);
    assert_eq!(unsafe { CStr::from_ptr(bus.as_ptr()) }.to_str(), Ok("0000:03:00.0"));
    assert_eq!(hipcall!(h, hipDeviceGetPCIBusId: fn(*mut c_char, c_int, c_int)(bus.as_mut_ptr(), 12, 0)), INVALID_VALUE);

    let mut ver = 0;
    assert_eq!(hipcall!(h, hipDriverGetVersion: fn(*mut c_int)(&mut ver)), SUCCESS);
    assert!(ver >= 60_000_000, "{ver}");
    assert_eq!(hipcall!(h, hipRuntimeGetVersion: fn(*mut c_int)(&mut ver)), SUCCESS);
    assert_eq!(hipcall!(h, hipDriverGetVersion: fn(*mut c_int)(null_mut())), INVALID_VALUE);

    let string = |e: c_int| {
        let f: unsafe extern "C" fn(c_int) -> *const c_char = h.f("hipGetErrorString");
        unsafe { CStr::from_ptr(f(e)) }.to_string_lossy().into_owned()
    };
    assert_eq!(h.error_name(LAUNCH_FAILURE), "hipErrorLaunchFailure");
    assert_eq!(h.error_name(123456), "hipErrorUnknown");
    assert_eq!(string(SUCCESS), "no error");
}

pub fn memory_and_errors(h: &Hip) {
    let (mut free, mut total) = (0usize, 0usize);
    assert_eq!(hipcall!(h, hipMemGetInfo: fn(*mut usize, *mut usize)(&mut free, &mut total)), SUCCESS);
    assert_eq!(total, 4 << 30);
    assert!(free <= total);
    let mut big = null_mut();
    assert_eq!(hipcall!(h, hipMalloc: fn(*mut P, usize)(&mut big, 1 << 30)), SUCCESS);
    assert_eq!(hipcall!(h, hipMemGetInfo: fn(*mut usize, *mut usize)(&mut free, &mut total)), SUCCESS);
    assert!(free <= total - (1 << 30));
    let mut too_big = null_mut();
    assert_eq!(hipcall!(h, hipMalloc: fn(*mut P, usize)(&mut too_big, 4 << 30)), OUT_OF_MEMORY);
    assert_eq!(hipcall!(h, hipFree: fn(P)(big)), SUCCESS);
    assert_eq!(hipcall!(h, hipFree: fn(P)(big)), INVALID_VALUE, "double free");
    assert!(h.logged(&["hipFree -> hipErrorInvalidValue", &format!("{:#x}", big as usize), "not the start of an allocation"]));
    assert_eq!(hipcall!(h, hipFree: fn(P)(null_mut())), SUCCESS);
    let mut zero = 1 as P;
    assert_eq!(hipcall!(h, hipMalloc: fn(*mut P, usize)(&mut zero, 0)), SUCCESS);
    assert!(zero.is_null());
    assert_eq!(hipcall!(h, hipMalloc: fn(*mut P, usize)(null_mut(), 16)), INVALID_VALUE);

    // Copies follow their direction and stay inside allocations.
    let d = h.alloc(64);
    let host = [7u32; 16];
    let mut back = [0u32; 16];
    let hp = host.as_ptr() as *const c_void;
    assert_eq!(hipcall!(h, hipFree: fn(P)((d.ptr as usize + 4) as P)), INVALID_VALUE, "not the start");
    assert_eq!(hipcall!(h, hipMemcpy: fn(P, *const c_void, usize, c_int)(d.ptr, hp, 64, 1)), SUCCESS);
    assert_eq!(hipcall!(h, hipMemcpy: fn(P, *const c_void, usize, c_int)(d.ptr, hp, 68, 1)), INVALID_VALUE, "overrun");
    assert_eq!(
        hipcall!(h, hipMemcpy: fn(P, *const c_void, usize, c_int)(back.as_mut_ptr() as P, hp, 64, 1)),
        INVALID_VALUE,
        "host memory as the device side"
    );
    assert_eq!(hipcall!(h, hipMemcpy: fn(P, *const c_void, usize, c_int)(d.ptr, hp, 64, 7)), INVALID_MEMCPY_DIRECTION);
    let e = h.alloc(64);
    assert_eq!(hipcall!(h, hipMemcpy: fn(P, *const c_void, usize, c_int)(e.ptr, d.ptr, 64, 3)), SUCCESS);
    assert_eq!(
        hipcall!(h, hipMemcpyAsync: fn(P, *const c_void, usize, c_int, P)(back.as_mut_ptr() as P, e.ptr, 64, 2, null_mut())),
        SUCCESS
    );
    assert_eq!(back, host);
    assert_eq!(
        hipcall!(h, hipMemcpyAsync: fn(P, *const c_void, usize, c_int, P)(back.as_mut_ptr() as P, e.ptr, 64, 2, 0x4242 as P)),
        INVALID_HANDLE
    );
    // Memsets: widths, alignment, bounds.
    assert_eq!(hipcall!(h, hipMemsetD32: fn(P, c_int, usize)(e.ptr, 0x01020304, 16)), SUCCESS);
    assert_eq!(h.download::<u32>(&e, 16), vec![0x01020304; 16]);
    assert_eq!(hipcall!(h, hipMemsetD16Async: fn(P, u16, usize, P)(e.ptr, 0xabcd, 3, null_mut())), SUCCESS);
    assert_eq!(h.download::<u16>(&e, 4), vec![0xabcd, 0xabcd, 0xabcd, 0x0102]);
    assert_eq!(hipcall!(h, hipMemsetD16: fn(P, u16, usize)((e.ptr as usize + 1) as P, 1, 2)), INVALID_VALUE, "misaligned");
    assert_eq!(hipcall!(h, hipMemsetD32: fn(P, c_int, usize)(e.ptr, 0, 17)), INVALID_VALUE, "overrun");
    assert_eq!(hipcall!(h, hipMemsetD8Async: fn(P, u8, usize, P)(e.ptr, 0x11, 64, null_mut())), SUCCESS);
    assert_eq!(h.download::<u32>(&e, 1), vec![0x11111111]);
    h.free(d);
    h.free(e);

    // Pinned, registered and managed memory.
    let mut pinned = null_mut();
    assert_eq!(hipcall!(h, hipHostMalloc: fn(*mut P, usize, c_uint)(&mut pinned, 256, 0)), SUCCESS);
    let mut dev = null_mut();
    assert_eq!(hipcall!(h, hipHostGetDevicePointer: fn(*mut P, P, c_uint)(&mut dev, pinned, 0)), SUCCESS);
    assert_eq!(dev, pinned, "device pointers are host addresses");
    assert_eq!(hipcall!(h, hipFree: fn(P)(pinned)), INVALID_VALUE, "pinned memory is freed with hipHostFree");
    assert_eq!(hipcall!(h, hipHostFree: fn(P)(pinned)), SUCCESS);
    let mut mine = vec![0u32; 64];
    let mp = mine.as_mut_ptr() as P;
    assert_eq!(hipcall!(h, hipHostGetDevicePointer: fn(*mut P, P, c_uint)(&mut dev, mp, 0)), INVALID_VALUE);
    assert_eq!(hipcall!(h, hipHostRegister: fn(P, usize, c_uint)(mp, 256, 0)), SUCCESS);
    assert_eq!(hipcall!(h, hipHostRegister: fn(P, usize, c_uint)(mp, 256, 0)), HOST_MEMORY_ALREADY_REGISTERED);
    assert_eq!(hipcall!(h, hipMemsetD32: fn(P, c_int, usize)(mp, 5, 64)), SUCCESS);
    assert_eq!(hipcall!(h, hipHostUnregister: fn(P)(mp)), SUCCESS);
    assert_eq!(hipcall!(h, hipHostUnregister: fn(P)(mp)), HOST_MEMORY_NOT_REGISTERED);
    assert_eq!(mine, vec![5; 64]);
    let mut managed = null_mut();
    assert_eq!(hipcall!(h, hipMallocManaged: fn(*mut P, usize, c_uint)(&mut managed, 64, 0)), INVALID_VALUE, "flags");
    assert_eq!(hipcall!(h, hipMallocManaged: fn(*mut P, usize, c_uint)(&mut managed, 64, 1)), SUCCESS);
    unsafe { *(managed as *mut u32) = 9 };
    assert_eq!(hipcall!(h, hipFree: fn(P)(managed)), SUCCESS);
}

static HOST_FN_SAW: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn host_fn(data: *mut c_void) {
    HOST_FN_SAW.store(unsafe { *(data as *const u32) }, std::sync::atomic::Ordering::SeqCst);
}

pub fn streams_and_events(h: &Hip) {
    let mut s = null_mut();
    assert_eq!(hipcall!(h, hipStreamCreateWithFlags: fn(*mut P, c_uint)(&mut s, 1)), SUCCESS);
    assert_eq!(hipcall!(h, hipStreamCreateWithFlags: fn(*mut P, c_uint)(&mut s, 4)), INVALID_VALUE);
    let mut hi = null_mut();
    assert_eq!(hipcall!(h, hipStreamCreateWithPriority: fn(*mut P, c_uint, c_int)(&mut hi, 0, -5)), SUCCESS);
    let (mut least, mut greatest) = (9, 9);
    assert_eq!(hipcall!(h, hipDeviceGetStreamPriorityRange: fn(*mut c_int, *mut c_int)(&mut least, &mut greatest)), SUCCESS);
    let mut prio = 9;
    assert_eq!(hipcall!(h, hipStreamGetPriority: fn(P, *mut c_int)(hi, &mut prio)), SUCCESS);
    assert_eq!(prio, greatest, "priorities are clamped to the device's range");
    for stream in [s, hi, null_mut(), 2 as P] {
        assert_eq!(hipcall!(h, hipStreamQuery: fn(P)(stream)), SUCCESS);
        assert_eq!(hipcall!(h, hipStreamSynchronize: fn(P)(stream)), SUCCESS);
    }
    assert_eq!(hipcall!(h, hipStreamSynchronize: fn(P)(0x999 as P)), INVALID_HANDLE);

    // Work on a stream is done when its call returns: a host function
    // queued after a copy sees the copy.
    let src = [41u32];
    let d = h.alloc(4);
    assert_eq!(hipcall!(h, hipMemcpyAsync: fn(P, *const c_void, usize, c_int, P)(d.ptr, src.as_ptr() as *const c_void, 4, 1, s)), SUCCESS);
    let f: unsafe extern "C" fn(*mut c_void) = host_fn;
    assert_eq!(hipcall!(h, hipLaunchHostFunc: fn(P, *const c_void, P)(s, f as *const c_void, d.ptr)), SUCCESS);
    assert_eq!(HOST_FN_SAW.load(std::sync::atomic::Ordering::SeqCst), 41);
    assert_eq!(hipcall!(h, hipLaunchHostFunc: fn(P, *const c_void, P)(s, std::ptr::null(), d.ptr)), INVALID_VALUE);
    h.free(d);

    let (mut start, mut stop, mut untimed) = (null_mut(), null_mut(), null_mut());
    assert_eq!(hipcall!(h, hipEventCreateWithFlags: fn(*mut P, c_uint)(&mut start, 0)), SUCCESS);
    assert_eq!(hipcall!(h, hipEventCreate: fn(*mut P)(&mut stop)), SUCCESS);
    assert_eq!(hipcall!(h, hipEventCreateWithFlags: fn(*mut P, c_uint)(&mut untimed, 2)), SUCCESS);
    let mut bad = null_mut();
    assert_eq!(hipcall!(h, hipEventCreateWithFlags: fn(*mut P, c_uint)(&mut bad, 4)), INVALID_VALUE, "interprocess needs disable-timing");
    let mut ms = -1.0f32;
    assert_eq!(hipcall!(h, hipEventElapsedTime: fn(*mut f32, P, P)(&mut ms, start, stop)), INVALID_HANDLE, "not recorded");
    assert_eq!(hipcall!(h, hipEventQuery: fn(P)(start)), SUCCESS);
    assert_eq!(hipcall!(h, hipEventRecord: fn(P, P)(start, s)), SUCCESS);
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert_eq!(hipcall!(h, hipEventRecord: fn(P, P)(stop, null_mut())), SUCCESS);
    assert_eq!(hipcall!(h, hipEventSynchronize: fn(P)(stop)), SUCCESS);
    assert_eq!(hipcall!(h, hipEventElapsedTime: fn(*mut f32, P, P)(&mut ms, start, stop)), SUCCESS);
    assert!((29.0..2000.0).contains(&ms), "{ms} ms");
    assert_eq!(hipcall!(h, hipEventRecord: fn(P, P)(untimed, s)), SUCCESS);
    assert_eq!(hipcall!(h, hipEventElapsedTime: fn(*mut f32, P, P)(&mut ms, start, untimed)), INVALID_HANDLE, "untimed");
    assert_eq!(hipcall!(h, hipStreamWaitEvent: fn(P, P, c_uint)(hi, stop, 0)), SUCCESS);
    assert_eq!(hipcall!(h, hipStreamWaitEvent: fn(P, P, c_uint)(hi, 0x777 as P, 0)), INVALID_HANDLE);
    for e in [start, stop, untimed] {
        assert_eq!(hipcall!(h, hipEventDestroy: fn(P)(e)), SUCCESS);
    }
    assert_eq!(hipcall!(h, hipEventDestroy: fn(P)(start)), INVALID_HANDLE);
    assert_eq!(hipcall!(h, hipStreamDestroy: fn(P)(s)), SUCCESS);
    assert_eq!(hipcall!(h, hipStreamDestroy: fn(P)(s)), INVALID_HANDLE);
    assert_eq!(hipcall!(h, hipStreamDestroy: fn(P)(hi)), SUCCESS);
    assert_eq!(hipcall!(h, hipDeviceSynchronize: fn()()), SUCCESS);
}

pub fn vector_add(h: &Hip) {
    let n = 1000u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1000.0 - i as f32).collect();
    let (da, db, dc) = (h.upload(&a), h.upload(&b), h.alloc(n as usize * 4));
    let m = h.load_ptx(&kernel("vector_add"));
    let f = h.function(&m, "vector_add");
    let args = Args::new().ptr(&da).ptr(&db).ptr(&dc).u32(n);
    h.run(f, [4, 1, 1], [256, 1, 1], 0, &args);
    let c: Vec<f32> = h.download(&dc, n as usize);
    for i in 0..n as usize {
        assert_eq!(c[i], a[i] + b[i], "c[{i}]");
    }
    // The kernelParams form: one pointer per argument of the code object's
    // metadata: the whole packed buffer, then the printf buffer's, the
    // heap's, the grid-sync workspace's and the variable table's addresses
    // (null here).
    h.check(hipcall!(h, hipMemsetD8: fn(P, u8, usize)(dc.ptr, 0, n as usize * 4)), "memset");
    let null_address = 0u64;
    let tail = &null_address as *const u64 as P;
    let mut params = [args.bytes.as_ptr() as P, tail, tail, tail, tail];
    let e = hipcall!(h, hipModuleLaunchKernel: fn(P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, *mut P, *mut P)(
        f, 4, 1, 1, 256, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()));
    h.check(e, "launch with kernelParams");
    assert_eq!(h.download::<f32>(&dc, n as usize), c);
    // Launch errors.
    let mut size = args.bytes.len();
    let mut extra: [P; 5] = [1 as P, args.bytes.as_ptr() as P, 2 as P, &mut size as *mut usize as P, 3 as P];
    let launch = |f: P, block: u32, shared: u32, params: *mut P, extra: *mut P| {
        hipcall!(h, hipModuleLaunchKernel: fn(P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, *mut P, *mut P)(
            f, 1, 1, 1, block, 1, 1, shared, null_mut(), params, extra))
    };
    assert_eq!(launch(f, 0, 0, null_mut(), extra.as_mut_ptr()), INVALID_VALUE, "empty block");
    assert_eq!(launch(f, 2048, 0, null_mut(), extra.as_mut_ptr()), INVALID_VALUE, "block too large");
    assert_eq!(launch(f, 64, 65540, null_mut(), extra.as_mut_ptr()), INVALID_VALUE, "too much shared memory");
    assert_eq!(launch(f, 64, 0, params.as_mut_ptr(), extra.as_mut_ptr()), INVALID_VALUE, "both argument forms");
    assert_eq!(launch(f, 64, 0, null_mut(), null_mut()), INVALID_VALUE, "no arguments");
    assert_eq!(launch(0x5555 as P, 64, 0, null_mut(), extra.as_mut_ptr()), INVALID_HANDLE, "not a function");
    // SAFETY: extra[3] points at `size`.
    unsafe { *(extra[3] as *mut usize) = 20 };
    assert_eq!(launch(f, 64, 0, null_mut(), extra.as_mut_ptr()), INVALID_VALUE, "short buffer");
    let mut g = null_mut();
    assert_eq!(hipcall!(h, hipModuleGetFunction: fn(*mut P, P, *const c_char)(&mut g, m.handle, c"no_such_kernel".as_ptr())), NOT_FOUND);
    let mut same = null_mut();
    assert_eq!(hipcall!(h, hipModuleGetFunction: fn(*mut P, P, *const c_char)(&mut same, m.handle, c"vector_add".as_ptr())), SUCCESS);
    assert_eq!(same, f, "one handle per kernel");
    h.unload(m);
    assert_eq!(launch(f, 64, 0, null_mut(), extra.as_mut_ptr()), INVALID_HANDLE, "kernel of an unloaded module");
    for d in [da, db, dc] {
        h.free(d);
    }
}

pub fn tiled_matmul(h: &Hip) {
    let n = 40usize;
    // Small multiples of 1/2: every product and sum is exact in f32, so
    // the order of accumulation does not matter.
    let a: Vec<f32> = (0..n * n).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.5).collect();
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 5 % 13) as f32 - 6.0) * 0.5).collect();
    let (da, db, dc) = (h.upload(&a), h.upload(&b), h.alloc(n * n * 4));
    let m = h.load_ptx(&kernel("tiled_matmul"));
    let f = h.function(&m, "tiled_matmul");
    let tiles = n.div_ceil(16) as u32;
    h.run(f, [tiles, tiles, 1], [16, 16, 1], 0, &Args::new().ptr(&da).ptr(&db).ptr(&dc).u32(n as u32));
    let c: Vec<f32> = h.download(&dc, n * n);
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
            assert_eq!(c[i * n + j], want, "c[{i}][{j}]");
        }
    }
    h.unload(m);
    for d in [da, db, dc] {
        h.free(d);
    }
}

pub fn warp_ops(h: &Hip) {
    let out = h.alloc(9 * 64 * 4);
    let m = h.load_ptx(&kernel("warp_ops"));
    let f = h.function(&m, "warp_ops");
    h.run(f, [1, 1, 1], [64, 1, 1], 0, &Args::new().ptr(&out));
    let got: Vec<u32> = h.download(&out, 9 * 64);
    let v = |t: usize| (3 * t + 1) as u32;
    let ballot = |base: usize, pred: &dyn Fn(usize) -> bool, lanes: &dyn Fn(usize) -> bool| {
        (0..32).filter(|&l| lanes(l) && pred(base + l)).fold(0u32, |m, l| m | 1 << l)
    };
    for t in 0..64 {
        let (lane, base) = (t % 32, t - t % 32);
        let even = lane % 2 == 0;
        let down = if lane + 5 <= 31 { v(t + 5) } else { v(t) };
        let want = [
            v(base + (lane ^ 1)),
            ballot(base, &|x| x % 3 == 0, &|_| true),
            down,
            u32::from(lane + 5 <= 31),
            if even {
                v(base + (lane + 2) % 32)
            } else if lane >= 2 {
                v(t - 2)
            } else {
                v(t)
            },
            if even { 0x1111_1111 } else { 0x2222_2222 },
            if even { 1 } else { 3 },
            if even { 0x5555_5555 } else { 0xaaaa_aaaa },
            if even { (0..32).step_by(2).map(|l| v(base + l)).fold(0u32, u32::wrapping_add) } else { v(base + 31) },
        ];
        for (slot, w) in want.iter().enumerate() {
            assert_eq!(got[slot * 64 + t], *w, "slot {slot}, thread {t} (lane {lane} of warp {})", t / 32);
        }
    }
    h.unload(m);
    h.free(out);
}

pub fn atomics(h: &Hip) {
    let n = 500usize;
    let keys: Vec<u32> = (0..n as u32).map(|i| (i * 37 + 11) % 1000).collect();
    let counters = h.upload(&[0u32, 0, u32::MAX, 0, 0, 0, 0, 0]);
    let (hist, dkeys, seen) = (h.alloc(16 * 4), h.upload(&keys), h.alloc(n * 4));
    let m = h.load_ptx(&kernel("atomics"));
    let f = h.function(&m, "atomics");
    h.run(f, [4, 1, 1], [128, 1, 1], 0, &Args::new().ptr(&counters).ptr(&hist).ptr(&dkeys).ptr(&seen).u32(n as u32));
    let c: Vec<u32> = h.download(&counters, 8);
    assert_eq!(c[0], n as u32, "add");
    assert_eq!(c[1], *keys.iter().max().expect("keys"), "max");
    assert_eq!(c[2], *keys.iter().min().expect("keys"), "min");
    assert_eq!(u64::from(c[4]) | u64::from(c[5]) << 32, keys.iter().map(|&k| u64::from(k)).sum::<u64>(), "64-bit add");
    assert_eq!(f32::from_bits(c[7]), n as f32, "float add");
    // Compare-and-swap: one thread found 0 and wrote its index + 1; every
    // other thread found that value.
    let seen: Vec<u32> = h.download(&seen, n);
    let winners: Vec<usize> = (0..n).filter(|&i| seen[i] == 0).collect();
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(c[6], winners[0] as u32 + 1);
    assert!(seen.iter().enumerate().all(|(i, &s)| i == winners[0] || s == c[6]));
    let hist: Vec<u32> = h.download(&hist, 16);
    for (b, &count) in hist.iter().enumerate() {
        assert_eq!(count as usize, keys.iter().filter(|&&k| k as usize & 15 == b).count(), "bin {b}");
    }
    h.unload(m);
}

/// 64-bit atomics on global memory (min, max, signed and unsigned, add)
/// and compare-and-swap loops through a generic pointer and on a module
/// variable (LLVM makes the 64-bit min and max compare-and-swap loops too).
pub fn atomics_64(h: &Hip) {
    let n = 200usize;
    let mut r = lcg(7);
    let vals: Vec<u64> = (0..n).map(|_| r() << 11 | r() & 0x7ff).collect();
    let counters = h.upload(&[u64::MAX, 0, i64::MAX as u64, i64::MIN as u64, 0, 0]);
    let (dvals, seen) = (h.upload(&vals), h.alloc(n * 8));
    let m = h.load_ptx(&kernel("atomics_64"));
    let f = h.function(&m, "atomics_64");
    h.run(f, [2, 1, 1], [128, 1, 1], 0, &Args::new().ptr(&counters).ptr(&dvals).ptr(&seen).u32(n as u32));
    let c: Vec<u64> = h.download(&counters, 6);
    let sum = vals.iter().fold(0u64, |a, &v| a.wrapping_add(v));
    assert_eq!(c[0], *vals.iter().min().expect("vals"), "min.u64");
    assert_eq!(c[1], *vals.iter().max().expect("vals"), "max.u64");
    assert_eq!(c[2] as i64, vals.iter().map(|&v| v as i64).min().expect("vals"), "min.s64");
    assert_eq!(c[3] as i64, vals.iter().map(|&v| v as i64).max().expect("vals"), "max.s64");
    assert_eq!(c[4], sum, "add.u64");
    assert_eq!(c[5], sum, "compare-and-swap loop");
    let seen: Vec<u64> = h.download(&seen, n);
    assert_eq!(seen.iter().filter(|&&s| s == 0).count(), 1, "one first swap found the initial value");
    let total = std::ffi::CString::new(compiler::cpu_abi::KernelSymbols::global("total")).expect("name");
    let mut p = null_mut();
    let e = hipcall!(h, hipModuleGetGlobal: fn(*mut P, *mut usize, P, *const c_char)(&mut p, null_mut(), m.handle, total.as_ptr()));
    h.check(e, "hipModuleGetGlobal(total)");
    assert_eq!(unsafe { *(p as *const u64) }, sum, "compare-and-swap loop on a module variable");
    h.unload(m);
}

pub fn grid_3d(h: &Hip) {
    let (grid, block) = ([3u32, 2, 2], [4u32, 2, 2]);
    let (w, hh, d) = ((grid[0] * block[0]) as usize, (grid[1] * block[1]) as usize, (grid[2] * block[2]) as usize);
    let (out, dims) = (h.alloc(w * hh * d * 4), h.alloc(6 * 4));
    let m = h.load_ptx(&kernel("grid_3d"));
    let f = h.function(&m, "grid_3d");
    h.run(f, grid, block, 0, &Args::new().ptr(&out).ptr(&dims));
    let got: Vec<u32> = h.download(&out, w * hh * d);
    for z in 0..d {
        for y in 0..hh {
            for x in 0..w {
                let [bx, by, bz] = [block[0] as usize, block[1] as usize, block[2] as usize];
                let want = (x / bx) | (y / by) << 4 | (z / bz) << 8 | (x % bx) << 12 | (y % by) << 16 | (z % bz) << 20;
                assert_eq!(got[(z * hh + y) * w + x] as usize, want, "({x}, {y}, {z})");
            }
        }
    }
    assert_eq!(h.download::<u32>(&dims, 6), vec![4, 2, 2, 3, 2, 2]);
    h.unload(m);
}

pub fn local_array(h: &Hip) {
    // 96 threads per block: several wavefronts, the last one partial, on
    // both architectures.
    let (blocks, threads) = (2usize, 96usize);
    let n = blocks * threads;
    let idx: Vec<u32> = (0..n as u32).map(|g| ((g * 13 + 5) % 256) | (((g * 7 + 3) % 256) << 8)).collect();
    let (didx, out) = (h.upload(&idx), h.alloc(n * 4));
    let m = h.load_ptx(&kernel("local_array"));
    let f = h.function(&m, "local_array");
    h.run(f, [blocks as u32, 1, 1], [threads as u32, 1, 1], 0, &Args::new().ptr(&didx).ptr(&out));
    let got: Vec<u32> = h.download(&out, n);
    for g in 0..n as u32 {
        let arr = |i: u32| g.wrapping_mul(i).wrapping_add(7);
        let want = arr(idx[g as usize] & 255).wrapping_add(arr((idx[g as usize] >> 8) & 255).wrapping_mul(1000));
        assert_eq!(got[g as usize], want, "thread {g}");
    }
    h.unload(m);
}

pub fn dynamic_shared(h: &Hip) {
    let (blocks, threads) = (3usize, 64usize);
    let n = blocks * threads;
    let input: Vec<u32> = (0..n as u32).map(|g| g * g + 1).collect();
    let (din, out, tags) = (h.upload(&input), h.alloc(n * 4), h.alloc(n * 4));
    let m = h.load_ptx(&kernel("dynamic_shared"));
    let f = h.function(&m, "dynamic_shared");
    h.run(f, [blocks as u32, 1, 1], [threads as u32, 1, 1], (threads * 4) as u32, &Args::new().ptr(&din).ptr(&out).ptr(&tags));
    let got: Vec<u32> = h.download(&out, n);
    let got_tags: Vec<u32> = h.download(&tags, n);
    for g in 0..n {
        let (b, t) = (g / threads, g % threads);
        assert_eq!(got[g], input[b * threads + threads - 1 - t], "out[{g}]");
        assert_eq!(got_tags[g], b as u32, "tags[{g}]");
    }
    // Block-strided loops: 1000 and 12000 words (47 KiB) per block.
    let f = h.function(&m, "reverse_loop");
    for n in [1000usize, 12000] {
        let blocks = 3usize;
        let input: Vec<u32> = (0..(blocks * n) as u32).map(|i| i.wrapping_mul(7) ^ 0x5555).collect();
        let (din, out) = (h.upload(&input), h.alloc(blocks * n * 4));
        h.run(f, [blocks as u32, 1, 1], [128, 1, 1], (n * 4) as u32, &Args::new().ptr(&din).ptr(&out).u32(n as u32));
        let got: Vec<u32> = h.download(&out, blocks * n);
        for b in 0..blocks {
            for i in 0..n {
                assert_eq!(got[b * n + i], input[b * n + n - 1 - i], "n = {n}: out[{b}][{i}]");
            }
        }
        h.free(din);
        h.free(out);
    }
    h.unload(m);
}

/// The project's `ptx/calls.ptx`: recursion (a dynamic stack), a local
/// array filled by a callee through a generic pointer, indirect calls
/// through a table of function pointers (dynamic relocations).
pub fn calls(h: &Hip) {
    let src = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ptx/calls.ptx")).expect("ptx/calls.ptx");
    let m = h.load_ptx(&src);
    let n = 64usize;
    let depth: Vec<u32> = (0..n as u32).map(|i| i % 20).collect();
    let (ddepth, out) = (h.upload(&depth), h.alloc(n * 8));
    let f = h.function(&m, "deep_recursion");
    h.run(f, [1, 1, 1], [n as u32, 1, 1], 0, &Args::new().ptr(&ddepth).ptr(&out));
    let got: Vec<u64> = h.download(&out, n);
    for i in 0..n {
        assert_eq!(got[i], u64::from(depth[i]) * (u64::from(depth[i]) + 1) / 2, "sum_to({})", depth[i]);
    }
    let key: Vec<u32> = (0..n as u32).map(|i| i * 7 + 3).collect();
    let (dkey, out2) = (h.upload(&key), h.alloc(n * 4));
    let g = h.function(&m, "local_and_indirect");
    h.run(g, [1, 1, 1], [n as u32, 1, 1], 0, &Args::new().ptr(&dkey).ptr(&out2));
    let got: Vec<u32> = h.download(&out2, n);
    for i in 0..n as u32 {
        let x = (i * 100).wrapping_add(key[i as usize] % 64);
        let want = if i % 2 == 0 { x.wrapping_mul(2) } else { x.wrapping_mul(x) };
        assert_eq!(got[i as usize], want, "thread {i}");
    }
    h.unload(m);
}

pub fn f64_ops(h: &Hip) {
    let n = 64usize;
    let mut r = lcg(42);
    let mut value = || {
        let m = (r() % 2_000_000) as f64 / 1000.0 - 1000.0;
        let e = (r() % 40) as i32 - 20;
        let v = m * 2f64.powi(e);
        if v == 0.0 {
            1.5
        } else {
            v
        }
    };
    let a: Vec<f64> = (0..n).map(|_| value()).collect();
    let b: Vec<f64> = (0..n).map(|_| value()).collect();
    let (da, db, out) = (h.upload(&a), h.upload(&b), h.alloc(n * 64));
    let m = h.load_ptx(&kernel("f64_ops"));
    let f = h.function(&m, "f64_ops");
    h.run(f, [1, 1, 1], [n as u32, 1, 1], 0, &Args::new().ptr(&da).ptr(&db).ptr(&out).u32(n as u32));
    let got: Vec<f64> = h.download(&out, n * 8);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let want = [x + y, x * y, x.mul_add(y, x), x / y, x.abs().sqrt(), x.min(y), f64::from(x as i32), f64::from(x as f32)];
        let names = ["add", "mul", "fma", "div", "sqrt", "min", "cvt.rzi.s32", "cvt.rn.f32"];
        for k in 0..8 {
            assert_eq!(got[i * 8 + k].to_bits(), want[k].to_bits(), "{}({x:e}, {y:e}): {:e} != {:e}", names[k], got[i * 8 + k], want[k]);
        }
    }
    h.unload(m);
}

/// `sin.approx.f32` and `cos.approx.f32` on [-pi, pi] within PTX's bound
/// (2^-20.9 absolute).
pub fn trig_approx(h: &Hip) {
    let n = 256usize;
    let x: Vec<f32> = (0..n).map(|i| -std::f32::consts::PI + 2.0 * std::f32::consts::PI * i as f32 / n as f32).collect();
    let (din, out) = (h.upload(&x), h.alloc(n * 8));
    let m = h.load_ptx(&kernel("trig_approx"));
    let f = h.function(&m, "trig_approx");
    h.run(f, [2, 1, 1], [128, 1, 1], 0, &Args::new().ptr(&din).ptr(&out).u32(n as u32));
    let got: Vec<f32> = h.download(&out, 2 * n);
    let bound = 2f64.powf(-20.9);
    for i in 0..n {
        let a = f64::from(x[i]);
        assert!((f64::from(got[2 * i]) - a.sin()).abs() <= bound, "sin.approx({a}) = {}", got[2 * i]);
        assert!((f64::from(got[2 * i + 1]) - a.cos()).abs() <= bound, "cos.approx({a}) = {}", got[2 * i + 1]);
    }
    h.unload(m);
}

/// Edge values for saturation: -0, +0, -1, 2, 0.5, 1, 1 - ulp, 1 + ulp,
/// the smallest denormals of each sign, NaNs of each sign, the infinities,
/// the smallest normal, -0.5.
const SAT_INPUTS: [u32; 16] = [
    0x8000_0000,
    0x0000_0000,
    0xbf80_0000,
    0x4000_0000,
    0x3f00_0000,
    0x3f80_0000,
    0x3f7f_ffff,
    0x3f80_0001,
    0x8000_0001,
    0x0000_0001,
    0x7fc0_0000,
    0xffc0_0000,
    0x7f80_0000,
    0xff80_0000,
    0x0080_0000,
    0xbf00_0000,
];

/// PTX's saturation: clamp to [0, 1]; NaN and -0 give +0; without .ftz
/// denormals stay.
fn ptx_sat(x: u32) -> u32 {
    let v = f32::from_bits(x);
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= 1.0 {
        0x3f80_0000
    } else {
        x
    }
}

/// `cvt.sat.f32.f32` and `add.sat.f32` on the emulator give PTX's result
/// for every edge value, -0 included (the compiled code clamps the bits
/// with integer compares, not with the hardware's clamp bit).
pub fn cvt_sat_edges(h: &Hip) {
    let n = SAT_INPUTS.len();
    let din = h.upload(&SAT_INPUTS);
    let out = h.alloc(2 * n * 4);
    let m = h.load_ptx(&kernel("cvt_sat"));
    let f = h.function(&m, "cvt_sat");
    h.run(f, [1, 1, 1], [32, 1, 1], 0, &Args::new().ptr(&din).ptr(&out).u32(n as u32));
    let got: Vec<u32> = h.download(&out, 2 * n);
    let (cvt, add) = got.split_at(n);
    let mut table = String::new();
    for (i, &x) in SAT_INPUTS.iter().enumerate() {
        table.push_str(&format!("  {x:#010x}: cvt.sat {:#010x}, add.sat {:#010x} (PTX {:#010x})\n", cvt[i], add[i], ptx_sat(x)));
    }
    eprintln!("cvt.sat.f32.f32 and add.sat.f32 on the emulated {}:\n{table}", h.arch);
    for (i, &x) in SAT_INPUTS.iter().enumerate() {
        assert_eq!((cvt[i], add[i]), (ptx_sat(x), ptx_sat(x)), "saturating {x:#010x} on {}:\n{table}", h.arch);
    }
    h.unload(m);
}

/// The assembler and linker of LLVM 19.
fn llvm_tool(name: &str) -> std::path::PathBuf {
    for p in [format!("{name}-19"), format!("/usr/lib/llvm-19/bin/{name}")] {
        if std::process::Command::new(&p).arg("--version").output().is_ok_and(|o| o.status.success()) {
            return p.into();
        }
    }
    panic!("{name}-19 is missing (Debian: clang-19, lld-19)");
}

/// `tests/kernels/<name>_<arch>.s` assembled and linked into a code object
/// by LLVM 19's tools.
fn assemble(h: &Hip, name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}-{}", h.arch, std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/kernels/{name}_{}.s", h.arch));
    let (obj, hsaco) = (dir.join("kernel.o"), dir.join("kernel.hsaco"));
    let mcpu = format!("-mcpu={}", h.arch);
    let run = |tool: &str, args: &[&std::ffi::OsStr]| {
        let out = std::process::Command::new(llvm_tool(tool)).args(args).output().expect("runs");
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(
        "clang",
        &[
            "-x".as_ref(),
            "assembler".as_ref(),
            "-target".as_ref(),
            "amdgcn-amd-amdhsa".as_ref(),
            mcpu.as_ref(),
            "-c".as_ref(),
            "-o".as_ref(),
            obj.as_os_str(),
            src.as_os_str(),
        ],
    );
    run("ld.lld", &["-shared".as_ref(), obj.as_os_str(), "-o".as_ref(), hsaco.as_os_str()]);
    let object = std::fs::read(&hsaco).expect("code object");
    let _ = std::fs::remove_dir_all(&dir);
    object
}

/// Hidden arguments the metadata lists are filled by the runtime: block
/// counts, group sizes, remainders (0: the grid is counted in groups),
/// grid dimensions, dynamic LDS size. An assembled kernel copies them out;
/// its one explicit argument is given with `kernelParams`.
pub fn hidden_arguments(h: &Hip) {
    let object = assemble(h, "hidden_args");
    let m = h.load_object(&object);
    let f = h.function(&m, "hidden_probe");
    let out = h.alloc(32);
    let mut params = [&out.ptr as *const P as P];
    let e = hipcall!(h, hipModuleLaunchKernel: fn(P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, *mut P, *mut P)(
        f, 3, 2, 1, 5, 1, 1, 128, null_mut(), params.as_mut_ptr(), null_mut()));
    h.check(e, "hidden_probe");
    let got: Vec<u32> = h.download(&out, 8);
    assert_eq!(got, vec![3, 2, 1, 5 | 1 << 16, 1, 0, 2, 128], "block counts, group sizes, remainders, dimensions, dynamic LDS");
    h.unload(m);
}

/// The emulator's clamp bit (`v_max_f32 ... clamp`, assembled): it clamps
/// to [0, 1] and turns NaN into +0, but keeps the sign of -0, where PTX's
/// saturation gives +0 (AMD's ISA documents do not say what hardware does).
/// The kernel keeps denormals (FLOAT_DENORM_MODE 3, as anycuda's kernels
/// without .ftz). The code object is a hand-written one with two pointer
/// arguments in its metadata, launched with `kernelParams`.
pub fn clamp_bit_on_edges(h: &Hip) {
    let object = assemble(h, "clamp_probe");
    let m = h.load_object(&object);
    let f = h.function(&m, "clamp_probe");
    let n = SAT_INPUTS.len();
    let (din, out) = (h.upload(&SAT_INPUTS), h.alloc(n * 4));
    let mut params = [&din.ptr as *const P as P, &out.ptr as *const P as P];
    let e = hipcall!(h, hipModuleLaunchKernel: fn(P, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, P, *mut P, *mut P)(
        f, 1, 1, 1, n as c_uint, 1, 1, 0, null_mut(), params.as_mut_ptr(), null_mut()));
    h.check(e, "clamp_probe");
    let got: Vec<u32> = h.download(&out, n);
    for (i, &x) in SAT_INPUTS.iter().enumerate() {
        let want = if x == 0x8000_0000 { 0x8000_0000 } else { ptx_sat(x) };
        assert_eq!(got[i], want, "clamp({x:#010x}) on the emulated {}", h.arch);
    }
    h.unload(m);
}

pub fn globals(h: &Hip) {
    let m = h.load_ptx(&kernel("globals"));
    let f = h.function(&m, "bump");
    let out = h.alloc(4);
    for launch in 1..=3u32 {
        h.run(f, [1, 1, 1], [64, 1, 1], 0, &Args::new().ptr(&out));
        assert_eq!(h.download::<u32>(&out, 1), vec![launch * 100 + 26], "launch {launch}");
    }
    let module = m.handle;
    let global = |name: &str| {
        let sym = std::ffi::CString::new(compiler::cpu_abi::KernelSymbols::global(name)).expect("name");
        let (mut p, mut size) = (null_mut(), 0usize);
        let e = hipcall!(h, hipModuleGetGlobal: fn(*mut P, *mut usize, P, *const c_char)(&mut p, &mut size, module, sym.as_ptr()));
        (e, p, size)
    };
    // The counter kept its value across launches, in the loaded image.
    let (e, p, size) = global("launches");
    assert_eq!((e, size), (SUCCESS, 4));
    assert_eq!(unsafe { *(p as *const u32) }, 3);
    let (e, p, size) = global("last_sum");
    assert_eq!((e, size), (SUCCESS, 8));
    assert_eq!(unsafe { *(p as *const u64) }, 326);
    let (e, p, size) = global("table");
    assert_eq!((e, size), (SUCCESS, 16));
    assert_eq!(unsafe { std::slice::from_raw_parts(p as *const u32, 4) }, &[3, 5, 7, 11]);
    // Writing a variable changes what the kernel sees.
    let (_, p, _) = global("launches");
    unsafe { *(p as *mut u32) = 10 };
    h.run(f, [1, 1, 1], [1, 1, 1], 0, &Args::new().ptr(&out));
    assert_eq!(h.download::<u32>(&out, 1), vec![1126]);
    assert_eq!(global("no_such_variable").0, NOT_FOUND);
    h.unload(m);
    assert_eq!(global("launches").0, INVALID_HANDLE, "unloaded module");
}

pub fn trap_fails_the_launch(h: &Hip) {
    let m = h.load_ptx(&kernel("globals"));
    let f = h.function(&m, "fail_if");
    assert_eq!(h.launch(f, [2, 1, 1], [64, 1, 1], 0, &Args::new().u32(1)), LAUNCH_FAILURE);
    assert!(h.logged(&["`fail_if` failed on the emulator", "KernelTrap", "s_trap", "work-group (0, 0, 0)"]), "the log says why");
    // The runtime lives on: the same kernel without the trap runs.
    h.run(f, [2, 1, 1], [64, 1, 1], 0, &Args::new().u32(0));
    // A code object for another processor is refused.
    let other = if h.arch == "gfx90a" { "gfx1100" } else { "gfx90a" };
    let object = super::compile(&kernel("vector_add"), other);
    let mut bad = null_mut();
    assert_eq!(hipcall!(h, hipModuleLoadData: fn(*mut P, *const c_void)(&mut bad, object.as_ptr() as *const c_void)), 209);
    assert!(h.logged(&["hipModuleLoadData -> hipErrorNoBinaryForGpu", "the device is"]));
    let junk = [0u8; 256];
    assert_eq!(hipcall!(h, hipModuleLoadData: fn(*mut P, *const c_void)(&mut bad, junk.as_ptr() as *const c_void)), 200);
    h.unload(m);
}
