//! `cuGetExportTable`: the driver's private tables that NVIDIA's cudart
//! asks for by UUID (see the project's notes on the cudart contract).
//!
//! Each table is a static array of pointer-sized slots; slot 0 of most is
//! the table's size in bytes. Slots cudart is not known to call hold
//! functions that log their table and slot and return
//! `CUDA_ERROR_NOT_SUPPORTED`, so an unexpected call is visible in the
//! trace instead of jumping to garbage.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, c_void};

use cuda_types::*;
use driver::Error;

use crate::md2::hmac_md2;
use crate::trace::{log, Level};
use crate::util::{api, drv, Out};

/// A table as cudart sees it.
#[repr(C)]
pub struct Table<const N: usize>(pub [*const c_void; N]);
// SAFETY: immutable after construction; the pointers are code addresses
// and constants.
unsafe impl<const N: usize> Sync for Table<N> {}

/// A slot nobody is known to call.
extern "C" fn unknown_slot<const TABLE: usize, const SLOT: usize>() -> CUresult {
    static SEEN: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());
    let first = {
        let mut s = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let new = !s.contains(&(TABLE, SLOT));
        if new {
            s.push((TABLE, SLOT));
        }
        new
    };
    let level = if first { Level::Warn } else { Level::Trace };
    log(level, &format!("export table {TABLE} slot {SLOT} called; not implemented"));
    CUresult::CUDA_ERROR_NOT_SUPPORTED
}

const fn size(n: usize) -> *const c_void {
    n as *const c_void
}

macro_rules! u {
    ($t:literal, $s:literal) => {
        unknown_slot::<$t, $s> as *const c_void
    };
}

// ---- 0: logging (f8cff951) ----

extern "C" fn log_message(category: c_int, level: c_int, fmt: *const c_char, _args: *mut c_void) -> CUresult {
    if crate::trace::enabled(Level::Info) && !fmt.is_null() {
        // SAFETY: cudart passes a NUL-terminated format string.
        let f = unsafe { std::ffi::CStr::from_ptr(fmt) }.to_string_lossy();
        log(Level::Info, &format!("cudart log (category {category}, level {level}): {}", f.trim_end()));
    }
    CUresult::CUDA_SUCCESS
}

extern "C" fn log_toggle(_on: c_int) -> CUresult {
    CUresult::CUDA_SUCCESS
}

pub static LOGGING: Table<3> = Table([size(0x18), log_message as *const c_void, log_toggle as *const c_void]);

// ---- 1: CUDART_INTERFACE (6bd5fb6c) ----

/// Slot 2: the device's primary context, not retained.
extern "C" fn primary_context(out: *mut CUcontext, dev: CUdevice) -> CUresult {
    crate::trace::call("CUDART_INTERFACE[2]", &[("dev", &dev)], || {
        let o = Out::new(out, "out")?;
        o.set(CUcontext::from_addr(drv()?.primary_ctx_handle(dev)? as usize));
        Ok(())
    })
}

/// Slot 12 (13.x shared cudart): takes nothing, must succeed.
extern "C" fn interface_slot12() -> CUresult {
    CUresult::CUDA_SUCCESS
}

pub static CUDART_INTERFACE: Table<13> = Table([
    size(0x68),
    u!(1, 1),
    primary_context as *const c_void,
    u!(1, 3),
    u!(1, 4),
    u!(1, 5),
    u!(1, 6),
    u!(1, 7),
    u!(1, 8),
    u!(1, 9),
    u!(1, 10),
    u!(1, 11),
    interface_slot12 as *const c_void,
]);

// ---- 2: tools callback hooks (a094798c) ----

/// Zeroed scratch buffers cudart's tools support writes into.
struct Scratch<const N: usize>(UnsafeCell<[u8; N]>);
// SAFETY: handed to cudart as raw memory; Rust never reads it.
unsafe impl<const N: usize> Sync for Scratch<N> {}

static HOOK_BUF_2: Scratch<1024> = Scratch(UnsafeCell::new([0; 1024]));
static HOOK_BUF_6: Scratch<14> = Scratch(UnsafeCell::new([0; 14]));

extern "C" fn hooks_slot2(buf: *mut *mut c_void, len: *mut usize) -> CUresult {
    if buf.is_null() || len.is_null() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: non-NULL out-pointers from cudart.
    unsafe {
        *buf = HOOK_BUF_2.0.get().cast();
        *len = 1024;
    }
    CUresult::CUDA_SUCCESS
}

