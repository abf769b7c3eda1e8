//! Results of warp collectives for a group of lanes that reached them
//! together, as the PTX ISA defines them.
//!
//! `group` is the set of lanes whose inputs are known. For `.sync`
//! operations a lane's participants are `group & its membermask` (lanes of
//! the mask that have exited are simply absent).

use compiler::cpu_abi::{matching, redux, shfl, vote};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum WarpKind {
    Sync,
    Shfl,
    Vote,
    Match,
    Redux,
    ActiveMask,
    /// A matrix instruction's exchange of fragments (`__anycuda_warp_gather`).
    Gather,
}

impl WarpKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WarpKind::Sync => "bar.warp.sync",
            WarpKind::Shfl => "shfl.sync",
            WarpKind::Vote => "vote.sync",
            WarpKind::Match => "match.sync",
            WarpKind::Redux => "redux.sync",
            WarpKind::ActiveMask => "activemask",
            WarpKind::Gather => "a warp matrix instruction",
        }
    }
}

/// One lane's inputs. `mode` is the shfl/vote/match mode or redux op;
/// `value` the source value (a predicate as 0/1 for vote).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LaneOp {
    pub mode: u32,
    pub value: u64,
    pub b: u32,
    pub c: u32,
    pub mask: u32,
}

/// Iterates over the set bits of a lane mask, lowest first.
pub(crate) fn lanes(mut mask: u32) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let lane = mask.trailing_zeros();
            mask &= mask - 1;
            lane
        })
    })
}

/// The source lane of `shfl.sync` for `lane`, and whether it is in range
/// (PTX ISA, shfl.sync pseudo-code).
pub(crate) fn shfl_source(lane: u32, mode: u32, b: u32, c: u32) -> (u32, bool) {
    let bval = b & 0x1f;
    let cval = c & 0x1f;
    let segmask = (c >> 8) & 0x1f;
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, in_range) = match mode {
        shfl::UP => {
            let j = lane as i32 - bval as i32;
            (j, j >= max_lane as i32)
        }
        shfl::DOWN => {
            let j = (lane + bval) as i32;
            (j, j <= max_lane as i32)
        }
        shfl::BFLY => {
            let j = (lane ^ bval) as i32;
            (j, j <= max_lane as i32)
        }
        _ => {
            let j = (min_lane | (bval & !segmask)) as i32;
            (j, j <= max_lane as i32)
        }
    };
    if in_range {
        (j as u32, true)
    } else {
        (lane, false)
    }
}

/// Results for every lane in `group` (other entries are 0).
pub(crate) fn compute(kind: WarpKind, group: u32, ops: &[LaneOp; 32]) -> [u64; 32] {
    let mut out = [0u64; 32];
    match kind {
        // Gathers copy memory; the scheduler resolves them (`gather`).
        WarpKind::Sync | WarpKind::Gather => {}
        WarpKind::ActiveMask => {
            for lane in lanes(group) {
                out[lane as usize] = u64::from(group);
            }
        }
        WarpKind::Shfl => {
            for lane in lanes(group) {
                let op = &ops[lane as usize];
                let (source, in_range) = shfl_source(lane, op.mode, op.b, op.c);
                // A source lane that is not taking part has no defined
                // value; ours is as good as any.
                let value = if group & (1 << source) != 0 { ops[source as usize].value } else { op.value };
                out[lane as usize] = (value & 0xffff_ffff) | (u64::from(in_range) << 32);
            }
        }
        WarpKind::Vote => {
            let mut preds = 0u32;
            for lane in lanes(group) {
                if ops[lane as usize].value != 0 {
                    preds |= 1 << lane;
                }
            }
            for lane in lanes(group) {
                let op = &ops[lane as usize];
                let members = group & op.mask;
                let ballot = preds & members;
                out[lane as usize] = u64::from(match op.mode {
                    vote::ALL => u32::from(ballot == members),
                    vote::ANY => u32::from(ballot != 0),
                    vote::UNI => u32::from(ballot == 0 || ballot == members),
                    _ => ballot,
                });
            }
        }
        WarpKind::Match => {
            for lane in lanes(group) {
                let op = &ops[lane as usize];
                let members = group & op.mask;
                let same =
                    lanes(members).filter(|&other| ops[other as usize].value == op.value).fold(0u32, |acc, other| acc | (1 << other));
                out[lane as usize] = match op.mode {
                    matching::ALL => {
                        if same == members {
                            u64::from(members) | (1 << 32)
                        } else {
                            0
                        }
                    }
                    _ => u64::from(same),
                };
            }
        }
        WarpKind::Redux => {
            for lane in lanes(group) {
                let op = &ops[lane as usize];
                let members = group & op.mask;
                let values = lanes(members).map(|other| ops[other as usize].value as u32);
                let result = match op.mode {
                    redux::ADD => values.fold(0u32, u32::wrapping_add),
                    redux::MIN_U32 => values.min().unwrap_or(u32::MAX),
                    redux::MAX_U32 => values.max().unwrap_or(0),
                    redux::MIN_S32 => values.map(|v| v as i32).min().unwrap_or(i32::MAX) as u32,
                    redux::MAX_S32 => values.map(|v| v as i32).max().unwrap_or(i32::MIN) as u32,
                    redux::AND => values.fold(u32::MAX, |a, v| a & v),
                    redux::OR => values.fold(0, |a, v| a | v),
                    _ => values.fold(0, |a, v| a ^ v),
                };
                out[lane as usize] = u64::from(result);
            }
        }
    }
    out
}

