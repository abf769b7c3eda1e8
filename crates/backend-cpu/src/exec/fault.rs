//! Turning hardware faults in kernel code into launch errors.
//!
//! Kernel code only ever runs inside our coroutines. Before resuming one, a
//! runner "arms" a thread-local record of the coroutine's trap handler; the
//! process-wide SIGSEGV/SIGBUS/SIGFPE/SIGILL handler, finding it armed,
//! rewrites the interrupted context so that the coroutine returns a
//! [`Fault`] instead of continuing — its stack is abandoned, never unwound
//! through JIT frames. Faults on unarmed threads (or outside kernel code)
//! go to whatever handler was installed before ours.
//!
//! The handler runs on an alternate signal stack so that a stack overflow
//! (a hit on a coroutine's guard pages) can be handled too.
//!
//! The same redirection ends a block that runs past its launch's time
//! limit: the watchdog (`timeout.rs`) sends [`interrupt_signal`] to the
//! runner, and its handler abandons the coroutine if the thread was
//! interrupted in the kernel's own machine code (never in a runtime
//! function, libc or anycuda itself, which may hold locks: there it does
//! nothing, and the watchdog tries again).

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::Once;

use corosensei::trap::CoroutineTrapHandler;

use super::LaunchError;

/// How a coroutine running kernel code ended abnormally.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    pub signal: c_int,
    pub code: c_int,
    pub address: usize,
    pub pc: usize,
    pub stack_overflow: bool,
    /// Ended by the launch's time limit, not by a fault.
    pub interrupted: bool,
}

/// What every kernel coroutine returns.
pub(crate) type RunEnd = Result<(), Fault>;

impl Fault {
    pub(crate) fn into_error(self, block: [u32; 3], limit: Option<std::time::Duration>) -> LaunchError {
        let address = self.address as u64;
        if self.interrupted {
            return LaunchError::Timeout { limit: limit.unwrap_or_default() };
        }
        if self.stack_overflow {
            return LaunchError::StackOverflow { address, block };
        }
        match self.signal {
            libc::SIGBUS if self.code == libc::BUS_ADRALN => LaunchError::MisalignedAddress { address },
            libc::SIGSEGV | libc::SIGBUS => LaunchError::IllegalAddress { address },
            _ => LaunchError::IllegalInstruction { address: self.pc as u64 },
        }
    }
}

/// Guard region below every coroutine stack (see `local::GuardedStack`).
pub(crate) const GUARD_BYTES: usize = 64 << 10;

#[derive(Clone, Copy)]
struct Armed {
    handler: CoroutineTrapHandler<RunEnd>,
    /// Lowest address of the stack mapping, guard included.
    limit: usize,
}

/// A runner's record of the coroutine it is running kernel code in. The
/// runner registers it with [`register`] once per launch and then arms it
/// around each resume with plain stores (no thread-local access per
/// switch, which is a function call when this library is loaded with
/// `dlopen`).
#[derive(Default)]
pub(crate) struct TrapSlot {
    armed: Cell<Option<Armed>>,
    watch: Cell<Option<Watch>>,
}

/// What the interrupt handler needs of a launch with a time limit: whether
/// it is being ended, and where its kernel's machine code lies.
#[derive(Clone, Copy)]
struct Watch {
    cancel: *const AtomicBool,
    code: *const (usize, usize),
    ranges: usize,
}

impl TrapSlot {
    /// The coroutine of `handler` is about to run kernel code.
    #[inline]
    pub(crate) fn arm(&self, handler: CoroutineTrapHandler<RunEnd>, stack_limit: usize) {
        self.armed.set(Some(Armed { handler, limit: stack_limit }));
        compiler_fence(Ordering::SeqCst);
    }

    #[inline]
    pub(crate) fn disarm(&self) {
        compiler_fence(Ordering::SeqCst);
        self.armed.set(None);
    }

