//! The driver API's symbol table: every function of CUDA 13.5's driver API,
//! the ABI symbols NVIDIA's `libcuda.so.1` exports for it, and the
//! `cuGetProcAddress` versions from which each applies.
//!
//! One list (the `__anycuda_api_list` macro below, kept in step with
//! NVIDIA's headers by `tools/cuda_symbols.py`) drives everything: the
//! [`for_each_api!`](crate::for_each_api) and
//! [`for_each_abi_symbol!`](crate::for_each_abi_symbol) callback macros
//! that other crates use to generate exports and stubs, and the run-time
//! tables [`API_FUNCTIONS`] and [`ABI_SYMBOLS`] behind [`resolve`].
//!
//! # The list's shape
//!
//! ```text
//! cuMemcpyHtoD {
//!     2000 => cuMemcpyHtoD(3),
//!     3020 => cuMemcpyHtoD_v2(3) per_thread 7000 => cuMemcpyHtoD_v2_ptds,
//! }
//! ```
//!
//! For each API name (sorted by name), its ABI versions in ascending order:
//! the `cuGetProcAddress` version from which the symbol applies (the
//! `PFN_<name>_v<version>` typedefs of cudaTypedefs.h), the exported symbol,
//! its number of parameters (`?` for the few functions that cudart asks
//! for but no public header declares, so callbacks match it as `$n:tt`),
//! and, where the symbol has a per-thread default stream variant (`_ptds`
//! for synchronous calls, `_ptsz` for calls taking a stream), the version
//! from which that variant exists and its symbol. A per-thread variant
//! takes the same parameters as its symbol.

use crate::enums::CUdriverProcAddressQueryResult;

/// Invokes `$callback! { ... }` with the whole symbol table.
///
/// The callback receives, for every API function,
/// `name { since => symbol(params) [per_thread since => symbol], ... }`
/// (see the [module documentation](crate::symbols)). `for_each_api!(cb,
/// tokens...)` passes `[tokens...]` first, before the entries, for
/// callbacks that need context.
///
/// ```
/// macro_rules! count_apis {
///     ($( $api:ident { $( $ver:literal => $abi:ident ($n:tt)
///          $(per_thread $ptver:literal => $ptabi:ident)? ),* $(,)? } )*) => {
///         const API_COUNT: usize = [$(stringify!($api)),*].len();
///     };
/// }
/// cuda_types::for_each_api!(count_apis);
/// assert_eq!(API_COUNT, cuda_types::API_FUNCTIONS.len());
/// ```
#[macro_export]
macro_rules! for_each_api {
    ($callback:path) => {
        $crate::__anycuda_api_list! { $callback, () }
    };
    ($callback:path, $($extra:tt)*) => {
        $crate::__anycuda_api_list! { $callback, ([$($extra)*]) }
    };
}

/// Invokes `$callback! { sym(params) sym(params) ... }` with every ABI symbol
/// that `libcuda.so.1` must export, each once, per-thread variants included.
///
/// `for_each_abi_symbol!(cb, tokens...)` passes `[tokens...]` first.
///
/// A crate that implements some functions and stubs the rest can match the
/// implemented names literally, since `macro_rules!` compares identifiers:
///
/// ```
/// # use cuda_types::CUresult;
/// mod exports {
///     use cuda_types::CUresult;
///
///     macro_rules! export {
///         // Implemented here, with their real signatures.
///         (cuDriverGetVersion($n:tt)) => {};
///         // Everything else: a stub; calling a C function with more
///         // arguments than it takes is harmless on x86-64 and aarch64.
///         ($sym:ident($n:tt)) => {
///             #[allow(non_snake_case)]
///             pub extern "C" fn $sym() -> CUresult {
///                 CUresult::CUDA_ERROR_NOT_SUPPORTED
///             }
///         };
///     }
///     macro_rules! all_exports {
///         ($($sym:ident($n:tt))*) => { $(export!($sym($n));)* };
///     }
///     cuda_types::for_each_abi_symbol!(all_exports);
///
///     pub extern "C" fn cuDriverGetVersion(v: *mut i32) -> CUresult {
///         unsafe { *v = 13000 };
///         CUresult::CUDA_SUCCESS
///     }
/// }
/// assert_eq!(exports::cuMemAlloc_v2(), CUresult::CUDA_ERROR_NOT_SUPPORTED);
/// ```
#[macro_export]
macro_rules! for_each_abi_symbol {
    ($callback:path) => {
        $crate::__anycuda_api_list! { $crate::__anycuda_flatten, ([$callback] ()) }
    };
    ($callback:path, $($extra:tt)*) => {
        $crate::__anycuda_api_list! { $crate::__anycuda_flatten, ([$callback] ([$($extra)*])) }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __anycuda_flatten {
    ([$callback:path] ($($prefix:tt)*)
     $( $api:ident { $( $ver:literal => $abi:ident ($n:tt)
        $(per_thread $ptver:literal => $ptabi:ident)? ),* $(,)? } )*) => {
        $callback! { $($prefix)* $( $( $abi($n) $( $ptabi($n) )? )* )* }
    };
}

/// One function of the driver API as `cuGetProcAddress` knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiFunction {
    /// The name asked for, e.g. `"cuMemAlloc"`.
    pub name: &'static str,
    /// Its ABI versions, ascending by `since`.
    pub versions: &'static [ApiVersion],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersion {
    /// The first `cuGetProcAddress` version this symbol answers.
    pub since: u32,
    /// The exported symbol, e.g. `"cuMemAlloc_v2"`.
    pub symbol: &'static str,
    /// How many parameters the symbol takes; `None` where no public header
    /// declares it.
    pub params: Option<u8>,
    pub per_thread: Option<PerThreadVariant>,
}

/// The per-thread default stream variant of an [`ApiVersion`]'s symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PerThreadVariant {
    /// The first version at which `cuGetProcAddress` with
    /// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` answers it.
    pub since: u32,
    /// e.g. `"cuMemcpyHtoD_v2_ptds"`.
    pub symbol: &'static str,
}

/// One symbol `libcuda.so.1` exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiSymbol {
    pub name: &'static str,
    /// The API function it implements.
    pub api: &'static str,
    /// The version from which `cuGetProcAddress` hands it out.
    pub since: u32,
    pub params: Option<u8>,
    /// Whether it is a `_ptds`/`_ptsz` variant.
    pub per_thread: bool,
}

macro_rules! build_tables {
    ($( $api:ident { $( $ver:literal => $abi:ident ($n:tt)
        $(per_thread $ptver:literal => $ptabi:ident)? ),* $(,)? } )*) => {
        /// Every API function, sorted by name.
        pub static API_FUNCTIONS: &[ApiFunction] = &[$(
            ApiFunction {
                name: stringify!($api),
                versions: &[$(
                    ApiVersion {
                        since: $ver,
                        symbol: stringify!($abi),
                        params: build_tables!(@params $n),
                        per_thread: build_tables!(@pt $($ptver, $ptabi)?),
                    },
                )*],
            },
        )*];

        /// Every exported symbol, in the order of [`for_each_abi_symbol!`]
        /// (`crate::for_each_abi_symbol`).
        pub static ABI_SYMBOLS: &[AbiSymbol] = &[$($(
            AbiSymbol {
                name: stringify!($abi),
                api: stringify!($api),
                since: $ver,
                params: build_tables!(@params $n),
                per_thread: false,
            },
            $(AbiSymbol {
                name: stringify!($ptabi),
                api: stringify!($api),
                since: $ptver,
                params: build_tables!(@params $n),
                per_thread: true,
            },)?
        )*)*];
    };
    (@params ?) => { None };
    (@params $n:literal) => { Some($n) };
    (@pt) => { None };
    (@pt $ptver:literal, $ptabi:ident) => {
        Some(PerThreadVariant { since: $ptver, symbol: stringify!($ptabi) })
    };
}

for_each_api!(build_tables);

/// The function `cuGetProcAddress` knows by `name`.
pub fn api_function(name: &str) -> Option<&'static ApiFunction> {
    API_FUNCTIONS.binary_search_by(|f| f.name.cmp(name)).ok().map(|i| &API_FUNCTIONS[i])
}

/// The exported symbol `name` (a linear search: meant for tracing and
/// tests, not for hot paths).
pub fn abi_symbol(name: &str) -> Option<&'static AbiSymbol> {
    ABI_SYMBOLS.iter().find(|s| s.name == name)
}

/// The answer to a `cuGetProcAddress` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Hand out this exported symbol.
    Found { symbol: &'static str, params: Option<u8>, per_thread: bool },
    /// The name is known, but nothing of the requested kind exists at or
    /// below the requested version.
    VersionNotSufficient,
    /// No such function.
    NotFound,
}

impl Resolution {
    pub fn symbol(self) -> Option<&'static str> {
        match self {
            Resolution::Found { symbol, .. } => Some(symbol),
            _ => None,
        }
    }

    /// The `CUdriverProcAddressQueryResult` to report.
    pub fn status(self) -> CUdriverProcAddressQueryResult {
        match self {
            Resolution::Found { .. } => CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS,
            Resolution::VersionNotSufficient => CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
            Resolution::NotFound => CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
        }
    }
}