extern "C" fn hooks_slot6(buf: *mut *mut c_void, len: *mut usize) -> CUresult {
    if buf.is_null() || len.is_null() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: as above.
    unsafe {
        *buf = HOOK_BUF_6.0.get().cast();
        *len = 14;
    }
    CUresult::CUDA_SUCCESS
}

pub static TOOLS_HOOKS: Table<7> =
    Table([size(0x38), u!(2, 1), hooks_slot2 as *const c_void, u!(2, 3), u!(2, 4), u!(2, 5), hooks_slot6 as *const c_void]);

// ---- 3: tools TLS (42d85a81) ----

pub static TOOLS_TLS: Table<3> = Table([size(0x18), u!(3, 1), u!(3, 2)]);

// ---- 4: the 13.x table no slot of which is used (21318c60) ----

const UNKNOWN4: *const c_void = u!(4, 0);
pub static UNKNOWN_13: Table<93> = {
    let mut t = [UNKNOWN4; 93];
    t[0] = size(0x2e8);
    Table(t)
};

// ---- 5: context-local storage (c693336e) ----

type ClsDtorFn = Option<unsafe extern "C" fn(CUcontext, *mut c_void, *mut c_void)>;

#[derive(Clone, Copy)]
struct SendVal(usize);
// SAFETY: opaque values cudart gives and gets back.
unsafe impl Send for SendVal {}

extern "C" fn cls_insert(ctx: CUcontext, key: *mut c_void, value: *mut c_void, dtor: ClsDtorFn) -> CUresult {
    crate::trace::call("CLS.insert", &[("ctx", &ctx), ("key", &key), ("value", &value)], || {
        let d = drv()?;
        let c = ctx.addr() as u64;
        let owner = if c == 0 { d.ctx_get_current()?.unwrap_or(0) } else { c };
        let (k, v) = (SendVal(key as usize), SendVal(value as usize));
        let dtor = dtor.map(|f| {
            Box::new(move || {
                let (k, v) = (k, v);
                // SAFETY: cudart's destructor with the values it stored.
                unsafe { f(CUcontext::from_addr(owner as usize), k.0 as *mut c_void, v.0 as *mut c_void) }
            }) as driver::ClsDtor
        });
        d.cls_insert(c, key as usize, value as usize, dtor)
    })
}

extern "C" fn cls_remove(ctx: CUcontext, key: *mut c_void) -> CUresult {
    crate::trace::call("CLS.remove", &[("ctx", &ctx), ("key", &key)], || drv()?.cls_remove(ctx.addr() as u64, key as usize))
}

extern "C" fn cls_get(value: *mut *mut c_void, ctx: CUcontext, key: *mut c_void) -> CUresult {
    crate::trace::call("CLS.get", &[("ctx", &ctx), ("key", &key)], || {
        let out = Out::new(value, "value")?;
        let v = drv()?.cls_get(ctx.addr() as u64, key as usize)?;
        out.set(v as *mut c_void);
        Ok(())
    })
}

pub static CONTEXT_LOCAL_STORAGE: Table<6> =
    Table([cls_insert as *const c_void, cls_remove as *const c_void, cls_get as *const c_void, u!(5, 3), u!(5, 4), u!(5, 5)]);

// ---- 6: context wrapper (263e8860) ----

extern "C" fn wrapper_slot2(ctx: CUcontext, is_wrapped: *mut c_uint, unwrapped: *mut CUcontext) -> CUresult {
    if !is_wrapped.is_null() {
        // SAFETY: cudart's out-pointer.
        unsafe { *is_wrapped = 0 };
    }
    if !unwrapped.is_null() {
        // SAFETY: cudart's out-pointer.
        unsafe { *unwrapped = ctx };
    }
    CUresult::CUDA_SUCCESS
}

extern "C" fn wrapper_slot3() -> CUresult {
    CUresult::CUDA_SUCCESS
}

pub static CONTEXT_WRAPPER: Table<15> = Table([
    size(0x78),
    u!(6, 1),
    wrapper_slot2 as *const c_void,
    wrapper_slot3 as *const c_void,
    u!(6, 4),
    u!(6, 5),
    u!(6, 6),
    u!(6, 7),
    u!(6, 8),
    u!(6, 9),
    u!(6, 10),
    u!(6, 11),
    u!(6, 12),
    u!(6, 13),
    u!(6, 14),
]);

// ---- 7: integrity check (d4082055) ----

/// The HMAC key of the integrity check.
pub const INTEGRITY_KEY: [u8; 16] = [0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f];

/// The fixed answer for runtime versions ending in 0 (and, with byte 7 =
/// 0x18, in 1).
pub const INTEGRITY_CONST: [u8; 16] = [0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x33, 0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e];

