//! A module under the JIT: its description, and its code unit by unit.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

use compiler::{ModuleInfo, Tier, Unit};
use driver::backend::{ModuleError, ModuleErrorKind, ModuleOptions};

use crate::background::{self, Priority};
use crate::codec::{put_str, read_info, write_info, Reader};
use crate::{Jit, TierPolicy, SPECULATE_MAX_PTX_BYTES, TIER_UP_MIN};

type Ast<'a> = ptx::ast::Module<'a>;

self_cell::self_cell!(
    /// The PTX text and the syntax tree that borrows from it.
    struct Parsed {
        owner: Arc<str>,
        #[covariant]
        dependent: Ast,
    }
);

/// Compiled code of one unit.
#[derive(Debug)]
pub struct Compiled {
    /// A relocatable object (host) or a code object (AMDGPU).
    pub object: Vec<u8>,
    /// What the unit defines: its kernels, with their lane counts and
    /// frame sizes, and (for the shared unit or a whole module) the
    /// variables.
    pub info: ModuleInfo,
    pub tier: Tier,
    /// Whether it came from the disk cache.
    pub from_cache: bool,
    /// CPU time the compile took (for code from the cache, the compile
    /// that made the entry: what the tier-up rule weighs a kernel's
    /// run time against).
    pub compile_time: Duration,
    /// The helpers the object calls but does not define
    /// (`compiler::CompiledModule::helpers`; [`Jit::helper_object`]
    /// compiles them).
    pub helpers: Vec<compiler::HelperCode>,
}

type Code = OnceLock<Result<Arc<Compiled>, ModuleError>>;

/// What a load learns about a module (cached, so that a warm load does
/// not parse).
#[derive(Debug, Clone, PartialEq)]
struct Desc {
    /// Kernels as the driver needs them (lane counts are the compiled
    /// unit's business) and variables.
    info: ModuleInfo,
    /// The SM number of the PTX `.target` (0 when absent).
    target_sm: u32,
    /// The module is cut into units (`compiler::partition`).
    split: bool,
    /// `compiler::Partition::variable_table`.
    variable_table: bool,
    /// Each kernel's item index in the module.
    items: Vec<u32>,
    /// Per kernel: it compiles as a unit of its own (else it is in the
    /// shared unit, or the module is whole).
    apart: Vec<bool>,
}

/// Per kernel: its code in each tier, and how long it has run.
struct Slot {
    code: [Code; 2],
    /// The kernel as warps in lockstep, for launches its thread-by-thread
    /// code's conditions do not hold for (`KernelInfo::lockstep_guard`).
    lockstep: Code,
    run_ns: AtomicU64,
    tier_up_queued: AtomicBool,
    /// The cache was asked for optimised code once (asking on every
    /// launch cost a file open each: 3 -> 55 µs per empty launch).
    optimised_looked_up: AtomicBool,
    /// Per tier: the CPU-time clock of the background thread compiling
    /// that code now ([`NO_COMPILE`] when none; [`NO_CLOCK`] when its clock
    /// is unknown).
    in_background: [AtomicI64; 2],
}

/// The value of `cell`, made by `make` outside the cell's lock if there is
/// none yet. Whatever a background job fills is filled this way, so that
/// no other thread blocks on the cell's lock while a thread of the lowest
/// priority works under it (see [`JitModule::race`] for what a launch does
/// about a kernel a background job is compiling): a caller that finds the
/// cell empty makes the value itself, and the cell keeps the first value
/// set (the values are the same: one text, one compiler).
fn get_or_make<T>(cell: &OnceLock<T>, make: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let made = make();
    cell.get_or_init(|| made)
}

/// `Slot::in_background` when no background job compiles the code.
const NO_COMPILE: i64 = i64::MIN;
/// `Slot::in_background` for a job whose thread's clock is unknown.
const NO_CLOCK: i64 = i64::MIN + 1;
/// How long a launch watches a background compile's progress before it
/// judges whether the job is getting the CPU (see [`JitModule::race`]).
const RACE_SAMPLE: Duration = Duration::from_millis(20);

