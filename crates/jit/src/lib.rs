//! The JIT pipeline every backend shares.
//!
//! A backend hands over PTX text and gets back a [`JitModule`]: the
//! module's description (kernels, parameters, variables) at once, and
//! compiled code for its target only when asked, one unit at a time:
//!
//! * **Load** checks and describes the module (parse, PTX version, what the
//!   target cannot run) and compiles nothing but, on targets that link the
//!   units of a module together (the host), the unit holding the module's
//!   variables. With the module's description in the cache, a load neither
//!   parses nor compiles.
//! * **Kernels compile when first launched** ([`JitModule::kernel`]), each as
//!   a unit of its own with the functions it reaches; a launch waits only
//!   for its own kernel. Targets whose code objects cannot share variables
//!   (AMDGPU) and modules that take a kernel's address compile as one unit.
//! * **Tiers.** A kernel's first code comes from the fast tier
//!   (`compiler::Tier::Fast`: about a tenth of the optimised compile time);
//!   once its launches have run for as long as the optimised compile is
//!   expected to take ([`TIER_UP_COMPILE_RATIO`] times the fast one,
//!   [`TIER_UP_WARP_COMPILE_RATIO`] for warp-mode code, and at least
//!   [`TIER_UP_MIN`]: [`tier_up_threshold`]), the optimised tier compiles in the
//!   background and later launches switch to it. Either tier found in the cache is
//!   used at once, the optimised one first.
//! * **Background.** After a module's first launch, its other kernels
//!   compile on low-priority threads (one per core), so that the next
//!   kernel a program launches is often ready — in modules of at most
//!   [`SPECULATE_MAX_PTX_BYTES`] of PTX, a program's own kernels; a
//!   library's template instances (CUB, Thrust, ggml) are compiled only
//!   when launched. This work stops at process exit (`background.rs`).
//! * **Cache** ([`cache`]): every unit's object, and the module's
//!   description, keyed by the PTX text, the target's fingerprint (processor
//!   and features), the options and the unit.
//!
//! Configuration: `ANYCUDA_JIT_TIER` (`auto`, the default; `fast`: never
//! optimise; `opt`: compile every kernel optimised at once),
//! `ANYCUDA_JIT_BACKGROUND=0` (no background compiles), the cache
//! variables of [`cache`], and `ANYCUDA_WARP` (see `compiler::Options`).

mod background;
pub mod cache;
mod codec;
mod module;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use module::{Compiled, JitModule};

/// Waits until no background compile is queued or running (tests and
/// benchmarks that must measure one thing at a time).
pub fn wait_for_background_compiles() {
    background::wait_idle();
}

/// Launch time after which a kernel's optimised code is worth compiling,
/// whatever its fast compile cost.
pub const TIER_UP_MIN: Duration = Duration::from_millis(20);

/// An optimised compile costs about this many fast ones (nvcc corpus,
/// medians per kernel: 125 ms against 15 ms of CPU time). A kernel is
/// promoted once its launches have run as long as its optimised compile
/// is expected to take: the background work then never exceeds the
/// kernel's own run time, and a short program does not wait at its exit
/// for a long compile it will not use.
pub const TIER_UP_COMPILE_RATIO: u32 = 8;

/// [`TIER_UP_COMPILE_RATIO`] for warp-mode code (`KernelInfo::lanes` 32),
/// whose fast tier already generates code with LLVM's `Less` level: its
/// optimised compile costs about two to four fast ones (medians of the
/// optimised over the fast compile time: nvcc corpus, 83 warp-mode
/// kernels, 2.1; oracle, 37, 1.7; llama.cpp's `mul_mat_vec_f`,
/// `mul_mat_f`, `mul_mat_q_stream_k_fixup` and
/// `flash_attn_combine_results` 3.9, 3.7, 3.4 and 2.3; against 6.7 and 10
/// for the corpus's thread-by-thread and guarded kernels). With the
/// thread ratio, warp kernels ran fast code two to four times as long as
/// the rule means to (llama.cpp's `mul_mat_vec_f`, 283 ms fast: 2.3 s of
/// launches instead of 0.85 s).
pub const TIER_UP_WARP_COMPILE_RATIO: u32 = 3;

