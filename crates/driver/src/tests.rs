//! Driver semantics against the mock backend.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuda_types::{CUdevice_attribute as DA, CUfunction_attribute as FA, CUlimit, CUpointer_attribute as PA};

use crate::mock::MockBackend;
use crate::*;

const PTX: &str = r#"
.version 8.6
.target sm_86
.address_size 64
.global .align 4 .u32 counter;
.visible .entry mock_fill_u32(.param .u64 p, .param .u32 v, .param .u32 n) { ret; }
.visible .entry mock_fault() { ret; }
.visible .entry mock_sleep(.param .u32 ms) { ret; }
.visible .entry fixed_block() .reqntid 64, 2, 1 { ret; }
.visible .entry small_block() .maxntid 128 { ret; }
.visible .entry shared_hog() { .shared .align 4 .b8 buf[40000]; ret; }
.visible .entry unimplemented_kernel() { ret; }
"#;

fn driver() -> Driver {
    let d = Driver::new(Arc::new(MockBackend::with_builtins(2)), Config::default());
    d.init(0).expect("init");
    d
}

fn with_ctx() -> Driver {
    let d = driver();
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("set current");
    d
}

fn load(d: &Driver) -> u64 {
    let mut log = JitLog::default();
    d.module_load(ModuleSource::Ptx(PTX), ModuleOptions::default(), &mut log).expect("module load")
}

fn launch(d: &Driver, f: u64, grid: [u32; 3], block: [u32; 3], args: &[*const std::ffi::c_void], stream: u64) -> Result<()> {
    let cfg = LaunchConfig { grid, block, shared_bytes: 0, stream, cooperative: false };
    // SAFETY: the pointers point to values of the parameters' sizes.
    unsafe { d.launch_kernel(f, &cfg, KernelArgs::Pointers(args.as_ptr()), false) }
}

#[test]
fn nothing_works_before_init() {
    let d = Driver::new(Arc::new(MockBackend::new(1)), Config::default());
    assert_eq!(d.device_count(), Err(Error::NotInitialized));
    assert_eq!(d.mem_alloc(16), Err(Error::NotInitialized));
    assert_eq!(d.ctx_create(0, 0), Err(Error::NotInitialized));
    assert_eq!(d.driver_version(), 13050);
    assert!(matches!(d.init(1), Err(Error::InvalidValue(_))));
    d.init(0).expect("init");
    d.init(0).expect("init is idempotent");
    assert_eq!(d.device_count(), Ok(1));
}

#[test]
fn devices_and_attributes() {
    let d = driver();
    assert_eq!(d.device_count(), Ok(2));
    assert_eq!(d.device_get(1), Ok(1));
    assert_eq!(d.device_get(2), Err(Error::InvalidDevice(2)));
    assert_eq!(d.device_get(-1), Err(Error::InvalidDevice(-1)));
    assert_eq!(d.device_attribute(DA::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), Ok(32));
    assert!(matches!(d.device_attribute(DA(9999), 0), Err(Error::InvalidValue(_))));
    assert_eq!(d.device_attribute(DA::CU_DEVICE_ATTRIBUTE_WARP_SIZE, 5), Err(Error::InvalidDevice(5)));
    let p = d.device_props(1).expect("props").clone();
    assert_eq!(d.device_by_pci_bus_id(&p.pci_bus_id()), Ok(1));
    let short = format!("{:02x}:{:02x}.0", p.pci_bus, p.pci_device);
    assert_eq!(d.device_by_pci_bus_id(&short), Ok(1));
    assert!(d.device_by_pci_bus_id("zz:top").is_err());
    assert!(d.device_by_pci_bus_id("0000:01:1f.0").is_err());
}

#[test]
fn context_stack_and_primary_contexts() {
    let d = driver();
    assert_eq!(d.ctx_get_current(), Ok(None));
    assert_eq!(d.mem_alloc(8), Err(Error::InvalidContext));
    let p0 = d.primary_ctx_handle(0).expect("primary");
    assert_eq!(d.primary_ctx_get_state(0).map(|s| s.active), Ok(false));
    // cudart makes the primary context current before retaining it.
    d.ctx_set_current(p0).expect("set");
    assert_eq!(d.mem_alloc(8), Err(Error::ContextIsDestroyed));
    assert_eq!(d.primary_ctx_retain(0), Ok(p0));
    assert!(d.mem_alloc(8).is_ok());
    assert_eq!(d.primary_ctx_get_state(0).map(|s| s.active), Ok(true));
    assert_eq!(d.primary_ctx_set_flags(0, 4, true), Err(Error::PrimaryContextActive));
    d.primary_ctx_set_flags(0, 4, false).expect("v2 flags while active");
    assert!(d.primary_ctx_set_flags(0, 3, false).is_err(), "two scheduling flags");
    // A created context is pushed, popped, destroyed.
    let c = d.ctx_create(0, 1).expect("create");
    assert_eq!(d.ctx_get_current(), Ok(Some(c)));
    assert_eq!(d.ctx_get_device(0), Ok(1));
    assert_eq!(d.ctx_pop(), Ok(c));
    assert_eq!(d.ctx_get_current(), Ok(Some(p0)));
    d.ctx_push(c).expect("push");
    d.ctx_destroy(c).expect("destroy");
    assert_eq!(d.ctx_get_current(), Ok(Some(p0)), "destroy pops the current context");
    assert_eq!(d.ctx_destroy(c), Err(Error::InvalidContext));
    assert_eq!(d.ctx_push(c), Err(Error::InvalidContext));
    assert_eq!(d.ctx_push(0xdead_beef), Err(Error::InvalidContext));
    assert_eq!(d.ctx_destroy(p0), Err(Error::InvalidContext), "primary contexts are not destroyed");
    // Destroyed while current on this thread's stack below the top.
    let c2 = d.ctx_create(0, 0).expect("create");
    d.ctx_set_current(c2).expect("set");
    let other = std::thread::scope(|s| s.spawn(|| d.ctx_destroy(c2)).join());
    assert!(matches!(other, Ok(Ok(()))));
    assert_eq!(d.mem_alloc(8), Err(Error::ContextIsDestroyed));
    d.ctx_set_current(0).expect("pop by NULL");
    assert_eq!(d.primary_ctx_release(0), Ok(()));
    assert_eq!(d.primary_ctx_release(0), Err(Error::InvalidContext));
    assert_eq!(d.primary_ctx_get_state(0).map(|s| s.active), Ok(false));
    assert_eq!(d.ctx_pop(), Ok(p0));
    assert_eq!(d.ctx_pop(), Err(Error::InvalidContext));
}