/// The CPU time of the background thread whose clock `clock` is (a value of
/// `Slot::in_background`); `None` when unknown. The background threads live
/// as long as the process, so their clocks stay valid.
fn thread_cpu(clock: i64) -> Option<Duration> {
    let id = libc::clockid_t::try_from(clock).ok()?;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: reads a clock into a local.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(u64::try_from(ts.tv_sec).ok()?, u32::try_from(ts.tv_nsec).ok()?))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn tier_index(t: Tier) -> usize {
    match t {
        Tier::Fast => 0,
        Tier::Optimized => 1,
    }
}

/// A module loaded into the JIT. Shared between the threads that launch
/// its kernels and the background compiles.
pub struct JitModule {
    jit: Arc<Jit>,
    this: Weak<JitModule>,
    text: Arc<str>,
    hash: [u8; 32],
    source: String,
    parsed: OnceLock<Result<Parsed, ModuleError>>,
    /// Made once, for every unit's compile.
    analysis: OnceLock<compiler::ModuleAnalysis>,
    desc: Desc,
    slots: Vec<Slot>,
    /// The shared unit (split modules) or the whole module.
    shared: Code,
    launched: AtomicBool,
    described_from_cache: bool,
    /// Notified when a background job or a launch's compile thread fills a
    /// slot (see [`JitModule::race`]).
    filled: (Mutex<()>, Condvar),
}

fn invalid(log: String) -> ModuleError {
    ModuleError { kind: ModuleErrorKind::InvalidPtx, log }
}

fn parse(text: Arc<str>) -> Result<Parsed, ModuleError> {
    Parsed::try_new(text, |t| ptx::parse(t).map_err(|d| invalid(format!("PTX syntax errors:\n{d}"))))
}

impl JitModule {
    pub(crate) fn load(jit: Arc<Jit>, ptx_text: &str, options: &ModuleOptions) -> Result<Arc<JitModule>, ModuleError> {
        let hash = *blake3::hash(ptx_text.as_bytes()).as_bytes();
        let text: Arc<str> = Arc::from(ptx_text);
        let desc_key = jit.unit_key(&hash, "description", None);
        let cached = jit.cache.as_ref().and_then(|c| c.load(&desc_key)).and_then(|p| decode_desc(&p));
        let described_from_cache = cached.is_some();
        if described_from_cache {
            jit.described_from_cache.fetch_add(1, Ordering::Relaxed);
        }
        let analysis = OnceLock::new();
        let (desc, parsed) = match cached {
            Some(d) => (d, OnceLock::new()),
            None => {
                let parsed = parse(text.clone())?;
                let a = compiler::analyse(parsed.borrow_dependent());
                let desc = describe(&jit, parsed.borrow_dependent(), &a)?;
                let _ = analysis.set(a);
                if let Some(c) = &jit.cache {
                    c.store(&desc_key, &encode_desc(&desc));
                }
                let cell = OnceLock::new();
                let _ = cell.set(Ok(parsed));
                (desc, cell)
            }
        };
        let slots = desc
            .items
            .iter()
            .map(|_| Slot {
                code: [OnceLock::new(), OnceLock::new()],
                lockstep: OnceLock::new(),
                run_ns: AtomicU64::new(0),
                tier_up_queued: AtomicBool::new(false),
                optimised_looked_up: AtomicBool::new(false),
                in_background: [AtomicI64::new(NO_COMPILE), AtomicI64::new(NO_COMPILE)],
            })
            .collect();
        Ok(Arc::new_cyclic(|this| JitModule {
            jit,
            this: this.clone(),
            text,
            hash,
            source: options.source.clone(),
            parsed,
            analysis,
            desc,
            slots,
            shared: OnceLock::new(),
            launched: AtomicBool::new(false),
            filled: (Mutex::new(()), Condvar::new()),
            described_from_cache,
        }))
    }

    /// The JIT the module belongs to.
    pub fn jit(&self) -> &Arc<Jit> {
        &self.jit
    }

    /// The module's kernels (parameters, shared memory; lane counts are 1
    /// here, see [`Compiled::info`]) and variables.
    pub fn info(&self) -> &ModuleInfo {
        &self.desc.info
    }

