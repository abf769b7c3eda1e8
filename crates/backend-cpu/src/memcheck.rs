//! What checked mode (`ANYCUDA_MEMCHECK=1`) checks kernels' global accesses
//! against: every range of memory a kernel may touch, with what it is.
//!
//! The backend records each range when it comes to exist and forgets it
//! when it goes: device, pinned host and managed allocations, registered
//! host memory, virtual memory mappings, module variables and blocks of the
//! in-kernel heap. The last few hundred ranges that went are remembered, so
//! a report can say that an address was in memory already freed. The table
//! is kept in every mode (an insertion per allocation, nothing per access);
//! only checked compiles read it, in `__anycuda_memcheck` when an access
//! falls outside the range its function found last.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use compiler::cpu_abi::check_tools::{INITCHECK, INITCHECK_HOST, RACECHECK};

/// What a range of memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Device,
    PinnedHost,
    Managed,
    RegisteredHost,
    Mapped,
    Variable,
    Heap,
    /// A launch's parameter buffer or grid-sync workspace (kept only in
    /// checked mode).
    LaunchData,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Device => "device allocation",
            Kind::PinnedHost => "page-locked host allocation",
            Kind::Managed => "managed allocation",
            Kind::RegisteredHost => "registered host range",
            Kind::Mapped => "virtual memory mapping",
            Kind::Variable => "module variable",
            Kind::Heap => "in-kernel malloc block",
            Kind::LaunchData => "launch's parameters or workspace",
        }
    }
}

/// One live or freed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub len: u64,
    pub kind: Kind,
}

impl Range {
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.len)
    }
}

const FREED_KEPT: usize = 512;

static LIVE: RwLock<BTreeMap<u64, Range>> = RwLock::new(BTreeMap::new());
static FREED: Mutex<VecDeque<Range>> = Mutex::new(VecDeque::new());

/// Whether checked mode is on for this process (`ANYCUDA_MEMCHECK`, read
/// once): ranges that come and go with every launch are kept only then.
pub fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(compiler::memcheck_from_env)
}

