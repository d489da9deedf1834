//! The C++ expressions of PyTorch's formulas: tokens, syntax tree and parser.
//!
//! The grammar is the expression subset derivatives.yaml uses: literals, names with `::`
//! qualifiers, calls (with template arguments for the standard templates: `std::get<0>(t)`,
//! `std::tuple<Tensor, Tensor>()`), member calls with `.` and `->`, indexing, brace lists,
//! unary `-` `!`, binary operators with C++ precedence, `?:`, and capture-less lambdas
//! (`[](c10::SymInt i){return -i;}`). Comments (`/*transposed=*/`) are skipped. Every node
//! keeps the byte offset where it starts, so an error names its place in the formula.

use std::fmt;

/// A lexical token with its byte offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Byte offset of its first character in the formula.
    pub offset: usize,
}

/// Token kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    /// An identifier or keyword.
    Ident(String),
    /// An integer literal (suffixes dropped).
    Int(String),
    /// A floating literal (`2.`, `0.5`, `1e-3`; suffix dropped).
    Float(String),
    /// A string literal, with its quotes.
    Str(String),
    /// Punctuation: `::`, `->`, `&&`, `<=`, `(`, ...
    Punct(&'static str),
}

/// A syntax error: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset in the formula.
    pub offset: usize,
    /// The reason.
    pub message: String,
}

const PUNCTS: &[&str] = &[
    "::", "->", "&&", "||", "<=", ">=", "==", "!=", "<<", ">>", "(", ")", "[", "]", "{", "}", "<",
    ">", ".", ",", "?", ":", "+", "-", "*", "/", "%", "!", "&", "|", "^", ";", "=", "~",
];

/// Split a formula into tokens.
pub fn lex(text: &str) -> Result<Vec<Token>, SyntaxError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").ok_or_else(|| SyntaxError {
                offset: i,
                message: "unterminated comment".into(),
            })?;
            i += end + 4;
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |e| i + e);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = scan(b, i, |c| c.is_ascii_alphanumeric() || c == b'_');
            out.push(tok(TokenKind::Ident(text[i..end].into()), i));
            i = end;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let (kind, end) = lex_number(text, i);
            out.push(tok(kind, i));
            i = end;
        } else if c == b'"' {
            let end = lex_string(text, i)?;
            out.push(tok(TokenKind::Str(text[i..end].into()), i));
            i = end;
        } else if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            out.push(tok(TokenKind::Punct(p), i));
            i += p.len();
        } else {
            return Err(SyntaxError {
                offset: i,
                message: format!(
                    "unexpected character `{}`",
                    &text[i..].chars().next().unwrap()
                ),
            });
        }
    }
    Ok(out)
}

fn tok(kind: TokenKind, offset: usize) -> Token {
    Token { kind, offset }
}

fn scan(b: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && f(b[i]) {
        i += 1;
    }
    i
}

fn lex_number(text: &str, start: usize) -> (TokenKind, usize) {
    let b = text.as_bytes();
    let mut i = scan(b, start, |c| c.is_ascii_digit());
    let mut float = false;
    if b.get(i) == Some(&b'.') {
        float = true;
        i = scan(b, i + 1, |c| c.is_ascii_digit());
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            float = true;
            i = scan(b, j, |c| c.is_ascii_digit());
        }
    }
    let digits = text[start..i].to_string();
    // Suffixes: `1.0f`, `2L`, `3u`.
    let end = scan(b, i, |c| {
        matches!(c, b'f' | b'F' | b'l' | b'L' | b'u' | b'U')
    });
    let kind = if float {
        TokenKind::Float(digits)
    } else {
        TokenKind::Int(digits)
    };
    (kind, end)
}

fn lex_string(text: &str, start: usize) -> Result<usize, SyntaxError> {
    let b = text.as_bytes();
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err(SyntaxError {
        offset: start,
        message: "unterminated string literal".into(),
    })
}

/// A C++ type as written in a template argument or a lambda parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeName {
    /// The qualified name (`c10::SymInt`, `Tensor`, `std::optional`).
    pub name: String,
    /// Template arguments.
    pub args: Vec<TemplateArg>,
}