    /// The module's kernels as the driver describes them, for a module
    /// loaded with `options`. As NVIDIA reports them: the PTX version is the
    /// virtual architecture the PTX targets (80 for compute_80, not the PTX
    /// ISA version; libraries such as CUB dispatch on it), the binary
    /// version the architecture the code is compiled for (the device's, for
    /// JIT-compiled code).
    pub fn kernel_descs(&self, options: &ModuleOptions) -> Vec<driver::backend::KernelDesc> {
        let ptx_version = if self.desc.target_sm != 0 { self.desc.target_sm } else { options.target };
        let info = &self.desc.info;
        let const_bytes: u32 = info.globals.iter().filter(|g| g.constant).map(|g| g.size as u32).sum();
        info.kernels
            .iter()
            .map(|k| driver::backend::KernelDesc {
                name: k.name.clone(),
                params: k.params.iter().map(|p| driver::backend::ParamDesc { offset: p.offset, size: p.size, align: p.align }).collect(),
                param_bytes: k.param_bytes,
                static_shared_bytes: k.static_shared_bytes,
                const_bytes,
                local_bytes: k.local_bytes,
                num_regs: 32,
                reqntid: k.reqntid,
                maxntid: k.maxntid,
                min_blocks_per_sm: None,
                ptx_version,
                binary_version: options.target,
                calls_malloc: k.calls_malloc,
                calls_printf: k.calls_printf,
            })
            .collect()
    }

    /// Whether the load found the module's description in the cache (and
    /// so neither parsed nor checked the text again).
    pub fn described_from_cache(&self) -> bool {
        self.described_from_cache
    }

    /// The SM number of the PTX's `.target` directive (0 when absent).
    pub fn target_sm(&self) -> u32 {
        self.desc.target_sm
    }

    /// Whether the module is cut into units (`compiler::partition`):
    /// kernels compiled apart ([`JitModule::compiled_apart`]) beside the
    /// shared unit ([`JitModule::shared`]); otherwise the shared unit is
    /// the whole module and holds every kernel.
    pub fn splits(&self) -> bool {
        self.desc.split
    }

    /// Whether the shared unit defines the variable table kernels
    /// compiled apart read the module's variables through
    /// (`compiler::Partition::variable_table`).
    pub fn variable_table(&self) -> bool {
        self.desc.split && self.desc.variable_table
    }

    /// Whether kernel `k` compiles as a unit of its own (at its first
    /// launch); otherwise its code is in the shared unit.
    pub fn compiled_apart(&self, k: usize) -> bool {
        self.desc.split && self.desc.apart.get(k).copied().unwrap_or(false)
    }

    /// The unit every kernel's code links against and that holds the
    /// kernels not compiled apart: the variables and those kernels (split
    /// modules; an empty object when there is neither) or the whole
    /// module. Compiled once; the backend loads it with the module.
    pub fn shared(&self) -> Result<Arc<Compiled>, ModuleError> {
        self.shared
            .get_or_init(|| {
                let kernels = self.desc.split && self.desc.apart.iter().any(|a| !a);
                if self.desc.split && self.desc.info.globals.is_empty() && !kernels {
                    // Nothing to define: no object at all.
                    Ok(Arc::new(Compiled {
                        object: Vec::new(),
                        info: ModuleInfo { kernels: Vec::new(), globals: Vec::new() },
                        tier: Tier::Fast,
                        from_cache: false,
                        compile_time: Duration::ZERO,
                        helpers: Vec::new(),
                    }))
                } else if self.desc.split && !kernels {
                    // Data and the functions initializers point to: fast code is enough.
                    self.compile(Unit::Shared, Tier::Fast)
                } else if self.desc.split {
                    // Kernels beside the variables: as a whole module's.
                    let tier = if self.jit.config.tiers == TierPolicy::FastOnly { Tier::Fast } else { Tier::Optimized };
                    self.compile(Unit::Shared, tier)
                } else {
                    // Kernels and variables in one object: it cannot be
                    // swapped for a faster one later (the variables would
                    // move), so it is compiled optimised unless told not to.
                    let tier = if self.jit.config.tiers == TierPolicy::FastOnly { Tier::Fast } else { Tier::Optimized };
                    self.compile(Unit::Module, tier)
                }
            })
            .clone()
    }

