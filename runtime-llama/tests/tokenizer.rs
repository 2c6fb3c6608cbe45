//! A GGUF file's own tokenizer ([`runtime_llama::load_tokenizer`]) against the `tokenizer.json`
//! of the same model, and [`runtime_llama::check_tokenizer`] against tokenizers of other models.
//! Needs the assets of `cargo xtask fetch-assets`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use generate::Tokenizer;
use runtime_llama::{check_tokenizer, load_tokenizer};
use vocab_index::TokenId;

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

fn gemma() -> PathBuf {
    assets().join("models/gemma-3-270m-q4_k_m.gguf")
}

fn smollm2() -> PathBuf {
    assets().join("models/smollm2-135m-instruct-q4_1.gguf")
}

fn tokenizer_json(name: &str) -> Result<Tokenizer> {
    let path = assets().join(format!("tokenizers/{name}/tokenizer.json"));
    Tokenizer::from_file(&path)
        .with_context(|| format!("{}: run `cargo xtask fetch-assets`", path.display()))
}

/// Every id of Gemma 3 has the same bytes from the GGUF as from `tokenizer.json`, the same
/// EOS and BOS, and text encodes to the same ids.
#[test]
fn gemma3_bytes_equal_those_of_its_tokenizer_json() -> Result<()> {
    let gguf = load_tokenizer(gemma())?;
    let json = tokenizer_json("gemma3")?;
    let (a, b) = (gguf.vocab(), json.vocab());
    // tokenizer.json adds one special token past the model's 262,144 (the image placeholder
    // of the multimodal Gemma 3 models), which a text model never produces.
    assert_eq!((a.len(), b.len()), (262_144, 262_145), "vocabulary sizes");
    let extra = TokenId::new(262_144).context("id")?;
    assert!(
        b.is_special(extra),
        "{:?}",
        String::from_utf8_lossy(b.bytes(extra))
    );
    let mut differ = Vec::new();
    for i in 0..a.len() {
        let id = TokenId::new(u32::try_from(i)?).context("id")?;
        if a.bytes(id) != b.bytes(id) {
            differ.push(id);
        }
    }
    assert!(
        differ.is_empty(),
        "{} ids differ, e.g. {:?}",
        differ.len(),
        differ
            .iter()
            .take(8)
            .map(|&id| (
                id,
                String::from_utf8_lossy(a.bytes(id)).into_owned(),
                String::from_utf8_lossy(b.bytes(id)).into_owned()
            ))
            .collect::<Vec<_>>()
    );
    // The ends of generation include the tokenizer.json's EOS, and the template is the file's.
    for &eos in b.eos_ids() {
        assert!(
            a.is_eos(eos),
            "{eos} is EOS in tokenizer.json but not in the GGUF"
        );
    }
    assert_eq!(a.bos_id(), b.bos_id());
    // This base model's GGUF carries no chat template (its tokenizer_config.json does).
    assert!(gguf.chat_template().is_none());
    // Encoding agrees on plain text and on special tokens written in the text.
    for text in [
        "The capital of France is Paris.",
        "<start_of_turn>user\n{\"a\": [1, 2.5e3]}<end_of_turn>\n",
        "naïve café — 東京 🙂",
    ] {
        assert_eq!(
            gguf.encode(text, false)?,
            json.encode(text, false)?,
            "{text}"
        );
    }
    Ok(())
}

/// SmolLM2's GGUF (a byte-level BPE vocabulary) is a complete tokenizer: it encodes and decodes
/// text back to itself, has a chat template and ends at `<|im_end|>`.
#[test]
fn smollm2_needs_no_tokenizer_json() -> Result<()> {
    let tok = load_tokenizer(smollm2())?;
    let vocab = tok.vocab();
    assert_eq!(vocab.len(), 49_152);
    let text = "{\"name\": \"Nigeria\", \"continent\": \"Africa\"} naïve 🙂";
    let ids = tok.encode(text, false)?;
    let mut back = Vec::new();
    for id in &ids {
        back.extend_from_slice(vocab.bytes(*id));
    }
    assert_eq!(String::from_utf8(back)?, text);
    let im_end = vocab.token_id(b"<|im_end|>").context("<|im_end|>")?;
    assert!(vocab.is_eos(im_end) && vocab.is_special(im_end));
    let template = tok.chat_template().context("a chat template")?;
    assert!(template.source().contains("<|im_start|>"));
    Ok(())
}

