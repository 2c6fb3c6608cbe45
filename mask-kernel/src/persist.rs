//! A kernel's tables on disk, so that a process starts without building them again.
//!
//! [`Kernel::save`] writes every table but the vocabulary itself; [`Kernel::load`] reads them
//! back with one read, given the vocabulary they were built for. The file starts with a fixed
//! header: a magic string, the format version, the vocabulary's fingerprint
//! ([`Vocabulary::fingerprint`]) and a CRC-32 of the payload (the tables, in `postcard`'s
//! encoding, token sets and trie nodes as runs of bytes). A file of another version, of
//! another vocabulary, or damaged is refused with its reason, never read as tables. [`Kernel::cached`] keeps one file per
//! vocabulary and trie kind in a directory: it loads the file when it is there and good, and
//! otherwise builds the tables and writes the file (atomically: a temporary file renamed).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use vocab_index::{TrieKind, Vocabulary};

use crate::Kernel;

/// What every tables file starts with.
const MAGIC: &[u8; 16] = b"stencil-tables\n\0";
/// The layout of the payload: raised whenever a table or its encoding changes.
const FORMAT: u32 = 8;
/// Magic, format, fingerprint, checksum.
const HEADER: usize = 16 + 4 + 32 + 4;

/// Why tables could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TablesError {
    /// The file could not be read or written.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The system's message.
        reason: String,
    },
    /// The file is not tables of this version, or was altered.
    #[error("{path}: not usable kernel tables ({reason})")]
    Format {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The tables were built for another vocabulary.
    #[error("{path}: the tables belong to another vocabulary")]
    OtherVocabulary {
        /// The file.
        path: String,
    },
    /// The tables could not be built (see [`vocab_index::FlatTrie::build`]).
    #[error(transparent)]
    Build(#[from] vocab_index::Error),
}

/// The vocabulary a kernel holds between reading its tables and [`Kernel::load`] putting the
/// real one in: empty.
pub(crate) fn no_vocabulary() -> Arc<Vocabulary> {
    static EMPTY: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    EMPTY
        .get_or_init(|| {
            Arc::new(
                Vocabulary::new(std::iter::empty::<&[u8]>(), [])
                    .expect("an empty vocabulary is valid"),
            )
        })
        .clone()
}

fn io_error(path: &Path, e: &std::io::Error) -> TablesError {
    TablesError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

fn format_error(path: &Path, reason: impl Into<String>) -> TablesError {
    TablesError::Format {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

impl Kernel {
    /// Writes the tables to `path` (the vocabulary is not written: [`Kernel::load`] takes it),
    /// through a temporary file in the same directory renamed into place, so that a reader
    /// never sees a partial file.
    ///
    /// # Errors
    ///
    /// [`TablesError::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), TablesError> {
        self.save_with(path, &self.vocab.fingerprint())
    }

    fn save_with(&self, path: &Path, fingerprint: &[u8; 32]) -> Result<(), TablesError> {
        let payload = postcard::to_stdvec(self).map_err(|e| format_error(path, e.to_string()))?;
        let mut bytes = Vec::with_capacity(HEADER + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&FORMAT.to_le_bytes());
        bytes.extend_from_slice(fingerprint);
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        // A name no other writer uses, in this process or another.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(|e| io_error(&tmp, &e))?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_error(path, &e)
        })
    }

    /// Reads tables [`Kernel::save`] wrote for `vocab`.
    ///
    /// # Errors
    ///
    /// [`TablesError::Io`] when the file cannot be read, [`TablesError::OtherVocabulary`] when
    /// it was written for another vocabulary, and [`TablesError::Format`] when it is not
    /// tables of this version or was altered.
    pub fn load(path: &Path, vocab: Arc<Vocabulary>) -> Result<Kernel, TablesError> {
        let fingerprint = vocab.fingerprint();
        Kernel::load_with(path, vocab, &fingerprint)
    }

    fn load_with(
        path: &Path,
        vocab: Arc<Vocabulary>,
        fingerprint: &[u8; 32],
    ) -> Result<Kernel, TablesError> {
        let bytes = std::fs::read(path).map_err(|e| io_error(path, &e))?;
        if bytes.len() < HEADER || &bytes[..16] != MAGIC {
            return Err(format_error(path, "no tables header"));
        }
        let format = u32::from_le_bytes(bytes[16..20].try_into().expect("four bytes"));
        if format != FORMAT {
            return Err(format_error(
                path,
                format!("format {format}, this build reads {FORMAT}"),
            ));
        }
        if &bytes[20..52] != fingerprint {
            return Err(TablesError::OtherVocabulary {
                path: path.display().to_string(),
            });
        }
        let payload = &bytes[HEADER..];
        if crc32fast::hash(payload).to_le_bytes() != bytes[52..HEADER] {
            return Err(format_error(
                path,
                "the checksum does not match the contents",
            ));
        }
        let mut kernel: Kernel =
            postcard::from_bytes(payload).map_err(|e| format_error(path, e.to_string()))?;
        kernel.vocab = vocab;
        if !kernel.tables_fit() {
            return Err(format_error(
                path,
                "tables of another size than the vocabulary",
            ));
        }
        Ok(kernel)
    }

    /// The file in `dir` that holds the tables of `vocab` with `kind` tries.
    #[must_use]
    pub fn tables_path(dir: &Path, vocab: &Vocabulary, kind: TrieKind) -> PathBuf {
        tables_path(dir, &vocab.fingerprint(), kind)
    }

    /// [`Kernel::cached`] without the build: the kernel of `vocab` with `kind` tries when its
    /// file in `dir` is there and good, else `None` (a file that is there but cannot be used
    /// is logged).
    #[must_use]
    pub fn read_cached(vocab: Arc<Vocabulary>, kind: TrieKind, dir: &Path) -> Option<Kernel> {
        let fingerprint = vocab.fingerprint();
        Kernel::read_at(&tables_path(dir, &fingerprint, kind), vocab, &fingerprint)
    }

    /// The tables at `path` when they are there and good; a file that is there but cannot be
    /// used is logged.
    fn read_at(path: &Path, vocab: Arc<Vocabulary>, fingerprint: &[u8; 32]) -> Option<Kernel> {
        match Kernel::load_with(path, vocab, fingerprint) {
            Ok(kernel) => Some(kernel),
            Err(TablesError::Io { .. }) if !path.exists() => None,
            Err(e) => {
                tracing::warn!(error = %e, "building the kernel tables again");
                None
            }
        }
    }

    /// The kernel of `vocab` with `kind` tries: read from its file in `dir` when that file is
    /// there and good, else built and written there for the next time. Returns the kernel and
    /// whether it was read. A file that cannot be read or written only costs the build: it is
    /// logged, never an error.
    ///
    /// # Errors
    ///
    /// [`TablesError::Build`] when the tables cannot be built.
    pub fn cached(
        vocab: Arc<Vocabulary>,
        kind: TrieKind,
        dir: &Path,
    ) -> Result<(Kernel, bool), TablesError> {
        let fingerprint = vocab.fingerprint();
        let path = tables_path(dir, &fingerprint, kind);
        if let Some(kernel) = Kernel::read_at(&path, vocab.clone(), &fingerprint) {
            return Ok((kernel, true));
        }
        let kernel = Kernel::new(vocab, kind)?;
        let saved = std::fs::create_dir_all(dir)
            .map_err(|e| io_error(dir, &e))
            .and_then(|()| kernel.save_with(&path, &fingerprint));
        match saved {
            Ok(()) => remove_other_formats(&path),
            Err(e) => tracing::warn!(error = %e, "cannot keep the kernel tables"),
        }
        Ok((kernel, false))
    }
}

/// Where programs keep kernel tables by default (the directory to give [`Kernel::cached`]):
/// `$STENCIL_CACHE/tables`, else `~/.cache/stencil/tables`, beside the download cache; `None`
/// when neither `STENCIL_CACHE` nor `HOME` is set.
#[must_use]
pub fn default_tables_dir() -> Option<PathBuf> {
    let from_env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = match from_env("STENCIL_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(from_env("HOME")?).join(".cache/stencil"),
    };
    Some(cache.join("tables"))
}

/// Removes the files beside `path` that hold the same tables in another format version (this
/// build neither reads nor writes them again). Failures are logged, never errors.
fn remove_other_formats(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    // `kernel-<kind>-<fingerprint>.v<format>.bin`: the same name up to the version.
    let Some(stem) = name.strip_suffix(&format!("{FORMAT}.bin")) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let other = entry.file_name();
        let Some(version) = other
            .to_str()
            .and_then(|o| o.strip_prefix(stem))
            .and_then(|rest| rest.strip_suffix(".bin"))
        else {
            continue;
        };
        if version.parse::<u32>().is_ok_and(|v| v != FORMAT)
            && let Err(e) = std::fs::remove_file(entry.path())
        {
            tracing::debug!(error = %e, "cannot remove tables of another format");
        }
    }
}

