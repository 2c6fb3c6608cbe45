//! Where a GGUF file's vocabulary is kept beside the kernel tables, so that a later start-up
//! can index it and read its tables while llama.cpp loads the weights (see
//! [`crate::LlamaModel::load_with_kernel`]).
//!
//! One file per model path, `gguf-vocab-<hash of the canonical path>.bin`, written and read
//! with [`vocab_index::Vocabulary::keep_at`] and [`vocab_index::Vocabulary::read_kept`]. Nothing
//! in it is trusted: the start-up uses it only once it equals, token by token, the vocabulary
//! llama.cpp loaded, so a file left by an older model at the same path, or a damaged one, only
//! costs the time it saved.

use std::path::{Path, PathBuf};

/// The file in `dir` that keeps the vocabulary of the GGUF file at `model`, or `None` when
/// the model's path cannot be resolved.
pub(crate) fn path_for(dir: &Path, model: &Path) -> Option<PathBuf> {
    use sha2::Digest;
    let canonical = std::fs::canonicalize(model).ok()?;
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    Some(dir.join(format!("gguf-vocab-{hex}.bin")))
}

#[cfg(test)]
mod tests {
    use super::*;

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
