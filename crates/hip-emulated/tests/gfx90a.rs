//! Every case on the emulated gfx90a (CDNA2, wave64: a CUDA warp is half a
//! wavefront).
mod common;
every_case!("gfx90a");
