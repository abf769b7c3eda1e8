//! Texture and surface instructions through object handles (`tex` with
//! its mipmap forms, `tld4`, `txq`, `suld.b`, `sust`, `sured`, `suq`,
//! `istypep`): calls into the runtime (`cpu_abi::tex`), which reads the
//! object's descriptor and samples or accesses the resource in software.

use crate::cpu_abi::{runtime, tex};
use crate::ir::{Ty, V};
use crate::lower::{FnLower, Res};
use ptx::ast::*;

impl<'c, 'm> FnLower<'c, 'm> {
    fn tex_geometry(&self, inst: &Instruction, surface: bool) -> Res<u32> {
        let b = self.b;
        let g = [
            (Flag::D1, tex::D1),
            (Flag::D2, tex::D2),
            (Flag::D3, tex::D3),
            (Flag::A1d, tex::A1D),
            (Flag::A2d, tex::A2D),
            (Flag::Cube, tex::CUBE),
            (Flag::Acube, tex::ACUBE),
        ];
        let found = g.iter().find(|(f, _)| inst.has(b, *f)).map(|(_, v)| *v);
        match found {
            Some(v) if !surface || v <= tex::A2D => Ok(v),
            _ => self.unsupported(format!("`{}` (geometry)", self.describe(inst))),
        }
    }

    /// `[handle, {coords}]`: the handle and up to four coordinate words
    /// (f32 coordinates as their bits).
    fn tex_operands(&mut self, inst: &Instruction, op: &Operand, float: bool) -> Res<(V, [V; 4])> {
        let b = self.b;
        let Operand::Bracket(l) = *op else {
            return self.invalid("expected `[handle, coordinates]`");
        };
        let parts: Vec<Operand> = b.list(l).to_vec();
        if parts.len() != 2 {
            return self.unsupported(format!("`{}` with a separate sampler", self.describe(inst)));
        }
        let handle = self.object_handle(inst, &parts[0])?;
        let coords: Vec<Operand> = match parts[1] {
            Operand::Vector(l) => b.list(l).to_vec(),
            other => vec![other],
        };
        if coords.is_empty() || coords.len() > 4 {
            return self.invalid("texture coordinates must be 1 to 4 values");
        }
        let zero = V::int(Ty::I32, 0);
        let mut c = [zero.clone(), zero.clone(), zero.clone(), zero];
        for (k, e) in coords.iter().enumerate() {
            c[k] = match e {
                // Array indices are integers even among float coordinates.
                Operand::Reg(r) if float && self.reg_tys[*r as usize] == Ty::Float => self.get(e, Ty::I32)?,
                Operand::F32(bits) => V::int(Ty::I32, *bits as i128),
                _ => self.get(e, Ty::I32)?,
            };
        }
        Ok((handle, c))
    }

    /// An `.f32` operand as its bits.
    fn float_word(&mut self, e: &Operand) -> Res<V> {
        match *e {
            Operand::F32(bits) => Ok(V::int(Ty::I32, bits as i128)),
            _ => self.get(e, Ty::I32),
        }
    }

    /// The object handle an operand names: a 64-bit register, or a
    /// module-scope `.texref`/`.surfref`, an 8-byte variable in which the
    /// driver keeps the bound object's handle (`cuTexRefSetArray`...).
    fn object_handle(&mut self, inst: &Instruction, op: &Operand) -> Res<V> {
        match *op {
            Operand::Reg(r) => {
                if self.reg_tys[r as usize].bits() != 64 {
                    return self.invalid(format!("`{}`: a texture or surface object handle is a 64-bit register", self.describe(inst)));
                }
                self.get(op, Ty::I64)
            }
            Operand::Global(s) => {
                let is_ref = self
                    .cx
                    .m
                    .variable(s)
                    .is_some_and(|v| matches!(v.decl.ty, Type::Texref | Type::Surfref) && v.decl.space == StateSpace::Global);
                if !is_ref {
                    let name = self.cx.m.symbol(s).name;
                    return self.unsupported(format!(
                        "`{}` on `{name}` (only object handles and .global texture or surface references)",
                        self.describe(inst)
                    ));
                }
                let p = self.symbol_address_value(s)?;
                let p = self.convert(p, Ty::Ptr, false);
                Ok(self.out.def(Ty::I64, format_args!("load volatile i64, {p}, align 8")))
            }
            _ => self.unsupported(format!("`{}` (the texture operand must be a handle or a texture reference)", self.describe(inst))),
        }
    }

