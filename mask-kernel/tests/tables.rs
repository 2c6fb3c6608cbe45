//! Kernel tables on disk: read back exactly as built, and refused (then built again) when they
//! belong to another vocabulary or were altered.

use std::sync::Arc;

use mask_kernel::{Kernel, TablesError};
use vocab_index::{TokenId, TrieKind, Vocabulary};

fn vocab(extra: &str) -> Arc<Vocabulary> {
    let tokens = [
        "<eos>", "{", "}", "\"", "\"a", "a\"", "ab", "é", "\\\"", ":", ",", " ", "\"}", "12", extra,
    ];
    let v = Vocabulary::new(
        tokens.iter().map(|t| t.as_bytes()),
        [TokenId::new(0).unwrap()],
    )
    .unwrap()
    .with_eos_ids(vec![TokenId::new(0).unwrap()])
    .unwrap();
    Arc::new(v)
}

fn encoded(kernel: &Kernel) -> Vec<u8> {
    postcard::to_stdvec(kernel).unwrap()
}

#[test]
fn tables_are_read_back_as_built() {
    let dir = tempfile::tempdir().unwrap();
    for kind in [TrieKind::Flat, TrieKind::DoubleArray] {
        let v = vocab("xyz");
        let built = Kernel::new(v.clone(), kind).unwrap();
        let (first, read) = Kernel::cached(v.clone(), kind, dir.path()).unwrap();
        assert!(!read, "nothing to read the first time");
        let (second, read) = Kernel::cached(v.clone(), kind, dir.path()).unwrap();
        assert!(read, "the file written the first time is read");
        assert_eq!(encoded(&first), encoded(&built));
        assert_eq!(encoded(&second), encoded(&built));
        assert!(Arc::ptr_eq(second.vocab(), &v));
        assert_eq!(second.mask_len(), v.len());
    }
}

#[test]
fn tables_of_other_format_versions_are_removed_when_new_ones_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let v = vocab("xyz");
    let path = Kernel::tables_path(dir.path(), &v, TrieKind::Flat);
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let (stem, _) = name.rsplit_once(".v").unwrap();
    let old = dir.path().join(format!("{stem}.v1.bin"));
    let other_kind = Kernel::tables_path(dir.path(), &v, TrieKind::DoubleArray);
    let other_vocab = Kernel::tables_path(dir.path(), &vocab("xy"), TrieKind::Flat);
    let unrelated = dir.path().join(format!("{stem}.vnext.bin"));
    for f in [&old, &other_kind, &other_vocab, &unrelated] {
        std::fs::write(f, b"tables").unwrap();
    }
    let (_, read) = Kernel::cached(v.clone(), TrieKind::Flat, dir.path()).unwrap();
    assert!(!read);
    assert!(path.is_file(), "the tables are written");
    assert!(!old.exists(), "tables of an older format are removed");
    // Other tries, other vocabularies and names that are not tables are left.
    for f in [&other_kind, &other_vocab, &unrelated] {
        assert!(f.is_file(), "{} is kept", f.display());
    }
}

#[test]
fn tables_of_another_vocabulary_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (vocab("xyz"), vocab("xy"));
    let path = dir.path().join("tables.bin");
    Kernel::new(a, TrieKind::Flat).unwrap().save(&path).unwrap();
    let err = Kernel::load(&path, b.clone()).unwrap_err();
    assert!(matches!(err, TablesError::OtherVocabulary { .. }), "{err}");
    // Keyed by fingerprint, the other vocabulary gets its own file.
    let (_, read) = Kernel::cached(b, TrieKind::Flat, dir.path()).unwrap();
    assert!(!read);
}

#[test]
fn altered_or_truncated_tables_are_refused_and_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let v = vocab("xyz");
    let (built, _) = Kernel::cached(v.clone(), TrieKind::Flat, dir.path()).unwrap();
    let path = Kernel::tables_path(dir.path(), &v, TrieKind::Flat);
    let good = std::fs::read(&path).unwrap();

    let mut altered = good.clone();
    let last = altered.len() - 1;
    altered[last] ^= 1;
    std::fs::write(&path, &altered).unwrap();
    let err = Kernel::load(&path, v.clone()).unwrap_err();
    assert!(matches!(err, TablesError::Format { .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");

    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    assert!(matches!(
        Kernel::load(&path, v.clone()).unwrap_err(),
        TablesError::Format { .. }
    ));
    std::fs::write(&path, b"not tables").unwrap();
    assert!(matches!(
        Kernel::load(&path, v.clone()).unwrap_err(),
        TablesError::Format { .. }
    ));

    // The bad file is replaced by good tables.
    let (again, read) = Kernel::cached(v.clone(), TrieKind::Flat, dir.path()).unwrap();
    assert!(!read);
    assert_eq!(encoded(&again), encoded(&built));
    assert_eq!(std::fs::read(&path).unwrap(), good);
}