/// Records a range that kernels may now touch. Empty ranges are not kept.
/// With initcheck on, a device allocation gets its shadow: every byte
/// unwritten.
pub fn track(start: u64, len: u64, kind: Kind) {
    if len == 0 {
        return;
    }
    LIVE.write().unwrap_or_else(|e| e.into_inner()).insert(start, Range { start, len, kind });
    if kind == Kind::Device && tools() & INITCHECK != 0 {
        let shadow = Arc::new(InitShadow::new(start, len));
        INIT.write().unwrap_or_else(|e| e.into_inner()).insert(start, shadow);
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
}

/// Forgets the range that starts at `start` (remembering it as freed).
pub fn untrack(start: u64) {
    if INIT.write().unwrap_or_else(|e| e.into_inner()).remove(&start).is_some() {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }
    let gone = LIVE.write().unwrap_or_else(|e| e.into_inner()).remove(&start);
    if let Some(r) = gone {
        let mut freed = FREED.lock().unwrap_or_else(|e| e.into_inner());
        if freed.len() == FREED_KEPT {
            freed.pop_front();
        }
        freed.push_back(r);
    }
}

/// Forgets every range inside `[start, start + len)` (virtual memory
/// unmapping).
pub fn untrack_within(start: u64, len: u64) {
    let end = start.saturating_add(len);
    let starts: Vec<u64> = LIVE.read().unwrap_or_else(|e| e.into_inner()).range(start..end).map(|(s, _)| *s).collect();
    for s in starts {
        untrack(s);
    }
}

/// The live range holding `[address, address + size)`, if one does.
pub fn containing(address: u64, size: u64) -> Option<Range> {
    let live = LIVE.read().unwrap_or_else(|e| e.into_inner());
    let (_, r) = live.range(..=address).next_back()?;
    (address.checked_add(size)? <= r.end()).then_some(*r)
}

/// The live ranges just below and just above `address`, for reports.
pub fn neighbours(address: u64) -> (Option<Range>, Option<Range>) {
    let live = LIVE.read().unwrap_or_else(|e| e.into_inner());
    let below = live.range(..=address).next_back().map(|(_, r)| *r);
    let above = live.range(address.saturating_add(1)..).next().map(|(_, r)| *r);
    (below, above)
}

/// The most recently freed range that held `address`, if it was among the
/// last few hundred to go and no live range holds it now.
pub fn freed(address: u64) -> Option<Range> {
    let freed = FREED.lock().unwrap_or_else(|e| e.into_inner());
    freed.iter().rev().find(|r| address >= r.start && address < r.end()).copied()
}

// ---- the shadow tools: initcheck and racecheck ------------------------------------

/// The shadow tools this process runs (`compiler::cpu_abi::check_tools`
/// bits), from `ANYCUDA_MEMCHECK` (`initcheck`, `racecheck`) unless
/// [`set_tools`] chose. Only checked compiles call into them.
pub fn tools() -> u32 {
    static FROM_ENV: OnceLock<()> = OnceLock::new();
    FROM_ENV.get_or_init(|| {
        let tools = match compiler::check_tools_from_env() {
            Ok(t) => t,
            Err(why) => {
                tracing::warn!("ANYCUDA_MEMCHECK: {why}; running memcheck alone");
                0
            }
        };
        TOOLS.fetch_or(tools, Ordering::Relaxed);
    });
    TOOLS.load(Ordering::Relaxed)
}

static TOOLS: AtomicU32 = AtomicU32::new(0);

/// Turns shadow tools on for this process from now on (tests, which cannot
/// set the environment of the process they run in): launches after it run
/// them, allocations after it have an initcheck shadow. Checked compiles
/// only (`Options::memcheck`).
pub fn set_tools(tools: u32) {
    let _ = self::tools();
    TOOLS.fetch_or(tools, Ordering::Relaxed);
}

/// Initcheck's shadow of one device allocation: a bit per byte, set once
/// the byte was written (by a host copy or memset, or a kernel's store or
/// atomic). Bits are set with atomic ORs, so blocks running on several
/// workers mark their stores without a lock.
struct InitShadow {
    start: u64,
    len: u64,
    bits: Box<[AtomicU64]>,
}

impl InitShadow {
    fn new(start: u64, len: u64) -> InitShadow {
        let words = len.div_ceil(64) as usize;
        InitShadow { start, len, bits: (0..words).map(|_| AtomicU64::new(0)).collect() }
    }

    /// Calls `f(word, mask)` for the shadow words of the bytes `[from, to)`
    /// (offsets into the allocation).
    fn words(&self, from: u64, to: u64, mut f: impl FnMut(&AtomicU64, u64)) {
        let mut at = from;
        while at < to {
            let w = at / 64;
            let lo = at % 64;
            let hi = (to - w * 64).min(64);
            let mask = if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
            f(&self.bits[w as usize], mask);
            at = w * 64 + hi;
        }
    }

    fn mark(&self, from: u64, to: u64) {
        self.words(from, to, |w, m| {
            if w.load(Ordering::Relaxed) & m != m {
                w.fetch_or(m, Ordering::Relaxed);
            }
        });
    }

    /// The unwritten bytes of `[from, to)`: how many and the first.
    fn unwritten(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let mut count = 0u64;
        let mut first = None;
        let mut at = from;
        self.words(from, to, |w, m| {
            let missing = !w.load(Ordering::Relaxed) & m;
            if missing != 0 {
                count += u64::from(missing.count_ones());
                first.get_or_insert(at - at % 64 + u64::from(missing.trailing_zeros()));
            }
            at = (at / 64 + 1) * 64;
        });
        first.map(|f| (count, f))
    }

    /// Whether the byte at offset `at` was written.
    fn get(&self, at: u64) -> bool {
        self.bits[(at / 64) as usize].load(Ordering::Relaxed) & (1 << (at % 64)) != 0
    }
}

static INIT: RwLock<BTreeMap<u64, Arc<InitShadow>>> = RwLock::new(BTreeMap::new());

/// Bumped whenever a shadow comes or goes, so that a thread's cached
/// shadow ([`with_shadow`]) is known to be stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// How many shadows each thread keeps at hand.
const CACHED: usize = 4;

/// A thread's cached shadows: the slot to replace next, and (generation,
/// shadow) pairs.
type ShadowCache = (usize, [Option<(u64, Arc<InitShadow>)>; CACHED]);

thread_local! {
    /// The shadows this thread's last kernel accesses found, with the
    /// generation they were found in: a kernel's accesses mostly fall in
    /// the few allocations the previous ones did (saxpy's `x` and `y`), and
    /// find them without the table's lock.
    static LAST: std::cell::RefCell<ShadowCache> = const { std::cell::RefCell::new((0, [const { None }; CACHED])) };
}

/// The shadow of the allocation holding `address`, if initcheck tracks it.
fn shadow_of(address: u64) -> Option<Arc<InitShadow>> {
    let map = INIT.read().unwrap_or_else(|e| e.into_inner());
    let (_, s) = map.range(..=address).next_back()?;
    (address < s.start + s.len).then(|| s.clone())
}

/// `f` of the shadow of the allocation holding `address`, if initcheck
/// tracks it, through this thread's cache.
fn with_shadow<R>(address: u64, f: impl FnOnce(&InitShadow) -> R) -> Option<R> {
    let generation = GENERATION.load(Ordering::Acquire);
    LAST.with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else { return shadow_of(address).map(|s| f(&s)) };
        let (next, slots) = &mut *last;
        let hit =
            slots.iter().position(|e| matches!(e, Some((g, s)) if *g == generation && address >= s.start && address - s.start < s.len));
        let i = match hit {
            Some(i) => i,
            None => {
                let i = *next % CACHED;
                *next = next.wrapping_add(1);
                slots[i] = Some((generation, shadow_of(address)?));
                i
            }
        };
        slots[i].as_ref().map(|(_, s)| f(s))
    })
}