    fn tex_out(&mut self, dst: &Operand, buf: &str, n: usize) -> Res<Option<RegId>> {
        let (elems, pred): (Vec<Operand>, Option<RegId>) = match *dst {
            Operand::Vector(l) => (self.b.list(l).to_vec(), None),
            Operand::VectorPred(l, p) => (self.b.list(l).to_vec(), Some(p)),
            other => (vec![other], None),
        };
        if elems.len() > n {
            return self.invalid("too many destination registers");
        }
        for (k, e) in elems.iter().enumerate() {
            let p = self.out.def(Ty::Ptr, format_args!("getelementptr i32, ptr {buf}, i64 {k}"));
            let v = self.out.def(Ty::I32, format_args!("load i32, {p}, align 4"));
            self.set(e, v)?;
        }
        Ok(pred)
    }

    /// `tex.geom.v4.dtype.ctype d, [a, c]` and `tld4.comp.2d.v4.dtype.f32`.
    pub fn tex(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let gather = inst.op == Opcode::Tld4;
        let level = inst.has(b, Flag::Level);
        let grad = inst.has(b, Flag::Grad);
        // `tex.base` samples level 0, as a plain `tex` does.
        let lod_operands = if level {
            1
        } else if grad {
            2
        } else {
            0
        };
        if gather && (level || grad || inst.has(b, Flag::Base)) {
            return self.invalid("tld4 has no mipmap forms");
        }
        if args.len() != 2 + lod_operands {
            return self.unsupported(format!("`{}` (texel offsets or depth compare)", self.describe(inst)));
        }
        let geometry = if gather && !inst.has(b, Flag::D2) {
            return self.unsupported(format!("`{}` (tld4 other than .2d)", self.describe(inst)));
        } else {
            self.tex_geometry(inst, false)?
        };
        let types: Vec<Type> = inst.types(b).collect();
        let (dtype, ctype) = match types.as_slice() {
            [d, c] => (*d, *c),
            _ => return self.invalid("tex needs a result and a coordinate type"),
        };
        let result = match dtype {
            Type::F32 => tex::RESULT_F32,
            Type::S32 => tex::RESULT_S32,
            Type::U32 => tex::RESULT_U32,
            _ => return self.unsupported(format!("`{}` (result type)", self.describe(inst))),
        };
        let int_coords = match ctype {
            Type::F32 => false,
            Type::S32 if !gather && geometry <= tex::A2D => true,
            _ => return self.unsupported(format!("`{}` (coordinate type)", self.describe(inst))),
        };
        if inst.vector(b) != Some(4) {
            return self.unsupported(format!("`{}` (only .v4 results)", self.describe(inst)));
        }
        let mut op = geometry | (result << tex::RESULT_SHIFT);
        if int_coords {
            op |= tex::INT_COORDS;
        }
        if gather {
            let comp = if inst.has(b, Flag::R) {
                0
            } else if inst.has(b, Flag::G) {
                1
            } else if inst.has(b, Flag::Bfmt) {
                2
            } else if inst.has(b, Flag::A) {
                3
            } else {
                return self.invalid("tld4 needs .r, .g, .b or .a");
            };
            op |= (comp + 1) << tex::GATHER_SHIFT;
        }
        let (handle, c) = self.tex_operands(inst, &args[1], !int_coords)?;
        let buf = self.out.alloca("[4 x i32]", 16);
        let resident = if level || grad {
            // [lod, dPdx (3), dPdy (3)] as f32 bits.
            let lod = self.out.alloca("[7 x i32]", 16);
            let mut words: [V; 7] = std::array::from_fn(|_| V::int(Ty::I32, 0));
            if level {
                words[0] = self.float_word(&args[2])?;
            } else {
                op |= tex::GRAD;
                for (g, at) in [(&args[2], 1), (&args[3], 4)] {
                    let parts: Vec<Operand> = match *g {
                        Operand::Vector(l) => b.list(l).to_vec(),
                        other => vec![other],
                    };
                    if parts.is_empty() || parts.len() > 4 {
                        return self.invalid("tex.grad: a gradient is a vector of 1 to 4 values");
                    }
                    // A fourth component (the .v4 of 3-D and cube
                    // gradients) is ignored.
                    for (k, e) in parts.iter().take(3).enumerate() {
                        words[at + k] = self.float_word(e)?;
                    }
                }
            }
            for (k, v) in words.iter().enumerate() {
                let p = self.out.def(Ty::Ptr, format_args!("getelementptr i32, ptr {lod}, i64 {k}"));
                self.out.op(format_args!("store {v}, {p}, align 4"));
            }
            self.cx.declare_runtime(&runtime::TEX_MIP);
            self.out.def(
                Ty::I32,
                format_args!(
                    "call i32 @__anycuda_tex_mip(ptr %ctx, i32 %lin, {handle}, i32 {op}, {}, {}, {}, {}, ptr {lod}, ptr {buf})",
                    c[0], c[1], c[2], c[3]
                ),
            )
        } else {
            self.cx.declare_runtime(&runtime::TEX);
            self.out.def(
                Ty::I32,
                format_args!(
                    "call i32 @__anycuda_tex(ptr %ctx, i32 %lin, {handle}, i32 {op}, {}, {}, {}, {}, ptr {buf})",
                    c[0], c[1], c[2], c[3]
                ),
            )
        };
        if let Some(p) = self.tex_out(&args[0], &buf, 4)? {
            let r = self.icmp("ne", &resident, &V::int(Ty::I32, 0));
            self.set(&Operand::Reg(p), r)?;
        }
        Ok(())
    }