    /// Lets the interrupt handler end this slot's coroutines once `cancel`
    /// is set, when interrupted inside `code`. Both must outlive the
    /// slot's registration.
    pub(crate) fn watch(&self, cancel: &AtomicBool, code: &[(usize, usize)]) {
        self.watch.set(Some(Watch { cancel, code: code.as_ptr(), ranges: code.len() }));
        compiler_fence(Ordering::SeqCst);
    }
}

thread_local! {
    static REGISTERED: Cell<*const TrapSlot> = const { Cell::new(std::ptr::null()) };
    static ALTSTACK: RefCell<Option<AltStack>> = const { RefCell::new(None) };
}

/// Makes `slot` this thread's trap slot until the guard is dropped.
pub(crate) fn register(slot: &TrapSlot) -> Registration<'_> {
    let previous = REGISTERED.with(|registered| registered.replace(slot));
    Registration { _slot: slot, previous }
}

pub(crate) struct Registration<'a> {
    _slot: &'a TrapSlot,
    previous: *const TrapSlot,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        REGISTERED.with(|registered| registered.set(self.previous));
    }
}

const SIGNALS: [c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];

struct PreviousActions([UnsafeCell<MaybeUninit<libc::sigaction>>; 4]);
// SAFETY: written once inside `install` (under `Once`) before our handler
// is installed, read-only afterwards.
unsafe impl Sync for PreviousActions {}

static PREVIOUS: PreviousActions = PreviousActions([
    UnsafeCell::new(MaybeUninit::uninit()),
    UnsafeCell::new(MaybeUninit::uninit()),
    UnsafeCell::new(MaybeUninit::uninit()),
    UnsafeCell::new(MaybeUninit::uninit()),
]);

static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);

pub(crate) fn page_size() -> usize {
    PAGE_SIZE.load(Ordering::Relaxed)
}

/// Installs the fault handlers once per process.
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: sysconf has no preconditions; the sigaction structs are
        // fully initialised (zeroed, then set) before use; PREVIOUS is only
        // written here, before the handler that reads it exists.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE_SIZE.store(page as usize, Ordering::Relaxed);
            }
            for (i, &signal) in SIGNALS.iter().enumerate() {
                let previous = PREVIOUS.0[i].get().cast::<libc::sigaction>();
                if libc::sigaction(signal, std::ptr::null(), previous) != 0 {
                    std::ptr::write_bytes(previous, 0, 1);
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    tracing::warn!("cannot install a handler for signal {signal}");
                }
            }
        }
    });
}

/// Gets this thread ready to run kernel code: an alternate signal stack big
/// enough for the handler, and the thread-local state allocated (so the
/// handler never allocates).
pub(crate) fn prepare_thread() {
    install();
    REGISTERED.with(|registered| registered.get());
    ALTSTACK.with(|alt| {
        let Ok(mut alt) = alt.try_borrow_mut() else { return };
        if alt.is_some() {
            return;
        }
        // SAFETY: querying the current alternate stack has no preconditions.
        let current = unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) != 0 {
                return;
            }
            current
        };
        const MIN_SIZE: usize = 32 << 10;
        if current.ss_flags & libc::SS_DISABLE == 0 && current.ss_size >= MIN_SIZE {
            // The thread already has a roomy one (e.g. from the host
            // program); keep it, and remember that we checked.
            *alt = Some(AltStack { mapping: std::ptr::null_mut(), len: 0 });
            return;
        }
        match AltStack::new(64 << 10) {
            Some(stack) => *alt = Some(stack),
            None => tracing::warn!("cannot allocate an alternate signal stack; stack overflows will crash"),
        }
    });
}

struct AltStack {
    mapping: *mut c_void,
    len: usize,
}