/// The launch time after which a kernel whose fast code is `fast` is
/// compiled optimised: its optimised compile's expected cost, at least
/// [`TIER_UP_MIN`].
pub fn tier_up_threshold(fast: &Compiled) -> Duration {
    let ratio = if fast.info.kernels.iter().any(|k| k.lanes > 1) { TIER_UP_WARP_COMPILE_RATIO } else { TIER_UP_COMPILE_RATIO };
    TIER_UP_MIN.max(fast.compile_time * ratio)
}

/// Largest module (bytes of PTX text) whose other kernels are compiled
/// speculatively after its first launch.
///
/// Speculation pays when a program launches most of its module's kernels,
/// as programs do with kernels of their own: the nvcc test programs'
/// modules are 4 KB (median) to 100 KB with up to 23 kernels. Libraries of
/// template instances launch a small part of theirs: the CUB and Thrust
/// programs' modules are 0.96 and 2.1 MB (25 and 49 kernels), ggml's CUDA
/// backend ~175 MB (~7,000 kernels, of which a text generation launches
/// ~50). Compiling all of those costs CPU time the program competes with
/// for its whole run, and a process exits only after the compiles running
/// then finish (`background.rs`): at the lowest priority, beside other
/// load, one of ggml's large kernels held `llama-simple`'s exit for four
/// minutes after 7.5 s of generation.
pub const SPECULATE_MAX_PTX_BYTES: usize = 256 << 10;

/// Which tiers kernels compile in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierPolicy {
    /// Fast first; optimised in the background for kernels that run long.
    Adaptive,
    /// Only the fast tier.
    FastOnly,
    /// Only the optimised tier, at first launch.
    OptimizedOnly,
}

/// How a [`Jit`] compiles and caches.
#[derive(Clone)]
pub struct JitConfig {
    pub cache_dir: Option<PathBuf>,
    pub cache_limit: u64,
    pub tiers: TierPolicy,
    /// Compile a module's other kernels in the background after its first
    /// launch.
    pub background: bool,
    /// The compiler options (the tier is set per compile).
    pub options: compiler::Options,
    /// For tests: called with the unit's name before each compile (not for
    /// cache hits), on the compiling thread.
    pub before_compile: Option<CompileHook>,
}

impl std::fmt::Debug for JitConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitConfig")
            .field("cache_dir", &self.cache_dir)
            .field("cache_limit", &self.cache_limit)
            .field("tiers", &self.tiers)
            .field("background", &self.background)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// See [`JitConfig::before_compile`].
pub type CompileHook = Arc<dyn Fn(&str) + Send + Sync>;

/// What a [`Jit`] has done since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// Units compiled (each unit once per tier).
    pub compiled: usize,
    /// Units taken from the cache.
    pub cache_hits: usize,
    /// Module descriptions taken from the cache.
    pub described_from_cache: usize,
    /// Times the cache was asked for a unit (hits and misses).
    pub cache_lookups: usize,
    /// Helpers compiled ([`Jit::helper_object`]; not those from the cache).
    pub helpers_compiled: usize,
}

impl JitConfig {
    /// From the environment (see the crate documentation).
    pub fn from_env() -> JitConfig {
        let tiers = match std::env::var("ANYCUDA_JIT_TIER").as_deref() {
            Ok("fast") => TierPolicy::FastOnly,
            Ok("opt") => TierPolicy::OptimizedOnly,
            Ok("auto") | Err(_) => TierPolicy::Adaptive,
            Ok(other) => {
                tracing::warn!("ANYCUDA_JIT_TIER={other} is not one of auto, fast, opt; using auto");
                TierPolicy::Adaptive
            }
        };
        JitConfig {
            cache_dir: cache::default_dir(),
            cache_limit: cache::limit_from_env(),
            tiers,
            background: std::env::var("ANYCUDA_JIT_BACKGROUND").map_or(true, |v| v != "0"),
            options: compiler::Options::default(),
            before_compile: None,
        }
    }

