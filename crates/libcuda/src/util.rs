//! Argument checking helpers for the C ABI.

use std::ffi::{c_char, CStr};

use driver::Error;

/// A checked out-pointer: NULL is refused before any side effect.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    pub(crate) fn new(p: *mut T, what: &str) -> Result<Out<T>, Error> {
        if p.is_null() {
            Err(Error::InvalidValue(format!("{what} is NULL")))
        } else {
            Ok(Out(p))
        }
    }

    /// Writes the value (unaligned: C callers may pack their structs).
    pub(crate) fn set(&self, v: T) {
        // SAFETY: non-NULL, and the caller's contract makes it writable.
        unsafe { self.0.write_unaligned(v) }
    }
}

/// Writes through an optional out-pointer.
pub(crate) fn set_opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL out-pointer (caller's contract).
        unsafe { p.write_unaligned(v) }
    }
}

/// A NUL-terminated string argument.
pub(crate) unsafe fn cstr<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    if p.is_null() {
        return Err(Error::InvalidValue(format!("{what} is NULL")));
    }
    // SAFETY: NUL-terminated (caller's contract).
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| Error::InvalidValue(format!("{what} is not UTF-8")))
}

/// Copies `s` into a caller's buffer of `len` bytes, NUL-terminated and
/// truncated to fit.
pub(crate) unsafe fn write_cstr(buf: *mut c_char, len: i32, s: &str) -> Result<(), Error> {
    if buf.is_null() {
        return Err(Error::InvalidValue("buffer is NULL".into()));
    }
    if len <= 0 {
        return Err(Error::InvalidValue("buffer length must be positive".into()));
    }
    let n = s.len().min(len as usize - 1);
    // SAFETY: the buffer holds len bytes (caller's contract).
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    Ok(())
}

/// The driver, if `cuInit` has been called.
pub(crate) fn drv() -> Result<&'static driver::Driver, Error> {
    let d = crate::driver();
    if d.is_initialized() {
        Ok(d)
    } else {
        Err(Error::NotInitialized)
    }
}

/// Defines exported API functions; see `exports` for the symbol list.
///
/// `api!(fn name(args) { body })` exports `name`; the body returns
/// `Result<(), driver::Error>`. `api!(fn name / name_ptsz [ptds] (args)
/// { body })` also exports the per-thread default stream variant, with
/// `ptds` bound to `false`/`true` in the body.
macro_rules! api {
    (fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block) => {
        $crate::util::api_fn!($name ($($arg: $ty),*) [_ptds_unused = false] $body);
    };
    (fn $name:ident / $pt:ident [$ptds:ident] ( $($arg:ident : $ty:ty),* $(,)? ) $body:block) => {
        $crate::util::api_fn!($name ($($arg: $ty),*) [$ptds = false] $body);
        $crate::util::api_fn!($pt ($($arg: $ty),*) [$ptds = true] $body);
    };
}

macro_rules! api_fn {
    ($name:ident ( $($arg:ident : $ty:ty),* ) [$ptds:ident = $val:expr] $body:block) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> cuda_types::CUresult {
            #[allow(unused_variables)]
            let $ptds: bool = $val;
            $crate::trace::call(
                stringify!($name),
                &[$((stringify!($arg), &$arg as &dyn std::fmt::Debug)),*],
                #[allow(unused_unsafe)]
                || -> Result<(), driver::Error> { unsafe { $body } },
            )
        }
    };
}

pub(crate) use {api, api_fn};
