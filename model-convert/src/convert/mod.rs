//! A Gemma 3 GGUF file turned into a Hugging Face-style folder (`model.safetensors` in f16,
//! `config.json`, the tokenizer files) for runtimes that cannot read GGUF's quantised blocks,
//! MLX among them. Both runtimes then run the same weights.
//!
//! Every tensor is dequantised to f32 with candle (Q4_K, Q5_0, Q6_K, Q8_0 and the rest of
//! GGUF's types), un-shifted where llama.cpp stored a Gemma norm as `w + 1` (see [`gemma3`]),
//! checked against the shape the config implies and written as f16. The folder is built next
//! to its destination and renamed into place, so it is never half-written.
//!
//! A run is skipped when the folder is up to date: `conversion.json` records the converter's
//! version, the GGUF's SHA-256 and the SHA-256 of every file written, and all of them are checked
//! again (under a second of hashing for the default model, whose conversion takes 4 to 7 s and
//! 1.5 GB of memory; the output is 545 MiB, 511 MiB of it weights).

mod gemma3;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use candle_core::Device;
use candle_core::quantized::gguf_file::{self, Value};
use half::f16;
use safetensors::Dtype;
use safetensors::tensor::TensorView;
use serde_json::json;

use crate::fsutil;

use gemma3::Gemma3Config;

/// Bumped whenever the output changes for the same input, so older folders are redone.
const CONVERTER_VERSION: u64 = 1;

/// The record of a conversion, inside the folder it describes.
const STAMP: &str = "conversion.json";

/// The weights.
const WEIGHTS: &str = "model.safetensors";

/// Files copied from the tokenizer folder: (name, required).
const TOKENIZER_FILES: [(&str, bool); 2] =
    [("tokenizer.json", true), ("tokenizer_config.json", false)];

/// Files copied from the GGUF's folder when they are there: the model's licence and notices,
/// which apply to the converted weights as well.
const NOTICES: [&str; 2] = ["NOTICE.md", "GEMMA_TERMS.html"];

/// What [`convert`] is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The GGUF file.
    pub gguf: PathBuf,
    /// A folder with `tokenizer.json` (and maybe `tokenizer_config.json`) to copy along; its
    /// vocabulary is checked against the GGUF's.
    pub tokenizer: Option<PathBuf>,
    /// The folder to write (replaced as a whole).
    pub out: PathBuf,
    /// Convert even when the folder is up to date.
    pub force: bool,
}

/// What [`convert`] did.
#[derive(Debug)]
pub struct Report {
    /// False when the folder was already up to date.
    pub converted: bool,
    /// Tensors in `model.safetensors`.
    pub tensors: usize,
    /// Bytes of every file in the folder.
    pub bytes: u64,
    /// Time of the whole call, checks included.
    pub elapsed: Duration,
    /// Remarks worth showing (tokenizer and model vocabularies that differ in size, say),
    /// kept in the stamp so an up-to-date run shows them again.
    pub notes: Vec<String>,
}

/// [`convert`], printing a line and the notes.
pub fn run(request: &Request) -> Result<Report> {
    println!(
        "convert {} -> {}",
        request.gguf.display(),
        request.out.display()
    );
    let report = convert(request)?;
    let size = format!(
        "{} tensors, {:.1} MiB",
        report.tensors,
        report.bytes as f64 / (1u64 << 20) as f64
    );
    if report.converted {
        println!(
            "  converted in {:.1}s ({size})",
            report.elapsed.as_secs_f64()
        );
    } else {
        println!(
            "  up to date, checked in {:.1}s ({size})",
            report.elapsed.as_secs_f64()
        );
    }
    for note in &report.notes {
        println!("  note: {note}");
    }
    Ok(report)
}

