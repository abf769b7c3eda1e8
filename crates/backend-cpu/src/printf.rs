//! Device `printf`: C format strings over CUDA's packed argument buffer,
//! producing what glibc's `printf` would.
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
    let mut reader = Packed { base: args, offset: 0, len: args_len, consumed: 0 };
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
    (out, reader.consumed)
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
