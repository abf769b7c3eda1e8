//! The JIT compiles only what is launched, each kernel on its own, and
//! never makes a launch wait for another kernel's compile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use driver::backend::ModuleOptions;
use jit::{Jit, JitConfig, TierPolicy};

/// A module of `n` kernels `k0`..`k{n-1}`, each storing its index, and,
/// with `variable`, a `.global` counter every kernel increments.
fn module(n: usize, variable: bool) -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    if variable {
        s.push_str(".global .align 4 .u32 counter = 7;\n");
    }
    for i in 0..n {
        s.push_str(&format!(".visible .entry k{i}(.param .u64 out)\n{{\n.reg .b32 %r<3>;\n.reg .b64 %rd<3>;\n"));
        s.push_str("ld.param.u64 %rd1, [out];\n");
        s.push_str(&format!("mov.u32 %r1, {i};\nst.global.u32 [%rd1], %r1;\n"));
        if variable {
            s.push_str("mov.u64 %rd2, counter;\natom.global.add.u32 %r2, [%rd2], 1;\n");
        }
        s.push_str("ret;\n}\n");
    }
    s
}

fn config(tiers: TierPolicy, background: bool) -> JitConfig {
    let mut c = JitConfig::uncached(compiler::Tier::Fast);
    c.tiers = tiers;
    c.background = background;
    c
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("anycuda-jit-lazy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn loading_a_module_compiles_none_of_its_kernels() {
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::FastOnly, false));
    let m = jit.load(&module(40, false), &ModuleOptions::default()).expect("load");
    assert_eq!(m.info().kernels.len(), 40);
    assert!(m.splits());
    // Nothing to define for the variables either.
    assert!(m.shared().expect("shared").object.is_empty());
    assert_eq!(jit.stats().compiled, 0, "a load compiled something");
    let k = m.kernel(17).expect("kernel 17");
    assert_eq!(k.info.kernels.len(), 1);
    assert_eq!(k.info.kernels[0].name, "k17");
    assert_eq!(jit.stats().compiled, 1);
    // Asked again: the same code, no compile.
    let again = m.kernel(17).expect("kernel 17 again");
    assert!(Arc::ptr_eq(&k, &again));
    assert_eq!(jit.stats().compiled, 1);
}

