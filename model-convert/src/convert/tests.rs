//! The conversion end to end on a small synthetic Gemma 3 written with candle's GGUF writer,
//! and on the real default model when `assets/` has it.

use std::collections::HashMap;
use std::path::Path;

use candle_core::Tensor;
use candle_core::quantized::{GgmlDType, QTensor};
use safetensors::SafeTensors;

use super::gemma3::tests::metadata;
use super::*;

/// A deterministic value for element `i` of the tensor numbered `seed`, in [-0.5, 0.5).
fn value(seed: usize, i: usize) -> f32 {
    let x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (seed as u64).wrapping_mul(31);
    ((x >> 40) % 1000) as f32 / 1000.0 - 0.5
}

/// The GGUF name of a Hugging Face tensor name.
fn gguf_name(hf: &str) -> String {
    let stem = hf.strip_suffix(".weight").unwrap();
    let stem = match stem {
        "model.embed_tokens" => "token_embd".to_owned(),
        "model.norm" => "output_norm".to_owned(),
        "lm_head" => "output".to_owned(),
        _ => {
            let rest = stem.strip_prefix("model.layers.").unwrap();
            let (layer, name) = rest.split_once('.').unwrap();
            let (gguf, _) = gemma3::LAYER_TENSORS
                .iter()
                .find(|(_, h)| *h == name)
                .unwrap();
            format!("blk.{layer}.{gguf}")
        }
    };
    format!("{stem}.weight")
}

