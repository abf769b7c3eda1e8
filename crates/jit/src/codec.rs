//! The byte format of cache payloads: module and kernel descriptions.
//! Readers return `None` on anything malformed (a corrupt entry is a miss).

pub(crate) struct Reader<'a> {
    pub b: &'a [u8],
    pub at: usize,
}

impl Reader<'_> {
    pub fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    pub fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }
    pub fn dims(&mut self) -> Option<Option<[u32; 3]>> {
        Some(match self.u32()? {
            0 => None,
            _ => Some([self.u32()?, self.u32()?, self.u32()?]),
        })
    }
}

pub(crate) fn put_str(w: &mut Vec<u8>, s: &str) {
    w.extend_from_slice(&(s.len() as u32).to_le_bytes());
    w.extend_from_slice(s.as_bytes());
}

fn put_dims(w: &mut Vec<u8>, d: Option<[u32; 3]>) {
    match d {
        None => w.extend_from_slice(&0u32.to_le_bytes()),
        Some(d) => {
            w.extend_from_slice(&1u32.to_le_bytes());
            for x in d {
                w.extend_from_slice(&x.to_le_bytes());
            }
        }
    }
}

fn put_base(w: &mut Vec<u8>, b: &compiler::GuardBase) {
    match b {
        compiler::GuardBase::None => w.extend_from_slice(&0u32.to_le_bytes()),
        compiler::GuardBase::Param(off) => {
            w.extend_from_slice(&1u32.to_le_bytes());
            w.extend_from_slice(&off.to_le_bytes());
        }
        compiler::GuardBase::Global(name) => {
            w.extend_from_slice(&2u32.to_le_bytes());
            put_str(w, name);
        }
    }
}

fn put_launch(w: &mut Vec<u8>, l: compiler::lockstep::Launch) {
    use compiler::lockstep::Launch;
    w.push(match l {
        Launch::Tid => 0,
        Launch::Ntid => 1,
        Launch::Ctaid => 2,
        Launch::Nctaid => 3,
    });
}

fn read_launch(r: &mut Reader) -> Option<compiler::lockstep::Launch> {
    use compiler::lockstep::Launch;
    Some(match r.bytes(1)?[0] {
        0 => Launch::Tid,
        1 => Launch::Ntid,
        2 => Launch::Ctaid,
        3 => Launch::Nctaid,
        _ => return None,
    })
}

/// A kernel's privatisation condition (`compiler::privatise::Guard`).
fn put_private(w: &mut Vec<u8>, g: Option<&compiler::privatise::Guard>) {
    use compiler::privatise::Val;
    let Some(g) = g else {
        w.extend_from_slice(&0u32.to_le_bytes());
        return;
    };
    w.extend_from_slice(&1u32.to_le_bytes());
    for regions in [&g.targets, &g.others] {
        w.extend_from_slice(&(regions.len() as u32).to_le_bytes());
        for region in regions {
            w.extend_from_slice(&region.bytes.to_le_bytes());
            w.extend_from_slice(&(region.address.len() as u32).to_le_bytes());
            for v in &region.address {
                match v {
                    Val::Const(c) => {
                        w.push(0);
                        w.extend_from_slice(&c.to_le_bytes());
                    }
                    Val::Param { at, bytes, signed } => {
                        w.push(1);
                        w.extend_from_slice(&at.to_le_bytes());
                        w.extend_from_slice(&[*bytes, *signed as u8]);
                    }
                    Val::Special(l, d) => {
                        w.push(2);
                        put_launch(w, *l);
                        w.push(*d);
                    }
                    Val::Within(lo, hi) => {
                        w.push(3);
                        w.extend_from_slice(&lo.to_le_bytes());
                        w.extend_from_slice(&hi.to_le_bytes());
                    }
                    Val::Add => w.push(4),
                    Val::Sub => w.push(5),
                    Val::Mul => w.push(6),
                    Val::Wide { signed } => w.extend_from_slice(&[7, *signed as u8]),
                    Val::Read { bits, signed } => w.extend_from_slice(&[8, *bits, *signed as u8]),
                    Val::Counter { bits, signed } => w.extend_from_slice(&[9, *bits, *signed as u8]),
                }
            }
        }
    }
}

