//! The C symbols of libcublasLt.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::c_int;

use crate::abi::Release;
use crate::handle::api;
use crate::status::{Error, Status};

pub fn get_property(kind: c_int, out: *mut c_int, r: Release) -> Status {
    api("cublasLtGetProperty", || {
        if out.is_null() {
            return Err(Error::invalid("value is NULL"));
        }
        let v = match kind {
            0 => r.major,
            1 => r.minor,
            2 => r.patch,
            _ => return Err(Error::invalid(format!("{kind} is not a libraryPropertyType"))),
        };
        // SAFETY: checked non-NULL.
        unsafe { *out = v };
        Ok(())
    })
}
