//! Device `printf`: C format strings over CUDA's packed argument buffer,
//! producing what glibc's `printf` would, and the buffer's layout for a
//! format known when a kernel is compiled ([`ArgLayout`]).
//!
//! The buffer holds the arguments after C's default promotions, each
//! aligned to its own size: 4-byte `int`s (also for `char`/`short` and
//! `%c`), 8-byte `long`s, `long long`s, pointers (`%s`, `%p`) and doubles
//! (floats arrive promoted).

/// Widths and precisions above this are clamped (they come from kernel
/// data and must not make us allocate without bound).
const MAX_FIELD: usize = 1 << 16;

/// Formats `format` with the arguments packed at `args`. Returns the output
/// and the number of arguments consumed (what CUDA's device printf
/// returns).
///
/// # Safety
/// `args` must point to the packed arguments the format describes (reads
/// past `args_len` bytes, when given, yield zeros); `%s` arguments must be
/// readable NUL-terminated strings or null.
pub unsafe fn format_packed(format: &[u8], args: *const u8, args_len: Option<usize>) -> (Vec<u8>, i32) {
    // SAFETY: per this function's contract.
    let (out, reader) = unsafe { format_with(format, args, args_len) };
    (out, reader.consumed)
}

/// Where a format's arguments lie in CUDA's packed buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgLayout {
    /// Bytes of the buffer the format reads.
    pub bytes: u32,
    /// Arguments the format consumes (what device printf returns).
    pub count: u32,
    /// Byte offsets of the `%s` arguments (8-byte string addresses), in
    /// order.
    pub strings: Vec<u32>,
}

/// The packed-buffer layout of the arguments `format` reads.
pub fn layout(format: &[u8]) -> ArgLayout {
    // SAFETY: a null buffer is never read (every argument reads as zero,
    // and a null `%s` prints `(null)`).
    let (_, reader) = unsafe { format_with(format, std::ptr::null(), Some(0)) };
    ArgLayout {
        bytes: u32::try_from(reader.offset).unwrap_or(u32::MAX),
        count: reader.consumed.max(0) as u32,
        strings: reader.strings.iter().map(|&o| u32::try_from(o).unwrap_or(u32::MAX)).collect(),
    }
}