/// A template argument: a type or an integer constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateArg {
    /// A type.
    Type(TypeName),
    /// A constant (`std::get<0>`).
    Int(i64),
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if !self.args.is_empty() {
            f.write_str("<")?;
            for (i, a) in self.args.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                match a {
                    TemplateArg::Type(t) => write!(f, "{t}")?,
                    TemplateArg::Int(n) => write!(f, "{n}")?,
                }
            }
            f.write_str(">")?;
        }
        Ok(())
    }
}

/// An expression node and its offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// The node.
    pub kind: ExprKind,
    /// Byte offset of its first token.
    pub offset: usize,
}

/// Expression nodes.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// A name, qualifiers kept: `grad`, `at::where`, `c10::kJagged`, `::std::nullopt`.
    Name(String),
    /// A name with template arguments: `std::get<0>`, `std::tuple<Tensor, Tensor>`.
    Template(TypeName),
    /// An integer literal.
    Int(String),
    /// A floating literal.
    Float(String),
    /// A string literal, with quotes.
    Str(String),
    /// `callee(args)`.
    Call(Box<Expr>, Vec<Expr>),
    /// `object.name` (`arrow`: `object->name`).
    Member(Box<Expr>, String, bool),
    /// `object[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `{a, b}`.
    Brace(Vec<Expr>),
    /// A prefix operator: `-`, `!`, `+`.
    Unary(&'static str, Box<Expr>),
    /// A binary operator.
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `[](T x){ return body; }`.
    Lambda(Vec<(TypeName, String)>, Box<Expr>),
}

/// The templates whose name is followed by `<` as a template argument list.
const TEMPLATES: &[&str] = &[
    "get",
    "tuple",
    "vector",
    "optional",
    "array",
    "static_cast",
    "ArrayRef",
    "OptionalArrayRef",
    "make_tuple",
    "List",
    "where",
];

/// Parse a C++ type at the start of `toks` (`const at::Tensor&`); returns it and the number
/// of tokens it took.
pub fn parse_type(toks: &[Token]) -> Result<(TypeName, usize), SyntaxError> {
    let mut p = Parser {
        toks: toks.to_vec(),
        pos: 0,
        end: toks.last().map_or(0, |t| t.offset + 1),
    };
    let t = p.type_name()?;
    Ok((t, p.pos))
}

/// Parse a formula into an expression.
pub fn parse(text: &str) -> Result<Expr, SyntaxError> {
    let toks = lex(text)?;
    let mut p = Parser {
        toks,
        pos: 0,
        end: text.len(),
    };
    let e = p.expr()?;
    if let Some(t) = p.toks.get(p.pos) {
        return Err(SyntaxError {
            offset: t.offset,
            message: format!("unexpected `{}` after the expression", show(&t.kind)),
        });
    }
    Ok(e)
}

/// A token's text.
pub fn show(k: &TokenKind) -> String {
    match k {
        TokenKind::Ident(s) | TokenKind::Int(s) | TokenKind::Float(s) | TokenKind::Str(s) => {
            s.clone()
        }
        TokenKind::Punct(p) => (*p).to_string(),
    }
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    end: usize,
}