/// AMD code objects cannot share variables: a module without any compiles
/// kernel by kernel, each unit a code object of its own; in a module with
/// variables, the variables (and the table of their addresses) are one
/// code object, loaded with the module, and every kernel still compiles
/// apart at its first launch, reading the variables through the table;
/// where the table cannot serve the module (a function's address in an
/// initialiser), the kernels that name a variable (in their code or in a
/// function they call) are one code object with the variables.
#[test]
fn amd_modules_compile_every_kernel_apart_where_the_variable_table_serves_them() {
    let target = compiler::Target::Amdgpu { arch: "gfx1100".into() };
    let jit = Jit::new(target.clone(), config(TierPolicy::FastOnly, false));
    let m = jit.load(&module(3, false), &ModuleOptions::default()).expect("load");
    assert!(m.splits());
    assert!((0..3).all(|k| m.compiled_apart(k)));
    assert!(!m.variable_table());
    assert!(m.shared().expect("shared").object.is_empty());
    assert_eq!(jit.stats().compiled, 0, "a load compiled something");
    let k = m.kernel(1).expect("kernel 1");
    assert_eq!(k.info.kernels.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["k1"]);
    assert!(k.object.starts_with(b"\x7fELF"), "not a code object");
    assert_eq!(jit.stats().compiled, 1);

    // Every kernel names the variable, through the table.
    let jit = Jit::new(target.clone(), config(TierPolicy::FastOnly, false));
    let m = jit.load(&module(3, true), &ModuleOptions::default()).expect("load");
    assert!((0..3).all(|k| m.compiled_apart(k)));
    assert!(m.variable_table());
    let shared = m.shared().expect("shared");
    assert!(shared.info.kernels.is_empty());
    assert_eq!(shared.info.globals.len(), 1);
    let one = m.kernel(1).expect("kernel 1");
    assert_eq!(one.info.kernels.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["k1"]);
    assert!(one.info.globals.is_empty());
    assert_eq!(jit.stats().compiled, 2, "the variables' unit and kernel 1");

    // `uses` names the table, `via_call` calls a function that does,
    // `plain` and `plain2` name none; `handler` takes `lookup`'s address.
    let text = concat!(
        ".version 7.0\n.target sm_80\n.address_size 64\n",
        ".global .align 4 .u32 table[2] = {5, 9};\n",
        ".func (.reg .u32 r) lookup(.reg .u32 i)\n{\n.reg .b64 %rd<3>;\n",
        "mov.u64 %rd1, table;\nmul.wide.u32 %rd2, i, 4;\nadd.s64 %rd1, %rd1, %rd2;\nld.global.u32 r, [%rd1];\nret;\n}\n",
        ".visible .entry plain(.param .u64 out)\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], 1;\nret;\n}\n",
        ".visible .entry uses(.param .u64 out)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
        "ld.param.u64 %rd1, [out];\nld.global.u32 %r1, [table+4];\nst.global.u32 [%rd1], %r1;\nret;\n}\n",
        ".visible .entry via_call(.param .u64 out)\n{\n.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n",
        "ld.param.u64 %rd1, [out];\ncall (%r1), lookup, (0);\nst.global.u32 [%rd1], %r1;\nret;\n}\n",
        ".visible .entry plain2(.param .u64 out)\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], 2;\nret;\n}\n",
    );
    let jit = Jit::new(target.clone(), config(TierPolicy::FastOnly, false));
    let m = jit.load(text, &ModuleOptions::default()).expect("load");
    assert!((0..4).all(|k| m.compiled_apart(k)));
    assert!(m.variable_table());

    let with_handler = format!("{text}.global .align 8 .u64 handler = lookup;\n");
    let jit = Jit::new(target, config(TierPolicy::FastOnly, false));
    let m = jit.load(&with_handler, &ModuleOptions::default()).expect("load");
    let names: Vec<&str> = m.info().kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["plain", "uses", "via_call", "plain2"]);
    assert!(m.splits());
    assert!(!m.variable_table());
    assert_eq!((0..4).map(|k| m.compiled_apart(k)).collect::<Vec<_>>(), [true, false, false, true]);
    assert_eq!(jit.stats().compiled, 0, "a load compiled something");
    let shared = m.shared().expect("shared");
    assert_eq!(shared.info.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["uses", "via_call"]);
    assert_eq!(shared.info.globals.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["table", "handler"]);
    assert!(Arc::ptr_eq(&shared, &m.kernel(2).expect("via_call")));
    assert_eq!(jit.stats().compiled, 1);
    let plain = m.kernel(3).expect("plain2");
    assert_eq!(plain.info.kernels.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["plain2"]);
    assert!(plain.info.globals.is_empty());
    assert_eq!(jit.stats().compiled, 2);
}

/// A kernel whose address another kernel takes (device-side launches)
/// must be defined once: such a module compiles as one unit on every
/// target, variables or not.
#[test]
fn a_module_that_takes_a_kernels_address_compiles_whole() {
    let text = concat!(
        ".version 7.0\n.target sm_80\n.address_size 64\n",
        ".visible .entry child(.param .u64 out)\n{\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\nst.global.u32 [%rd1], 1;\nret;\n}\n",
        ".visible .entry parent(.param .u64 out)\n{\n.reg .b64 %rd<3>;\n",
        "ld.param.u64 %rd1, [out];\nmov.u64 %rd2, child;\nst.global.u64 [%rd1], %rd2;\nret;\n}\n",
    );
    for target in [compiler::Target::HostCpu, compiler::Target::Amdgpu { arch: "gfx1100".into() }] {
        let jit = Jit::new(target.clone(), config(TierPolicy::FastOnly, false));
        let m = jit.load(text, &ModuleOptions::default()).expect("load");
        assert!(!m.splits(), "{target:?}: a module that takes a kernel's address split");
        assert!(!m.compiled_apart(0) && !m.compiled_apart(1));
    }
}