    fn surface_op(&mut self, inst: &Instruction) -> Res<(u32, u32)> {
        let b = self.b;
        // `.p` (formatted) exists for stores and reductions only.
        let formatted = inst.has(b, Flag::Pfmt) && inst.op != Opcode::Suld;
        if !formatted && !inst.has(b, Flag::Bfmt) {
            return self.unsupported(format!("`{}` (surface loads are .b only)", self.describe(inst)));
        }
        if formatted && inst.ty(b).map(|t| t.bits()) != Some(32) && inst.op == Opcode::Sust {
            return self.invalid(format!("`{}`: sust.p stores .b32 values", self.describe(inst)));
        }
        let geometry = self.tex_geometry(inst, true)?;
        let size = match inst.ty(b).map(|t| t.bits()) {
            Some(8) => 0,
            Some(16) => 1,
            Some(32) => 2,
            Some(64) => 3,
            _ => return self.unsupported(format!("`{}` (element type)", self.describe(inst))),
        };
        let vec = match inst.vector(b) {
            None => 0,
            Some(2) => 1,
            Some(4) => 2,
            _ => return self.unsupported(format!("`{}` (vector length)", self.describe(inst))),
        };
        let clamp = if inst.has(b, Flag::Clamp) {
            tex::CLAMP
        } else if inst.has(b, Flag::Zero) {
            tex::ZERO
        } else {
            tex::TRAP
        };
        let n = 1u32 << vec;
        let formatted = if formatted { tex::FORMATTED } else { 0 };
        Ok((geometry | (size << tex::SIZE_SHIFT) | (vec << tex::VEC_SHIFT) | (clamp << tex::CLAMP_SHIFT) | formatted, n))
    }

