//! `cuGetProcAddress` and `cuGetProcAddress_v2`: entry points by API name
//! and version, as NVIDIA's driver hands them out.
//!
//! - The name and version map to an ABI symbol with [`cuda_types::resolve`]
//!   (the highest `PFN_<name>_v<ver>` at or below the version; flags 2 picks
//!   the per-thread default stream variant).
//! - A version newer than the one `cuDriverGetVersion` reports is refused
//!   with CUDA_ERROR_INVALID_VALUE, as driver 580 does.
//! - Unknown names (cudart's `""` probe among them) and versions older than
//!   any symbol answer CUDA_SUCCESS with a NULL pointer and the status
//!   saying why; the 4-argument v1 entry point, which has no status,
//!   answers CUDA_ERROR_NOT_FOUND instead.
//! - No `cuInit` is needed.

use std::ffi::{c_char, c_int, c_void, CStr};

use cuda_types::*;
use driver::Error;

use crate::util::{api, Out};

unsafe fn get_proc(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut CUdriverProcAddressQueryResult,
    v1: bool,
) -> Result<(), Error> {
    let out = Out::new(pfn, "pfn")?;
    out.set(std::ptr::null_mut());
    if symbol.is_null() {
        return Err(Error::InvalidValue("symbol is NULL".into()));
    }
    if flags & !3 != 0 {
        return Err(Error::InvalidValue(format!("unknown flags {flags:#x}")));
    }
    if version < 0 || version > crate::driver().driver_version() {
        return Err(Error::InvalidValue(format!("version {version} is newer than the driver's {}", crate::driver().driver_version())));
    }
    let per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM != 0;
    let name = CStr::from_ptr(symbol).to_str().unwrap_or("");
    let res = resolve(name, version as u32, per_thread);
    let found = res.symbol().and_then(crate::exports::lookup);
    let st = match (res, found) {
        (_, Some(p)) => {
            out.set(p as *mut c_void);
            CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS
        }
        (Resolution::Found { .. }, None) => CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
        (r, None) => r.status(),
    };
    if !status.is_null() {
        status.write_unaligned(st);
    }
    if v1 && st != CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS {
        return Err(Error::NotFound(format!("{name}@{version}")));
    }
    Ok(())
}

api! {
    fn cuGetProcAddress_v2(symbol: *const c_char, pfn: *mut *mut c_void, cudaVersion: c_int, flags: u64, symbolStatus: *mut CUdriverProcAddressQueryResult) {
        get_proc(symbol, pfn, cudaVersion, flags, symbolStatus, false)
    }
}

api! {
    fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, cudaVersion: c_int, flags: u64) {
        get_proc(symbol, pfn, cudaVersion, flags, std::ptr::null_mut(), true)
    }
}
