//! `cargo xtask convert-model`: the default model's GGUF file as the f16 safetensors folder the
//! MLX runtime reads. The conversion itself is the `model-convert` package, run through
//! `cargo run`, so that its candle dependency is built the first time a conversion is asked
//! for instead of with every `cargo xtask`. This module knows the default paths and fetches the
//! inputs first.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;

use crate::Layout;
use crate::assets::{self, Asset};
use crate::tools;

/// The converted default model's folder under `assets/models/`.
pub const DEFAULT_OUT: &str = "gemma-3-270m-f16";

/// The package holding the converter.
const PACKAGE: &str = "model-convert";

/// What the converter is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The GGUF file.
    pub gguf: PathBuf,
    /// A folder with `tokenizer.json` (and maybe `tokenizer_config.json`) to copy along.
    pub tokenizer: Option<PathBuf>,
    /// The folder to write (replaced as a whole).
    pub out: PathBuf,
    /// Convert even when the folder is up to date.
    pub force: bool,
}

/// `assets/models/gemma-3-270m-f16/`.
pub fn default_out(layout: &Layout) -> PathBuf {
    layout.assets.join("models").join(DEFAULT_OUT)
}

/// The default model into [`default_out`], with the gemma3 tokenizer.
pub fn default_request(layout: &Layout) -> Request {
    Request {
        gguf: assets::default_model(layout),
        tokenizer: Some(assets::tokenizer_dir(layout, "gemma3")),
        out: default_out(layout),
        force: false,
    }
}

/// Fetches (or verifies) the default model and the tokenizers, then converts the model into
/// [`default_out`] unless that is up to date.
pub fn convert_default(layout: &Layout) -> Result<()> {
    assets::fetch(layout, &[Asset::Tokenizers, Asset::Model], false)?;
    run(layout, &default_request(layout))
}

/// The arguments of `cargo` that run the converter on `request` (in the dev profile, which
/// this workspace optimises; candle gets its own lighter settings in the workspace manifest).
fn cargo_args(request: &Request) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["run", "-p", PACKAGE, "--", "--gguf"]
        .map(OsString::from)
        .into();
    args.push(request.gguf.clone().into());
    args.push("--out".into());
    args.push(request.out.clone().into());
    if let Some(dir) = &request.tokenizer {
        args.push("--tokenizer".into());
        args.push(dir.clone().into());
    }
    if request.force {
        args.push("--force".into());
    }
    args
}

/// Runs the converter on `request`, its output and cargo's build progress shown as they come.
pub fn run(layout: &Layout, request: &Request) -> Result<()> {
    println!(
        "running {PACKAGE} (its first build compiles candle, a minute or more; later runs start \
         at once)"
    );
    let mut cmd = Command::new(tools::cargo_program());
    cmd.args(cargo_args(request)).current_dir(&layout.root);
    tools::run_shown(cmd, &format!("converting {}", request.gguf.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_converter_gets_every_path_and_the_flag() {
        let mut request = Request {
            gguf: "/m/x.gguf".into(),
            tokenizer: Some("/t".into()),
            out: "/o".into(),
            force: true,
        };
        let args = |r: &Request| -> Vec<String> {
            cargo_args(r)
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            args(&request),
            [
                "run",
                "-p",
                "model-convert",
                "--",
                "--gguf",
                "/m/x.gguf",
                "--out",
                "/o",
                "--tokenizer",
                "/t",
                "--force"
            ]
        );
        request.tokenizer = None;
        request.force = false;
        assert_eq!(args(&request).len(), 8);
    }
}
