//! C++ function declarations: the helpers a formula may call, read from a header such as
//! PyTorch's `FunctionsManual.h`.
//!
//! Only declarations are read: preprocessor lines are dropped, `namespace` braces are
//! transparent, `struct`/`class` bodies and function bodies are skipped, and each remaining
//! `RET name(PARAMS);` (with `TORCH_API`, `inline`, `template <typename T>` allowed) becomes a
//! [`Decl`]. A header line that is not such a declaration is an error naming its line.

use super::syntax::{SyntaxError, Token, TokenKind, lex, parse_type, show};
use super::types::{Ty, from_cpp};
use crate::names::rust_name;

/// One declared function.
#[derive(Debug, Clone, PartialEq)]
pub struct Decl {
    /// Its name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Its return type.
    pub ret: Ty,
    /// Template parameter names (`T` of `template <typename T>`): any argument binds to them.
    pub generics: Vec<String>,
    /// The header line it starts on.
    pub line: usize,
    /// A constant (`extern const char* NAME;`), not a function: `ret` is its type.
    pub constant: bool,
    /// The Rust function it is: a `// rust: NAME` comment on the line before the declaration
    /// names it (how overloads, which Rust does not have, get distinct functions), else the
    /// C++ name (a Rust keyword with a trailing `_`: `where` is `where_`).
    pub rust: String,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: Ty,
    /// Its default value as C++ text (tokens joined by spaces), when it has one.
    pub default: Option<String>,
}

/// A declaration that cannot be read: line and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclError {
    /// 1-based line in the header.
    pub line: usize,
    /// Why.
    pub message: String,
}

/// Read the declarations of a header.
pub fn parse_header(text: &str) -> Result<Vec<Decl>, DeclError> {
    let cleaned: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with('#') {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |offset: usize| cleaned[..offset.min(cleaned.len())].matches('\n').count() + 1;
    let toks = lex(&cleaned).map_err(|e| DeclError {
        line: line_of(e.offset),
        message: e.message,
    })?;
    let annotations = rust_names(text);
    let undefined = annotated(text, "undefined:");
    let mut decls = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (end, decl) = statement(&toks, i).map_err(|e| DeclError {
            line: line_of(e.offset),
            message: e.message,
        })?;
        if let Some(mut d) = decl {
            d.line = line_of(toks[i].offset);
            d.rust = annotations
                .iter()
                .find(|(l, _)| l + 1 == d.line)
                .map_or_else(|| rust_name(&d.name), |(_, n)| n.clone());
            mark_undefined(&mut d, &undefined).map_err(|message| DeclError {
                line: d.line,
                message,
            })?;
            decls.push(d);
        }
        i = end;
    }
    Ok(decls)
}

/// `(line, NAME)` of each `// rust: NAME` line.
fn rust_names(text: &str) -> Vec<(usize, String)> {
    annotated(text, "rust:")
}

/// `(line, TEXT)` of each `// KEY TEXT` comment line.
fn annotated(text: &str, key: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let rest = l
                .trim()
                .strip_prefix("//")?
                .trim()
                .strip_prefix(key)?
                .trim();
            Some((i + 1, rest.to_string()))
        })
        .collect()
}

/// Applies a `// undefined: a, b` comment in the comment lines right above `d`: the named
/// `const Tensor&` parameters may receive an undefined tensor (PyTorch's helpers test them
/// with `.defined()`, as `batchnorm_double_backward` does its `ggI`), so they are
/// [`Ty::OptTensor`] (`Option<&Variable<T>>` in Rust). A name that is not a tensor parameter
/// of `d` is an error.
fn mark_undefined(d: &mut Decl, undefined: &[(usize, String)]) -> Result<(), String> {
    // The annotation is on one of the two lines above (a `// rust:` line may sit between).
    let Some((_, names)) = undefined
        .iter()
        .find(|(l, _)| *l + 1 == d.line || *l + 2 == d.line)
    else {
        return Ok(());
    };
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match d.params.iter_mut().find(|p| p.name == name) {
            Some(p) if p.ty.is_tensor() => p.ty = Ty::OptTensor,
            _ => {
                return Err(format!(
                    "`// undefined: {name}`: `{}` has no tensor parameter `{name}`",
                    d.name
                ));
            }
        }
    }
    Ok(())
}

fn is_ident(t: Option<&Token>, s: &str) -> bool {
    matches!(t.map(|t| &t.kind), Some(TokenKind::Ident(x)) if x == s)
}