#[test]
fn a_module_with_variables_compiles_them_alone_at_first() {
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::FastOnly, false));
    let m = jit.load(&module(10, true), &ModuleOptions::default()).expect("load");
    let vars = m.shared().expect("variables");
    assert_eq!(vars.info.globals.len(), 1);
    assert!(vars.info.kernels.is_empty(), "the variables' unit defines kernels");
    assert_eq!(jit.stats().compiled, 1);
    let k = m.kernel(3).expect("kernel");
    assert!(k.info.globals.is_empty(), "a kernel unit defines the variables again");
    assert_eq!(jit.stats().compiled, 2);
}

#[test]
fn a_warm_cache_needs_neither_parse_nor_compile() {
    let dir = temp_dir("warm");
    let mut c = config(TierPolicy::FastOnly, false);
    c.cache_dir = Some(dir.clone());
    c.cache_limit = jit::cache::DEFAULT_LIMIT;
    let text = module(20, true);
    let cold = Jit::new(compiler::Target::HostCpu, c.clone());
    let m = cold.load(&text, &ModuleOptions::default()).expect("load");
    m.shared().expect("variables");
    let object = m.kernel(5).expect("kernel").object.clone();
    assert_eq!(cold.stats().compiled, 2);
    let warm = Jit::new(compiler::Target::HostCpu, c);
    let m = warm.load(&text, &ModuleOptions::default()).expect("load");
    assert!(m.described_from_cache());
    m.shared().expect("variables");
    let k = m.kernel(5).expect("kernel");
    assert!(k.from_cache);
    assert_eq!(k.object, object);
    let s = warm.stats();
    assert_eq!((s.compiled, s.cache_hits, s.described_from_cache), (0, 2, 1), "{s:?}");
    // A kernel nobody compiled before is compiled, and only it.
    m.kernel(6).expect("kernel 6");
    assert_eq!(warm.stats().compiled, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel whose threads wait at a barrier (warp mode) and then load
/// and store through addresses read from memory: its fast-tier unit calls
/// the access helpers.
const LANE_ADDRESSES: &str = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n\
.reg .b32 %r<4>;\n.reg .b64 %rd<6>;\nld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nmul.wide.u32 %rd2, %r1, 4;\n\
add.u64 %rd3, %rd1, %rd2;\nld.global.u32 %r2, [%rd3];\nbar.sync 0;\nmul.wide.u32 %rd4, %r2, 4;\nadd.u64 %rd5, %rd1, %rd4;\n\
ld.global.u32 %r3, [%rd5];\nst.global.u32 [%rd5+4096], %r3;\nret;\n}\n";

#[test]
fn a_units_helpers_come_back_with_it_from_the_cache_and_compile_once() {
    let dir = temp_dir("helpers");
    let mut c = config(TierPolicy::FastOnly, false);
    c.cache_dir = Some(dir.clone());
    c.cache_limit = jit::cache::DEFAULT_LIMIT;
    c.options.warp = compiler::WarpMode::Always;
    let cold = Jit::new(compiler::Target::HostCpu, c.clone());
    let k = cold.load(LANE_ADDRESSES, &ModuleOptions::default()).expect("load").kernel(0).expect("kernel");
    assert!(!k.from_cache && !k.helpers.is_empty(), "the unit calls helpers: {:?}", k.helpers);
    let objects: Vec<Vec<u8>> = k.helpers.iter().map(|h| cold.helper_object(h).expect("the helper compiles")).collect();
    assert_eq!(cold.stats().helpers_compiled, k.helpers.len());
    // Another process: the unit and its helpers' objects from the cache.
    let warm = Jit::new(compiler::Target::HostCpu, c);
    let w = warm.load(LANE_ADDRESSES, &ModuleOptions::default()).expect("load").kernel(0).expect("kernel");
    assert!(w.from_cache);
    assert_eq!(w.helpers, k.helpers);
    for (h, object) in w.helpers.iter().zip(&objects) {
        assert_eq!(&warm.helper_object(h).expect("from the cache"), object);
    }
    assert_eq!(warm.stats().helpers_compiled, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Which compiles of a unit a [`Gate`] holds.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    All,
    /// The background compile threads' (`jit::background`).
    Background,
    /// Every other thread's: launches and their compile threads.
    Others,
}

/// Holds the compiles of one unit in the compile hook until released,
/// bounded so that a failing test cannot hang the process.
struct Gate {
    release: Arc<(Mutex<bool>, Condvar)>,
    blocked: mpsc::Receiver<()>,
}

impl Gate {
    fn new(unit: String, who: Who) -> (Gate, jit::CompileHook) {
        let (blocked_tx, blocked) = mpsc::channel::<()>();
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let hook_release = release.clone();
        let blocked_tx = Mutex::new(blocked_tx);
        let hook: jit::CompileHook = Arc::new(move |u: &str| {
            let background = std::thread::current().name().is_some_and(|n| n.starts_with("anycuda-jit-"));
            let held = match who {
                Who::All => true,
                Who::Background => background,
                Who::Others => !background,
            };
            if u != unit || !held {
                return;
            }
            let _ = blocked_tx.lock().map(|t| t.send(()));
            let (lock, cv) = &*hook_release;
            let mut go = lock.lock().unwrap_or_else(|e| e.into_inner());
            let deadline = Instant::now() + Duration::from_secs(60);
            while !*go && Instant::now() < deadline {
                go = cv.wait_timeout(go, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
            }
        });
        (Gate { release, blocked }, hook)
    }

    fn open(&self) {
        let (lock, cv) = &*self.release;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
}

/// Runs `f` on another thread; whether it finished within 30 s (the gate
/// is opened either way, so that the thread ends).
fn finishes_while_held(gate: &Gate, f: impl FnOnce() + Send + 'static) -> bool {
    let done = Arc::new(AtomicBool::new(false));
    let done2 = done.clone();
    let t = std::thread::spawn(move || {
        f();
        done2.store(true, Ordering::SeqCst);
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let finished = done.load(Ordering::SeqCst);
    gate.open();
    t.join().expect("launch thread");
    finished
}

/// The unit name the compile hook sees for kernel `name` of `text`.
fn kernel_unit(text: &str, name: &str) -> String {
    let parsed = ptx::parse(text).expect("parse");
    format!("kernel {}", parsed.symbol(parsed.symbol_by_name(name).expect("symbol")).item)
}

/// A module of `n` kernels loaded into a JIT of `tiers` and `background`,
/// with the compiles of k1 that `who` names held by the returned gate.
fn gated(n: usize, who: Who, tiers: TierPolicy, background: bool) -> (Gate, Arc<jit::JitModule>) {
    let text = module(n, false);
    let (gate, hook) = Gate::new(kernel_unit(&text, "k1"), who);
    let mut c = config(tiers, background);
    c.before_compile = Some(hook);
    let jit = Jit::new(compiler::Target::HostCpu, c);
    (gate, jit.load(&text, &ModuleOptions::default()).expect("load"))
}

#[test]
fn a_launch_never_waits_for_another_kernels_compile() {
    // The background compile of k1 blocks in the hook until released.
    let (gate, m) = gated(3, Who::All, TierPolicy::FastOnly, true);
    // The first launch of k0 compiles it and queues k1 and k2 behind it.
    m.kernel(0).expect("k0");
    gate.blocked.recv_timeout(Duration::from_secs(60)).expect("k1's background compile never started");
    // While k1's compile is stuck: k0 (compiled) and k2 (compiled by
    // whoever gets to it first) are ready without waiting for k1.
    let m2 = m.clone();
    let finished = finishes_while_held(&gate, move || {
        m2.kernel(0).expect("k0 again");
        m2.kernel(2).expect("k2");
    });
    assert!(finished, "a launch of k0 or k2 waited for k1's compile");
    // k1 itself is the background's work, and is ready afterwards.
    assert_eq!(m.kernel(1).expect("k1").info.kernels[0].name, "k1");
}

/// Background compiles run at the lowest priority: on a machine busy with
/// other programs one can take many times its CPU time (seen: 47-49 s for
/// a 0.7 s compile). A launch of the kernel such a compile is working on,
/// seeing the job get no CPU (here: held in the hook), compiles it itself
/// instead of waiting, in every tier policy.
#[test]
fn a_launch_never_waits_for_a_background_compile_of_its_own_kernel() {
    for tiers in [TierPolicy::FastOnly, TierPolicy::OptimizedOnly, TierPolicy::Adaptive] {
        let (gate, m) = gated(3, Who::Background, tiers, true);
        m.kernel(0).expect("k0");
        gate.blocked.recv_timeout(Duration::from_secs(60)).expect("k1's background compile never started");
        let m2 = m.clone();
        let finished = finishes_while_held(&gate, move || {
            assert_eq!(m2.kernel(1).expect("k1").info.kernels[0].name, "k1");
        });
        assert!(finished, "{tiers:?}: a launch of k1 waited for k1's background compile");
        jit::wait_for_background_compiles();
        // The launch's code stays: the background's, finished later, is dropped.
        let first = m.kernel(1).expect("k1");
        assert!(Arc::ptr_eq(&first, &m.kernel(1).expect("k1 again")));
    }
}

/// On a quiet machine the background job is well into the compile when the
/// launch comes: its code is taken as soon as it is done, even while the
/// launch's own compile is still running.
#[test]
fn a_launch_takes_the_background_compile_when_it_finishes_first() {
    for tiers in [TierPolicy::FastOnly, TierPolicy::OptimizedOnly, TierPolicy::Adaptive] {
        let text = module(3, false);
        let (background, hold_background) = Gate::new(kernel_unit(&text, "k1"), Who::Background);
        let (own, hold_own) = Gate::new(kernel_unit(&text, "k1"), Who::Others);
        let mut c = config(tiers, true);
        c.before_compile = Some(Arc::new(move |u: &str| {
            hold_background(u);
            hold_own(u);
        }));
        let jit = Jit::new(compiler::Target::HostCpu, c);
        let m = jit.load(&text, &ModuleOptions::default()).expect("load");
        m.kernel(0).expect("k0");
        background.blocked.recv_timeout(Duration::from_secs(60)).expect("k1's background compile never started");
        let (tx, rx) = mpsc::channel();
        let m2 = m.clone();
        let launch = std::thread::spawn(move || {
            let _ = tx.send(m2.kernel(1).map(|c| c.info.kernels[0].name.clone()));
        });
        own.blocked.recv_timeout(Duration::from_secs(60)).expect("the launch did not compile k1 beside the background");
        // The background finishes first; the launch's compile is still held.
        background.open();
        let got = rx.recv_timeout(Duration::from_secs(30));
        own.open();
        launch.join().expect("launch thread");
        assert_eq!(got.ok().and_then(|r| r.ok()).as_deref(), Some("k1"), "{tiers:?}: the launch did not take the background's code");
        jit::wait_for_background_compiles();
    }
}

/// Optimised code for a kernel that ran long compiles in the background;
/// the launches meanwhile keep running the fast code, never waiting for it.
#[test]
fn launches_keep_the_fast_code_while_the_optimised_compile_runs() {
    let (gate, m) = gated(2, Who::Background, TierPolicy::Adaptive, false);
    let fast = m.kernel(1).expect("k1");
    assert_eq!(fast.tier, compiler::Tier::Fast);
    m.record_run(1, jit::tier_up_threshold(&fast));
    gate.blocked.recv_timeout(Duration::from_secs(60)).expect("k1's optimised compile never started");
    let m2 = m.clone();
    let finished = finishes_while_held(&gate, move || {
        assert_eq!(m2.kernel(1).expect("k1").tier, compiler::Tier::Fast);
    });
    assert!(finished, "a launch waited for its kernel's optimised compile");
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(1).expect("k1").tier, compiler::Tier::Optimized);
}

#[test]
fn kernels_that_run_long_are_recompiled_optimised_in_the_background() {
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::Adaptive, false));
    let m = jit.load(&module(2, false), &ModuleOptions::default()).expect("load");
    let first = m.kernel(1).expect("kernel");
    assert_eq!(first.tier, compiler::Tier::Fast);
    // Short runs do not promote it.
    m.record_run(1, Duration::from_micros(100));
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(1).expect("kernel").tier, compiler::Tier::Fast);
    // Past the threshold it is compiled optimised, and later asks get that.
    m.record_run(1, jit::tier_up_threshold(&first));
    jit::wait_for_background_compiles();
    let later = m.kernel(1).expect("kernel");
    assert_eq!(later.tier, compiler::Tier::Optimized);
    assert_eq!(later.info.kernels[0].name, "k1");
    // The other kernel was never launched: nothing promoted it.
    assert_eq!(jit.stats().compiled, 2);
}

/// A backend that cannot time its launches (a GPU's) asks for the
/// optimised tier at once: compiled in the background, once, and what
/// later asks get; under the other tier policies nothing is compiled.
#[test]
fn a_promoted_kernel_is_compiled_optimised_in_the_background_once() {
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::Adaptive, false));
    let m = jit.load(&module(2, false), &ModuleOptions::default()).expect("load");
    assert_eq!(m.kernel(0).expect("kernel").tier, compiler::Tier::Fast);
    m.promote(0);
    m.promote(0);
    jit::wait_for_background_compiles();
    let later = m.kernel(0).expect("kernel");
    assert_eq!(later.tier, compiler::Tier::Optimized);
    assert_eq!(later.info.kernels[0].name, "k0");
    m.promote(0);
    jit::wait_for_background_compiles();
    // Fast and optimised once each; the other kernel not at all.
    assert_eq!(jit.stats().compiled, 2);
    for tiers in [TierPolicy::FastOnly, TierPolicy::OptimizedOnly] {
        let jit = Jit::new(compiler::Target::HostCpu, config(tiers, false));
        let m = jit.load(&module(1, false), &ModuleOptions::default()).expect("load");
        let first = m.kernel(0).expect("kernel").tier;
        m.promote(0);
        jit::wait_for_background_compiles();
        assert_eq!(m.kernel(0).expect("kernel").tier, first, "{tiers:?}");
        assert_eq!(jit.stats().compiled, 1, "{tiers:?}");
    }
}