fn read_private(r: &mut Reader) -> Option<Option<compiler::privatise::Guard>> {
    use compiler::privatise::{Guard, Region, Val};
    if r.u32()? == 0 {
        return Some(None);
    }
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        let n = r.u32()? as usize;
        for _ in 0..n.min(1 << 16) {
            let bytes = r.u64()?;
            let k = r.u32()? as usize;
            let mut address = Vec::with_capacity(k.min(1 << 10));
            for _ in 0..k {
                let tag = r.bytes(1)?[0];
                let mut byte = || r.bytes(1).map(|b| b[0]);
                address.push(match tag {
                    0 => Val::Const(r.u64()? as i64),
                    1 => {
                        let at = r.u32()?;
                        let b = r.bytes(2)?;
                        Val::Param { at, bytes: b[0], signed: b[1] != 0 }
                    }
                    2 => Val::Special(read_launch(r)?, r.bytes(1)?[0]),
                    3 => Val::Within(r.u64()? as i64, r.u64()? as i64),
                    4 => Val::Add,
                    5 => Val::Sub,
                    6 => Val::Mul,
                    7 => Val::Wide { signed: byte()? != 0 },
                    8 => {
                        let b = r.bytes(2)?;
                        Val::Read { bits: b[0], signed: b[1] != 0 }
                    }
                    9 => {
                        let b = r.bytes(2)?;
                        Val::Counter { bits: b[0], signed: b[1] != 0 }
                    }
                    _ => return None,
                });
            }
            list.push(Region { address, bytes });
        }
    }
    let [targets, others] = lists;
    Some(Some(Guard { targets, others }))
}

fn put_guard(w: &mut Vec<u8>, g: Option<&compiler::LaunchGuard>) {
    let Some(g) = g else {
        w.extend_from_slice(&0u32.to_le_bytes());
        return;
    };
    w.extend_from_slice(&(1 | (g.one_dimensional as u32) << 1).to_le_bytes());
    w.extend_from_slice(&(g.apart.len() as u32).to_le_bytes());
    for ap in &g.apart {
        put_base(w, &ap.a);
        w.extend_from_slice(&ap.a_offset.to_le_bytes());
        put_base(w, &ap.b);
        w.extend_from_slice(&ap.b_offset.to_le_bytes());
        w.extend_from_slice(&(ap.equal as u32).to_le_bytes());
        w.extend_from_slice(&ap.min.to_le_bytes());
        w.extend_from_slice(&ap.wrap.to_le_bytes());
    }
    w.extend_from_slice(&(g.disjoint.len() as u32).to_le_bytes());
    for d in &g.disjoint {
        put_span(w, &d.a);
        put_span(w, &d.b);
    }
    w.extend_from_slice(&(g.injective.len() as u32).to_le_bytes());
    for d in &g.injective {
        put_base(w, &d.base);
        w.extend_from_slice(&d.offset.to_le_bytes());
        w.extend_from_slice(&d.bytes.to_le_bytes());
        w.extend_from_slice(&(d.terms.len() as u32).to_le_bytes());
        for t in &d.terms {
            put_ops(w, &t.coord);
            put_ops(w, &t.stride);
            w.extend_from_slice(&t.factor.to_le_bytes());
        }
        w.extend_from_slice(&(d.single.len() as u32).to_le_bytes());
        for &(l, dim) in &d.single {
            put_ops(w, &[compiler::lockstep::Op::Special(l, dim)]);
        }
        w.extend_from_slice(&(d.nowrap.len() as u32).to_le_bytes());
        for (b, s) in &d.nowrap {
            put_ops(w, b);
            put_ops(w, s);
        }
        w.extend_from_slice(&(d.more.len() as u32).to_le_bytes());
        for (o, n) in &d.more {
            w.extend_from_slice(&o.to_le_bytes());
            w.extend_from_slice(&n.to_le_bytes());
        }
    }
}

