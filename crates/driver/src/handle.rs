//! Handles and the registries that own the objects they name.
//!
//! A handle is an opaque 64-bit value the C layer hands out as a pointer.
//! It encodes its kind and a sequence number that is never reused, so a
//! destroyed handle, a handle of the wrong kind and a garbage value are all
//! told apart from live ones by a table lookup: nothing is ever dereferenced
//! on the strength of a caller's pointer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// What a handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum HandleKind {
    Context = 1,
    Stream = 2,
    Event = 3,
    Module = 4,
    Function = 5,
    Library = 6,
    Kernel = 7,
    MemPool = 8,
    LinkState = 9,
    Graph = 10,
    GraphNode = 11,
    GraphExec = 12,
    /// A physical allocation of the virtual memory API
    /// (`CUmemGenericAllocationHandle`).
    MemHandle = 13,
    /// A CUDA array (`CUarray`).
    Array = 14,
    /// A mipmapped array (`CUmipmappedArray`).
    MipmappedArray = 15,
}

// Handles live in 0x4k_xxxx_xxxx_xxx0: far from small integers (stream tags
// 1 and 2), 16-byte aligned like real heap pointers, and in user address
// space, so code that prints or compares them sees something ordinary.
const HANDLE_TAG: u64 = 0x4;
const TAG_SHIFT: u32 = 44;
const KIND_SHIFT: u32 = 40;
const SEQ_MASK: u64 = (1 << 36) - 1;

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// A fresh handle value of `kind`.
pub fn new_handle(kind: HandleKind) -> u64 {
    let seq = NEXT_SEQ.fetch_add(1, Ordering::Relaxed) & SEQ_MASK;
    (HANDLE_TAG << TAG_SHIFT) | ((kind as u64) << KIND_SHIFT) | (seq << 4)
}

/// The kind a handle value claims to be (whether it is live is for the
/// registry to say).
pub fn handle_kind(h: u64) -> Option<HandleKind> {
    if h >> TAG_SHIFT != HANDLE_TAG || h & 0xf != 0 {
        return None;
    }
    Some(match (h >> KIND_SHIFT) & 0xf {
        1 => HandleKind::Context,
        2 => HandleKind::Stream,
        3 => HandleKind::Event,
        4 => HandleKind::Module,
        5 => HandleKind::Function,
        6 => HandleKind::Library,
        7 => HandleKind::Kernel,
        8 => HandleKind::MemPool,
        9 => HandleKind::LinkState,
        10 => HandleKind::Graph,
        11 => HandleKind::GraphNode,
        12 => HandleKind::GraphExec,
        13 => HandleKind::MemHandle,
        14 => HandleKind::Array,
        15 => HandleKind::MipmappedArray,
        _ => return None,
    })
}

/// The live objects of one kind.
pub struct Registry<T> {
    kind: HandleKind,
    map: RwLock<HashMap<u64, Arc<T>>>,
}

impl<T> Registry<T> {
    pub fn new(kind: HandleKind) -> Self {
        Registry { kind, map: RwLock::new(HashMap::new()) }
    }

    /// Registers the object `make` builds for a fresh handle.
    pub fn insert_with(&self, make: impl FnOnce(u64) -> T) -> Arc<T> {
        let h = new_handle(self.kind);
        let obj = Arc::new(make(h));
        self.write().insert(h, obj.clone());
        obj
    }

    /// Registers `obj` under a handle made with [`new_handle`] beforehand
    /// (for objects that must know their handle's siblings first).
    pub fn insert_existing(&self, h: u64, obj: T) -> Arc<T> {
        let obj = Arc::new(obj);
        self.write().insert(h, obj.clone());
        obj
    }

    pub fn get(&self, h: u64) -> Option<Arc<T>> {
        if handle_kind(h) != Some(self.kind) {
            return None;
        }
        self.read().get(&h).cloned()
    }

    pub fn remove(&self, h: u64) -> Option<Arc<T>> {
        self.write().remove(&h)
    }

    /// Removes every object `pred` selects and returns them.
    pub fn remove_where(&self, pred: impl Fn(&T) -> bool) -> Vec<Arc<T>> {
        let mut map = self.write();
        let keys: Vec<u64> = map.iter().filter(|(_, v)| pred(v)).map(|(k, _)| *k).collect();
        keys.iter().filter_map(|k| map.remove(k)).collect()
    }

    pub fn values(&self) -> Vec<Arc<T>> {
        self.read().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    // A panic while holding the lock leaves the map itself consistent
    // (every operation is a single insert/remove), so poisoning is ignored.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Arc<T>>> {
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<u64, Arc<T>>> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// `Mutex::lock` that shrugs off poisoning: driver state stays usable after
/// a panic elsewhere (every panic is caught at the API boundary).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_encode_their_kind() {
        let a = new_handle(HandleKind::Stream);
        let b = new_handle(HandleKind::Stream);
        assert_ne!(a, b);
        assert_eq!(handle_kind(a), Some(HandleKind::Stream));
        assert_eq!(handle_kind(new_handle(HandleKind::Kernel)), Some(HandleKind::Kernel));
        for garbage in [0u64, 1, 2, 0xdead_beef, u64::MAX, a + 1] {
            assert_eq!(handle_kind(garbage), None, "{garbage:#x}");
        }
    }

    #[test]
    fn registry_rejects_wrong_kind_and_removed() {
        let r: Registry<u32> = Registry::new(HandleKind::Event);
        let o = r.insert_with(|_| 5);
        let h = r.values().len();
        assert_eq!(h, 1);
        let handle = *r.read().keys().next().unwrap_or(&0);
        assert_eq!(r.get(handle).as_deref(), Some(&*o));
        assert!(r.remove(handle).is_some());
        assert!(r.get(handle).is_none());
        let other = new_handle(HandleKind::Stream);
        assert!(r.get(other).is_none());
    }
}
