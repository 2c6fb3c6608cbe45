//! What a GGUF file says about its model: architecture, size, quantization, vocabulary.
//!
//! [`ModelInfo`] is read once at load time from the GGUF metadata and from llama.cpp's view of
//! the loaded tensors; [`crate::LlamaModel::info`] returns it and `describe()` formats it.

use std::fmt;

/// Facts about a loaded model, from its GGUF metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInfo {
    /// `general.architecture`, e.g. `gemma3` or `llama`.
    pub architecture: String,
    /// `general.name`, when present.
    pub name: Option<String>,
    /// Number of parameters counted over the loaded tensors.
    pub n_params: u64,
    /// Total size of the tensors in bytes.
    pub size_bytes: u64,
    /// `general.file_type` (llama.cpp's `llama_ftype` number), when present.
    pub file_type: Option<u32>,
    /// Vocabulary size (the length of a logits vector).
    pub n_vocab: usize,
    /// Context length the model was trained with.
    pub n_ctx_train: usize,
    /// Number of transformer layers.
    pub n_layer: u32,
    /// Embedding width.
    pub n_embd: u32,
}

impl ModelInfo {
    /// The quantization scheme named after `general.file_type`, e.g. `Q4_K_M`; `unknown` when
    /// the file does not say or uses a number this crate does not know.
    #[must_use]
    pub fn quantization(&self) -> &'static str {
        self.file_type.and_then(file_type_name).unwrap_or("unknown")
    }
}

impl fmt::Display for ModelInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {} parameters, {}, {:.1} MiB of tensors, {}-token vocabulary, trained context {}",
            self.architecture,
            HumanCount(self.n_params),
            self.quantization(),
            mebibytes(self.size_bytes),
            self.n_vocab,
            self.n_ctx_train,
        )?;
        if let Some(name) = &self.name {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

/// Bytes to MiB for display (precision loss is irrelevant there).
#[allow(clippy::cast_precision_loss)]
fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Formats a count as `268.1M` or `7.2B`.
struct HumanCount(u64);

impl fmt::Display for HumanCount {
    #[allow(clippy::cast_precision_loss)]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0 as f64;
        if n >= 1e9 {
            write!(f, "{:.1}B", n / 1e9)
        } else if n >= 1e6 {
            write!(f, "{:.1}M", n / 1e6)
        } else if n >= 1e3 {
            write!(f, "{:.1}K", n / 1e3)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Names of llama.cpp's `llama_ftype` values (the numbers written to `general.file_type`).
fn file_type_name(file_type: u32) -> Option<&'static str> {
    Some(match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ModelInfo {
        ModelInfo {
            architecture: "gemma3".to_owned(),
            name: Some("Gemma 3 270m".to_owned()),
            n_params: 268_098_176,
            size_bytes: 241 * 1024 * 1024,
            file_type: Some(15),
            n_vocab: 262_144,
            n_ctx_train: 32_768,
            n_layer: 18,
            n_embd: 640,
        }
    }

    #[test]
    fn display_names_the_essentials() {
        let text = sample().to_string();
        assert_eq!(
            text,
            "gemma3, 268.1M parameters, Q4_K_M, 241.0 MiB of tensors, 262144-token vocabulary, \
             trained context 32768 (Gemma 3 270m)"
        );
    }

    #[test]
    fn unknown_file_types_say_so() {
        let mut info = sample();
        info.file_type = Some(999);
        assert_eq!(info.quantization(), "unknown");
        info.file_type = None;
        assert_eq!(info.quantization(), "unknown");
        assert_eq!(HumanCount(7_241_000_000).to_string(), "7.2B");
        assert_eq!(HumanCount(512).to_string(), "512");
    }
}