fn tables_path(dir: &Path, fingerprint: &[u8; 32], kind: TrieKind) -> PathBuf {
    let hex: String = fingerprint[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("kernel-{kind}-{hex}.v{FORMAT}.bin"))
}

/// Serde for counted token sets: each as its bit length, its blocks as one run of bytes
/// (little-endian) and its number of members, so that tables kept on disk read back at the
/// speed of a copy.
mod bits {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::kernel::Counted;

    const BLOCK: usize = std::mem::size_of::<usize>();

    /// A counted set, written.
    pub(super) struct Out<'a>(pub(super) &'a Counted);

    impl Serialize for Out<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let (set, n) = self.0;
            let mut bytes = Vec::with_capacity(set.as_slice().len() * BLOCK);
            for block in set.as_slice() {
                bytes.extend_from_slice(&(*block as u64).to_le_bytes()[..BLOCK]);
            }
            (set.len() as u64, Bytes(&bytes), n).serialize(s)
        }
    }

    /// Bytes serialized as bytes, not as a sequence of numbers.
    struct Bytes<'a>(&'a [u8]);

    impl Serialize for Bytes<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }

    /// A counted set, read back.
    pub(super) struct In(pub(super) Counted);

    impl<'de> Deserialize<'de> for In {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<In, D::Error> {
            let (len, bytes, n) = <(u64, &[u8], usize)>::deserialize(d)?;
            let len = usize::try_from(len).map_err(serde::de::Error::custom)?;
            if bytes.len() != len.div_ceil(BLOCK * 8) * BLOCK {
                return Err(serde::de::Error::invalid_length(
                    bytes.len(),
                    &"the blocks of a set of that length",
                ));
            }
            let blocks = bytes.chunks_exact(BLOCK).map(|c| {
                let mut word = [0u8; 8];
                word[..BLOCK].copy_from_slice(c);
                u64::from_le_bytes(word) as usize
            });
            Ok(In((
                fixedbitset::FixedBitSet::with_capacity_and_blocks(len, blocks),
                n,
            )))
        }
    }
}