/// Writes a 2-layer Gemma 3 with a vocabulary of `vocab` tokens to `path`: norms as f32 with
/// llama.cpp's `+ 1`, the embedding as f16, the matrices as Q8_0. Returns each tensor's f32
/// values as written (before quantisation), by Hugging Face name.
fn write_tiny_gguf(path: &Path, vocab: usize) -> HashMap<String, Vec<f32>> {
    let meta = metadata(2, vocab);
    let config = Gemma3Config::from_metadata(&meta, true).unwrap();
    let mut written = HashMap::new();
    let mut qtensors = Vec::new();
    for (seed, (hf, shape)) in config.tensor_shapes().into_iter().enumerate() {
        let n: usize = shape.iter().product();
        let shifted = gemma3::is_shifted_norm(&hf);
        let values: Vec<f32> = (0..n)
            .map(|i| value(seed, i) + if shifted { 1.0 } else { 0.0 })
            .collect();
        let tensor = Tensor::from_vec(values.clone(), shape.as_slice(), &Device::Cpu).unwrap();
        let dtype = if shape.len() == 1 {
            GgmlDType::F32
        } else if hf == "model.embed_tokens.weight" {
            GgmlDType::F16
        } else {
            GgmlDType::Q8_0
        };
        qtensors.push((gguf_name(&hf), QTensor::quantize(&tensor, dtype).unwrap()));
        written.insert(hf, values);
    }
    let meta_refs: Vec<(&str, &Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensor_refs: Vec<(&str, &QTensor)> =
        qtensors.iter().map(|(k, q)| (k.as_str(), q)).collect();
    let mut file = File::create(path).unwrap();
    gguf_file::write(&mut file, &meta_refs, &tensor_refs).unwrap();
    written
}

/// The f16 tensor `name` of a safetensors file as f32, with its shape.
fn read_f16(st: &SafeTensors<'_>, name: &str) -> (Vec<usize>, Vec<f32>) {
    let view = st.tensor(name).unwrap();
    assert_eq!(view.dtype(), Dtype::F16, "{name}");
    let values = view
        .data()
        .chunks_exact(2)
        .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect();
    (view.shape().to_vec(), values)
}

fn tokenizer_json(tokens: &[&str]) -> String {
    let vocab: serde_json::Map<String, serde_json::Value> = tokens
        .iter()
        .enumerate()
        .map(|(id, t)| ((*t).to_owned(), json!(id)))
        .collect();
    json!({"model": {"type": "BPE", "vocab": vocab}, "added_tokens": []}).to_string()
}

#[test]
fn converts_a_small_synthetic_model() {
    let tmp = tempfile::tempdir().unwrap();
    let gguf = tmp.path().join("tiny.gguf");
    let written = write_tiny_gguf(&gguf, 64);
    let tok_dir = tmp.path().join("tok");
    fs::create_dir(&tok_dir).unwrap();
    let tokens: Vec<String> = (0..64).map(|i| format!("t{i}")).collect();
    let mut with_extra: Vec<&str> = tokens.iter().map(String::as_str).collect();
    with_extra.push("<image>");
    fs::write(tok_dir.join("tokenizer.json"), tokenizer_json(&with_extra)).unwrap();
    fs::write(tmp.path().join("NOTICE.md"), "terms").unwrap();
    let request = Request {
        gguf: gguf.clone(),
        tokenizer: Some(tok_dir.clone()),
        out: tmp.path().join("out"),
        force: false,
    };

    let report = convert(&request).unwrap();
    assert!(report.converted);
    assert_eq!(report.tensors, 2 + 2 * gemma3::LAYER_TENSORS.len());
    assert_eq!(
        report.notes,
        ["tokenizer.json has 65 ids, the model's embedding 64 rows (beyond them: 64 <image>)"]
    );
    let out = &request.out;
    let mut files: Vec<String> = fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "NOTICE.md",
            "config.json",
            "conversion.json",
            "model.safetensors",
            "tokenizer.json"
        ]
    );

    let bytes = fs::read(out.join(WEIGHTS)).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.len(), written.len());
    for (name, original) in &written {
        let (shape, values) = read_f16(&st, name);
        assert_eq!(shape.iter().product::<usize>(), original.len(), "{name}");
        // Norms lose llama.cpp's `+ 1`; Q8_0 and f16 cost a little precision.
        let shift = if gemma3::is_shifted_norm(name) {
            1.0
        } else {
            0.0
        };
        for (i, (&got, &orig)) in values.iter().zip(original).enumerate() {
            assert!(
                (got - (orig - shift)).abs() < 0.01,
                "{name}[{i}]: {got} vs {}",
                orig - shift
            );
        }
    }
    assert_eq!(
        read_f16(&st, "model.layers.1.self_attn.k_proj.weight").0,
        [32, 64]
    );
    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["num_hidden_layers"], 2);
    assert_eq!(config["vocab_size"], 64);

    // A second run finds the folder up to date, and says the same notes.
    let again = convert(&request).unwrap();
    assert!(!again.converted);
    assert_eq!(again.notes, report.notes);
    assert_eq!(again.tensors, report.tensors);

    // A changed output, a changed copied file, a changed GGUF or `force` converts again.
    fs::write(out.join("config.json"), "{}").unwrap();
    assert!(convert(&request).unwrap().converted);
    fs::write(tmp.path().join("NOTICE.md"), "new terms").unwrap();
    assert!(convert(&request).unwrap().converted);
    assert_eq!(fs::read(out.join("NOTICE.md")).unwrap(), b"new terms");
    assert!(!convert(&request).unwrap().converted);
    fs::remove_file(out.join("NOTICE.md")).unwrap();
    assert!(convert(&request).unwrap().converted);
    write_tiny_gguf(&gguf, 64);
    let mut tweaked = fs::read(&gguf).unwrap();
    *tweaked.last_mut().unwrap() ^= 1;
    fs::write(&gguf, tweaked).unwrap();
    assert!(convert(&request).unwrap().converted);
    let forced = Request {
        force: true,
        ..request.clone()
    };
    assert!(convert(&forced).unwrap().converted);

    // No tokenizer folder: no tokenizer files, and a note saying so.
    let bare = Request {
        tokenizer: None,
        out: tmp.path().join("bare"),
        ..request.clone()
    };
    let report = convert(&bare).unwrap();
    assert!(!bare.out.join("tokenizer.json").exists());
    assert!(
        report.notes[0].contains("no tokenizer"),
        "{:?}",
        report.notes
    );
}

#[test]
fn refuses_a_tokenizer_of_another_model() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tokenizer.json");
    let tokens: Vec<String> = (0..4).map(|i| format!("t{i}")).collect();
    fs::write(&path, tokenizer_json(&["t0", "t1", "x", "t3"])).unwrap();
    let err = check_tokenizer(&path, &tokens).unwrap_err().to_string();
    assert!(err.contains("first id 2"), "{err}");
    fs::write(&path, tokenizer_json(&["t0", "t1", "t2"])).unwrap();
    assert_eq!(
        check_tokenizer(&path, &tokens).unwrap(),
        ["tokenizer.json has 3 ids, the model's embedding 4 rows"]
    );
    fs::write(&path, tokenizer_json(&["t0", "t1", "t2", "t3"])).unwrap();
    assert!(check_tokenizer(&path, &tokens).unwrap().is_empty());
    // SentencePiece's runs of spaces are `▁` in tokenizer.json.
    let spaces = ["t0".to_owned(), "  ".to_owned(), "a b".to_owned()];
    fs::write(&path, tokenizer_json(&["t0", "▁▁", "a▁b"])).unwrap();
    assert!(check_tokenizer(&path, &spaces).unwrap().is_empty());
    fs::write(&path, tokenizer_json(&["t0", "▁", "a▁b"])).unwrap();
    assert!(check_tokenizer(&path, &spaces).is_err());
}

