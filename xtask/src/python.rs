//! `cargo xtask python`: the Python package (`python/`) built as a wheel with maturin into
//! `<target>/wheels/` and installed into a virtual environment this command manages,
//! `<target>/python-venv/`, together with what its tests need (pytest, hypothesis, numpy,
//! jsonschema, and MLX with mlx-lm for the mlx-lm adapter). All of it comes from PyPI.
//!
//! The wheel is built in the dev profile (optimised in this workspace), so that after
//! `cargo test --workspace` only the extension module itself is compiled; `--release` builds
//! the release profile instead. The test step then runs `pytest python/tests` with the
//! environment's Python ([`pytest`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::Layout;
use crate::tools;

/// The packages the environment gets besides the wheel: maturin to build it, and what the
/// tests import. torch and vllm are left out (gigabytes of CUDA libraries): their adapters'
/// tests skip, saying so.
fn packages() -> Vec<&'static str> {
    let mut p = vec![
        "maturin>=1.9,<2",
        "pytest",
        "hypothesis",
        "numpy",
        "jsonschema",
    ];
    // The CPU build of MLX on Linux; macOS's has Metal.
    p.push(if cfg!(target_os = "linux") {
        "mlx[cpu]"
    } else {
        "mlx"
    });
    p.push("mlx-lm");
    p
}

/// The virtual environment's folder.
pub fn venv(layout: &Layout) -> PathBuf {
    layout.target_dir().join("python-venv")
}

/// The virtual environment's Python.
pub fn venv_python(layout: &Layout) -> PathBuf {
    venv(layout).join("bin").join("python")
}

/// Where wheels are written.
pub fn wheel_dir(layout: &Layout) -> PathBuf {
    layout.target_dir().join("wheels")
}

/// Creates the environment when missing and installs [`packages`] into it.
fn ensure_venv(layout: &Layout) -> Result<PathBuf> {
    let python = venv_python(layout);
    if !python.is_file() {
        let dir = venv(layout);
        let mut cmd = Command::new("python3");
        cmd.arg("-m").arg("venv").arg(&dir);
        tools::run_captured(cmd, "creating the Python environment").with_context(|| {
            format!(
                "`python3 -m venv {}` failed: Python 3.9 or later with its venv module is needed \
                 (Debian: `apt-get install python3-venv`)",
                dir.display()
            )
        })?;
    }
    let mut cmd = pip(&python);
    cmd.arg("install").args(packages());
    tools::run_shown(cmd, "installing maturin and the test dependencies")?;
    Ok(python)
}

fn pip(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pip", "--disable-pip-version-check", "--no-input"]);
    cmd
}

/// The arguments of `maturin build` for the package.
fn maturin_args(layout: &Layout, python: &Path, release: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["build".into(), "--manifest-path".into()];
    args.push(layout.root.join("python/Cargo.toml").into());
    args.push("--interpreter".into());
    args.push(python.into());
    args.push("--out".into());
    args.push(wheel_dir(layout).into());
    if release {
        args.push("--release".into());
    } else {
        args.extend(["--profile", "dev"].map(OsString::from));
    }
    args
}

/// The newest `stencil_json-<version>-*.whl` in `dir`.
fn newest_wheel(dir: &Path, version: &str) -> Result<PathBuf> {
    let prefix = format!("stencil_json-{version}-");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".whl") {
            let modified = path.metadata()?.modified()?;
            if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, p)| p)
        .with_context(|| format!("maturin wrote no {prefix}*.whl into {}", dir.display()))
}

/// Runs `cargo xtask python`: the environment, the wheel, and the wheel installed into it.
pub fn build(layout: &Layout, release: bool) -> Result<()> {
    let python = ensure_venv(layout)?;
    let maturin = venv(layout).join("bin").join("maturin");
    let mut cmd = Command::new(&maturin);
    cmd.args(maturin_args(layout, &python, release))
        .current_dir(&layout.root);
    println!("python: {}", tools::show(&cmd));
    tools::run_shown(cmd, "building the wheel with maturin")?;
    let wheel = newest_wheel(&wheel_dir(layout), env!("CARGO_PKG_VERSION"))?;
    let mut cmd = pip(&python);
    cmd.args(["install", "--force-reinstall", "--no-deps"])
        .arg(&wheel);
    tools::run_captured(cmd, "installing the wheel")?;
    println!(
        "python: installed {} into {} (activate it with `. {}/bin/activate`)",
        wheel.display(),
        venv(layout).display(),
        venv(layout).display()
    );
    Ok(())
}

/// The command that runs the package's tests with the environment's Python.
pub fn pytest(layout: &Layout) -> Result<Command> {
    let python = venv_python(layout);
    if !python.is_file() {
        bail!(
            "{} is missing: `cargo xtask python` creates it",
            python.display()
        );
    }
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pytest", "-p", "no:cacheprovider", "python/tests"]);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            root: PathBuf::from("/repo"),
            assets: PathBuf::from("/repo/assets"),
            cache: PathBuf::from("/cache"),
        }
    }

    #[test]
    fn the_wheel_is_built_into_the_target_folder() {
        let l = layout();
        let args: Vec<String> = maturin_args(&l, Path::new("/py"), false)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let target = l.target_dir();
        assert_eq!(
            args,
            [
                "build".to_owned(),
                "--manifest-path".into(),
                "/repo/python/Cargo.toml".into(),
                "--interpreter".into(),
                "/py".into(),
                "--out".into(),
                target.join("wheels").to_string_lossy().into_owned(),
                "--profile".into(),
                "dev".into(),
            ]
        );
        let release = maturin_args(&l, Path::new("/py"), true);
        assert_eq!(release.last().unwrap(), "--release");
    }

    #[test]
    fn the_newest_wheel_of_this_version_is_installed() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir
            .path()
            .join("stencil_json-0.1.0-cp39-abi3-linux_x86_64.whl");
        std::fs::write(&old, b"").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let new = dir
            .path()
            .join("stencil_json-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl");
        std::fs::write(&new, b"").unwrap();
        std::fs::write(dir.path().join("stencil_json-0.2.0-x.whl"), b"").unwrap();
        assert_eq!(newest_wheel(dir.path(), "0.1.0").unwrap(), new);
        assert!(newest_wheel(dir.path(), "0.3.0").is_err());
    }

    #[test]
    fn torch_and_vllm_stay_out_of_the_environment() {
        let p = packages();
        assert!(p.iter().any(|p| p.starts_with("maturin")));
        assert!(
            p.iter()
                .all(|p| !p.contains("torch") && !p.contains("vllm"))
        );
    }
}