    /// The best code available now for kernel `k` (an index into
    /// [`JitModule::info`]'s kernels), compiling it in its first tier if
    /// there is none. Blocks while that kernel compiles, and only then:
    /// never for a background compile (see [`get_or_make`]). For a kernel
    /// not compiled apart, the shared unit.
    pub fn kernel(&self, k: usize) -> Result<Arc<Compiled>, ModuleError> {
        let slot = self.slots.get(k).ok_or_else(|| invalid(format!("the module has no kernel {k}")))?;
        if !self.launched.load(Ordering::Relaxed) && !self.launched.swap(true, Ordering::Relaxed) {
            self.precompile_others(k);
        }
        if !self.compiled_apart(k) {
            return self.shared();
        }
        let item = self.desc.items[k];
        let opt = &slot.code[tier_index(Tier::Optimized)];
        if let Some(Ok(c)) = opt.get() {
            return Ok(c.clone());
        }
        match self.jit.config.tiers {
            TierPolicy::OptimizedOnly => self.first_code(k, Tier::Optimized),
            TierPolicy::FastOnly => self.first_code(k, Tier::Fast),
            TierPolicy::Adaptive => {
                // Optimised code from the cache beats compiling fast code.
                if opt.get().is_none() && !slot.optimised_looked_up.swap(true, Ordering::Relaxed) {
                    if let Some(c) = self.cached(Unit::Kernel(item), Tier::Optimized, false) {
                        let _ = opt.set(Ok(Arc::new(c)));
                        if let Some(Ok(c)) = opt.get() {
                            return Ok(c.clone());
                        }
                    }
                }
                self.first_code(k, Tier::Fast)
            }
        }
    }

    /// Kernel `k`'s code in `tier`, compiled now if there is none. When a
    /// background job is compiling it, a launch neither waits for that job
    /// alone (it runs at the lowest priority) nor throws its head start
    /// away: see [`JitModule::race`].
    fn first_code(&self, k: usize, tier: Tier) -> Result<Arc<Compiled>, ModuleError> {
        let slot = self.slots.get(k).ok_or_else(|| invalid(format!("the module has no kernel {k}")))?;
        let cell = &slot.code[tier_index(tier)];
        if let Some(c) = cell.get() {
            return c.clone();
        }
        if slot.in_background[tier_index(tier)].load(Ordering::Acquire) != NO_COMPILE {
            if let Some(c) = self.race(k, tier) {
                return c;
            }
        }
        let item = self.desc.items[k];
        cell.get_or_init(|| self.compile(Unit::Kernel(item), tier)).clone()
    }

    /// Kernel `k` in `tier` from the background job compiling it now, or
    /// from whichever finishes first of that job and the same compile on a
    /// thread of the launch's priority. A background thread runs at the
    /// lowest priority: on a quiet machine it is already well into the
    /// compile (a program's next kernel, queued at its first launch) and
    /// runs at full speed, and the launch waits for it; on a busy one it can
    /// take many times a compile's CPU time (seen: a launch waiting 47-49 s
    /// for a 0.7 s compile while two other programs kept both cores busy),
    /// and an unprivileged thread cannot raise its priority back. So the
    /// launch watches the job's CPU time, and once the job gets less than
    /// half of a core ([`RACE_SAMPLE`] at a time) it starts its own compile
    /// thread (which would starve the job further) and takes the first code
    /// done; a compile thread that lost is lowered to the lowest priority for
    /// the rest of its compile. `None` when no thread could be started.
    fn race(&self, k: usize, tier: Tier) -> Option<Result<Arc<Compiled>, ModuleError>> {
        let slot = self.slots.get(k)?;
        let cell = &slot.code[tier_index(tier)];
        // The compile thread's id, and whether it is done (under the lock,
        // so that a thread id is never used after its thread has ended).
        let helper = Arc::new(Mutex::new((0 as libc::id_t, false)));
        let mut started = false;
        let mut sample = (std::time::Instant::now(), thread_cpu(slot.in_background[tier_index(tier)].load(Ordering::Acquire)));
        let mut g = lock(&self.filled.0);
        let code = loop {
            if let Some(c) = cell.get() {
                break c.clone();
            }
            let elapsed = sample.0.elapsed();
            if !started && elapsed >= RACE_SAMPLE {
                let cpu = thread_cpu(slot.in_background[tier_index(tier)].load(Ordering::Acquire));
                let progress = match (sample.1, cpu) {
                    (Some(a), Some(b)) => b.saturating_sub(a),
                    _ => Duration::ZERO,
                };
                if progress * 2 < elapsed {
                    let this = self.this.upgrade()?;
                    let h = helper.clone();
                    let spawned = std::thread::Builder::new().name("anycuda-compile".into()).spawn(move || {
                        // SAFETY: a plain system call.
                        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
                        lock(&h).0 = tid;
                        background::run_counted(|| {
                            if let Some(slot) = this.slots.get(k) {
                                get_or_make(&slot.code[tier_index(tier)], || this.compile(Unit::Kernel(this.desc.items[k]), tier));
                            }
                        });
                        lock(&h).1 = true;
                        this.notify_filled();
                    });
                    if let Err(e) = spawned {
                        tracing::warn!("JIT: cannot start a compile thread ({e}); compiling on the launching thread");
                        return None;
                    }
                    started = true;
                }
                sample = (std::time::Instant::now(), cpu);
            }
            g = self.filled.1.wait_timeout(g, RACE_SAMPLE / 4).map_or_else(|e| e.into_inner().0, |r| r.0);
        };
        drop(g);
        let h = lock(&helper);
        if !h.1 && h.0 != 0 {
            // SAFETY: a plain system call on a thread of this process that
            // has not ended (it sets its flag under this lock before).
            unsafe { libc::setpriority(libc::PRIO_PROCESS, h.0, 19) };
        }
        Some(code)
    }

