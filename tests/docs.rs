//! The docs name what exists: every relative link of every Markdown file of the repository
//! (with its `#anchor`, for a Markdown target) and every file path the docs name in code
//! spans (`opset/src/meta.rs`, `src/backend.rs`) resolves, from the file's folder or one of
//! its parents up to the repository's root.

use std::path::{Path, PathBuf};

mod common;
use common::root;

/// The Markdown files of the repository (build output and git excluded).
fn markdown_files() -> Vec<PathBuf> {
    let dirs = common::folders(&[]);
    dirs.iter().flat_map(|d| common::files(d, ".md")).collect()
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation but `-`/`_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && l.starts_with('#') {
            out.push(slug(l.trim_start_matches('#')));
        }
    }
    out
}

/// `(line, target)` of each inline link `[text](target)` outside code blocks.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (pos, _) in l.match_indices("](") {
            let rest = &l[pos + 2..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            out.push((i + 1, rest[..end].to_string()));
        }
    }
    out
}

/// `(line, path)` of each code span that reads as a file path: a `/` and a known
/// extension, no wildcard, placeholder or home folder.
fn code_paths(text: &str) -> Vec<(usize, String)> {
    const EXT: &[&str] = &[".rs", ".toml", ".yaml", ".md", ".py", ".json", ".h", ".tsv"];
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        for (k, span) in l.split('`').enumerate() {
            let plain = span
                .chars()
                .all(|c| c.is_alphanumeric() || "_-./".contains(c));
            if k % 2 == 1
                && plain
                && span.contains('/')
                && !span.starts_with('/')
                && !span.starts_with("../shared")
                && EXT.iter().any(|e| span.ends_with(e))
            {
                out.push((i + 1, span.to_string()));
            }
        }
    }
    out
}

/// Paths in PyTorch's source tree, which the docs cite (`aten/src/ATen/native/...`).
const PYTORCH: &[&str] = &["aten/", "c10/", "torch/", "torchgen/", "tools/autograd/"];

/// The folders of the workspace's crates (each with a `Cargo.toml`), the root's included.
fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs = common::folders(&[]);
    dirs.retain(|d| d.join("Cargo.toml").exists());
    dirs
}

/// Whether `path` exists from `dir` or one of its parents up to the root, or in one of the
/// workspace's crates (a README that walks through another crate's files names them from
/// that crate: `src/backend.rs`).
fn resolves(dir: &Path, path: &str) -> bool {
    if PYTORCH.iter().any(|p| path.starts_with(p)) {
        return true;
    }
    if crate_dirs().iter().any(|c| c.join(path).exists()) {
        return true;
    }
    let top = root();
    let mut d = Some(dir);
    while let Some(here) = d {
        if here.join(path).exists() {
            return true;
        }
        if here == top {
            break;
        }
        d = here.parent();
    }
    false
}

fn check_file(md: &Path, out: &mut Vec<String>) {
    let text = std::fs::read_to_string(md).expect("a Markdown file");
    let dir = md.parent().expect("a folder");
    let name = md.strip_prefix(root()).unwrap_or(md).display().to_string();
    for (line, target) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if path.is_empty() {
            md.to_path_buf()
        } else {
            dir.join(path)
        };
        if !file.exists() {
            out.push(format!("{name}:{line}: link to {target}: no such file"));
        } else if !anchor.is_empty() && file.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if !anchors(&text).iter().any(|a| a == anchor) {
                out.push(format!("{name}:{line}: link to {target}: no such heading"));
            }
        }
    }
    for (line, path) in code_paths(&text) {
        if !resolves(dir, &path) {
            out.push(format!("{name}:{line}: `{path}` names no file"));
        }
    }
}

#[test]
fn every_link_and_named_path_of_the_docs_exists() {
    let files = markdown_files();
    assert!(files.len() >= 10, "{files:?}");
    let mut broken = Vec::new();
    for md in &files {
        check_file(md, &mut broken);
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug(" A backend in five kernels"),
        "a-backend-in-five-kernels"
    );
    assert_eq!(
        slug("Smaller records (issue 15, ninth session)"),
        "smaller-records-issue-15-ninth-session"
    );
    assert_eq!(slug("`Dense`: C++ formulas"), "dense-c-formulas");
}