impl AltStack {
    fn new(size: usize) -> Option<AltStack> {
        let page = page_size();
        let len = size + page;
        // SAFETY: a fresh anonymous mapping; the lowest page stays
        // inaccessible as a guard; the rest becomes this thread's signal
        // stack, which nothing else uses.
        unsafe {
            let mapping =
                libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            if mapping == libc::MAP_FAILED {
                return None;
            }
            libc::mprotect(mapping, page, libc::PROT_NONE);
            let stack = libc::stack_t { ss_sp: mapping.cast::<u8>().add(page).cast(), ss_flags: 0, ss_size: size };
            if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
                libc::munmap(mapping, len);
                return None;
            }
            Some(AltStack { mapping, len })
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        if self.mapping.is_null() {
            return;
        }
        // SAFETY: the thread is exiting; if our stack is still installed it
        // is disabled first, so nothing can run on it once unmapped.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) == 0 && current.ss_sp as usize == self.mapping as usize + page_size() {
                let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
                libc::sigaltstack(&disable, std::ptr::null_mut());
            }
            libc::munmap(self.mapping, self.len);
        }
    }
}

/// Program counter and stack pointer of the interrupted context.
///
/// # Safety
/// `context` must be the `ucontext_t` the kernel passed to the handler.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn interrupted_pc_sp(context: *mut c_void) -> (usize, usize) {
    // SAFETY: per the contract.
    let gregs = unsafe { &(*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    (gregs[libc::REG_RIP as usize] as usize, gregs[libc::REG_RSP as usize] as usize)
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn interrupted_pc_sp(context: *mut c_void) -> (usize, usize) {
    // SAFETY: per the contract.
    let mcontext = unsafe { &(*context.cast::<libc::ucontext_t>()).uc_mcontext };
    (mcontext.pc as usize, mcontext.sp as usize)
}

/// Redirects the interrupted context into the coroutine's trap return.
///
/// # Safety
/// As for `interrupted_pc_sp`; `armed` must describe the coroutine that was
/// running on this thread when the signal arrived.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn redirect(context: *mut c_void, armed: Armed, fault: Fault) -> bool {
    // SAFETY: the coroutine is live (armed) and was interrupted in its own
    // code on this thread; the returned registers are written back as
    // corosensei requires.
    unsafe {
        let regs = armed.handler.setup_trap_handler(move || Err(fault));
        let gregs = &mut (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs;
        gregs[libc::REG_RIP as usize] = regs.rip as i64;
        gregs[libc::REG_RSP as usize] = regs.rsp as i64;
        gregs[libc::REG_RBP as usize] = regs.rbp as i64;
        gregs[libc::REG_RDI as usize] = regs.rdi as i64;
        gregs[libc::REG_RSI as usize] = regs.rsi as i64;
    }
    true
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
unsafe fn redirect(context: *mut c_void, armed: Armed, fault: Fault) -> bool {
    // SAFETY: as for x86_64.
    unsafe {
        let regs = armed.handler.setup_trap_handler(move || Err(fault));
        let mcontext = &mut (*context.cast::<libc::ucontext_t>()).uc_mcontext;
        mcontext.pc = regs.pc;
        mcontext.sp = regs.sp;
        mcontext.regs[0] = regs.x0;
        mcontext.regs[1] = regs.x1;
        mcontext.regs[29] = regs.x29;
        mcontext.regs[30] = regs.lr;
    }
    true
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
unsafe fn interrupted_pc_sp(_context: *mut c_void) -> (usize, usize) {
    (0, 0)
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
unsafe fn redirect(_context: *mut c_void, _armed: Armed, _fault: Fault) -> bool {
    false
}

extern "C" fn on_fault(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // Only async-signal-safe work here: thread-local reads (allocated by
    // `prepare_thread`), arithmetic, and register rewriting.
    let slot = REGISTERED.try_with(|registered| registered.get()).unwrap_or(std::ptr::null());
    // SAFETY: a registered slot outlives its registration; the handler runs
    // on the thread that owns it, interrupting it between plain stores.
    let armed = unsafe { slot.as_ref() }.and_then(|slot| slot.armed.take());
    if let Some(armed) = armed {
        // SAFETY: the kernel passes a valid siginfo and ucontext.
        unsafe {
            let (pc, sp) = interrupted_pc_sp(context);
            let address = (*info).si_addr() as usize;
            let code = (*info).si_code;
            let guard_top = armed.limit + GUARD_BYTES;
            let overflow = matches!(signal, libc::SIGSEGV | libc::SIGBUS)
                && ((address >= armed.limit.saturating_sub(GUARD_BYTES) && address < guard_top)
                    || (sp < guard_top && sp >= armed.limit.saturating_sub(GUARD_BYTES)));
            // The coroutine ends now (`take` above disarmed the slot), so
            // later faults on this thread are not attributed to it.
            let fault = Fault { signal, code, address, pc, stack_overflow: overflow, interrupted: false };
            if redirect(context, armed, fault) {
                return;
            }
        }
    }
    // SAFETY: forwarding the original arguments to the previous handler.
    unsafe { chain(signal, info, context) }
}

/// The signal the watchdog sends to interrupt kernel code: a real-time
/// signal near the top of the range (`SIGRTMAX - 4`), which few programs use.
pub(crate) fn interrupt_signal() -> c_int {
    libc::SIGRTMAX() - 4
}

/// The value our interrupts carry (`sigqueue`), telling them from the
/// same signal sent by someone else.
pub(crate) const INTERRUPT_TAG: usize = 0xA11C_0DA5_7111_E0F7;

struct PreviousInterrupt(UnsafeCell<MaybeUninit<libc::sigaction>>);
// SAFETY: as for `PreviousActions`.
unsafe impl Sync for PreviousInterrupt {}
static PREVIOUS_INTERRUPT: PreviousInterrupt = PreviousInterrupt(UnsafeCell::new(MaybeUninit::uninit()));

/// Installs the interrupt handler once per process (executors with a
/// launch time limit).
pub(crate) fn install_interrupt() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let signal = interrupt_signal();
        // SAFETY: as in `install`.
        unsafe {
            let previous = PREVIOUS_INTERRUPT.0.get().cast::<libc::sigaction>();
            if libc::sigaction(signal, std::ptr::null(), previous) != 0 {
                std::ptr::write_bytes(previous, 0, 1);
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_interrupt as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                tracing::warn!("cannot install a handler for signal {signal}: launches past their time limit end only where they yield");
            }
        }
    });
}

/// Lets the interrupt reach the calling thread even if the thread that
/// created it blocked the signal (runners are the executor's own threads:
/// stream workers and pool workers).
pub(crate) fn unblock_interrupt() {
    thread_local! { static DONE: Cell<bool> = const { Cell::new(false) }; }
    if DONE.with(|done| done.replace(true)) {
        return;
    }
    // SAFETY: a signal set built with sigemptyset/sigaddset, applied to the
    // calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, interrupt_signal());
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

/// Sends an interrupt to `thread`, which must be alive.
pub(crate) fn interrupt(thread: libc::pthread_t) {
    #[cfg(target_env = "gnu")]
    // SAFETY: the caller guarantees the thread is alive.
    unsafe {
        libc::pthread_sigqueue(thread, interrupt_signal(), libc::sigval { sival_ptr: INTERRUPT_TAG as *mut c_void });
    }
    #[cfg(not(target_env = "gnu"))]
    // SAFETY: as above.
    unsafe {
        libc::pthread_kill(thread, interrupt_signal());
    }
}

/// Whether `pc` lies in one of the `ranges` (start, end) at `code`.
///
/// # Safety
/// `code` must point to `ranges` readable pairs.
unsafe fn in_code(pc: usize, code: *const (usize, usize), ranges: usize) -> bool {
    (0..ranges).any(|i| {
        // SAFETY: per the contract.
        let (start, end) = unsafe { *code.add(i) };
        pc >= start && pc < end
    })
}

extern "C" fn on_interrupt(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes a valid siginfo.
    let ours = unsafe { is_ours(info) };
    if !ours {
        // Someone else's signal: what would have happened without us.
        // SAFETY: PREVIOUS_INTERRUPT was initialised before our handler was
        // installed; forwarding the original arguments.
        unsafe {
            let previous = &*PREVIOUS_INTERRUPT.0.get().cast::<libc::sigaction>();
            if previous.sa_sigaction == libc::SIG_DFL {
                // The default action (termination), once this handler
                // returns and the signal is no longer blocked.
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut default.sa_mask);
                libc::sigaction(signal, &default, std::ptr::null_mut());
                libc::raise(signal);
            } else if previous.sa_sigaction != libc::SIG_IGN {
                chain_to(previous, signal, info, context);
            }
        }
        return;
    }
    let slot = REGISTERED.try_with(|registered| registered.get()).unwrap_or(std::ptr::null());
    // SAFETY: a registered slot outlives its registration (see `on_fault`).
    let Some(slot) = (unsafe { slot.as_ref() }) else { return };
    let Some(watch) = slot.watch.get() else { return };
    // SAFETY: the watch's pointers outlive the registration (`watch`), and
    // the context is the interrupted one.
    unsafe {
        if !(*watch.cancel).load(Ordering::Relaxed) {
            return;
        }
        let (pc, _) = interrupted_pc_sp(context);
        if !in_code(pc, watch.code, watch.ranges) {
            return;
        }
        let Some(armed) = slot.armed.take() else { return };
        let fault = Fault { signal, code: 0, address: pc, pc, stack_overflow: false, interrupted: true };
        if !redirect(context, armed, fault) {
            slot.armed.set(Some(armed));
        }
    }
}

/// Whether the signal was sent by [`interrupt`].
///
/// # Safety
/// `info` must be the siginfo the kernel passed.
unsafe fn is_ours(info: *mut libc::siginfo_t) -> bool {
    #[cfg(target_env = "gnu")]
    // SAFETY: per the contract; `si_value` is valid for SI_QUEUE.
    unsafe {
        (*info).si_code == libc::SI_QUEUE && (*info).si_value().sival_ptr as usize == INTERRUPT_TAG
    }
    #[cfg(not(target_env = "gnu"))]
    {
        let _ = info;
        true
    }
}

/// Hands a fault that is not ours to the handler installed before us.
unsafe fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some(index) = SIGNALS.iter().position(|&s| s == signal) else { return };
    // SAFETY: PREVIOUS[index] was initialised by `install` before our
    // handler could run.
    unsafe { chain_to(PREVIOUS.0[index].get().cast::<libc::sigaction>(), signal, info, context) }
}

/// Hands a signal to the handler `previous` describes.
///
/// # Safety
/// `previous` must have been initialised by `sigaction` (or zeroed) before
/// our handler was installed.
unsafe fn chain_to(previous: *const libc::sigaction, signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: per the contract; the function pointers come from sigaction.
    unsafe {
        let previous = &*previous;
        let handler = previous.sa_sigaction;
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // Returning re-executes the faulting instruction, which now
            // gets the default action, as if we had never been here.
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut default.sa_mask);
            libc::sigaction(signal, &default, std::ptr::null_mut());
            return;
        }
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = std::mem::transmute(handler);
            handler(signal, info, context);
        } else {
            let handler: extern "C" fn(c_int) = std::mem::transmute(handler);
            handler(signal);
        }
    }
}

/// The floating-point control state, restored after a kernel was abandoned
/// in the middle (it may have changed rounding or flush-to-zero modes).
#[derive(Clone, Copy)]
pub(crate) struct FpState(#[allow(dead_code)] u32);

impl FpState {
    #[inline]
    pub(crate) fn save() -> FpState {
        #[cfg(target_arch = "x86_64")]
        {
            let mut csr: u32 = 0;
            // SAFETY: stmxcsr stores the SSE control register to memory.
            unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
            FpState(csr)
        }
        #[cfg(not(target_arch = "x86_64"))]
        FpState(0)
    }

    pub(crate) fn restore(self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: ldmxcsr loads a value read by stmxcsr on this thread.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &self.0, options(nostack, readonly))
        };
    }
}