/// One device's part of the integrity message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceIdentity {
    pub uuid: [u8; 16],
    pub pci_domain: u32,
    pub pci_bus: u32,
    pub pci_device: u32,
}

/// Everything the integrity answer depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrityInput {
    pub driver_version: u32,
    pub runtime_version: u32,
    pub pid: u32,
    pub thread: u32,
    pub cudart_interface: u64,
    pub integrity_table: u64,
    pub integrity_fn: u64,
    pub unix_seconds: u64,
    pub devices: Vec<DeviceIdentity>,
}

/// The 16 bytes slot 1 of the integrity table writes.
pub fn integrity_answer(i: &IntegrityInput) -> [u8; 16] {
    match i.runtime_version % 10 {
        0 => INTEGRITY_CONST,
        1 => {
            let mut a = INTEGRITY_CONST;
            a[7] = 0x18;
            a
        }
        _ => {
            let mut m = Vec::with_capacity(48 + 28 * i.devices.len());
            m.extend_from_slice(&i.driver_version.to_le_bytes());
            m.extend_from_slice(&i.runtime_version.to_le_bytes());
            m.extend_from_slice(&i.pid.to_le_bytes());
            m.extend_from_slice(&i.thread.to_le_bytes());
            m.extend_from_slice(&i.cudart_interface.to_le_bytes());
            m.extend_from_slice(&i.integrity_table.to_le_bytes());
            m.extend_from_slice(&i.integrity_fn.to_le_bytes());
            m.extend_from_slice(&i.unix_seconds.to_le_bytes());
            for d in &i.devices {
                m.extend_from_slice(&d.uuid);
                m.extend_from_slice(&d.pci_domain.to_le_bytes());
                m.extend_from_slice(&d.pci_bus.to_le_bytes());
                m.extend_from_slice(&d.pci_device.to_le_bytes());
            }
            hmac_md2(&INTEGRITY_KEY, &m)
        }
    }
}

extern "C" fn integrity_check(runtime_version: c_uint, unix_seconds: u64, out: *mut [u8; 16]) -> CUresult {
    crate::trace::call("INTEGRITY[1]", &[("rtver", &runtime_version), ("secs", &unix_seconds)], || {
        let o = Out::new(out, "out")?;
        let d = crate::driver();
        let devices = if d.is_initialized() {
            (0..d.device_count()?)
                .map(|i| {
                    d.device_props(i).map(|p| DeviceIdentity {
                        uuid: p.uuid,
                        pci_domain: p.pci_domain,
                        pci_bus: p.pci_bus,
                        pci_device: p.pci_device,
                    })
                })
                .collect::<Result<Vec<_>, Error>>()?
        } else {
            Vec::new()
        };
        let input = IntegrityInput {
            driver_version: d.driver_version() as u32,
            runtime_version,
            pid: std::process::id(),
            // SAFETY: pthread_self has no preconditions.
            thread: unsafe { libc::pthread_self() } as u64 as u32,
            cudart_interface: &CUDART_INTERFACE as *const _ as u64,
            integrity_table: &INTEGRITY as *const _ as u64,
            integrity_fn: integrity_check as *const () as u64,
            unix_seconds,
            devices,
        };
        o.set(integrity_answer(&input));
        Ok(())
    })
}

pub static INTEGRITY: Table<3> = Table([size(0x18), integrity_check as *const c_void, u!(7, 2)]);

// ---- anycuda's own: the memory checker, for libraries beside the driver ----

/// anycuda's table for libraries that write device memory from the host
/// (anycuda's cuBLAS on the CPU backend), so that initcheck counts their
/// results as written: slot 1 `initcheck() -> int` (nonzero when initcheck
/// runs), slot 2 `host_wrote(address: u64, bytes: u64) -> CUresult`.
/// Reached through the public `cuGetExportTable` with
/// [`CHECKER_TABLE_ID`], as NVIDIA's libraries reach their driver's private
/// tables; NVIDIA's driver knows no such table and returns an error.
pub const CHECKER_TABLE_ID: [u8; 16] = [0x3a, 0x5c, 0x0e, 0x91, 0x7d, 0x42, 0x4b, 0x1f, 0xa6, 0x28, 0xc4, 0x53, 0x9e, 0x0b, 0x71, 0xd2];

extern "C" fn checker_initcheck() -> c_int {
    c_int::from(backend_cpu::memcheck::initcheck())
}

extern "C" fn checker_host_wrote(address: u64, bytes: u64) -> CUresult {
    backend_cpu::memcheck::host_wrote(address, bytes);
    CUresult::CUDA_SUCCESS
}