fn read_injective(r: &mut Reader) -> Option<compiler::lockstep::Injective<compiler::GuardBase, u32>> {
    use compiler::lockstep::{Injective, Op, Term};
    let base = read_base(r)?;
    let offset = r.u64()? as i64;
    let bytes = r.u64()?;
    let n = r.u32()? as usize;
    let mut terms = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let coord = read_ops(r)?;
        let stride = read_ops(r)?;
        terms.push(Term { coord, stride, factor: r.u64()? as i64 });
    }
    let n = r.u32()? as usize;
    let mut single = Vec::with_capacity(n.min(8));
    for _ in 0..n {
        match read_ops(r)?[..] {
            [Op::Special(l, d)] => single.push((l, d)),
            _ => return None,
        }
    }
    let n = r.u32()? as usize;
    let mut nowrap = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        nowrap.push((read_ops(r)?, read_ops(r)?));
    }
    let n = r.u32()? as usize;
    let mut more = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        more.push((r.u64()? as i64, r.u64()?));
    }
    Some(Injective { base, offset, bytes, terms, single, nowrap, more })
}

fn put_span(w: &mut Vec<u8>, s: &compiler::lockstep::Span<compiler::GuardBase, u32>) {
    put_base(w, &s.base);
    w.extend_from_slice(&s.offset.to_le_bytes());
    w.extend_from_slice(&s.bytes.to_le_bytes());
    let Some(ix) = &s.index else {
        w.extend_from_slice(&0u32.to_le_bytes());
        return;
    };
    w.extend_from_slice(&(1 | (ix.signed as u32) << 1 | (ix.wide as u32) << 2).to_le_bytes());
    w.extend_from_slice(&ix.scale.to_le_bytes());
    put_ops(w, &ix.value);
    match &ix.below {
        None => w.extend_from_slice(&0u32.to_le_bytes()),
        Some((v, inclusive)) => {
            w.extend_from_slice(&(1 + *inclusive as u32).to_le_bytes());
            put_ops(w, v);
        }
    }
}

fn put_ops(w: &mut Vec<u8>, ops: &[compiler::lockstep::Op<u32>]) {
    use compiler::lockstep::{Launch, Op};
    w.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for op in ops {
        let (tag, x): (u32, u64) = match *op {
            Op::Const(c) => (0, c as u64),
            Op::Param { at, signed } => (1 + signed as u32, u64::from(at)),
            Op::Special(l, d) => {
                let l = match l {
                    Launch::Tid => 0,
                    Launch::Ntid => 1,
                    Launch::Ctaid => 2,
                    Launch::Nctaid => 3,
                };
                (3, l << 8 | u64::from(d))
            }
            Op::Add => (4, 0),
            Op::Sub => (5, 0),
            Op::Mul => (6, 0),
            Op::Field { at, field, signed } => (7 + signed as u32, u64::from(at) | u64::from(field) << 32),
            Op::Wide { signed } => (9 + signed as u32, 0),
            Op::MulHi => (11, 0),
            Op::Shr => (12, 0),
            Op::Rem => (13, 0),
            Op::Under => (14, 0),
            Op::Div => (15, 0),
            Op::Mod => (16, 0),
            Op::Either => (17, 0),
            Op::Min => (18, 0),
        };
        w.extend_from_slice(&tag.to_le_bytes());
        w.extend_from_slice(&x.to_le_bytes());
    }
}

fn read_span(r: &mut Reader) -> Option<compiler::lockstep::Span<compiler::GuardBase, u32>> {
    use compiler::lockstep::{Span, SpanIndex};
    let base = read_base(r)?;
    let offset = r.u64()? as i64;
    let bytes = r.u64()?;
    let flags = r.u32()?;
    if flags == 0 {
        return Some(Span { base, offset, index: None, bytes });
    }
    let scale = r.u64()? as i64;
    let value = read_ops(r)?;
    let below = match r.u32()? {
        0 => None,
        k @ (1 | 2) => Some((read_ops(r)?, k == 2)),
        _ => return None,
    };
    Some(Span { base, offset, index: Some(SpanIndex { value, signed: flags & 2 != 0, wide: flags & 4 != 0, scale, below }), bytes })
}