fn is_punct(t: Option<&Token>, s: &str) -> bool {
    matches!(t.map(|t| &t.kind), Some(TokenKind::Punct(x)) if *x == s)
}

/// The index after the bracket matching the one at `i`.
fn skip_balanced(toks: &[Token], i: usize) -> Result<usize, SyntaxError> {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(i) {
        if let TokenKind::Punct(p) = t.kind {
            match p {
                "(" | "{" | "[" => depth += 1,
                ")" | "}" | "]" => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                return Ok(k + 1);
            }
        }
    }
    Err(SyntaxError {
        offset: toks[i].offset,
        message: "unclosed bracket".into(),
    })
}

/// One top-level statement from `i`: its end and the declaration it holds, if any.
fn statement(toks: &[Token], i: usize) -> Result<(usize, Option<Decl>), SyntaxError> {
    let t = toks.get(i);
    if is_ident(t, "namespace") {
        let open = (i..toks.len()).find(|&k| is_punct(toks.get(k), "{"));
        return Ok((open.map_or(toks.len(), |k| k + 1), None));
    }
    if is_punct(t, "}") || is_punct(t, ";") {
        return Ok((i + 1, None));
    }
    if is_ident(t, "extern") {
        return constant(toks, i + 1);
    }
    if is_ident(t, "struct") || is_ident(t, "class") {
        let mut k = i;
        while k < toks.len() && !is_punct(toks.get(k), "{") && !is_punct(toks.get(k), ";") {
            k += 1;
        }
        if is_punct(toks.get(k), "{") {
            k = skip_balanced(toks, k)?;
        }
        while is_punct(toks.get(k), ";") {
            k += 1;
        }
        return Ok((k, None));
    }
    function(toks, i)
}

/// `extern TYPE NAME;`: a declared constant.
fn constant(toks: &[Token], i: usize) -> Result<(usize, Option<Decl>), SyntaxError> {
    let (ty, n) = parse_type(&toks[i..])?;
    let Some(TokenKind::Ident(name)) = toks.get(i + n).map(|t| t.kind.clone()) else {
        return Err(err(toks, i + n, "expected a constant's name"));
    };
    if !is_punct(toks.get(i + n + 1), ";") {
        return Err(err(
            toks,
            i + n + 1,
            "expected `;` after an extern declaration",
        ));
    }
    let decl = Decl {
        name,
        params: Vec::new(),
        ret: from_cpp(&ty),
        generics: Vec::new(),
        line: 0,
        constant: true,
        rust: String::new(),
    };
    Ok((i + n + 2, Some(decl)))
}

/// `[template <typename T>] [TORCH_API] [inline] RET name(PARAMS) (; | { body })`.
fn function(toks: &[Token], mut i: usize) -> Result<(usize, Option<Decl>), SyntaxError> {
    let mut generics = Vec::new();
    if is_ident(toks.get(i), "template") {
        let close = (i..toks.len())
            .find(|&k| is_punct(toks.get(k), ">"))
            .unwrap_or(toks.len());
        for k in i..close {
            if (is_ident(toks.get(k), "typename") || is_ident(toks.get(k), "class"))
                && let Some(TokenKind::Ident(n)) = toks.get(k + 1).map(|t| &t.kind)
            {
                generics.push(n.clone());
            }
        }
        i = close + 1;
    }
    while ["TORCH_API", "inline", "static", "C10_API"]
        .iter()
        .any(|w| is_ident(toks.get(i), w))
    {
        i += 1;
    }
    let (ret, n) = parse_type(&toks[i..])?;
    i += n;
    let Some(TokenKind::Ident(name)) = toks.get(i).map(|t| t.kind.clone()) else {
        return Err(err(toks, i, "expected a function name"));
    };
    if !is_punct(toks.get(i + 1), "(") {
        return Err(err(toks, i + 1, "expected `(` after the function name"));
    }
    let close = skip_balanced(toks, i + 1)?;
    let params = params(&toks[i + 2..close - 1])?;
    let mut end = close;
    while is_ident(toks.get(end), "const") || is_ident(toks.get(end), "noexcept") {
        end += 1;
    }
    end = if is_punct(toks.get(end), "{") {
        skip_balanced(toks, end)?
    } else if is_punct(toks.get(end), ";") {
        end + 1
    } else {
        return Err(err(
            toks,
            end,
            "expected `;` or a body after the parameters",
        ));
    };
    let decl = Decl {
        name,
        params,
        ret: from_cpp(&ret),
        generics,
        line: 0,
        constant: false,
        rust: String::new(),
    };
    Ok((end, Some(decl)))
}