/// Maps a `cuGetProcAddress(name, version, flags)` request to the symbol
/// NVIDIA's driver hands out, `per_thread` being whether `flags` has
/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` (2).
///
/// - Default requests get the symbol of the highest version `<= version`.
/// - Per-thread requests for a function that has per-thread variants get
///   the variant of the highest per-thread version `<= version`, and
///   [`Resolution::VersionNotSufficient`] if there is none, even where the
///   default symbol exists (driver 555 answers `cuStreamQuery`@2000 with
///   flags 2 so). Functions without per-thread variants answer per-thread
///   requests like default ones.
/// - An unknown name, the empty name of cudart's probe included, is
///   [`Resolution::NotFound`].
///
/// Left to the caller: a `version` newer than the version the driver
/// reports is refused with CUDA_ERROR_INVALID_VALUE before any lookup
/// (NVIDIA's driver 580 does so; 555 did not), and the mapping of the
/// result onto the return code (the real driver returns CUDA_SUCCESS with a
/// NULL pointer and the status for names it does not find).
pub fn resolve(name: &str, version: u32, per_thread: bool) -> Resolution {
    let Some(f) = api_function(name) else {
        return Resolution::NotFound;
    };
    let has_per_thread = f.versions.iter().any(|v| v.per_thread.is_some());
    if per_thread && has_per_thread {
        let best = f
            .versions
            .iter()
            .filter_map(|v| v.per_thread.map(|pt| (pt, v.params)))
            .filter(|(pt, _)| pt.since <= version)
            .max_by_key(|(pt, _)| pt.since);
        return match best {
            Some((pt, params)) => Resolution::Found { symbol: pt.symbol, params, per_thread: true },
            None => Resolution::VersionNotSufficient,
        };
    }
    match f.versions.iter().rev().find(|v| v.since <= version) {
        Some(v) => Resolution::Found { symbol: v.symbol, params: v.params, per_thread: false },
        None => Resolution::VersionNotSufficient,
    }
}

// @table-start
// Maintained by tools/cuda_symbols.py from CUDA 13.5's headers; see tools/README.md.
// API name { since => ABI symbol(parameters) [per_thread since => ABI symbol], ... }
// Parameters are `?` for functions that no public header declares.
#[doc(hidden)]
#[macro_export]
macro_rules! __anycuda_api_list {
    ($callback:path, ($($prefix:tt)*)) => {
        $callback! {
            $($prefix)*
            cuArray3DCreate {
                2000 => cuArray3DCreate(2),
                3020 => cuArray3DCreate_v2(2),
            }
            cuArray3DGetDescriptor {
                2000 => cuArray3DGetDescriptor(2),
                3020 => cuArray3DGetDescriptor_v2(2),
            }
            cuArrayCreate {
                2000 => cuArrayCreate(2),
                3020 => cuArrayCreate_v2(2),
            }
            cuArrayDestroy {
                2000 => cuArrayDestroy(1),
            }
            cuArrayGetDescriptor {
                2000 => cuArrayGetDescriptor(2),
                3020 => cuArrayGetDescriptor_v2(2),
            }
            cuArrayGetMemoryRequirements {
                11060 => cuArrayGetMemoryRequirements(3),
            }
            cuArrayGetPlane {
                11020 => cuArrayGetPlane(3),
            }
            cuArrayGetSparseProperties {
                11010 => cuArrayGetSparseProperties(2),
            }
            cuCheckpointOperationComplete {
                13040 => cuCheckpointOperationComplete(1),
            }
            cuCheckpointProcessCheckpoint {
                12080 => cuCheckpointProcessCheckpoint(2),
            }
            cuCheckpointProcessGetRestoreThreadId {
                12080 => cuCheckpointProcessGetRestoreThreadId(2),
            }
            cuCheckpointProcessGetState {
                12080 => cuCheckpointProcessGetState(2),
            }
            cuCheckpointProcessLock {
                12080 => cuCheckpointProcessLock(2),
            }
            cuCheckpointProcessRestore {
                12080 => cuCheckpointProcessRestore(2),
            }
            cuCheckpointProcessUnlock {
                12080 => cuCheckpointProcessUnlock(2),
            }
            cuCoredumpDeregisterCompleteCallback {
                13020 => cuCoredumpDeregisterCompleteCallback(1),
            }
            cuCoredumpDeregisterStartCallback {
                13020 => cuCoredumpDeregisterStartCallback(1),
            }
            cuCoredumpGetAttribute {
                12010 => cuCoredumpGetAttribute(3),
            }
            cuCoredumpGetAttributeGlobal {
                12010 => cuCoredumpGetAttributeGlobal(3),
            }
            cuCoredumpRegisterCompleteCallback {
                13020 => cuCoredumpRegisterCompleteCallback(3),
            }
            cuCoredumpRegisterStartCallback {
                13020 => cuCoredumpRegisterStartCallback(3),
            }
            cuCoredumpSetAttribute {
                12010 => cuCoredumpSetAttribute(3),
            }
            cuCoredumpSetAttributeGlobal {
                12010 => cuCoredumpSetAttributeGlobal(3),
            }
            cuCtxAttach {
                2000 => cuCtxAttach(2),
            }
            cuCtxCreate {
                2000 => cuCtxCreate(3),
                3020 => cuCtxCreate_v2(3),
                11040 => cuCtxCreate_v3(5),
                12050 => cuCtxCreate_v4(4),
            }
            cuCtxDestroy {
                2000 => cuCtxDestroy(1),
                4000 => cuCtxDestroy_v2(1),
            }
            cuCtxDetach {
                2000 => cuCtxDetach(1),
            }
            cuCtxDisablePeerAccess {
                4000 => cuCtxDisablePeerAccess(1),
            }
            cuCtxEnablePeerAccess {
                4000 => cuCtxEnablePeerAccess(2),
            }
            cuCtxFromGreenCtx {
                12040 => cuCtxFromGreenCtx(2),
            }
            cuCtxGetApiVersion {
                3020 => cuCtxGetApiVersion(2),
            }
            cuCtxGetCacheConfig {
                3020 => cuCtxGetCacheConfig(1),
            }
            cuCtxGetCurrent {
                4000 => cuCtxGetCurrent(1),
            }
            cuCtxGetDevResource {
                12040 => cuCtxGetDevResource(3),
            }
            cuCtxGetDevice {
                2000 => cuCtxGetDevice(1),
                13000 => cuCtxGetDevice_v2(2),
            }
            cuCtxGetExecAffinity {
                11040 => cuCtxGetExecAffinity(2),
            }
            cuCtxGetFlags {
                7000 => cuCtxGetFlags(1),
            }
            cuCtxGetId {
                12000 => cuCtxGetId(2),
            }
            cuCtxGetLimit {
                3010 => cuCtxGetLimit(2),
            }
            cuCtxGetSharedMemConfig {
                4020 => cuCtxGetSharedMemConfig(1),
            }
            cuCtxGetStreamPriorityRange {
                5050 => cuCtxGetStreamPriorityRange(2),
            }
            cuCtxPopCurrent {
                2000 => cuCtxPopCurrent(1),
                4000 => cuCtxPopCurrent_v2(1),
            }
            cuCtxPushCurrent {
                2000 => cuCtxPushCurrent(1),
                4000 => cuCtxPushCurrent_v2(1),
            }
            cuCtxRecordEvent {
                12050 => cuCtxRecordEvent(2),
            }
            cuCtxResetPersistingL2Cache {
                11000 => cuCtxResetPersistingL2Cache(0),
            }
            cuCtxSetCacheConfig {
                3020 => cuCtxSetCacheConfig(1),
            }
            cuCtxSetCurrent {
                4000 => cuCtxSetCurrent(1),
            }
            cuCtxSetFlags {
                12010 => cuCtxSetFlags(1),
            }
            cuCtxSetLimit {
                3010 => cuCtxSetLimit(2),
            }
            cuCtxSetSharedMemConfig {
                4020 => cuCtxSetSharedMemConfig(1),
            }
            cuCtxSynchronize {
                2000 => cuCtxSynchronize(0),
                13000 => cuCtxSynchronize_v2(1),
            }
            cuCtxWaitEvent {
                12050 => cuCtxWaitEvent(2),
            }
            cuDestroyExternalMemory {
                10000 => cuDestroyExternalMemory(1),
            }
            cuDestroyExternalSemaphore {
                10000 => cuDestroyExternalSemaphore(1),
            }
            cuDevResourceGenerateDesc {
                12040 => cuDevResourceGenerateDesc(3),
            }
            cuDevSmResourceSplit {
                13010 => cuDevSmResourceSplit(6),
            }
            cuDevSmResourceSplitByCount {
                12040 => cuDevSmResourceSplitByCount(6),
            }
            cuDeviceCanAccessPeer {
                4000 => cuDeviceCanAccessPeer(3),
            }
            cuDeviceComputeCapability {
                2000 => cuDeviceComputeCapability(3),
            }
            cuDeviceGet {
                2000 => cuDeviceGet(2),
            }
            cuDeviceGetAttribute {
                2000 => cuDeviceGetAttribute(3),
            }
            cuDeviceGetByPCIBusId {
                4010 => cuDeviceGetByPCIBusId(2),
            }
            cuDeviceGetCliqueCount {
                13040 => cuDeviceGetCliqueCount(2),
            }
            cuDeviceGetCliqueInfo {
                13040 => cuDeviceGetCliqueInfo(3),
            }
            cuDeviceGetCount {
                2000 => cuDeviceGetCount(1),
            }
            cuDeviceGetDefaultMemPool {
                11020 => cuDeviceGetDefaultMemPool(2),
            }
            cuDeviceGetDevResource {
                12040 => cuDeviceGetDevResource(3),
            }
            cuDeviceGetExecAffinitySupport {
                11040 => cuDeviceGetExecAffinitySupport(3),
            }
            cuDeviceGetFabricClusterUuid {
                13040 => cuDeviceGetFabricClusterUuid(2),
            }
            cuDeviceGetGraphMemAttribute {
                11040 => cuDeviceGetGraphMemAttribute(3),
            }
            cuDeviceGetHostAtomicCapabilities {
                13000 => cuDeviceGetHostAtomicCapabilities(4),
            }
            cuDeviceGetLuid {
                10000 => cuDeviceGetLuid(3),
            }
            cuDeviceGetMemPool {
                11020 => cuDeviceGetMemPool(2),
            }
            cuDeviceGetName {
                2000 => cuDeviceGetName(3),
            }
            cuDeviceGetNvSciSyncAttributes {
                10020 => cuDeviceGetNvSciSyncAttributes(3),
            }
            cuDeviceGetP2PAtomicCapabilities {
                13000 => cuDeviceGetP2PAtomicCapabilities(5),
            }
            cuDeviceGetP2PAttribute {
                8000 => cuDeviceGetP2PAttribute(4),
            }
            cuDeviceGetPCIBusId {
                4010 => cuDeviceGetPCIBusId(3),
            }
            cuDeviceGetProperties {
                2000 => cuDeviceGetProperties(2),
            }
            cuDeviceGetTexture1DLinearMaxWidth {
                11010 => cuDeviceGetTexture1DLinearMaxWidth(4),
            }
            cuDeviceGetUuid {
                9020 => cuDeviceGetUuid(2),
                11040 => cuDeviceGetUuid_v2(2),
            }
            cuDeviceGraphMemTrim {
                11040 => cuDeviceGraphMemTrim(1),
            }
            cuDevicePrimaryCtxGetState {
                7000 => cuDevicePrimaryCtxGetState(3),
            }
            cuDevicePrimaryCtxRelease {
                7000 => cuDevicePrimaryCtxRelease(1),
                11000 => cuDevicePrimaryCtxRelease_v2(1),
            }
            cuDevicePrimaryCtxReset {
                7000 => cuDevicePrimaryCtxReset(1),
                11000 => cuDevicePrimaryCtxReset_v2(1),
            }
            cuDevicePrimaryCtxRetain {
                7000 => cuDevicePrimaryCtxRetain(2),
            }
            cuDevicePrimaryCtxSetFlags {
                7000 => cuDevicePrimaryCtxSetFlags(2),
                11000 => cuDevicePrimaryCtxSetFlags_v2(2),
            }
            cuDeviceRegisterAsyncNotification {
                12040 => cuDeviceRegisterAsyncNotification(4),
            }
            cuDeviceSetGraphMemAttribute {
                11040 => cuDeviceSetGraphMemAttribute(3),
            }
            cuDeviceSetMemPool {
                11020 => cuDeviceSetMemPool(2),
            }
            cuDeviceTotalMem {
                2000 => cuDeviceTotalMem(2),
                3020 => cuDeviceTotalMem_v2(2),
            }
            cuDeviceUnregisterAsyncNotification {
                12040 => cuDeviceUnregisterAsyncNotification(2),
            }
            cuDriverGetVersion {
                2020 => cuDriverGetVersion(1),
            }
            cuEGLStreamConsumerAcquireFrame {
                7000 => cuEGLStreamConsumerAcquireFrame(4),
            }
            cuEGLStreamConsumerConnect {
                7000 => cuEGLStreamConsumerConnect(2),
            }
            cuEGLStreamConsumerConnectWithFlags {
                8000 => cuEGLStreamConsumerConnectWithFlags(3),
            }
            cuEGLStreamConsumerDisconnect {
                7000 => cuEGLStreamConsumerDisconnect(1),
            }
            cuEGLStreamConsumerReleaseFrame {
                7000 => cuEGLStreamConsumerReleaseFrame(3),
            }
            cuEGLStreamProducerConnect {
                7000 => cuEGLStreamProducerConnect(4),
            }
            cuEGLStreamProducerDisconnect {
                7000 => cuEGLStreamProducerDisconnect(1),
            }
            cuEGLStreamProducerPresentFrame {
                7000 => cuEGLStreamProducerPresentFrame(3),
            }
            cuEGLStreamProducerReturnFrame {
                7000 => cuEGLStreamProducerReturnFrame(3),
            }
            cuEventCreate {
                2000 => cuEventCreate(2),
            }
            cuEventCreateFromEGLSync {
                9000 => cuEventCreateFromEGLSync(3),
            }
            cuEventDestroy {
                2000 => cuEventDestroy(1),
                4000 => cuEventDestroy_v2(1),
            }
            cuEventElapsedTime {
                2000 => cuEventElapsedTime(3),
                12080 => cuEventElapsedTime_v2(3),
            }
            cuEventQuery {
                2000 => cuEventQuery(1),
            }
            cuEventRecord {
                2000 => cuEventRecord(2) per_thread 7000 => cuEventRecord_ptsz,
            }
            cuEventRecordWithFlags {
                11010 => cuEventRecordWithFlags(3) per_thread 11010 => cuEventRecordWithFlags_ptsz,
            }
            cuEventSynchronize {
                2000 => cuEventSynchronize(1),
            }
            cuExternalMemoryGetMappedBuffer {
                10000 => cuExternalMemoryGetMappedBuffer(3),
            }
            cuExternalMemoryGetMappedMipmappedArray {
                10000 => cuExternalMemoryGetMappedMipmappedArray(3),
            }
            cuFabricCpyBatchAsync {
                13050 => cuFabricCpyBatchAsync(4) per_thread 13050 => cuFabricCpyBatchAsync_ptsz,
            }
            cuFlushGPUDirectRDMAWrites {
                11030 => cuFlushGPUDirectRDMAWrites(2),
            }
            cuFuncGetAttribute {
                2020 => cuFuncGetAttribute(3),
            }
            cuFuncGetModule {
                11000 => cuFuncGetModule(2),
            }
            cuFuncGetName {
                12030 => cuFuncGetName(2),
            }
            cuFuncGetParamCount {
                13020 => cuFuncGetParamCount(2),
            }
            cuFuncGetParamInfo {
                12040 => cuFuncGetParamInfo(4),
            }
            cuFuncIsLoaded {
                12040 => cuFuncIsLoaded(2),
            }
            cuFuncLoad {
                12040 => cuFuncLoad(1),
            }
            cuFuncSetAttribute {
                9000 => cuFuncSetAttribute(3),
            }
            cuFuncSetBlockShape {
                2000 => cuFuncSetBlockShape(4),
            }
            cuFuncSetCacheConfig {
                3000 => cuFuncSetCacheConfig(2),
            }
            cuFuncSetSharedMemConfig {
                4020 => cuFuncSetSharedMemConfig(2),
            }
            cuFuncSetSharedSize {
                2000 => cuFuncSetSharedSize(2),
            }
            cuGLCtxCreate {
                2000 => cuGLCtxCreate(3),
                3020 => cuGLCtxCreate_v2(3),
            }
            cuGLGetDevices {
                4010 => cuGLGetDevices(4),
                6050 => cuGLGetDevices_v2(4),
            }
            cuGLInit {
                2000 => cuGLInit(0),
            }
            cuGLMapBufferObject {
                2000 => cuGLMapBufferObject(3),
                3020 => cuGLMapBufferObject_v2(3) per_thread 7000 => cuGLMapBufferObject_v2_ptds,
            }
            cuGLMapBufferObjectAsync {
                2030 => cuGLMapBufferObjectAsync(4),
                3020 => cuGLMapBufferObjectAsync_v2(4) per_thread 7000 => cuGLMapBufferObjectAsync_v2_ptsz,
            }
            cuGLRegisterBufferObject {
                2000 => cuGLRegisterBufferObject(1),
            }
            cuGLSetBufferObjectMapFlags {
                2030 => cuGLSetBufferObjectMapFlags(2),
            }
            cuGLUnmapBufferObject {
                2000 => cuGLUnmapBufferObject(1),
            }
            cuGLUnmapBufferObjectAsync {
                2030 => cuGLUnmapBufferObjectAsync(2),
            }
            cuGLUnregisterBufferObject {
                2000 => cuGLUnregisterBufferObject(1),
            }
            cuGetErrorName {
                6000 => cuGetErrorName(2),
            }
            cuGetErrorString {
                6000 => cuGetErrorString(2),
            }
            cuGetExportTable {
                3000 => cuGetExportTable(2),
            }
            cuGetProcAddress {
                11030 => cuGetProcAddress(4),
                12000 => cuGetProcAddress_v2(5),
            }
            cuGraphAddBatchMemOpNode {
                11070 => cuGraphAddBatchMemOpNode(5),
            }
            cuGraphAddChildGraphNode {
                10000 => cuGraphAddChildGraphNode(5),
            }
            cuGraphAddDependencies {
                10000 => cuGraphAddDependencies(4),
                12030 => cuGraphAddDependencies_v2(5),
            }
            cuGraphAddEmptyNode {
                10000 => cuGraphAddEmptyNode(4),
            }
            cuGraphAddEventRecordNode {
                11010 => cuGraphAddEventRecordNode(5),
            }
            cuGraphAddEventWaitNode {
                11010 => cuGraphAddEventWaitNode(5),
            }
            cuGraphAddExternalSemaphoresSignalNode {
                11020 => cuGraphAddExternalSemaphoresSignalNode(5),
            }
            cuGraphAddExternalSemaphoresWaitNode {
                11020 => cuGraphAddExternalSemaphoresWaitNode(5),
            }
            cuGraphAddHostNode {
                10000 => cuGraphAddHostNode(5),
            }
            cuGraphAddKernelNode {
                10000 => cuGraphAddKernelNode(5),
                12000 => cuGraphAddKernelNode_v2(5),
            }
            cuGraphAddMemAllocNode {
                11040 => cuGraphAddMemAllocNode(5),
            }
            cuGraphAddMemFreeNode {
                11040 => cuGraphAddMemFreeNode(5),
            }
            cuGraphAddMemcpyNode {
                10000 => cuGraphAddMemcpyNode(6),
            }
            cuGraphAddMemsetNode {
                10000 => cuGraphAddMemsetNode(6),
            }
            cuGraphAddNode {
                12020 => cuGraphAddNode(5),
                12030 => cuGraphAddNode_v2(6),
                13040 => cuGraphAddNode_v3(6),
            }
            cuGraphBatchMemOpNodeGetParams {
                11070 => cuGraphBatchMemOpNodeGetParams(2),
            }
            cuGraphBatchMemOpNodeSetParams {
                11070 => cuGraphBatchMemOpNodeSetParams(2),
            }
            cuGraphChildGraphNodeGetGraph {
                10000 => cuGraphChildGraphNodeGetGraph(2),
            }
            cuGraphClone {
                10000 => cuGraphClone(2),
            }
            cuGraphConditionalHandleCreate {
                12030 => cuGraphConditionalHandleCreate(5),
            }
            cuGraphCreate {
                10000 => cuGraphCreate(2),
            }
            cuGraphDebugDotPrint {
                11030 => cuGraphDebugDotPrint(3),
            }
            cuGraphDestroy {
                10000 => cuGraphDestroy(1),
            }
            cuGraphDestroyNode {
                10000 => cuGraphDestroyNode(1),
            }
            cuGraphEventRecordNodeGetEvent {
                11010 => cuGraphEventRecordNodeGetEvent(2),
            }
            cuGraphEventRecordNodeSetEvent {
                11010 => cuGraphEventRecordNodeSetEvent(2),
            }
            cuGraphEventWaitNodeGetEvent {
                11010 => cuGraphEventWaitNodeGetEvent(2),
            }
            cuGraphEventWaitNodeSetEvent {
                11010 => cuGraphEventWaitNodeSetEvent(2),
            }
            cuGraphExecBatchMemOpNodeSetParams {
                11070 => cuGraphExecBatchMemOpNodeSetParams(3),
            }
            cuGraphExecChildGraphNodeSetParams {
                11010 => cuGraphExecChildGraphNodeSetParams(3),
            }
            cuGraphExecDestroy {
                10000 => cuGraphExecDestroy(1),
            }
            cuGraphExecEventRecordNodeSetEvent {
                11010 => cuGraphExecEventRecordNodeSetEvent(3),
            }
            cuGraphExecEventWaitNodeSetEvent {
                11010 => cuGraphExecEventWaitNodeSetEvent(3),
            }
            cuGraphExecExternalSemaphoresSignalNodeSetParams {
                11020 => cuGraphExecExternalSemaphoresSignalNodeSetParams(3),
            }
            cuGraphExecExternalSemaphoresWaitNodeSetParams {
                11020 => cuGraphExecExternalSemaphoresWaitNodeSetParams(3),
            }
            cuGraphExecGetFlags {
                12000 => cuGraphExecGetFlags(2),
            }
            cuGraphExecGetId {
                13010 => cuGraphExecGetId(2),
            }
            cuGraphExecHostNodeSetParams {
                10020 => cuGraphExecHostNodeSetParams(3),
            }
            cuGraphExecKernelNodeSetParams {
                10010 => cuGraphExecKernelNodeSetParams(3),
                12000 => cuGraphExecKernelNodeSetParams_v2(3),
            }
            cuGraphExecMemcpyNodeSetParams {
                10020 => cuGraphExecMemcpyNodeSetParams(4),
            }
            cuGraphExecMemsetNodeSetParams {
                10020 => cuGraphExecMemsetNodeSetParams(4),
            }
            cuGraphExecNodeSetParams {
                12020 => cuGraphExecNodeSetParams(3),
            }
            cuGraphExecUpdate {
                10020 => cuGraphExecUpdate(4),
                12000 => cuGraphExecUpdate_v2(3),
            }
            cuGraphExternalSemaphoresSignalNodeGetParams {
                11020 => cuGraphExternalSemaphoresSignalNodeGetParams(2),
            }
            cuGraphExternalSemaphoresSignalNodeSetParams {
                11020 => cuGraphExternalSemaphoresSignalNodeSetParams(2),
            }
            cuGraphExternalSemaphoresWaitNodeGetParams {
                11020 => cuGraphExternalSemaphoresWaitNodeGetParams(2),
            }
            cuGraphExternalSemaphoresWaitNodeSetParams {
                11020 => cuGraphExternalSemaphoresWaitNodeSetParams(2),
            }
            cuGraphGetEdges {
                10000 => cuGraphGetEdges(4),
                12030 => cuGraphGetEdges_v2(5),
            }
            cuGraphGetId {
                13010 => cuGraphGetId(2),
            }
            cuGraphGetNodes {
                10000 => cuGraphGetNodes(3),
            }
            cuGraphGetRootNodes {
                10000 => cuGraphGetRootNodes(3),
            }
            cuGraphHostNodeGetParams {
                10000 => cuGraphHostNodeGetParams(2),
            }
            cuGraphHostNodeSetParams {
                10000 => cuGraphHostNodeSetParams(2),
            }
            cuGraphInstantiate {
                10000 => cuGraphInstantiate(5),
                11000 => cuGraphInstantiate_v2(5),
            }
            cuGraphInstantiateWithFlags {
                11040 => cuGraphInstantiateWithFlags(3),
            }
            cuGraphInstantiateWithParams {
                12000 => cuGraphInstantiateWithParams(3) per_thread 12000 => cuGraphInstantiateWithParams_ptsz,
            }
            cuGraphKernelNodeCopyAttributes {
                11000 => cuGraphKernelNodeCopyAttributes(2),
            }
            cuGraphKernelNodeGetAttribute {
                11000 => cuGraphKernelNodeGetAttribute(3),
            }
            cuGraphKernelNodeGetParams {
                10000 => cuGraphKernelNodeGetParams(2),
                12000 => cuGraphKernelNodeGetParams_v2(2),
            }
            cuGraphKernelNodeSetAttribute {
                11000 => cuGraphKernelNodeSetAttribute(3),
            }
            cuGraphKernelNodeSetParams {
                10000 => cuGraphKernelNodeSetParams(2),
                12000 => cuGraphKernelNodeSetParams_v2(2),
            }
            cuGraphLaunch {
                10000 => cuGraphLaunch(2) per_thread 10000 => cuGraphLaunch_ptsz,
            }
            cuGraphMemAllocNodeGetParams {
                11040 => cuGraphMemAllocNodeGetParams(2),
            }
            cuGraphMemFreeNodeGetParams {
                11040 => cuGraphMemFreeNodeGetParams(2),
            }
            cuGraphMemcpyNodeGetParams {
                10000 => cuGraphMemcpyNodeGetParams(2),
            }
            cuGraphMemcpyNodeSetParams {
                10000 => cuGraphMemcpyNodeSetParams(2),
            }
            cuGraphMemsetNodeGetParams {
                10000 => cuGraphMemsetNodeGetParams(2),
            }
            cuGraphMemsetNodeSetParams {
                10000 => cuGraphMemsetNodeSetParams(2),
            }
            cuGraphNodeFindInClone {
                10000 => cuGraphNodeFindInClone(3),
            }
            cuGraphNodeGetContainingGraph {
                13010 => cuGraphNodeGetContainingGraph(2),
            }
            cuGraphNodeGetDependencies {
                10000 => cuGraphNodeGetDependencies(3),
                12030 => cuGraphNodeGetDependencies_v2(4),
            }
            cuGraphNodeGetDependentNodes {
                10000 => cuGraphNodeGetDependentNodes(3),
                12030 => cuGraphNodeGetDependentNodes_v2(4),
            }
            cuGraphNodeGetEnabled {
                11060 => cuGraphNodeGetEnabled(3),
            }
            cuGraphNodeGetLocalId {
                13010 => cuGraphNodeGetLocalId(2),
            }
            cuGraphNodeGetParams {
                13020 => cuGraphNodeGetParams(2),
            }
            cuGraphNodeGetToolsId {
                13010 => cuGraphNodeGetToolsId(2),
            }
            cuGraphNodeGetType {
                10000 => cuGraphNodeGetType(2),
            }
            cuGraphNodeSetEnabled {
                11060 => cuGraphNodeSetEnabled(3),
            }
            cuGraphNodeSetParams {
                12020 => cuGraphNodeSetParams(2),
                13040 => cuGraphNodeSetParams_v2(2),
            }
            cuGraphReleaseUserObject {
                11030 => cuGraphReleaseUserObject(3),
            }
            cuGraphRemoveDependencies {
                10000 => cuGraphRemoveDependencies(4),
                12030 => cuGraphRemoveDependencies_v2(5),
            }
            cuGraphRetainUserObject {
                11030 => cuGraphRetainUserObject(4),
            }
            cuGraphUpload {
                11010 => cuGraphUpload(2) per_thread 11010 => cuGraphUpload_ptsz,
            }
            cuGraphicsEGLRegisterImage {
                7000 => cuGraphicsEGLRegisterImage(3),
            }
            cuGraphicsGLRegisterBuffer {
                3000 => cuGraphicsGLRegisterBuffer(3),
            }
            cuGraphicsGLRegisterImage {
                3000 => cuGraphicsGLRegisterImage(4),
            }
            cuGraphicsMapResources {
                3000 => cuGraphicsMapResources(3) per_thread 7000 => cuGraphicsMapResources_ptsz,
            }
            cuGraphicsResourceGetMappedEglFrame {
                7000 => cuGraphicsResourceGetMappedEglFrame(4),
            }
            cuGraphicsResourceGetMappedMipmappedArray {
                5000 => cuGraphicsResourceGetMappedMipmappedArray(2),
            }
            cuGraphicsResourceGetMappedPointer {
                3000 => cuGraphicsResourceGetMappedPointer(3),
                3020 => cuGraphicsResourceGetMappedPointer_v2(3),
            }
            cuGraphicsResourceSetMapFlags {
                3000 => cuGraphicsResourceSetMapFlags(2),
                6050 => cuGraphicsResourceSetMapFlags_v2(2),
            }
            cuGraphicsSubResourceGetMappedArray {
                3000 => cuGraphicsSubResourceGetMappedArray(4),
            }
            cuGraphicsUnmapResources {
                3000 => cuGraphicsUnmapResources(3) per_thread 7000 => cuGraphicsUnmapResources_ptsz,
            }
            cuGraphicsUnregisterResource {
                3000 => cuGraphicsUnregisterResource(1),
            }
            cuGraphicsVDPAURegisterOutputSurface {
                3010 => cuGraphicsVDPAURegisterOutputSurface(3),
            }
            cuGraphicsVDPAURegisterVideoSurface {
                3010 => cuGraphicsVDPAURegisterVideoSurface(3),
            }
            cuGreenCtxCreate {
                12040 => cuGreenCtxCreate(4),
            }
            cuGreenCtxDestroy {
                12040 => cuGreenCtxDestroy(1),
            }
            cuGreenCtxGetDevResource {
                12040 => cuGreenCtxGetDevResource(3),
            }
            cuGreenCtxGetId {
                12090 => cuGreenCtxGetId(2),
            }
            cuGreenCtxRecordEvent {
                12040 => cuGreenCtxRecordEvent(2),
            }
            cuGreenCtxStreamCreate {
                12050 => cuGreenCtxStreamCreate(4),
            }
            cuGreenCtxWaitEvent {
                12040 => cuGreenCtxWaitEvent(2),
            }
            cuImportExternalMemory {
                10000 => cuImportExternalMemory(2),
            }
            cuImportExternalSemaphore {
                10000 => cuImportExternalSemaphore(2),
            }
            cuInit {
                2000 => cuInit(1),
            }
            cuIpcCloseMemHandle {
                4010 => cuIpcCloseMemHandle(1),
            }
            cuIpcGetEventHandle {
                4010 => cuIpcGetEventHandle(2),
            }
            cuIpcGetMemHandle {
                4010 => cuIpcGetMemHandle(2),
            }
            cuIpcOpenEventHandle {
                4010 => cuIpcOpenEventHandle(2),
            }
            cuIpcOpenMemHandle {
                4010 => cuIpcOpenMemHandle(3),
                11000 => cuIpcOpenMemHandle_v2(3),
            }
            cuKernelGetAttribute {
                12000 => cuKernelGetAttribute(4),
            }
            cuKernelGetFunction {
                12000 => cuKernelGetFunction(2),
            }
            cuKernelGetLibrary {
                12050 => cuKernelGetLibrary(2),
            }
            cuKernelGetName {
                12030 => cuKernelGetName(2),
            }
            cuKernelGetParamCount {
                13020 => cuKernelGetParamCount(2),
            }
            cuKernelGetParamInfo {
                12040 => cuKernelGetParamInfo(4),
            }
            cuKernelSetAttribute {
                12000 => cuKernelSetAttribute(4),
            }
            cuKernelSetCacheConfig {
                12000 => cuKernelSetCacheConfig(3),
            }
            cuLaunch {
                2000 => cuLaunch(1),
            }
            cuLaunchCooperativeKernel {
                9000 => cuLaunchCooperativeKernel(10) per_thread 9000 => cuLaunchCooperativeKernel_ptsz,
            }
            cuLaunchCooperativeKernelMultiDevice {
                9000 => cuLaunchCooperativeKernelMultiDevice(3),
            }
            cuLaunchGrid {
                2000 => cuLaunchGrid(3),
            }
            cuLaunchGridAsync {
                2000 => cuLaunchGridAsync(4),
            }
            cuLaunchHostFunc {
                10000 => cuLaunchHostFunc(3) per_thread 10000 => cuLaunchHostFunc_ptsz,
                13010 => cuLaunchHostFunc_v2(4) per_thread 13010 => cuLaunchHostFunc_v2_ptsz,
            }
            cuLaunchKernel {
                4000 => cuLaunchKernel(11) per_thread 7000 => cuLaunchKernel_ptsz,
            }
            cuLaunchKernelEx {
                11060 => cuLaunchKernelEx(4) per_thread 11060 => cuLaunchKernelEx_ptsz,
            }
            cuLibraryEnumerateKernels {
                12040 => cuLibraryEnumerateKernels(3),
            }
            cuLibraryGetGlobal {
                12000 => cuLibraryGetGlobal(4),
            }
            cuLibraryGetKernel {
                12000 => cuLibraryGetKernel(3),
            }
            cuLibraryGetKernelCount {
                12040 => cuLibraryGetKernelCount(2),
            }
            cuLibraryGetManaged {
                12000 => cuLibraryGetManaged(4),
            }
            cuLibraryGetModule {
                12000 => cuLibraryGetModule(2),
            }
            cuLibraryGetUnifiedFunction {
                12000 => cuLibraryGetUnifiedFunction(3),
            }
            cuLibraryLoadData {
                12000 => cuLibraryLoadData(8),
            }
            cuLibraryLoadFromFile {
                12000 => cuLibraryLoadFromFile(8),
            }
            cuLibraryUnload {
                12000 => cuLibraryUnload(1),
            }
            cuLinkAddData {
                5050 => cuLinkAddData(8),
                6050 => cuLinkAddData_v2(8),
            }
            cuLinkAddFile {
                5050 => cuLinkAddFile(6),
                6050 => cuLinkAddFile_v2(6),
            }
            cuLinkComplete {
                5050 => cuLinkComplete(3),
            }
            cuLinkCreate {
                5050 => cuLinkCreate(4),
                6050 => cuLinkCreate_v2(4),
            }
            cuLinkDestroy {
                5050 => cuLinkDestroy(1),
            }
            cuLogicalEndpointAddDevice {
                13030 => cuLogicalEndpointAddDevice(2),
            }
            cuLogicalEndpointBindAddr {
                13030 => cuLogicalEndpointBindAddr(6),
            }
            cuLogicalEndpointBindMem {
                13030 => cuLogicalEndpointBindMem(7),
            }
            cuLogicalEndpointCreate {
                13030 => cuLogicalEndpointCreate(2),
            }
            cuLogicalEndpointDestroy {
                13030 => cuLogicalEndpointDestroy(1),
            }
            cuLogicalEndpointExport {
                13030 => cuLogicalEndpointExport(3),
            }
            cuLogicalEndpointGetLimits {
                13030 => cuLogicalEndpointGetLimits(3),
            }
            cuLogicalEndpointIdRelease {
                13030 => cuLogicalEndpointIdRelease(2),
            }
            cuLogicalEndpointIdReserve {
                13030 => cuLogicalEndpointIdReserve(2),
            }
            cuLogicalEndpointImport {
                13030 => cuLogicalEndpointImport(3),
            }
            cuLogicalEndpointQuery {
                13030 => cuLogicalEndpointQuery(3),
            }
            cuLogicalEndpointUnbind {
                13030 => cuLogicalEndpointUnbind(4),
            }
            cuLogsCurrent {
                12090 => cuLogsCurrent(2),
            }
            cuLogsDumpToFile {
                12090 => cuLogsDumpToFile(3),
            }
            cuLogsDumpToMemory {
                12090 => cuLogsDumpToMemory(4),
            }
            cuLogsRegisterCallback {
                12090 => cuLogsRegisterCallback(3),
            }
            cuLogsUnregisterCallback {
                12090 => cuLogsUnregisterCallback(1),
            }
            cuMemAddressFree {
                10020 => cuMemAddressFree(2),
            }
            cuMemAddressReserve {
                10020 => cuMemAddressReserve(5),
            }
            cuMemAdvise {
                8000 => cuMemAdvise(4),
                12020 => cuMemAdvise_v2(4),
            }
            cuMemAlloc {
                2000 => cuMemAlloc(2),
                3020 => cuMemAlloc_v2(2),
            }
            cuMemAllocAsync {
                11020 => cuMemAllocAsync(3) per_thread 11020 => cuMemAllocAsync_ptsz,
            }
            cuMemAllocFromPoolAsync {
                11020 => cuMemAllocFromPoolAsync(4) per_thread 11020 => cuMemAllocFromPoolAsync_ptsz,
            }
            cuMemAllocHost {
                2000 => cuMemAllocHost(2),
                3020 => cuMemAllocHost_v2(2),
            }
            cuMemAllocManaged {
                6000 => cuMemAllocManaged(3),
            }
            cuMemAllocPitch {
                2000 => cuMemAllocPitch(5),
                3020 => cuMemAllocPitch_v2(5),
            }
            cuMemBatchDecompressAsync {
                12060 => cuMemBatchDecompressAsync(5) per_thread 12060 => cuMemBatchDecompressAsync_ptsz,
            }
            cuMemCreate {
                10020 => cuMemCreate(4),
            }
            cuMemDiscardAndPrefetchBatchAsync {
                13000 => cuMemDiscardAndPrefetchBatchAsync(8) per_thread 13000 => cuMemDiscardAndPrefetchBatchAsync_ptsz,
            }
            cuMemDiscardBatchAsync {
                13000 => cuMemDiscardBatchAsync(5) per_thread 13000 => cuMemDiscardBatchAsync_ptsz,
            }
            cuMemExportToShareableHandle {
                10020 => cuMemExportToShareableHandle(4),
            }
            cuMemFree {
                2000 => cuMemFree(1),
                3020 => cuMemFree_v2(1),
            }
            cuMemFreeAsync {
                11020 => cuMemFreeAsync(2) per_thread 11020 => cuMemFreeAsync_ptsz,
            }
            cuMemFreeHost {
                2000 => cuMemFreeHost(1),
            }
            cuMemGetAccess {
                10020 => cuMemGetAccess(3),
            }
            cuMemGetAddressRange {
                2000 => cuMemGetAddressRange(3),
                3020 => cuMemGetAddressRange_v2(3),
            }
            cuMemGetAllocationGranularity {
                10020 => cuMemGetAllocationGranularity(3),
            }
            cuMemGetAllocationPropertiesFromHandle {
                10020 => cuMemGetAllocationPropertiesFromHandle(2),
            }
            cuMemGetDefaultMemPool {
                13000 => cuMemGetDefaultMemPool(3),
            }
            cuMemGetHandleForAddressRange {
                11070 => cuMemGetHandleForAddressRange(5),
            }
            cuMemGetInfo {
                2000 => cuMemGetInfo(2),
                3020 => cuMemGetInfo_v2(2),
            }
            cuMemGetLocationInfo {
                13040 => cuMemGetLocationInfo(5),
            }
            cuMemGetMemPool {
                13000 => cuMemGetMemPool(3),
            }
            cuMemHostAlloc {
                2020 => cuMemHostAlloc(3),
            }
            cuMemHostGetDevicePointer {
                2020 => cuMemHostGetDevicePointer(3),
                3020 => cuMemHostGetDevicePointer_v2(3),
            }
            cuMemHostGetFlags {
                2030 => cuMemHostGetFlags(2),
            }
            cuMemHostRegister {
                4000 => cuMemHostRegister(3),
                6050 => cuMemHostRegister_v2(3),
            }
            cuMemHostUnregister {
                4000 => cuMemHostUnregister(1),
            }
            cuMemImportFromShareableHandle {
                10020 => cuMemImportFromShareableHandle(3),
            }
            cuMemMap {
                10020 => cuMemMap(5),
            }
            cuMemMapArrayAsync {
                11010 => cuMemMapArrayAsync(3) per_thread 11010 => cuMemMapArrayAsync_ptsz,
            }
            cuMemPoolCreate {
                11020 => cuMemPoolCreate(2),
            }
            cuMemPoolDestroy {
                11020 => cuMemPoolDestroy(1),
            }
            cuMemPoolExportPointer {
                11020 => cuMemPoolExportPointer(2),
            }
            cuMemPoolExportToShareableHandle {
                11020 => cuMemPoolExportToShareableHandle(4),
            }
            cuMemPoolGetAccess {
                11020 => cuMemPoolGetAccess(3),
            }
            cuMemPoolGetAttribute {
                11020 => cuMemPoolGetAttribute(3),
            }
            cuMemPoolImportFromShareableHandle {
                11020 => cuMemPoolImportFromShareableHandle(4),
            }
            cuMemPoolImportPointer {
                11020 => cuMemPoolImportPointer(3),
            }
            cuMemPoolSetAccess {
                11020 => cuMemPoolSetAccess(3),
            }
            cuMemPoolSetAttribute {
                11020 => cuMemPoolSetAttribute(3),
            }
            cuMemPoolTrimTo {
                11020 => cuMemPoolTrimTo(2),
            }
            cuMemPrefetchAsync {
                8000 => cuMemPrefetchAsync(4) per_thread 8000 => cuMemPrefetchAsync_ptsz,
                12020 => cuMemPrefetchAsync_v2(5) per_thread 12020 => cuMemPrefetchAsync_v2_ptsz,
            }
            cuMemPrefetchBatchAsync {
                13000 => cuMemPrefetchBatchAsync(8) per_thread 13000 => cuMemPrefetchBatchAsync_ptsz,
            }
            cuMemRangeGetAttribute {
                8000 => cuMemRangeGetAttribute(5),
            }
            cuMemRangeGetAttributes {
                8000 => cuMemRangeGetAttributes(6),
            }
            cuMemRelease {
                10020 => cuMemRelease(1),
            }
            cuMemRetainAllocationHandle {
                11000 => cuMemRetainAllocationHandle(2),
            }
            cuMemSetAccess {
                10020 => cuMemSetAccess(4),
            }
            cuMemSetMemPool {
                13000 => cuMemSetMemPool(3),
            }
            cuMemUnmap {
                10020 => cuMemUnmap(2),
            }
            cuMemcpy {
                4000 => cuMemcpy(3) per_thread 7000 => cuMemcpy_ptds,
            }
            cuMemcpy2D {
                2000 => cuMemcpy2D(1),
                3020 => cuMemcpy2D_v2(1) per_thread 7000 => cuMemcpy2D_v2_ptds,
            }
            cuMemcpy2DAsync {
                2000 => cuMemcpy2DAsync(2),
                3020 => cuMemcpy2DAsync_v2(2) per_thread 7000 => cuMemcpy2DAsync_v2_ptsz,
            }
            cuMemcpy2DUnaligned {
                2000 => cuMemcpy2DUnaligned(1),
                3020 => cuMemcpy2DUnaligned_v2(1) per_thread 7000 => cuMemcpy2DUnaligned_v2_ptds,
            }
            cuMemcpy3D {
                2000 => cuMemcpy3D(1),
                3020 => cuMemcpy3D_v2(1) per_thread 7000 => cuMemcpy3D_v2_ptds,
            }
            cuMemcpy3DAsync {
                2000 => cuMemcpy3DAsync(2),
                3020 => cuMemcpy3DAsync_v2(2) per_thread 7000 => cuMemcpy3DAsync_v2_ptsz,
            }
            cuMemcpy3DBatchAsync {
                12080 => cuMemcpy3DBatchAsync(5) per_thread 12080 => cuMemcpy3DBatchAsync_ptsz,
                13000 => cuMemcpy3DBatchAsync_v2(4) per_thread 13000 => cuMemcpy3DBatchAsync_v2_ptsz,
            }
            cuMemcpy3DPeer {
                4000 => cuMemcpy3DPeer(1) per_thread 7000 => cuMemcpy3DPeer_ptds,
            }
            cuMemcpy3DPeerAsync {
                4000 => cuMemcpy3DPeerAsync(2) per_thread 7000 => cuMemcpy3DPeerAsync_ptsz,
            }
            cuMemcpy3DWithAttributesAsync {
                13020 => cuMemcpy3DWithAttributesAsync(3) per_thread 13020 => cuMemcpy3DWithAttributesAsync_ptsz,
            }
            cuMemcpyAsync {
                4000 => cuMemcpyAsync(4) per_thread 7000 => cuMemcpyAsync_ptsz,
            }
            cuMemcpyAtoA {
                2000 => cuMemcpyAtoA(5),
                3020 => cuMemcpyAtoA_v2(5) per_thread 7000 => cuMemcpyAtoA_v2_ptds,
            }
            cuMemcpyAtoD {
                2000 => cuMemcpyAtoD(4),
                3020 => cuMemcpyAtoD_v2(4) per_thread 7000 => cuMemcpyAtoD_v2_ptds,
            }
            cuMemcpyAtoH {
                2000 => cuMemcpyAtoH(4),
                3020 => cuMemcpyAtoH_v2(4) per_thread 7000 => cuMemcpyAtoH_v2_ptds,
            }
            cuMemcpyAtoHAsync {
                2000 => cuMemcpyAtoHAsync(5),
                3020 => cuMemcpyAtoHAsync_v2(5) per_thread 7000 => cuMemcpyAtoHAsync_v2_ptsz,
            }
            cuMemcpyBatchAsync {
                12080 => cuMemcpyBatchAsync(9) per_thread 12080 => cuMemcpyBatchAsync_ptsz,
                13000 => cuMemcpyBatchAsync_v2(8) per_thread 13000 => cuMemcpyBatchAsync_v2_ptsz,
            }
            cuMemcpyDtoA {
                2000 => cuMemcpyDtoA(4),
                3020 => cuMemcpyDtoA_v2(4) per_thread 7000 => cuMemcpyDtoA_v2_ptds,
            }
            cuMemcpyDtoD {
                2000 => cuMemcpyDtoD(3),
                3020 => cuMemcpyDtoD_v2(3) per_thread 7000 => cuMemcpyDtoD_v2_ptds,
            }
            cuMemcpyDtoDAsync {
                3000 => cuMemcpyDtoDAsync(4),
                3020 => cuMemcpyDtoDAsync_v2(4) per_thread 7000 => cuMemcpyDtoDAsync_v2_ptsz,
            }
            cuMemcpyDtoH {
                2000 => cuMemcpyDtoH(3),
                3020 => cuMemcpyDtoH_v2(3) per_thread 7000 => cuMemcpyDtoH_v2_ptds,
            }
            cuMemcpyDtoHAsync {
                2000 => cuMemcpyDtoHAsync(4),
                3020 => cuMemcpyDtoHAsync_v2(4) per_thread 7000 => cuMemcpyDtoHAsync_v2_ptsz,
            }
            cuMemcpyHtoA {
                2000 => cuMemcpyHtoA(4),
                3020 => cuMemcpyHtoA_v2(4) per_thread 7000 => cuMemcpyHtoA_v2_ptds,
            }
            cuMemcpyHtoAAsync {
                2000 => cuMemcpyHtoAAsync(5),
                3020 => cuMemcpyHtoAAsync_v2(5) per_thread 7000 => cuMemcpyHtoAAsync_v2_ptsz,
            }
            cuMemcpyHtoD {
                2000 => cuMemcpyHtoD(3),
                3020 => cuMemcpyHtoD_v2(3) per_thread 7000 => cuMemcpyHtoD_v2_ptds,
            }
            cuMemcpyHtoDAsync {
                2000 => cuMemcpyHtoDAsync(4),
                3020 => cuMemcpyHtoDAsync_v2(4) per_thread 7000 => cuMemcpyHtoDAsync_v2_ptsz,
            }
            cuMemcpyPeer {
                4000 => cuMemcpyPeer(5) per_thread 7000 => cuMemcpyPeer_ptds,
            }
            cuMemcpyPeerAsync {
                4000 => cuMemcpyPeerAsync(6) per_thread 7000 => cuMemcpyPeerAsync_ptsz,
            }
            cuMemcpyWithAttributesAsync {
                13020 => cuMemcpyWithAttributesAsync(5) per_thread 13020 => cuMemcpyWithAttributesAsync_ptsz,
            }
            cuMemsetD16 {
                2000 => cuMemsetD16(3),
                3020 => cuMemsetD16_v2(3) per_thread 7000 => cuMemsetD16_v2_ptds,
            }
            cuMemsetD16Async {
                3020 => cuMemsetD16Async(4) per_thread 7000 => cuMemsetD16Async_ptsz,
            }
            cuMemsetD2D16 {
                2000 => cuMemsetD2D16(5),
                3020 => cuMemsetD2D16_v2(5) per_thread 7000 => cuMemsetD2D16_v2_ptds,
            }
            cuMemsetD2D16Async {
                3020 => cuMemsetD2D16Async(6) per_thread 7000 => cuMemsetD2D16Async_ptsz,
            }
            cuMemsetD2D32 {
                2000 => cuMemsetD2D32(5),
                3020 => cuMemsetD2D32_v2(5) per_thread 7000 => cuMemsetD2D32_v2_ptds,
            }
            cuMemsetD2D32Async {
                3020 => cuMemsetD2D32Async(6) per_thread 7000 => cuMemsetD2D32Async_ptsz,
            }
            cuMemsetD2D8 {
                2000 => cuMemsetD2D8(5),
                3020 => cuMemsetD2D8_v2(5) per_thread 7000 => cuMemsetD2D8_v2_ptds,
            }
            cuMemsetD2D8Async {
                3020 => cuMemsetD2D8Async(6) per_thread 7000 => cuMemsetD2D8Async_ptsz,
            }
            cuMemsetD32 {
                2000 => cuMemsetD32(3),
                3020 => cuMemsetD32_v2(3) per_thread 7000 => cuMemsetD32_v2_ptds,
            }
            cuMemsetD32Async {
                3020 => cuMemsetD32Async(4) per_thread 7000 => cuMemsetD32Async_ptsz,
            }
            cuMemsetD8 {
                2000 => cuMemsetD8(3),
                3020 => cuMemsetD8_v2(3) per_thread 7000 => cuMemsetD8_v2_ptds,
            }
            cuMemsetD8Async {
                3020 => cuMemsetD8Async(4) per_thread 7000 => cuMemsetD8Async_ptsz,
            }
            cuMipmappedArrayCreate {
                5000 => cuMipmappedArrayCreate(3),
            }
            cuMipmappedArrayDestroy {
                5000 => cuMipmappedArrayDestroy(1),
            }
            cuMipmappedArrayGetLevel {
                5000 => cuMipmappedArrayGetLevel(3),
            }
            cuMipmappedArrayGetMemoryRequirements {
                11060 => cuMipmappedArrayGetMemoryRequirements(3),
            }
            cuMipmappedArrayGetSparseProperties {
                11010 => cuMipmappedArrayGetSparseProperties(2),
            }
            cuModuleEnumerateFunctions {
                12040 => cuModuleEnumerateFunctions(3),
            }
            cuModuleGetFunction {
                2000 => cuModuleGetFunction(3),
            }
            cuModuleGetFunctionCount {
                12040 => cuModuleGetFunctionCount(2),
            }
            cuModuleGetGlobal {
                2000 => cuModuleGetGlobal(4),
                3020 => cuModuleGetGlobal_v2(4),
            }
            cuModuleGetLoadingMode {
                11070 => cuModuleGetLoadingMode(1),
            }
            cuModuleGetSurfRef {
                3000 => cuModuleGetSurfRef(3),
            }
            cuModuleGetTexRef {
                2000 => cuModuleGetTexRef(3),
            }
            cuModuleLoad {
                2000 => cuModuleLoad(2),
            }
            cuModuleLoadData {
                2000 => cuModuleLoadData(2),
            }
            cuModuleLoadDataEx {
                2010 => cuModuleLoadDataEx(5),
            }
            cuModuleLoadFatBinary {
                2000 => cuModuleLoadFatBinary(2),
            }
            cuModuleUnload {
                2000 => cuModuleUnload(1),
            }
            cuMulticastAddDevice {
                12010 => cuMulticastAddDevice(2),
            }
            cuMulticastBindAddr {
                12010 => cuMulticastBindAddr(5),
                13010 => cuMulticastBindAddr_v2(6),
            }
            cuMulticastBindMem {
                12010 => cuMulticastBindMem(6),
                13010 => cuMulticastBindMem_v2(7),
            }
            cuMulticastCreate {
                12010 => cuMulticastCreate(2),
            }
            cuMulticastGetGranularity {
                12010 => cuMulticastGetGranularity(3),
            }
            cuMulticastUnbind {
                12010 => cuMulticastUnbind(4),
            }
            cuOccupancyAvailableDynamicSMemPerBlock {
                10020 => cuOccupancyAvailableDynamicSMemPerBlock(4),
            }
            cuOccupancyMaxActiveBlocksPerMultiprocessor {
                6050 => cuOccupancyMaxActiveBlocksPerMultiprocessor(4),
            }
            cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags {
                7000 => cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(5),
            }
            cuOccupancyMaxActiveClusters {
                11070 => cuOccupancyMaxActiveClusters(3),
            }
            cuOccupancyMaxPotentialBlockSize {
                6050 => cuOccupancyMaxPotentialBlockSize(6),
            }
            cuOccupancyMaxPotentialBlockSizeWithFlags {
                7000 => cuOccupancyMaxPotentialBlockSizeWithFlags(7),
            }
            cuOccupancyMaxPotentialClusterSize {
                11070 => cuOccupancyMaxPotentialClusterSize(3),
            }
            cuParamSetSize {
                2000 => cuParamSetSize(2),
            }
            cuParamSetTexRef {
                2000 => cuParamSetTexRef(3),
            }
            cuParamSetf {
                2000 => cuParamSetf(3),
            }
            cuParamSeti {
                2000 => cuParamSeti(3),
            }
            cuParamSetv {
                2000 => cuParamSetv(4),
            }
            cuPointerGetAttribute {
                4000 => cuPointerGetAttribute(3),
            }
            cuPointerGetAttributes {
                7000 => cuPointerGetAttributes(4),
            }
            cuPointerSetAttribute {
                6000 => cuPointerSetAttribute(3),
            }
            cuProfilerInitialize {
                4000 => cuProfilerInitialize(3),
            }
            cuProfilerStart {
                4000 => cuProfilerStart(0),
            }
            cuProfilerStop {
                4000 => cuProfilerStop(0),
            }
            cuSignalExternalSemaphoresAsync {
                10000 => cuSignalExternalSemaphoresAsync(4) per_thread 10000 => cuSignalExternalSemaphoresAsync_ptsz,
            }
            cuStreamAddCallback {
                5000 => cuStreamAddCallback(4) per_thread 7000 => cuStreamAddCallback_ptsz,
            }
            cuStreamAttachMemAsync {
                6000 => cuStreamAttachMemAsync(4) per_thread 7000 => cuStreamAttachMemAsync_ptsz,
            }
            cuStreamBatchMemOp {
                8000 => cuStreamBatchMemOp(4) per_thread 8000 => cuStreamBatchMemOp_ptsz,
                11070 => cuStreamBatchMemOp_v2(4) per_thread 11070 => cuStreamBatchMemOp_v2_ptsz,
            }
            cuStreamBeginCapture {
                10000 => cuStreamBeginCapture(1) per_thread 10000 => cuStreamBeginCapture_ptsz,
                10010 => cuStreamBeginCapture_v2(2) per_thread 10010 => cuStreamBeginCapture_v2_ptsz,
            }
            cuStreamBeginCaptureToCig {
                13010 => cuStreamBeginCaptureToCig(2) per_thread 13010 => cuStreamBeginCaptureToCig_ptsz,
            }
            cuStreamBeginCaptureToGraph {
                12030 => cuStreamBeginCaptureToGraph(6) per_thread 12030 => cuStreamBeginCaptureToGraph_ptsz,
            }
            cuStreamBeginRecaptureToGraph {
                13030 => cuStreamBeginRecaptureToGraph(5) per_thread 13030 => cuStreamBeginRecaptureToGraph_ptsz,
            }
            cuStreamCopyAttributes {
                11000 => cuStreamCopyAttributes(2) per_thread 11000 => cuStreamCopyAttributes_ptsz,
            }
            cuStreamCreate {
                2000 => cuStreamCreate(2),
            }
            cuStreamCreateWithPriority {
                5050 => cuStreamCreateWithPriority(3),
            }
            cuStreamDestroy {
                2000 => cuStreamDestroy(1),
                4000 => cuStreamDestroy_v2(1),
            }
            cuStreamEndCapture {
                10000 => cuStreamEndCapture(2) per_thread 10000 => cuStreamEndCapture_ptsz,
            }
            cuStreamEndCaptureToCig {
                13010 => cuStreamEndCaptureToCig(1) per_thread 13010 => cuStreamEndCaptureToCig_ptsz,
            }
            cuStreamGetAttribute {
                11000 => cuStreamGetAttribute(3) per_thread 11000 => cuStreamGetAttribute_ptsz,
            }
            cuStreamGetCaptureInfo {
                10010 => cuStreamGetCaptureInfo(3) per_thread 10010 => cuStreamGetCaptureInfo_ptsz,
                11030 => cuStreamGetCaptureInfo_v2(6) per_thread 11030 => cuStreamGetCaptureInfo_v2_ptsz,
                12030 => cuStreamGetCaptureInfo_v3(7) per_thread 12030 => cuStreamGetCaptureInfo_v3_ptsz,
            }
            cuStreamGetCtx {
                9020 => cuStreamGetCtx(2) per_thread 9020 => cuStreamGetCtx_ptsz,
                12050 => cuStreamGetCtx_v2(3) per_thread 12050 => cuStreamGetCtx_v2_ptsz,
            }
            cuStreamGetDevResource {
                13010 => cuStreamGetDevResource(3) per_thread 13010 => cuStreamGetDevResource_ptsz,
            }
            cuStreamGetDevice {
                12080 => cuStreamGetDevice(2) per_thread 12080 => cuStreamGetDevice_ptsz,
            }
            cuStreamGetFlags {
                5050 => cuStreamGetFlags(2) per_thread 7000 => cuStreamGetFlags_ptsz,
            }
            cuStreamGetGreenCtx {
                12040 => cuStreamGetGreenCtx(2),
            }
            cuStreamGetId {
                12000 => cuStreamGetId(2) per_thread 12000 => cuStreamGetId_ptsz,
            }
            cuStreamGetPriority {
                5050 => cuStreamGetPriority(2) per_thread 7000 => cuStreamGetPriority_ptsz,
            }
            cuStreamIsCapturing {
                10000 => cuStreamIsCapturing(2) per_thread 10000 => cuStreamIsCapturing_ptsz,
            }
            cuStreamQuery {
                2000 => cuStreamQuery(1) per_thread 7000 => cuStreamQuery_ptsz,
            }
            cuStreamSetAttribute {
                11000 => cuStreamSetAttribute(3) per_thread 11000 => cuStreamSetAttribute_ptsz,
            }
            cuStreamSynchronize {
                2000 => cuStreamSynchronize(1) per_thread 7000 => cuStreamSynchronize_ptsz,
            }
            cuStreamUpdateCaptureDependencies {
                11030 => cuStreamUpdateCaptureDependencies(4) per_thread 11030 => cuStreamUpdateCaptureDependencies_ptsz,
                12030 => cuStreamUpdateCaptureDependencies_v2(5) per_thread 12030 => cuStreamUpdateCaptureDependencies_v2_ptsz,
            }
            cuStreamWaitEvent {
                3020 => cuStreamWaitEvent(3) per_thread 7000 => cuStreamWaitEvent_ptsz,
            }
            cuStreamWaitValue32 {
                8000 => cuStreamWaitValue32(4) per_thread 8000 => cuStreamWaitValue32_ptsz,
                11070 => cuStreamWaitValue32_v2(4) per_thread 11070 => cuStreamWaitValue32_v2_ptsz,
            }
            cuStreamWaitValue64 {
                9000 => cuStreamWaitValue64(4) per_thread 9000 => cuStreamWaitValue64_ptsz,
                11070 => cuStreamWaitValue64_v2(4) per_thread 11070 => cuStreamWaitValue64_v2_ptsz,
            }
            cuStreamWriteValue32 {
                8000 => cuStreamWriteValue32(4) per_thread 8000 => cuStreamWriteValue32_ptsz,
                11070 => cuStreamWriteValue32_v2(4) per_thread 11070 => cuStreamWriteValue32_v2_ptsz,
            }
            cuStreamWriteValue64 {
                9000 => cuStreamWriteValue64(4) per_thread 9000 => cuStreamWriteValue64_ptsz,
                11070 => cuStreamWriteValue64_v2(4) per_thread 11070 => cuStreamWriteValue64_v2_ptsz,
            }
            cuSubgridCreate {
                13030 => cuSubgridCreate(?),
            }
            cuSubgridWorkerGridCreate {
                13030 => cuSubgridWorkerGridCreate(?),
            }
            cuSubgridWorksetCreate {
                13030 => cuSubgridWorksetCreate(?),
            }
            cuSurfObjectCreate {
                5000 => cuSurfObjectCreate(2),
            }
            cuSurfObjectDestroy {
                5000 => cuSurfObjectDestroy(1),
            }
            cuSurfObjectGetResourceDesc {
                5000 => cuSurfObjectGetResourceDesc(2),
            }
            cuSurfRefGetArray {
                3000 => cuSurfRefGetArray(2),
            }
            cuSurfRefSetArray {
                3000 => cuSurfRefSetArray(3),
            }
            cuTensorMapEncodeIm2col {
                12000 => cuTensorMapEncodeIm2col(15),
            }
            cuTensorMapEncodeIm2colWide {
                12080 => cuTensorMapEncodeIm2colWide(16),
            }
            cuTensorMapEncodeTiled {
                12000 => cuTensorMapEncodeTiled(12),
            }
            cuTensorMapReplaceAddress {
                12000 => cuTensorMapReplaceAddress(2),
            }
            cuTensorMapSetAllocationClass {
                13050 => cuTensorMapSetAllocationClass(3),
            }
            cuTexObjectCreate {
                5000 => cuTexObjectCreate(4),
            }
            cuTexObjectDestroy {
                5000 => cuTexObjectDestroy(1),
            }
            cuTexObjectGetResourceDesc {
                5000 => cuTexObjectGetResourceDesc(2),
            }
            cuTexObjectGetResourceViewDesc {
                5000 => cuTexObjectGetResourceViewDesc(2),
            }
            cuTexObjectGetTextureDesc {
                5000 => cuTexObjectGetTextureDesc(2),
            }
            cuTexRefCreate {
                2000 => cuTexRefCreate(1),
            }
            cuTexRefDestroy {
                2000 => cuTexRefDestroy(1),
            }
            cuTexRefGetAddress {
                2000 => cuTexRefGetAddress(2),
                3020 => cuTexRefGetAddress_v2(2),
            }
            cuTexRefGetAddressMode {
                2000 => cuTexRefGetAddressMode(3),
            }
            cuTexRefGetArray {
                2000 => cuTexRefGetArray(2),
            }
            cuTexRefGetBorderColor {
                8000 => cuTexRefGetBorderColor(2),
            }
            cuTexRefGetFilterMode {
                2000 => cuTexRefGetFilterMode(2),
            }
            cuTexRefGetFlags {
                2000 => cuTexRefGetFlags(2),
            }
            cuTexRefGetFormat {
                2000 => cuTexRefGetFormat(3),
            }
            cuTexRefGetMaxAnisotropy {
                5000 => cuTexRefGetMaxAnisotropy(2),
            }
            cuTexRefGetMipmapFilterMode {
                5000 => cuTexRefGetMipmapFilterMode(2),
            }
            cuTexRefGetMipmapLevelBias {
                5000 => cuTexRefGetMipmapLevelBias(2),
            }
            cuTexRefGetMipmapLevelClamp {
                5000 => cuTexRefGetMipmapLevelClamp(3),
            }
            cuTexRefGetMipmappedArray {
                5000 => cuTexRefGetMipmappedArray(2),
            }
            cuTexRefSetAddress {
                2000 => cuTexRefSetAddress(4),
                3020 => cuTexRefSetAddress_v2(4),
            }
            cuTexRefSetAddress2D {
                2020 => cuTexRefSetAddress2D(4),
                3020 => cuTexRefSetAddress2D_v2(4),
                4010 => cuTexRefSetAddress2D_v3(4),
            }
            cuTexRefSetAddressMode {
                2000 => cuTexRefSetAddressMode(3),
            }
            cuTexRefSetArray {
                2000 => cuTexRefSetArray(3),
            }
            cuTexRefSetBorderColor {
                8000 => cuTexRefSetBorderColor(2),
            }
            cuTexRefSetFilterMode {
                2000 => cuTexRefSetFilterMode(2),
            }
            cuTexRefSetFlags {
                2000 => cuTexRefSetFlags(2),
            }
            cuTexRefSetFormat {
                2000 => cuTexRefSetFormat(3),
            }
            cuTexRefSetMaxAnisotropy {
                5000 => cuTexRefSetMaxAnisotropy(2),
            }
            cuTexRefSetMipmapFilterMode {
                5000 => cuTexRefSetMipmapFilterMode(2),
            }
            cuTexRefSetMipmapLevelBias {
                5000 => cuTexRefSetMipmapLevelBias(2),
            }
            cuTexRefSetMipmapLevelClamp {
                5000 => cuTexRefSetMipmapLevelClamp(3),
            }
            cuTexRefSetMipmappedArray {
                5000 => cuTexRefSetMipmappedArray(3),
            }
            cuThreadExchangeStreamCaptureMode {
                10010 => cuThreadExchangeStreamCaptureMode(1),
            }
            cuUserObjectCreate {
                11030 => cuUserObjectCreate(5),
            }
            cuUserObjectRelease {
                11030 => cuUserObjectRelease(2),
            }
            cuUserObjectRetain {
                11030 => cuUserObjectRetain(2),
            }
            cuVDPAUCtxCreate {
                3010 => cuVDPAUCtxCreate(5),
                3020 => cuVDPAUCtxCreate_v2(5),
            }
            cuVDPAUGetDevice {
                3010 => cuVDPAUGetDevice(3),
            }
            cuWaitExternalSemaphoresAsync {
                10000 => cuWaitExternalSemaphoresAsync(4) per_thread 10000 => cuWaitExternalSemaphoresAsync_ptsz,
            }
        }
    };
}
// @table-end