/// Converts `request.gguf` into `request.out` unless the folder is up to date.
pub fn convert(request: &Request) -> Result<Report> {
    let started = Instant::now();
    let gguf_sha = fsutil::sha256_file(&request.gguf)?.with_context(|| {
        format!(
            "{} not found (`cargo xtask fetch-assets --only model` puts the default model there)",
            request.gguf.display()
        )
    })?;
    let copies = copies(request)?;
    if !request.force
        && let Some(stamp) = up_to_date(&request.out, &gguf_sha, &copies)?
    {
        return Ok(Report {
            converted: false,
            tensors: stamp.tensors,
            bytes: dir_size(&request.out)?,
            elapsed: started.elapsed(),
            notes: stamp.notes,
        });
    }

    let staging = fsutil::temp_dir_next_to(&request.out)?;
    let dir = staging.path();
    let model = write_model(&request.gguf, dir)
        .with_context(|| format!("converting {}", request.gguf.display()))?;
    let mut notes = Vec::new();
    for (src, name) in &copies {
        if *name == "tokenizer.json" {
            notes.extend(
                check_tokenizer(src, &model.tokens)
                    .with_context(|| format!("checking {} against the model", src.display()))?,
            );
        }
        fs::copy(src, dir.join(name))
            .with_context(|| format!("copying {} into {}", src.display(), dir.display()))?;
    }
    if request.tokenizer.is_none() {
        notes.push("no tokenizer folder given: the output has no tokenizer.json".to_owned());
    }

    let mut files = BTreeMap::new();
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let hash = fsutil::sha256_file(&dir.join(&name))?
            .with_context(|| format!("{name} vanished from {}", dir.display()))?;
        files.insert(name, hash);
    }
    let stamp = Stamp {
        converter: CONVERTER_VERSION,
        gguf_file: request
            .gguf
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        gguf_sha256: gguf_sha,
        tensors: model.tensors,
        files,
        notes,
    };
    fs::write(dir.join(STAMP), stamp.render())
        .with_context(|| format!("writing {STAMP} in {}", dir.display()))?;
    fsutil::replace_dir(staging, &request.out)?;
    Ok(Report {
        converted: true,
        tensors: stamp.tensors,
        bytes: dir_size(&request.out)?,
        elapsed: started.elapsed(),
        notes: stamp.notes,
    })
}

/// The files copied into the output: (source, name in the output).
fn copies(request: &Request) -> Result<Vec<(PathBuf, &'static str)>> {
    let mut copies = Vec::new();
    if let Some(dir) = &request.tokenizer {
        for (name, required) in TOKENIZER_FILES {
            let src = dir.join(name);
            if src.is_file() {
                copies.push((src, name));
            } else if required {
                bail!(
                    "{} not found (`cargo xtask fetch-assets --only tokenizers` puts the \
                     default model's tokenizer in assets/tokenizers/gemma3/)",
                    src.display()
                );
            }
        }
    }
    if let Some(dir) = request.gguf.parent() {
        for name in NOTICES {
            let src = dir.join(name);
            if src.is_file() {
                copies.push((src, name));
            }
        }
    }
    Ok(copies)
}

/// The record a conversion leaves in its folder.
#[derive(Debug, Clone, PartialEq)]
struct Stamp {
    converter: u64,
    gguf_file: String,
    gguf_sha256: String,
    tensors: usize,
    /// SHA-256 of every other file of the folder.
    files: BTreeMap<String, String>,
    notes: Vec<String>,
}

