//! Weights: the safetensors files of a model directory (one file, or shards listed in
//! `model.safetensors.index.json`), read with MLX's own loader, and the layers built from them.
//!
//! A module is quantized when its `scales` tensor is present: then `weight` holds packed
//! `uint32` elements and `scales`/`biases` one value per group, MLX's affine format, used by
//! `quantized_matmul` (linear layers) or dequantized row by row (embeddings). Otherwise
//! `weight` is a dense `f16`, `bf16` or `f32` matrix. Either way the floating-point tensors are
//! converted to the compute type once, at load.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use mlx_rs::ops::indexing::TryIndexOp;
use mlx_rs::{Array, Dtype};

use crate::config::{ModelConfig, Quantization};
use crate::error::Error;

/// The index of sharded weights.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// Unsharded weights.
pub const SINGLE_FILE: &str = "model.safetensors";

/// The tensors of a model, by name, taken out as layers are built.
pub struct Weights {
    tensors: HashMap<String, Array>,
    dtype: Dtype,
}

impl Weights {
    /// Reads every safetensors file of `dir`; floating-point tensors will be converted to
    /// `dtype`.
    pub fn load(dir: &Path, dtype: Dtype) -> Result<Weights, Error> {
        let mut tensors = HashMap::new();
        for file in weight_files(dir)? {
            let display = file.display().to_string();
            if !file.is_file() {
                return Err(Error::MissingFile { path: display });
            }
            let loaded = Array::load_safetensors(&file).map_err(|e| Error::Io {
                path: display.clone(),
                reason: e.to_string(),
            })?;
            tensors.extend(loaded);
        }
        Ok(Weights { tensors, dtype })
    }

    /// Weights from tensors already in memory (tests).
    #[cfg(test)]
    pub fn from_tensors(tensors: HashMap<String, Array>, dtype: Dtype) -> Weights {
        Weights { tensors, dtype }
    }

    /// Names of the tensors no layer has taken (for a log line).
    pub fn unused(&self) -> BTreeSet<&str> {
        self.tensors.keys().map(String::as_str).collect()
    }

    fn take(&mut self, name: &str) -> Result<Array, Error> {
        self.tensors
            .remove(name)
            .ok_or_else(|| Error::MissingTensor {
                name: name.to_owned(),
            })
    }

    /// Whether the module at `prefix` has a weight.
    pub fn has(&self, prefix: &str) -> bool {
        self.tensors.contains_key(&format!("{prefix}.weight"))
    }

    /// A floating-point tensor of exactly `shape`, in the compute type.
    fn float(&mut self, name: &str, shape: &[usize]) -> Result<Array, Error> {
        let a = self.take(name)?;
        check_shape(name, &a, shape)?;
        if !matches!(a.dtype(), Dtype::Float16 | Dtype::Bfloat16 | Dtype::Float32) {
            return Err(Error::BadTensor {
                name: name.to_owned(),
                expected: "a float16, bfloat16 or float32 tensor".into(),
                found: format!("{:?}", a.dtype()),
            });
        }
        Ok(a.as_dtype(self.dtype)?)
    }

    /// A norm's weight of `size` elements; with `plus_one`, `1 + w` (Gemma's convention).
    pub fn norm(&mut self, name: &str, size: usize, plus_one: bool) -> Result<Array, Error> {
        let w = self.float(name, &[size])?;
        Ok(if plus_one {
            w.add(Array::from_f32(1.0))?
        } else {
            w
        })
    }