/// A tokenizer.json of another model is refused with the mismatch named; the model's own
/// passes.
#[test]
fn tokenizers_of_other_models_are_refused() -> Result<()> {
    let own = load_tokenizer(gemma())?;
    check_tokenizer(own.vocab(), tokenizer_json("gemma3")?.vocab()).map_err(anyhow::Error::msg)?;
    for name in ["llama3", "qwen3", "llama2"] {
        let err = check_tokenizer(own.vocab(), tokenizer_json(name)?.vocab())
            .expect_err(name)
            .to_string();
        assert!(err.contains("sizes differ"), "{name}: {err}");
        assert!(
            err.contains("sampled tokens have other bytes"),
            "{name}: {err}"
        );
    }
    let smol = load_tokenizer(smollm2())?;
    let err = check_tokenizer(smol.vocab(), tokenizer_json("llama2")?.vocab()).expect_err("llama2");
    assert!(err.contains("other bytes"), "{err}");
    Ok(())
}

#[test]
fn a_missing_or_bad_file_is_a_clear_error() {
    let err = load_tokenizer("/nonexistent/m.gguf")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/nonexistent/m.gguf") && err.contains("no such file"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("stencil-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.gguf");
    std::fs::write(&bad, b"not a gguf file").unwrap();
    let err = load_tokenizer(&bad).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(err.contains("cannot read its vocabulary"), "{err}");
}

