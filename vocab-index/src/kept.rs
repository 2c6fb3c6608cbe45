//! Vocabularies kept on disk under a hash of what they were derived from, so that a process
//! reads in milliseconds what parsing a large `tokenizer.json` takes a second to give
//! ([`Vocabulary::derive_kept`]).
//!
//! A file is `vocab-<code>-<inputs>.v<format>.bin` in the directory given: `<code>` hashes
//! this crate's sources and the workspace's lock file (set by the build script), `<inputs>`
//! is a SHA-256 of everything the vocabulary is derived from. A build that would derive other
//! bytes from the same inputs has another `<code>`, so it never reads a copy an earlier build
//! kept, and removes those copies when it keeps its own. The payload is checked as it is read
//! (offsets in order, ids in range); a file that fails is derived again. Reading and writing
//! never fail the caller: problems are logged.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{TokenId, Vocabulary};

/// What every kept vocabulary starts with.
const MAGIC: &[u8; 16] = b"stencil-vocab\n\0\0";
/// The layout of the payload.
const FORMAT: u32 = 1;
/// The hash of the code that derives vocabularies (see the build script).
const CODE: &str = env!("VOCAB_INDEX_CODE");

/// A vocabulary's contents as kept.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    arena: Vec<u8>,
    /// Where each id's bytes end in `arena`.
    ends: Vec<u32>,
    special: Vec<u32>,
    eos: Vec<u32>,
    end_of_turn: Vec<u32>,
    bos: Option<u32>,
}

impl Kept {
    fn of(vocab: &Vocabulary) -> Kept {
        let ids = |ids: &[TokenId]| ids.iter().map(|id| id.as_u32()).collect();
        let mut arena = Vec::new();
        let mut ends = Vec::with_capacity(vocab.len());
        for (_, bytes) in vocab.iter() {
            arena.extend_from_slice(bytes);
            // A vocabulary holds under 4 GiB of bytes.
            ends.push(arena.len() as u32);
        }
        Kept {
            arena,
            ends,
            special: vocab.special().ones().map(|id| id as u32).collect(),
            eos: ids(vocab.eos_ids()),
            end_of_turn: ids(vocab.end_of_turn_ids()),
            bos: vocab.bos_id().map(TokenId::as_u32),
        }
    }

    /// The vocabulary, checked as it is built.
    fn vocabulary(self) -> std::result::Result<Vocabulary, String> {
        let ids = |ids: Vec<u32>| -> std::result::Result<Vec<TokenId>, String> {
            ids.into_iter()
                .map(|id| TokenId::new(id).ok_or_else(|| format!("id {id} past the limit")))
                .collect()
        };
        let mut pieces = Vec::with_capacity(self.ends.len());
        let mut start = 0usize;
        for &end in &self.ends {
            let end = end as usize;
            pieces.push(
                self.arena
                    .get(start..end)
                    .ok_or("token bytes out of order")?,
            );
            start = end;
        }
        let bos = ids(self.bos.into_iter().collect())?.first().copied();
        let (special, eos) = (ids(self.special)?, ids(self.eos)?);
        let end_of_turn = ids(self.end_of_turn)?;
        Vocabulary::new(pieces, special)
            .and_then(|v| v.with_eos_ids(eos))
            .and_then(|v| v.with_end_of_turn_ids(end_of_turn))
            .and_then(|v| v.with_bos_id(bos))
            .map_err(|e| e.to_string())
    }
}

impl Vocabulary {
    /// The vocabulary `derive` makes from `inputs` (every byte it depends on: file contents,
    /// settings), read from `dir` when an earlier call kept it there, else derived, and kept
    /// there when it has at least `keep_from` tokens. Returns it and whether it was read.
    ///
    /// # Errors
    ///
    /// Only `derive`'s: a file that cannot be read or written is logged and derived around.
    pub fn derive_kept<E>(
        dir: &Path,
        inputs: &[&[u8]],
        keep_from: usize,
        derive: impl FnOnce() -> std::result::Result<Vocabulary, E>,
    ) -> std::result::Result<(Vocabulary, bool), E> {
        let path = kept_path(dir, inputs);
        if let Some(vocab) = Vocabulary::read_kept(&path) {
            return Ok((vocab, true));
        }
        let vocab = derive()?;
        if vocab.len() >= keep_from && vocab.keep_at(&path) {
            remove_other_builds(dir);
        }
        Ok((vocab, false))
    }

    /// The vocabulary [`Vocabulary::keep_at`] wrote at `path`, if it is there, of this format
    /// and whole (offsets in order, ids in range); otherwise `None`, with the reason logged.
    #[must_use]
    pub fn read_kept(path: &Path) -> Option<Vocabulary> {
        read(path)
    }

    /// Writes this vocabulary at `path` (a temporary file renamed over it) for
    /// [`Vocabulary::read_kept`]. Returns whether it was written; a failure is logged.
    pub fn keep_at(&self, path: &Path) -> bool {
        write(path, self).is_some()
    }
}

fn kept_path(dir: &Path, inputs: &[&[u8]]) -> PathBuf {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for input in inputs {
        h.update((input.len() as u64).to_le_bytes());
        h.update(input);
    }
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("vocab-{CODE}-{hex}.v{FORMAT}.bin"))
}

