//! Per-opcode rules checked while parsing: how modifier words are read for
//! an opcode, how many operands it takes, and which modifiers it requires.

use crate::ast::{Modifier, Shape};
use crate::keywords::{tables, Opcode};

/// Reads one modifier word (without its dot) in the context of `op`.
pub fn classify(op: Opcode, word: &str) -> Option<Modifier> {
    let t = tables();
    // Comparison words only mean comparisons for comparing instructions;
    // elsewhere `.lo`/`.hi` select halves (`mul.lo`).
    if takes_comparison(op) {
        if let Some(c) = t.cmp_ops.get(word) {
            return Some(Modifier::Cmp(c));
        }
    }
    if let Some(m) = t.modifiers.get(word) {
        return Some(m);
    }
    shape(word).map(Modifier::Shape)
}

fn takes_comparison(op: Opcode) -> bool {
    matches!(op, Opcode::Setp | Opcode::Set | Opcode::Slct | Opcode::Vset | Opcode::Vset2 | Opcode::Vset4)
}

/// `m16n8k16`, `m8n8`
fn shape(word: &str) -> Option<Shape> {
    let rest = word.strip_prefix('m')?;
    let (m, rest) = split_number(rest)?;
    let rest = rest.strip_prefix('n')?;
    let (n, rest) = split_number(rest)?;
    let k = if rest.is_empty() {
        0
    } else {
        let (k, rest) = split_number(rest.strip_prefix('k')?)?;
        if !rest.is_empty() {
            return None;
        }
        k
    };
    Some(Shape { m, n, k })
}

fn split_number(s: &str) -> Option<(u16, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// The range of operand counts an opcode accepts (a `{...}` vector or a
/// `(...)` list counts as one operand).
pub fn operand_count(op: Opcode) -> (usize, usize) {
    use Opcode::*;
    match op {
        Exit | Ret | Trap | Brkpt | Membar | Griddepcontrol => (0, 0),
        Activemask | Bra | Nanosleep | Pmevent | Setmaxnreg | Stacksave | Stackrestore => (1, 1),
        Prefetch | Prefetchu => (1, 2),
        Abs | Neg | Not | Cnot | Popc | Clz | Brev | Bfind | Cvta | Isspacep | Istypep | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2
        | Tanh | Testp | Ldu | Mov | Ldmatrix | Stmatrix | Movmatrix | Getctarank | Discard | Applypriority | Suq => (2, 2),
        Txq => (2, 3),
        Copysign | Add | Sub | Mul | Div | Rem | And | Or | Xor | Shl | Shr | Mul24 | Addc | Subc | Bmsk | Szext | Mapa => (3, 3),
        Min | Max => (3, 4),
        Mad | Mad24 | Madc | Fma | Sad | Selp | Slct | Bfe | Prmt | Dp4a | Dp2a | Fns | Shf => (4, 4),
        Bfi => (5, 5),
        Lop3 => (5, 6),
        Alloca => (2, 3),
        Elect => (1, 2),
        Setp | Set => (3, 5),
        Cvt => (2, 4),
        Ld => (2, 4),
        St => (2, 3),
        Atom => (3, 5),
        Red => (2, 4),
        Redux => (3, 3),
        Vote => (2, 3),
        Match => (3, 4),
        Shfl => (4, 5),
        Brx => (2, 2),
        Call => (1, 4),
        Bar | Barrier => (0, 4),
        Fence => (0, 2),
        Createpolicy => (2, 4),
        Mbarrier => (1, 5),
        Cp => (0, 9),
        Mma | Wmma | Wgmma | Tcgen05 => (0, 12),
        Multimem => (2, 3),
        Tex | Tld4 => (2, 6),
        Suld | Sust | Sured => (2, 3),
        Tensormap => (2, 4),
        Clusterlaunchcontrol => (1, 3),
        Vadd | Vsub | Vabsdiff | Vmin | Vmax | Vshl | Vshr | Vmad | Vset | Vadd2 | Vsub2 | Vavrg2 | Vabsdiff2 | Vmin2 | Vmax2 | Vset2
        | Vadd4 | Vsub4 | Vavrg4 | Vabsdiff4 | Vmin4 | Vmax4 | Vset4 => (3, 4),
    }
}

/// Opcodes that cannot be read without a type modifier (given the other
/// modifiers: `st.bulk` stores a fill value and has none).
pub fn requires_type(op: Opcode, mods: &[Modifier]) -> bool {
    use Opcode::*;
    if op == St && mods.contains(&Modifier::Flag(crate::keywords::Flag::Bulk)) {
        return false;
    }
    matches!(
        op,
        Abs | Add
            | Sub
            | Mul
            | Mad
            | Div
            | Rem
            | Neg
            | Min
            | Max
            | And
            | Or
            | Xor
            | Not
            | Cnot
            | Shl
            | Shr
            | Mov
            | Ld
            | St
            | Cvt
            | Setp
            | Set
            | Selp
            | Slct
            | Fma
            | Rcp
            | Sqrt
            | Rsqrt
            | Popc
            | Clz
            | Brev
            | Bfind
            | Bfe
            | Bfi
            | Copysign
            | Testp
            | Mul24
            | Mad24
            | Sad
            | Addc
            | Subc
            | Madc
            | Ldu
            | Cvta
            | Atom
            | Red
            | Lg2
            | Ex2
            | Sin
            | Cos
            | Tanh
            | Prmt
            | Lop3
            | Shf
    )
}

/// Rounding modifiers are meaningless on integer arithmetic; a common
/// hand-written mistake worth a precise message.
pub fn rejects_rounding(op: Opcode, has_int_type: bool) -> bool {
    use Opcode::*;
    has_int_type && matches!(op, Add | Sub | Mul | Mad | Div | Rem | Min | Max | Abs | Neg)
}
