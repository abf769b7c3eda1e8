//! The CPU backend of anycuda: loads kernels compiled for the host into the
//! process ([`loader`]) and runs launches on all cores ([`exec`]).
//!
//! The contract with the compiler is `compiler::cpu_abi`: every kernel has a
//! `thread` function (one CUDA thread, which may suspend inside runtime
//! calls) and, when its threads never wait for each other, a `block`
//! function that runs a whole block. Runtime calls made by compiled code
//! land in [`exec::runtime`].

pub mod device;
pub mod exec;
pub mod heap;
pub mod ipc;
pub mod limit;
pub mod loader;
pub mod memcheck;
pub mod memory;
pub mod vmm;

pub use compiler::cpu_abi::{BlockCtx, BlockFn, ThreadFn};
pub use compiler::KernelInfo;
pub use device::{CpuBackend, CpuModule};
pub use exec::{launch, Executor, ExecutorConfig, KernelResolver, LaunchError, LaunchOptions, LoadedKernel, OutputSink};
pub use loader::{load, load_compiled, LoadError, LoadedModule};