pub static CHECKER: Table<3> = Table([size(0x18), checker_initcheck as *const c_void, checker_host_wrote as *const c_void]);

/// The tables by UUID (bytes in memory order).
pub fn table(id: &[u8; 16]) -> Option<*const c_void> {
    if *id == CHECKER_TABLE_ID {
        return Some(CHECKER.0.as_ptr().cast());
    }
    const T: [([u8; 16], usize); 8] = [
        ([0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9], 0),
        ([0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9], 1),
        ([0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66], 2),
        ([0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc], 3),
        ([0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2], 4),
        ([0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93], 5),
        ([0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e], 6),
        ([0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2], 7),
    ];
    let idx = T.iter().find(|(u, _)| u == id)?.1;
    Some(match idx {
        0 => LOGGING.0.as_ptr().cast(),
        1 => CUDART_INTERFACE.0.as_ptr().cast(),
        2 => TOOLS_HOOKS.0.as_ptr().cast(),
        3 => TOOLS_TLS.0.as_ptr().cast(),
        4 => UNKNOWN_13.0.as_ptr().cast(),
        5 => CONTEXT_LOCAL_STORAGE.0.as_ptr().cast(),
        6 => CONTEXT_WRAPPER.0.as_ptr().cast(),
        _ => INTEGRITY.0.as_ptr().cast(),
    })
}

api! {
    fn cuGetExportTable(ppExportTable: *mut *const c_void, pExportTableId: *const CUuuid) {
        let out = Out::new(ppExportTable, "ppExportTable")?;
        if pExportTableId.is_null() {
            return Err(Error::InvalidValue("pExportTableId is NULL".into()));
        }
        let id = pExportTableId.read_unaligned().bytes;
        match table(&id) {
            Some(t) => {
                out.set(t);
                Ok(())
            }
            None => {
                out.set(std::ptr::null());
                Err(Error::InvalidValue(format!("unknown export table {id:02x?}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(rtver: u32) -> IntegrityInput {
        IntegrityInput {
            driver_version: 13000,
            runtime_version: rtver,
            pid: 1234,
            thread: 0xdead_beef,
            cudart_interface: 0x7f00_0000_1000,
            integrity_table: 0x7f00_0000_2000,
            integrity_fn: 0x7f00_0000_3000,
            unix_seconds: 1_700_000_000,
            devices: vec![DeviceIdentity { uuid: [7; 16], pci_domain: 0, pci_bus: 0xac, pci_device: 0 }],
        }
    }

    #[test]
    fn integrity_constant_answers() {
        assert_eq!(
            integrity_answer(&input(13050)),
            [0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x33, 0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e]
        );
        assert_eq!(
            integrity_answer(&input(12091)),
            [0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x18, 0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e]
        );
    }

    #[test]
    fn integrity_hmac_depends_on_every_field() {
        let base = integrity_answer(&input(13052));
        assert_ne!(base, INTEGRITY_CONST);
        let mut i = input(13052);
        i.pid += 1;
        assert_ne!(integrity_answer(&i), base);
        let mut i = input(13052);
        i.devices[0].pci_bus += 1;
        assert_ne!(integrity_answer(&i), base);
        let mut i = input(13052);
        i.unix_seconds += 1;
        assert_ne!(integrity_answer(&i), base);
        // The message layout: 48 bytes of header, 28 per device.
        let i = input(13052);
        let mut m = Vec::new();
        for v in [13000u32, 13052, 1234, 0xdead_beef] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        for v in [0x7f00_0000_1000u64, 0x7f00_0000_2000, 0x7f00_0000_3000, 1_700_000_000] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        m.extend_from_slice(&[7; 16]);
        for v in [0u32, 0xac, 0] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(m.len(), 76);
        assert_eq!(integrity_answer(&i), hmac_md2(&INTEGRITY_KEY, &m));
    }

    #[test]
    fn tables_have_their_sizes() {
        assert_eq!(LOGGING.0[0] as usize, 0x18);
        assert_eq!(CUDART_INTERFACE.0[0] as usize, 0x68);
        assert_eq!(CUDART_INTERFACE.0.len() * 8, 0x68);
        assert_eq!(TOOLS_HOOKS.0[0] as usize, 0x38);
        assert!(TOOLS_HOOKS.0[0] as usize > 0x30);
        assert_eq!(UNKNOWN_13.0.len() * 8, 0x2e8);
        assert_eq!(CONTEXT_WRAPPER.0.len() * 8, 0x78);
        assert_eq!(INTEGRITY.0[0] as usize, 0x18);
        assert!(table(&[0; 16]).is_none());
    }
}