fn read(path: &Path) -> Option<Vocabulary> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!(path = %path.display(), error = %e, "cannot read a kept vocabulary");
            }
            return None;
        }
    };
    let payload = bytes
        .strip_prefix(MAGIC.as_slice())
        .and_then(|rest| rest.strip_prefix(FORMAT.to_le_bytes().as_slice()));
    let kept: Option<Kept> = payload.and_then(|p| postcard::from_bytes(p).ok());
    match kept.map(Kept::vocabulary) {
        Some(Ok(vocab)) => Some(vocab),
        Some(Err(reason)) => {
            tracing::debug!(path = %path.display(), %reason, "damaged kept vocabulary");
            None
        }
        None => {
            tracing::debug!(path = %path.display(), "not a kept vocabulary of this format");
            None
        }
    }
}

/// Keeps `vocab` at `path` (a temporary file renamed over it).
fn write(path: &Path, vocab: &Vocabulary) -> Option<()> {
    let result = (|| -> std::result::Result<(), String> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT.to_le_bytes());
        let bytes = postcard::to_extend(&Kept::of(vocab), bytes).map_err(|e| e.to_string())?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
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
        tracing::warn!(path = %path.display(), error = %e, "cannot keep the vocabulary");
        return None;
    }
    Some(())
}

/// Removes the vocabularies in `dir` that other builds kept ([`Vocabulary::derive_kept`]'s
/// files of another `<code>`): no build reads them again.
fn remove_other_builds(dir: &Path) {
    let ours = format!("vocab-{CODE}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("vocab-") && name.ends_with(".bin") && !name.starts_with(&ours) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// For tests: the name [`Vocabulary::derive_kept`] keeps `inputs` under.
#[cfg(test)]
pub(crate) fn name_for(inputs: &[&[u8]]) -> String {
    kept_path(Path::new(""), inputs).display().to_string()
}

/// Keeps `vocab` as the result of `inputs` without deriving it, as a copy another build or
/// a damaged disk might leave: for tests.
#[cfg(test)]
pub(crate) fn keep_as(dir: &Path, inputs: &[&[u8]], vocab: &Vocabulary) {
    vocab.keep_at(&kept_path(dir, inputs));
    remove_other_builds(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocabulary {
        let id = |i| TokenId::new(i).unwrap();
        Vocabulary::new([&b"a"[..], b"bc", b"", b"<eos>", b"\xff"], [id(3)])
            .and_then(|v| v.with_eos_ids([id(3)]))
            .and_then(|v| v.with_end_of_turn_ids([id(3)]))
            .and_then(|v| v.with_bos_id(Some(id(0))))
            .unwrap()
    }

    fn kept(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn a_kept_vocabulary_is_read_back_whole_and_not_derived_again() {
        let dir = tempfile::tempdir().unwrap();
        let inputs: &[&[u8]] = &[b"tokenizer", b"{...}"];
        let (first, read) =
            Vocabulary::derive_kept(dir.path(), inputs, 1, || Ok::<_, ()>(vocab())).unwrap();
        assert!(!read);
        let (second, read) = Vocabulary::derive_kept(dir.path(), inputs, 1, || {
            Err::<Vocabulary, _>("derived again")
        })
        .unwrap();
        assert!(read);
        assert_eq!(second.fingerprint(), first.fingerprint());
        assert_eq!(second.len(), 5);
        assert_eq!(kept(dir.path()), [name_for(inputs)]);
    }

    #[test]
    fn other_inputs_a_small_vocabulary_or_a_damaged_file_are_derived() {
        let dir = tempfile::tempdir().unwrap();
        let derive = || Ok::<_, ()>(vocab());
        // Below `keep_from`: nothing is kept.
        Vocabulary::derive_kept(dir.path(), &[b"a"], 6, derive).unwrap();
        assert!(kept(dir.path()).is_empty());
        Vocabulary::derive_kept(dir.path(), &[b"a"], 5, derive).unwrap();
        // Other inputs (also where only the split between them differs) are another file.
        for other in [&[&b"b"[..]][..], &[b"", b"a"], &[b"a", b""]] {
            let (_, read) = Vocabulary::derive_kept(dir.path(), other, 99, derive).unwrap();
            assert!(!read, "{other:?}");
        }
        // A damaged file is derived again, and kept anew.
        let path = dir.path().join(name_for(&[b"a"]));
        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, &good[..good.len() - 4]).unwrap();
        let (again, read) = Vocabulary::derive_kept(dir.path(), &[b"a"], 5, derive).unwrap();
        assert!(!read);
        assert_eq!(again.fingerprint(), vocab().fingerprint());
        assert_eq!(std::fs::read(&path).unwrap(), good);
    }

    #[test]
    fn keeping_removes_what_other_builds_kept() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("vocab-0123456789abcdef-00.v1.bin");
        let unrelated = dir.path().join("kernel-flat-00.v8.bin");
        std::fs::write(&stale, b"kept by another build").unwrap();
        std::fs::write(&unrelated, b"tables").unwrap();
        keep_as(dir.path(), &[b"x"], &vocab());
        assert!(!stale.exists());
        assert!(unrelated.exists());
        assert_eq!(kept(dir.path()).len(), 2);
    }
}
