//! The exported HIP functions, with ROCm 6's C signatures.
//!
//! Streams execute their work when it is enqueued: an asynchronous copy,
//! memset, launch or host function has finished when its call returns, so
//! synchronising and querying streams and events only check their handles,
//! and an event's time is taken when it is recorded. Which stream each
//! operation was enqueued on is traced ([`anycuda_hip_emulated_trace`]),
//! so tests can see that a caller really uses streams.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::time::Instant;

use crate::device::{self, DevicePropR0600, TOTAL_MEMORY};
use crate::emulator::LaunchRecord;
use crate::error::{self, fail, HipError, Result};
use crate::log::{debug, info};
use crate::memory::Kind;
use crate::runtime::{call, current_device, last_error, runtime, set_current_device, Event, Stream, DYNAMIC_STACK_BYTES};

/// `HIP_VERSION` of ROCm 6.2.4 (major * 10^7 + minor * 10^5 + patch).
const HIP_VERSION: c_int = 60_241_134;
/// `hipStreamPerThread`.
const STREAM_PER_THREAD: u64 = 2;

macro_rules! api {
    (fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            call(stringify!($name), #[allow(unused_unsafe)] || -> Result<()> { unsafe { $body } })
        }
    };
}

/// Writes through an out-pointer, refusing NULL.
unsafe fn out<T>(p: *mut T, v: T, what: &str) -> Result<()> {
    if p.is_null() {
        fail!(error::INVALID_VALUE, "{what}: NULL output pointer");
    }
    // SAFETY: the caller's out-pointer, not NULL.
    unsafe { p.write(v) };
    Ok(())
}

fn check_stream(stream: *mut c_void, what: &str) -> Result<()> {
    let s = stream as u64;
    if s == 0 || s == STREAM_PER_THREAD || runtime().objects().streams.contains_key(&s) {
        return Ok(());
    }
    fail!(error::INVALID_HANDLE, "{what}: {s:#x} is not a stream")
}

// ---------------------------------------------------------------------------
// Initialisation, versions, devices
// ---------------------------------------------------------------------------

api! { fn hipInit(flags: c_uint) {
    if flags != 0 {
        fail!(error::INVALID_VALUE, "hipInit: flags must be 0, got {flags}");
    }
    runtime().arch().map(|_| ())
}}

api! { fn hipDriverGetVersion(version: *mut c_int) {
    out(version, HIP_VERSION, "hipDriverGetVersion")
}}

api! { fn hipRuntimeGetVersion(version: *mut c_int) {
    out(version, HIP_VERSION, "hipRuntimeGetVersion")
}}

api! { fn hipGetDeviceCount(count: *mut c_int) {
    match runtime().arch() {
        Ok(_) => out(count, runtime().devices, "hipGetDeviceCount"),
        Err(e) => {
            out(count, 0, "hipGetDeviceCount")?;
            Err(e)
        }
    }
}}

api! { fn hipSetDevice(ordinal: c_int) {
    runtime().device(ordinal)?;
    set_current_device(ordinal);
    Ok(())
}}

api! { fn hipGetDevice(ordinal: *mut c_int) {
    runtime().arch()?;
    out(ordinal, current_device(), "hipGetDevice")
}}

api! { fn hipDeviceGetAttribute(value: *mut c_int, attribute: c_int, ordinal: c_int) {
    let arch = runtime().device(ordinal)?;
    if value.is_null() {
        fail!(error::INVALID_VALUE, "hipDeviceGetAttribute: NULL output pointer");
    }
    out(value, device::attribute(arch, ordinal, attribute)?, "hipDeviceGetAttribute")
}}

api! { fn hipDeviceGetName(name: *mut c_char, len: c_int, ordinal: c_int) {
    let arch = runtime().device(ordinal)?;
    if name.is_null() || len <= 0 {
        fail!(error::INVALID_VALUE, "hipDeviceGetName: NULL name or length {len}");
    }
    let text = arch.marketing_name().as_bytes();
    let n = text.len().min(len as usize - 1);
    // SAFETY: the caller's buffer of `len` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), name as *mut u8, n);
        *name.add(n) = 0;
    }
    Ok(())
}}

api! { fn hipDeviceTotalMem(bytes: *mut usize, ordinal: c_int) {
    runtime().device(ordinal)?;
    out(bytes, TOTAL_MEMORY, "hipDeviceTotalMem")
}}

api! { fn hipGetDevicePropertiesR0600(prop: *mut DevicePropR0600, ordinal: c_int) {
    let arch = runtime().device(ordinal)?;
    out(prop, device::properties(arch, ordinal), "hipGetDevicePropertiesR0600")
}}

api! { fn hipDeviceGetUuid(uuid: *mut [u8; 16], ordinal: c_int) {
    let arch = runtime().device(ordinal)?;
    out(uuid, arch.uuid(ordinal), "hipDeviceGetUuid")
}}

