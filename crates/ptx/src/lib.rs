//! The PTX front end: lexer, parser, typed AST, diagnostics and printer.
//!
//! It reads PTX ISA up to 9.x as nvcc, NVRTC and LLVM's NVPTX backend
//! (clang, Triton) write it: every instruction family with its modifiers
//! (including texture/surface, `mma`/`wmma`/`wgmma`, `cp.async(.bulk)(.tensor)`,
//! `mbarrier`, `tcgen05`, `multimem`, `tensormap`, video instructions), block-
//! scoped labels, `.callprototype`/`.branchtargets`/`.calltargets`, every
//! variable and initializer form (`generic()`, `sym+off`, masked address
//! bytes, sampler fields), performance and cluster directives, and debug
//! information (`.file`, `.loc ... inlined_at`, `.section` data kept as text).
//! Errors are [`Diagnostics`] with line:column; nothing is skipped silently.
//!
//! ```
//! let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
//!            .visible .entry k(.param .u64 p) { .reg .b64 %rd<2>; ld.param.u64 %rd1, [p]; ret; }";
//! let module = ptx::parse(src).expect("valid PTX");
//! assert_eq!(module.kernels().next().map(|k| k.name), Some("k"));
//! let printed = ptx::print(&module);
//! let again = ptx::parse(&printed).expect("printed PTX parses");
//! assert_eq!(module, again);
//! ```

pub mod ast;
mod defuse;
pub mod diag;
mod keywords;
pub mod lexer;
pub mod link;
mod parser;
mod printer;
mod validate;

pub use diag::{Diagnostic, Diagnostics, LineIndex};
pub use link::{
    is_device_runtime, is_device_runtime_text, link, may_use_device_library, LinkError, LinkInput, LinkOptions, Linked, DEVICE_LIBRARY,
    DEVICE_LIBRARY_FUNCTIONS, DEVICE_RUNTIME_PROVIDED, DRIVER_FUNCTIONS,
};
pub use parser::parse;
pub use printer::{print, reg_name};