/// Fast code from the cache keeps the CPU time of the compile that made it,
/// so a warm run promotes a kernel after the same run time as a cold one
/// (with no compile time, every kernel that ran for `TIER_UP_MIN` was
/// recompiled, and a short program waited at its exit for optimised
/// compiles it would never use).
#[test]
fn code_from_the_cache_tiers_up_after_the_run_time_its_compile_cost() {
    let dir = temp_dir("tier-up-cached");
    let jit_with_cache = || {
        let mut c = config(TierPolicy::Adaptive, false);
        c.cache_dir = Some(dir.clone());
        c.cache_limit = jit::cache::DEFAULT_LIMIT;
        Jit::new(compiler::Target::HostCpu, c)
    };
    let text = module(2, false);
    let cold = jit_with_cache();
    let first = cold.load(&text, &ModuleOptions::default()).expect("load").kernel(1).expect("kernel");
    assert!(!first.from_cache && first.compile_time > Duration::ZERO);
    // A second process: the same module, its fast code from the cache.
    let warm = jit_with_cache();
    let m = warm.load(&text, &ModuleOptions::default()).expect("load");
    let cached = m.kernel(1).expect("kernel");
    assert!(cached.from_cache);
    assert_eq!(cached.tier, compiler::Tier::Fast);
    assert_eq!(cached.compile_time.as_micros(), first.compile_time.as_micros());
    // A thread-by-thread kernel: eight times its fast compile.
    assert_eq!(cached.info.kernels[0].lanes, 1);
    let threshold = jit::TIER_UP_MIN.max(cached.compile_time * jit::TIER_UP_COMPILE_RATIO);
    assert_eq!(jit::tier_up_threshold(&cached), threshold);
    m.record_run(1, threshold - Duration::from_micros(2));
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(1).expect("kernel").tier, compiler::Tier::Fast, "promoted before its threshold");
    m.record_run(1, Duration::from_micros(3));
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(1).expect("kernel").tier, compiler::Tier::Optimized);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kernel_that_cannot_compile_fails_alone_with_its_position() {
    let text = ".version 7.0\n.target sm_80\n.address_size 64\n\
        .visible .entry good(.param .u64 p)\n{\nret;\n}\n\
        .visible .entry bad(.param .u64 p)\n{\n.reg .b32 %r<2>;\ntex.1d.v4.s32.s32 {%r1, %r1, %r1, %r1}, [p, {%r1}];\nret;\n}\n";
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::FastOnly, false));
    let m = jit.load(text, &ModuleOptions { source: "bad.ptx".into(), ..Default::default() }).expect("the load only checks syntax");
    m.kernel(0).expect("the good kernel compiles");
    let e = m.kernel(1).expect_err("the bad kernel compiled");
    assert_eq!(e.kind, driver::backend::ModuleErrorKind::InvalidPtx);
    assert!(e.log.contains("bad.ptx: ") && e.log.contains("11:"), "{}", e.log);
}