api! { fn hipDeviceGetPCIBusId(bus_id: *mut c_char, len: c_int, ordinal: c_int) {
    let arch = runtime().device(ordinal)?;
    let (domain, bus, dev) = arch.pci(ordinal);
    let text = format!("{domain:04x}:{bus:02x}:{dev:02x}.0");
    if bus_id.is_null() || len < text.len() as c_int + 1 {
        fail!(error::INVALID_VALUE, "hipDeviceGetPCIBusId: the buffer needs {} bytes, has {len}", text.len() + 1);
    }
    // SAFETY: the caller's buffer, long enough.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), bus_id as *mut u8, text.len());
        *bus_id.add(text.len()) = 0;
    }
    Ok(())
}}

api! { fn hipDeviceGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) {
    runtime().arch()?;
    if !least.is_null() {
        *least = 0;
    }
    if !greatest.is_null() {
        *greatest = -1;
    }
    Ok(())
}}

api! { fn hipDeviceSynchronize() {
    runtime().arch().map(|_| ())
}}

#[no_mangle]
pub extern "C" fn hipGetLastError() -> c_int {
    last_error(true)
}

#[no_mangle]
pub extern "C" fn hipPeekAtLastError() -> c_int {
    last_error(false)
}

#[no_mangle]
pub extern "C" fn hipGetErrorName(e: c_int) -> *const c_char {
    error::name(e).as_ptr()
}

#[no_mangle]
pub extern "C" fn hipGetErrorString(e: c_int) -> *const c_char {
    error::message(e).as_ptr()
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

unsafe fn allocate(ptr: *mut *mut c_void, size: usize, kind: Kind, what: &str) -> Result<()> {
    runtime().arch()?;
    if ptr.is_null() {
        fail!(error::INVALID_VALUE, "{what}: NULL output pointer");
    }
    let addr = if size == 0 { 0 } else { runtime().memory().allocate(size, kind, current_device())? };
    // SAFETY: checked not NULL.
    unsafe { *ptr = addr as *mut c_void };
    debug!("{what}({size}) = {addr:#x}");
    Ok(())
}

api! { fn hipMalloc(ptr: *mut *mut c_void, size: usize) {
    allocate(ptr, size, Kind::Device, "hipMalloc")
}}

api! { fn hipFree(ptr: *mut c_void) {
    runtime().arch()?;
    if ptr.is_null() {
        return Ok(());
    }
    runtime().memory().free(ptr as usize, &[Kind::Device, Kind::Managed], "hipFree")
}}

/// `hipHostMalloc` flags: portable, mapped, write-combined, uncached,
/// NUMA user, coherent, non-coherent.
const HOST_MALLOC_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x1000_0000 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;

api! { fn hipHostMalloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) {
    if flags & !HOST_MALLOC_FLAGS != 0 || flags & 0xC000_0000 == 0xC000_0000 {
        fail!(error::INVALID_VALUE, "hipHostMalloc: flags {flags:#x}");
    }
    allocate(ptr, size, Kind::Host, "hipHostMalloc")
}}

api! { fn hipHostFree(ptr: *mut c_void) {
    runtime().arch()?;
    if ptr.is_null() {
        return Ok(());
    }
    runtime().memory().free(ptr as usize, &[Kind::Host], "hipHostFree")
}}

api! { fn hipMallocManaged(ptr: *mut *mut c_void, size: usize, flags: c_uint) {
    // hipMemAttachGlobal or hipMemAttachHost.
    if flags != 1 && flags != 2 {
        fail!(error::INVALID_VALUE, "hipMallocManaged: flags {flags:#x} (hipMemAttachGlobal or hipMemAttachHost)");
    }
    if size == 0 {
        fail!(error::INVALID_VALUE, "hipMallocManaged: size 0");
    }
    allocate(ptr, size, Kind::Managed, "hipMallocManaged")
}}

api! { fn hipHostRegister(ptr: *mut c_void, size: usize, flags: c_uint) {
    runtime().arch()?;
    // Default, portable, mapped, I/O memory, read-only.
    if ptr.is_null() || size == 0 || flags & !0xF != 0 {
        fail!(error::INVALID_VALUE, "hipHostRegister({ptr:?}, {size}, {flags:#x})");
    }
    runtime().memory().register(ptr as usize, size)
}}

api! { fn hipHostUnregister(ptr: *mut c_void) {
    runtime().arch()?;
    if ptr.is_null() {
        fail!(error::INVALID_VALUE, "hipHostUnregister(NULL)");
    }
    runtime().memory().unregister(ptr as usize)
}}

api! { fn hipHostGetDevicePointer(dev: *mut *mut c_void, host: *mut c_void, flags: c_uint) {
    runtime().arch()?;
    if flags != 0 {
        fail!(error::INVALID_VALUE, "hipHostGetDevicePointer: flags must be 0, got {flags:#x}");
    }
    match runtime().memory().find(host as usize) {
        Some((_, _, Kind::Host | Kind::Registered)) => out(dev, host, "hipHostGetDevicePointer"),
        _ => fail!(error::INVALID_VALUE, "hipHostGetDevicePointer: {host:?} is not pinned or registered host memory"),
    }
}}