#[test]
fn context_stacks_are_per_thread() {
    let d = with_ctx();
    let here = d.ctx_get_current().expect("current");
    let there = std::thread::scope(|s| s.spawn(|| d.ctx_get_current()).join());
    assert!(here.is_some());
    assert!(matches!(there, Ok(Ok(None))));
}

#[test]
fn limits_and_configs() {
    let d = with_ctx();
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_STACK_SIZE), Ok(1024));
    d.ctx_set_limit(CUlimit::CU_LIMIT_STACK_SIZE, 4000).expect("set");
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_STACK_SIZE), Ok(4000));
    d.ctx_set_limit(CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, 1 << 24).expect("set");
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE), Ok(1 << 24));
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE), Ok(1 << 20));
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_SHMEM_SIZE), Err(Error::UnsupportedLimit));
    assert!(matches!(d.ctx_get_limit(CUlimit(99)), Err(Error::InvalidValue(_))));
    assert!(d.ctx_set_cache_config(7).is_err());
    d.ctx_set_cache_config(1).expect("cache config");
    assert_eq!(d.ctx_get_cache_config(), Ok(1));
    assert_eq!(d.ctx_get_stream_priority_range(), Ok((0, -5)));
    // A primary reset restores the defaults.
    d.primary_ctx_reset(0).expect("reset");
    d.primary_ctx_retain(0).expect("retain");
    assert_eq!(d.ctx_get_limit(CUlimit::CU_LIMIT_STACK_SIZE), Ok(1024));
}

#[test]
fn memory_allocation_copies_and_ranges() {
    let d = with_ctx();
    assert!(matches!(d.mem_alloc(0), Err(Error::InvalidValue(_))));
    let a = d.mem_alloc(1000).expect("alloc");
    let b = d.mem_alloc(1000).expect("alloc");
    let src: Vec<u8> = (0..1000).map(|i| i as u8).collect();
    let mut dst = vec![0u8; 1000];
    unsafe {
        d.memcpy_htod(a, src.as_ptr() as usize, 1000, 0, false, false).expect("htod");
        d.memcpy_dtod(b + 10, a, 990, 0, false, false).expect("dtod");
        d.memcpy_dtoh(dst.as_mut_ptr() as usize, b, 1000, 0, false, false).expect("dtoh");
    }
    assert_eq!(&dst[10..], &src[..990]);
    // Out of range, unknown and NULL pointers.
    unsafe {
        assert!(matches!(d.memcpy_htod(a + 1, src.as_ptr() as usize, 1000, 0, false, false), Err(Error::InvalidValue(_))));
        assert!(matches!(d.memcpy_dtoh(dst.as_mut_ptr() as usize, 0x10, 4, 0, false, false), Err(Error::InvalidValue(_))));
        assert!(matches!(d.memcpy_htod(a, 0, 4, 0, false, false), Err(Error::InvalidValue(_))));
    }
    assert_eq!(d.mem_get_address_range(a + 500), Ok((a, 1000)));
    assert!(matches!(d.mem_get_address_range(a + 1000 + 4096 * 1024), Err(Error::NotFound(_)) | Ok(_)));
    d.memset(a, MemsetValue::U32(0x01020304), 250, 0, false, false).expect("memset");
    unsafe { d.memcpy_dtoh(dst.as_mut_ptr() as usize, a, 8, 0, false, false).expect("dtoh") };
    assert_eq!(&dst[..8], &[4, 3, 2, 1, 4, 3, 2, 1]);
    assert!(matches!(d.memset(a + 1, MemsetValue::U32(0), 1, 0, false, false), Err(Error::InvalidValue(_))), "misaligned");
    assert!(matches!(d.memset(a, MemsetValue::U16(0), 501, 0, false, false), Err(Error::InvalidValue(_))), "overrun");
    let (free0, total) = d.mem_get_info().expect("info");
    d.mem_free(a).expect("free");
    let (free1, total1) = d.mem_get_info().expect("info");
    assert_eq!(total, total1);
    assert_eq!(free1, free0 + 1000);
    assert!(matches!(d.mem_free(a), Err(Error::InvalidValue(_))), "double free");
    assert!(matches!(d.mem_free(b + 8), Err(Error::InvalidValue(_))), "interior pointer");
    d.mem_free(0).expect("free(NULL)");
}

#[test]
fn generic_copies_treat_unknown_addresses_as_host_memory() {
    let d = with_ctx();
    let a = d.mem_alloc(64).expect("alloc");
    let src = [7u8; 64];
    let mut dst = [0u8; 64];
    unsafe {
        d.memcpy(a, src.as_ptr() as u64, 64, 0, false, false).expect("h->d");
        d.memcpy(dst.as_mut_ptr() as u64, a, 64, 0, false, false).expect("d->h");
    }
    assert_eq!(dst, src);
}

