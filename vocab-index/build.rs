//! Sets `VOCAB_INDEX_CODE`: a hash of this crate's sources and of the workspace's lock file
//! (which pins the `tokenizers` crate). A vocabulary kept on disk is keyed by it, so that a
//! build which would derive other token bytes never reads a copy an earlier build kept.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    files.sort();
    files.push(root.join("Cargo.toml"));
    let lock = root.join("../Cargo.lock");
    if lock.is_file() {
        files.push(lock);
    }
    let mut hasher = DefaultHasher::new();
    for file in &files {
        file.strip_prefix(&root).unwrap_or(file).hash(&mut hasher);
        std::fs::read(file).unwrap_or_default().hash(&mut hasher);
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rustc-env=VOCAB_INDEX_CODE={:016x}", hasher.finish());
}