api! { fn hipMemGetInfo(free: *mut usize, total: *mut usize) {
    runtime().arch()?;
    if free.is_null() || total.is_null() {
        fail!(error::INVALID_VALUE, "hipMemGetInfo: NULL output pointer");
    }
    *free = runtime().memory().free_bytes(current_device());
    *total = TOTAL_MEMORY;
    Ok(())
}}

/// Checks a copy's pointers against its direction, then copies.
unsafe fn memcpy(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int, what: &str) -> Result<()> {
    runtime().arch()?;
    if !(0..=4).contains(&kind) {
        fail!(error::INVALID_MEMCPY_DIRECTION, "{what}: hipMemcpyKind {kind}");
    }
    if size == 0 {
        return Ok(());
    }
    if dst.is_null() || src.is_null() {
        fail!(error::INVALID_VALUE, "{what}: NULL pointer");
    }
    {
        let m = runtime().memory();
        let (d, s) = (dst as usize, src as usize);
        match kind {
            1 => m.check_device_range(d, size, what)?,
            2 => m.check_device_range(s, size, what)?,
            3 => {
                m.check_device_range(d, size, what)?;
                m.check_device_range(s, size, what)?;
            }
            4 => {
                // Default: the pointers say where they are; known ranges must hold the copy.
                for p in [d, s] {
                    if m.find(p).is_some() {
                        m.check_device_range(p, size, what)?;
                    }
                }
            }
            _ => {}
        }
    }
    // SAFETY: device sides were checked against their allocations; host
    // sides are the caller's memory.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
    Ok(())
}

/// Operations of the trace ([`anycuda_hip_emulated_trace`]).
pub mod op {
    pub const MEMCPY: u64 = 1;
    pub const MEMSET: u64 = 2;
    pub const LAUNCH: u64 = 3;
    pub const RECORD: u64 = 4;
    pub const WAIT: u64 = 5;
    pub const HOST_FUNC: u64 = 6;
    /// `hipModuleLoadData` (traced as [`super::SYNCHRONOUS`]).
    pub const MODULE_LOAD: u64 = 7;
}
/// The "stream" of a synchronous call in the trace.
pub const SYNCHRONOUS: u64 = u64::MAX;

fn trace(stream: u64, op: u64) {
    runtime().objects().trace.push((stream, op));
}

/// Test support, not a HIP function: copies the trace of enqueued
/// operations, as `(stream, operation)` pairs of `u64`s (the stream handle,
/// 0 for the null stream or [`SYNCHRONOUS`] for a synchronous call; the
/// operation, one of [`op`]), into `out` (room for `capacity` pairs), and
/// returns how many pairs the trace holds.
///
/// # Safety
/// `out` must have room for `capacity` pairs (or be NULL with 0).
#[no_mangle]
pub unsafe extern "C" fn anycuda_hip_emulated_trace(out: *mut u64, capacity: usize) -> usize {
    let o = runtime().objects();
    if !out.is_null() {
        for (i, &(stream, op)) in o.trace.iter().take(capacity).enumerate() {
            // SAFETY: the caller's buffer has room for `capacity` pairs.
            unsafe {
                *out.add(2 * i) = stream;
                *out.add(2 * i + 1) = op;
            }
        }
    }
    o.trace.len()
}

api! { fn hipMemcpy(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int) {
    memcpy(dst, src, size, kind, "hipMemcpy")?;
    trace(SYNCHRONOUS, op::MEMCPY);
    Ok(())
}}

api! { fn hipMemcpyAsync(dst: *mut c_void, src: *const c_void, size: usize, kind: c_int, stream: *mut c_void) {
    check_stream(stream, "hipMemcpyAsync")?;
    memcpy(dst, src, size, kind, "hipMemcpyAsync")?;
    trace(stream as u64, op::MEMCPY);
    Ok(())
}}

unsafe fn memset(dst: *mut c_void, value: u32, count: usize, width: usize, what: &str) -> Result<()> {
    runtime().arch()?;
    if count == 0 {
        return Ok(());
    }
    if !(dst as usize).is_multiple_of(width) {
        fail!(error::INVALID_VALUE, "{what}: {dst:?} is not aligned to {width} bytes");
    }
    let Some(bytes) = count.checked_mul(width) else { fail!(error::INVALID_VALUE, "{what}: {count} elements overflow") };
    runtime().memory().check_device_range(dst as usize, bytes, what)?;
    // SAFETY: checked to lie in one allocation.
    unsafe {
        match width {
            1 => std::ptr::write_bytes(dst as *mut u8, value as u8, count),
            2 => std::slice::from_raw_parts_mut(dst as *mut u16, count).fill(value as u16),
            _ => std::slice::from_raw_parts_mut(dst as *mut u32, count).fill(value),
        }
    }
    Ok(())
}

api! { fn hipMemsetD8(dst: *mut c_void, value: u8, count: usize) {
    memset(dst, value.into(), count, 1, "hipMemsetD8")?;
    trace(SYNCHRONOUS, op::MEMSET);
    Ok(())
}}