#[test]
fn pitched_2d_and_3d_copies() {
    let d = with_ctx();
    let (p, pitch) = d.mem_alloc_pitch(100, 20, 4).expect("pitch");
    assert!(pitch >= 100 && pitch % 256 == 0);
    assert!(d.mem_alloc_pitch(100, 20, 3).is_err());
    let host: Vec<u8> = (0..100 * 20).map(|i| (i % 251) as u8).collect();
    let c = Memcpy2D {
        src: MemLoc::Host(host.as_ptr() as usize),
        src_x: 0,
        src_y: 0,
        src_pitch: 100,
        dst: MemLoc::Device(p),
        dst_x: 0,
        dst_y: 0,
        dst_pitch: pitch,
        width: 100,
        height: 20,
    };
    unsafe { d.memcpy_2d(&c, 0, false, false).expect("2d h->d") };
    let mut row = vec![0u8; 100];
    unsafe { d.memcpy_dtoh(row.as_mut_ptr() as usize, p + 7 * pitch as u64, 100, 0, false, false).expect("row") };
    assert_eq!(row, host[700..800]);
    // A 3-D sub-box back to the host, with offsets on both sides.
    let mut out = vec![0u8; 10 * 5];
    let c3 = Memcpy3D {
        src: MemLoc::Device(p),
        src_x: 3,
        src_y: 2,
        src_z: 0,
        src_lod: 0,
        src_pitch: pitch,
        src_height: 20,
        dst: MemLoc::Host(out.as_mut_ptr() as usize),
        dst_x: 0,
        dst_y: 0,
        dst_z: 0,
        dst_lod: 0,
        dst_pitch: 10,
        dst_height: 5,
        width: 10,
        height: 5,
        depth: 1,
    };
    unsafe { d.memcpy_3d(&c3, 0, false, false).expect("3d d->h") };
    for y in 0..5 {
        assert_eq!(&out[y * 10..y * 10 + 10], &host[(y + 2) * 100 + 3..(y + 2) * 100 + 13]);
    }
    // Rows beyond the allocation and a pitch below the width are refused.
    let mut bad = c;
    bad.height = 21;
    assert!(unsafe { d.memcpy_2d(&bad, 0, false, false) }.is_err());
    let mut bad = c;
    bad.src_pitch = 50;
    assert!(unsafe { d.memcpy_2d(&bad, 0, false, false) }.is_err());
    let mut arr = c;
    arr.dst = MemLoc::Array(1);
    assert!(matches!(unsafe { d.memcpy_2d(&arr, 0, false, false) }, Err(Error::InvalidHandle(_))), "not an array handle");
    d.memset_2d(p, pitch, MemsetValue::U16(0xabcd), 10, 20, 0, false, false).expect("memset2d");
    unsafe { d.memcpy_dtoh(row.as_mut_ptr() as usize, p + 19 * pitch as u64, 22, 0, false, false).expect("row") };
    assert_eq!(&row[..4], &[0xcd, 0xab, 0xcd, 0xab]);
    assert_eq!(row[20], host[1920]);
}

#[test]
fn host_and_managed_memory_and_pointer_attributes() {
    let d = with_ctx();
    let h = d.mem_host_alloc(4096, 0x2).expect("host alloc");
    assert_eq!(d.mem_host_get_flags(h), Ok(0x2));
    let dp = d.mem_host_get_device_pointer(h, 0).expect("device pointer");
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, h as u64), Ok(PointerAttribute::U32(1)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_HOST_POINTER, h as u64 + 8), Ok(PointerAttribute::U64(h as u64 + 8)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_DEVICE_POINTER, h as u64), Ok(PointerAttribute::U64(dp)));
    let m = d.mem_alloc_managed(256, 1).expect("managed");
    assert!(d.mem_alloc_managed(256, 3).is_err());
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_IS_MANAGED, m), Ok(PointerAttribute::U32(1)));
    let a = d.mem_alloc(100).expect("alloc");
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 5), Ok(PointerAttribute::U32(2)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 5), Ok(PointerAttribute::U64(a)));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 5), Ok(PointerAttribute::U64(100)));
    assert!(matches!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_HOST_POINTER, a), Err(Error::InvalidValue(_))));
    let ctx = d.ctx_get_current().expect("cur").unwrap_or(0);
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_CONTEXT, a), Ok(PointerAttribute::U64(ctx)));
    let stack = 0u64;
    assert!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &stack as *const u64 as u64).is_err());
    // Registration of host memory.
    let mut buf = vec![0u8; 8192];
    let bp = buf.as_mut_ptr() as usize;
    d.mem_host_register(bp, 8192, 0).expect("register");
    assert_eq!(d.mem_host_register(bp + 100, 10, 0), Err(Error::HostMemoryAlreadyRegistered));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, bp as u64 + 1), Ok(PointerAttribute::U32(1)));
    d.mem_host_unregister(bp).expect("unregister");
    assert_eq!(d.mem_host_unregister(bp), Err(Error::HostMemoryNotRegistered));
    d.mem_free_host(h).expect("free host");
    assert!(d.mem_free_host(h).is_err());
    d.mem_free(m).expect("free managed");
}

#[test]
fn streams_run_asynchronously_and_in_order() {
    let d = with_ctx();
    let m = load(&d);
    let sleep = d.module_get_function(m, "mock_sleep").expect("fn");
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    let s = d.stream_create(0, 0).expect("stream");
    let buf = d.mem_alloc(4 * 16).expect("alloc");
    let ms = 300u32;
    let t = Instant::now();
    launch(&d, sleep, [1, 1, 1], [1, 1, 1], &[&ms as *const u32 as *const _], s).expect("launch");
    let (v, n) = (42u32, 16u32);
    launch(
        &d,
        fill,
        [1, 1, 1],
        [32, 1, 1],
        &[&buf as *const u64 as *const _, &v as *const u32 as *const _, &n as *const u32 as *const _],
        s,
    )
    .expect("launch");
    assert!(t.elapsed() < Duration::from_millis(200), "launch blocked the host");
    assert_eq!(d.stream_query(s, false), Err(Error::NotReady));
    d.stream_synchronize(s, false).expect("sync");
    assert!(t.elapsed() >= Duration::from_millis(ms as u64));
    assert_eq!(d.stream_query(s, false), Ok(()));
    let mut out = [0u32; 16];
    unsafe { d.memcpy_dtoh(out.as_mut_ptr() as usize, buf, 64, 0, false, false).expect("dtoh") };
    assert_eq!(out, [42; 16]);
    d.stream_destroy(s).expect("destroy");
    assert!(matches!(d.stream_destroy(s), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.stream_query(s, false), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.stream_create(2, 0), Err(Error::InvalidValue(_))));
    assert_eq!(d.stream_get_priority(d.stream_create(0, -100).expect("s"), false), Ok(-5));
}