/// Serde for one counted token set (see [`bits`]).
pub(crate) mod counted {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::bits::{In, Out};
    use crate::kernel::Counted;

    pub(crate) fn serialize<S: Serializer>(c: &Counted, s: S) -> Result<S::Ok, S::Error> {
        Out(c).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Counted, D::Error> {
        Ok(In::deserialize(d)?.0)
    }
}

/// Serde for a list of counted token sets (see [`bits`]).
pub(crate) mod counted_list {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::bits::{In, Out};
    use crate::kernel::Counted;

    pub(crate) fn serialize<S: Serializer>(list: &[Counted], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(list.iter().map(Out))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Counted>, D::Error> {
        let list = Vec::<In>::deserialize(d)?;
        Ok(list.into_iter().map(|c| c.0).collect())
    }
}

/// Serde for lists of lists of counted token sets (see [`bits`]).
pub(crate) mod counted_levels {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::bits::{In, Out};
    use crate::kernel::Counted;

    pub(crate) fn serialize<S: Serializer>(
        levels: &[Vec<Counted>],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            levels
                .iter()
                .map(|list| list.iter().map(Out).collect::<Vec<_>>()),
        )
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<Vec<Counted>>, D::Error> {
        let levels = Vec::<Vec<In>>::deserialize(d)?;
        Ok(levels
            .into_iter()
            .map(|list| list.into_iter().map(|c| c.0).collect())
            .collect())
    }
}