api! { fn hipMemsetD16(dst: *mut c_void, value: u16, count: usize) {
    memset(dst, value.into(), count, 2, "hipMemsetD16")?;
    trace(SYNCHRONOUS, op::MEMSET);
    Ok(())
}}

api! { fn hipMemsetD32(dst: *mut c_void, value: c_int, count: usize) {
    memset(dst, value as u32, count, 4, "hipMemsetD32")?;
    trace(SYNCHRONOUS, op::MEMSET);
    Ok(())
}}

api! { fn hipMemsetD8Async(dst: *mut c_void, value: u8, count: usize, stream: *mut c_void) {
    check_stream(stream, "hipMemsetD8Async")?;
    memset(dst, value.into(), count, 1, "hipMemsetD8Async")?;
    trace(stream as u64, op::MEMSET);
    Ok(())
}}

api! { fn hipMemsetD16Async(dst: *mut c_void, value: u16, count: usize, stream: *mut c_void) {
    check_stream(stream, "hipMemsetD16Async")?;
    memset(dst, value.into(), count, 2, "hipMemsetD16Async")?;
    trace(stream as u64, op::MEMSET);
    Ok(())
}}

api! { fn hipMemsetD32Async(dst: *mut c_void, value: c_int, count: usize, stream: *mut c_void) {
    check_stream(stream, "hipMemsetD32Async")?;
    memset(dst, value as u32, count, 4, "hipMemsetD32Async")?;
    trace(stream as u64, op::MEMSET);
    Ok(())
}}

// ---------------------------------------------------------------------------
// Modules and launches
// ---------------------------------------------------------------------------

api! { fn hipModuleLoadData(module: *mut *mut c_void, image: *const c_void) {
    runtime().arch()?;
    if module.is_null() || image.is_null() {
        fail!(error::INVALID_VALUE, "hipModuleLoadData: NULL module or image");
    }
    let len = crate::code_object::image_len(image as *const u8)?;
    // SAFETY: `len` bytes of the caller's image, measured from its headers.
    let bytes = std::slice::from_raw_parts(image as *const u8, len).to_vec();
    let handle = runtime().load_module(bytes)?;
    trace(SYNCHRONOUS, op::MODULE_LOAD);
    *module = handle as *mut c_void;
    Ok(())
}}

api! { fn hipModuleUnload(module: *mut c_void) {
    runtime().arch()?;
    runtime().unload_module(module as u64)
}}

api! { fn hipModuleGetFunction(function: *mut *mut c_void, module: *mut c_void, name: *const c_char) {
    runtime().arch()?;
    if function.is_null() || name.is_null() {
        fail!(error::INVALID_VALUE, "hipModuleGetFunction: NULL function or name");
    }
    let name = CStr::from_ptr(name).to_string_lossy();
    let h = runtime().function(module as u64, &name)?;
    *function = h as *mut c_void;
    Ok(())
}}

api! { fn hipModuleGetGlobal(dptr: *mut *mut c_void, bytes: *mut usize, module: *mut c_void, name: *const c_char) {
    runtime().arch()?;
    if name.is_null() {
        fail!(error::INVALID_VALUE, "hipModuleGetGlobal: NULL name");
    }
    let name = CStr::from_ptr(name).to_string_lossy();
    let m = runtime().objects().modules.get(&(module as u64)).cloned();
    let Some(m) = m else { fail!(error::INVALID_HANDLE, "module {:#x} is not loaded", module as u64) };
    let Some(&(value, size)) = m.symbols.get(name.as_ref()) else {
        fail!(error::NOT_FOUND, "module {:#x} has no global `{name}`", module as u64);
    };
    if value.saturating_add(size) > m.extent as u64 {
        fail!(error::INVALID_IMAGE, "global `{name}` lies outside the image");
    }
    if !dptr.is_null() {
        *dptr = (m.base + value as usize) as *mut c_void;
    }
    if !bytes.is_null() {
        *bytes = size as usize;
    }
    Ok(())
}}

/// `extra` markers of `hipModuleLaunchKernel`.
const LAUNCH_PARAM_BUFFER_POINTER: usize = 0x01;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 0x02;
const LAUNCH_PARAM_END: usize = 0x03;

/// Fills the hidden arguments the metadata lists.
fn hidden_args(kernarg: &mut [u8], args: &[crate::code_object::Arg], grid: [u32; 3], block: [u32; 3], dynamic_lds: u32) {
    let dims = if grid[2] * block[2] > 1 {
        3u16
    } else if grid[1] * block[1] > 1 {
        2
    } else {
        1
    };
    for a in args.iter().filter(|a| a.hidden()) {
        let axis = |k: &str| match k.chars().last() {
            Some('y') => 1,
            Some('z') => 2,
            _ => 0,
        };
        let value: u64 = match a.value_kind.as_str() {
            k if k.starts_with("hidden_block_count_") => grid[axis(k)].into(),
            k if k.starts_with("hidden_group_size_") => block[axis(k)].into(),
            // Every group is whole: the grid is counted in groups.
            k if k.starts_with("hidden_remainder_") || k.starts_with("hidden_global_offset_") => 0,
            "hidden_grid_dims" => dims.into(),
            "hidden_dynamic_lds_size" => dynamic_lds.into(),
            other => {
                info!("hidden kernel argument {other} is not provided by the emulated runtime: it reads as 0");
                0
            }
        };
        if a.offset + a.size <= kernarg.len() && a.size <= 8 {
            kernarg[a.offset..a.offset + a.size].copy_from_slice(&value.to_le_bytes()[..a.size]);
        }
    }
}