#[test]
fn legacy_stream_synchronises_with_blocking_streams_only() {
    let d = with_ctx();
    let m = load(&d);
    let sleep = d.module_get_function(m, "mock_sleep").expect("fn");
    let blocking = d.stream_create(0, 0).expect("stream");
    let nonblocking = d.stream_create(1, 0).expect("stream");
    let ms = 300u32;
    let arg = [&ms as *const u32 as *const std::ffi::c_void];
    // Legacy work waits for the blocking stream's earlier work.
    launch(&d, sleep, [1; 3], [1; 3], &arg, blocking).expect("launch");
    let t = Instant::now();
    d.stream_synchronize(0, false).expect("legacy sync");
    let on_legacy = d.launch_host_func(0, false, Box::new(|| {}));
    assert!(on_legacy.is_ok());
    d.stream_synchronize(0, false).expect("legacy sync");
    assert!(t.elapsed() >= Duration::from_millis(250), "legacy did not wait: {:?}", t.elapsed());
    // ...but not for a non-blocking stream's.
    launch(&d, sleep, [1; 3], [1; 3], &arg, nonblocking).expect("launch");
    let t = Instant::now();
    d.launch_host_func(0, false, Box::new(|| {})).expect("host fn");
    d.stream_synchronize(0, false).expect("legacy sync");
    assert!(t.elapsed() < Duration::from_millis(250), "legacy waited for a non-blocking stream");
    d.ctx_synchronize(0).expect("ctx sync");
    // The per-thread default stream does not wait for a blocking stream.
    launch(&d, sleep, [1; 3], [1; 3], &arg, blocking).expect("launch");
    let t = Instant::now();
    d.launch_host_func(0, true, Box::new(|| {})).expect("host fn on per-thread stream");
    d.stream_synchronize(0, true).expect("ptds sync");
    assert!(t.elapsed() < Duration::from_millis(250));
    d.ctx_synchronize(0).expect("ctx sync");
}

#[test]
fn events_record_wait_and_time() {
    let d = with_ctx();
    let m = load(&d);
    let sleep = d.module_get_function(m, "mock_sleep").expect("fn");
    let s1 = d.stream_create(1, 0).expect("s1");
    let s2 = d.stream_create(1, 0).expect("s2");
    let (a, b) = (d.event_create(0).expect("ev"), d.event_create(0).expect("ev"));
    let nt = d.event_create(2).expect("no timing");
    assert!(d.event_create(0x8).is_err());
    assert!(d.event_create(0x4).is_err(), "interprocess needs disable-timing");
    assert_eq!(d.event_query(a), Ok(()), "never recorded counts as complete");
    assert!(matches!(d.event_elapsed_time(a, b), Err(Error::InvalidHandle(_))));
    let ms = 200u32;
    d.event_record(a, s1, false, 0).expect("record");
    launch(&d, sleep, [1; 3], [1; 3], &[&ms as *const u32 as *const _], s1).expect("launch");
    d.event_record(b, s1, false, 0).expect("record");
    d.event_record(nt, s1, false, 0).expect("record");
    assert_eq!(d.event_query(b), Err(Error::NotReady));
    assert_eq!(d.event_elapsed_time(a, b), Err(Error::NotReady));
    // s2 waits for b.
    let flag = Arc::new(AtomicU32::new(0));
    d.stream_wait_event(s2, b, false, 0).expect("wait");
    let f2 = flag.clone();
    d.launch_host_func(s2, false, Box::new(move || f2.store(1, Ordering::SeqCst))).expect("host fn");
    d.stream_synchronize(s2, false).expect("sync");
    assert_eq!(d.event_query(b), Ok(()), "s2 ran before the event it waited for");
    assert_eq!(flag.load(Ordering::SeqCst), 1);
    d.event_synchronize(b).expect("sync");
    let t = d.event_elapsed_time(a, b).expect("elapsed");
    assert!((150.0..5000.0).contains(&t), "elapsed {t} ms");
    assert!(d.event_elapsed_time(b, a).expect("elapsed") < 0.0);
    assert!(matches!(d.event_elapsed_time(a, nt), Err(Error::InvalidHandle(_))));
    d.event_destroy(a).expect("destroy");
    assert!(matches!(d.event_query(a), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.event_record(a, 0, false, 0), Err(Error::InvalidHandle(_))));
}

#[test]
fn callbacks_run_in_order_with_status() {
    let d = with_ctx();
    let s = d.stream_create(0, 0).expect("s");
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    for i in 0..5 {
        let o = order.clone();
        d.stream_add_callback(s, false, 0, Box::new(move |st| o.lock().map(|mut v| v.push((i, st.is_ok()))).unwrap_or(()))).expect("cb");
    }
    assert!(d.stream_add_callback(s, false, 1, Box::new(|_| {})).is_err());
    d.stream_synchronize(s, false).expect("sync");
    let v = order.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(v, (0..5).map(|i| (i, true)).collect::<Vec<_>>());
}

#[test]
fn modules_functions_and_globals() {
    let d = with_ctx();
    let m = load(&d);
    assert_eq!(d.module_function_count(m), Ok(7));
    let f = d.module_get_function(m, "mock_fill_u32").expect("fn");
    assert!(matches!(d.module_get_function(m, "nope"), Err(Error::NotFound(_))));
    assert_eq!(d.func_get_name(f).as_deref(), Ok("mock_fill_u32"));
    assert_eq!(d.func_param_info(f, 1), Ok((8, 4)));
    assert!(d.func_param_info(f, 3).is_err());
    assert_eq!(d.func_get_module(f), Ok(m));
    let (g, size) = d.module_get_global(m, "counter").expect("global");
    assert_eq!(size, 4);
    let v = 77u32;
    unsafe { d.memcpy_htod(g, &v as *const u32 as usize, 4, 0, false, false).expect("write global") };
    let mut back = [0u8; 4];
    d.read_device(g, &mut back).expect("read");
    assert_eq!(u32::from_le_bytes(back), 77);
    assert!(matches!(d.module_get_global(m, "missing"), Err(Error::NotFound(_))));
    d.module_unload(m).expect("unload");
    assert!(matches!(d.module_get_function(m, "mock_fill_u32"), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.func_get_name(f), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.module_unload(m), Err(Error::InvalidHandle(_))));
    // Malformed PTX fails with a log.
    let mut log = JitLog::default();
    let r = d.module_load(ModuleSource::Ptx("garbage"), ModuleOptions::default(), &mut log);
    assert!(matches!(r, Err(Error::InvalidPtx(_))), "{r:?}");
    assert!(log.error.contains("version"), "{}", log.error);
}