#[test]
fn unigram_vocabularies_and_added_tokens_are_read() {
    let json = json!({
        "model": {"type": "Unigram", "vocab": [["a", 0.0], ["b", -1.0]]},
        "added_tokens": [{"id": 3, "content": "<x>"}],
    });
    assert_eq!(
        tokenizer_vocab(&json).unwrap(),
        [Some("a".into()), Some("b".into()), None, Some("<x>".into())]
    );
}

#[test]
fn a_tensor_is_refused_when_it_does_not_fit_in_f16() {
    assert_eq!(
        to_f16_bytes(&[1.0, 2.0], 1.0).unwrap(),
        [0x00, 0x00, 0x00, 0x3c]
    );
    let err = to_f16_bytes(&[0.0, 1e6], 0.0).unwrap_err().to_string();
    assert!(err.contains("index 1"), "{err}");
}

#[test]
fn stamps_round_trip() {
    let stamp = Stamp {
        converter: CONVERTER_VERSION,
        gguf_file: "m.gguf".into(),
        gguf_sha256: "ab".repeat(32),
        tensors: 3,
        files: BTreeMap::from([("config.json".into(), "cd".repeat(32))]),
        notes: vec!["a note".into()],
    };
    assert_eq!(Stamp::parse(&stamp.render()), Some(stamp));
    assert_eq!(Stamp::parse("{}"), None);
    assert_eq!(Stamp::parse("not json"), None);
}

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

/// Decodes row `row` of a Q8_0 matrix with `cols` columns straight from the file's bytes
/// (blocks of an f16 scale and 32 signed bytes), independently of candle.
fn q8_0_row(
    path: &Path,
    content: &gguf_file::Content,
    name: &str,
    row: usize,
    cols: usize,
) -> Vec<f32> {
    use std::io::{Read, Seek, SeekFrom};
    const BLOCK: usize = 32;
    const BLOCK_BYTES: usize = 2 + BLOCK;
    let info = &content.tensor_infos[name];
    assert_eq!(info.ggml_dtype, GgmlDType::Q8_0, "{name}");
    let row_bytes = cols / BLOCK * BLOCK_BYTES;
    let mut file = File::open(path).unwrap();
    file.seek(SeekFrom::Start(
        content.tensor_data_offset + info.offset + (row * row_bytes) as u64,
    ))
    .unwrap();
    let mut raw = vec![0u8; row_bytes];
    file.read_exact(&mut raw).unwrap();
    raw.chunks_exact(BLOCK_BYTES)
        .flat_map(|block| {
            let scale = f16::from_le_bytes([block[0], block[1]]).to_f32();
            block[2..].iter().map(move |&q| f32::from(q as i8) * scale)
        })
        .collect()
}