/// Binary operators by C++ precedence level, loosest first.
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser {
    fn peek(&self) -> Option<&TokenKind> {
        self.toks.get(self.pos).map(|t| &t.kind)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.offset)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(TokenKind::Punct(q)) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn expect(&mut self, p: &str) -> Result<(), SyntaxError> {
        if self.eat(p) {
            return Ok(());
        }
        let found = self
            .peek()
            .map_or("the end".into(), |k| format!("`{}`", show(k)));
        Err(self.error(format!("expected `{p}`, found {found}")))
    }

    fn error(&self, message: String) -> SyntaxError {
        SyntaxError {
            offset: self.offset(),
            message,
        }
    }

    fn expr(&mut self) -> Result<Expr, SyntaxError> {
        let offset = self.offset();
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.expr()?;
        self.expect(":")?;
        let b = self.expr()?;
        Ok(Expr {
            kind: ExprKind::Cond(Box::new(c), Box::new(a), Box::new(b)),
            offset,
        })
    }

    fn binary(&mut self, level: usize) -> Result<Expr, SyntaxError> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let offset = self.offset();
        let mut l = self.binary(level + 1)?;
        while let Some(TokenKind::Punct(p)) = self.peek() {
            let Some(op) = LEVELS[level].iter().find(|o| *o == p) else {
                break;
            };
            self.pos += 1;
            let r = self.binary(level + 1)?;
            l = Expr {
                kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
                offset,
            };
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        let offset = self.offset();
        for op in ["-", "!", "+", "*"] {
            if self.eat(op) {
                let e = self.unary()?;
                return Ok(Expr {
                    kind: ExprKind::Unary(op, Box::new(e)),
                    offset,
                });
            }
        }
        let e = self.primary()?;
        self.postfix(e)
    }

    fn postfix(&mut self, mut e: Expr) -> Result<Expr, SyntaxError> {
        loop {
            let offset = e.offset;
            let kind = if self.eat("(") {
                ExprKind::Call(Box::new(e), self.list(")")?)
            } else if self.eat("[") {
                let i = self.expr()?;
                self.expect("]")?;
                ExprKind::Index(Box::new(e), Box::new(i))
            } else if self.is(".") || self.is("->") {
                let arrow = self.is("->");
                self.pos += 1;
                let Some(TokenKind::Ident(name)) = self.peek().cloned() else {
                    return Err(self.error("expected a member name".into()));
                };
                self.pos += 1;
                ExprKind::Member(Box::new(e), name, arrow)
            } else {
                return Ok(e);
            };
            e = Expr { kind, offset };
        }
    }

    /// Comma-separated expressions up to `close` (consumed).
    fn list(&mut self, close: &str) -> Result<Vec<Expr>, SyntaxError> {
        let mut v = Vec::new();
        while !self.eat(close) {
            if !v.is_empty() {
                self.expect(",")?;
                if self.eat(close) {
                    break;
                }
            }
            v.push(self.expr()?);
        }
        Ok(v)
    }

    fn primary(&mut self) -> Result<Expr, SyntaxError> {
        let offset = self.offset();
        let Some(t) = self.peek().cloned() else {
            return Err(self.error("expected an expression, found the end".into()));
        };
        let kind = match t {
            TokenKind::Int(s) => {
                self.pos += 1;
                ExprKind::Int(s)
            }
            TokenKind::Float(s) => {
                self.pos += 1;
                ExprKind::Float(s)
            }
            TokenKind::Str(s) => {
                self.pos += 1;
                ExprKind::Str(s)
            }
            TokenKind::Ident(_) | TokenKind::Punct("::") => return self.name(),
            TokenKind::Punct("(") => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            TokenKind::Punct("{") => {
                self.pos += 1;
                ExprKind::Brace(self.list("}")?)
            }
            TokenKind::Punct("[") => return self.lambda(),
            other => return Err(self.error(format!("unexpected `{}`", show(&other)))),
        };
        Ok(Expr { kind, offset })
    }

    /// A qualified name, with template arguments when it names a known template.
    fn name(&mut self) -> Result<Expr, SyntaxError> {
        let offset = self.offset();
        let name = self.qualified()?;
        let last = name.rsplit("::").next().unwrap_or(&name);
        if TEMPLATES.contains(&last) && self.is("<") {
            self.pos += 1;
            let args = self.template_args()?;
            return Ok(Expr {
                kind: ExprKind::Template(TypeName { name, args }),
                offset,
            });
        }
        Ok(Expr {
            kind: ExprKind::Name(name),
            offset,
        })
    }

    fn qualified(&mut self) -> Result<String, SyntaxError> {
        let mut name = String::new();
        if self.eat("::") {
            name.push_str("::");
        }
        loop {
            let Some(TokenKind::Ident(id)) = self.peek().cloned() else {
                return Err(self.error("expected a name".into()));
            };
            self.pos += 1;
            name.push_str(&id);
            if !self.eat("::") {
                return Ok(name);
            }
            name.push_str("::");
        }
    }

    /// After `<`: arguments up to `>` (consumed).
    fn template_args(&mut self) -> Result<Vec<TemplateArg>, SyntaxError> {
        let mut v = Vec::new();
        while !self.close_angle() {
            if !v.is_empty() {
                self.expect(",")?;
            }
            if let Some(TokenKind::Int(n)) = self.peek().cloned() {
                self.pos += 1;
                let n = n
                    .parse()
                    .map_err(|_| self.error(format!("bad constant `{n}`")))?;
                v.push(TemplateArg::Int(n));
            } else {
                v.push(TemplateArg::Type(self.type_name()?));
            }
        }
        Ok(v)
    }

    /// Consume a `>` closing a template argument list (half of a `>>`).
    fn close_angle(&mut self) -> bool {
        if self.is(">>") {
            let t = &mut self.toks[self.pos];
            t.kind = TokenKind::Punct(">");
            t.offset += 1;
            return true;
        }
        self.eat(">")
    }

    fn type_name(&mut self) -> Result<TypeName, SyntaxError> {
        while matches!(self.peek(), Some(TokenKind::Ident(k)) if k == "const") {
            self.pos += 1;
        }
        let name = self.qualified()?;
        let args = if self.eat("<") {
            self.template_args()?
        } else {
            Vec::new()
        };
        loop {
            if matches!(self.peek(), Some(TokenKind::Ident(k)) if k == "const") {
                self.pos += 1;
            } else if !(self.eat("&&") || self.eat("&") || self.eat("*")) {
                break;
            }
        }
        Ok(TypeName { name, args })
    }

    /// `[](T a, U b){ return e; }` (captures are ignored: formulas capture nothing).
    fn lambda(&mut self) -> Result<Expr, SyntaxError> {
        let offset = self.offset();
        self.expect("[")?;
        while !self.eat("]") {
            self.pos += 1;
            if self.pos >= self.toks.len() {
                return Err(self.error("unclosed lambda capture".into()));
            }
        }
        self.expect("(")?;
        let mut params = Vec::new();
        while !self.eat(")") {
            if !params.is_empty() {
                self.expect(",")?;
            }
            let ty = self.type_name()?;
            let Some(TokenKind::Ident(n)) = self.peek().cloned() else {
                return Err(self.error("expected a parameter name".into()));
            };
            self.pos += 1;
            params.push((ty, n));
        }
        self.expect("{")?;
        if !matches!(self.peek(), Some(TokenKind::Ident(k)) if k == "return") {
            return Err(self.error("a lambda body must be `return EXPR;`".into()));
        }
        self.pos += 1;
        let body = self.expr()?;
        self.eat(";");
        self.expect("}")?;
        Ok(Expr {
            kind: ExprKind::Lambda(params, Box::new(body)),
            offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Expr {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    #[test]
    fn precedence_and_postfix() {
        let e = p("grad * other + self.sgn()");
        let ExprKind::Binary("+", l, r) = e.kind else {
            panic!()
        };
        assert!(matches!(l.kind, ExprKind::Binary("*", _, _)));
        assert!(matches!(r.kind, ExprKind::Call(..)));
        assert_eq!(r.offset, 15);
    }

    #[test]
    fn templates_comments_lambdas() {
        let e = p("std::get<0>(f(x, /*transposed=*/ false, {{1, 1}}))");
        let ExprKind::Call(c, args) = e.kind else {
            panic!()
        };
        assert!(matches!(&c.kind, ExprKind::Template(t) if t.to_string() == "std::get<0>"));
        assert_eq!(args.len(), 1);
        p("std::tuple<Tensor, Tensor, Tensor>()");
        p("fmap(reverse_list_symint(shifts), [](c10::SymInt i){return -i;})");
        p("grads[0].defined() ? (a < b ? x : y) : ::std::nullopt");
        p("bias->sym_sizes()");
        p("(2. * result).masked_fill_(result == 0, 0)");
    }

    #[test]
    fn errors_are_located() {
        let e = parse("grad * (other").unwrap_err();
        assert_eq!(e.offset, 13);
        assert!(e.message.contains("expected `)`"), "{e:?}");
        let e = parse("grad $ 2").unwrap_err();
        assert_eq!(e.offset, 5);
        let e = parse("f(\"abc)").unwrap_err();
        assert_eq!(e.offset, 2);
    }
}
