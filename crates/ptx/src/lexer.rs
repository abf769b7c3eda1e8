//! A small, allocation-free PTX lexer over bytes.

// Word-sized so that a `Token` is three whole words without padding: tokens
// are copied constantly, and byte-wise copies of padding stall the loads
// that follow them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TokenKind {
    /// `foo`, `%r1`, `$L__BB0_1`, `_Z3fooi`, `%tid`
    Ident,
    /// `.version`, `.u32`, `.shared::cta`, `.L2::64B`: a dot and a word.
    Dot,
    /// `123`, `0x1f`, `017`, `0b101`, optionally with a `U` suffix.
    Int,
    /// `0f3F800000`, `0d3FF0000000000000`, `1.5`, `1e-3`
    Float,
    /// `"text"`
    Str,
    Comma,
    Semi,
    Colon,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    NotEq,
    Shl,
    Shr,
    AndAnd,
    OrOr,
    Plus,
    Minus,
    Bang,
    At,
    Pipe,
    Amp,
    Caret,
    Tilde,
    Eq,
    Star,
    Slash,
    Percent,
    Question,
    Eof,
    /// A byte that starts no token, or an unterminated string/comment.
    Error,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: u32,
    pub end: u32,
}

const IDENT_START: u8 = 1;
const IDENT_CONT: u8 = 2;
const DIGIT: u8 = 4;
const HEX: u8 = 8;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        let mut v = 0;
        if b.is_ascii_alphabetic() || b == b'_' || b == b'$' {
            v |= IDENT_START | IDENT_CONT;
        }
        if b.is_ascii_digit() {
            v |= IDENT_CONT | DIGIT | HEX;
        }
        if b.is_ascii_hexdigit() {
            v |= HEX;
        }

        t[c] = v;
        c += 1;
    }
    t
};

#[inline]
fn is(b: u8, class: u8) -> bool {
    CLASS[b as usize] & class != 0
}

