//! What the root package's tests share: the repository's folders. Each test uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every folder of the repository, the root's first, then sorted; hidden folders (git),
/// build output (`target`) and the folders named in `skip` are left out with what is in
/// them.
pub fn folders(skip: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
            if p.is_dir() && !name.starts_with('.') && name != "target" && !skip.contains(&&*name) {
                stack.push(p);
            }
        }
        out.push(d);
    }
    out[1..].sort();
    out
}

/// The files of `dir` (not of its folders) whose names end in `suffix`.
pub fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}