api! { fn hipModuleLaunchKernel(
    function: *mut c_void,
    grid_x: c_uint, grid_y: c_uint, grid_z: c_uint,
    block_x: c_uint, block_y: c_uint, block_z: c_uint,
    shared_bytes: c_uint, stream: *mut c_void,
    params: *mut *mut c_void, extra: *mut *mut c_void
) {
    launch(function, [grid_x, grid_y, grid_z], [block_x, block_y, block_z], shared_bytes, stream, params, extra, false)
}}

/// Work-groups of one cooperative launch the double runs at once (each has
/// an LDS window of its own, a reserved 4 GiB mapping).
pub const MAX_COOPERATIVE_GROUPS: u64 = 64;

api! { fn hipModuleLaunchCooperativeKernel(
    function: *mut c_void,
    grid_x: c_uint, grid_y: c_uint, grid_z: c_uint,
    block_x: c_uint, block_y: c_uint, block_z: c_uint,
    shared_bytes: c_uint, stream: *mut c_void,
    params: *mut *mut c_void
) {
    if params.is_null() {
        fail!(error::INVALID_VALUE, "hipModuleLaunchCooperativeKernel: NULL kernelParams");
    }
    launch(function, [grid_x, grid_y, grid_z], [block_x, block_y, block_z], shared_bytes, stream, params, std::ptr::null_mut(), true)
}}

