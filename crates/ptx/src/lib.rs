//! The PTX front end: lexer, parser, typed AST, diagnostics and printer.
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
pub mod diag;
mod keywords;
pub mod lexer;
mod parser;
mod printer;
mod validate;

pub use diag::{Diagnostic, Diagnostics, LineIndex};
pub use parser::parse;
pub use printer::{print, reg_name};