fn err(toks: &[Token], i: usize, message: &str) -> SyntaxError {
    SyntaxError {
        offset: toks.get(i).or(toks.last()).map_or(0, |t| t.offset),
        message: message.into(),
    }
}

/// The parameters between the parentheses.
fn params(toks: &[Token]) -> Result<Vec<Param>, SyntaxError> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (ty, n) = parse_type(&toks[i..])?;
        i += n;
        let name = match toks.get(i).map(|t| &t.kind) {
            Some(TokenKind::Ident(n)) => {
                i += 1;
                n.clone()
            }
            _ => format!("arg{}", out.len()),
        };
        let mut default = None;
        if is_punct(toks.get(i), "=") {
            i += 1;
            let start = i;
            let mut depth = 0i32;
            while i < toks.len() {
                match toks[i].kind {
                    TokenKind::Punct("(" | "{" | "<") => depth += 1,
                    TokenKind::Punct(")" | "}" | ">") => depth -= 1,
                    TokenKind::Punct(",") if depth == 0 => break,
                    _ => {}
                }
                i += 1;
            }
            let words: Vec<String> = toks[start..i].iter().map(|t| show(&t.kind)).collect();
            default = Some(words.join(" "));
        }
        if i < toks.len() && !is_punct(toks.get(i), ",") {
            return Err(err(toks, i, "expected `,` between parameters"));
        }
        i += 1;
        let ty = from_cpp(&ty);
        out.push(Param { name, ty, default });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_declarations() {
        let h = "#pragma once\nnamespace a::b {\nextern const char* kMsg;\nstruct TORCH_API G {\n  size_t i = 0;\n};\n\
                 TORCH_API Tensor f(const Tensor& t, int64_t n = 1);\n\
                 inline std::optional<Tensor> w(const Tensor& t, const bool c) {\n  return c;\n}\n\
                 template <typename T>\nat::Tensor g(const Tensor& grad, const T& other);\n\
                 // rust: where_scalar\nTensor where(const Tensor& c, const Scalar& s);\n\
                 std::tuple<Tensor, Tensor> h(const variable_list& grads, std::array<bool, 2> m);\n}\n";
        let d = parse_header(h).unwrap();
        let names: Vec<&str> = d.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["kMsg", "f", "w", "g", "where", "h"]);
        assert_eq!(d[4].rust, "where_scalar", "named by the annotation");
        assert_eq!(d[3].rust, "g");
        assert!(d[0].constant);
        assert_eq!(d[0].ret, Ty::Str);
        let d = &d[1..];
        assert_eq!(d[0].line, 7);
        assert_eq!(d[0].params[1].default.as_deref(), Some("1"));
        assert_eq!(d[1].ret, Ty::OptTensor);
        assert_eq!(d[2].generics, ["T"]);
        assert_eq!(d[4].params[1].ty, Ty::BoolArray(2));
        assert_eq!(
            d[4].params[0].ty,
            Ty::OptTensorList,
            "gradients may be undefined"
        );
    }

    #[test]
    fn undefined_annotation_makes_tensor_parameters_optional() {
        let h = "// undefined: b\nTensor f(const Tensor& a, const Tensor& b);\n\
                 // undefined: x\n// rust: g2\nTensor g(const Tensor& x, int64_t n);\n\
                 Tensor h(const Tensor& y);\n";
        let d = parse_header(h).unwrap();
        assert_eq!(d[0].params[0].ty, Ty::Tensor);
        assert_eq!(d[0].params[1].ty, Ty::OptTensor, "annotated");
        assert_eq!(
            (d[1].rust.as_str(), &d[1].params[0].ty),
            ("g2", &Ty::OptTensor)
        );
        assert_eq!(
            d[2].params[0].ty,
            Ty::Tensor,
            "an annotation covers only its declaration"
        );
        let e = parse_header("// undefined: n\nTensor f(const Tensor& a, int64_t n);").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
        assert!(e.message.contains("no tensor parameter `n`"), "{e:?}");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_header("Tensor f(const Tensor& t)\nTensor g();").unwrap_err();
        assert_eq!(e.line, 2, "{e:?}");
    }
}