fn read_ops(r: &mut Reader) -> Option<Vec<compiler::lockstep::Op<u32>>> {
    use compiler::lockstep::{Launch, Op};
    let n = r.u32()? as usize;
    let mut value = Vec::with_capacity(n.min(1 << 10));
    for _ in 0..n {
        let (tag, x) = (r.u32()?, r.u64()?);
        value.push(match tag {
            0 => Op::Const(x as i64),
            1 | 2 => Op::Param { at: u32::try_from(x).ok()?, signed: tag == 2 },
            3 => {
                let l = match x >> 8 {
                    0 => Launch::Tid,
                    1 => Launch::Ntid,
                    2 => Launch::Ctaid,
                    3 => Launch::Nctaid,
                    _ => return None,
                };
                Op::Special(l, u8::try_from(x & 0xff).ok()?)
            }
            4 => Op::Add,
            5 => Op::Sub,
            6 => Op::Mul,
            7 | 8 => Op::Field { at: x as u32, field: (x >> 32) as u32, signed: tag == 8 },
            9 | 10 => Op::Wide { signed: tag == 10 },
            11 => Op::MulHi,
            12 => Op::Shr,
            13 => Op::Rem,
            14 => Op::Under,
            15 => Op::Div,
            16 => Op::Mod,
            17 => Op::Either,
            18 => Op::Min,
            _ => return None,
        });
    }
    Some(value)
}

fn read_base(r: &mut Reader) -> Option<compiler::GuardBase> {
    Some(match r.u32()? {
        0 => compiler::GuardBase::None,
        1 => compiler::GuardBase::Param(r.u32()?),
        2 => compiler::GuardBase::Global(r.string()?),
        _ => return None,
    })
}

fn read_guard(r: &mut Reader) -> Option<Option<compiler::LaunchGuard>> {
    let flags = r.u32()?;
    if flags == 0 {
        return Some(None);
    }
    let n = r.u32()? as usize;
    let mut apart = Vec::with_capacity(n.min(1 << 10));
    for _ in 0..n {
        let a = read_base(r)?;
        let a_offset = r.u64()? as i64;
        let b = read_base(r)?;
        let b_offset = r.u64()? as i64;
        let equal = r.u32()? != 0;
        let (min, wrap) = (r.u64()?, r.u64()?);
        apart.push(compiler::GuardApart { a, a_offset, b, b_offset, equal, min, wrap });
    }
    let n = r.u32()? as usize;
    let mut disjoint = Vec::with_capacity(n.min(1 << 10));
    for _ in 0..n {
        disjoint.push(compiler::lockstep::Disjoint { a: read_span(r)?, b: read_span(r)? });
    }
    let n = r.u32()? as usize;
    let mut injective = Vec::with_capacity(n.min(1 << 10));
    for _ in 0..n {
        injective.push(read_injective(r)?);
    }
    Some(Some(compiler::LaunchGuard { one_dimensional: flags & 2 != 0, apart, disjoint, injective }))
}

pub(crate) fn write_info(w: &mut Vec<u8>, info: &compiler::ModuleInfo) {
    w.extend_from_slice(&(info.kernels.len() as u32).to_le_bytes());
    for k in &info.kernels {
        put_str(w, &k.name);
        w.extend_from_slice(&(k.params.len() as u32).to_le_bytes());
        for p in &k.params {
            for x in [p.offset, p.size, p.align] {
                w.extend_from_slice(&x.to_le_bytes());
            }
        }
        let flags = k.needs_scheduler as u32 | (k.calls_malloc as u32) << 1 | (k.calls_printf as u32) << 2 | (k.spin_waits as u32) << 3;
        for x in [k.param_bytes, k.static_shared_bytes, k.dynamic_shared_offset, flags, k.local_bytes, k.lanes, k.frame_bytes] {
            w.extend_from_slice(&x.to_le_bytes());
        }
        put_dims(w, k.reqntid);
        put_dims(w, k.maxntid);
        put_guard(w, k.lockstep_guard.as_ref());
        put_private(w, k.privatise.as_ref());
    }
    w.extend_from_slice(&(info.globals.len() as u32).to_le_bytes());
    for g in &info.globals {
        put_str(w, &g.name);
        w.extend_from_slice(&g.size.to_le_bytes());
        w.extend_from_slice(&(g.constant as u32 | (g.managed as u32) << 1).to_le_bytes());
    }
}