#[test]
fn libraries_and_kernels() {
    let d = driver();
    // Libraries load without a context.
    let mut log = JitLog::default();
    let l = d.library_load(ModuleSource::Ptx(PTX), ModuleOptions::default(), &mut log).expect("library");
    assert!(log.info.contains("7 kernel"), "{}", log.info);
    assert_eq!(d.library_kernel_count(l), Ok(7));
    let k = d.library_get_kernel(l, "mock_fill_u32").expect("kernel");
    assert_eq!(d.kernel_get_library(k), Ok(l));
    assert_eq!(d.func_get_name(k).as_deref(), Ok("mock_fill_u32"));
    assert_eq!(d.func_param_info(k, 2), Ok((12, 4)));
    assert_eq!(d.func_get_attribute(k, FA::CU_FUNC_ATTRIBUTE_NUM_REGS), Ok(32));
    assert_eq!(d.kernel_get_function(k), Err(Error::InvalidContext));
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("current");
    let f = d.kernel_get_function(k).expect("function");
    assert_eq!(d.kernel_get_function(k), Ok(f), "one function per context");
    let m = d.library_get_module(l).expect("module");
    assert_eq!(d.module_get_function(m, "mock_fill_u32"), Ok(f));
    // A CUkernel launches like a CUfunction.
    let buf = d.mem_alloc(16).expect("alloc");
    let (v, n) = (9u32, 4u32);
    let args = [&buf as *const u64 as *const _, &v as *const u32 as *const _, &n as *const u32 as *const _];
    launch(&d, k, [1; 3], [1; 3], &args, 0).expect("launch kernel handle");
    d.ctx_synchronize(0).expect("sync");
    let mut out = [0u32; 4];
    unsafe { d.memcpy_dtoh(out.as_mut_ptr() as usize, buf, 16, 0, false, false).expect("dtoh") };
    assert_eq!(out, [9; 4]);
    // Attributes set on the kernel apply to its functions.
    d.func_set_attribute(k, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60000).expect("set");
    assert_eq!(d.func_get_attribute(f, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), Ok(60000));
    assert!(matches!(d.library_get_kernel(l, "nope"), Err(Error::NotFound(_))));
    d.library_unload(l).expect("unload");
    assert!(matches!(d.kernel_get_function(k), Err(Error::InvalidHandle(_))));
    assert!(matches!(d.library_unload(l), Err(Error::InvalidHandle(_))));
}

#[test]
fn launch_configuration_checks() {
    let d = with_ctx();
    let m = load(&d);
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    let fixed = d.module_get_function(m, "fixed_block").expect("fn");
    let buf = d.mem_alloc(4).expect("alloc");
    let (v, n) = (1u32, 1u32);
    let args = [&buf as *const u64 as *const _, &v as *const u32 as *const _, &n as *const u32 as *const _];
    let inv = |r: Result<()>| matches!(r, Err(Error::InvalidValue(_)));
    assert!(inv(launch(&d, fill, [1; 3], [0, 1, 1], &args, 0)));
    assert!(inv(launch(&d, fill, [0, 1, 1], [1; 3], &args, 0)));
    assert!(inv(launch(&d, fill, [1; 3], [1025, 1, 1], &args, 0)));
    assert!(inv(launch(&d, fill, [1; 3], [1, 1, 65], &args, 0)));
    assert!(inv(launch(&d, fill, [1; 3], [64, 32, 1], &args, 0)), "2048 threads");
    assert!(inv(launch(&d, fill, [1, 65536, 1], [1; 3], &args, 0)));
    launch(&d, fill, [i32::MAX as u32, 1, 1], [1; 3], &args, 0).expect("max grid x");
    assert!(inv(launch(&d, fixed, [1; 3], [128, 1, 1], &[], 0)), ".reqntid mismatch");
    launch(&d, fixed, [1; 3], [64, 2, 1], &[], 0).expect("accepted; runs asynchronously");
    assert!(matches!(d.ctx_synchronize(0), Err(Error::Fault(LaunchFault::Failed(_)))), "the mock has no fixed_block");
}

#[test]
fn launch_resource_checks() {
    let d = with_ctx();
    let m = load(&d);
    let small = d.module_get_function(m, "small_block").expect("fn");
    let hog = d.module_get_function(m, "shared_hog").expect("fn");
    assert!(matches!(launch(&d, small, [1; 3], [256, 1, 1], &[], 0), Err(Error::LaunchOutOfResources(_))));
    assert_eq!(d.func_get_attribute(small, FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), Ok(128));
    assert_eq!(d.func_get_attribute(hog, FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), Ok(40000));
    assert_eq!(d.func_get_attribute(hog, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), Ok(49152 - 40000));
    let cfg = |shared| LaunchConfig { grid: [1; 3], block: [32, 1, 1], shared_bytes: shared, stream: 0, cooperative: false };
    let r = unsafe { d.launch_kernel(hog, &cfg(10000), KernelArgs::None, false) };
    assert!(matches!(r, Err(Error::InvalidValue(_))), "too much dynamic shared memory: {r:?}");
    d.func_set_attribute(hog, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 20000).expect("opt in");
    assert!(d.func_set_attribute(hog, FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20).is_err());
    assert!(d.func_set_attribute(hog, FA::CU_FUNC_ATTRIBUTE_NUM_REGS, 1).is_err(), "read-only");
    let r = unsafe { d.launch_kernel(hog, &cfg(10000), KernelArgs::None, false) };
    assert!(r.is_ok(), "{r:?}");
    d.ctx_synchronize(0).expect_err("the mock has no shared_hog: a sticky failure");
    // Parameters: missing ones, short buffers.
    let d = with_ctx();
    let m = load(&d);
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    let c = LaunchConfig { grid: [1; 3], block: [1; 3], shared_bytes: 0, stream: 0, cooperative: false };
    assert!(matches!(unsafe { d.launch_kernel(fill, &c, KernelArgs::None, false) }, Err(Error::InvalidValue(_))));
    assert!(matches!(unsafe { d.launch_kernel(fill, &c, KernelArgs::Buffer(&[0u8; 8]), false) }, Err(Error::InvalidValue(_))));
    let buf = d.mem_alloc(8).expect("alloc");
    let mut pb = [0u8; 16];
    pb[..8].copy_from_slice(&buf.to_le_bytes());
    pb[8..12].copy_from_slice(&5u32.to_le_bytes());
    pb[12..16].copy_from_slice(&2u32.to_le_bytes());
    unsafe { d.launch_kernel(fill, &c, KernelArgs::Buffer(&pb), false) }.expect("extra form");
    let mut out = [0u32; 2];
    unsafe { d.memcpy_dtoh(out.as_mut_ptr() as usize, buf, 8, 0, false, false).expect("dtoh") };
    assert_eq!(out, [5, 5]);
    assert!(matches!(launch(&d, 0x1234, [1; 3], [1; 3], &[], 0), Err(Error::InvalidHandle(_))));
}

