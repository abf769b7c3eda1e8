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

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, RwLock};

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
pub fn track(start: u64, len: u64, kind: Kind) {
    if len == 0 {
        return;
    }
    LIVE.write().unwrap_or_else(|e| e.into_inner()).insert(start, Range { start, len, kind });
}

/// Forgets the range that starts at `start` (remembering it as freed).
pub fn untrack(start: u64) {
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