    /// `sured.b.op.geom.ctype.clamp [a, b], c` and `sured.p`: an atomic
    /// reduction into one surface element.
    pub fn sured(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        if args.len() != 2 || inst.vector(b).is_some() {
            return self.invalid(format!("`{}`: expected `[a, b], c`", self.describe(inst)));
        }
        let (mut op, _) = self.surface_op(inst)?;
        if op & tex::GEOMETRY_MASK > tex::D3 {
            return self.invalid(format!("`{}`: sured takes .1d, .2d or .3d", self.describe(inst)));
        }
        let formatted = op & tex::FORMATTED != 0;
        let ty = inst.ty(b);
        let red = [
            (Flag::AddOp, tex::RED_ADD),
            (Flag::MinOp, tex::RED_MIN),
            (Flag::MaxOp, tex::RED_MAX),
            (Flag::And, tex::RED_AND),
            (Flag::Or, tex::RED_OR),
        ];
        let Some(red) = red.iter().find(|(f, _)| inst.has(b, *f)).map(|(_, r)| *r) else {
            return self.invalid(format!("`{}`: sured needs .add, .min, .max, .and or .or", self.describe(inst)));
        };
        // The ISA's pairs of operation and type.
        let allowed = matches!(
            (formatted, red, ty),
            (false, tex::RED_ADD, Some(Type::U32 | Type::U64 | Type::S32))
                | (false, tex::RED_MIN | tex::RED_MAX, Some(Type::U32 | Type::S32 | Type::U64 | Type::S64))
                | (false, tex::RED_AND | tex::RED_OR, Some(Type::B32))
                | (true, tex::RED_MIN | tex::RED_MAX, Some(Type::B32 | Type::B64))
                | (true, _, Some(Type::B32))
        );
        if !allowed {
            return self.invalid(format!("`{}`: that operation does not apply to that type", self.describe(inst)));
        }
        op |= red << tex::RED_SHIFT;
        if matches!(ty, Some(Type::S32 | Type::S64)) {
            op |= tex::RED_SIGNED;
        }
        let (handle, c) = self.tex_operands(inst, &args[0], false)?;
        let v = self.get(&args[1], Ty::int(ty.map_or(32, |t| t.bits())))?;
        let v = self.convert(v, Ty::I64, false);
        self.cx.declare_runtime(&runtime::SURED);
        self.out.op(format_args!(
            "call void @__anycuda_sured(ptr %ctx, i32 %lin, {handle}, i32 {op}, {}, {}, {}, {}, {v})",
            c[0], c[1], c[2], c[3]
        ));
        Ok(())
    }

    /// `suld.b.geom{.cop}.vec.dtype.clamp d, [a, b]`.
    pub fn suld(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let (op, n) = self.surface_op(inst)?;
        let bits = inst.ty(self.b).map_or(32, |t| t.bits());
        let (handle, c) = self.tex_operands(inst, &args[1], false)?;
        let buf = self.out.alloca("[4 x i64]", 16);
        self.cx.declare_runtime(&runtime::SULD);
        self.out.op(format_args!(
            "call void @__anycuda_suld(ptr %ctx, i32 %lin, {handle}, i32 {op}, {}, {}, {}, {}, ptr {buf})",
            c[0], c[1], c[2], c[3]
        ));
        let elems: Vec<Operand> = match args[0] {
            Operand::Vector(l) => self.b.list(l).to_vec(),
            other => vec![other],
        };
        if elems.len() != n as usize {
            return self.invalid("destination count does not match the vector length");
        }
        let t = Ty::int(bits);
        for (k, e) in elems.iter().enumerate() {
            let p = self.out.def(Ty::Ptr, format_args!("getelementptr {t}, ptr {buf}, i64 {k}"));
            let v = self.out.def(t, format_args!("load {t}, {p}, align 1"));
            self.set(e, v)?;
        }
        Ok(())
    }

    /// `sust.b.geom{.cop}.vec.ctype.clamp [a, b], c` and `sust.p` (32-bit
    /// values the runtime converts to the surface's format).
    pub fn sust(&mut self, inst: &Instruction) -> Res<()> {
        let args = self.b.args(inst);
        let (op, n) = self.surface_op(inst)?;
        let bits = inst.ty(self.b).map_or(32, |t| t.bits());
        let (handle, c) = self.tex_operands(inst, &args[0], false)?;
        let elems: Vec<Operand> = match args[1] {
            Operand::Vector(l) => self.b.list(l).to_vec(),
            other => vec![other],
        };
        if elems.len() != n as usize {
            return self.invalid("source count does not match the vector length");
        }
        let buf = self.out.alloca("[4 x i64]", 16);
        let t = Ty::int(bits);
        for (k, e) in elems.iter().enumerate() {
            let v = self.get(e, t)?;
            let p = self.out.def(Ty::Ptr, format_args!("getelementptr {t}, ptr {buf}, i64 {k}"));
            self.out.op(format_args!("store {v}, {p}, align 1"));
        }
        self.cx.declare_runtime(&runtime::SUST);
        self.out.op(format_args!(
            "call void @__anycuda_sust(ptr %ctx, i32 %lin, {handle}, i32 {op}, {}, {}, {}, {}, ptr {buf})",
            c[0], c[1], c[2], c[3]
        ));
        Ok(())
    }