    /// Wakes launches waiting in [`JitModule::race`].
    fn notify_filled(&self) {
        let _g = lock(&self.filled.0);
        self.filled.1.notify_all();
    }

    /// Kernel `k` as 32-lane warps in lockstep (`compiler::WarpMode::Always`),
    /// for a launch its code's `lockstep_guard` does not hold for. Compiled
    /// at the first such launch (once; in the first tier), never before:
    /// most programs never need it.
    pub fn lockstep(&self, k: usize) -> Result<Arc<Compiled>, ModuleError> {
        let slot = self.slots.get(k).ok_or_else(|| invalid(format!("the module has no kernel {k}")))?;
        if !self.compiled_apart(k) {
            return Err(invalid(format!("{}a unit of several kernels carries their lockstep versions", self.located())));
        }
        let item = self.desc.items[k];
        let tier = if self.jit.config.tiers == TierPolicy::OptimizedOnly { Tier::Optimized } else { Tier::Fast };
        slot.lockstep.get_or_init(|| self.compile_as(Unit::Kernel(item), tier, true)).clone()
    }

    /// Counts a launch's run time towards kernel `k`'s promotion to the
    /// optimised tier.
    pub fn record_run(&self, k: usize, elapsed: Duration) {
        let Some(slot) = self.slots.get(k) else { return };
        if !self.compiled_apart(k) || self.jit.config.tiers != TierPolicy::Adaptive {
            return;
        }
        let ns = slot.run_ns.fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed) + elapsed.as_nanos() as u64;
        if slot.code[1].get().is_some() || slot.tier_up_queued.load(Ordering::Relaxed) {
            return;
        }
        let threshold = match slot.code[0].get() {
            Some(Ok(c)) => crate::tier_up_threshold(c),
            _ => TIER_UP_MIN,
        };
        if Duration::from_nanos(ns) < threshold || slot.tier_up_queued.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::debug!(
            "JIT: kernel {} ran {:.1} ms in fast code; compiling it optimised",
            self.desc.info.kernels[k].name,
            ns as f64 / 1e6
        );
        self.submit_tier_up(k);
    }

    /// Compiles kernel `k` optimised in the background now, for a backend
    /// that does not time its launches (a GPU's run asynchronously): once
    /// per kernel, when it compiles apart under [`TierPolicy::Adaptive`]
    /// and has no optimised code yet. [`JitModule::kernel`] returns that
    /// code once it is ready.
    pub fn promote(&self, k: usize) {
        let Some(slot) = self.slots.get(k) else { return };
        if !self.compiled_apart(k) || self.jit.config.tiers != TierPolicy::Adaptive || slot.code[1].get().is_some() {
            return;
        }
        if slot.tier_up_queued.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::debug!("JIT: kernel {} launched in fast code; compiling it optimised", self.desc.info.kernels[k].name);
        self.submit_tier_up(k);
    }

    /// Queues kernel `k`'s optimised compile at the tier-up priority.
    fn submit_tier_up(&self, k: usize) {
        let this = self.this.clone();
        let item = self.desc.items[k];
        background::submit(Priority::TierUp, move || {
            if let Some(m) = this.upgrade() {
                m.in_background(k, Tier::Optimized, || m.compile(Unit::Kernel(item), Tier::Optimized));
            }
        });
    }

    /// After the first launch: the other kernels, in the background, in
    /// their first tier (modules of at most [`SPECULATE_MAX_PTX_BYTES`]).
    fn precompile_others(&self, launched: usize) {
        if !self.jit.config.background || !self.desc.split {
            return;
        }
        if self.text.len() > SPECULATE_MAX_PTX_BYTES {
            tracing::debug!(
                "JIT: {}a module of {} KB of PTX: its kernels compile when launched, none in advance",
                self.located(),
                self.text.len() >> 10
            );
            return;
        }
        let tier = if self.jit.config.tiers == TierPolicy::OptimizedOnly { Tier::Optimized } else { Tier::Fast };
        for k in (0..self.slots.len()).filter(|&k| k != launched && self.compiled_apart(k)) {
            let this = self.this.clone();
            let item = self.desc.items[k];
            background::submit(Priority::Speculative, move || {
                if let Some(m) = this.upgrade() {
                    if m.slots.get(k).is_some_and(|slot| slot.code[1].get().is_none()) {
                        m.in_background(k, tier, || m.compile(Unit::Kernel(item), tier));
                    }
                }
            });
        }
    }

    /// A background job's compile of kernel `k` in `tier`, marked as such
    /// while it runs (launches then race it, [`JitModule::race`]).
    fn in_background(&self, k: usize, tier: Tier, compile: impl FnOnce() -> Result<Arc<Compiled>, ModuleError>) {
        let Some(slot) = self.slots.get(k) else { return };
        let flag = &slot.in_background[tier_index(tier)];
        let mut clock: libc::clockid_t = 0;
        // SAFETY: the calling thread's own CPU-time clock id.
        let known = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0;
        flag.store(if known { i64::from(clock) } else { NO_CLOCK }, Ordering::Release);
        get_or_make(&slot.code[tier_index(tier)], compile);
        flag.store(NO_COMPILE, Ordering::Release);
        self.notify_filled();
    }

    fn parsed(&self) -> Result<&Parsed, ModuleError> {
        get_or_make(&self.parsed, || parse(self.text.clone())).as_ref().map_err(Clone::clone)
    }

    fn unit_name(&self, unit: Unit, lockstep: bool) -> String {
        match unit {
            Unit::Module => "module".into(),
            Unit::Shared => "shared".into(),
            Unit::Kernel(item) if lockstep => format!("lockstep kernel {item}"),
            Unit::Kernel(item) => format!("kernel {item}"),
        }
    }

    fn cached(&self, unit: Unit, tier: Tier, lockstep: bool) -> Option<Compiled> {
        let cache = self.jit.cache.as_ref()?;
        self.jit.cache_lookups.fetch_add(1, Ordering::Relaxed);
        let payload = cache.load(&self.jit.unit_key(&self.hash, &self.unit_name(unit, lockstep), Some(tier)))?;
        let mut r = Reader { b: &payload, at: 0 };
        let compile_time = Duration::from_micros(r.u64()?);
        let info = read_info(&mut r)?;
        let helpers =
            (0..r.u32()?).map(|_| Some(compiler::HelperCode { name: r.string()?, ir: r.string()? })).collect::<Option<Vec<_>>>()?;
        let object = payload.get(r.at..)?.to_vec();
        self.jit.cache_hits.fetch_add(1, Ordering::Relaxed);
        for k in &info.kernels {
            let mode = if k.lanes > 1 { "as 32-lane warps" } else { "thread by thread" };
            tracing::debug!("JIT: {}kernel `{}` runs {mode} (code from the cache; why is logged when it compiles)", self.located(), k.name);
        }
        Some(Compiled { object, info, tier, from_cache: true, compile_time, helpers })
    }

    /// One unit in one tier: from the cache, or compiled (and cached).
    fn compile(&self, unit: Unit, tier: Tier) -> Result<Arc<Compiled>, ModuleError> {
        self.compile_as(unit, tier, false)
    }

    /// [`JitModule::compile`]; `lockstep`: every kernel of the unit that
    /// warp mode can run as warps (`compiler::WarpMode::Always`).
    fn compile_as(&self, unit: Unit, tier: Tier, lockstep: bool) -> Result<Arc<Compiled>, ModuleError> {
        if let Some(c) = self.cached(unit, tier, lockstep) {
            return Ok(Arc::new(c));
        }
        let parsed = self.parsed()?;
        let module = parsed.borrow_dependent();
        if let Some(hook) = &self.jit.config.before_compile {
            hook(&self.unit_name(unit, lockstep));
        }
        self.jit.compiled.fetch_add(1, Ordering::Relaxed);
        let mut opts = self.jit.config.options.clone();
        opts.tier = tier;
        if lockstep {
            opts.warp = compiler::WarpMode::Always;
        }
        let start = compiler::profile::thread_cpu_time();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let analysis = get_or_make(&self.analysis, || compiler::analyse(module));
            compiler::compile_unit_analysed(module, parsed.borrow_owner(), &self.jit.target, &opts, unit, analysis)
        }));
        let compile_time = compiler::profile::thread_cpu_time().saturating_sub(start);
        let compiled = match result {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(invalid(format!("{}{e}", self.located()))),
            Err(_) => {
                return Err(ModuleError {
                    kind: ModuleErrorKind::Other,
                    log: format!("{}the compiler failed on {} (a bug in anycuda)", self.located(), self.unit_name(unit, lockstep)),
                })
            }
        };
        tracing::debug!(
            "JIT: compiled {} of {} for {:?} ({tier:?}) in {:.1} ms",
            self.unit_name(unit, lockstep),
            if self.source.is_empty() { "a module" } else { &self.source },
            self.jit.target,
            compile_time.as_secs_f64() * 1e3
        );
        if !lockstep && !compiled.info.kernels.is_empty() {
            // (The backend says why it needs a lockstep version.)
            self.log_modes(module, parsed.borrow_owner(), &opts, unit);
        }
        if let Some(cache) = &self.jit.cache {
            let mut payload = Vec::with_capacity(compiled.object.len() + 256);
            payload.extend_from_slice(&(compile_time.as_micros() as u64).to_le_bytes());
            write_info(&mut payload, &compiled.info);
            payload.extend_from_slice(&(compiled.helpers.len() as u32).to_le_bytes());
            for h in &compiled.helpers {
                put_str(&mut payload, &h.name);
                put_str(&mut payload, &h.ir);
            }
            payload.extend_from_slice(&compiled.object);
            cache.store(&self.jit.unit_key(&self.hash, &self.unit_name(unit, lockstep), Some(tier)), &payload);
        }
        Ok(Arc::new(Compiled {
            object: compiled.object,
            info: compiled.info,
            tier,
            from_cache: false,
            compile_time,
            helpers: compiled.helpers,
        }))
    }

    /// One line per kernel of a unit just compiled: how it runs and why
    /// (`compiler::kernel_modes`); at `info` where the mode may not give a
    /// GPU's results (lanes of a warp not in lockstep, and the analysis
    /// cannot tell whether the kernel synchronises its exchanges: most
    /// such kernels, CUB's, do), else at `debug`.
    fn log_modes(&self, module: &Ast, src: &str, opts: &compiler::Options, unit: Unit) {
        if !tracing::enabled!(tracing::Level::INFO) {
            return;
        }
        let exact_logged = tracing::enabled!(tracing::Level::DEBUG);
        for k in compiler::kernel_modes(module, src, &self.jit.target, opts, unit) {
            if !k.exact {
                tracing::info!("JIT: {}kernel `{}` runs {}", self.located(), k.name, k.why);
            } else if exact_logged {
                tracing::debug!("JIT: {}kernel `{}` runs {}", self.located(), k.name, k.why);
            }
        }
    }

    fn located(&self) -> String {
        if self.source.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.source)
        }
    }
}

