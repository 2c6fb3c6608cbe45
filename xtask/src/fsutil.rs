//! File helpers for asset fetching: SHA-256 of files and streams, `SHA256SUMS` files in the
//! format `sha256sum` reads, and writes that never leave a half-written file behind (a
//! temporary file in the destination's directory, renamed into place).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// Lowercase hexadecimal of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// SHA-256 of everything `reader` yields, as lowercase hex.
pub fn sha256_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// SHA-256 of the file at `path`, or `None` when it does not exist.
pub fn sha256_file(path: &Path) -> Result<Option<String>> {
    match File::open(path) {
        Ok(f) => sha256_reader(f)
            .map(Some)
            .with_context(|| format!("reading {}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
    }
}

/// The error for a file whose SHA-256 is not the expected one.
pub fn checksum_error(path: &Path, expected: &str, actual: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "checksum mismatch for {}: expected sha256 {expected}, got {actual}",
        path.display()
    )
}

/// A writer that hashes everything written through it.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Flushes and returns the inner writer and the SHA-256 (lowercase hex) of what was written.
    pub fn finish(mut self) -> io::Result<(W, String)> {
        self.inner.flush()?;
        Ok((self.inner, hex(&self.hasher.finalize())))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// File name → SHA-256, rendered as a `SHA256SUMS` file (`<hash>  <name>` per line, sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums(pub BTreeMap<String, String>);

impl Sums {
    /// Parses `sha256sum` output; a `*` before the name (binary mode) is accepted.
    pub fn parse(text: &str) -> Result<Self> {
        let mut map = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            let Some((hash, name)) = line.split_once(' ') else {
                bail!("line {}: expected `<sha256>  <file name>`", i + 1);
            };
            let name = name.trim_start_matches([' ', '*']);
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || name.is_empty() {
                bail!("line {}: expected `<sha256>  <file name>`", i + 1);
            }
            map.insert(name.to_owned(), hash.to_ascii_lowercase());
        }
        Ok(Self(map))
    }

    /// Reads and parses `path`, or `None` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>> {
        match fs::read_to_string(path) {
            Ok(text) => Self::parse(&text)
                .map(Some)
                .with_context(|| format!("parsing {}", path.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// The file's text.
    pub fn render(&self) -> String {
        self.0
            .iter()
            .map(|(name, hash)| format!("{hash}  {name}\n"))
            .collect()
    }
}

/// Makes `dir` and its parents.
pub fn create_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// A fresh temporary file next to `dst`, to be renamed onto it.
pub fn temp_next_to(dst: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = parent(dst)?;
    create_dir(dir)?;
    builder(false)
        .suffix(".part")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))
}

/// Renames a finished temporary file onto `dst`.
pub fn persist(tmp: tempfile::NamedTempFile, dst: &Path) -> Result<()> {
    tmp.persist(dst)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", dst.display()))?;
    Ok(())
}

/// Writes `bytes` to `dst` through a temporary file.
pub fn write_atomic(dst: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = temp_next_to(dst)?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", dst.display()))?;
    persist(tmp, dst)
}

/// Copies `src` to `dst` through a temporary file.
pub fn copy_atomic(src: &Path, dst: &Path) -> Result<()> {
    let mut tmp = temp_next_to(dst)?;
    let mut from = File::open(src).with_context(|| format!("opening {}", src.display()))?;
    io::copy(&mut from, tmp.as_file_mut())
        .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
    persist(tmp, dst)
}

/// Hard-links `src` to `dst` (replacing `dst`), or copies it when a link is impossible
/// (another file system, say).
pub fn link_or_copy(src: &Path, dst: &Path) -> Result<()> {
    let dir = parent(dst)?;
    create_dir(dir)?;
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".xtask-{name}.{}.link", std::process::id()));
    let _ = fs::remove_file(&tmp);
    if fs::hard_link(src, &tmp).is_ok() {
        if let Err(e) = fs::rename(&tmp, dst) {
            let _ = fs::remove_file(&tmp);
            return Err(e).with_context(|| format!("writing {}", dst.display()));
        }
        return Ok(());
    }
    copy_atomic(src, dst)
}

