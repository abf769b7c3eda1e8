//! Choosing the PTX entry to compile for a device.

use std::borrow::Cow;
use std::cmp::Reverse;

use crate::error::{Error, Result};
use crate::fatbin::{ArchVariant, Entry, Fatbin, PtxVersion};

/// Which PTX entries are acceptable for a target compute capability.
///
/// NVIDIA's driver JIT-compiles PTX for `compute_XX` only on devices of
/// capability XX or newer (`compute_90a` only on exactly 9.0, `compute_100f`
/// only on 10.x at or above 10.0). Our backends (CPU, AMD) can compile any
/// PTX whose instructions they implement, so a looser choice can run programs
/// NVIDIA would reject; the stricter one reproduces NVIDIA's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Policy {
    /// NVIDIA semantics: the highest arch the target can run, i.e.
    /// `arch <= target` (with the `a`/`f` rules above). None:
    /// [`Error::NoCompatiblePtx`].
    #[default]
    Strict,
    /// [`Policy::Strict`]'s pick if there is one, else the lowest arch above
    /// the target: the closest to what the device reports, so the code is the
    /// least likely to rely on features the program did not check for.
    Nearest,
    /// The highest arch present, whatever the target.
    Any,
}

/// PTX chosen for compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ptx<'a> {
    /// The text, without the terminating NUL.
    pub text: Cow<'a, str>,
    /// The entry's arch; `None` for bare PTX text (the `.target` line says).
    pub arch: Option<u32>,
    pub variant: ArchVariant,
    pub version: Option<PtxVersion>,
    /// Index in [`Fatbin::entries`]; `None` for bare PTX text.
    pub entry: Option<usize>,
}

/// Whether NVIDIA's JIT would accept PTX for `arch`/`variant` on `target`.
pub fn runs_on(arch: u32, variant: ArchVariant, target: u32) -> bool {
    match variant {
        ArchVariant::Generic => arch <= target,
        ArchVariant::ArchSpecific => arch == target,
        ArchVariant::FamilySpecific => arch <= target && arch / 10 == target / 10,
    }
}

/// Order among acceptable entries: higher arch first; at equal arch the
/// portable variant first (arch-specific PTX uses instructions such as wgmma
/// that only that NVIDIA chip has, which our backends are least likely to
/// implement), then the newer PTX ISA, then file order.
fn rank(e: &Entry<'_>) -> (u32, Reverse<ArchVariant>, u32, Reverse<usize>) {
    (e.arch(), Reverse(e.arch_variant()), e.raw_version(), Reverse(e.index()))
}

pub(crate) fn select<'f, 'a>(fatbin: &'f Fatbin<'a>, target: u32, policy: Policy) -> Result<&'f Entry<'a>> {
    let ptx: Vec<&Entry<'a>> = fatbin.ptx_entries().collect();
    if ptx.is_empty() {
        return Err(Error::NoPtx { archs: fatbin.sass_archs() });
    }
    let strict = || ptx.iter().copied().filter(|e| runs_on(e.arch(), e.arch_variant(), target)).max_by_key(|e| rank(e));
    let picked = match policy {
        Policy::Strict => strict(),
        Policy::Nearest => strict().or_else(|| {
            // Lowest arch above the target; within it, the same preferences.
            let lowest = ptx.iter().map(|e| e.arch()).filter(|&a| a > target).min()?;
            ptx.iter().copied().filter(|e| e.arch() == lowest).max_by_key(|e| rank(e))
        }),
        Policy::Any => ptx.iter().copied().max_by_key(|e| rank(e)),
    };
    picked.ok_or_else(|| {
        let mut ptx_archs: Vec<u32> = ptx.iter().map(|e| e.arch()).collect();
        ptx_archs.sort_unstable();
        ptx_archs.dedup();
        Error::NoCompatiblePtx { target, policy, ptx_archs }
    })
}
