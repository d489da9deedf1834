//! A formula's flat tokens as a `proc_macro2` token stream, built token by token (the
//! formula is never turned back into text and re-parsed).

use crate::formula::{Formula, Tok, TokKind};
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// The token trees of `f`, with identifiers passed through `rename` (`self` -> `self_`).
/// `Err` names a token that cannot be one in Rust.
pub(crate) fn formula_tokens(
    f: &Formula,
    rename: impl Fn(&str) -> Option<String>,
) -> Result<TokenStream, String> {
    // One level per open bracket: the delimiter and the trees inside it so far.
    let mut stack: Vec<(Delimiter, Vec<TokenTree>)> = vec![(Delimiter::None, Vec::new())];
    for (i, t) in f.toks.iter().enumerate() {
        let tree = match t.kind {
            TokKind::Open => {
                stack.push((delimiter(&t.text)?, Vec::new()));
                continue;
            }
            TokKind::Close => {
                let (d, inner) = stack
                    .pop()
                    .filter(|_| !stack.is_empty())
                    .ok_or("unbalanced `)`")?;
                TokenTree::Group(Group::new(d, inner.into_iter().collect()))
            }
            TokKind::Ident => TokenTree::Ident(make_ident(
                &rename(&t.text).unwrap_or_else(|| t.text.clone()),
            )?),
            TokKind::Literal => TokenTree::Literal(
                t.text
                    .parse::<Literal>()
                    .map_err(|_| format!("`{}` is not a Rust literal", t.text))?,
            ),
            TokKind::Punct => {
                let c = t.text.chars().next().ok_or("empty punctuation")?;
                TokenTree::Punct(Punct::new(c, spacing(t, f.toks.get(i + 1))))
            }
        };
        stack.last_mut().ok_or("unbalanced brackets")?.1.push(tree);
    }
    match stack.pop() {
        Some((Delimiter::None, trees)) if stack.is_empty() => Ok(trees.into_iter().collect()),
        _ => Err("unclosed bracket".into()),
    }
}

fn delimiter(open: &str) -> Result<Delimiter, String> {
    match open {
        "(" => Ok(Delimiter::Parenthesis),
        "[" => Ok(Delimiter::Bracket),
        "{" => Ok(Delimiter::Brace),
        other => Err(format!("unknown bracket `{other}`")),
    }
}

/// `Joint` when the next token is punctuation written right after this one (`->`, `::`,
/// `&&`, a lifetime's `'`), as the lexer saw it.
fn spacing(t: &Tok, next: Option<&Tok>) -> Spacing {
    let joined = next.is_some_and(|n| n.space_before.is_empty());
    let next_punct = next.is_some_and(|n| n.kind == TokKind::Punct);
    if t.text == "'" || (joined && next_punct) {
        Spacing::Joint
    } else {
        Spacing::Alone
    }
}

fn make_ident(text: &str) -> Result<Ident, String> {
    let ok = text
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_alphabetic())
        && text.chars().all(|c| c == '_' || c.is_alphanumeric());
    if !ok {
        return Err(format!("`{text}` is not a Rust identifier"));
    }
    Ok(match text.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(text, Span::call_site()),
    })
}

/// The formula on one line with its original spacing (new lines of a YAML block become
/// spaces) and identifiers renamed: what the generated file shows next to its location.
pub(crate) fn formula_line(f: &Formula, rename: impl Fn(&str) -> Option<String>) -> String {
    let mut s = String::new();
    for (i, t) in f.toks.iter().enumerate() {
        if i > 0 && !t.space_before.is_empty() {
            s.push(' ');
        }
        match (t.kind, rename(&t.text)) {
            (TokKind::Ident, Some(r)) => s.push_str(&r),
            _ => s.push_str(&t.text),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(src: &str) -> String {
        let f = Formula::parse(src).unwrap();
        let ts = formula_tokens(&f, |n| (n == "self").then(|| "self_".to_string())).unwrap();
        // Compare as syn sees it: the same expression as the source with `self` renamed.
        let e: syn::Expr = syn::parse2(ts).unwrap();
        quote::quote!(#e).to_string()
    }

    fn expected(src: &str) -> String {
        let e: syn::Expr = syn::parse_str(src).unwrap();
        quote::quote!(#e).to_string()
    }

    #[test]
    fn formulas_become_the_same_token_trees() {
        for (src, want) in [
            ("mul_tensor(&grad, &self)", "mul_tensor(&grad, &self_)"),
            (
                "a::<T>(&&x, -1, \"s\") -> b",
                "a::<T>(&&x, -1, \"s\") - > b",
            ),
            (
                "x.iter().map(|v| v * 2.5f64).collect::<Vec<_>>()[0]",
                "x.iter().map(|v| v * 2.5f64).collect::<Vec<_>>()[0]",
            ),
            ("{ let y = 'a'; y as u8 }", "{ let y = 'a'; y as u8 }"),
            ("a && b || !c", "a && b || !c"),
        ] {
            if want.contains("- >") {
                // `->` is not an expression; the tokens still round-trip.
                let f = Formula::parse(src).unwrap();
                let ts = formula_tokens(&f, |_| None).unwrap().to_string();
                assert!(ts.contains("->"), "{ts}");
                continue;
            }
            assert_eq!(roundtrip(src), expected(want), "{src}");
        }
    }

    #[test]
    fn one_line_text_keeps_spacing_and_renames() {
        let f = Formula::parse("foo(&grad,\n   self.x())").unwrap();
        assert_eq!(
            formula_line(&f, |n| (n == "self").then(|| "self_".into())),
            "foo(&grad, self_.x())"
        );
    }
}
