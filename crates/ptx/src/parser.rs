//! Recursive-descent parser from tokens to the typed AST.
//!
//! Names are resolved while parsing (PTX requires declaration before use).
//! Labels are scoped by block and may be used before their definition, so a
//! label use waits until the block that defines its name closes; unresolved
//! uses at the end of a function are errors. On an
//! error the parser records a diagnostic, skips to the end of the statement
//! and goes on, so one run reports every error of a module.

use crate::ast::*;
use crate::diag::{Diagnostics, LineIndex};
use crate::keywords::{tables, FnvMap, NameMap};
use crate::lexer::{float_value, int_value, FloatValue, Lexer, Token, TokenKind as T};
use crate::validate;

type PResult<T> = Result<T, ()>;

struct RawDiag {
    span: Span,
    message: String,
    expected: Option<String>,
}

/// Parses a whole module. Errors: every diagnostic found.
pub fn parse(src: &str) -> Result<Module<'_>, Diagnostics> {
    if src.len() >= u32::MAX as usize {
        let index = LineIndex::new("");
        return Err(Diagnostics(vec![index.diagnostic(Span::default(), "module larger than 4 GiB".into(), None)]));
    }
    let mut p = Parser::new(src);
    p.module_items();
    p.check_hoisted_names();
    if p.diags.is_empty() {
        Ok(p.module)
    } else {
        let index = LineIndex::new(src);
        let mut diags: Vec<_> = p.diags.into_iter().map(|d| index.diagnostic(d.span, d.message, d.expected)).collect();
        diags.sort_by_key(|d| d.span.start);
        Err(Diagnostics(diags))
    }
}

/// What a name in an operand position may refer to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameCtx {
    Value,
    Label,
    Callee,
}

const NO_INDEX: u32 = u32::MAX;

/// The key of a whole register (not an element of a vector register).
const NO_ELEMENT: u8 = u8::MAX;

/// How deep blocks, parentheses and braces may nest. The parser recurses on
/// nesting, so a limit keeps hostile input from overflowing the stack; real
/// PTX nests a few levels.
const MAX_DEPTH: u32 = 64;

/// The predefined constant for the warp size.
const WARP_SZ: &str = "WARP_SZ";

/// Per-function parsing state: the scoped name tables.
struct FnState<'a> {
    vars: Vec<VarDecl<'a>>,
    body: Body<'a>,
    scope: NameMap<'a, VarId>,
    undo: Vec<(&'a str, Option<VarId>)>,
    marks: Vec<usize>,
    reg_cache: NameMap<'a, RegId>,
    reg_ids: FnvMap<(VarId, u32, u8), RegId>,
    /// Visible label definitions: name -> (label, block that defines it).
    label_defs: NameMap<'a, (LabelId, u32)>,
    label_undo: Vec<(&'a str, Option<(LabelId, u32)>)>,
    /// The open blocks, innermost last.
    blocks: Vec<BlockMark>,
    next_block: u32,
    /// Label uses not yet bound to a definition, in source order: (name,
    /// use id, span). Operands carry the use id until the function ends.
    pending: Vec<(&'a str, u32, Span)>,
    /// For each use id, the label it resolved to.
    use_target: Vec<LabelId>,
    /// `.global`/`.const` variables declared in the body: the module
    /// variable each declaration stands for.
    hoisted: FnvMap<VarId, SymbolId>,
}

/// Where a block's entries start in the scope logs.
#[derive(Clone, Copy)]
struct BlockMark {
    id: u32,
    var_undo: usize,
    label_undo: usize,
    pending: usize,
}

impl<'a> FnState<'a> {
    fn new() -> FnState<'a> {
        FnState {
            vars: Vec::new(),
            body: Body::default(),
            scope: NameMap::new(),
            undo: Vec::new(),
            marks: Vec::new(),
            reg_cache: NameMap::new(),
            reg_ids: FnvMap::default(),
            label_defs: NameMap::new(),
            label_undo: Vec::new(),
            blocks: Vec::new(),
            next_block: 0,
            pending: Vec::new(),
            use_target: Vec::new(),
            hoisted: FnvMap::default(),
        }
    }

    /// Empties the state for the next function, keeping its allocations.
    fn reset(&mut self) {
        self.vars.clear();
        let b = &mut self.body;
        b.statements.clear();
        b.regs.clear();
        b.labels.clear();
        b.mods.clear();
        b.operands.clear();
        b.prototypes.clear();
        b.strings.clear();
        b.spans.0.clear();
        self.scope.clear();
        self.undo.clear();
        self.marks.clear();
        self.reg_cache.clear();
        self.reg_ids.clear();
        self.label_defs.clear();
        self.label_undo.clear();
        self.blocks.clear();
        self.next_block = 0;
        self.pending.clear();
        self.use_target.clear();
        self.hoisted.clear();
    }

    /// The finished body, in vectors of exactly its size (the AST keeps
    /// them; the state keeps its own capacity for the next function).
    fn take_body(&mut self) -> Body<'a> {
        fn exact<T>(v: &mut Vec<T>) -> Vec<T> {
            let mut out = Vec::with_capacity(v.len());
            out.append(v);
            out
        }
        let b = &mut self.body;
        Body {
            statements: exact(&mut b.statements),
            regs: exact(&mut b.regs),
            labels: exact(&mut b.labels),
            mods: exact(&mut b.mods),
            operands: exact(&mut b.operands),
            prototypes: exact(&mut b.prototypes),
            strings: exact(&mut b.strings),
            spans: SpanTable(exact(&mut b.spans.0)),
        }
    }

    fn declare(&mut self, decl: VarDecl<'a>) -> VarId {
        let id = self.vars.len() as VarId;
        let name = decl.name;
        // A new declaration may shadow names the cache resolved before: its
        // own name, or with `%r<N>` every `%rK` of an earlier `%r<M>` (a
        // plain `%rK` declaration is found before any `%r<M>` member, so
        // only a shadowed prefix makes cached names stale).
        if decl.count.is_some() {
            if self.scope.get(name).is_some() {
                self.reg_cache.clear();
            }
        } else if !self.reg_cache.is_empty() {
            self.reg_cache.remove(name);
        }
        self.vars.push(decl);
        let old = self.scope.insert(name, id);
        self.undo.push((name, old));
        id
    }

    fn open_scope(&mut self) {
        self.marks.push(self.undo.len());
        self.blocks.push(BlockMark {
            id: self.next_block,
            var_undo: self.undo.len(),
            label_undo: self.label_undo.len(),
            pending: self.pending.len(),
        });
        self.next_block += 1;
    }

    fn close_scope(&mut self) {
        if let Some(block) = self.blocks.pop() {
            // Uses of labels this block defines bind to them; the others wait
            // for an enclosing block.
            let mut keep = block.pending;
            for i in block.pending..self.pending.len() {
                let (name, use_id, span) = self.pending[i];
                match self.label_defs.get(name) {
                    Some((label, b)) if b == block.id => self.use_target[use_id as usize] = label,
                    _ => {
                        self.pending[keep] = (name, use_id, span);
                        keep += 1;
                    }
                }
            }
            self.pending.truncate(keep);
            while !self.blocks.is_empty() && self.label_undo.len() > block.label_undo {
                if let Some((name, old)) = self.label_undo.pop() {
                    match old {
                        Some(v) => self.label_defs.insert(name, v),
                        None => self.label_defs.remove(name),
                    };
                }
            }
            debug_assert_eq!(block.var_undo, *self.marks.last().unwrap_or(&0));
        }
        let mark = self.marks.pop().unwrap_or(0);
        if self.blocks.is_empty() {
            // The function body: nothing reads the scope after it, and
            // `reset` empties it for the next function.
            return;
        }
        if self.undo.len() > mark {
            // Names declared in the scope may have shadowed outer ones.
            self.reg_cache.clear();
        }
        while self.undo.len() > mark {
            if let Some((name, old)) = self.undo.pop() {
                match old {
                    Some(v) => self.scope.insert(name, v),
                    None => self.scope.remove(name),
                };
            }
        }
    }

    fn reg_id(&mut self, var: VarId, index: u32) -> RegId {
        let regs = &mut self.body.regs;
        *self.reg_ids.entry((var, index, NO_ELEMENT)).or_insert_with(|| {
            regs.push(Reg { var, index: (index != NO_INDEX).then_some(index), element: None });
            (regs.len() - 1) as RegId
        })
    }

    /// Element `e` of a vector-typed register.
    fn element_id(&mut self, r: RegId, e: u8) -> RegId {
        let Reg { var, index, .. } = self.body.regs[r as usize];
        let regs = &mut self.body.regs;
        *self.reg_ids.entry((var, index.unwrap_or(NO_INDEX), e)).or_insert_with(|| {
            regs.push(Reg { var, index, element: Some(e) });
            (regs.len() - 1) as RegId
        })
    }

    /// The element count of a register's declaration (0: a scalar).
    fn vector_len(&self, r: RegId) -> u8 {
        self.vars[self.body.regs[r as usize].var as usize].vector
    }

    /// A use of a label: a provisional id that `resolve_labels` replaces.
    fn label_use(&mut self, name: &'a str, span: Span) -> LabelId {
        let id = self.use_target.len() as u32;
        self.use_target.push(LabelId::MAX);
        self.pending.push((name, id, span));
        id
    }

    /// Defines a label in the innermost block; `None` if the block already has it.
    fn label_def(&mut self, name: &'a str) -> Option<LabelId> {
        let block = self.blocks.last().map_or(0, |b| b.id);
        if matches!(self.label_defs.get(name), Some((_, b)) if b == block) {
            return None;
        }
        let id = self.body.labels.len() as LabelId;
        self.body.labels.push(name);
        let old = self.label_defs.insert(name, (id, block));
        self.label_undo.push((name, old));
        Some(id)
    }

    /// After the function body: replaces provisional use ids in the operand
    /// arena by labels and returns the uses that found no definition.
    fn resolve_labels(&mut self) -> Vec<(&'a str, Span)> {
        for op in &mut self.body.operands {
            if let Operand::Label(u) = op {
                *u = self.use_target.get(*u as usize).copied().unwrap_or(LabelId::MAX);
            }
        }
        let mut seen: NameMap<'a, ()> = NameMap::new();
        let mut undefined = Vec::new();
        for &(name, _, span) in &self.pending {
            if seen.insert(name, ()).is_none() {
                undefined.push((name, span));
            }
        }
        undefined
    }

    fn push_statement(&mut self, s: Statement, span: Span) {
        self.body.statements.push(s);
        self.body.spans.0.push(span);
    }
}