pub(crate) fn read_info(r: &mut Reader) -> Option<compiler::ModuleInfo> {
    let nk = r.u32()? as usize;
    let mut kernels = Vec::with_capacity(nk.min(1 << 16));
    for _ in 0..nk {
        let name = r.string()?;
        let np = r.u32()? as usize;
        let mut params = Vec::with_capacity(np.min(1 << 12));
        for _ in 0..np {
            params.push(compiler::ParamInfo { offset: r.u32()?, size: r.u32()?, align: r.u32()? });
        }
        let (param_bytes, static_shared_bytes, dynamic_shared_offset, flags, local_bytes, lanes, frame_bytes) =
            (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let reqntid = r.dims()?;
        let maxntid = r.dims()?;
        let lockstep_guard = read_guard(r)?;
        let privatise = read_private(r)?;
        kernels.push(compiler::KernelInfo {
            name,
            params,
            param_bytes,
            static_shared_bytes,
            dynamic_shared_offset,
            needs_scheduler: flags & 1 != 0,
            spin_waits: flags & 8 != 0,
            reqntid,
            maxntid,
            local_bytes,
            lanes,
            frame_bytes,
            lockstep_guard,
            privatise,
            calls_malloc: flags & 2 != 0,
            calls_printf: flags & 4 != 0,
        });
    }
    let ng = r.u32()? as usize;
    let mut globals = Vec::with_capacity(ng.min(1 << 16));
    for _ in 0..ng {
        let name = r.string()?;
        let size = r.u64()?;
        let flags = r.u32()?;
        globals.push(compiler::GlobalInfo { name, size, constant: flags & 1 != 0, managed: flags & 2 != 0 });
    }
    Some(compiler::ModuleInfo { kernels, globals })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_descriptions_round_trip() {
        let info = compiler::ModuleInfo {
            kernels: vec![compiler::KernelInfo {
                name: "k".into(),
                params: vec![compiler::ParamInfo { offset: 0, size: 8, align: 8 }, compiler::ParamInfo { offset: 8, size: 4, align: 4 }],
                param_bytes: 12,
                static_shared_bytes: 1024,
                dynamic_shared_offset: 1024,
                needs_scheduler: true,
                spin_waits: true,
                reqntid: Some([128, 1, 1]),
                maxntid: None,
                local_bytes: 64,
                lanes: 32,
                frame_bytes: 1024,
                lockstep_guard: Some(compiler::LaunchGuard {
                    one_dimensional: true,
                    apart: vec![
                        compiler::GuardApart {
                            a: compiler::GuardBase::Param(8),
                            a_offset: -4,
                            b: compiler::GuardBase::Global("table".into()),
                            b_offset: 12,
                            equal: true,
                            min: 128,
                            wrap: 1 << 34,
                        },
                        compiler::GuardApart {
                            a: compiler::GuardBase::None,
                            a_offset: 0,
                            b: compiler::GuardBase::Param(0),
                            b_offset: 0,
                            equal: false,
                            min: 4,
                            wrap: 0,
                        },
                    ],
                    disjoint: vec![compiler::lockstep::Disjoint {
                        a: compiler::lockstep::Span {
                            base: compiler::GuardBase::Param(0),
                            offset: -8,
                            index: Some(compiler::lockstep::SpanIndex {
                                value: vec![
                                    compiler::lockstep::Op::Special(compiler::lockstep::Launch::Ctaid, 0),
                                    compiler::lockstep::Op::Special(compiler::lockstep::Launch::Ntid, 0),
                                    compiler::lockstep::Op::Mul,
                                    compiler::lockstep::Op::Special(compiler::lockstep::Launch::Tid, 1),
                                    compiler::lockstep::Op::Add,
                                    compiler::lockstep::Op::Param { at: 8, signed: true },
                                    compiler::lockstep::Op::Sub,
                                    compiler::lockstep::Op::Const(-3),
                                    compiler::lockstep::Op::Mul,
                                    compiler::lockstep::Op::Field { at: 16, field: 8, signed: false },
                                    compiler::lockstep::Op::Field { at: 16, field: 4, signed: true },
                                    compiler::lockstep::Op::MulHi,
                                    compiler::lockstep::Op::Const(3),
                                    compiler::lockstep::Op::Shr,
                                    compiler::lockstep::Op::Wide { signed: false },
                                    compiler::lockstep::Op::Wide { signed: true },
                                    compiler::lockstep::Op::Rem,
                                    compiler::lockstep::Op::Under,
                                    compiler::lockstep::Op::Div,
                                    compiler::lockstep::Op::Mod,
                                    compiler::lockstep::Op::Either,
                                    compiler::lockstep::Op::Min,
                                ],
                                signed: true,
                                wide: true,
                                scale: -4,
                                below: Some((vec![compiler::lockstep::Op::Param { at: 12, signed: false }], true)),
                            }),
                            bytes: 4,
                        },
                        b: compiler::lockstep::Span {
                            base: compiler::GuardBase::Global("table".into()),
                            offset: 16,
                            index: None,
                            bytes: 8,
                        },
                    }],
                    injective: vec![compiler::lockstep::Injective {
                        base: compiler::GuardBase::Param(24),
                        offset: 12,
                        bytes: 2,
                        terms: vec![compiler::lockstep::Term {
                            coord: vec![compiler::lockstep::Op::Param { at: 8, signed: false }, compiler::lockstep::Op::Under],
                            stride: vec![compiler::lockstep::Op::Field { at: 16, field: 4, signed: false }],
                            factor: 4,
                        }],
                        single: vec![(compiler::lockstep::Launch::Ntid, 1), (compiler::lockstep::Launch::Nctaid, 2)],
                        nowrap: vec![(
                            vec![compiler::lockstep::Op::Param { at: 8, signed: false }],
                            vec![compiler::lockstep::Op::Special(compiler::lockstep::Launch::Ntid, 0)],
                        )],
                        more: vec![(-4, 2), (140, 4)],
                    }],
                }),
                privatise: Some(compiler::privatise::Guard {
                    targets: vec![compiler::privatise::Region {
                        address: vec![
                            compiler::privatise::Val::Param { at: 16, bytes: 8, signed: false },
                            compiler::privatise::Val::Within(0, 255),
                            compiler::privatise::Val::Wide { signed: false },
                            compiler::privatise::Val::Const(-4),
                            compiler::privatise::Val::Mul,
                            compiler::privatise::Val::Add,
                        ],
                        bytes: 4,
                    }],
                    others: vec![compiler::privatise::Region {
                        address: vec![
                            compiler::privatise::Val::Special(compiler::lockstep::Launch::Ctaid, 0),
                            compiler::privatise::Val::Special(compiler::lockstep::Launch::Nctaid, 2),
                            compiler::privatise::Val::Sub,
                            compiler::privatise::Val::Special(compiler::lockstep::Launch::Tid, 1),
                            compiler::privatise::Val::Special(compiler::lockstep::Launch::Ntid, 0),
                            compiler::privatise::Val::Param { at: 8, bytes: 4, signed: true },
                            compiler::privatise::Val::Read { bits: 64, signed: true },
                            compiler::privatise::Val::Counter { bits: 32, signed: true },
                        ],
                        bytes: 16,
                    }],
                }),
                calls_malloc: true,
                calls_printf: false,
            }],
            globals: vec![compiler::GlobalInfo { name: "g".into(), size: 16, constant: true, managed: false }],
        };
        let mut w = Vec::new();
        write_info(&mut w, &info);
        put_str(&mut w, "tail");
        let mut r = Reader { b: &w, at: 0 };
        assert_eq!(read_info(&mut r), Some(info));
        assert_eq!(r.string().as_deref(), Some("tail"));
        // Every truncation is refused, never a panic.
        for cut in 0..w.len() - 8 {
            let mut r = Reader { b: &w[..cut], at: 0 };
            assert_eq!(read_info(&mut r), None, "cut at {cut}");
        }
    }
}