/// `hipModuleLaunchKernel` and, `cooperative`, `hipModuleLaunchCooperativeKernel`.
unsafe fn launch(
    function: *mut c_void,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_bytes: c_uint,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
) -> Result<()> {
    let [grid_x, grid_y, grid_z] = grid;
    let [block_x, block_y, block_z] = block;
    let rt = runtime();
    let arch = rt.arch()?;
    let f = rt.objects().functions.get(&(function as u64)).cloned();
    let Some(f) = f else { fail!(error::INVALID_HANDLE, "{:#x} is not a kernel of a loaded module", function as u64) };
    check_stream(stream, "hipModuleLaunchKernel")?;
    let name = &f.meta.name;
    if grid.contains(&0) || block.contains(&0) {
        fail!(error::INVALID_VALUE, "`{name}`: grid {grid:?} and block {block:?} must not have a 0 dimension");
    }
    let threads = u64::from(block_x) * u64::from(block_y) * u64::from(block_z);
    let limit = f.meta.max_flat_workgroup_size.min(device::MAX_THREADS_PER_BLOCK);
    if threads > u64::from(limit) {
        fail!(error::INVALID_VALUE, "`{name}`: {threads} threads per block, the kernel allows {limit}");
    }
    for i in 0..3 {
        if u64::from(grid[i]) * u64::from(block[i]) > u64::from(u32::MAX) {
            fail!(error::INVALID_VALUE, "`{name}`: grid dimension {i} has more than 2^32 - 1 work-items");
        }
    }
    let lds = u64::from(f.desc.group_segment_fixed_size) + u64::from(shared_bytes);
    if lds > u64::from(device::LDS_BYTES) {
        fail!(
            error::INVALID_VALUE,
            "`{name}`: {lds} bytes of shared memory ({} static), the device has {}",
            f.desc.group_segment_fixed_size,
            device::LDS_BYTES
        );
    }
    if f.meta.wavefront_size != arch.wave_size() {
        fail!(
            error::NOT_SUPPORTED,
            "`{name}` is compiled for wave{}; the emulated {} runs wave{}",
            f.meta.wavefront_size,
            arch.gcn_arch_name(),
            arch.wave_size()
        );
    }
    if cooperative {
        let groups = u64::from(grid_x) * u64::from(grid_y) * u64::from(grid_z);
        let resident = device::resident_groups(arch, threads, lds);
        if groups > resident {
            fail!(error::COOPERATIVE_LAUNCH_TOO_LARGE, "`{name}`: {groups} work-groups, at most {resident} fit on the device at once");
        }
        if groups > MAX_COOPERATIVE_GROUPS {
            fail!(
                error::NOT_SUPPORTED,
                "`{name}`: {groups} work-groups in a cooperative launch; the double runs at most {MAX_COOPERATIVE_GROUPS} at once"
            );
        }
    }

    // The kernarg segment.
    let len = f.meta.kernarg_segment_size.max(f.desc.kernarg_size as usize);
    let mut kernarg = vec![0u8; len];
    let explicit: Vec<_> = f.meta.args.iter().filter(|a| !a.hidden()).collect();
    let explicit_end = explicit.iter().map(|a| a.offset + a.size).max().unwrap_or(0);
    if explicit_end > len {
        fail!(error::INVALID_IMAGE, "`{name}`: arguments reach byte {explicit_end} of a {len}-byte kernarg segment");
    }
    match (params.is_null(), extra.is_null()) {
        (false, false) => fail!(error::INVALID_VALUE, "`{name}`: both kernelParams and extra given"),
        (true, true) if !explicit.is_empty() => {
            fail!(error::INVALID_VALUE, "`{name}` takes arguments; neither kernelParams nor extra given")
        }
        (true, true) => {}
        (false, true) => {
            for (i, a) in explicit.iter().enumerate() {
                let p = *params.add(i);
                if p.is_null() {
                    fail!(error::INVALID_VALUE, "`{name}`: kernelParams[{i}] is NULL");
                }
                std::ptr::copy_nonoverlapping(p as *const u8, kernarg.as_mut_ptr().add(a.offset), a.size);
            }
        }
        (true, false) => {
            let (mut buffer, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
            let mut i = 0;
            loop {
                match *extra.add(i) as usize {
                    LAUNCH_PARAM_END => break,
                    LAUNCH_PARAM_BUFFER_POINTER => buffer = *extra.add(i + 1) as *const u8,
                    LAUNCH_PARAM_BUFFER_SIZE => {
                        let p = *extra.add(i + 1) as *const usize;
                        if p.is_null() {
                            fail!(error::INVALID_VALUE, "`{name}`: HIP_LAUNCH_PARAM_BUFFER_SIZE points at NULL");
                        }
                        size = Some(*p);
                    }
                    other => fail!(error::INVALID_VALUE, "`{name}`: extra[{i}] = {other:#x} is not a HIP_LAUNCH_PARAM_* marker"),
                }
                i += 2;
            }
            let Some(size) = size else { fail!(error::INVALID_VALUE, "`{name}`: extra has no HIP_LAUNCH_PARAM_BUFFER_SIZE") };
            if buffer.is_null() && size > 0 {
                fail!(error::INVALID_VALUE, "`{name}`: extra has no HIP_LAUNCH_PARAM_BUFFER_POINTER");
            }
            if size < explicit_end {
                fail!(error::INVALID_VALUE, "`{name}`: the argument buffer has {size} bytes, the arguments take {explicit_end}");
            }
            std::ptr::copy_nonoverlapping(buffer, kernarg.as_mut_ptr(), size.min(len));
        }
    }
    hidden_args(&mut kernarg, &f.meta.args, grid, block, shared_bytes);
    let device = stream_device(stream);
    check_device_of(&f, device)?;
    check_peer_arguments(name, &kernarg[..explicit_end], device)?;

    let fixed = u64::from(f.desc.private_segment_fixed_size);
    let private = if f.desc.uses_dynamic_stack() { fixed.max(DYNAMIC_STACK_BYTES) } else { fixed };
    let mut record = LaunchRecord {
        module: f.module,
        entry: f.entry as u64,
        kernel_object: f.kd as u64,
        kernarg: kernarg.as_ptr() as u64,
        kernarg_size: len as u64,
        grid: grid.map(u64::from),
        block: block.map(u64::from),
        group_fixed: f.desc.group_segment_fixed_size.into(),
        dynamic_lds: shared_bytes.into(),
        private_stride: private.next_multiple_of(16),
        rsrc1: f.desc.rsrc1.into(),
        rsrc2: f.desc.rsrc2.into(),
        properties: f.desc.properties.into(),
        wave64: arch.wave64().into(),
        dispatch_id: rt.next_dispatch_id(),
        cooperative: cooperative.into(),
        steps: 0,
    };
    let started = Instant::now();
    rt.with_emulator(|emu| {
        emu.launch(&mut record).map_err(|why| HipError::new(error::LAUNCH_FAILURE, format!("`{name}` failed on the emulator: {why}")))
    })
    .inspect_err(|e| info!("{}", e.why))?;
    debug!("`{name}` grid {grid:?} block {block:?}: {} instructions in {:.2?}", record.steps, started.elapsed());
    trace(stream as u64, op::LAUNCH);
    Ok(())
}

/// The device a stream's work runs on: the stream's own, or the calling
/// thread's current device for the null and per-thread streams.
fn stream_device(stream: *mut c_void) -> c_int {
    let s = stream as u64;
    runtime().objects().streams.get(&s).map_or_else(current_device, |st| st.device)
}

/// A kernel runs on the device its module was loaded on.
fn check_device_of(f: &crate::runtime::Function, device: c_int) -> Result<()> {
    let loaded = runtime().objects().modules.get(&f.module).map(|m| m.device);
    match loaded {
        Some(d) if d != device => {
            fail!(error::INVALID_DEVICE_FUNCTION, "`{}` belongs to a module loaded on device {d}, launched on device {device}", f.meta.name)
        }
        _ => Ok(()),
    }
}

/// A real device reaches another device's memory only once peer access is
/// enabled (the peer's memory is not in its page tables before): the
/// double, whose devices share the host's address space, takes an explicit
/// argument that points into memory of a device `device` has no access to
/// as such an access and fails the launch with `hipErrorIllegalAddress`
/// (stricter than hardware for a pointer the kernel never dereferences).
fn check_peer_arguments(name: &str, explicit: &[u8], device: c_int) -> Result<()> {
    let m = runtime().memory();
    let o = runtime().objects();
    for (i, word) in explicit.chunks_exact(8).enumerate() {
        let v = u64::from_le_bytes(word.try_into().unwrap_or_default()) as usize;
        match m.device_of(v) {
            Some(owner) if owner != device && !o.peers.contains(&(device, owner)) => fail!(
                error::ILLEGAL_ADDRESS,
                "`{name}` on device {device}: the argument at byte {} points into device {owner}'s memory ({v:#x}), and device {device} has no peer access to it",
                8 * i
            ),
            _ => {}
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Peer access
// ---------------------------------------------------------------------------

api! { fn hipDeviceCanAccessPeer(can: *mut c_int, ordinal: c_int, peer: c_int) {
    runtime().device(ordinal)?;
    runtime().device(peer)?;
    out(can, c_int::from(ordinal != peer), "hipDeviceCanAccessPeer")
}}

api! { fn hipDeviceEnablePeerAccess(peer: c_int, flags: c_uint) {
    let device = current_device();
    runtime().device(peer)?;
    if flags != 0 {
        fail!(error::INVALID_VALUE, "hipDeviceEnablePeerAccess: flags must be 0, got {flags:#x}");
    }
    if peer == device {
        fail!(error::INVALID_DEVICE, "hipDeviceEnablePeerAccess: device {device} is not its own peer");
    }
    if !runtime().objects().peers.insert((device, peer)) {
        fail!(error::PEER_ACCESS_ALREADY_ENABLED, "device {device} already has access to device {peer}");
    }
    info!("device {device} has access to device {peer}'s memory");
    Ok(())
}}

api! { fn hipDeviceDisablePeerAccess(peer: c_int) {
    let device = current_device();
    runtime().device(peer)?;
    if !runtime().objects().peers.remove(&(device, peer)) {
        fail!(error::PEER_ACCESS_NOT_ENABLED, "device {device} has no access to device {peer} to disable");
    }
    info!("device {device} no longer has access to device {peer}'s memory");
    Ok(())
}}

// ---------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------

fn create_stream(stream: *mut *mut c_void, flags: c_uint, priority: c_int, what: &str) -> Result<()> {
    runtime().arch()?;
    if stream.is_null() {
        fail!(error::INVALID_VALUE, "{what}: NULL output pointer");
    }
    // hipStreamDefault or hipStreamNonBlocking.
    if flags > 1 {
        fail!(error::INVALID_VALUE, "{what}: flags {flags:#x}");
    }
    let mut o = runtime().objects();
    let h = o.handle();
    o.streams.insert(h, Stream { device: current_device(), flags, priority: priority.clamp(-1, 0) });
    // SAFETY: checked not NULL.
    unsafe { *stream = h as *mut c_void };
    Ok(())
}

api! { fn hipStreamCreate(stream: *mut *mut c_void) {
    create_stream(stream, 0, 0, "hipStreamCreate")
}}

api! { fn hipStreamCreateWithFlags(stream: *mut *mut c_void, flags: c_uint) {
    create_stream(stream, flags, 0, "hipStreamCreateWithFlags")
}}

api! { fn hipStreamCreateWithPriority(stream: *mut *mut c_void, flags: c_uint, priority: c_int) {
    create_stream(stream, flags, priority, "hipStreamCreateWithPriority")
}}

api! { fn hipStreamGetPriority(stream: *mut c_void, priority: *mut c_int) {
    runtime().arch()?;
    check_stream(stream, "hipStreamGetPriority")?;
    let p = runtime().objects().streams.get(&(stream as u64)).map_or(0, |s| s.priority);
    out(priority, p, "hipStreamGetPriority")
}}

api! { fn hipStreamGetFlags(stream: *mut c_void, flags: *mut c_uint) {
    runtime().arch()?;
    check_stream(stream, "hipStreamGetFlags")?;
    let f = runtime().objects().streams.get(&(stream as u64)).map_or(0, |s| s.flags);
    out(flags, f, "hipStreamGetFlags")
}}

api! { fn hipStreamDestroy(stream: *mut c_void) {
    runtime().arch()?;
    if runtime().objects().streams.remove(&(stream as u64)).is_none() {
        fail!(error::INVALID_HANDLE, "hipStreamDestroy: {:#x} is not a created stream", stream as u64);
    }
    Ok(())
}}

api! { fn hipStreamSynchronize(stream: *mut c_void) {
    runtime().arch()?;
    check_stream(stream, "hipStreamSynchronize")
}}

api! { fn hipStreamQuery(stream: *mut c_void) {
    runtime().arch()?;
    check_stream(stream, "hipStreamQuery")
}}

api! { fn hipStreamWaitEvent(stream: *mut c_void, event: *mut c_void, flags: c_uint) {
    runtime().arch()?;
    check_stream(stream, "hipStreamWaitEvent")?;
    if flags != 0 {
        fail!(error::INVALID_VALUE, "hipStreamWaitEvent: flags must be 0, got {flags:#x}");
    }
    if !runtime().objects().events.contains_key(&(event as u64)) {
        fail!(error::INVALID_HANDLE, "hipStreamWaitEvent: {:#x} is not an event", event as u64);
    }
    trace(stream as u64, op::WAIT);
    Ok(())
}}

type HostFn = unsafe extern "C" fn(*mut c_void);

api! { fn hipLaunchHostFunc(stream: *mut c_void, f: Option<HostFn>, data: *mut c_void) {
    runtime().arch()?;
    check_stream(stream, "hipLaunchHostFunc")?;
    let Some(f) = f else { fail!(error::INVALID_VALUE, "hipLaunchHostFunc: NULL function") };
    trace(stream as u64, op::HOST_FUNC);
    // The stream's earlier work is done: the function runs now, holding no lock.
    f(data);
    Ok(())
}}

/// hipEventDefault, BlockingSync, DisableTiming, Interprocess,
/// DisableSystemFence, ReleaseToDevice, ReleaseToSystem.
const EVENT_FLAGS: c_uint = 0x1 | 0x2 | 0x4 | 0x2000_0000 | 0x4000_0000 | 0x8000_0000;
const EVENT_DISABLE_TIMING: c_uint = 0x2;
const EVENT_INTERPROCESS: c_uint = 0x4;

fn create_event(event: *mut *mut c_void, flags: c_uint, what: &str) -> Result<()> {
    runtime().arch()?;
    if event.is_null() {
        fail!(error::INVALID_VALUE, "{what}: NULL output pointer");
    }
    if flags & !EVENT_FLAGS != 0 || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0) {
        fail!(error::INVALID_VALUE, "{what}: flags {flags:#x}");
    }
    let mut o = runtime().objects();
    let h = o.handle();
    o.events.insert(h, Event { flags, recorded: None });
    // SAFETY: checked not NULL.
    unsafe { *event = h as *mut c_void };
    Ok(())
}

api! { fn hipEventCreate(event: *mut *mut c_void) {
    create_event(event, 0, "hipEventCreate")
}}

api! { fn hipEventCreateWithFlags(event: *mut *mut c_void, flags: c_uint) {
    create_event(event, flags, "hipEventCreateWithFlags")
}}

fn with_event<T>(event: *mut c_void, what: &str, f: impl FnOnce(&mut Event) -> Result<T>) -> Result<T> {
    runtime().arch()?;
    let mut o = runtime().objects();
    let Some(e) = o.events.get_mut(&(event as u64)) else { fail!(error::INVALID_HANDLE, "{what}: {:#x} is not an event", event as u64) };
    f(e)
}

api! { fn hipEventDestroy(event: *mut c_void) {
    runtime().arch()?;
    if runtime().objects().events.remove(&(event as u64)).is_none() {
        fail!(error::INVALID_HANDLE, "hipEventDestroy: {:#x} is not an event", event as u64);
    }
    Ok(())
}}

api! { fn hipEventRecord(event: *mut c_void, stream: *mut c_void) {
    check_stream(stream, "hipEventRecord")?;
    with_event(event, "hipEventRecord", |e| {
        e.recorded = Some(Instant::now());
        Ok(())
    })?;
    trace(stream as u64, op::RECORD);
    Ok(())
}}

api! { fn hipEventSynchronize(event: *mut c_void) {
    with_event(event, "hipEventSynchronize", |_| Ok(()))
}}

api! { fn hipEventQuery(event: *mut c_void) {
    with_event(event, "hipEventQuery", |_| Ok(()))
}}

api! { fn hipEventElapsedTime(ms: *mut f32, start: *mut c_void, stop: *mut c_void) {
    runtime().arch()?;
    if ms.is_null() {
        fail!(error::INVALID_VALUE, "hipEventElapsedTime: NULL output pointer");
    }
    let times = {
        let o = runtime().objects();
        let mut t = [None; 2];
        for (slot, h) in t.iter_mut().zip([start, stop]) {
            let Some(e) = o.events.get(&(h as u64)) else { fail!(error::INVALID_HANDLE, "hipEventElapsedTime: {:#x} is not an event", h as u64) };
            if e.flags & EVENT_DISABLE_TIMING != 0 {
                fail!(error::INVALID_HANDLE, "hipEventElapsedTime: event {:#x} was created with hipEventDisableTiming", h as u64);
            }
            let Some(at) = e.recorded else { fail!(error::INVALID_HANDLE, "hipEventElapsedTime: event {:#x} was never recorded", h as u64) };
            *slot = Some(at);
        }
        t
    };
    let (Some(a), Some(b)) = (times[0], times[1]) else { fail!(error::INVALID_HANDLE, "hipEventElapsedTime: events not recorded") };
    let d = if b >= a { b.duration_since(a).as_secs_f64() } else { -a.duration_since(b).as_secs_f64() };
    *ms = (d * 1e3) as f32;
    Ok(())
}}
