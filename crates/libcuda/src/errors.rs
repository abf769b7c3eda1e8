//! The one place driver errors become `CUresult`s.

use cuda_types::CUresult as R;
use driver::{Error, LaunchFault};

/// The `CUresult` NVIDIA's driver returns for `e`.
pub fn code(e: &Error) -> R {
    match e {
        Error::InvalidValue(_) => R::CUDA_ERROR_INVALID_VALUE,
        Error::OutOfMemory(_) => R::CUDA_ERROR_OUT_OF_MEMORY,
        Error::NotInitialized => R::CUDA_ERROR_NOT_INITIALIZED,
        Error::Deinitialized => R::CUDA_ERROR_DEINITIALIZED,
        Error::NoDevice => R::CUDA_ERROR_NO_DEVICE,
        Error::InvalidDevice(_) => R::CUDA_ERROR_INVALID_DEVICE,
        Error::InvalidContext => R::CUDA_ERROR_INVALID_CONTEXT,
        Error::ContextIsDestroyed => R::CUDA_ERROR_CONTEXT_IS_DESTROYED,
        Error::InvalidHandle(_) => R::CUDA_ERROR_INVALID_HANDLE,
        Error::InvalidImage(_) => R::CUDA_ERROR_INVALID_IMAGE,
        Error::NoBinaryForGpu(_) => R::CUDA_ERROR_NO_BINARY_FOR_GPU,
        Error::InvalidPtx(_) => R::CUDA_ERROR_INVALID_PTX,
        Error::UnsupportedPtxVersion(_) => R::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        Error::FileNotFound(_) => R::CUDA_ERROR_FILE_NOT_FOUND,
        Error::NotFound(_) => R::CUDA_ERROR_NOT_FOUND,
        Error::NotReady => R::CUDA_ERROR_NOT_READY,
        Error::NotSupported(_) => R::CUDA_ERROR_NOT_SUPPORTED,
        Error::NotPermitted(_) => R::CUDA_ERROR_NOT_PERMITTED,
        Error::PrimaryContextActive => R::CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
        Error::UnsupportedLimit => R::CUDA_ERROR_UNSUPPORTED_LIMIT,
        Error::HostMemoryAlreadyRegistered => R::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        Error::HostMemoryNotRegistered => R::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
        Error::PeerAccessUnsupported => R::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
        Error::LaunchOutOfResources(_) => R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        Error::CooperativeLaunchTooLarge(_) => R::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
        Error::IllegalState(_) => R::CUDA_ERROR_ILLEGAL_STATE,
        Error::Fault(f) => match f {
            LaunchFault::IllegalAddress { .. } => R::CUDA_ERROR_ILLEGAL_ADDRESS,
            LaunchFault::IllegalInstruction(_) => R::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            LaunchFault::MisalignedAddress { .. } => R::CUDA_ERROR_MISALIGNED_ADDRESS,
            LaunchFault::Trap(_) => R::CUDA_ERROR_LAUNCH_FAILED,
            LaunchFault::Assert(_) => R::CUDA_ERROR_ASSERT,
            LaunchFault::Deadlock(_) => R::CUDA_ERROR_LAUNCH_TIMEOUT,
            LaunchFault::OutOfResources(_) => R::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            LaunchFault::StackOverflow(_) => R::CUDA_ERROR_HARDWARE_STACK_ERROR,
            LaunchFault::Timeout(_) => R::CUDA_ERROR_LAUNCH_TIMEOUT,
            LaunchFault::Failed(_) => R::CUDA_ERROR_LAUNCH_FAILED,
        },
        Error::Unknown(_) => R::CUDA_ERROR_UNKNOWN,
    }
}
