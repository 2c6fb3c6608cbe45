//! The official JSON-Schema-Test-Suite, as carried by the source distribution of the Python
//! `jsonschema` package under `jsonschema-<version>/json/` (tests/draft2020-12, tests/draft7,
//! their optional/ folders, remotes/, …).
//!
//! The sdist stays in the cache, pinned by SHA-256; `assets/json-schema-test-suite/` is
//! compared file by file with it on every run and rewritten where it differs.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use flate2::read::GzDecoder;

use super::{LazyPip, Outcome};
use crate::Layout;
use crate::fsutil;
use crate::tools;

/// How the suite is named in progress lines.
pub const LABEL: &str = "json-schema-test-suite";

const VERSION: &str = "4.26.0";
const SDIST_SHA256: &str = "0c26707e2efad8aa1bfc5b7ce170f3fccc2e4918ff85989ba9ffa9facb2be326";

/// Fetches the suite into `assets/json-schema-test-suite/`.
pub fn fetch(layout: &Layout, pip: &LazyPip, force: bool) -> Result<Outcome> {
    let pip_dir = layout.cache.join("pip");
    let sdist = pip_dir.join(format!("jsonschema-{VERSION}.tar.gz"));
    let mut notes = Vec::new();
    let mut downloaded = false;
    let cached_hash = if force {
        None
    } else {
        fsutil::sha256_file(&sdist)?
    };
    if cached_hash.as_deref() != Some(SDIST_SHA256) {
        if let Some(actual) = cached_hash {
            notes.push(format!(
                "{}: expected sha256 {SDIST_SHA256}, got {actual}; fetching again",
                sdist.display()
            ));
        }
        let _ = fs::remove_file(&sdist);
        download(pip, &pip_dir, &sdist)?;
        downloaded = true;
    }
    let written = sync(
        &sdist,
        &format!("jsonschema-{VERSION}/json"),
        &layout.assets.join(LABEL),
    )?;
    Ok(Outcome::new(downloaded, written > 0, notes))
}

fn download(pip: &LazyPip, pip_dir: &Path, sdist: &Path) -> Result<()> {
    fsutil::create_dir(pip_dir)?;
    let spec = format!("jsonschema=={VERSION}");
    let args = [
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--dest",
        ".",
        spec.as_str(),
    ];
    let cmd = pip.get()?.command(pip_dir, args);
    super::break_line();
    tools::run_shown(
        cmd,
        &format!("downloading the {spec} sdist with `pip download`"),
    )?;
    match fsutil::sha256_file(sdist)? {
        None => bail!(
            "`pip download` succeeded but {} is not there",
            sdist.display()
        ),
        Some(actual) if actual != SDIST_SHA256 => {
            Err(fsutil::checksum_error(sdist, SDIST_SHA256, &actual))
        }
        Some(_) => Ok(()),
    }
}

/// Makes `dst` hold every regular file under `prefix/` of the gzipped tarball `tgz`, writing
/// only the files that are missing or differ. Returns how many it wrote.
fn sync(tgz: &Path, prefix: &str, dst: &Path) -> Result<usize> {
    let file = File::open(tgz).with_context(|| format!("opening {}", tgz.display()))?;
    let mut archive = tar::Archive::new(GzDecoder::new(file));
    let (mut seen, mut written) = (0usize, 0usize);
    let mut bytes = Vec::new();
    for entry in archive
        .entries()
        .with_context(|| format!("reading {}", tgz.display()))?
    {
        let mut entry = entry.with_context(|| format!("reading {}", tgz.display()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .with_context(|| format!("reading {}", tgz.display()))?;
        let Ok(rel) = path.strip_prefix(prefix) else {
            continue;
        };
        let rel = safe_relative(rel)
            .with_context(|| format!("{} has an unsafe path {}", tgz.display(), path.display()))?;
        bytes.clear();
        entry
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {} from {}", rel.display(), tgz.display()))?;
        seen += 1;
        let target = dst.join(&rel);
        if !fsutil::same_content(&target, &bytes)? {
            fsutil::write_atomic(&target, &bytes)?;
            written += 1;
        }
    }
    if seen == 0 {
        bail!("{} has no files under {prefix}/", tgz.display());
    }
    Ok(written)
}

/// `rel` if it only goes down (no root, `..` or prefix), so it stays inside the destination.
fn safe_relative(rel: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in rel.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(path: &Path, members: &[(&str, &[u8])]) {
        let gz = flate2::write::GzEncoder::new(File::create(path).unwrap(), Default::default());
        let mut builder = tar::Builder::new(gz);
        for (name, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
    }

    #[test]
    fn sync_writes_only_what_differs() {
        let tmp = tempfile::tempdir().unwrap();
        let tgz = tmp.path().join("sdist.tar.gz");
        tarball(
            &tgz,
            &[
                ("pkg-1/setup.py", b"x"),
                ("pkg-1/json/tests/draft7/type.json", b"[1]"),
                ("pkg-1/json/remotes/a.json", b"{}"),
            ],
        );
        let dst = tmp.path().join("suite");
        assert_eq!(sync(&tgz, "pkg-1/json", &dst).unwrap(), 2);
        assert_eq!(
            fs::read(dst.join("tests/draft7/type.json")).unwrap(),
            b"[1]"
        );
        assert!(!dst.join("setup.py").exists());
        assert_eq!(sync(&tgz, "pkg-1/json", &dst).unwrap(), 0);
        fs::write(dst.join("remotes/a.json"), b"{ }").unwrap();
        assert_eq!(sync(&tgz, "pkg-1/json", &dst).unwrap(), 1);
        assert_eq!(fs::read(dst.join("remotes/a.json")).unwrap(), b"{}");
        assert!(sync(&tgz, "pkg-2/json", &dst).is_err());
    }

    #[test]
    fn unsafe_paths_are_refused() {
        assert_eq!(
            safe_relative(Path::new("a/./b.json")),
            Some(PathBuf::from("a/b.json"))
        );
        assert_eq!(safe_relative(Path::new("../x")), None);
        assert_eq!(safe_relative(Path::new("/etc/x")), None);
        assert_eq!(safe_relative(Path::new("")), None);
    }
}