/// Calls `f(shadow, from, to)` for each tracked allocation the bytes
/// `[address, address + len)` overlap (offsets into it).
fn each_shadow(address: u64, len: u64, mut f: impl FnMut(&InitShadow, u64, u64)) {
    if len == 0 || tools() & INITCHECK == 0 {
        return;
    }
    let end = address.saturating_add(len);
    let map = INIT.read().unwrap_or_else(|e| e.into_inner());
    let first = map.range(..=address).next_back().map(|(k, _)| *k).unwrap_or(address);
    for (_, s) in map.range(first..end) {
        let from = address.max(s.start);
        let to = end.min(s.start + s.len);
        if from < to {
            f(s, from - s.start, to - s.start);
        }
    }
}

/// Whether initcheck runs in this process (checked mode with the
/// `initcheck` tool).
pub fn initcheck() -> bool {
    enabled() && tools() & INITCHECK != 0
}

/// Initcheck: the host (a copy or memset of the driver, or a library
/// writing device memory from the host) wrote `[address, address + len)`.
pub fn host_wrote(address: u64, len: u64) {
    each_shadow(address, len, |s, from, to| s.mark(from, to));
}

/// Initcheck: a device-to-device copy moved `len` bytes from `src` to
/// `dst`: the destination bytes are written where the source bytes were
/// (an uninitialised source stays uninitialised where it lands), as a copy
/// of memory carries its contents.
pub fn copied(dst: u64, src: u64, len: u64) {
    if len == 0 || tools() & INITCHECK == 0 {
        return;
    }
    let Some(from) = shadow_of(src).filter(|s| src + len <= s.start + s.len) else {
        // An untracked source (host memory, a variable): written bytes.
        return host_wrote(dst, len);
    };
    let states: Vec<bool> = (0..len).map(|i| from.get(src - from.start + i)).collect();
    each_shadow(dst, len, |s, a, b| {
        for off in a..b {
            if states[(s.start + off - dst) as usize] {
                s.mark(off, off + 1);
            }
        }
    });
}