/// The vocabulary read from the GGUF metadata alone (`Vocabulary::from_gguf`, no llama.cpp)
/// equals llama.cpp's, on a SentencePiece-style (Gemma 3) and a byte-level BPE (SmolLM2) file:
/// every id's bytes, the special ids, the ends of generation, the end of turn and the BOS.
#[test]
fn the_metadata_reader_agrees_with_llama_cpp_on_both_default_models() -> Result<()> {
    for path in [gemma(), smollm2()] {
        let ours = vocab_index::Vocabulary::from_gguf(&path)?;
        let tokenizer = load_tokenizer(&path)?;
        let theirs = tokenizer.vocab();
        let name = path.display();
        assert_eq!(ours.len(), theirs.len(), "{name}: sizes");
        let differ: Vec<_> = ours
            .iter()
            .zip(theirs.iter())
            .filter(|((_, a), (_, b))| a != b)
            .take(8)
            .map(|((id, a), (_, b))| {
                (
                    id,
                    String::from_utf8_lossy(a).into_owned(),
                    String::from_utf8_lossy(b).into_owned(),
                )
            })
            .collect();
        assert!(differ.is_empty(), "{name}: bytes differ: {differ:?}");
        let only = |a: &vocab_index::Vocabulary, b: &vocab_index::Vocabulary| {
            a.special()
                .difference(b.special())
                .take(8)
                .map(|i| {
                    (
                        i,
                        String::from_utf8_lossy(a.iter().nth(i).map_or(&[][..], |t| t.1))
                            .into_owned(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let (extra, missing) = (only(&ours, theirs), only(theirs, &ours));
        assert!(
            extra.is_empty() && missing.is_empty(),
            "{name}: special ids only ours {extra:?}, only llama.cpp's {missing:?}"
        );
        assert_eq!(
            ours.eos_ids(),
            theirs.eos_ids(),
            "{name}: ends of generation"
        );
        // When the file names no end-of-turn token, llama.cpp takes the first known text in
        // its hash map's order (SmolLM2: `<|endoftext|>`); the reader takes the first in its
        // list's order (`<|im_end|>`, ChatML's end of turn). Both end generation.
        assert_eq!(ours.end_of_turn_ids().len(), 1, "{name}: end of turn");
        for id in ours.end_of_turn_ids() {
            assert!(
                theirs.is_eos(*id),
                "{name}: end of turn {id} does not end generation"
            );
        }
        assert_eq!(ours.bos_id(), theirs.bos_id(), "{name}: BOS");
    }
    Ok(())
}

/// A loaded model's tokenizer shares the vocabulary llama.cpp read with the weights: the same
/// tokens, special ids and encoding as a vocabulary-only load of the file.
#[test]
fn a_loaded_models_tokenizer_equals_the_files() -> Result<()> {
    let model = runtime_llama::LlamaModel::load(
        gemma(),
        runtime_llama::LlamaConfig::default().with_n_ctx(256),
    )?;
    let shared = model.tokenizer()?;
    let own = load_tokenizer(gemma())?;
    assert_eq!(shared.vocab().fingerprint(), own.vocab().fingerprint());
    let text = "Adamma went home to Nigeria <start_of_turn> for the hols";
    assert_eq!(shared.encode(text, true)?, own.encode(text, true)?);
    drop(model);
    // The tokenizer outlives the model it came from.
    assert!(!shared.encode(text, false)?.is_empty());
    Ok(())
}

/// The kept vocabulary files `load_with_kernel` leaves in `dir`.
fn kept_files(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("gguf-vocab-"))
        {
            files.push(path);
        }
    }
    Ok(files)
}

/// `load_with_kernel` keeps the file's vocabulary beside the kernel tables, takes it up again
/// on the next start-up without writing it anew, and uses a kept vocabulary only when it is
/// the model's own: another model's, left under this model's name, is replaced, never used.
#[test]
fn a_kept_vocabulary_is_used_only_when_it_is_the_models_own() -> Result<()> {
    use runtime_llama::{LlamaConfig, LlamaModel};
    let config = LlamaConfig::default().with_n_ctx(256);
    let own = load_tokenizer(gemma())?;
    let dir = tempfile::tempdir()?;
    let text = "Adamma went home to Nigeria <start_of_turn> for the hols";

    // First start-up: nothing kept yet.
    let (_, first, kernel) =
        LlamaModel::load_with_kernel(gemma(), config.clone(), Some(dir.path()))?;
    assert_eq!(first.vocab().fingerprint(), own.vocab().fingerprint());
    assert!(std::sync::Arc::ptr_eq(first.vocab(), kernel.vocab()));
    let kept = kept_files(dir.path())?;
    assert_eq!(kept.len(), 1, "{kept:?}");
    let (bytes, modified) = (
        std::fs::read(&kept[0])?,
        std::fs::metadata(&kept[0])?.modified()?,
    );

    // Second: the kept vocabulary is the model's, and is used as it is.
    let (_, second, kernel) =
        LlamaModel::load_with_kernel(gemma(), config.clone(), Some(dir.path()))?;
    assert_eq!(second.vocab().fingerprint(), own.vocab().fingerprint());
    assert!(std::sync::Arc::ptr_eq(second.vocab(), kernel.vocab()));
    assert_eq!(second.encode(text, true)?, own.encode(text, true)?);
    assert!(second.chat_template().is_some() == own.chat_template().is_some());
    assert_eq!(
        std::fs::metadata(&kept[0])?.modified()?,
        modified,
        "written again"
    );

    // Another model's kept vocabulary under this model's name.
    let other_dir = tempfile::tempdir()?;
    let (_, other, _) =
        LlamaModel::load_with_kernel(smollm2(), config.clone(), Some(other_dir.path()))?;
    assert_ne!(other.vocab().fingerprint(), own.vocab().fingerprint());
    let other_kept = kept_files(other_dir.path())?;
    assert_eq!(other_kept.len(), 1, "{other_kept:?}");
    std::fs::copy(&other_kept[0], &kept[0])?;
    let (_, third, kernel) = LlamaModel::load_with_kernel(gemma(), config, Some(dir.path()))?;
    assert_eq!(third.vocab().fingerprint(), own.vocab().fingerprint());
    assert_eq!(kernel.vocab().len(), own.vocab().len());
    assert_eq!(
        std::fs::read(&kept[0])?,
        bytes,
        "the model's own vocabulary kept again"
    );
    Ok(())
}
