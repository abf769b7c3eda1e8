//! Every case on the emulated gfx1100 (RDNA3, wave32).
mod common;
every_case!("gfx1100");
