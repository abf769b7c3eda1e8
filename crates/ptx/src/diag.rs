//! Diagnostics: what went wrong, where (line:column), the text found there,
//! and what was expected.

use crate::ast::Span;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    /// 1-based line and column (in characters) of `span.start`.
    pub line: u32,
    pub column: u32,
    pub message: String,
    /// The source text at the span (shortened if long).
    pub found: String,
    pub expected: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)?;
        if !self.found.is_empty() {
            write!(f, " (found `{}`", self.found)?;
            if let Some(e) = &self.expected {
                write!(f, ", expected {e}")?;
            }
            write!(f, ")")?;
        } else if let Some(e) = &self.expected {
            write!(f, " (expected {e})")?;
        }
        Ok(())
    }
}

/// Every error of a module, in source order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// Maps byte offsets to line and column.
pub struct LineIndex<'a> {
    src: &'a str,
    starts: Vec<u32>,
}

impl<'a> LineIndex<'a> {
    pub fn new(src: &'a str) -> LineIndex<'a> {
        let mut starts = vec![0];
        starts.extend(src.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i as u32 + 1));
        LineIndex { src, starts }
    }

    /// 1-based line and character column of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = self.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let start = self.starts[line] as usize;
        let end = (offset as usize).min(self.src.len());
        let col = self.src.get(start..end).map_or(end - start, |s| s.chars().count());
        (line as u32 + 1, col as u32 + 1)
    }

    pub fn diagnostic(&self, span: Span, message: String, expected: Option<String>) -> Diagnostic {
        let (line, column) = self.line_col(span.start);
        let text = self.src.get(span.start as usize..span.end as usize).unwrap_or("");
        let mut found: String = text.chars().take(60).collect();
        if text.chars().count() > 60 {
            found.push('…');
        }
        Diagnostic { span, line, column, message, found, expected }
    }
}
