//! Imports run one way: in every crate of the repository, the modules' `crate::` and `super::`
//! paths (outside comments and `#[cfg(test)] mod tests`) form no circle of more than two
//! modules. A module is a file or a folder: to the modules beside it a folder is one module
//! (an import from or into any of its files is the folder's), and inside it its files are
//! checked the same way; a folder's `mod.rs` and its files are not counted as importing each
//! other (the folder is declared and re-exported by its `mod.rs`). Pairs that import each
//! other remain (the runtime's `node/` and `variable/`: `autograd-runtime/src/lib.rs`, "Where
//! things are", says why).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod common;
use common::root;

/// Every `src` folder of the repository (build output, the peers' benchmark and git excluded).
fn src_dirs() -> Vec<PathBuf> {
    let mut dirs = common::folders(&["peers"]);
    dirs.retain(|d| d.file_name().is_some_and(|n| n == "src"));
    dirs
}

/// The `.rs` files under `dir`, by module path (`engine::grad`; the crate root is "").
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src).unwrap().with_extension("");
                let mut name = rel.to_string_lossy().replace('/', "::");
                if let Some(parent) = name.strip_suffix("::mod") {
                    name = parent.to_string();
                }
                if name == "lib" || name == "main" {
                    name = String::new();
                }
                out.insert(name, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    out
}

/// The code of a file without its line comments and its `#[cfg(test)] mod tests`.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths after each `prefix` (`crate::`, `super::`) in `code`, with `{a, b::c}` groups
/// spelled out: `node::Edge`, `variable::Variable`, ...
fn paths(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        expand("", &code[i + prefix.len()..], &mut out);
    }
    out
}

/// Reads one path (or a `{...}` group of them) at the start of `rest`, joined to `base`.
fn expand(base: &str, rest: &str, out: &mut Vec<String>) {
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let joined = format!("{base}{word}");
    let after = &rest[word.len()..];
    if (word.is_empty() || word.ends_with("::")) && after.starts_with('{') {
        let (mut depth, mut start) = (0, 1);
        for (i, c) in after.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    expand(&joined, after[start..i].trim_start(), out);
                    start = i + 1;
                    if c == '}' {
                        return;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
    } else {
        out.push(joined.trim_end_matches(':').to_string());
    }
}

/// The module a path names: its longest prefix that is a module.
fn module_of<'a>(path: &str, mods: &'a BTreeMap<String, String>) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .find_map(|k| mods.get_key_value(&parts[..k].join("::")).map(|(m, _)| m))
}

/// The edge `from -> to` between the two modules that contain them and are siblings (files
/// of one folder): a folder is one module to the modules beside it, whichever of its files
/// imports or is imported. `None` when one contains the other (a folder and its files).
fn lift(from: &str, to: &str) -> Option<(String, String)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (
        from.split("::").filter(|s| !s.is_empty()).collect(),
        to.split("::").filter(|s| !s.is_empty()).collect(),
    );
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == a.len() || common == b.len() {
        return None;
    }
    Some((a[..=common].join("::"), b[..=common].join("::")))
}

/// Module -> the modules it imports, lifted to siblings ([`lift`]).
fn imports(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in mods {
        let code = code(text);
        let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
        let mut named = paths(&code, "crate::");
        for p in paths(&code, "super::") {
            named.push(if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            });
        }
        for t in named.iter().filter_map(|p| module_of(p, mods)) {
            if let Some((from, to)) = lift(m, t) {
                graph.entry(from).or_default().insert(to);
            }
        }
    }
    graph
}

/// The strongly connected components of more than two modules (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g String, (usize, usize)>,
        stack: Vec<&'g String>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g String) {
        let n = s.index.len();
        s.index.insert(v, (n, n));
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let low = match s.index.get(w) {
                None => {
                    visit(s, w);
                    s.index[w].1
                }
                Some(&(i, _)) if s.stack.contains(&w) => i,
                Some(_) => continue,
            };
            let e = s.index.get_mut(v).unwrap();
            e.1 = e.1.min(low);
        }
        if s.index[v].0 == s.index[v].1 {
            let at = s.stack.iter().rposition(|x| *x == v).unwrap();
            let c: BTreeSet<String> = s.stack.drain(at..).map(|x| x.to_string()).collect();
            if c.len() > 2 {
                s.out.push(c);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_circle_of_more_than_two_modules() {
    let mut found = Vec::new();
    for src in src_dirs() {
        let mods = modules(&src);
        let crate_dir = src
            .parent()
            .unwrap()
            .strip_prefix(root())
            .unwrap()
            .to_path_buf();
        for c in circles(&imports(&mods)) {
            found.push((crate_dir.to_string_lossy().into_owned(), c));
        }
    }
    assert_eq!(
        found,
        Vec::<(String, BTreeSet<String>)>::new(),
        "circles of more than two modules (crate, modules)"
    );
}

#[test]
fn the_check_sees_a_circle_and_groups() {
    let mods: BTreeMap<String, String> = [
        ("a", "use crate::{b::B, c};"),
        ("b", "use super::c::C;"),
        ("c", "fn f() { crate::a::g() } // crate::d"),
        ("d", "use crate::a;"),
        ("e::x", "use super::super::e;"),
        // A folder is one module to its siblings: f's files import g, g imports h, h f's.
        ("f", "mod x; mod y;"),
        ("f::x", "use crate::g;"),
        ("f::y", "pub struct Y;"),
        ("g", "use crate::h::H;"),
        ("h", "use crate::f::y::Y;"),
    ]
    .iter()
    .map(|(m, t)| (m.to_string(), t.to_string()))
    .collect();
    let found = circles(&imports(&mods));
    let set = |m: &[&str]| {
        m.iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<String>>()
    };
    assert_eq!(found, vec![set(&["a", "b", "c"]), set(&["f", "g", "h"])]);
}