#[test]
fn a_fault_poisons_the_context() {
    let d = with_ctx();
    let m = load(&d);
    let fault = d.module_get_function(m, "mock_fault").expect("fn");
    let a = d.mem_alloc(16).expect("alloc");
    launch(&d, fault, [1; 3], [1; 3], &[], 0).expect("launch is asynchronous");
    let is_fault = |r: Result<()>| matches!(r, Err(Error::Fault(LaunchFault::IllegalAddress { .. })));
    assert!(is_fault(d.ctx_synchronize(0)));
    assert!(is_fault(d.ctx_synchronize(0)), "sticky");
    assert!(matches!(d.mem_alloc(16), Err(Error::Fault(_))));
    assert!(is_fault(d.memset(a, MemsetValue::U8(0), 16, 0, false, false)));
    assert!(matches!(d.stream_create(0, 0), Err(Error::Fault(_))));
    // Other contexts are unaffected.
    let other = d.ctx_create(0, 1).expect("another context");
    d.mem_alloc(16).expect("alloc in a healthy context");
    d.ctx_destroy(other).expect("destroy");
    // A reset of the primary context clears it.
    d.primary_ctx_reset(0).expect("reset");
    d.primary_ctx_retain(0).expect("retain");
    d.mem_alloc(16).expect("alloc after reset");
    d.ctx_synchronize(0).expect("healthy");
}

#[test]
fn cooperative_launches_are_limited_to_resident_blocks() {
    let d = with_ctx();
    let m = load(&d);
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    let per_sm = d.occupancy_max_active_blocks(fill, 256, 0, 0).expect("occupancy");
    let sms = d.device_attribute(DA::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0).expect("sms") as u32;
    assert!(per_sm >= 1);
    let buf = d.mem_alloc(4).expect("alloc");
    let (v, n) = (1u32, 1u32);
    let args = [&buf as *const u64 as *const _, &v as *const u32 as *const _, &n as *const u32 as *const _];
    let cfg = |blocks| LaunchConfig { grid: [blocks, 1, 1], block: [256, 1, 1], shared_bytes: 0, stream: 0, cooperative: true };
    let ok = unsafe { d.launch_kernel(fill, &cfg(per_sm as u32 * sms), KernelArgs::Pointers(args.as_ptr()), false) };
    assert!(ok.is_ok(), "{ok:?}");
    let big = unsafe { d.launch_kernel(fill, &cfg(per_sm as u32 * sms + 1), KernelArgs::Pointers(args.as_ptr()), false) };
    assert!(matches!(big, Err(Error::CooperativeLaunchTooLarge(_))), "{big:?}");
    d.ctx_synchronize(0).expect("sync");
}

#[test]
fn occupancy() {
    let d = with_ctx();
    let m = load(&d);
    let fill = d.module_get_function(m, "mock_fill_u32").expect("fn");
    let small = d.module_get_function(m, "small_block").expect("fn");
    let hog = d.module_get_function(m, "shared_hog").expect("fn");
    let p = d.device_props(0).expect("props").clone();
    assert_eq!(d.occupancy_max_active_blocks(fill, 1024, 0, 0), Ok((p.max_threads_per_multiprocessor / 1024) as i32));
    assert_eq!(d.occupancy_max_active_blocks(fill, 32, 0, 0), Ok(p.max_blocks_per_multiprocessor as i32));
    assert_eq!(d.occupancy_max_active_blocks(small, 256, 0, 0), Ok(0), "above .maxntid");
    assert_eq!(
        d.occupancy_max_active_blocks(hog, 32, 0, 0),
        Ok((p.shared_mem_per_multiprocessor / (40000 + p.reserved_shared_mem_per_block)) as i32)
    );
    assert!(d.occupancy_max_active_blocks(fill, 0, 0, 0).is_err());
    let (grid, block) = d.occupancy_max_potential_block_size(fill, None, 0, 0, 0).expect("potential");
    assert!(block > 0 && block <= 1024 && block % 32 == 0);
    assert_eq!(grid as u32 % p.multiprocessor_count, 0);
    let (_, block) = d.occupancy_max_potential_block_size(small, None, 0, 0, 0).expect("potential");
    assert!(block <= 128);
    let (_, block) = d.occupancy_max_potential_block_size(fill, None, 0, 100, 0).expect("potential");
    assert!(block <= 100);
    let f = |bs: i32| bs as usize * 64;
    let (_, block) = d.occupancy_max_potential_block_size(fill, Some(&f), 0, 0, 0).expect("potential with callback");
    assert!(block > 0);
    let avail = d.occupancy_available_dynamic_smem(fill, 2, 128).expect("available");
    assert!(avail > 0 && avail <= p.shared_mem_per_block_optin as usize);
}

#[test]
fn context_local_storage() {
    let d = driver();
    assert_eq!(d.cls_get(0, 1), Err(Error::InvalidContext));
    let c = d.primary_ctx_retain(0).expect("retain");
    d.ctx_set_current(c).expect("current");
    assert!(matches!(d.cls_get(0, 1), Err(Error::InvalidHandle(_))));
    let dropped = Arc::new(AtomicU32::new(0));
    let dd = dropped.clone();
    d.cls_insert(
        0,
        1,
        1234,
        Some(Box::new(move || {
            dd.fetch_add(1, Ordering::SeqCst);
        })),
    )
    .expect("insert");
    assert_eq!(d.cls_get(0, 1), Ok(1234));
    assert_eq!(d.cls_get(c, 1), Ok(1234));
    d.primary_ctx_release(0).expect("release");
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "the destructor runs when the context goes");
    d.primary_ctx_retain(0).expect("retain");
    assert!(matches!(d.cls_get(0, 1), Err(Error::InvalidHandle(_))));
    d.cls_insert(0, 2, 5, None).expect("insert");
    d.cls_remove(0, 2).expect("remove");
    assert!(matches!(d.cls_remove(0, 2), Err(Error::InvalidHandle(_))));
}