/// [`format_packed`], returning the reader (where the arguments were).
///
/// # Safety
/// As for [`format_packed`].
unsafe fn format_with(format: &[u8], args: *const u8, args_len: Option<usize>) -> (Vec<u8>, Packed) {
    let mut reader = Packed { base: args, offset: 0, len: args_len, consumed: 0, strings: Vec::new() };
    let mut out = Vec::with_capacity(format.len() + 16);
    let mut i = 0;
    while i < format.len() {
        let byte = format[i];
        if byte != b'%' {
            out.push(byte);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut spec = Spec::default();
        while let Some(&flag) = format.get(i) {
            match flag {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                b'\'' => {}
                _ => break,
            }
            i += 1;
        }
        if format.get(i) == Some(&b'*') {
            i += 1;
            // SAFETY: per this function's contract.
            let width = unsafe { reader.take(4) } as u32 as i32;
            if width < 0 {
                spec.left = true;
            }
            spec.width = (width.unsigned_abs() as usize).min(MAX_FIELD);
        } else {
            spec.width = parse_number(format, &mut i).min(MAX_FIELD);
        }
        if format.get(i) == Some(&b'.') {
            i += 1;
            if format.get(i) == Some(&b'*') {
                i += 1;
                // SAFETY: per this function's contract.
                let precision = unsafe { reader.take(4) } as u32 as i32;
                spec.precision = (precision >= 0).then(|| (precision as usize).min(MAX_FIELD));
            } else {
                spec.precision = Some(parse_number(format, &mut i).min(MAX_FIELD));
            }
        }
        let mut length = Length::Int;
        loop {
            match format.get(i) {
                Some(b'h') if length == Length::Short => length = Length::Char,
                Some(b'h') => length = Length::Short,
                Some(b'l' | b'q' | b'j' | b'z' | b'Z' | b't' | b'L') => length = Length::Long,
                _ => break,
            }
            i += 1;
        }
        let Some(&conversion) = format.get(i) else {
            out.extend_from_slice(&format[start..]);
            break;
        };
        i += 1;
        let arg_size = if length == Length::Long { 8 } else { 4 };
        // SAFETY (all `take`s and reads below): per this function's contract.
        match conversion {
            b'd' | b'i' => {
                let raw = unsafe { reader.take(arg_size) };
                let value = match length {
                    Length::Char => i64::from(raw as i8),
                    Length::Short => i64::from(raw as i16),
                    Length::Int => i64::from(raw as i32),
                    Length::Long => raw as i64,
                };
                integer(&mut out, &spec, conversion, value < 0, value.unsigned_abs());
            }
            b'u' | b'o' | b'x' | b'X' => {
                let raw = unsafe { reader.take(arg_size) };
                let value = match length {
                    Length::Char => u64::from(raw as u8),
                    Length::Short => u64::from(raw as u16),
                    Length::Int => u64::from(raw as u32),
                    Length::Long => raw,
                };
                integer(&mut out, &spec, conversion, false, value);
            }
            b'c' => {
                let value = unsafe { reader.take(4) } as u8;
                pad(&mut out, &spec, b"", &[value], false);
            }
            b's' => {
                let address = unsafe { reader.take(8) };
                reader.strings.push(reader.offset - 8);
                let text = if address == 0 {
                    if spec.precision.is_none_or(|p| p >= 6) {
                        b"(null)".to_vec()
                    } else {
                        Vec::new()
                    }
                } else {
                    unsafe { read_c_string(address as *const u8, spec.precision) }
                };
                pad(&mut out, &spec, b"", &text, false);
            }
            b'p' => {
                let address = unsafe { reader.take(8) };
                if address == 0 {
                    let plain = Spec { zero: false, precision: None, ..spec };
                    pad(&mut out, &plain, b"", b"(nil)", false);
                } else {
                    let hex = Spec { alt: true, ..spec };
                    integer(&mut out, &hex, b'x', false, address);
                }
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let value = f64::from_bits(unsafe { reader.take(8) });
                float(&mut out, &spec, conversion, value);
            }
            b'n' => {
                // Writing through kernel pointers from printf is not
                // something CUDA supports; consume the argument only.
                unsafe { reader.take(8) };
            }
            b'%' => out.push(b'%'),
            _ => out.extend_from_slice(&format[start..i]),
        }
    }
    (out, reader)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Length {
    Char,
    Short,
    Int,
    Long,
}

#[derive(Clone, Copy, Debug, Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

struct Packed {
    base: *const u8,
    offset: usize,
    len: Option<usize>,
    consumed: i32,
    /// Offsets of the `%s` arguments read so far.
    strings: Vec<usize>,
}

impl Packed {
    /// The next argument of `size` (4 or 8) bytes, aligned to its size.
    ///
    /// # Safety
    /// The buffer must hold the argument (unless `len` says otherwise).
    unsafe fn take(&mut self, size: usize) -> u64 {
        self.offset = self.offset.next_multiple_of(size);
        let at = self.offset;
        self.offset += size;
        self.consumed += 1;
        if self.base.is_null() || self.len.is_some_and(|len| at + size > len) {
            return 0;
        }
        // SAFETY: per the contract; unaligned reads because the buffer
        // itself may be less aligned than its arguments.
        unsafe {
            let at = self.base.add(at);
            if size == 8 {
                at.cast::<u64>().read_unaligned()
            } else {
                u64::from(at.cast::<u32>().read_unaligned())
            }
        }
    }
}

/// Bytes of a C string, at most `limit` of them (a precision lets the
/// string lack its terminator).
///
/// # Safety
/// `ptr` must be readable up to its NUL or `limit` bytes.
unsafe fn read_c_string(ptr: *const u8, limit: Option<usize>) -> Vec<u8> {
    let limit = limit.unwrap_or(usize::MAX);
    let mut text = Vec::new();
    while text.len() < limit {
        // SAFETY: per the contract.
        let byte = unsafe { ptr.add(text.len()).read() };
        if byte == 0 {
            break;
        }
        text.push(byte);
    }
    text
}

fn parse_number(format: &[u8], i: &mut usize) -> usize {
    let mut value = 0usize;
    while let Some(&digit) = format.get(*i).filter(|b| b.is_ascii_digit()) {
        value = value.saturating_mul(10).saturating_add(usize::from(digit - b'0'));
        *i += 1;
    }
    value
}

/// Writes `prefix` (sign, `0x`) and `body` padded to the field width.
fn pad(out: &mut Vec<u8>, spec: &Spec, prefix: &[u8], body: &[u8], zero_ok: bool) {
    let len = prefix.len() + body.len();
    let fill = spec.width.saturating_sub(len);
    if spec.left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.resize(out.len() + fill, b' ');
    } else if spec.zero && zero_ok {
        out.extend_from_slice(prefix);
        out.resize(out.len() + fill, b'0');
        out.extend_from_slice(body);
    } else {
        out.resize(out.len() + fill, b' ');
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

fn sign(spec: &Spec, negative: bool) -> &'static [u8] {
    if negative {
        b"-"
    } else if spec.plus {
        b"+"
    } else if spec.space {
        b" "
    } else {
        b""
    }
}

fn integer(out: &mut Vec<u8>, spec: &Spec, conversion: u8, negative: bool, magnitude: u64) {
    let mut digits = match conversion {
        b'o' => format!("{magnitude:o}"),
        b'x' => format!("{magnitude:x}"),
        b'X' => format!("{magnitude:X}"),
        _ => magnitude.to_string(),
    }
    .into_bytes();
    if spec.precision == Some(0) && magnitude == 0 {
        digits.clear();
    }
    if let Some(precision) = spec.precision {
        if digits.len() < precision {
            let mut padded = vec![b'0'; precision - digits.len()];
            padded.extend_from_slice(&digits);
            digits = padded;
        }
    }
    if spec.alt && conversion == b'o' && digits.first() != Some(&b'0') {
        digits.insert(0, b'0');
    }
    let prefix: &[u8] = match conversion {
        b'd' | b'i' => sign(spec, negative),
        b'x' if spec.alt && magnitude != 0 => b"0x",
        b'X' if spec.alt && magnitude != 0 => b"0X",
        _ => b"",
    };
    pad(out, spec, prefix, &digits, spec.precision.is_none());
}

fn float(out: &mut Vec<u8>, spec: &Spec, conversion: u8, value: f64) {
    let upper = conversion.is_ascii_uppercase();
    let prefix = sign(spec, value.is_sign_negative());
    let magnitude = value.abs();
    if !value.is_finite() {
        let body: &[u8] = match (value.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        pad(out, spec, prefix, body, false);
        return;
    }
    let body = match conversion.to_ascii_lowercase() {
        b'f' => fixed(magnitude, spec.precision.unwrap_or(6), spec.alt),
        b'e' => exponential(magnitude, spec.precision.unwrap_or(6), spec.alt),
        b'g' => general(magnitude, spec.precision.unwrap_or(6), spec.alt),
        _ => {
            let mut prefix = prefix.to_vec();
            prefix.extend_from_slice(if upper { b"0X" } else { b"0x" });
            let mut body = hexadecimal(magnitude, spec.precision, spec.alt);
            if upper {
                body.make_ascii_uppercase();
            }
            pad(out, spec, &prefix, &body, true);
            return;
        }
    };
    let mut body = body;
    if upper {
        body.make_ascii_uppercase();
    }
    pad(out, spec, prefix, &body, true);
}

/// `%f` of a non-negative finite value. Rust's fixed-precision formatting
/// is exact and rounds ties to even, like glibc.
fn fixed(value: f64, precision: usize, alt: bool) -> Vec<u8> {
    let mut text = format!("{value:.precision$}").into_bytes();
    if alt && precision == 0 {
        text.push(b'.');
    }
    text
}

/// Mantissa digits and decimal exponent of `value` with `precision`
/// fractional digits, correctly rounded.
fn exp_parts(value: f64, precision: usize) -> (String, i32) {
    let text = format!("{value:.precision$e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => (mantissa.to_owned(), exponent.parse().unwrap_or(0)),
        None => (text, 0),
    }
}

/// The decimal exponent of `value` itself, before any rounding.
fn exp_parts_shortest(value: f64) -> i32 {
    let text = format!("{value:e}");
    text.split_once('e').and_then(|(_, exponent)| exponent.parse().ok()).unwrap_or(0)
}

fn exponent_suffix(out: &mut Vec<u8>, exponent: i32) {
    out.push(b'e');
    out.push(if exponent < 0 { b'-' } else { b'+' });
    let digits = exponent.unsigned_abs().to_string();
    if digits.len() < 2 {
        out.push(b'0');
    }
    out.extend_from_slice(digits.as_bytes());
}

fn exponential(value: f64, precision: usize, alt: bool) -> Vec<u8> {
    let (mantissa, exponent) = exp_parts(value, precision);
    let mut text = mantissa.into_bytes();
    if alt && precision == 0 {
        text.push(b'.');
    }
    exponent_suffix(&mut text, exponent);
    text
}

fn strip_fraction_zeros(text: &mut Vec<u8>) {
    if text.contains(&b'.') {
        while text.last() == Some(&b'0') {
            text.pop();
        }
        if text.last() == Some(&b'.') {
            text.pop();
        }
    }
}

fn general(value: f64, precision: usize, alt: bool) -> Vec<u8> {
    let p = precision.max(1);
    // The exponent the value would have in %e style with p significant
    // digits, after rounding.
    let x = if value == 0.0 { 0 } else { exp_parts(value, p - 1).1 };
    if alt && x == p as i32 && value != 0.0 && exp_parts_shortest(value) == x - 1 {
        // glibc quirk: when rounding carries a value that was in %f range
        // into %e range, it keeps the %f style's fraction length (none).
        let (mantissa, exponent) = exp_parts(value, 0);
        let mut text = mantissa.into_bytes();
        text.push(b'.');
        exponent_suffix(&mut text, exponent);
        return text;
    }
    if x < p as i32 && x >= -4 {
        let mut text = fixed(value, (p as i32 - 1 - x) as usize, alt);
        if !alt {
            strip_fraction_zeros(&mut text);
        }
        text
    } else {
        let (mantissa, exponent) = exp_parts(value, p - 1);
        let mut text = mantissa.into_bytes();
        if alt {
            if !text.contains(&b'.') {
                text.push(b'.');
            }
        } else {
            strip_fraction_zeros(&mut text);
        }
        exponent_suffix(&mut text, exponent);
        text
    }
}

/// `%a` without the `0x` prefix: glibc prints normal numbers as `1.h…p±e`
/// and subnormals as `0.h…p-1022`, trimming trailing zeros unless a
/// precision is given (then rounding to nearest, ties to even).
fn hexadecimal(value: f64, precision: Option<usize>, alt: bool) -> Vec<u8> {
    let bits = value.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mut fraction = bits & ((1 << 52) - 1);
    let (mut lead, exponent) = match (biased, fraction) {
        (0, 0) => (0u64, 0),
        (0, _) => (0, -1022),
        _ => (1, biased - 1023),
    };
    let mut digits = 13usize;
    if let Some(precision) = precision.filter(|&p| p < 13) {
        let drop_bits = 4 * (13 - precision) as u32;
        let kept = fraction >> drop_bits;
        let rest = fraction & ((1u64 << drop_bits) - 1);
        let half = 1u64 << (drop_bits - 1);
        let mut rounded = kept;
        // Ties go to an even last digit, which is the leading digit when
        // no fraction digits remain.
        let last = if precision == 0 { lead } else { kept };
        if rest > half || (rest == half && last & 1 == 1) {
            rounded += 1;
        }
        if precision == 0 {
            lead += rounded;
            fraction = 0;
        } else if rounded >> (4 * precision) != 0 {
            lead += 1;
            fraction = rounded & ((1u64 << (4 * precision)) - 1);
        } else {
            fraction = rounded;
        }
        digits = precision;
    }
    let mut hex = if digits == 0 { String::new() } else { format!("{fraction:0digits$x}") };
    match precision {
        None => {
            while hex.ends_with('0') {
                hex.pop();
            }
        }
        Some(precision) => {
            while hex.len() < precision {
                hex.push('0');
            }
        }
    }
    let mut text = format!("{lead:x}").into_bytes();
    if !hex.is_empty() || alt {
        text.push(b'.');
    }
    text.extend_from_slice(hex.as_bytes());
    text.push(b'p');
    text.push(if exponent < 0 { b'-' } else { b'+' });
    text.extend_from_slice(exponent.unsigned_abs().to_string().as_bytes());
    text
}

/// The C string a call's argument holds when the calling function sets it
/// to a module constant's address, as nvcc passes `printf`'s format: the
/// `.param` argument `param`, stored by the last `st.param` before
/// statement `call`, is a register written once by `mov`/`cvta` chains
/// from `$str` (or `$str+offset`), a byte array with an initializer. The
/// string is its bytes from that offset to the first NUL. `None` when the
/// value is anything else (then it is known only at run time).
pub fn constant_string(m: &ptx::ast::Module, b: &ptx::ast::Body, call: usize, param: &ptx::ast::Operand) -> Option<Vec<u8>> {
    use ptx::ast::{AddrBase, Initializer, Opcode, Operand, StateSpace, Statement};
    let mut value = *param;
    if let Operand::Var(v) = *param {
        value = b.statements.get(..call)?.iter().rev().find_map(|s| {
            let Statement::Instruction(inst) = s else { return None };
            let args = b.args(inst);
            (inst.op == Opcode::St
                && inst.space(b) == Some(StateSpace::Param)
                && args.first().and_then(|a| a.address()) == Some((AddrBase::Var(v), 0)))
            .then(|| args.get(1).copied())
            .flatten()
        })?;
    }
    // Follow single writes back to the symbol (a few steps: nvcc emits
    // `mov` then `cvta.global`).
    let (symbol, offset) = 'resolve: {
        for _ in 0..8 {
            match value {
                Operand::Global(s) => break 'resolve (s, 0),
                Operand::GlobalOffset(s, o) => break 'resolve (s, o),
                Operand::Reg(r) => {
                    let mut defs = Vec::new();
                    let mut writes = b.statements.iter().filter_map(|s| match s {
                        Statement::Instruction(inst) => {
                            defs.clear();
                            b.defs(inst, &mut defs);
                            defs.contains(&r).then_some(inst)
                        }
                        _ => None,
                    });
                    let (Some(inst), None) = (writes.next(), writes.next()) else { return None };
                    if inst.guard.is_some() || !matches!(inst.op, Opcode::Mov | Opcode::Cvta) {
                        return None;
                    }
                    value = *b.args(inst).get(1)?;
                }
                _ => return None,
            }
        }
        return None;
    };
    let var = m.variable(symbol)?;
    if var.decl.element_size() != 1 {
        return None;
    }
    let Some(Initializer::List(items)) = &var.decl.init else { return None };
    let start = usize::try_from(offset).ok()?;
    let mut bytes = Vec::new();
    for item in items.iter().skip(start) {
        let Initializer::Int(v) = item else { return None };
        if *v & 0xff == 0 {
            return Some(bytes);
        }
        bytes.push(*v as u8);
    }
    // Elements past the initializer's are zeros.
    let declared = usize::try_from(var.decl.elements()?).ok()?;
    (declared > items.len().max(start)).then_some(bytes)
}

/// What a printf record buffer's records print.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The text for standard output and for standard error, each in the
    /// records' order.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The text of fault records (`printf_records::FAULT`), in order.
    pub faults: Vec<u8>,
    /// Every record was well formed (decoding stops at the first that is
    /// not).
    pub whole: bool,
}

/// Decodes a printf record buffer's records (`cpu_abi::printf_records`;
/// `records` is the part after the header, as many bytes as were written).
pub fn decode_records(records: &[u8]) -> Decoded {
    use crate::cpu_abi::printf_records::{FAULT, NULL_STRING, RECORD_HEADER, STDERR};
    let word = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(records.get(at..at + 4)?.try_into().ok()?)) };
    let mut out = Decoded { whole: true, ..Decoded::default() };
    let mut at = 0;
    while at < records.len() {
        let Some((printed, size, stream)) = (|| {
            let size = word(at)? as usize;
            let format_word = word(at + 4)?;
            let (format_len, arg_bytes, count) =
                ((format_word & !(STDERR | FAULT)) as usize, word(at + 8)? as usize, word(at + 12)? as usize);
            if size < RECORD_HEADER || !size.is_multiple_of(8) || size > records.len() - at {
                return None;
            }
            let record = &records[at..at + size];
            let mut p = RECORD_HEADER;
            let format = record.get(p..p.checked_add(format_len)?)?;
            p += format_len.next_multiple_of(8);
            // The arguments, 8-byte aligned, with room for what the format
            // reads even if the record holds less.
            let layout = layout(format);
            if layout.strings.len() != count {
                return None;
            }
            let src = record.get(p..p.checked_add(arg_bytes)?)?;
            let mut args = vec![0u64; (arg_bytes.max(layout.bytes as usize)).div_ceil(8)];
            for (i, b) in src.iter().enumerate() {
                args[i / 8] |= u64::from(*b) << (8 * (i % 8));
            }
            p += arg_bytes.next_multiple_of(8);
            let mut strings = Vec::with_capacity(count);
            for &offset in &layout.strings {
                let len = u32::from_le_bytes(record.get(p..p + 4)?.try_into().ok()?);
                p += 8;
                let slot = args.get_mut(offset as usize / 8)?;
                if len == NULL_STRING {
                    *slot = 0;
                    continue;
                }
                let mut text = record.get(p..p.checked_add(len as usize)?)?.to_vec();
                p += (len as usize).next_multiple_of(8);
                text.push(0);
                *slot = text.as_ptr() as u64;
                strings.push(text);
            }
            // SAFETY: `args` holds every byte the format reads; each `%s`
            // slot is null or points to a NUL-terminated copy in
            // `strings`, alive for the call.
            let (text, _) = unsafe { format_packed(format, args.as_ptr().cast(), Some(args.len() * 8)) };
            drop(strings);
            Some((text, size, format_word & (STDERR | FAULT)))
        })() else {
            out.whole = false;
            return out;
        };
        let sink = match stream {
            0 => &mut out.stdout,
            STDERR => &mut out.stderr,
            _ => &mut out.faults,
        };
        sink.extend_from_slice(&printed);
        at += size;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu_abi::printf_records::{NULL_STRING, RECORD_HEADER};

    #[test]
    fn the_layout_aligns_each_argument_to_its_size_and_finds_the_strings() {
        let l = layout(b"%d %lld %s %c %f %p %*d %.*f %% %hhd");
        // %d 0, %lld 8, %s 16, %c 24, %f 32, %p 40, * 48 + %d 52,
        // * 56 + %f 64, %hhd 72.
        assert_eq!(l, ArgLayout { bytes: 76, count: 11, strings: vec![16] });
        assert_eq!(layout(b"no arguments\n"), ArgLayout { bytes: 0, count: 0, strings: vec![] });
        assert_eq!(layout(b"%s%s").strings, vec![0, 8]);
    }

    #[test]
    fn the_assert_message_layout_is_the_one_the_amd_runtime_stores() {
        // `targets::amdgpu::runtime::assertfail` stores file, line,
        // function, block x/y/z, thread x/y/z and message at these offsets.
        let l = layout(crate::cpu_abi::printf_records::ASSERT_FORMAT.as_bytes());
        assert_eq!(l, ArgLayout { bytes: 56, count: 10, strings: vec![0, 16, 48] });
    }

    /// A record as the AMD runtime writes it (`cpu_abi::printf_records`).
    fn record(format: &str, args: &[u8], strings: &[Option<&str>]) -> Vec<u8> {
        let pad = |v: &mut Vec<u8>| v.resize(v.len().next_multiple_of(8), 0);
        let mut r = vec![0u8; RECORD_HEADER];
        r.extend_from_slice(format.as_bytes());
        pad(&mut r);
        r.extend_from_slice(args);
        pad(&mut r);
        for s in strings {
            let len = s.map_or(NULL_STRING, |s| s.len() as u32);
            r.extend_from_slice(&len.to_le_bytes());
            r.extend_from_slice(&[0; 4]);
            r.extend_from_slice(s.unwrap_or("").as_bytes());
            pad(&mut r);
        }
        let size = r.len() as u32;
        r[0..4].copy_from_slice(&size.to_le_bytes());
        r[4..8].copy_from_slice(&(format.len() as u32).to_le_bytes());
        r[8..12].copy_from_slice(&(args.len() as u32).to_le_bytes());
        r[12..16].copy_from_slice(&(strings.len() as u32).to_le_bytes());
        r
    }

    #[test]
    fn records_print_their_format_arguments_and_copied_strings() {
        // "[%s] %d %.2f\n": %s at 0 (a device address the host cannot
        // read: the record's copy replaces it), %d at 8, %f at 16.
        let mut args = vec![0u8; 24];
        args[0..8].copy_from_slice(&0xdead_0000_u64.to_le_bytes());
        args[8..12].copy_from_slice(&(-7i32).to_le_bytes());
        args[16..24].copy_from_slice(&2.5f64.to_le_bytes());
        let mut records = record("[%s] %d %.2f\n", &args, &[Some("abc")]);
        records.extend(record("%s|%5s|\n", &[0u8; 16], &[None, Some("xy")]));
        records.extend(record("plain\n", &[], &[]));
        // An assertion's message goes to standard error.
        let mut message = record("%s: %d\n", &[0u8; 12], &[Some("failed")]);
        message[4..8].copy_from_slice(&(7 | crate::cpu_abi::printf_records::STDERR).to_le_bytes());
        records.extend(message);
        // A trap's place goes to the faults, in the host's words.
        let mut place = vec![0u8; 32];
        for (k, v) in [2u32, 0, 0, 5, 1, 0].iter().enumerate() {
            place[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
        }
        let format = crate::cpu_abi::printf_records::TRAP_FORMAT;
        let mut fault = record(format, &place, &[Some("k line 12")]);
        fault[4..8].copy_from_slice(&(format.len() as u32 | crate::cpu_abi::printf_records::FAULT).to_le_bytes());
        records.extend(fault);
        let d = decode_records(&records);
        assert!(d.whole);
        assert_eq!(String::from_utf8_lossy(&d.stdout), "[abc] -7 2.50\n(null)|   xy|\nplain\n");
        assert_eq!(String::from_utf8_lossy(&d.stderr), "failed: 0\n");
        assert_eq!(String::from_utf8_lossy(&d.faults), "trap in block [2, 0, 0], thread [5, 1, 0], at k line 12");
    }

    #[test]
    fn the_trap_message_layout_is_the_one_the_amd_runtime_stores() {
        // `targets::amdgpu::runtime::trap` stores block x/y/z and thread
        // x/y/z from 0 and the place at 24.
        let l = layout(crate::cpu_abi::printf_records::TRAP_FORMAT.as_bytes());
        assert_eq!(l, ArgLayout { bytes: 32, count: 7, strings: vec![24] });
    }

    #[test]
    fn a_malformed_record_ends_the_decoding_after_the_good_ones() {
        let good = record("one %d\n", &1i32.to_le_bytes(), &[]);
        let mut records = good.clone();
        let mut bad = record("two %s\n", &[0u8; 8], &[Some("x")]);
        bad[12..16].copy_from_slice(&0u32.to_le_bytes()); // no strings, but the format reads one
        records.extend(bad);
        records.extend(good);
        let d = decode_records(&records);
        assert!(!d.whole);
        assert_eq!(d.stdout, b"one 1\n");
        // A size past the end, and one not a multiple of 8.
        let mut short = record("x\n", &[], &[]);
        short[0..4].copy_from_slice(&64u32.to_le_bytes());
        assert_eq!(decode_records(&short), Decoded::default());
        short[0..4].copy_from_slice(&20u32.to_le_bytes());
        assert_eq!(decode_records(&short), Decoded::default());
    }

    const CALLS: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.global .align 1 .b8 $str[6] = {104, 105, 32, 37, 100};
.global .align 1 .b8 $str$1[4] = {97, 0, 98, 0};
.visible .entry k(.param .u64 k_param_0)
{
	.local .align 8 .b8 __local_depot0[8];
	.reg .b64 %SP;
	.reg .b64 %SPL;
	.reg .b32 %r<3>;
	.reg .b64 %rd<8>;
	mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	mov.u64 %rd1, $str;
	cvta.global.u64 %rd2, %rd1;
	add.u64 %rd3, %SP, 0;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd2;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd3;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	mov.u64 %rd4, $str$1+2;
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd4;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd3;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	ld.param.u64 %rd5, [k_param_0];
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd5;
	.param .b64 param1;
	st.param.b64 [param1+0], %rd3;
	.param .b32 retval0;
	call.uni (retval0), vprintf, (param0, param1);
	}
	ret;
}
"#;

    #[test]
    fn formats_set_from_module_strings_are_known_when_compiled() {
        use ptx::ast::{Opcode, Operand, Statement};
        let m = ptx::parse(CALLS).expect("parses");
        let f = m.kernels().next().expect("kernel");
        let b = f.body.as_ref().expect("body");
        let formats: Vec<Option<Vec<u8>>> = b
            .statements
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Statement::Instruction(inst) if inst.op == Opcode::Call => {
                    let param = b.args(inst).iter().filter_map(|a| if let Operand::Paren(r) = a { Some(*r) } else { None }).nth(1)?;
                    let first = *b.list(param).first()?;
                    Some(constant_string(&m, b, i, &first))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            formats,
            vec![
                // The initializer stops before the array's end: zeros.
                Some(b"hi %d".to_vec()),
                // From an offset, up to the first NUL.
                Some(b"b".to_vec()),
                // A kernel parameter: known only when the kernel runs.
                None,
            ]
        );
    }
}