    /// The linear layer (or embedding table) at `prefix`, mapping `inputs` features to
    /// `outputs` (`weight` is `[outputs, inputs]`), quantized when it has `scales`.
    pub fn linear(
        &mut self,
        config: &ModelConfig,
        prefix: &str,
        outputs: usize,
        inputs: usize,
        bias: bool,
    ) -> Result<Linear, Error> {
        let weight_name = format!("{prefix}.weight");
        let bias = if bias {
            Some(self.float(&format!("{prefix}.bias"), &[outputs])?)
        } else {
            None
        };
        let scales_name = format!("{prefix}.scales");
        if !self.tensors.contains_key(&scales_name) {
            let weight = self.float(&weight_name, &[outputs, inputs])?;
            return Ok(Linear::Dense { weight, bias });
        }
        let q = config
            .quantization_of(prefix)
            .ok_or_else(|| Error::BadTensor {
                name: scales_name.clone(),
                expected: "no quantization (config.json has no `quantization` for it)".into(),
                found: "quantization scales".into(),
            })?;
        let (group, bits) = (q.group_size as usize, q.bits as usize);
        if !inputs.is_multiple_of(group) || !(inputs * bits).is_multiple_of(32) {
            return Err(Error::BadTensor {
                name: weight_name,
                expected: format!(
                    "{inputs} inputs divisible by the group size {group} and packable in 32-bit \
                     words at {bits} bits"
                ),
                found: "a quantized weight".into(),
            });
        }
        let weight = self.take(&weight_name)?;
        check_shape(&weight_name, &weight, &[outputs, inputs * bits / 32])?;
        if weight.dtype() != Dtype::Uint32 {
            return Err(Error::BadTensor {
                name: weight_name,
                expected: "uint32 (packed quantized elements)".into(),
                found: format!("{:?}", weight.dtype()),
            });
        }
        let scales = self.float(&scales_name, &[outputs, inputs / group])?;
        let biases = self.float(&format!("{prefix}.biases"), &[outputs, inputs / group])?;
        Ok(Linear::Quantized {
            weight,
            scales,
            biases,
            bias,
            quantization: q,
        })
    }
}

/// The safetensors files of `dir`: those of the index when there is one, else
/// `model.safetensors`, else every `*.safetensors` file.
fn weight_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let index = dir.join(INDEX_FILE);
    if index.is_file() {
        let display = index.display().to_string();
        let text = std::fs::read_to_string(&index).map_err(|e| Error::Io {
            path: display.clone(),
            reason: e.to_string(),
        })?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Json {
            path: display.clone(),
            reason: e.to_string(),
        })?;
        let Some(map) = json.get("weight_map").and_then(|m| m.as_object()) else {
            return Err(Error::Json {
                path: display,
                reason: "no `weight_map` object".into(),
            });
        };
        let mut files = BTreeSet::new();
        for file in map.values() {
            let Some(name) = file.as_str().filter(|n| is_plain_file_name(n)) else {
                return Err(Error::Json {
                    path: display,
                    reason: format!("`weight_map` names {file}, not a file of the directory"),
                });
            };
            files.insert(name.to_owned());
        }
        return Ok(files.into_iter().map(|f| dir.join(f)).collect());
    }
    let single = dir.join(SINGLE_FILE);
    if single.is_file() {
        return Ok(vec![single]);
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Error::Io {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::MissingFile {
            path: single.display().to_string(),
        });
    }
    Ok(files)
}

fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != ".."
}

fn check_shape(name: &str, a: &Array, shape: &[usize]) -> Result<(), Error> {
    let same = a.shape().len() == shape.len()
        && a.shape()
            .iter()
            .zip(shape)
            .all(|(&have, &want)| usize::try_from(have).is_ok_and(|h| h == want));
    if same {
        Ok(())
    } else {
        Err(Error::BadTensor {
            name: name.to_owned(),
            expected: format!("shape {shape:?}"),
            found: format!("shape {:?}", a.shape()),
        })
    }
}

/// A linear layer `y = x W^T (+ b)`, or an embedding table (`W` is `[rows, width]`).
pub enum Linear {
    /// A dense weight in the compute type.
    Dense {
        /// `[outputs, inputs]`.
        weight: Array,
        /// `[outputs]`.
        bias: Option<Array>,
    },
    /// MLX affine quantization.
    Quantized {
        /// `[outputs, inputs * bits / 32]`, packed `uint32`.
        weight: Array,
        /// `[outputs, inputs / group_size]`.
        scales: Array,
        /// `[outputs, inputs / group_size]`.
        biases: Array,
        /// `[outputs]`.
        bias: Option<Array>,
        /// Group size and bits.
        quantization: Quantization,
    },
}

impl Linear {
    /// `x W^T (+ b)` over the last axis of `x`.
    pub fn forward(&self, x: &Array) -> Result<Array, Error> {
        let (y, bias) = match self {
            Linear::Dense { weight, bias } => (x.matmul(weight.t())?, bias),
            Linear::Quantized {
                weight,
                scales,
                biases,
                bias,
                quantization: q,
            } => (
                mlx_rs::ops::quantized_matmul(
                    x,
                    weight,
                    scales,
                    biases,
                    true,
                    q.group_size,
                    q.bits,
                )?,
                bias,
            ),
        };
        Ok(match bias {
            Some(b) => y.add(b)?,
            None => y,
        })
    }

