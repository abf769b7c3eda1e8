//! A small writer of LLVM IR text.
//!
//! Lowering produces textual IR which LLVM then parses, verifies and
//! optimises. Text keeps the lowering compact and readable (each PTX
//! instruction becomes a few lines that can be checked by eye in golden
//! tests), and LLVM's parser rejects malformed IR with a message instead of
//! aborting the process.

use std::cell::Cell;
use std::fmt::{self, Write};

thread_local! {
    /// Lanes of the function being lowered: 1 in thread mode, 32 in warp
    /// mode, where every per-thread value is a vector with one element per
    /// lane. Types and constants print themselves accordingly, so most of
    /// the lowering is shared by both modes.
    static LANES: Cell<u32> = const { Cell::new(1) };
}

/// The current lane count.
pub fn lanes() -> u32 {
    LANES.with(|l| l.get())
}

/// Sets the lane count until the guard is dropped.
pub fn set_lanes(n: u32) -> LanesGuard {
    let prev = LANES.with(|l| l.replace(n.max(1)));
    LanesGuard(prev)
}

pub struct LanesGuard(u32);

impl Drop for LanesGuard {
    fn drop(&mut self) {
        LANES.with(|l| l.set(self.0));
    }
}

/// LLVM value types the lowering uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    I1,
    I8,
    I16,
    I32,
    I64,
    I128,
    Half,
    Bfloat,
    Float,
    Double,
    Ptr,
}

impl Ty {
    pub fn int(bits: u32) -> Ty {
        match bits {
            1 => Ty::I1,
            8 => Ty::I8,
            16 => Ty::I16,
            32 => Ty::I32,
            64 => Ty::I64,
            _ => Ty::I128,
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            Ty::I1 => 1,
            Ty::I8 => 8,
            Ty::I16 | Ty::Half | Ty::Bfloat => 16,
            Ty::I32 | Ty::Float => 32,
            Ty::I64 | Ty::Double | Ty::Ptr => 64,
            Ty::I128 => 128,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::Half | Ty::Bfloat | Ty::Float | Ty::Double)
    }

    /// The integer type of the same width.
    pub fn as_int(self) -> Ty {
        Ty::int(self.bits())
    }

    pub fn name(self) -> &'static str {
        match self {
            Ty::I1 => "i1",
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::I128 => "i128",
            Ty::Half => "half",
            Ty::Bfloat => "bfloat",
            Ty::Float => "float",
            Ty::Double => "double",
            Ty::Ptr => "ptr",
        }
    }

    /// The suffix LLVM intrinsics use for this type in the current mode
    /// (`i32`, `f32`; `v32i32`, `v32f32` in warp mode).
    pub fn suffix(self) -> String {
        let n = lanes();
        if n > 1 {
            format!("v{n}{}", self.scalar_suffix())
        } else {
            self.scalar_suffix().to_string()
        }
    }

    pub fn scalar_suffix(self) -> &'static str {
        match self {
            Ty::Half => "f16",
            Ty::Bfloat => "bf16",
            Ty::Float => "f32",
            Ty::Double => "f64",
            other => other.name(),
        }
    }
}

impl fmt::Display for Ty {
    /// The type in the current mode (`<32 x i32>` in warp mode).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = lanes();
        if n > 1 {
            write!(f, "<{n} x {}>", self.name())
        } else {
            f.write_str(self.name())
        }
    }
}

/// Types for format strings: they print in the current mode
/// (`{VI1}` is `i1`, or `<32 x i1>` in warp mode).
pub const VI1: Ty = Ty::I1;
pub const VI64: Ty = Ty::I64;
pub const VF64: Ty = Ty::Double;
pub const VF32: Ty = Ty::Float;

/// A typed IR value: a `%name` or a constant. `lanes` is 1 for a scalar,
/// else the vector width (warp mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct V {
    pub ty: Ty,
    pub s: String,
    pub lanes: u32,
}

impl V {
    /// A value of the current mode (a vector in warp mode).
    pub fn new(ty: Ty, s: impl Into<String>) -> V {
        V { ty, s: s.into(), lanes: lanes() }
    }
    /// A scalar value in any mode (uniform values, addresses of symbols).
    pub fn scalar(ty: Ty, s: impl Into<String>) -> V {
        V { ty, s: s.into(), lanes: 1 }
    }
    /// A constant of the current mode: in warp mode, a splat.
    fn constant(ty: Ty, literal: String) -> V {
        let n = lanes();
        if n > 1 {
            V { ty, s: format!("splat ({} {literal})", ty.name()), lanes: n }
        } else {
            V { ty, s: literal, lanes: 1 }
        }
    }
    pub fn int(ty: Ty, v: i128) -> V {
        if ty == Ty::I1 {
            return V::constant(ty, (if v & 1 != 0 { "true" } else { "false" }).to_string());
        }
        // Print the value as the signed number of the type's width.
        let bits = ty.bits();
        let v = if bits >= 128 { v } else { (v << (128 - bits)) >> (128 - bits) };
        V::constant(ty, v.to_string())
    }
    pub fn f32(bits: u32) -> V {
        // LLVM writes float constants as the hex of the equivalent double.
        V::constant(Ty::Float, format!("0x{:016X}", (f32::from_bits(bits) as f64).to_bits()))
    }
    pub fn f64(bits: u64) -> V {
        V::constant(Ty::Double, format!("0x{bits:016X}"))
    }
    pub fn half(bits: u16) -> V {
        V::constant(Ty::Half, format!("0xH{bits:04X}"))
    }
    pub fn bfloat(bits: u16) -> V {
        V::constant(Ty::Bfloat, format!("0xR{bits:04X}"))
    }
    /// The type of this value as written in IR.
    pub fn type_name(&self) -> String {
        if self.lanes > 1 {
            format!("<{} x {}>", self.lanes, self.ty.name())
        } else {
            self.ty.name().to_string()
        }
    }
    pub fn null_ptr() -> V {
        V::scalar(Ty::Ptr, "null")
    }