impl Jit {
    /// The cache key of one unit of the module whose text hashes to `hash`.
    fn unit_key(&self, hash: &[u8; 32], unit: &str, tier: Option<Tier>) -> [u8; 32] {
        let mut opts = self.config.options.clone();
        opts.tier = tier.unwrap_or(Tier::Fast);
        // Without a tier (a module's description, its variables): what
        // changes them, the warp mode and checked mode (kernels run thread by
        // thread there); unchecked keys stay as they were.
        let options = match tier {
            Some(_) => opts.fingerprint(),
            None if opts.memcheck => format!("{:?},memcheck", opts.warp),
            None => format!("{:?}", opts.warp),
        };
        crate::cache::key(&[b"unit", hash, self.fingerprint.as_bytes(), options.as_bytes(), unit.as_bytes()])
    }
}

/// Checks a parsed module for `jit`'s target and describes it.
fn describe(jit: &Jit, module: &ptx::ast::Module, a: &compiler::ModuleAnalysis) -> Result<Desc, ModuleError> {
    if (module.version.major, module.version.minor) > (9, 9) {
        return Err(ModuleError {
            kind: ModuleErrorKind::UnsupportedPtxVersion,
            log: format!("PTX ISA {}.{} is newer than this compiler knows", module.version.major, module.version.minor),
        });
    }
    let info = compiler::describe_with_options(
        module,
        &compiler::Target::HostCpu,
        &compiler::Options { warp: compiler::WarpMode::Off, ..jit.config.options.clone() },
    );
    let items = info
        .kernels
        .iter()
        .map(|k| {
            module
                .symbol_by_name(&k.name)
                .map(|s| module.symbol(s).item)
                .ok_or_else(|| invalid(format!("kernel `{}` has no symbol", k.name)))
        })
        .collect::<Result<Vec<u32>, ModuleError>>()?;
    let partition = compiler::partition(module, &jit.target, a);
    let apart = items.iter().map(|i| partition.as_ref().is_some_and(|p| p.apart.contains(i))).collect();
    Ok(Desc {
        info,
        target_sm: module.target.sm().unwrap_or(0),
        split: partition.is_some(),
        variable_table: partition.as_ref().is_some_and(|p| p.variable_table),
        items,
        apart,
    })
}