#[test]
fn stream_ordered_allocation() {
    let d = with_ctx();
    let s = d.stream_create(0, 0).expect("s");
    let p = d.mem_alloc_async(1024, None, s, false).expect("alloc async");
    let pool = d.device_get_mem_pool(0).expect("pool");
    assert_eq!(d.device_default_mem_pool(0), Ok(pool));
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p), Ok(PointerAttribute::U64(pool)));
    assert_eq!(d.mem_pool_get_attribute(pool, 7), Ok(PoolAttribute::U64(1024)));
    d.memset(p, MemsetValue::U8(1), 1024, s, false, true).expect("memset async");
    d.mem_free_async(p, s, false).expect("free async");
    assert!(d.mem_free_async(p, s, false).is_err(), "double free");
    d.stream_synchronize(s, false).expect("sync");
    assert_eq!(d.mem_pool_get_attribute(pool, 7), Ok(PoolAttribute::U64(0)));
    d.mem_pool_set_attribute(pool, 4, 1 << 20).expect("threshold");
    assert_eq!(d.mem_pool_get_attribute(pool, 4), Ok(PoolAttribute::U64(1 << 20)));
    assert!(d.mem_pool_destroy(pool).is_err(), "default pool");
    let own = d.mem_pool_create(0).expect("pool");
    d.device_set_mem_pool(0, own).expect("set pool");
    let q = d.mem_alloc_async(64, None, s, false).expect("alloc from own pool");
    assert_eq!(d.pointer_attribute(PA::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q), Ok(PointerAttribute::U64(own)));
    d.mem_pool_destroy(own).expect("destroy");
    assert_eq!(d.device_get_mem_pool(0), Ok(pool));
    assert!(d.mem_alloc_async(64, Some(own), s, false).is_err());
}

#[test]
fn async_copies_from_pageable_memory_are_staged() {
    let d = with_ctx();
    let m = load(&d);
    let sleep = d.module_get_function(m, "mock_sleep").expect("fn");
    let s = d.stream_create(0, 0).expect("s");
    let a = d.mem_alloc(8).expect("alloc");
    let ms = 100u32;
    launch(&d, sleep, [1; 3], [1; 3], &[&ms as *const u32 as *const _], s).expect("launch");
    let mut host = [1u8; 8];
    unsafe { d.memcpy_htod(a, host.as_ptr() as usize, 8, s, false, true).expect("async") };
    host = [2u8; 8];
    let mut back = [0u8; 8];
    unsafe { d.memcpy_dtoh(back.as_mut_ptr() as usize, a, 8, s, false, true).expect("async to pageable is synchronous") };
    assert_eq!(back, [1u8; 8], "the copy must see the buffer as it was at the call");
    assert_eq!(host, [2u8; 8]);
}

#[test]
fn linking_a_single_ptx_input() {
    let d = with_ctx();
    let l = d.link_create(ModuleOptions::default()).expect("link");
    let mut log = JitLog::default();
    assert!(d.link_complete(l, &mut log).is_err());
    d.link_add(l, ModuleSource::Ptx(PTX), "a.ptx", false, &mut log).expect("add");
    let (p, n) = d.link_complete(l, &mut log).expect("complete");
    // SAFETY: the link state owns the image until destroyed.
    let image = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
    assert_eq!(image.last(), Some(&0));
    let text = std::str::from_utf8(&image[..n - 1]).unwrap_or("");
    let m = d.module_load(ModuleSource::Ptx(text), ModuleOptions::default(), &mut log).expect("load linked");
    assert!(d.module_get_function(m, "mock_fill_u32").is_ok());
    // The same module twice defines every kernel twice.
    d.link_add(l, ModuleSource::Ptx(PTX), "b.ptx", false, &mut log).expect("add");
    assert!(matches!(d.link_complete(l, &mut log), Err(Error::InvalidPtx(_))));
    assert!(log.error.contains("Multiple definition of 'mock_fill_u32' in 'b.ptx', first defined in 'a.ptx'"), "{}", log.error);
    d.link_destroy(l).expect("destroy");
    assert!(d.link_destroy(l).is_err());
}

const PTX_CALLER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
    .extern .func (.param .b32 r) scale(.param .b32 x);\n\
    .visible .entry mock_fault() { .reg .b32 %r<2>; { .param .b32 a; .param .b32 b; st.param.b32 [a], %r0; \
    call (b), scale, (a); ld.param.b32 %r1, [b]; } ret; }\n";
const PTX_CALLEE: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\
    .visible .func (.param .b32 r) scale(.param .b32 x) { .reg .b32 %r<2>; ld.param.b32 %r0, [x]; \
    st.param.b32 [r], %r0; ret; }\n";

#[test]
fn prelinked_fatbins_of_an_rdc_program_are_linked() {
    let d = with_ctx();
    // nvlink's fatbin: machine code only; each prelinked fatbin: PTX.
    let main = fatbin_with(&[(2, 80, b"\x7fELF-not-really")]);
    let a = fatbin_with(&[(1, 80, format!("{PTX_CALLER}\0").as_bytes())]);
    let b = fatbin_with(&[(1, 80, format!("{PTX_CALLEE}\0").as_bytes())]);
    let main = fatbin::Image::parse(&main).expect("main");
    let parts = [fatbin::Image::parse(&a).expect("a"), fatbin::Image::parse(&b).expect("b")];
    let mut log = JitLog::default();
    let m = d.module_load(ModuleSource::Prelinked { image: &main, parts: &parts }, ModuleOptions::default(), &mut log).expect("linked");
    assert!(d.module_get_function(m, "mock_fault").is_ok());
    assert!(log.info.contains("linked 2 input(s)"), "{}", log.info);
    // Without the callee the link fails, naming the symbol.
    let mut log = JitLog::default();
    let r = d.module_load(ModuleSource::Prelinked { image: &main, parts: &parts[..1] }, ModuleOptions::default(), &mut log);
    assert!(matches!(r, Err(Error::InvalidPtx(_))), "{r:?}");
    assert!(log.error.contains("Undefined reference to 'scale' in 'prelinked fatbin 1'"), "{}", log.error);
    // Without prelinked fatbins, the image alone has no PTX.
    let r = d.module_load(ModuleSource::Prelinked { image: &main, parts: &[] }, ModuleOptions::default(), &mut JitLog::default());
    assert!(matches!(r, Err(Error::NoBinaryForGpu(_))), "{r:?}");
}