impl Stamp {
    fn render(&self) -> String {
        let value = json!({
            "converter": self.converter,
            "gguf": {"file": self.gguf_file, "sha256": self.gguf_sha256},
            "tensors": self.tensors,
            "files": self.files,
            "notes": self.notes,
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The stamp in `text`, or `None` when it is not one this version wrote.
    fn parse(text: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let strings = |v: &serde_json::Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        Some(Self {
            converter: v["converter"].as_u64()?,
            gguf_file: v["gguf"]["file"].as_str()?.to_owned(),
            gguf_sha256: v["gguf"]["sha256"].as_str()?.to_owned(),
            tensors: usize::try_from(v["tensors"].as_u64()?).ok()?,
            files: v["files"]
                .as_object()?
                .iter()
                .map(|(k, h)| Some((k.clone(), h.as_str()?.to_owned())))
                .collect::<Option<_>>()?,
            notes: strings(&v["notes"])?,
        })
    }
}

/// The stamp of `out` if the folder is exactly what converting `gguf_sha` with `copies` gives:
/// same converter, same GGUF, same copied files, and no file missing, extra or changed.
fn up_to_date(
    out: &Path,
    gguf_sha: &str,
    copies: &[(PathBuf, &'static str)],
) -> Result<Option<Stamp>> {
    let text = match fs::read_to_string(out.join(STAMP)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", out.join(STAMP).display())),
    };
    let Some(stamp) = Stamp::parse(&text) else {
        return Ok(None);
    };
    if stamp.converter != CONVERTER_VERSION || stamp.gguf_sha256 != gguf_sha {
        return Ok(None);
    }
    let mut on_disk = Vec::new();
    for entry in fs::read_dir(out).with_context(|| format!("listing {}", out.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != STAMP {
            on_disk.push(name);
        }
    }
    on_disk.sort_unstable();
    if !on_disk.iter().eq(stamp.files.keys()) {
        return Ok(None);
    }
    let mut expected_copies: Vec<&str> = copies.iter().map(|(_, name)| *name).collect();
    expected_copies.push(WEIGHTS);
    expected_copies.push("config.json");
    expected_copies.sort_unstable();
    if !expected_copies
        .iter()
        .copied()
        .eq(stamp.files.keys().map(String::as_str))
    {
        return Ok(None);
    }
    for (src, name) in copies {
        if fsutil::sha256_file(src)?.as_deref() != Some(stamp.files[*name].as_str()) {
            return Ok(None);
        }
    }
    for (name, hash) in &stamp.files {
        if fsutil::sha256_file(&out.join(name))?.as_deref() != Some(hash.as_str()) {
            return Ok(None);
        }
    }
    Ok(Some(stamp))
}

/// What [`write_model`] read and wrote.
struct Model {
    tensors: usize,
    /// The GGUF's vocabulary, by id.
    tokens: Vec<String>,
}

/// Writes `model.safetensors` and `config.json` for the GGUF file `path` into `dir`.
fn write_model(path: &Path, dir: &Path) -> Result<Model> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let content = gguf_file::Content::read(&mut reader).context("reading the GGUF header")?;
    let tied = !content.tensor_infos.contains_key("output.weight");
    let config = Gemma3Config::from_metadata(&content.metadata, tied)?;
    let expected = config.tensor_shapes();

    let mut names: BTreeMap<String, &str> = BTreeMap::new();
    for name in content.tensor_infos.keys() {
        let hf = gemma3::hf_name(name)
            .with_context(|| format!("tensor `{name}` has no Hugging Face counterpart"))?;
        names.insert(hf, name);
    }
    let missing: Vec<&str> = expected
        .keys()
        .filter(|k| !names.contains_key(*k))
        .map(String::as_str)
        .collect();
    let extra: Vec<&str> = names
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        bail!(
            "the tensors are not those of a {}-layer Gemma 3: missing {missing:?}, unexpected \
             {extra:?}",
            config.num_hidden_layers
        );
    }

    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::with_capacity(names.len());
    for (hf, gguf) in &names {
        let (shape, values) = dequantize(&content, &mut reader, gguf)?;
        if shape != expected[hf] {
            bail!(
                "`{gguf}` has shape {shape:?}, but {hf} must be {:?}",
                expected[hf]
            );
        }
        let shift = if gemma3::is_shifted_norm(hf) {
            1.0
        } else {
            0.0
        };
        let bytes = to_f16_bytes(&values, shift).with_context(|| format!("converting `{gguf}`"))?;
        tensors.push((hf.clone(), shape, bytes));
    }
    let views = tensors
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(Dtype::F16, shape.clone(), bytes)
                .map(|view| (name.as_str(), view))
                .with_context(|| format!("laying out {name}"))
        })
        .collect::<Result<Vec<_>>>()?;
    // Hugging Face's loaders look for this entry to know the tensors are PyTorch's.
    let metadata = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    safetensors::serialize_to_file(views, Some(metadata), &dir.join(WEIGHTS))
        .with_context(|| format!("writing {WEIGHTS}"))?;

    let mut config_json = serde_json::to_string_pretty(&config.to_json())?;
    config_json.push('\n');
    fs::write(dir.join("config.json"), config_json).context("writing config.json")?;

    let tokens = match content.metadata.get("tokenizer.ggml.tokens") {
        Some(Value::Array(tokens)) => tokens
            .iter()
            .map(|t| match t {
                Value::String(s) => Ok(s.clone()),
                other => bail!("token {other:?} is not a string"),
            })
            .collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    Ok(Model {
        tensors: tensors.len(),
        tokens,
    })
}

/// The tensor `name` of the GGUF, dequantised to f32: its shape (row-major, outermost first)
/// and its values.
fn dequantize<R: std::io::Read + std::io::Seek>(
    content: &gguf_file::Content,
    reader: &mut R,
    name: &str,
) -> Result<(Vec<usize>, Vec<f32>)> {
    let mut read = || -> candle_core::Result<_> {
        let q = content.tensor(reader, name, &Device::Cpu)?;
        let values = q
            .dequantize(&Device::Cpu)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok((q.shape().dims().to_vec(), values))
    };
    read().with_context(|| format!("dequantising `{name}`"))
}

/// `values - shift` as little-endian f16, refusing values f16 cannot hold.
fn to_f16_bytes(values: &[f32], shift: f32) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(values.len() * 2);
    for (i, &v) in values.iter().enumerate() {
        let h = f16::from_f32(v - shift);
        if !h.is_finite() {
            bail!("value {v} at index {i} does not fit in f16");
        }
        bytes.extend_from_slice(&h.to_le_bytes());
    }
    Ok(bytes)
}

/// Compares the vocabulary of `tokenizer.json` with the GGUF's `tokens`. Different tokens at
/// the same id are an error (the tokenizer belongs to another model); a different count is
/// a note, since ids past the embedding are never produced by the model.
fn check_tokenizer(path: &Path, tokens: &[String]) -> Result<Vec<String>> {
    let text = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
    let by_id = tokenizer_vocab(&json)?;
    let mut notes = Vec::new();
    let differing: Vec<usize> = (0..by_id.len().min(tokens.len()))
        .filter(|&id| !same_token(by_id[id].as_deref(), &tokens[id]))
        .collect();
    if let Some(&first) = differing.first() {
        bail!(
            "{} of the {} shared ids have other tokens, the first id {first}: {:?} in the \
             tokenizer, {:?} in the model",
            differing.len(),
            by_id.len().min(tokens.len()),
            by_id[first],
            tokens[first]
        );
    }
    if by_id.len() != tokens.len() {
        let beyond: Vec<String> = by_id
            .iter()
            .enumerate()
            .skip(tokens.len())
            .take(4)
            .map(|(id, t)| format!("{id} {}", t.as_deref().unwrap_or("(none)")))
            .collect();
        notes.push(format!(
            "tokenizer.json has {} ids, the model's embedding {} rows{}",
            by_id.len(),
            tokens.len(),
            if beyond.is_empty() {
                String::new()
            } else {
                format!(" (beyond them: {})", beyond.join(", "))
            }
        ));
    }
    Ok(notes)
}

/// Whether a `tokenizer.json` token is the GGUF token `gguf`. SentencePiece models keep their
/// user-defined runs of spaces (Gemma's ids 138 to 167) with real spaces, where `tokenizer.json`
/// spells every space `▁` as its normalizer does.
fn same_token(tokenizer: Option<&str>, gguf: &str) -> bool {
    let Some(tokenizer) = tokenizer else {
        return false;
    };
    tokenizer == gguf
        || (gguf.contains(' ')
            && tokenizer
                .chars()
                .eq(gguf.chars().map(|c| if c == ' ' { '▁' } else { c })))
}

/// The tokens of a `tokenizer.json` by id: the model's vocabulary (a map for BPE and
/// WordPiece, a list of `[piece, score]` for Unigram) and the added tokens.
fn tokenizer_vocab(json: &serde_json::Value) -> Result<Vec<Option<String>>> {
    let mut pairs: Vec<(usize, &str)> = Vec::new();
    match &json["model"]["vocab"] {
        serde_json::Value::Object(map) => {
            for (token, id) in map {
                let id = id.as_u64().context("a vocabulary id is not an integer")?;
                pairs.push((usize::try_from(id)?, token));
            }
        }
        serde_json::Value::Array(list) => {
            for (id, entry) in list.iter().enumerate() {
                let token = entry[0]
                    .as_str()
                    .context("a vocabulary entry has no piece")?;
                pairs.push((id, token));
            }
        }
        _ => bail!("no model.vocab"),
    }
    for added in json["added_tokens"].as_array().into_iter().flatten() {
        let id = added["id"].as_u64().context("an added token has no id")?;
        let token = added["content"]
            .as_str()
            .context("an added token has no content")?;
        pairs.push((usize::try_from(id)?, token));
    }
    let len = pairs.iter().map(|&(id, _)| id + 1).max().unwrap_or(0);
    let mut by_id = vec![None; len];
    for (id, token) in pairs {
        by_id[id] = Some(token.to_owned());
    }
    Ok(by_id)
}

/// Bytes of the files directly in `dir`.
fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        total += entry?.metadata()?.len();
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