fn encode_desc(d: &Desc) -> Vec<u8> {
    let mut w = Vec::new();
    write_info(&mut w, &d.info);
    w.extend_from_slice(&d.target_sm.to_le_bytes());
    w.extend_from_slice(&(d.split as u32 | (d.variable_table as u32) << 1).to_le_bytes());
    w.extend_from_slice(&(d.items.len() as u32).to_le_bytes());
    for (i, apart) in d.items.iter().zip(&d.apart) {
        w.extend_from_slice(&i.to_le_bytes());
        w.extend_from_slice(&(*apart as u32).to_le_bytes());
    }
    put_str(&mut w, "end");
    w
}

fn decode_desc(p: &[u8]) -> Option<Desc> {
    let mut r = Reader { b: p, at: 0 };
    let info = read_info(&mut r)?;
    let target_sm = r.u32()?;
    let flags = r.u32()?;
    let (split, variable_table) = (flags & 1 != 0, flags & 2 != 0);
    let n = r.u32()? as usize;
    if n != info.kernels.len() {
        return None;
    }
    let mut items = Vec::with_capacity(n);
    let mut apart = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(r.u32()?);
        apart.push(r.u32()? != 0);
    }
    (r.string()? == "end" && r.at == p.len()).then_some(Desc { info, target_sm, split, variable_table, items, apart })
}

#[cfg(test)]
mod tests {
    use super::get_or_make;
    use std::sync::mpsc;
    use std::sync::OnceLock;
    use std::time::Duration;

    /// A caller never waits for another thread's `make`: it makes its own
    /// value, and the cell keeps whichever was set first.
    #[test]
    fn get_or_make_never_waits_for_another_threads_make() {
        static CELL: OnceLock<u32> = OnceLock::new();
        let (entered_tx, entered) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let slow = std::thread::spawn(move || {
            *get_or_make(&CELL, || {
                let _ = entered_tx.send(());
                // Held until the other caller is done (bounded).
                let _ = release_rx.recv_timeout(Duration::from_secs(60));
                1
            })
        });
        entered.recv_timeout(Duration::from_secs(60)).expect("the first make never started");
        let (done_tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(*get_or_make(&CELL, || 2));
        });
        let second = done.recv_timeout(Duration::from_secs(30));
        let _ = release.send(());
        assert_eq!(second, Ok(2), "the second caller waited for the first one's make");
        // The first make finished later: its value is dropped.
        assert_eq!(slow.join().expect("first caller"), 2);
        assert_eq!(get_or_make(&CELL, || 3), &2);
    }
}
