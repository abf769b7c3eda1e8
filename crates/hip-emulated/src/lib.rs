//! `libamdhip64.so` for anycuda's tests: a test double of the HIP runtime
//! that runs kernels on an AMD ISA emulator. It is part of the project's
//! tests and is never shipped (`publish = false`; nothing installs it).
//!
//! With it, programs and anycuda's HIP backend run their real path on a
//! machine without an AMD GPU: they load this library as they load ROCm's
//! `libamdhip64.so`, and every launched kernel executes instruction by
//! instruction on the emulator (`ANYCUDA_AMD_EMU`, by default
//! `../shared/tools/amd-emu` beside the repository), inside the process,
//! through an embedded CPython (Debian's `libpython3.11.so.1.0`, loaded at
//! run time).
//!
//! - **The device**: one, `ANYCUDA_HIP_EMULATED_ARCH` = `gfx1100` (RDNA3,
//!   wave32, the default) or `gfx90a` (CDNA2, wave64, `gcnArchName`
//!   `gfx90a:sramecc+:xnack-`); any other value means no device
//!   (`hipErrorNoDevice`). Attributes are those of a Radeon RX 7900 XTX or an
//!   Instinct MI210, with 4 GiB of device memory, a limit the double enforces.
//! - **Memory** is host memory: device pointers are host addresses. Device,
//!   pinned, registered and managed ranges are tracked; copies and memsets
//!   are checked against them and against their direction.
//! - **Modules**: `hipModuleLoadData` takes a code object (ELF, code object
//!   v4-v6) for the device's processor, maps it with the emulator harness's
//!   loader, applies its dynamic relocations and reads its metadata (kernels,
//!   argument layouts); `hipModuleGetGlobal` gives a variable's address in
//!   the loaded image, which keeps its contents across launches.
//! - **Launches** (`hipModuleLaunchKernel`, with `kernelParams` or the
//!   `extra` buffer form) run to completion before the call returns; an
//!   emulator error, a trap or a wavefront that never ends is
//!   `hipErrorLaunchFailure`, with the emulator's message in the log and its
//!   traceback on stderr. A wild memory access in a kernel is a fault of the
//!   process, as device memory is host memory.
//! - **Streams and events** execute work at enqueue time: asynchronous calls
//!   have finished when they return, synchronisation only checks handles,
//!   events take their time when recorded.
//!
//! Logging: `ANYCUDA_LOG` and `ANYCUDA_LOG_FILE`, as for the driver.

mod api;
mod code_object;
mod device;
mod emulator;
mod error;
mod log;
mod memory;
mod python;
mod runtime;
