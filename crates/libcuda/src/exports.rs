//! Every ABI symbol of the driver API, generated from the one list in
//! `cuda_types` ([`cuda_types::for_each_abi_symbol!`]): the implemented
//! ones live in the `api_*` modules (found by `build.rs`, which writes the
//! `maybe_stub!` macro that skips them), every other symbol becomes a stub
//! that returns `CUDA_ERROR_NOT_SUPPORTED` and logs its name once.
//!
//! [`lookup`] maps a symbol name to its address, for `cuGetProcAddress`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::OnceLock;

pub use crate::api_context::*;
pub use crate::api_device::*;
pub use crate::api_graph::*;
pub use crate::api_launch::*;
pub use crate::api_memory::*;
pub use crate::api_module::*;
pub use crate::api_stream::*;
pub use crate::api_texture::*;
pub use crate::api_vmm::*;
pub use crate::export_tables::cuGetExportTable;
pub use crate::proc_address::{cuGetProcAddress, cuGetProcAddress_v2};

/// An unimplemented symbol. Declared without parameters: a C caller
/// passing arguments to it is harmless on the supported ABIs (x86-64 and
/// aarch64 System V), where the caller owns its argument area.
macro_rules! stub {
    ($sym:ident) => {
        #[no_mangle]
        pub extern "C" fn $sym() -> cuda_types::CUresult {
            $crate::trace::unimplemented(stringify!($sym))
        }
    };
}

// `maybe_stub!($sym)`: nothing for implemented symbols, `stub!` otherwise.
include!(concat!(env!("OUT_DIR"), "/implemented.rs"));

macro_rules! all_stubs {
    ($($sym:ident($n:tt))*) => { $(maybe_stub!($sym);)* };
}
cuda_types::for_each_abi_symbol!(all_stubs);

macro_rules! symbol_table {
    ($($sym:ident($n:tt))*) => {
        fn build_table() -> HashMap<&'static str, usize> {
            let mut m = HashMap::new();
            $(m.insert(stringify!($sym), $sym as *const () as usize);)*
            m
        }
    };
}
cuda_types::for_each_abi_symbol!(symbol_table);

fn table() -> &'static HashMap<&'static str, usize> {
    static T: OnceLock<HashMap<&'static str, usize>> = OnceLock::new();
    T.get_or_init(build_table)
}

/// The address of exported symbol `name`.
pub fn lookup(name: &str) -> Option<*const c_void> {
    table().get(name).map(|&a| a as *const c_void)
}

/// Whether `name` is implemented (not a stub).
pub fn is_implemented(name: &str) -> bool {
    IMPLEMENTED.contains(&name)
}
