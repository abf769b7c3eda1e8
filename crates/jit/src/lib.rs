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
//!   once its launches have run for longer than that compile took (and at
//!   least [`TIER_UP_MIN`]), the optimised tier compiles in the background
//!   and later launches switch to it. Either tier found in the cache is
//!   used at once, the optimised one first.
//! * **Background.** After a module's first launch, its other kernels
//!   compile on low-priority threads (one per core), so that the next
//!   kernel a program launches is often ready; this work stops at process
//!   exit (`background.rs`).
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
        }
    }

    /// The cache in use, if any.
    pub fn cache(&self) -> Option<&cache::Cache> {
        self.cache.as_ref()
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
