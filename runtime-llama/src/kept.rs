//! A GGUF file's vocabulary kept on disk beside the kernel tables, so that a later start-up can
//! index it and read its tables while llama.cpp loads the weights (see
//! [`crate::LlamaModel::load_with_kernel`]).
//!
//! One file per model path, `gguf-vocab-<hash of the canonical path>.v<format>.bin`: a magic
//! string, the format version, then the [`VocabParts`] in `postcard`'s encoding. Nothing in it
//! is trusted: the start-up uses it only once it equals, token by token, the vocabulary
//! llama.cpp loaded, so a file left by an older model at the same path, or a damaged one, only
//! costs the time it saved. Reading and writing never fail a start-up; problems are logged.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::tokenizer::VocabParts;

/// What every kept vocabulary starts with.
const MAGIC: &[u8; 16] = b"stencil-gguf-voc";
/// The layout of the payload: raised whenever [`VocabParts`] changes.
const FORMAT: u32 = 1;

/// The file in `dir` that keeps the vocabulary of the GGUF file at `model`, or `None` when
/// the model's path cannot be resolved.
pub(crate) fn path_for(dir: &Path, model: &Path) -> Option<PathBuf> {
    use sha2::Digest;
    let canonical = std::fs::canonicalize(model).ok()?;
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Some(dir.join(format!("gguf-vocab-{hex}.v{FORMAT}.bin")))
}

/// The vocabulary kept at `path`, if there is a readable one of this format.
pub(crate) fn read(path: &Path) -> Option<VocabParts> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!(path = %path.display(), error = %e, "cannot read the kept vocabulary");
            }
            return None;
        }
    };
    let payload = bytes
        .strip_prefix(MAGIC.as_slice())
        .and_then(|rest| rest.strip_prefix(FORMAT.to_le_bytes().as_slice()));
    let Some(payload) = payload else {
        tracing::debug!(path = %path.display(), "not a kept vocabulary of this format");
        return None;
    };
    postcard::from_bytes(payload)
        .inspect_err(|e| {
            tracing::debug!(path = %path.display(), error = %e, "damaged kept vocabulary");
        })
        .ok()
}

/// Keeps `parts` at `path`, atomically (a temporary file renamed over it).
pub(crate) fn write(path: &Path, parts: &VocabParts) {
    let result = (|| -> Result<(), String> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT.to_le_bytes());
        let bytes = postcard::to_extend(parts, bytes).map_err(|e| e.to_string())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        // One temporary name per write, so that writers of the same file never share one.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let temp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        std::fs::write(&temp, &bytes).map_err(|e| e.to_string())?;
        std::fs::rename(&temp, path).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            e.to_string()
        })
    })();
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot keep the model's vocabulary");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts() -> VocabParts {
        VocabParts {
            arena: b"abcde<eos>".to_vec(),
            ends: vec![1, 2, 5, 10],
            special: vec![3],
            eog: vec![3],
            end_of_turn: None,
            bos: Some(0),
        }
    }

    #[test]
    fn a_kept_vocabulary_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.bin");
        write(&path, &parts());
        assert_eq!(read(&path), Some(parts()));
        let vocab = parts().vocabulary().unwrap();
        assert_eq!(vocab.len(), 4);
        assert_eq!(vocab.bytes(vocab_index::TokenId::new(2).unwrap()), b"cde");
        // Nothing but the file itself is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_damaged_or_foreign_file_is_no_vocabulary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.bin");
        assert_eq!(read(&path), None, "missing");
        write(&path, &parts());
        let good = std::fs::read(&path).unwrap();
        // Cut short.
        std::fs::write(&path, &good[..good.len() - 3]).unwrap();
        assert_eq!(read(&path), None, "cut short");
        // Another format version.
        let mut other = good.clone();
        other[MAGIC.len()] ^= 0xff;
        std::fs::write(&path, &other).unwrap();
        assert_eq!(read(&path), None, "another format");
        // Not a kept vocabulary at all.
        std::fs::write(&path, b"{\"tokens\": []}").unwrap();
        assert_eq!(read(&path), None, "another file");
    }

    #[test]
    fn parts_out_of_order_or_out_of_range_are_refused_when_indexed() {
        let mut backwards = parts();
        backwards.ends = vec![2, 1, 5, 10];
        assert!(backwards.vocabulary().is_err());
        let mut past_the_end = parts();
        past_the_end.ends = vec![1, 2, 5, 11];
        assert!(past_the_end.vocabulary().is_err());
        let mut bad_special = parts();
        bad_special.special = vec![4];
        assert!(bad_special.vocabulary().is_err());
    }

    #[test]
    fn each_model_path_has_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.gguf"), dir.path().join("b.gguf"));
        std::fs::write(&a, b"").unwrap();
        std::fs::write(&b, b"").unwrap();
        let kept_a = path_for(dir.path(), &a).unwrap();
        assert_ne!(Some(&kept_a), path_for(dir.path(), &b).as_ref());
        // The same file by another spelling of its path.
        let again = dir.path().join(".").join("a.gguf");
        assert_eq!(path_for(dir.path(), &again), Some(kept_a));
        assert_eq!(path_for(dir.path(), &dir.path().join("missing.gguf")), None);
    }
}
