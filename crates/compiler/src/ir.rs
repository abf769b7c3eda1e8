//! A small writer of LLVM IR text.
//!
//! Lowering produces textual IR which LLVM then parses, verifies and
//! optimises. Text keeps the lowering compact and readable (each PTX
//! instruction becomes a few lines that can be checked by eye in golden
//! tests), and LLVM's parser rejects malformed IR with a message instead of
//! aborting the process.

use std::fmt::{self, Write};

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

    /// The suffix LLVM intrinsics use for this type (`i32`, `f32`).
    pub fn suffix(self) -> &'static str {
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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A typed IR value: a `%name` or a constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct V {
    pub ty: Ty,
    pub s: String,
}

impl V {
    pub fn new(ty: Ty, s: impl Into<String>) -> V {
        V { ty, s: s.into() }
    }
    pub fn int(ty: Ty, v: i128) -> V {
        if ty == Ty::I1 {
            return V::new(ty, if v & 1 != 0 { "true" } else { "false" });
        }
        // Print the value as the signed number of the type's width.
        let bits = ty.bits();
        let v = if bits >= 128 { v } else { (v << (128 - bits)) >> (128 - bits) };
        V::new(ty, v.to_string())
    }
    pub fn f32(bits: u32) -> V {
        // LLVM writes float constants as the hex of the equivalent double.
        V::new(Ty::Float, format!("0x{:016X}", (f32::from_bits(bits) as f64).to_bits()))
    }
    pub fn f64(bits: u64) -> V {
        V::new(Ty::Double, format!("0x{bits:016X}"))
    }
    pub fn half(bits: u16) -> V {
        V::new(Ty::Half, format!("0xH{bits:04X}"))
    }
    pub fn bfloat(bits: u16) -> V {
        V::new(Ty::Bfloat, format!("0xR{bits:04X}"))
    }
    pub fn null_ptr() -> V {
        V::new(Ty::Ptr, "null")
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
        write!(f, "{} {}", self.ty, self.s)
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

    /// Emits `%t = <rhs>` and returns `%t` typed `ty`.
    pub fn def(&mut self, ty: Ty, rhs: fmt::Arguments) -> V {
        let name = self.fresh("t");
        let _ = writeln!(self.text, "  {name} = {rhs}");
        self.terminated = false;
        V::new(ty, name)
    }

    /// Emits an instruction without a result.
    pub fn op(&mut self, line: fmt::Arguments) {
        let _ = writeln!(self.text, "  {line}");
    }

    pub fn label(&mut self, name: &str) {
        let _ = writeln!(self.text, "{name}:");
        self.terminated = false;
    }

    /// Emits a terminator (br/ret/switch/unreachable).
    pub fn terminate(&mut self, line: fmt::Arguments) {
        let _ = writeln!(self.text, "  {line}");
        self.terminated = true;
    }

    pub fn alloca(&mut self, ty: &str, align: u64) -> String {
        let name = self.fresh("a");
        let _ = writeln!(self.allocas, "  {name} = alloca {ty}, align {align}");
        name
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
        assert_eq!(c_bytes(b"hi\n\0"), "c\"hi\\0A\\00\"");
    }
}