    /// `istypep.type p, a`: whether the 64-bit value `a` is the handle of
    /// a live texture (`.texref`) or surface (`.surfref`) object. CUDA
    /// has no sampler objects of their own (a texture object carries its
    /// sampling state), so `.samplerref` asks the runtime too and is false
    /// for every handle.
    pub fn istypep(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let kind = match inst.ty(b) {
            Some(Type::Texref) => tex::IS_TEXTURE,
            Some(Type::Samplerref) => tex::IS_SAMPLER,
            Some(Type::Surfref) => tex::IS_SURFACE,
            _ => return self.invalid(format!("`{}`: istypep takes .texref, .samplerref or .surfref", self.describe(inst))),
        };
        if args.len() != 2 {
            return self.invalid(format!("`{}`: expected `p, a`", self.describe(inst)));
        }
        let v = self.get(&args[1], Ty::I64)?;
        self.cx.declare_runtime(&runtime::ISTYPEP);
        let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_istypep(ptr %ctx, i32 %lin, {v}, i32 {kind})"));
        let p = self.icmp("ne", &r, &V::int(Ty::I32, 0));
        self.set(&args[0], p)
    }

    /// `txq.query.b32 d, [a]` and `suq.query.b32 d, [a]`. The channel
    /// queries are not answered: CUDA documents no values for them.
    pub fn txq(&mut self, inst: &Instruction) -> Res<()> {
        let b = self.b;
        let args = b.args(inst);
        let level = inst.has(b, Flag::Level);
        if args.len() != 2 + usize::from(level) {
            return self.invalid(format!("`{}`: expected `d, [a]` or, with .level, `d, [a], lod`", self.describe(inst)));
        }
        let queries = [
            (Flag::WidthQ, tex::Q_WIDTH),
            (Flag::HeightQ, tex::Q_HEIGHT),
            (Flag::DepthQ, tex::Q_DEPTH),
            (Flag::ArraySize, tex::Q_ARRAY_SIZE),
            (Flag::NumMipmapLevels, tex::Q_NUM_MIPMAP_LEVELS),
            (Flag::NormalizedCoords, tex::Q_NORMALIZED_COORDS),
            (Flag::FilterMode, tex::Q_FILTER_MODE),
            (Flag::AddrMode0, tex::Q_ADDR_MODE_0),
            (Flag::AddrMode1, tex::Q_ADDR_MODE_0 + 1),
            (Flag::AddrMode2, tex::Q_ADDR_MODE_0 + 2),
            (Flag::NumSamples, tex::Q_NUM_SAMPLES),
        ];
        let Some(q) = queries.iter().find(|(f, _)| inst.has(b, *f)).map(|(_, q)| *q) else {
            return self.unsupported(format!("`{}` (query)", self.describe(inst)));
        };
        // `[%rd]` parses as an address with no offset.
        // `[%rd]` and `[tex]` parse as addresses with no offset.
        let handle = match args[1] {
            Operand::Bracket(l) => match b.list(l) {
                [h] => *h,
                _ => return self.invalid("expected `[handle]`"),
            },
            Operand::AddrReg(r, 0) => Operand::Reg(r),
            Operand::AddrGlobal(s, 0) => Operand::Global(s),
            _ => return self.invalid("expected `[handle]`"),
        };
        let h = self.object_handle(inst, &handle)?;
        if level {
            if ![tex::Q_WIDTH, tex::Q_HEIGHT, tex::Q_DEPTH].contains(&q) {
                return self.invalid(format!("`{}`: .level goes with .width, .height or .depth", self.describe(inst)));
            }
            let l = self.get(&args[2], Ty::I32)?;
            self.cx.declare_runtime(&runtime::TXQ_LEVEL);
            let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_txq_level(ptr %ctx, i32 %lin, {h}, i32 {q}, {l})"));
            return self.set(&args[0], r);
        }
        self.cx.declare_runtime(&runtime::TXQ);
        let r = self.out.def(Ty::I32, format_args!("call i32 @__anycuda_txq(ptr %ctx, i32 %lin, {h}, i32 {q})"));
        self.set(&args[0], r)
    }
}