enum Resolved {
    Reg(RegId),
    Var(VarId),
    Global(SymbolId),
    Special(SpecialReg),
}

struct Parser<'a> {
    src: &'a str,
    lex: Lexer<'a>,
    tok: Token,
    ahead: Option<Token>,
    diags: Vec<RawDiag>,
    module: Module<'a>,
    symbols: NameMap<'a, SymbolId>,
    scratch: Vec<Operand>,
    scratch_mods: Vec<Modifier>,
    /// The per-function state, reused from one function to the next.
    fn_state: Option<FnState<'a>>,
    scratch_decls: Vec<(VarDecl<'a>, Span)>,
    /// Current nesting depth (see `MAX_DEPTH`).
    depth: u32,
    /// The module variables declared inside function bodies, with their
    /// declarations' spans.
    hoisted_spans: Vec<(SymbolId, Span)>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        let mut lex = Lexer::new(src);
        let tok = lex.next_token();
        Parser {
            src,
            lex,
            tok,
            ahead: None,
            diags: Vec::new(),
            module: Module {
                version: Version::default(),
                target: Target::default(),
                address_size: 32,
                items: Vec::new(),
                symbols: Vec::new(),
            },
            symbols: NameMap::new(),
            scratch: Vec::new(),
            scratch_mods: Vec::new(),
            fn_state: None,
            scratch_decls: Vec::new(),
            depth: 0,
            hoisted_spans: Vec::new(),
        }
    }

    // ---- token helpers -------------------------------------------------

    #[inline]
    fn bump(&mut self) -> Token {
        let t = self.tok;
        match self.ahead.take() {
            Some(a) => self.tok = a,
            None => self.advance(),
        }
        t
    }

    /// Lexes the next token into `self.tok`. The lexer is inlined here and
    /// in `peek2` only, so a token goes from registers straight to its field.
    #[inline(never)]
    fn advance(&mut self) {
        self.tok = self.lex.next_token();
    }

    #[inline(never)]
    fn peek2(&mut self) -> Token {
        match self.ahead {
            Some(a) => a,
            None => {
                let a = self.lex.next_token();
                self.ahead = Some(a);
                a
            }
        }
    }

    fn text(&self, t: Token) -> &'a str {
        &self.src[t.start as usize..t.end as usize]
    }

    fn span(t: Token) -> Span {
        Span { start: t.start, end: t.end }
    }

    fn at(&self, k: T) -> bool {
        self.tok.kind == k
    }

    fn at_dot(&self, word: &str) -> bool {
        self.tok.kind == T::Dot && self.text(self.tok) == word
    }

    fn eat(&mut self, k: T) -> bool {
        if self.at(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    #[cold]
    fn error(&mut self, span: Span, message: impl Into<String>, expected: Option<&str>) {
        self.diags.push(RawDiag { span, message: message.into(), expected: expected.map(Into::into) });
    }

    /// Runs `f` one nesting level deeper, or reports that nesting is too deep.
    #[inline]
    fn nested<R>(&mut self, f: impl FnOnce(&mut Self) -> PResult<R>) -> PResult<R> {
        if self.depth >= MAX_DEPTH {
            return self.too_deep();
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    #[cold]
    #[inline(never)]
    fn too_deep<X>(&mut self) -> PResult<X> {
        self.error(Self::span(self.tok), format!("nesting deeper than {MAX_DEPTH} levels"), None);
        Err(())
    }

    #[cold]
    #[inline(never)]
    fn unexpected<X>(&mut self, expected: &str) -> PResult<X> {
        let t = self.tok;
        let msg = match t.kind {
            T::Eof => "unexpected end of input".to_string(),
            T::Error => "invalid token".to_string(),
            _ => "unexpected token".to_string(),
        };
        self.error(Self::span(t), msg, Some(expected));
        Err(())
    }

    #[inline]
    fn expect(&mut self, k: T, expected: &str) -> PResult<Token> {
        if self.at(k) {
            Ok(self.bump())
        } else {
            self.unexpected(expected)
        }
    }

    fn expect_u32(&mut self, what: &str) -> PResult<u32> {
        let t = self.expect(T::Int, what)?;
        match int_value(self.text(t)).and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Ok(v),
            None => {
                self.error(Self::span(t), "integer out of range", Some(what));
                Err(())
            }
        }
    }

    /// Moves the lexer to `pos` and reads the token there.
    fn seek(&mut self, pos: usize) {
        self.lex.seek(pos);
        self.ahead = None;
        self.tok = self.lex.next_token();
    }

    /// End of the source line containing `pos`.
    fn line_end(&self, pos: usize) -> usize {
        self.src[pos.min(self.src.len())..].find('\n').map_or(self.src.len(), |i| pos + i)
    }

    // ---- recovery ------------------------------------------------------

    /// Skips to just after the next `;` of this statement, or stops before a
    /// `}` that closes the enclosing block.
    fn recover_statement(&mut self) {
        let mut depth = 0i32;
        loop {
            match self.tok.kind {
                T::Eof => return,
                T::Semi if depth <= 0 => {
                    self.bump();
                    return;
                }
                T::LBrace => depth += 1,
                T::RBrace => {
                    if depth <= 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips to the next module-level directive.
    fn recover_module(&mut self) {
        let mut depth = 0i32;
        loop {
            match self.tok.kind {
                T::Eof => return,
                T::LBrace => depth += 1,
                T::RBrace => {
                    depth -= 1;
                    if depth <= 0 {
                        self.bump();
                        if depth < 0 {
                            depth = 0;
                        }
                        if self.at(T::Dot) {
                            return;
                        }
                        continue;
                    }
                }
                T::Dot if depth == 0 && is_module_directive(self.text(self.tok)) => return,
                _ => {}
            }
            self.bump();
        }
    }

    // ---- module ----------------------------------------------------------

    fn module_items(&mut self) {
        while !self.at(T::Eof) {
            if self.module_item().is_err() {
                self.recover_module();
            }
        }
    }

    fn module_item(&mut self) -> PResult<()> {
        if !self.at(T::Dot) {
            return self.unexpected("a directive such as `.entry`, `.func`, `.global`");
        }
        let word = self.text(self.tok);
        match word {
            ".version" => {
                let t = self.bump();
                let v = self.bump();
                let text = self.text(v);
                let parsed = (v.kind == T::Float || v.kind == T::Int)
                    .then(|| text.split_once('.'))
                    .flatten()
                    .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                match parsed {
                    Some((major, minor)) => self.module.version = Version { major, minor },
                    None => {
                        self.error(Self::span(t).to(Self::span(v)), "malformed `.version`", Some("`.version MAJOR.MINOR`"));
                        return Err(());
                    }
                }
                Ok(())
            }
            ".target" => {
                self.bump();
                loop {
                    let t = self.expect(T::Ident, "a target name such as `sm_80`")?;
                    let w = self.text(t);
                    self.module.target.words.push(w);
                    if !self.eat(T::Comma) {
                        return Ok(());
                    }
                }
            }
            ".address_size" => {
                self.bump();
                let t = self.tok;
                let v = self.expect_u32("32 or 64")?;
                if v != 32 && v != 64 {
                    self.error(Self::span(t), "address size must be 32 or 64", Some("32 or 64"));
                    return Err(());
                }
                self.module.address_size = v;
                Ok(())
            }
            ".file" => {
                self.bump();
                let index = self.expect_u32("a file number")?;
                let s = self.expect(T::Str, "a file name string")?;
                let name = unquote(self.text(s));
                let mut extra = Vec::new();
                while self.eat(T::Comma) {
                    let t = self.expect(T::Int, "a number")?;
                    extra.push(int_value(self.text(t)).unwrap_or(0) as u64);
                }
                self.module.items.push(Item::File { index, name, extra });
                Ok(())
            }
            ".section" => {
                self.bump();
                let name_tok = self.expect(T::Dot, "a section name such as `.debug_info`")?;
                let name = self.text(name_tok);
                let open = self.expect(T::LBrace, "`{`")?;
                // Debug sections are data, kept verbatim.
                let start = open.end as usize;
                let Some(end) = crate::lexer::block_end(self.src.as_bytes(), start) else {
                    self.error(Self::span(open), "unterminated `.section`", Some("`}`"));
                    self.seek(self.src.len());
                    return Err(());
                };
                let body = &self.src[start..end];
                self.module.items.push(Item::Section { name, body });
                self.seek(end + 1);
                Ok(())
            }
            ".pragma" => {
                self.bump();
                let s = self.expect(T::Str, "a string")?;
                let text = unquote(self.text(s));
                self.expect(T::Semi, "`;`")?;
                self.module.items.push(Item::Pragma(text));
                Ok(())
            }
            ".alias" => {
                self.bump();
                let a = self.expect(T::Ident, "an alias name")?;
                self.expect(T::Comma, "`,`")?;
                let b = self.expect(T::Ident, "the aliased function")?;
                self.expect(T::Semi, "`;`")?;
                let target = self.lookup_symbol(b)?;
                let alias_name = self.text(a);
                let item = self.module.items.len() as u32;
                let alias = self.define_symbol(alias_name, SymbolKind::Function, item, Self::span(a), true)?;
                self.module.items.push(Item::Alias { alias, target });
                Ok(())
            }
            _ => {
                let start = self.tok;
                let linkage = self.linkage();
                if self.at_dot(".entry") || self.at_dot(".func") {
                    self.function(linkage, start)
                } else if self.at(T::Dot) && is_variable_space(self.text(self.tok)) {
                    self.module_variable(linkage)
                } else {
                    self.unexpected("`.entry`, `.func` or a variable declaration")
                }
            }
        }
    }

    fn linkage(&mut self) -> Option<Linkage> {
        let l = match self.text(self.tok) {
            ".visible" => Linkage::Visible,
            ".extern" => Linkage::Extern,
            ".weak" => Linkage::Weak,
            ".common" => Linkage::Common,
            _ => return None,
        };
        if self.tok.kind != T::Dot {
            return None;
        }
        self.bump();
        Some(l)
    }

    fn lookup_symbol(&mut self, t: Token) -> PResult<SymbolId> {
        let name = self.text(t);
        match self.symbols.get(name) {
            Some(s) => Ok(s),
            None => {
                self.error(Self::span(t), format!("undeclared identifier `{name}`"), None);
                Err(())
            }
        }
    }

    /// Declares (or re-declares) a module symbol. A later declaration with a
    /// definition replaces an earlier declaration of the same kind.
    fn define_symbol(&mut self, name: &'a str, kind: SymbolKind, item: u32, span: Span, is_definition: bool) -> PResult<SymbolId> {
        if let Some(id) = self.symbols.get(name) {
            let sym = &mut self.module.symbols[id as usize];
            if sym.kind != kind {
                self.error(span, format!("`{name}` is already declared as a different kind of symbol"), None);
                return Err(());
            }
            let prev_is_def = match self.module.items.get(sym.item as usize) {
                Some(Item::Function(f)) => f.body.is_some(),
                Some(Item::Variable(v)) => v.decl.linkage != Some(Linkage::Extern),
                _ => false,
            };
            if prev_is_def && is_definition && kind == SymbolKind::Function {
                self.error(span, format!("function `{name}` is defined twice"), None);
                return Err(());
            }
            if is_definition || !prev_is_def {
                sym.item = item;
            }
            return Ok(id);
        }
        let id = self.module.symbols.len() as SymbolId;
        self.module.symbols.push(Symbol { name, kind, item });
        self.symbols.insert(name, id);
        Ok(id)
    }

    /// Variables declared inside function bodies become module variables
    /// under their own names (the names code is compiled under): a name
    /// another module symbol or another function's variable also has is
    /// reported, not given two meanings.
    fn check_hoisted_names(&mut self) {
        let spans = std::mem::take(&mut self.hoisted_spans);
        for &(s, span) in &spans {
            let name = self.module.symbols[s as usize].name;
            let clash =
                self.symbols.get(name).is_some() || spans.iter().any(|&(o, _)| o < s && self.module.symbols[o as usize].name == name);
            if clash {
                self.error(
                    span,
                    format!(
                        "`{name}`, a variable declared inside a function body, shares its name with another module-level symbol or function-scoped variable (unsupported: such names must be unique in the module)"
                    ),
                    None,
                );
            }
        }
    }

    fn module_variable(&mut self, linkage: Option<Linkage>) -> PResult<()> {
        let mut decls = Vec::new();
        self.var_decl(linkage, None, &mut decls)?;
        for (decl, span) in decls {
            let item = self.module.items.len() as u32;
            let is_def = decl.linkage != Some(Linkage::Extern);
            let symbol = self.define_symbol(decl.name, SymbolKind::Variable, item, span, is_def)?;
            self.module.items.push(Item::Variable(Variable { symbol, decl, in_function: false }));
        }
        Ok(())
    }

    // ---- declarations ----------------------------------------------------

    /// `[linkage] .space [.align N] [.vN] [.attribute(..)] .type [.ptr ...] name[...] [= init], ... ;`
    /// When `fs` is given, symbol references in initializers may be function-local.
    fn var_decl(&mut self, linkage: Option<Linkage>, fs: Option<&mut FnState<'a>>, out: &mut Vec<(VarDecl<'a>, Span)>) -> PResult<()> {
        let _ = fs;
        let space_tok = self.tok;
        let space = self.space_word()?;
        let mut proto = DeclPrefix { space, ..DeclPrefix::default() };
        self.decl_attributes(&mut proto)?;
        if proto.ty.is_none() {
            return self.unexpected("a type such as `.b32`");
        }
        loop {
            let name_tok = self.expect(T::Ident, "a variable name")?;
            let mut decl = proto.make(self.text(name_tok), linkage);
            self.decl_suffix(&mut decl)?;
            if self.eat(T::Eq) {
                decl.init = Some(self.initializer()?);
            }
            let span = Self::span(space_tok).to(Self::span(name_tok));
            out.push((decl, span));
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.expect(T::Semi, "`;` or `,`")?;
        Ok(())
    }

    fn space_word(&mut self) -> PResult<StateSpace> {
        let t = self.tok;
        if t.kind == T::Dot {
            if let Some(s) = tables().spaces.get(&self.text(t)[1..]) {
                self.bump();
                return Ok(s);
            }
        }
        self.unexpected("a state space such as `.reg`, `.shared`, `.global`")
    }

    /// Attributes between the state space and the name, in any order.
    fn decl_attributes(&mut self, p: &mut DeclPrefix<'a>) -> PResult<()> {
        while self.at(T::Dot) {
            let t = self.tok;
            let w = &self.text(t)[1..];
            match w {
                "align" => {
                    self.bump();
                    p.align = Some(self.expect_u32("an alignment")?);
                }
                "v2" | "v4" | "v8" => {
                    self.bump();
                    p.vector = w[1..].parse().unwrap_or(0);
                }
                "attribute" => {
                    self.bump();
                    self.expect(T::LParen, "`(`")?;
                    while self.at(T::Dot) {
                        let a = self.bump();
                        p.attributes.push(&self.text(a)[1..]);
                        if !self.eat(T::Comma) {
                            break;
                        }
                    }
                    self.expect(T::RParen, "`)`")?;
                }
                "ptr" => {
                    self.bump();
                    let mut ptr = PtrAttr::default();
                    loop {
                        if self.at_dot(".align") {
                            self.bump();
                            ptr.align = Some(self.expect_u32("an alignment")?);
                        } else if self.at(T::Dot) {
                            match tables().spaces.get(&self.text(self.tok)[1..]) {
                                Some(s) => {
                                    self.bump();
                                    ptr.space = Some(s);
                                }
                                None => break,
                            }
                        } else {
                            break;
                        }
                    }
                    p.ptr = Some(ptr);
                }
                _ => match Type::from_word(w) {
                    Some(ty) if p.ty.is_none() => {
                        self.bump();
                        p.ty = Some(ty);
                    }
                    Some(_) => {
                        self.error(Self::span(t), "a declaration takes one type", None);
                        return Err(());
                    }
                    None => {
                        self.error(
                            Self::span(t),
                            format!("unknown declaration attribute `{}`", self.text(t)),
                            Some("a type, `.align N`, `.vN`, `.ptr` or `.attribute(...)`"),
                        );
                        return Err(());
                    }
                },
            }
        }
        Ok(())
    }

    /// `<N>` and `[N]...` after a declared name.
    fn decl_suffix(&mut self, decl: &mut VarDecl<'a>) -> PResult<()> {
        if self.eat(T::Lt) {
            decl.count = Some(self.expect_u32("a register count")?);
            self.expect(T::Gt, "`>`")?;
        }
        while self.eat(T::LBracket) {
            if self.eat(T::RBracket) {
                decl.dims.push(None);
                continue;
            }
            let t = self.tok;
            let v = self.const_expr()?;
            if v < 0 {
                self.error(Self::span(t), "negative array size", None);
                return Err(());
            }
            decl.dims.push(Some(v as u64));
            self.expect(T::RBracket, "`]`")?;
        }
        Ok(())
    }

    fn initializer(&mut self) -> PResult<Initializer> {
        self.nested(Self::initializer_inner)
    }

    fn initializer_inner(&mut self) -> PResult<Initializer> {
        if self.eat(T::LBrace) {
            let mut items = Vec::new();
            if !self.at(T::RBrace) {
                loop {
                    items.push(self.initializer()?);
                    if !self.eat(T::Comma) {
                        break;
                    }
                }
            }
            self.expect(T::RBrace, "`}` or `,`")?;
            return Ok(Initializer::List(items));
        }
        if self.at(T::Ident) && self.peek2().kind == T::Eq {
            return self.field_initializer();
        }
        if self.at(T::Ident) && self.text(self.tok) != WARP_SZ {
            let t = self.tok;
            let generic = self.text(t) == "generic" && self.peek2().kind == T::LParen;
            let sym_tok = if generic {
                self.bump();
                self.bump();
                let s = self.expect(T::Ident, "a symbol")?;
                self.expect(T::RParen, "`)`")?;
                s
            } else {
                self.bump()
            };
            let symbol = self.lookup_symbol(sym_tok)?;
            let offset = self.symbol_offset()?;
            return Ok(Initializer::Symbol { symbol, offset, generic });
        }
        if self.at(T::Int) && self.peek2().kind == T::LParen {
            let t = self.bump();
            let mask = self.int_token_value(t)? as u64;
            self.bump();
            let value = self.initializer()?;
            self.expect(T::RParen, "`)`")?;
            return Ok(Initializer::Mask { mask, value: Box::new(value) });
        }
        if let Some(f) = self.float_literal()? {
            return Ok(f);
        }
        Ok(Initializer::Int(self.const_expr()?))
    }

    /// `name = value` in a sampler or texture initializer.
    fn field_initializer(&mut self) -> PResult<Initializer> {
        let t = self.bump();
        let name = match tables().flags.get(self.text(t)) {
            Some(f) if is_field_name(f) => f,
            _ => {
                self.error(
                    Self::span(t),
                    format!("unknown sampler or texture field `{}`", self.text(t)),
                    Some("`filter_mode`, `addr_mode_0`..`addr_mode_2`, `normalized_coords` or another field"),
                );
                return Err(());
            }
        };
        self.expect(T::Eq, "`=`")?;
        let value = if self.at(T::Ident) && self.text(self.tok) != WARP_SZ {
            let v = self.bump();
            match tables().flags.get(self.text(v)) {
                Some(w) if is_field_value(w) => Initializer::Word(w),
                _ => {
                    self.error(
                        Self::span(v),
                        format!("unknown field value `{}`", self.text(v)),
                        Some("`nearest`, `linear`, `wrap`, `mirror`, `clamp_ogl`, `clamp_to_edge` or `clamp_to_border`"),
                    );
                    return Err(());
                }
            }
        } else {
            Initializer::Int(self.const_expr()?)
        };
        Ok(Initializer::Field { name, value: Box::new(value) })
    }

    /// A float literal, with an optional leading minus.
    fn float_literal(&mut self) -> PResult<Option<Initializer>> {
        let neg = self.at(T::Minus) && self.peek2().kind == T::Float;
        if !(self.at(T::Float) || neg) {
            return Ok(None);
        }
        if neg {
            self.bump();
        }
        let t = self.bump();
        match float_value(self.text(t)) {
            Some(FloatValue::F32(b)) => Ok(Some(Initializer::F32(if neg { b ^ 0x8000_0000 } else { b }))),
            Some(FloatValue::F64(b)) => Ok(Some(Initializer::F64(if neg { b ^ 0x8000_0000_0000_0000 } else { b }))),
            None => {
                self.error(Self::span(t), "malformed float literal", Some("`0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX` or a decimal"));
                Err(())
            }
        }
    }

    /// `+ expr` or `- expr` after a symbol, or nothing.
    fn symbol_offset(&mut self) -> PResult<i64> {
        if self.eat(T::Plus) {
            self.const_expr()
        } else if self.eat(T::Minus) {
            Ok(self.const_expr()?.wrapping_neg())
        } else {
            Ok(0)
        }
    }

    // ---- functions ---------------------------------------------------------

    fn function(&mut self, linkage: Option<Linkage>, start: Token) -> PResult<()> {
        let mut fs = self.fn_state.take().unwrap_or_else(FnState::new);
        fs.reset();
        let r = self.function_with(linkage, start, &mut fs);
        self.fn_state = Some(fs);
        r
    }

    fn function_with(&mut self, linkage: Option<Linkage>, start: Token, fs: &mut FnState<'a>) -> PResult<()> {
        let kw = self.bump();
        let kind = if self.text(kw) == ".entry" { FunctionKind::Entry } else { FunctionKind::Func };
        let mut returns = Vec::new();
        if kind == FunctionKind::Func && self.at(T::LParen) {
            self.param_list(fs, &mut returns)?;
        }
        let name_tok = self.expect(T::Ident, "a function name")?;
        let name = self.text(name_tok);
        let mut params = Vec::new();
        if self.at(T::LParen) {
            self.param_list(fs, &mut params)?;
        }
        let directives = self.perf_directives()?;
        let has_body = self.at(T::LBrace);
        if !has_body {
            self.expect(T::Semi, "`{` or `;`")?;
        }
        let item = self.module.items.len() as u32;
        let symbol = self.define_symbol(name, SymbolKind::Function, item, Self::span(name_tok), has_body)?;
        // Push the item before the body so recursive calls resolve.
        self.module.items.push(Item::Function(Box::new(Function {
            name,
            symbol,
            kind,
            linkage,
            returns,
            params,
            directives,
            vars: Vec::new(),
            body: None,
        })));
        let body = if has_body {
            let open = self.bump();
            fs.open_scope();
            self.block_contents(fs);
            fs.close_scope();
            if self.expect(T::RBrace, "`}` to close the function body").is_err() {
                self.error(Self::span(open), format!("unterminated body of `{name}`"), Some("`}`"));
                return Err(());
            }
            for (label, span) in fs.resolve_labels() {
                self.error(span, format!("undefined label `{label}`"), None);
            }
            Some(fs.take_body())
        } else {
            None
        };
        let _ = start;
        if let Some(Item::Function(f)) = self.module.items.get_mut(item as usize) {
            f.vars = Vec::with_capacity(fs.vars.len());
            f.vars.append(&mut fs.vars);
            f.body = body;
        }
        Ok(())
    }

    fn param_list(&mut self, fs: &mut FnState<'a>, out: &mut Vec<VarId>) -> PResult<()> {
        self.expect(T::LParen, "`(`")?;
        if self.eat(T::RParen) {
            return Ok(());
        }
        loop {
            let space = self.space_word()?;
            let mut p = DeclPrefix { space, ..DeclPrefix::default() };
            self.decl_attributes(&mut p)?;
            if p.ty.is_none() {
                return self.unexpected("a parameter type");
            }
            let name_tok = self.expect(T::Ident, "a parameter name")?;
            let mut decl = p.make(self.text(name_tok), None);
            self.decl_suffix(&mut decl)?;
            out.push(fs.declare(decl));
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.expect(T::RParen, "`)` or `,`")?;
        Ok(())
    }

    fn int_list(&mut self) -> PResult<Vec<u32>> {
        let mut v = vec![self.expect_u32("a number")?];
        while self.eat(T::Comma) {
            v.push(self.expect_u32("a number")?);
        }
        Ok(v)
    }

    fn perf_directives(&mut self) -> PResult<Vec<PerfDirective>> {
        let mut out = Vec::new();
        while self.at(T::Dot) {
            let t = self.tok;
            let d = match self.text(t) {
                ".maxntid" => {
                    self.bump();
                    PerfDirective::Maxntid(self.int_list()?)
                }
                ".reqntid" => {
                    self.bump();
                    PerfDirective::Reqntid(self.int_list()?)
                }
                ".minnctapersm" => {
                    self.bump();
                    PerfDirective::Minnctapersm(self.expect_u32("a number")?)
                }
                ".maxnctapersm" => {
                    self.bump();
                    PerfDirective::Maxnctapersm(self.expect_u32("a number")?)
                }
                ".maxnreg" => {
                    self.bump();
                    PerfDirective::Maxnreg(self.expect_u32("a number")?)
                }
                ".noreturn" => {
                    self.bump();
                    PerfDirective::Noreturn
                }
                ".explicitcluster" => {
                    self.bump();
                    PerfDirective::Explicitcluster
                }
                ".reqnctapercluster" => {
                    self.bump();
                    PerfDirective::Reqnctapercluster(self.int_list()?)
                }
                ".maxclusterrank" => {
                    self.bump();
                    PerfDirective::Maxclusterrank(self.expect_u32("a number")?)
                }
                ".abi_preserve" => {
                    self.bump();
                    PerfDirective::AbiPreserve(self.expect_u32("a number")?)
                }
                ".abi_preserve_control" => {
                    self.bump();
                    PerfDirective::AbiPreserveControl(self.expect_u32("a number")?)
                }
                ".pragma" => {
                    self.bump();
                    let mut strings = Vec::new();
                    loop {
                        let s = self.expect(T::Str, "a string")?;
                        strings.push(unquote(self.text(s)).to_string());
                        if !self.eat(T::Comma) {
                            break;
                        }
                    }
                    self.expect(T::Semi, "`;`")?;
                    PerfDirective::Pragma(strings)
                }
                _ => {
                    return self.unexpected("a performance directive such as `.maxntid`, or `{`");
                }
            };
            out.push(d);
        }
        Ok(out)
    }

    // ---- statements ----------------------------------------------------------

    /// Statements up to (not including) the `}` that closes the block.
    fn block_contents(&mut self, fs: &mut FnState<'a>) {
        loop {
            match self.tok.kind {
                T::RBrace | T::Eof => return,
                _ => {
                    if self.statement(fs).is_err() {
                        self.recover_statement();
                    }
                }
            }
        }
    }

    fn statement(&mut self, fs: &mut FnState<'a>) -> PResult<()> {
        let t = self.tok;
        match t.kind {
            T::LBrace => self.nested(|p| {
                p.bump();
                fs.push_statement(Statement::BlockOpen, Self::span(t));
                fs.open_scope();
                p.block_contents(fs);
                fs.close_scope();
                let close = p.tok;
                if p.expect(T::RBrace, "`}`").is_err() {
                    p.error(Self::span(t), "unterminated block", Some("`}`"));
                    return Err(());
                }
                fs.push_statement(Statement::BlockClose, Self::span(close));
                Ok(())
            }),
            T::Ident if self.peek2().kind == T::Colon => {
                self.bump();
                self.bump();
                let name = self.text(t);
                let Some(id) = fs.label_def(name) else {
                    self.error(Self::span(t), format!("label `{name}` is defined twice"), None);
                    return Err(());
                };
                if self.at_dot(".branchtargets") || self.at_dot(".calltargets") {
                    let kw = self.bump();
                    let calls = self.text(kw) == ".calltargets";
                    let mut ops = Vec::new();
                    loop {
                        let n = self.expect(T::Ident, "a target name")?;
                        let op = if calls {
                            Operand::Global(self.lookup_symbol(n)?)
                        } else {
                            Operand::Label(fs.label_use(self.text(n), Self::span(n)))
                        };
                        ops.push(op);
                        if !self.eat(T::Comma) {
                            break;
                        }
                    }
                    let end = self.expect(T::Semi, "`;` or `,`")?;
                    let targets = push_list(&mut fs.body.operands, &ops);
                    let s =
                        if calls { Statement::CallTargets { label: id, targets } } else { Statement::BranchTargets { label: id, targets } };
                    fs.push_statement(s, Self::span(t).to(Self::span(end)));
                } else if self.at_dot(".callprototype") {
                    self.bump();
                    let proto = self.prototype()?;
                    let end = self.expect(T::Semi, "`;`")?;
                    fs.body.prototypes.push(proto);
                    let p = (fs.body.prototypes.len() - 1) as u32;
                    fs.push_statement(Statement::CallPrototype { label: id, proto: p }, Self::span(t).to(Self::span(end)));
                } else {
                    fs.push_statement(Statement::Label(id), Self::span(t));
                }
                Ok(())
            }
            T::Dot => self.body_directive(fs),
            T::At | T::Ident => self.instruction(fs),
            _ => self.unexpected("an instruction, a label, a declaration or `}`"),
        }
    }

    fn prototype(&mut self) -> PResult<Prototype> {
        let mut returns = Vec::new();
        if self.at(T::LParen) {
            returns = self.proto_params()?;
        }
        let us = self.expect(T::Ident, "`_`")?;
        if self.text(us) != "_" {
            self.error(Self::span(us), "a call prototype is named `_`", Some("`_`"));
            return Err(());
        }
        let params = if self.at(T::LParen) { self.proto_params()? } else { Vec::new() };
        let noreturn = if self.at_dot(".noreturn") {
            self.bump();
            true
        } else {
            false
        };
        Ok(Prototype { returns, params, noreturn })
    }

    fn proto_params(&mut self) -> PResult<Vec<ProtoParam>> {
        self.expect(T::LParen, "`(`")?;
        let mut out = Vec::new();
        if self.eat(T::RParen) {
            return Ok(out);
        }
        loop {
            let space = self.space_word()?;
            let mut p = DeclPrefix { space, ..DeclPrefix::default() };
            self.decl_attributes(&mut p)?;
            let Some(ty) = p.ty else {
                return self.unexpected("a parameter type");
            };
            let n = self.expect(T::Ident, "`_`")?;
            let mut decl = p.make(self.text(n), None);
            self.decl_suffix(&mut decl)?;
            out.push(ProtoParam { space, ty, align: p.align, dims: decl.dims });
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.expect(T::RParen, "`)`")?;
        Ok(out)
    }

    fn body_directive(&mut self, fs: &mut FnState<'a>) -> PResult<()> {
        let t = self.tok;
        let word = self.text(t);
        match word {
            ".loc" => {
                self.bump();
                let file = self.expect_u32("a file number")?;
                let line = self.expect_u32("a line number")?;
                let col_tok = self.tok;
                let column = self.expect_u32("a column number")?;
                // `.loc` ends at the end of the line; anything after the column
                // (`, function_name ..., inlined_at ...`) is kept as text.
                let after = col_tok.end as usize;
                let eol = self.line_end(after);
                let tail = self.src[after..eol].trim();
                let extra = if tail.is_empty() || tail.starts_with("//") {
                    None
                } else {
                    fs.body.strings.push(tail);
                    self.seek(eol);
                    Some((fs.body.strings.len() - 1) as u32)
                };
                fs.push_statement(Statement::Loc { file, line, column, extra }, Self::span(t));
                Ok(())
            }
            ".pragma" => {
                self.bump();
                let s = self.expect(T::Str, "a string")?;
                self.expect(T::Semi, "`;`")?;
                fs.body.strings.push(unquote(self.text(s)));
                let idx = (fs.body.strings.len() - 1) as u32;
                fs.push_statement(Statement::Pragma(idx), Self::span(t));
                Ok(())
            }
            _ => {
                let linkage = self.linkage();
                if !(self.at(T::Dot) && is_variable_space(self.text(self.tok))) {
                    return self.unexpected("a declaration (`.reg`, `.local`, `.shared`, `.param`), `.loc` or `.pragma`");
                }
                // Declarations are frequent: the list is a reused scratch vector.
                let mut decls = std::mem::take(&mut self.scratch_decls);
                decls.clear();
                let r = self.var_decl(linkage, None, &mut decls);
                if r.is_ok() {
                    for (decl, span) in decls.drain(..) {
                        let hoist = matches!(decl.space, StateSpace::Global | StateSpace::Const).then(|| decl.clone());
                        let id = fs.declare(decl);
                        if let Some(decl) = hoist {
                            // Statically allocated: a module variable whose
                            // name only this block sees.
                            let item = self.module.items.len() as u32;
                            let symbol = self.module.symbols.len() as SymbolId;
                            self.module.symbols.push(Symbol { name: decl.name, kind: SymbolKind::Variable, item });
                            self.module.items.push(Item::Variable(Variable { symbol, decl, in_function: true }));
                            self.hoisted_spans.push((symbol, span));
                            fs.hoisted.insert(id, symbol);
                        }
                        fs.push_statement(Statement::Decl(id), span);
                    }
                }
                self.scratch_decls = decls;
                r
            }
        }
    }

    fn instruction(&mut self, fs: &mut FnState<'a>) -> PResult<()> {
        let start = self.tok;
        let guard = if self.eat(T::At) {
            let negate = self.eat(T::Bang);
            let g = self.expect(T::Ident, "a predicate register")?;
            match self.resolve(fs, self.text(g)) {
                Some(Resolved::Reg(reg)) if fs.vars[fs.body.regs[reg as usize].var as usize].ty == Type::Pred => {
                    Some(Guard { reg, negate })
                }
                _ => {
                    self.error(Self::span(g), format!("`{}` is not a declared predicate register", self.text(g)), None);
                    return Err(());
                }
            }
        } else {
            None
        };
        let op_tok = self.expect(T::Ident, "an instruction")?;
        let op_name = self.text(op_tok);
        let Some(op) = Opcode::from_word(op_name) else {
            self.error(Self::span(op_tok), format!("unknown instruction `{op_name}`"), Some("a PTX instruction"));
            return Err(());
        };

        let mut mods = std::mem::take(&mut self.scratch_mods);
        mods.clear();
        let r = self.modifiers(op, &mut mods);
        if r.is_err() {
            self.scratch_mods = mods;
            return Err(());
        }
        let mut args = std::mem::take(&mut self.scratch);
        args.clear();
        let r = self.operands(fs, op, &mut args, &mut mods);
        let result = r.map(|end| {
            // The statement is complete here, so a failed check needs no recovery.
            if self.check_instruction(op, op_tok, &mods, &args, Self::span(start).to(Self::span(end))).is_err() {
                return;
            }
            let mods_range = push_list(&mut fs.body.mods, &mods);
            let args_range = push_list(&mut fs.body.operands, &args);
            let inst = Instruction { guard, op, mods: mods_range, args: args_range };
            fs.push_statement(Statement::Instruction(inst), Self::span(start).to(Self::span(end)));
        });
        self.scratch = args;
        self.scratch_mods = mods;
        result
    }

    fn modifiers(&mut self, op: Opcode, mods: &mut Vec<Modifier>) -> PResult<()> {
        while self.at(T::Dot) {
            let t = self.bump();
            let word = &self.text(t)[1..];
            match validate::classify(op, word) {
                Some(m) => mods.push(m),
                None => {
                    self.error(Self::span(t), format!("unknown modifier `.{word}` for `{op}`"), Some("a PTX modifier"));
                    return Err(());
                }
            }
        }
        Ok(())
    }

    fn check_instruction(&mut self, op: Opcode, op_tok: Token, mods: &[Modifier], args: &[Operand], span: Span) -> PResult<()> {
        let (min, max) = validate::operand_count(op);
        if args.len() < min || args.len() > max {
            let want = if min == max { format!("{min}") } else { format!("{min} to {max}") };
            self.error(span, format!("wrong operand count: `{op}` takes {want} operands, found {}", args.len()), None);
            return Err(());
        }
        let has_type = mods.iter().any(|m| matches!(m, Modifier::Type(_)));
        if !has_type && validate::requires_type(op, mods) {
            self.error(Self::span(op_tok), format!("`{op}` needs a type modifier such as `.u32`"), Some("a type modifier"));
            return Err(());
        }
        let int_type = mods.iter().any(|m| matches!(m, Modifier::Type(t) if t.is_integer()));
        if let Some(Modifier::Round(r)) = mods.iter().find(|m| matches!(m, Modifier::Round(_))) {
            if validate::rejects_rounding(op, int_type) {
                self.error(Self::span(op_tok), format!("rounding modifier `.{r}` is not valid for integer `{op}`"), None);
                return Err(());
            }
        }
        Ok(())
    }

    /// Operands up to and including the `;`; returns the `;` token.
    fn operands(&mut self, fs: &mut FnState<'a>, op: Opcode, args: &mut Vec<Operand>, mods: &mut Vec<Modifier>) -> PResult<Token> {
        if self.at(T::Semi) {
            return Ok(self.bump());
        }
        let mut have_callee = false;
        loop {
            let index = args.len();
            let ctx = match op {
                Opcode::Bra => NameCtx::Label,
                Opcode::Brx if index == 1 => NameCtx::Label,
                Opcode::Call if !self.at(T::LParen) => {
                    if have_callee {
                        NameCtx::Label
                    } else {
                        have_callee = true;
                        NameCtx::Callee
                    }
                }
                _ => NameCtx::Value,
            };
            let o = if op == Opcode::Call && self.at(T::LParen) {
                let open = self.bump();
                let list = self.list(fs, T::RParen, Self::span(open))?;
                Operand::Paren(list)
            } else {
                self.operand(fs, ctx)?
            };
            args.push(o);
            // `ld.global.u32 d, [a].unified`: kept as the last modifier.
            if op == Opcode::Ld && o.address().is_some() && self.at_dot(".unified") {
                self.bump();
                mods.push(Modifier::Flag(Flag::Unified));
            }
            if !self.eat(T::Comma) {
                break;
            }
        }
        self.expect(T::Semi, "`,` or `;`")
    }

    /// Elements up to `close`, pushed contiguously into the operand arena.
    fn list(&mut self, fs: &mut FnState<'a>, close: T, open: Span) -> PResult<ListRange> {
        self.nested(|p| p.list_inner(fs, close, open))
    }

    fn list_inner(&mut self, fs: &mut FnState<'a>, close: T, open: Span) -> PResult<ListRange> {
        let mut items = Vec::new();
        if !self.at(close) {
            loop {
                items.push(self.operand(fs, NameCtx::Value)?);
                if !self.eat(T::Comma) {
                    break;
                }
            }
        }
        if !self.at(close) {
            let what = if close == T::RParen { "`)` or `,`" } else { "`}` or `,`" };
            let r = self.unexpected(what);
            self.error(open, "unclosed list", None);
            return r;
        }
        self.bump();
        Ok(push_list(&mut fs.body.operands, &items))
    }

    fn operand(&mut self, fs: &mut FnState<'a>, ctx: NameCtx) -> PResult<Operand> {
        let t = self.tok;
        match t.kind {
            T::Ident => {
                let name = self.text(t);
                if name == WARP_SZ && ctx == NameCtx::Value && self.resolve(fs, name).is_none() {
                    return Ok(Operand::Imm(self.const_expr()?));
                }
                self.bump();
                if name == "_" {
                    if self.eat(T::Pipe) {
                        return Ok(Operand::SinkPred(self.pipe_register(fs)?));
                    }
                    return Ok(Operand::Sink);
                }
                if ctx == NameCtx::Label {
                    return Ok(Operand::Label(fs.label_use(name, Self::span(t))));
                }
                match self.resolve(fs, name) {
                    Some(Resolved::Reg(r)) => {
                        if self.eat(T::Pipe) {
                            return Ok(Operand::PredPair(r, self.pipe_register(fs)?));
                        }
                        let n = fs.vector_len(r);
                        if self.at(T::Dot) {
                            let word = &self.text(self.tok)[1..];
                            if let Some(c) = component(word) {
                                if n != 0 {
                                    if c >= n {
                                        self.error(
                                            Self::span(self.tok),
                                            format!("`{name}` has {n} elements"),
                                            Some(if n == 2 { "`.x` or `.y`" } else { "`.x`, `.y`, `.z` or `.w`" }),
                                        );
                                        return Err(());
                                    }
                                    self.bump();
                                    return Ok(Operand::Reg(fs.element_id(r, c)));
                                }
                                self.bump();
                                return Ok(Operand::RegComponent(r, c));
                            }
                            if let Some(sel) = Selector::from_word(word) {
                                self.bump();
                                return Ok(Operand::Video { reg: r, neg: false, sel });
                            }
                        }
                        if n != 0 {
                            // A whole vector register: the list of its elements.
                            let elems: Vec<Operand> = (0..n).map(|e| Operand::Reg(fs.element_id(r, e))).collect();
                            return Ok(Operand::Vector(push_list(&mut fs.body.operands, &elems)));
                        }
                        Ok(Operand::Reg(r))
                    }
                    Some(Resolved::Special(s)) => {
                        if s.is_vector() {
                            let c = self.tok;
                            let comp = (c.kind == T::Dot).then(|| component(&self.text(c)[1..])).flatten();
                            match comp {
                                Some(comp) if comp < 3 => {
                                    self.bump();
                                    Ok(Operand::Special(s, comp))
                                }
                                _ => {
                                    self.error(Self::span(c), format!("`{name}` needs a component"), Some("`.x`, `.y` or `.z`"));
                                    Err(())
                                }
                            }
                        } else {
                            Ok(Operand::Special(s, 0))
                        }
                    }
                    Some(Resolved::Var(v)) => match self.value_offset()? {
                        0 => Ok(Operand::Var(v)),
                        off => Ok(Operand::VarOffset(v, off)),
                    },
                    Some(Resolved::Global(g)) => match self.value_offset()? {
                        0 => Ok(Operand::Global(g)),
                        off => Ok(Operand::GlobalOffset(g, off)),
                    },
                    None => {
                        self.error(Self::span(t), format!("undeclared identifier `{name}`"), None);
                        Err(())
                    }
                }
            }
            T::Int => {
                // Fast path for a plain integer.
                let next = self.peek2().kind;
                if matches!(next, T::Comma | T::Semi | T::RBrace | T::RBracket | T::RParen) {
                    self.bump();
                    return self.int_token_value(t).map(Operand::Imm);
                }
                Ok(Operand::Imm(self.const_expr()?))
            }
            T::Float => {
                self.bump();
                self.float_operand(t, false)
            }
            T::Minus if self.peek2().kind == T::Float => {
                self.bump();
                let f = self.bump();
                self.float_operand(f, true)
            }
            T::Minus
                if self.peek2().kind == T::Ident && {
                    let next = self.peek2();
                    self.text(next) != WARP_SZ
                } =>
            {
                // `-%r1`: a negated source of `vmad`.
                self.bump();
                let r = self.bump();
                let Some(Resolved::Reg(reg)) = self.resolve(fs, self.text(r)) else {
                    self.error(Self::span(r), "only a register can be negated", Some("a register"));
                    return Err(());
                };
                let mut sel = Selector::NONE;
                if self.at(T::Dot) {
                    if let Some(s) = Selector::from_word(&self.text(self.tok)[1..]) {
                        self.bump();
                        sel = s;
                    }
                }
                Ok(Operand::Video { reg, neg: true, sel })
            }
            T::Bang if self.peek2().kind == T::Ident => {
                self.bump();
                let r = self.bump();
                match self.resolve(fs, self.text(r)) {
                    Some(Resolved::Reg(reg)) => Ok(Operand::NotReg(reg)),
                    _ => {
                        self.error(Self::span(r), format!("`{}` is not a declared predicate register", self.text(r)), None);
                        Err(())
                    }
                }
            }
            T::Minus | T::Tilde | T::Bang | T::LParen | T::Plus => Ok(Operand::Imm(self.const_expr()?)),
            T::LBrace => {
                self.bump();
                let list = self.list(fs, T::RBrace, Self::span(t))?;
                if self.eat(T::Pipe) {
                    return Ok(Operand::VectorPred(list, self.pipe_register(fs)?));
                }
                Ok(Operand::Vector(list))
            }
            T::LBracket => {
                self.bump();
                self.bracket(fs, t)
            }
            _ => self.unexpected("an operand"),
        }
    }

    /// The register after `|` in `d|p`.
    fn pipe_register(&mut self, fs: &mut FnState<'a>) -> PResult<RegId> {
        let p = self.expect(T::Ident, "a predicate register")?;
        match self.resolve(fs, self.text(p)) {
            Some(Resolved::Reg(p)) => Ok(p),
            _ => {
                self.error(Self::span(p), format!("`{}` is not a declared register", self.text(p)), None);
                Err(())
            }
        }
    }

    /// `+ const` or `- const` after a symbol used as a value (`arr+8`), or 0.
    fn value_offset(&mut self) -> PResult<i64> {
        if !(self.at(T::Plus) || self.at(T::Minus)) {
            return Ok(0);
        }
        let neg = self.bump().kind == T::Minus;
        if self.at(T::Ident) && self.text(self.tok) != WARP_SZ {
            self.error(Self::span(self.tok), "a symbol's offset is a constant", Some("a constant offset"));
            return Err(());
        }
        let v = self.const_expr()?;
        Ok(if neg { v.wrapping_neg() } else { v })
    }

    fn int_token_value(&mut self, t: Token) -> PResult<i64> {
        match int_value(self.text(t)) {
            Some(v) => Ok(v),
            None => {
                self.error(Self::span(t), "integer literal out of range", None);
                Err(())
            }
        }
    }

    fn float_operand(&mut self, t: Token, neg: bool) -> PResult<Operand> {
        match float_value(self.text(t)) {
            Some(FloatValue::F32(b)) => Ok(Operand::F32(if neg { b ^ 0x8000_0000 } else { b })),
            Some(FloatValue::F64(b)) => Ok(Operand::F64(if neg { b ^ (1 << 63) } else { b })),
            None => {
                self.error(Self::span(t), "malformed float literal", Some("`0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX` or a decimal"));
                Err(())
            }
        }
    }

    /// After `[`: an address (`[%rd+8]`, `[var]`, `[16]`) or, with commas, a
    /// texture/surface operand list.
    fn bracket(&mut self, fs: &mut FnState<'a>, open: Token) -> PResult<Operand> {
        if self.at(T::Ident) && !matches!(self.peek2().kind, T::Comma) {
            let t = self.bump();
            let name = self.text(t);
            let base = match self.resolve(fs, name) {
                Some(Resolved::Reg(r)) => AddrBase::Reg(r),
                Some(Resolved::Var(v)) => AddrBase::Var(v),
                Some(Resolved::Global(g)) => AddrBase::Global(g),
                Some(Resolved::Special(_)) => {
                    self.error(Self::span(t), "a special register cannot be an address", None);
                    return Err(());
                }
                None => {
                    self.error(Self::span(t), format!("undeclared identifier `{name}`"), None);
                    return Err(());
                }
            };
            let offset = if self.at(T::Plus) || self.at(T::Minus) {
                let neg = self.bump().kind == T::Minus;
                if self.at(T::Ident) {
                    self.error(
                        Self::span(self.tok),
                        "an address is a register or symbol plus a constant offset",
                        Some("a constant offset"),
                    );
                    return Err(());
                }
                let v = self.const_expr()?;
                if neg {
                    v.wrapping_neg()
                } else {
                    v
                }
            } else {
                0
            };
            self.expect(T::RBracket, "`]`")?;
            return Ok(match base {
                AddrBase::Reg(r) => Operand::AddrReg(r, offset),
                AddrBase::Var(v) => Operand::AddrVar(v, offset),
                AddrBase::Global(g) => Operand::AddrGlobal(g, offset),
                AddrBase::None => Operand::AddrImm(offset),
            });
        }
        if matches!(self.tok.kind, T::Int | T::Minus | T::LParen | T::Tilde) {
            let v = self.const_expr()?;
            self.expect(T::RBracket, "`]`")?;
            return Ok(Operand::AddrImm(v));
        }
        Ok(Operand::Bracket(self.list(fs, T::RBracket, Self::span(open))?))
    }

    fn resolve(&mut self, fs: &mut FnState<'a>, name: &'a str) -> Option<Resolved> {
        if let Some(r) = fs.reg_cache.get(name) {
            return Some(Resolved::Reg(r));
        }
        if let Some(v) = fs.scope.get(name) {
            if let Some(&s) = fs.hoisted.get(&v) {
                return Some(Resolved::Global(s));
            }
            let decl = &fs.vars[v as usize];
            if decl.space == StateSpace::Reg && decl.count.is_none() {
                let r = fs.reg_id(v, NO_INDEX);
                fs.reg_cache.insert(name, r);
                return Some(Resolved::Reg(r));
            }
            if decl.count.is_none() {
                return Some(Resolved::Var(v));
            }
        }
        // `%r17` names member 17 of a `%r<N>` declaration.
        let digits = name.len() - name.bytes().rev().take_while(|b| b.is_ascii_digit()).count();
        if digits < name.len() && digits > 0 {
            let (prefix, num) = name.split_at(digits);
            if num.len() == 1 || !num.starts_with('0') {
                if let (Some(v), Ok(index)) = (fs.scope.get(prefix), num.parse::<u32>()) {
                    if let Some(count) = fs.vars[v as usize].count {
                        if index < count {
                            let r = fs.reg_id(v, index);
                            fs.reg_cache.insert(name, r);
                            return Some(Resolved::Reg(r));
                        }
                    }
                }
            }
        }
        if let Some(s) = self.symbols.get(name) {
            return Some(Resolved::Global(s));
        }
        SpecialReg::from_name(name).map(Resolved::Special)
    }

    // ---- constant expressions ---------------------------------------------------

    fn const_expr(&mut self) -> PResult<i64> {
        self.nested(Self::ternary)
    }

    fn ternary(&mut self) -> PResult<i64> {
        let c = self.binary(0)?;
        if self.eat(T::Question) {
            let a = self.const_expr()?;
            self.expect(T::Colon, "`:`")?;
            let b = self.const_expr()?;
            return Ok(if c != 0 { a } else { b });
        }
        Ok(c)
    }

    fn binary(&mut self, min_prec: u8) -> PResult<i64> {
        let mut lhs = self.unary()?;
        loop {
            let (prec, kind) = match self.tok.kind {
                T::OrOr => (1, T::OrOr),
                T::AndAnd => (2, T::AndAnd),
                T::Pipe => (3, T::Pipe),
                T::Caret => (4, T::Caret),
                T::Amp => (5, T::Amp),
                T::EqEq | T::NotEq => (6, self.tok.kind),
                T::Lt | T::Gt | T::Le | T::Ge => (7, self.tok.kind),
                T::Shl | T::Shr => (8, self.tok.kind),
                T::Plus | T::Minus => (9, self.tok.kind),
                T::Star | T::Slash | T::Percent => (10, self.tok.kind),
                _ => return Ok(lhs),
            };
            if prec < min_prec {
                return Ok(lhs);
            }
            let op_tok = self.bump();
            let rhs = self.binary(prec + 1)?;
            lhs = match kind {
                T::OrOr => ((lhs != 0) || (rhs != 0)) as i64,
                T::AndAnd => ((lhs != 0) && (rhs != 0)) as i64,
                T::Pipe => lhs | rhs,
                T::Caret => lhs ^ rhs,
                T::Amp => lhs & rhs,
                T::EqEq => (lhs == rhs) as i64,
                T::NotEq => (lhs != rhs) as i64,
                T::Lt => (lhs < rhs) as i64,
                T::Gt => (lhs > rhs) as i64,
                T::Le => (lhs <= rhs) as i64,
                T::Ge => (lhs >= rhs) as i64,
                T::Shl => lhs.wrapping_shl(rhs as u32),
                T::Shr => lhs.wrapping_shr(rhs as u32),
                T::Plus => lhs.wrapping_add(rhs),
                T::Minus => lhs.wrapping_sub(rhs),
                T::Star => lhs.wrapping_mul(rhs),
                T::Slash | T::Percent => {
                    if rhs == 0 {
                        self.error(Self::span(op_tok), "division by zero in a constant expression", None);
                        return Err(());
                    }
                    if kind == T::Slash {
                        lhs.wrapping_div(rhs)
                    } else {
                        lhs.wrapping_rem(rhs)
                    }
                }
                _ => lhs,
            };
        }
    }

    fn unary(&mut self) -> PResult<i64> {
        self.nested(Self::unary_inner)
    }

    fn unary_inner(&mut self) -> PResult<i64> {
        match self.tok.kind {
            T::Minus => {
                self.bump();
                Ok(self.unary()?.wrapping_neg())
            }
            T::Plus => {
                self.bump();
                self.unary()
            }
            T::Tilde => {
                self.bump();
                Ok(!self.unary()?)
            }
            T::Bang => {
                self.bump();
                Ok((self.unary()? == 0) as i64)
            }
            T::LParen => {
                self.bump();
                let v = self.const_expr()?;
                self.expect(T::RParen, "`)`")?;
                Ok(v)
            }
            T::Int => {
                let t = self.bump();
                self.int_token_value(t)
            }
            T::Ident if self.text(self.tok) == WARP_SZ => {
                self.bump();
                Ok(32)
            }
            _ => self.unexpected("a constant"),
        }
    }
}

/// What precedes a declared name: space, type and attributes.
#[derive(Default)]
struct DeclPrefix<'a> {
    space: StateSpace,
    ty: Option<Type>,
    vector: u8,
    align: Option<u32>,
    ptr: Option<PtrAttr>,
    attributes: Vec<&'a str>,
}

// The vocabulary macro defines the enum, so the default cannot be derived there.
#[allow(clippy::derivable_impls)]
impl Default for StateSpace {
    fn default() -> StateSpace {
        StateSpace::Reg
    }
}

impl<'a> DeclPrefix<'a> {
    fn make(&self, name: &'a str, linkage: Option<Linkage>) -> VarDecl<'a> {
        VarDecl {
            name,
            linkage,
            space: self.space,
            ty: self.ty.unwrap_or(Type::B8),
            vector: self.vector,
            align: self.align,
            dims: Vec::new(),
            count: None,
            ptr: self.ptr,
            attributes: self.attributes.clone(),
            init: None,
        }
    }
}

fn push_list<X: Copy>(arena: &mut Vec<X>, items: &[X]) -> ListRange {
    let start = arena.len() as u32;
    arena.extend_from_slice(items);
    ListRange { start, len: items.len() as u32 }
}

fn component(word: &str) -> Option<u8> {
    match word {
        "x" | "r" => Some(0),
        "y" | "g" => Some(1),
        "z" | "b" => Some(2),
        "w" | "a" => Some(3),
        _ => None,
    }
}

fn unquote(s: &str) -> &str {
    s.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(s)
}

/// Fields of `.samplerref` and `.texref` initializers.
fn is_field_name(f: Flag) -> bool {
    use Flag::*;
    matches!(
        f,
        FilterMode
            | AddrMode0
            | AddrMode1
            | AddrMode2
            | NormalizedCoords
            | ForceUnnormalizedCoords
            | WidthQ
            | HeightQ
            | DepthQ
            | ChannelDataType
            | ChannelOrder
            | ArraySize
            | NumMipmapLevels
            | NumSamples
    )
}

fn is_field_value(f: Flag) -> bool {
    use Flag::*;
    matches!(f, Nearest | Linear | Wrap | Mirror | ClampOgl | ClampToEdge | ClampToBorder | Clamp)
}

fn is_variable_space(word: &str) -> bool {
    matches!(word, ".global" | ".const" | ".shared" | ".local" | ".reg" | ".param" | ".tex" | ".sreg")
        || word.starts_with(".shared::")
        || word.starts_with(".param::")
}

fn is_module_directive(word: &str) -> bool {
    matches!(
        word,
        ".version"
            | ".target"
            | ".address_size"
            | ".file"
            | ".section"
            | ".entry"
            | ".func"
            | ".visible"
            | ".extern"
            | ".weak"
            | ".common"
            | ".global"
            | ".const"
            | ".shared"
            | ".pragma"
            | ".alias"
    )
}