/// Initcheck with `initcheck-host`: a device-to-host copy read `[address,
/// address + len)`. The first copy that reads unwritten bytes of an
/// allocation is reported on stderr (the copy itself goes on); returns the
/// report.
pub fn host_read(address: u64, len: u64, what: &str) -> Option<String> {
    if tools() & INITCHECK_HOST == 0 {
        return None;
    }
    let mut report = None;
    each_shadow(address, len, |s, from, to| {
        if report.is_some() {
            return;
        }
        if let Some((count, first)) = s.unwritten(from, to) {
            if !first_report(("host", what, s.start)) {
                return;
            }
            report = Some(format!(
                "========= anycuda initcheck: uninitialized __global__ memory read by the host API ({what})\n\
                 =========     {count} of the {len} bytes copied from {address:#x} were never written, the first at {:#x}, \
                 {} bytes into a {}-byte device allocation at {:#x}\n",
                s.start + first,
                first,
                s.len,
                s.start
            ));
        }
    });
    if let Some(r) = &report {
        record(r);
        use crate::exec::runtime::OutputSink;
        crate::exec::runtime::CStdio.stderr(r.as_bytes());
    }
    report
}

/// Initcheck, for a kernel's access of `size` bytes at `address` (`read`:
/// it reads them; `write`: it writes them): the unwritten bytes it reads,
/// (count, first address, the allocation's start and length), and marks
/// the bytes it writes. Nothing for memory initcheck does not track.
pub fn kernel_access(address: u64, size: u64, read: bool, write: bool) -> Option<(u64, u64, u64, u64)> {
    with_shadow(address, |s| {
        let from = address - s.start;
        let to = (from + size).min(s.len);
        let bad = if read { s.unwritten(from, to).map(|(n, first)| (n, s.start + first, s.start, s.len)) } else { None };
        if write {
            s.mark(from, to);
        }
        bad
    })
    .flatten()
}

/// Whether a report with `key` is the first: each kind of report is made
/// once per place (later ones are only counted).
pub fn first_report(key: impl std::hash::Hash) -> bool {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let key = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let n = seen.get_or_insert_with(HashMap::new).entry(key).or_insert(0);
    *n += 1;
    *n == 1
}

static SEEN: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

/// Keeps a report for [`reports`] (the last 1000).
pub fn record(report: &str) {
    let mut all = REPORTS.lock().unwrap_or_else(|e| e.into_inner());
    if all.len() == 1000 {
        all.pop_front();
    }
    all.push_back(report.to_string());
}

static REPORTS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// The initcheck and racecheck reports of this process so far (the last
/// 1000), oldest first.
pub fn reports() -> Vec<String> {
    REPORTS.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
}

/// Whether racecheck runs.
pub fn racecheck() -> bool {
    tools() & RACECHECK != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_found_and_forgotten() {
        // Addresses no allocation of another test has (never dereferenced).
        let base = 0x7ff0_0000_0000u64;
        track(base, 100, Kind::Device);
        track(base + 200, 8, Kind::Variable);
        assert_eq!(containing(base, 100).map(|r| r.kind), Some(Kind::Device));
        assert_eq!(containing(base + 96, 4).map(|r| r.start), Some(base));
        assert_eq!(containing(base + 97, 4), None, "one byte past the end");
        assert_eq!(containing(base + 100, 1), None);
        assert_eq!(containing(base + 204, 4).map(|r| r.kind), Some(Kind::Variable));
        let (below, above) = neighbours(base + 150);
        assert_eq!((below.map(|r| r.start), above.map(|r| r.start)), (Some(base), Some(base + 200)));
        untrack(base);
        assert_eq!(containing(base, 4), None);
        assert_eq!(freed(base + 10).map(|r| r.len), Some(100));
        track(base + 0x1000, 4096, Kind::Mapped);
        untrack_within(base, 0x2000);
        assert_eq!(containing(base + 0x1000, 1), None);
        assert_eq!(containing(base + 204, 4), None, "the variable went with the unmapped range");
    }
}