    /// A float constant of type `ty` from its bit pattern.
    pub fn float_bits(ty: Ty, bits: u64) -> V {
        match ty {
            Ty::Half => V::half(bits as u16),
            Ty::Bfloat => V::bfloat(bits as u16),
            Ty::Float => V::f32(bits as u32),
            _ => V::f64(bits),
        }
    }
}

impl fmt::Display for V {
    /// `type value`, as an instruction operand is written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.type_name(), self.s)
    }
}

/// Writes one function body.
#[derive(Default)]
pub struct Body {
    pub text: String,
    next: u32,
    /// Allocas, emitted at the top of the entry block.
    pub allocas: String,
    pub terminated: bool,
    /// How many labels were emitted: a value defined since the last one
    /// dominates what follows in the block.
    pub block: u32,
}

impl Body {
    pub fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("%{prefix}{}", self.next)
    }

    pub fn fresh_label(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    /// Emits `%t = <rhs>` and returns `%t` typed `ty` (a vector in warp mode).
    pub fn def(&mut self, ty: Ty, rhs: fmt::Arguments) -> V {
        let name = self.fresh("t");
        let _ = writeln!(self.text, "  {name} = {rhs}");
        self.terminated = false;
        V::new(ty, name)
    }

    /// Emits `%t = <rhs>` for a scalar result in any mode.
    pub fn def_scalar(&mut self, ty: Ty, rhs: fmt::Arguments) -> V {
        let name = self.fresh("t");
        let _ = writeln!(self.text, "  {name} = {rhs}");
        self.terminated = false;
        V::scalar(ty, name)
    }

    /// Emits an instruction without a result.
    pub fn op(&mut self, line: fmt::Arguments) {
        let _ = writeln!(self.text, "  {line}");
    }

    pub fn label(&mut self, name: &str) {
        let _ = writeln!(self.text, "{name}:");
        self.terminated = false;
        self.block += 1;
    }

    /// Emits a terminator (br/ret/switch/unreachable).
    pub fn terminate(&mut self, line: fmt::Arguments) {
        let _ = writeln!(self.text, "  {line}");
        self.terminated = true;
    }

    pub fn alloca(&mut self, ty: &str, align: u64) -> String {
        let name = self.fresh("a");
        if ty.starts_with('<') {
            // A vector slot (warp mode) takes the type's natural alignment:
            // loads and stores without `align` assume it, and LLVM then
            // uses aligned vector moves.
            let _ = writeln!(self.allocas, "  {name} = alloca {ty}");
        } else {
            let _ = writeln!(self.allocas, "  {name} = alloca {ty}, align {align}");
        }
        name
    }
}

/// An intrinsic name for the current mode: in warp mode a final scalar
/// type suffix (`.i32`, `.f64`) becomes the vector one (`.v32i32`).
pub fn lane_name(name: &str) -> String {
    let n = lanes();
    if n == 1 {
        return name.to_string();
    }
    match name.rsplit_once('.') {
        Some((head, last))
            if last == "bf16"
                || (last.len() >= 2
                    && (last.starts_with('i') || last.starts_with('f'))
                    && last[1..].bytes().all(|b| b.is_ascii_digit())) =>
        {
            format!("{head}.v{n}{last}")
        }
        _ => name.to_string(),
    }
}

/// Escapes a symbol name for `@"..."`.
pub fn global_name(name: &str) -> String {
    let mut s = String::from("@\"");
    for b in name.bytes() {
        if b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b) {
            let _ = write!(s, "\\{b:02X}");
        } else {
            s.push(b as char);
        }
    }
    s.push('"');
    s
}

/// A byte string constant `c"..."`.
pub fn c_bytes(bytes: &[u8]) -> String {
    let mut s = String::from("c\"");
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
            s.push(b as char);
        } else {
            let _ = write!(s, "\\{b:02X}");
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants() {
        assert_eq!(V::int(Ty::I32, 0xFFFF_FFFF).s, "-1");
        assert_eq!(V::int(Ty::I8, 200).s, "-56");
        assert_eq!(V::int(Ty::I1, 1).s, "true");
        assert_eq!(V::f32(0x3F80_0000).s, "0x3FF0000000000000");
        assert_eq!(V::half(0x3C00).s, "0xH3C00");
        assert_eq!(global_name("a\"b"), "@\"a\\22b\"");
        let _w = set_lanes(32);
        assert_eq!(V::int(Ty::I32, 5).to_string(), "<32 x i32> splat (i32 5)");
        assert_eq!(Ty::Float.suffix(), "v32f32");
        assert_eq!(V::scalar(Ty::Ptr, "@g").to_string(), "ptr @g");
        assert_eq!(c_bytes(b"hi\n\0"), "c\"hi\\0A\\00\"");
    }
}