/// The default model converted into a temporary folder: 236 tensors of the published shapes,
/// all f16, each equal to candle's f32 dequantisation (minus 1 for the norms), the embedding
/// equal to a decoding of its Q8_0 bytes by hand, and the tokenizer matching the GGUF's
/// vocabulary. Skipped (with the reason printed) when the model is not in `assets/`.
#[test]
fn converts_the_default_model() {
    let assets = assets();
    let gguf = assets.join("models/gemma-3-270m-q4_k_m.gguf");
    let tokenizer = assets.join("tokenizers/gemma3");
    if !gguf.is_file() || !tokenizer.join("tokenizer.json").is_file() {
        println!(
            "skipped: {} or the gemma3 tokenizer is missing (`cargo xtask fetch-assets`)",
            gguf.display()
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let request = Request {
        gguf: gguf.clone(),
        tokenizer: Some(tokenizer),
        out: tmp.path().join("out"),
        force: false,
    };
    let report = convert(&request).unwrap();
    println!(
        "converted in {:.1}s: {} tensors, {} bytes; notes {:?}",
        report.elapsed.as_secs_f64(),
        report.tensors,
        report.bytes,
        report.notes
    );
    assert_eq!(report.tensors, 2 + 18 * 13);

    let bytes = fs::read(request.out.join(WEIGHTS)).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.len(), 236);
    assert!(st.tensors().iter().all(|(_, v)| v.dtype() == Dtype::F16));
    let shape = |name: &str| st.tensor(name).unwrap().shape().to_vec();
    assert_eq!(shape("model.embed_tokens.weight"), [262_144, 640]);
    assert_eq!(shape("model.layers.0.self_attn.q_proj.weight"), [1024, 640]);
    assert_eq!(shape("model.layers.0.self_attn.k_proj.weight"), [256, 640]);
    assert_eq!(shape("model.layers.0.self_attn.o_proj.weight"), [640, 1024]);
    assert_eq!(shape("model.layers.0.self_attn.q_norm.weight"), [256]);
    assert_eq!(shape("model.layers.17.mlp.down_proj.weight"), [640, 2048]);
    assert_eq!(shape("model.norm.weight"), [640]);

    // One tensor of each storage type, against candle's f32 dequantisation of the source.
    let mut reader = BufReader::new(File::open(&gguf).unwrap());
    let content = gguf_file::Content::read(&mut reader).unwrap();
    let mut seen_types = Vec::new();
    let mut norm_means = Vec::new();
    for (gguf_name, hf) in [
        ("token_embd.weight", "model.embed_tokens.weight"),
        (
            "blk.0.attn_q.weight",
            "model.layers.0.self_attn.q_proj.weight",
        ),
        (
            "blk.0.attn_output.weight",
            "model.layers.0.self_attn.o_proj.weight",
        ),
        (
            "blk.0.ffn_down.weight",
            "model.layers.0.mlp.down_proj.weight",
        ),
        (
            "blk.5.attn_norm.weight",
            "model.layers.5.input_layernorm.weight",
        ),
        (
            "blk.5.attn_q_norm.weight",
            "model.layers.5.self_attn.q_norm.weight",
        ),
        (
            "blk.5.attn_k_norm.weight",
            "model.layers.5.self_attn.k_norm.weight",
        ),
        (
            "blk.5.post_ffw_norm.weight",
            "model.layers.5.post_feedforward_layernorm.weight",
        ),
        ("output_norm.weight", "model.norm.weight"),
    ] {
        seen_types.push(content.tensor_infos[gguf_name].ggml_dtype);
        let (src_shape, src) = dequantize(&content, &mut reader, gguf_name).unwrap();
        let (shape, got) = read_f16(&st, hf);
        assert_eq!(shape, src_shape, "{hf}");
        let shift = if gemma3::is_shifted_norm(hf) {
            1.0
        } else {
            0.0
        };
        for (i, (&g, &s)) in got.iter().zip(&src).enumerate() {
            let want = s - shift;
            // f16 keeps 11 significant bits.
            assert!(
                (g - want).abs() <= want.abs() / 1024.0 + 1e-7,
                "{hf}[{i}]: {g} vs {want}"
            );
        }
        if shift != 0.0 {
            let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
            norm_means.push((hf, mean(&src), mean(&got)));
        }
    }
    println!("norm means (GGUF, converted): {norm_means:?}");
    for &(hf, src, got) in &norm_means {
        assert!((src - 1.0 - got).abs() < 1e-3, "{hf}: {src} vs {got}");
    }
    for dtype in [
        GgmlDType::Q8_0,
        GgmlDType::Q5_0,
        GgmlDType::Q4K,
        GgmlDType::Q6K,
        GgmlDType::F32,
    ] {
        assert!(
            seen_types.contains(&dtype),
            "{dtype:?} not covered: {seen_types:?}"
        );
    }

    // Embedding rows decoded by hand: row r is token r's vector, laid out as PyTorch's [vocab, hidden].
    let (_, embedding) = read_f16(&st, "model.embed_tokens.weight");
    for row in [0, 2, 1000, 262_143] {
        let by_hand = q8_0_row(&gguf, &content, "token_embd.weight", row, 640);
        let got = &embedding[row * 640..(row + 1) * 640];
        for (c, (&g, &h)) in got.iter().zip(&by_hand).enumerate() {
            assert!(
                (g - h).abs() <= h.abs() / 1024.0 + 1e-7,
                "row {row} col {c}: {g} vs {h}"
            );
        }
    }

    let config: serde_json::Value =
        serde_json::from_slice(&fs::read(request.out.join("config.json")).unwrap()).unwrap();
    let expected = [
        ("vocab_size", json!(262_144)),
        ("hidden_size", json!(640)),
        ("num_hidden_layers", json!(18)),
        ("head_dim", json!(256)),
        ("sliding_window", json!(512)),
        ("max_position_embeddings", json!(32_768)),
    ];
    for (key, value) in expected {
        assert_eq!(config[key], value, "{key}");
    }
    assert_eq!(config["layer_types"][5], "full_attention");
    assert!(request.out.join("tokenizer_config.json").is_file());
}