/// The snapshot of a gather: `bytes` bytes from each lane of `group`
/// (`ops[lane].value` is their address), zeros for the other lanes.
///
/// # Safety
/// Each address in `group` must point to `bytes` readable bytes.
pub(crate) unsafe fn gather(group: u32, ops: &[LaneOp; 32], bytes: usize, out: &mut Vec<u8>) {
    out.clear();
    out.resize(32 * bytes, 0);
    for lane in lanes(group) {
        let src = ops[lane as usize].value as usize as *const u8;
        // SAFETY: per the contract.
        let from = unsafe { std::slice::from_raw_parts(src, bytes) };
        out[lane as usize * bytes..(lane as usize + 1) * bytes].copy_from_slice(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(f: impl Fn(u32) -> LaneOp) -> [LaneOp; 32] {
        std::array::from_fn(|lane| f(lane as u32))
    }

    #[test]
    fn shfl_modes_follow_the_pseudo_code() {
        // __shfl_down_sync(full, v, 1): c = 0x1f.
        assert_eq!(shfl_source(0, shfl::DOWN, 1, 0x1f), (1, true));
        assert_eq!(shfl_source(31, shfl::DOWN, 1, 0x1f), (31, false));
        // __shfl_up_sync(full, v, 2): c = 0.
        assert_eq!(shfl_source(1, shfl::UP, 2, 0), (1, false));
        assert_eq!(shfl_source(5, shfl::UP, 2, 0), (3, true));
        // width 8: c = (32 - 8) << 8 for up, | 0x1f for the others.
        let seg = (32 - 8) << 8;
        assert_eq!(shfl_source(9, shfl::UP, 2, seg), (9, false));
        assert_eq!(shfl_source(10, shfl::UP, 2, seg), (8, true));
        assert_eq!(shfl_source(14, shfl::DOWN, 2, seg | 0x1f), (14, false));
        assert_eq!(shfl_source(13, shfl::DOWN, 2, seg | 0x1f), (15, true));
        assert_eq!(shfl_source(13, shfl::IDX, 3, seg | 0x1f), (11, true));
        assert_eq!(shfl_source(13, shfl::IDX, 35, seg | 0x1f), (11, true));
        assert_eq!(shfl_source(13, shfl::BFLY, 4, seg | 0x1f), (9, true));
        // A clamp below the lane: idx 20 with c = 7 (no segments).
        assert_eq!(shfl_source(3, shfl::IDX, 20, 7), (3, false));
        assert_eq!(shfl_source(3, shfl::IDX, 6, 7), (6, true));
    }

    #[test]
    fn vote_match_redux() {
        let ops = full(|lane| LaneOp { mode: vote::BALLOT, value: u64::from(lane % 3 == 0), mask: u32::MAX, ..Default::default() });
        let out = compute(WarpKind::Vote, u32::MAX, &ops);
        assert_eq!(out[0] as u32, 0x4924_9249);
        let ops = full(|lane| LaneOp { mode: vote::ALL, value: u64::from(lane < 16), mask: 0xffff, ..Default::default() });
        assert_eq!(compute(WarpKind::Vote, u32::MAX, &ops)[3], 1);
        let ops = full(|lane| LaneOp { mode: matching::ANY, value: u64::from(lane % 4), mask: u32::MAX, ..Default::default() });
        assert_eq!(compute(WarpKind::Match, u32::MAX, &ops)[1] as u32, 0x2222_2222);
        let ops =
            full(|lane| LaneOp { mode: redux::MIN_S32, value: u64::from((lane as i32 - 5) as u32), mask: u32::MAX, ..Default::default() });
        assert_eq!(compute(WarpKind::Redux, u32::MAX, &ops)[7] as u32 as i32, -5);
    }
}