/// A fresh temporary directory next to `dst`, to be renamed onto it with [`replace_dir`].
pub fn temp_dir_next_to(dst: &Path) -> Result<tempfile::TempDir> {
    let dir = parent(dst)?;
    create_dir(dir)?;
    builder(true)
        .tempdir_in(dir)
        .with_context(|| format!("creating a temporary directory in {}", dir.display()))
}

/// Replaces the directory `dst` (if any) with the finished temporary directory `staging`.
pub fn replace_dir(staging: tempfile::TempDir, dst: &Path) -> Result<()> {
    match fs::remove_dir_all(dst) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", dst.display())),
    }
    let path = staging.keep();
    fs::rename(&path, dst)
        .with_context(|| format!("moving {} to {}", path.display(), dst.display()))
}

/// Whether the file at `path` holds exactly `bytes` (false when it does not exist).
pub fn same_content(path: &Path, bytes: &[u8]) -> Result<bool> {
    match fs::metadata(path) {
        Ok(m) if m.len() != bytes.len() as u64 => return Ok(false),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    let on_disk = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(on_disk == bytes)
}

/// Whether two files hold the same bytes (false when either does not exist).
pub fn same_file_content(a: &Path, b: &Path) -> Result<bool> {
    match fs::read(b) {
        Ok(bytes) => same_content(a, &bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("reading {}", b.display())),
    }
}

/// A temporary-file builder whose files (`0o644`) and folders (`0o755`) are readable by all,
/// as assets are (temporary files default to owner-only); the process umask still applies.
fn builder(dir_mode: bool) -> tempfile::Builder<'static, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".xtask-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(if dir_mode {
            0o755
        } else {
            0o644
        }));
    }
    #[cfg(not(unix))]
    let _ = dir_mode;
    builder
}

fn parent(path: &Path) -> Result<&Path> {
    path.parent()
        .with_context(|| format!("{} has no parent directory", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            sha256_reader(&b""[..]).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_reader(&b"abc"[..]).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hashing_writer_matches_reader() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(&data[..1234]).unwrap();
        w.write_all(&data[1234..]).unwrap();
        let (inner, hash) = w.finish().unwrap();
        assert_eq!(inner, data);
        assert_eq!(hash, sha256_reader(&data[..]).unwrap());
    }

    #[test]
    fn sums_round_trip_and_sha256sum_format() {
        let text = "\
ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.json
E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855 *a.json
";
        let sums = Sums::parse(text).unwrap();
        assert_eq!(sums.0.len(), 2);
        assert_eq!(
            sums.render(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a.json\n\
             ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.json\n"
        );
        assert_eq!(Sums::parse(&sums.render()).unwrap(), sums);
    }

    #[test]
    fn sums_reject_malformed_lines() {
        assert!(Sums::parse("nothex  a.json\n").is_err());
        assert!(
            Sums::parse("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n")
                .is_err()
        );
    }

    #[test]
    fn atomic_writes_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("sub/a.txt");
        write_atomic(&a, b"hello").unwrap();
        assert!(same_content(&a, b"hello").unwrap());
        assert!(!same_content(&a, b"hellO").unwrap());
        assert!(!same_content(&dir.path().join("missing"), b"").unwrap());

        let b = dir.path().join("other/b.txt");
        link_or_copy(&a, &b).unwrap();
        assert!(same_file_content(&a, &b).unwrap());
        copy_atomic(&a, &b).unwrap();
        assert!(same_file_content(&a, &b).unwrap());
        // No temporary files are left behind.
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("other"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("b.txt")]);
        assert_eq!(sha256_file(&dir.path().join("missing")).unwrap(), None);
    }
}