pub struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src: src.as_bytes(), pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves to `pos` (used to skip raw regions such as `.section` bodies).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.src.len());
    }

    #[inline]
    fn peek_at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    /// Advances over bytes of `class`.
    #[inline(always)]
    fn skip_class(&mut self, class: u8) {
        let src = self.src;
        let mut p = self.pos;
        while p < src.len() && is(src[p], class) {
            p += 1;
        }
        self.pos = p;
    }

    /// Skips whitespace and comments. Returns false on an unterminated block comment.
    #[inline(always)]
    fn skip_trivia(&mut self) -> bool {
        loop {
            let src = self.src;
            let mut p = self.pos;
            while p < src.len() && src[p].is_ascii_whitespace() {
                p += 1;
            }
            self.pos = p;
            if self.peek_at(self.pos) == b'/' {
                match self.peek_at(self.pos + 1) {
                    b'/' => {
                        let src = self.src;
                        let mut p = self.pos;
                        while p < src.len() && src[p] != b'\n' {
                            p += 1;
                        }
                        self.pos = p;
                        continue;
                    }
                    b'*' => {
                        let rest = &self.src[self.pos + 2..];
                        match rest.windows(2).position(|w| w == b"*/") {
                            Some(i) => {
                                self.pos += 2 + i + 2;
                                continue;
                            }
                            None => return false,
                        }
                    }
                    _ => {}
                }
            }
            return true;
        }
    }

    #[inline(always)]
    pub fn next_token(&mut self) -> Token {
        let trivia_ok = self.skip_trivia();
        let start = self.pos;
        if !trivia_ok {
            self.pos = self.src.len();
            return Token { kind: TokenKind::Error, start: start as u32, end: self.pos as u32 };
        }
        let kind = self.scan();
        Token { kind, start: start as u32, end: self.pos as u32 }
    }

    #[inline(always)]
    fn scan(&mut self) -> TokenKind {
        use TokenKind::*;
        let Some(&b) = self.src.get(self.pos) else {
            return Eof;
        };
        if is(b, IDENT_START) || (b == b'%' && is(self.peek_at(self.pos + 1), IDENT_CONT)) {
            self.pos += 1;
            self.skip_class(IDENT_CONT);
            return Ident;
        }
        if b == b'.' && is(self.peek_at(self.pos + 1), IDENT_CONT) {
            self.pos += 1;
            self.scan_word();
            return Dot;
        }
        if is(b, DIGIT) {
            return self.scan_number();
        }
        self.pos += 1;
        let next = self.peek_at(self.pos);
        let two = |s: &mut Self, k| {
            s.pos += 1;
            k
        };
        match b {
            b',' => Comma,
            b';' => Semi,
            b':' => Colon,
            b'(' => LParen,
            b')' => RParen,
            b'[' => LBracket,
            b']' => RBracket,
            b'{' => LBrace,
            b'}' => RBrace,
            b'<' if next == b'<' => two(self, Shl),
            b'<' if next == b'=' => two(self, Le),
            b'<' => Lt,
            b'>' if next == b'>' => two(self, Shr),
            b'>' if next == b'=' => two(self, Ge),
            b'>' => Gt,
            b'=' if next == b'=' => two(self, EqEq),
            b'=' => Eq,
            b'!' if next == b'=' => two(self, NotEq),
            b'!' => Bang,
            b'&' if next == b'&' => two(self, AndAnd),
            b'&' => Amp,
            b'|' if next == b'|' => two(self, OrOr),
            b'|' => Pipe,
            b'+' => Plus,
            b'-' => Minus,
            b'@' => At,
            b'^' => Caret,
            b'~' => Tilde,
            b'*' => Star,
            b'/' => Slash,
            b'%' => Percent,
            b'?' => Question,
            b'"' => {
                while self.pos < self.src.len() {
                    match self.src[self.pos] {
                        b'"' => {
                            self.pos += 1;
                            return Str;
                        }
                        b'\\' => self.pos += 2,
                        b'\n' => return Error,
                        _ => self.pos += 1,
                    }
                }
                self.pos = self.src.len();
                Error
            }
            _ => {
                // Step over a whole UTF-8 character so spans stay on char boundaries.
                while self.pos < self.src.len() && (self.src[self.pos] & 0xC0) == 0x80 {
                    self.pos += 1;
                }
                Error
            }
        }
    }

    /// A modifier word: identifier characters, with `::` joining parts.
    fn scan_word(&mut self) {
        loop {
            self.skip_class(IDENT_CONT);
            if self.peek_at(self.pos) == b':' && self.peek_at(self.pos + 1) == b':' && is(self.peek_at(self.pos + 2), IDENT_CONT) {
                self.pos += 2;
                continue;
            }
            break;
        }
    }

    fn scan_number(&mut self) -> TokenKind {
        let b0 = self.src[self.pos];
        let b1 = self.peek_at(self.pos + 1);
        if b0 == b'0' && matches!(b1, b'f' | b'F' | b'd' | b'D') && is(self.peek_at(self.pos + 2), HEX) {
            self.pos += 2;
            while is(self.peek_at(self.pos), HEX) {
                self.pos += 1;
            }
            return TokenKind::Float;
        }
        if b0 == b'0' && matches!(b1, b'x' | b'X') {
            self.pos += 2;
            while is(self.peek_at(self.pos), HEX) {
                self.pos += 1;
            }
        } else if b0 == b'0' && matches!(b1, b'b' | b'B') && matches!(self.peek_at(self.pos + 2), b'0' | b'1') {
            self.pos += 2;
            while matches!(self.peek_at(self.pos), b'0' | b'1') {
                self.pos += 1;
            }
        } else {
            while is(self.peek_at(self.pos), DIGIT) {
                self.pos += 1;
            }
            let mut float = false;
            if self.peek_at(self.pos) == b'.' && is(self.peek_at(self.pos + 1), DIGIT) {
                float = true;
                self.pos += 1;
                while is(self.peek_at(self.pos), DIGIT) {
                    self.pos += 1;
                }
            }
            if matches!(self.peek_at(self.pos), b'e' | b'E') {
                let mut p = self.pos + 1;
                if matches!(self.peek_at(p), b'+' | b'-') {
                    p += 1;
                }
                if is(self.peek_at(p), DIGIT) {
                    float = true;
                    self.pos = p;
                    while is(self.peek_at(self.pos), DIGIT) {
                        self.pos += 1;
                    }
                }
            }
            if float {
                return TokenKind::Float;
            }
        }
        if matches!(self.peek_at(self.pos), b'U' | b'u') && !is(self.peek_at(self.pos + 1), IDENT_CONT) {
            self.pos += 1;
        }
        // A number glued to letters (`12ab`) is one malformed token.
        if is(self.peek_at(self.pos), IDENT_START) {
            while is(self.peek_at(self.pos), IDENT_CONT) {
                self.pos += 1;
            }
            return TokenKind::Error;
        }
        TokenKind::Int
    }
}