    /// The rows `ids` of the table, as floats (an embedding lookup).
    pub fn rows(&self, ids: &Array) -> Result<Array, Error> {
        Ok(match self {
            Linear::Dense { weight, .. } => weight.take_axis(ids, 0)?,
            Linear::Quantized {
                weight,
                scales,
                biases,
                quantization: q,
                ..
            } => mlx_rs::ops::dequantize(
                weight.take_axis(ids, 0)?,
                scales.take_axis(ids, 0)?,
                &biases.take_axis(ids, 0)?,
                q.group_size,
                q.bits,
            )?,
        })
    }

    /// The arrays to evaluate once at load.
    pub fn arrays(&self) -> Vec<&Array> {
        match self {
            Linear::Dense { weight, bias } => std::iter::once(weight).chain(bias).collect(),
            Linear::Quantized {
                weight,
                scales,
                biases,
                bias,
                ..
            } => [weight, scales, biases].into_iter().chain(bias).collect(),
        }
    }

    /// The quantization, if any.
    pub fn quantization(&self) -> Option<Quantization> {
        match self {
            Linear::Dense { .. } => None,
            Linear::Quantized { quantization, .. } => Some(*quantization),
        }
    }
}

/// The last `n` positions of `[1, heads, positions, dim]`.
pub fn last_positions(a: &Array, n: i32) -> Result<Array, Error> {
    let len = a.shape().get(2).copied().unwrap_or(0);
    Ok(a.try_index((.., .., (len - n).max(0).., ..))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("runtime-mlx-weights-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn missing_weights_are_named() {
        let dir = tmp_dir("none");
        let err = weight_files(&dir).unwrap_err();
        assert!(
            matches!(&err, Error::MissingFile { path } if path.ends_with(SINGLE_FILE)),
            "{err}"
        );
        std::fs::write(
            dir.join(INDEX_FILE),
            r#"{"weight_map": {"a": "../x.safetensors"}}"#,
        )
        .unwrap();
        let err = weight_files(&dir).unwrap_err();
        assert!(matches!(err, Error::Json { .. }), "{err}");
        std::fs::write(
            dir.join(INDEX_FILE),
            r#"{"weight_map": {"a": "b.safetensors", "c": "a.safetensors", "d": "b.safetensors"}}"#,
        )
        .unwrap();
        let files = weight_files(&dir).unwrap();
        assert_eq!(
            files,
            [dir.join("a.safetensors"), dir.join("b.safetensors")]
        );
        let err = Weights::load(&dir, Dtype::Float32).err().unwrap();
        assert!(matches!(err, Error::MissingFile { .. }), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn shapes_and_types_are_checked() {
        let config = ModelConfig::parse(
            r#"{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10}"#,
            "config.json",
        )
        .unwrap();
        let mut tensors = HashMap::new();
        tensors.insert(
            "a.weight".to_owned(),
            Array::from_slice(&[0f32; 6], &[2, 3]),
        );
        tensors.insert(
            "b.weight".to_owned(),
            Array::from_slice(&[0i32; 6], &[2, 3]),
        );
        tensors.insert(
            "c.weight".to_owned(),
            Array::from_slice(&[0u32; 4], &[2, 2]),
        );
        tensors.insert(
            "c.scales".to_owned(),
            Array::from_slice(&[0f32; 2], &[2, 1]),
        );
        let mut w = Weights::from_tensors(tensors, Dtype::Float32);
        assert!(w.linear(&config, "a", 2, 3, false).is_ok());
        let err = w.linear(&config, "b", 2, 3, false).err().unwrap();
        assert!(matches!(err, Error::BadTensor { .. }), "{err}");
        let err = w.linear(&config, "c", 2, 64, false).err().unwrap();
        assert!(err.to_string().contains("no `quantization`"), "{err}");
        let err = w.linear(&config, "d", 2, 3, false).err().unwrap();
        assert!(
            matches!(&err, Error::MissingTensor { name } if name == "d.weight"),
            "{err}"
        );
        w.tensors
            .insert("e".into(), Array::from_slice(&[0f32; 3], &[3]));
        let err = w.norm("e", 4, false).err().unwrap();
        assert!(err.to_string().contains("shape [4]"), "{err}");
    }
}