#[test]
fn archive_members_without_ptx_are_left_out() {
    let d = with_ctx();
    let l = d.link_create(ModuleOptions { verbose: true, ..ModuleOptions::default() }).expect("link");
    let sass = fatbin_with(&[(2, 80, b"\x7fELF-not-really")]);
    let sass = fatbin::Image::parse(&sass).expect("sass");
    let mut log = JitLog::default();
    d.link_add(l, ModuleSource::Image(&sass), "libdevrt.a:x.o", true, &mut log).expect("a member without PTX is skipped");
    assert!(log.info.contains("libdevrt.a:x.o left out"), "{}", log.info);
    // Not as a direct input.
    let r = d.link_add(l, ModuleSource::Image(&sass), "x.o", false, &mut JitLog::default());
    assert!(matches!(r, Err(Error::NoBinaryForGpu(_))), "{r:?}");
    d.link_add(l, ModuleSource::Ptx(PTX_CALLER), "a.ptx", false, &mut log).expect("add");
    d.link_add(l, ModuleSource::Ptx(PTX_CALLEE), "lib.a:b.o", true, &mut log).expect("add");
    d.link_add(l, ModuleSource::Ptx(PTX), "lib.a:unused.o", true, &mut log).expect("add");
    let mut log = JitLog::default();
    d.link_complete(l, &mut log).expect("links");
    assert!(log.info.contains("linked 2 input(s): a.ptx, lib.a:b.o"), "{}", log.info);
}

#[test]
fn fatbins_pick_ptx_and_refuse_sass_only() {
    let d = with_ctx();
    // A minimal fatbin: one raw PTX entry for compute_80.
    let ptx = format!("{PTX}\0");
    let fb = fatbin_with(&[(1, 80, ptx.as_bytes())]);
    let img = fatbin::Image::parse(&fb).expect("parse");
    let mut log = JitLog::default();
    let m = d.module_load(ModuleSource::Image(&img), ModuleOptions::default(), &mut log).expect("load fatbin");
    assert!(log.info.contains("compute_80"), "{}", log.info);
    assert!(d.module_get_function(m, "mock_sleep").is_ok());
    // A fatbin with only an ELF entry.
    let elf = fatbin_with(&[(2, 80, &[0x7f, b'E', b'L', b'F', 0, 0, 0, 0])]);
    let img = fatbin::Image::parse(&elf).expect("parse");
    let mut log = JitLog::default();
    let r = d.module_load(ModuleSource::Image(&img), ModuleOptions::default(), &mut log);
    assert!(matches!(r, Err(Error::NoBinaryForGpu(_))), "{r:?}");
    assert!(log.error.contains("SASS") && log.error.contains("sm_80"), "{}", log.error);
    assert!(!log.error.contains("ANYCUDA_COMPUTE_CAPABILITY"), "{}", log.error);
    // Machine code of exactly the device's architecture: a library chose
    // it for the device, and may have PTX for other devices.
    let cc = d.device_props(0).expect("props").compute_capability();
    let elf = fatbin_with(&[(2, cc, &[0x7f, b'E', b'L', b'F', 0, 0, 0, 0])]);
    let img = fatbin::Image::parse(&elf).expect("parse");
    let mut log = JitLog::default();
    let r = d.module_load(ModuleSource::Image(&img), ModuleOptions::default(), &mut log);
    assert!(matches!(r, Err(Error::NoBinaryForGpu(_))), "{r:?}");
    assert!(log.error.contains("ANYCUDA_COMPUTE_CAPABILITY=8.8 may make it choose its PTX"), "{}", log.error);
}

/// A fatbin of raw entries `(kind, arch, payload)`.
fn fatbin_with(entries: &[(u16, u32, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (kind, arch, payload) in entries {
        let header_size = if *kind == 1 { 0x50u32 } else { 0x40 };
        let padded = payload.len().next_multiple_of(8);
        let mut h = vec![0u8; header_size as usize];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&header_size.to_le_bytes());
        h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        h[0x18..0x1c].copy_from_slice(&((8u32 << 16) | 6).to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
        if *kind == 1 {
            h[0x38..0x40].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        }
        body.extend_from_slice(&h);
        body.extend_from_slice(payload);
        body.resize(body.len() + padded - payload.len(), 0);
    }
    let mut fb = Vec::new();
    fb.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fb.extend_from_slice(&1u16.to_le_bytes());
    fb.extend_from_slice(&0x10u16.to_le_bytes());
    fb.extend_from_slice(&(body.len() as u64).to_le_bytes());
    fb.extend_from_slice(&body);
    fb
}

#[test]
fn a_stream_is_done_once_its_last_recorded_event_is() {
    let d = with_ctx();
    let s = d.stream_create(1, 0).expect("stream");
    let e = d.event_create(0).expect("event");
    let counter = Arc::new(AtomicU32::new(0));
    // The window between an event completing and its stream counting the
    // record is short: many rounds make a missing order show.
    for round in 0..2000 {
        let c = counter.clone();
        d.launch_host_func(
            s,
            false,
            Box::new(move || {
                c.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .expect("host fn");
        d.event_record(e, s, false, 0).expect("record");
        d.event_synchronize(e).expect("sync");
        assert_eq!(d.stream_query(s, false), Ok(()), "round {round}");
    }
    assert_eq!(counter.load(Ordering::SeqCst), 2000);
}

#[test]
fn peer_access_reaches_the_backend_once_per_device_pair() {
    let m = Arc::new(MockBackend::with_builtins(2));
    let d = Driver::new(m.clone(), Config::default());
    d.init(0).expect("init");
    let log = || m.peer_log.lock().map(|l| l.clone()).unwrap_or_default();
    let peer = d.primary_ctx_retain(1).expect("device 1");
    let a = d.ctx_create(0, 0).expect("first context of device 0");
    d.ctx_enable_peer_access(peer, 0).expect("enable from the first");
    assert_eq!(log(), [(true, 0, 1)]);
    assert_eq!(d.ctx_enable_peer_access(peer, 0), Err(Error::PeerAccessAlreadyEnabled));
    let b = d.ctx_create(0, 0).expect("second context of device 0");
    d.ctx_enable_peer_access(peer, 0).expect("enable from the second");
    assert_eq!(log(), [(true, 0, 1)], "device 0 already had access");
    d.ctx_disable_peer_access(peer).expect("disable from the second");
    assert_eq!(d.ctx_disable_peer_access(peer), Err(Error::PeerAccessNotEnabled));
    assert_eq!(log(), [(true, 0, 1)], "the first context still has access");
    d.ctx_enable_peer_access(peer, 0).expect("enable again from the second");
    d.ctx_destroy(b).expect("destroy the second");
    assert_eq!(log(), [(true, 0, 1)]);
    d.ctx_set_current(a).expect("current");
    d.ctx_destroy(a).expect("destroying the last context with access disables it");
    assert_eq!(log(), [(true, 0, 1), (false, 0, 1)]);
}