/// The offset of the `}` that closes a block whose contents start at
/// `start` (just after its `{`), skipping braces inside comments and
/// strings; `None` when the block is not closed.
pub fn block_end(src: &[u8], start: usize) -> Option<usize> {
    let mut depth = 1usize;
    let mut i = start;
    while i < src.len() {
        match src[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'/' if src.get(i + 1) == Some(&b'/') => {
                i += memchr(b'\n', &src[i..]).unwrap_or(src.len() - i);
                continue;
            }
            b'/' if src.get(i + 1) == Some(&b'*') => {
                let rest = src.get(i + 2..)?;
                i += 2 + rest.windows(2).position(|w| w == b"*/")? + 2;
                continue;
            }
            b'"' => {
                i += 1;
                while i < src.len() && src[i] != b'"' && src[i] != b'\n' {
                    i += if src[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn memchr(b: u8, s: &[u8]) -> Option<usize> {
    s.iter().position(|&c| c == b)
}

/// Value of an integer token (`0x`, `0b`, octal, decimal, `U` suffix).
/// Values above `i64::MAX` wrap to their two's-complement bit pattern.
pub fn int_value(text: &str) -> Option<i64> {
    let t = text.trim_end_matches(['U', 'u']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(v as i64)
}

/// A float token: `0f` (f32 bits), `0d` (f64 bits) or decimal (f64 value).
pub enum FloatValue {
    F32(u32),
    F64(u64),
}

pub fn float_value(text: &str) -> Option<FloatValue> {
    let b = text.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        match b[1] {
            b'f' | b'F' => {
                let h = &text[2..];
                return (h.len() == 8).then(|| u32::from_str_radix(h, 16).ok()).flatten().map(FloatValue::F32);
            }
            b'd' | b'D' => {
                let h = &text[2..];
                return (h.len() == 16).then(|| u64::from_str_radix(h, 16).ok()).flatten().map(FloatValue::F64);
            }
            _ => {}
        }
    }
    text.parse::<f64>().ok().map(|v| FloatValue::F64(v.to_bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
        let mut l = Lexer::new(src);
        let mut out = vec![];
        loop {
            let t = l.next_token();
            if t.kind == TokenKind::Eof {
                return out;
            }
            out.push((t.kind, &src[t.start as usize..t.end as usize]));
        }
    }

    #[test]
    fn tokens_of_an_instruction() {
        use TokenKind::*;
        assert_eq!(
            kinds("@!%p1 ld.global.nc.L2::128B.v4.u32 {%r1,%r2}, [%rd1+-4]; // c\n/* x */ 0f3F800000 0d3FF0000000000000 1.5e3 0x1FU 017"),
            vec![
                (At, "@"),
                (Bang, "!"),
                (Ident, "%p1"),
                (Ident, "ld"),
                (Dot, ".global"),
                (Dot, ".nc"),
                (Dot, ".L2::128B"),
                (Dot, ".v4"),
                (Dot, ".u32"),
                (LBrace, "{"),
                (Ident, "%r1"),
                (Comma, ","),
                (Ident, "%r2"),
                (RBrace, "}"),
                (Comma, ","),
                (LBracket, "["),
                (Ident, "%rd1"),
                (Plus, "+"),
                (Minus, "-"),
                (Int, "4"),
                (RBracket, "]"),
                (Semi, ";"),
                (Float, "0f3F800000"),
                (Float, "0d3FF0000000000000"),
                (Float, "1.5e3"),
                (Int, "0x1FU"),
                (Int, "017"),
            ]
        );
    }

    #[test]
    fn errors() {
        assert_eq!(kinds("/* open")[0].0, TokenKind::Error);
        assert_eq!(kinds("\"open")[0].0, TokenKind::Error);
        assert_eq!(kinds("12ab")[0], (TokenKind::Error, "12ab"));
        assert_eq!(kinds("é")[0], (TokenKind::Error, "é"));
    }

    #[test]
    fn values() {
        assert_eq!(int_value("0x1F"), Some(31));
        assert_eq!(int_value("017"), Some(15));
        assert_eq!(int_value("0b101"), Some(5));
        assert_eq!(int_value("18446744073709551615U"), Some(-1));
        assert!(matches!(float_value("0f3F800000"), Some(FloatValue::F32(0x3F80_0000))));
        assert!(matches!(float_value("1.5"), Some(FloatValue::F64(b)) if b == 1.5f64.to_bits()));
    }
}