#[test]
fn launches_of_a_compiled_kernel_do_not_touch_the_disk() {
    let dir = temp_dir("launches");
    let mut c = config(TierPolicy::Adaptive, false);
    c.cache_dir = Some(dir.clone());
    c.cache_limit = jit::cache::DEFAULT_LIMIT;
    let jit = Jit::new(compiler::Target::HostCpu, c);
    let m = jit.load(&module(2, false), &ModuleOptions::default()).expect("load");
    m.kernel(0).expect("kernel");
    // The first ask looked for optimised code, then for fast code, then compiled.
    let after_first = jit.stats().cache_lookups;
    assert!(after_first <= 2, "{after_first} lookups for one kernel");
    for _ in 0..100 {
        assert_eq!(m.kernel(0).expect("kernel").tier, compiler::Tier::Fast);
        m.record_run(0, Duration::from_micros(1));
    }
    assert_eq!(jit.stats().cache_lookups, after_first, "launches of a compiled kernel asked the cache");
    let _ = std::fs::remove_dir_all(&dir);
}

/// After a module's first launch its other kernels compile in the
/// background, unless the module is larger than
/// `jit::SPECULATE_MAX_PTX_BYTES` (a library's template instances): then
/// nothing but what is launched compiles.
#[test]
fn only_small_modules_compile_kernels_before_their_launch() {
    let small = module(3, false);
    let mut large = small.clone();
    // PTX comments fill the module past the limit, the code is the same.
    let line = format!("// {}\n", "x".repeat(77));
    while large.len() <= jit::SPECULATE_MAX_PTX_BYTES {
        large.push_str(&line);
    }
    for (text, compiled) in [(&small, 3), (&large, 1)] {
        let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::FastOnly, true));
        let m = jit.load(text, &ModuleOptions::default()).expect("load");
        m.kernel(0).expect("k0");
        jit::wait_for_background_compiles();
        assert_eq!(jit.stats().compiled, compiled, "module of {} bytes", text.len());
        // Launched later, a kernel compiles then.
        assert_eq!(m.kernel(2).expect("k2").info.kernels[0].name, "k2");
        assert_eq!(jit.stats().compiled, compiled.max(2));
    }
}