    /// No cache, no background work, one tier: for tests that must see
    /// every compile.
    pub fn uncached(tier: compiler::Tier) -> JitConfig {
        JitConfig {
            cache_dir: None,
            cache_limit: 0,
            tiers: match tier {
                compiler::Tier::Fast => TierPolicy::FastOnly,
                compiler::Tier::Optimized => TierPolicy::OptimizedOnly,
            },
            background: false,
            options: compiler::Options::default(),
            before_compile: None,
        }
    }
}

/// The JIT of one target: creates [`JitModule`]s.
pub struct Jit {
    target: compiler::Target,
    fingerprint: String,
    config: JitConfig,
    cache: Option<cache::Cache>,
    pub(crate) compiled: std::sync::atomic::AtomicUsize,
    pub(crate) cache_hits: std::sync::atomic::AtomicUsize,
    pub(crate) described_from_cache: std::sync::atomic::AtomicUsize,
    pub(crate) cache_lookups: std::sync::atomic::AtomicUsize,
    helpers_compiled: std::sync::atomic::AtomicUsize,
}

impl Jit {
    pub fn new(target: compiler::Target, config: JitConfig) -> Arc<Jit> {
        let fingerprint = compiler::target_fingerprint(&target);
        let cache = config.cache_dir.as_deref().and_then(|d| cache::Cache::open(d, config.cache_limit));
        Arc::new(Jit {
            target,
            fingerprint,
            config,
            cache,
            compiled: Default::default(),
            cache_hits: Default::default(),
            described_from_cache: Default::default(),
            cache_lookups: Default::default(),
            helpers_compiled: Default::default(),
        })
    }

    pub fn target(&self) -> &compiler::Target {
        &self.target
    }

    pub fn config(&self) -> &JitConfig {
        &self.config
    }

    /// Counts of compiles and cache hits so far.
    pub fn stats(&self) -> JitStats {
        use std::sync::atomic::Ordering::Relaxed;
        JitStats {
            compiled: self.compiled.load(Relaxed),
            cache_hits: self.cache_hits.load(Relaxed),
            described_from_cache: self.described_from_cache.load(Relaxed),
            cache_lookups: self.cache_lookups.load(Relaxed),
            helpers_compiled: self.helpers_compiled.load(Relaxed),
        }
    }

    /// The cache in use, if any.
    pub fn cache(&self) -> Option<&cache::Cache> {
        self.cache.as_ref()
    }

    /// The object of a helper that compiled units call
    /// (`compiler::CompiledModule::helpers`): from the cache, or compiled
    /// (and cached). The caller links it once per process.
    pub fn helper_object(&self, helper: &compiler::HelperCode) -> Result<Vec<u8>, driver::backend::ModuleError> {
        use driver::backend::{ModuleError, ModuleErrorKind};
        let key = cache::key(&[b"helper", self.fingerprint.as_bytes(), helper.ir.as_bytes()]);
        if let Some(object) = self.cache.as_ref().and_then(|c| c.load(&key)) {
            return Ok(object);
        }
        self.helpers_compiled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let target = &self.target;
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compiler::compile_helper(target, helper)));
        let object = match compiled {
            Ok(Ok(object)) => object,
            Ok(Err(e)) => {
                return Err(ModuleError { kind: ModuleErrorKind::Other, log: format!("compiling the helper `{}`: {e}", helper.name) })
            }
            Err(_) => {
                return Err(ModuleError {
                    kind: ModuleErrorKind::Other,
                    log: format!("the compiler failed on the helper `{}` (a bug in anycuda)", helper.name),
                })
            }
        };
        tracing::debug!("JIT: compiled the helper `{}` ({} bytes of code)", helper.name, object.len());
        if let Some(cache) = &self.cache {
            cache.store(&key, &object);
        }
        Ok(object)
    }

    /// Checks and describes a module; see the crate documentation.
    pub fn load(
        self: &Arc<Self>,
        ptx: &str,
        options: &driver::backend::ModuleOptions,
    ) -> Result<Arc<JitModule>, driver::backend::ModuleError> {
        JitModule::load(self.clone(), ptx, options)
    }
}