/// Warp-mode code, whose fast tier already generates code at LLVM's `Less`
/// level, is promoted after [`jit::TIER_UP_WARP_COMPILE_RATIO`] times its
/// fast compile, not the thread-by-thread ratio.
#[test]
fn warp_code_tiers_up_after_its_own_ratio_of_the_fast_compile() {
    let text =
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry w(.param .u64 out)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\nmov.u32 %r1, %tid.x;\nshfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\nmul.wide.u32 %rd2, %r1, 4;\n\
        add.u64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r2;\nret;\n}\n";
    let jit = Jit::new(compiler::Target::HostCpu, config(TierPolicy::Adaptive, false));
    let m = jit.load(text, &ModuleOptions::default()).expect("load");
    let fast = m.kernel(0).expect("kernel");
    assert_eq!(fast.tier, compiler::Tier::Fast);
    assert_eq!(fast.info.kernels[0].lanes, 32, "the kernel runs as warps");
    let threshold = jit::TIER_UP_MIN.max(fast.compile_time * jit::TIER_UP_WARP_COMPILE_RATIO);
    assert_eq!(jit::tier_up_threshold(&fast), threshold);
    m.record_run(0, threshold - Duration::from_micros(2));
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(0).expect("kernel").tier, compiler::Tier::Fast, "promoted before its threshold");
    m.record_run(0, Duration::from_micros(3));
    jit::wait_for_background_compiles();
    assert_eq!(m.kernel(0).expect("kernel").tier, compiler::Tier::Optimized);
}
