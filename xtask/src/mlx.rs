//! `cargo xtask mlx-setup`: makes the `mlx-sys` crate (under `mlx-rs`, used by `runtime-mlx`)
//! build on Linux, without network access during the build and without third-party code in
//! the repository.
//!
//! The published `mlx-sys` builds only on macOS: its build script fetches MLX with git through
//! CMake and links macOS frameworks. On macOS nothing is done here. On Linux, `mlx-sys`
//! declares `links = "mlx"`, so a `[target.<host>.mlx]` table in a Cargo configuration file
//! replaces its build script. This command produces what that table points at, in the download
//! cache (`$STENCIL_CACHE/mlx/`, shared by every checkout):
//!
//! 1. MLX itself, from the `mlx-cpu` wheel on PyPI (`libmlx.so` with its BLAS and LAPACK,
//!    headers, `MLXConfig.cmake`), at the version the mlx-c sources pin, downloaded with pip;
//! 2. mlx-c, from the sources shipped inside the `mlx-sys` crate that Cargo downloaded, built
//!    with CMake against that MLX, plus a small shim of ours (`xtask/mlx/`);
//! 3. the Rust bindings, generated with the bindgen CLI (installed with `cargo install` at the
//!    version `mlx-sys`'s build script uses) from the same headers and options.
//!
//! It then writes `.cargo/mlx.toml`, which `.cargo/config.toml` includes when it exists (git
//! ignores it). Every step is skipped when its result is already there: the build directory is
//! named after a hash of everything that goes into it, so a second run only checks files.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::Layout;
use crate::fsutil;
use crate::tools::{self, Pip};

/// The Cargo configuration file this command writes, relative to the repository root.
pub const CONFIG_FILE: &str = ".cargo/mlx.toml";

/// Our C/C++ sources and CMake project, relative to the repository root.
const SUPPORT_DIR: &str = "xtask/mlx";

/// The files of [`SUPPORT_DIR`], all of which go into the build's hash.
const SUPPORT_FILES: [&str; 4] = [
    "CMakeLists.txt",
    "bindings_prelude.h",
    "format_compat.h",
    "half_shim.cpp",
];

/// Debian packages the build needs: CMake and a C++ compiler for mlx-c, libclang for bindgen,
/// {fmt} for mlx-c's `std::format` calls on GCC 12.
const DEBIAN_PACKAGES: [&str; 4] = ["cmake", "g++", "libclang-dev", "libfmt-dev"];

/// The static libraries of the mlx-c build, in link order.
const STATIC_LIBS: [&str; 2] = ["mlxc_shim", "mlxc"];

/// Runs `cargo xtask mlx-setup`.
pub fn setup(layout: &Layout) -> Result<()> {
    if cfg!(target_os = "macos") {
        println!(
            "mlx-setup: nothing to do on macOS; mlx-sys builds MLX itself (Xcode command line \
             tools and CMake needed)"
        );
        return Ok(());
    }
    if !cfg!(target_os = "linux") {
        bail!("mlx-setup supports Linux (and macOS, where it is not needed) only");
    }
    check_debian_packages()?;
    let host = host_triple()?;
    let sys = MlxSys::locate(layout, &host)?;
    let mlx_version = sys.mlx_version()?;
    println!(
        "mlx-setup: mlx-sys {} (mlx-c in {}), MLX {mlx_version}, cache {}",
        sys.version,
        sys.mlx_c.display(),
        layout.cache.display()
    );

    let mlx = step(&format!("MLX {mlx_version} (PyPI mlx-cpu)"), || {
        fetch_mlx(layout, &mlx_version)
    })?;
    let bindgen = step(&format!("bindgen-cli {}", sys.bindgen_version), || {
        install_bindgen(layout, &sys.bindgen_version)
    })?;
    let inputs = BuildInputs::read(layout, &host, &sys, &mlx_version)?;
    let build_dir =
        layout
            .cache
            .join("mlx")
            .join(format!("mlx-c-{}-{}", sys.version, &inputs.hash()[..12]));
    let built = step(&format!("mlx-c {}", sys.version), || {
        build_mlx_c(&build_dir, &inputs, &sys, &mlx, &bindgen)
    })?;
    let config = render_config(&host, &built, &mlx)?;
    step(CONFIG_FILE, || {
        let path = layout.root.join(CONFIG_FILE);
        if fsutil::same_content(&path, config.as_bytes())? {
            return Ok(((), Done::Ok));
        }
        fsutil::write_atomic(&path, config.as_bytes())?;
        Ok(((), Done::Written))
    })?;
    Ok(())
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Done {
    /// Already there.
    Ok,
    /// Downloaded or installed.
    Fetched,
    /// Put in place from the download cache.
    Cached,
    /// Built.
    Built,
    /// Written.
    Written,
}

/// Prints `<label> ... <what was done>` around `f`.
fn step<T>(label: &str, f: impl FnOnce() -> Result<(T, Done)>) -> Result<T> {
    print!("{label} ... ");
    let _ = io::stdout().flush();
    match f() {
        Ok((value, done)) => {
            println!(
                "{}",
                match done {
                    Done::Ok => "ok",
                    Done::Fetched => "fetched",
                    Done::Cached => "cached",
                    Done::Built => "built",
                    Done::Written => "written",
                }
            );
            Ok(value)
        }
        Err(e) => {
            println!("failed");
            Err(e).with_context(|| format!("mlx-setup: {label}"))
        }
    }
}

/// Fails with the `apt-get` line to run when a needed Debian package is missing. Does nothing
/// where `dpkg-query` is not available (another distribution: the build steps then report
/// what is missing themselves).
fn check_debian_packages() -> Result<()> {
    let mut missing = Vec::new();
    for package in DEBIAN_PACKAGES {
        let out = Command::new("dpkg-query")
            .args(["-W", "-f=${Status}", package])
            .output();
        match out {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).context("running dpkg-query"),
            Ok(out) => {
                if !String::from_utf8_lossy(&out.stdout).contains("install ok installed") {
                    missing.push(package);
                }
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "missing Debian packages for building mlx-c: {}\n  install them with: \
             apt-get install -y --no-install-recommends {}",
            missing.join(" "),
            missing.join(" ")
        );
    }
    Ok(())
}

/// The host's target triple, from `rustc -vV`.
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.arg("-vV");
    let out = tools::run_captured(cmd, "asking rustc for the host triple")?;
    parse_host_triple(&String::from_utf8_lossy(&out.stdout))
        .context("`rustc -vV` printed no `host:` line")
}

fn parse_host_triple(rustc_vv: &str) -> Option<String> {
    rustc_vv
        .lines()
        .find_map(|l| l.strip_prefix("host:"))
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// The `mlx-sys` crate Cargo resolved for the workspace.
struct MlxSys {
    version: String,
    /// The mlx-c sources inside the crate.
    mlx_c: PathBuf,
    /// The bindgen version its build script uses.
    bindgen_version: String,
}

impl MlxSys {
    /// Finds `mlx-sys` with `cargo metadata` (which downloads it if needed).
    fn locate(layout: &Layout, host: &str) -> Result<Self> {
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.args([
            "metadata",
            "--format-version",
            "1",
            "--filter-platform",
            host,
        ])
        .arg("--manifest-path")
        .arg(layout.root.join("Cargo.toml"));
        let out = tools::run_captured(cmd, "reading the workspace with `cargo metadata`")?;
        let meta: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("parsing `cargo metadata` output")?;
        Self::from_metadata(&meta)
    }

    fn from_metadata(meta: &serde_json::Value) -> Result<Self> {
        let packages = meta["packages"]
            .as_array()
            .context("`cargo metadata` lists no packages")?;
        let find = |name: &str| {
            packages
                .iter()
                .filter(|p| p["name"] == name)
                .collect::<Vec<_>>()
        };
        let sys = match find("mlx-sys")[..] {
            [one] => one,
            [] => bail!("the workspace does not depend on mlx-sys (runtime-mlx is missing?)"),
            _ => bail!("the workspace depends on several versions of mlx-sys"),
        };
        let version = sys["version"]
            .as_str()
            .context("mlx-sys has no version")?
            .to_owned();
        let manifest = sys["manifest_path"]
            .as_str()
            .context("mlx-sys has no manifest path")?;
        let mlx_c = Path::new(manifest)
            .parent()
            .context("mlx-sys's manifest path has no folder")?
            .join("src/mlx-c");
        // The bindgen that Cargo resolved for mlx-sys's build script.
        let sys_id = &sys["id"];
        let nodes = meta["resolve"]["nodes"]
            .as_array()
            .context("`cargo metadata` has no dependency graph")?;
        let bindgen_version = nodes
            .iter()
            .find(|n| &n["id"] == sys_id)
            .and_then(|n| n["deps"].as_array())
            .into_iter()
            .flatten()
            .filter(|d| d["name"] == "bindgen")
            .find_map(|d| {
                let id = &d["pkg"];
                packages.iter().find(|p| &p["id"] == id)?["version"].as_str()
            })
            .context("mlx-sys's build script does not depend on bindgen")?
            .to_owned();
        Ok(Self {
            version,
            mlx_c,
            bindgen_version,
        })
    }

    /// The MLX version mlx-c's CMake project fetches (`GIT_TAG v<version>`), the one its C API
    /// matches.
    fn mlx_version(&self) -> Result<String> {
        let path = self.mlx_c.join("CMakeLists.txt");
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        parse_mlx_version(&text)
            .with_context(|| format!("{} names no `GIT_TAG v<version>`", path.display()))
    }
}

fn parse_mlx_version(cmake: &str) -> Option<String> {
    cmake.lines().find_map(|line| {
        let tag = line.trim().strip_prefix("GIT_TAG v")?;
        let version = tag.split(|c: char| c == ')' || c.is_whitespace()).next()?;
        let valid = !version.is_empty()
            && version
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        valid.then(|| version.to_owned())
    })
}

/// An unpacked `mlx-cpu` wheel.
struct Mlx {
    /// The folder with `include/`, `lib/` and `share/cmake/MLX/`.
    prefix: PathBuf,
}

impl Mlx {
    fn lib_dir(&self) -> PathBuf {
        self.prefix.join("lib")
    }

    fn cmake_dir(&self) -> PathBuf {
        self.prefix.join("share/cmake/MLX")
    }
}

/// Downloads the `mlx-cpu` wheel (kept in `$STENCIL_CACHE/pip`) and unpacks it into
/// `$STENCIL_CACHE/mlx/mlx-cpu-<version>/`.
fn fetch_mlx(layout: &Layout, version: &str) -> Result<(Mlx, Done)> {
    let dir = layout.cache.join("mlx").join(format!("mlx-cpu-{version}"));
    let mlx = Mlx {
        prefix: dir.join("mlx"),
    };
    if mlx.lib_dir().join("libmlx.so").is_file()
        && mlx.cmake_dir().join("MLXConfig.cmake").is_file()
    {
        return Ok((mlx, Done::Ok));
    }
    let pip_dir = layout.cache.join("pip");
    fsutil::create_dir(&pip_dir)?;
    let mut done = Done::Cached;
    let wheel = match find_wheel(&pip_dir, version)? {
        Some(wheel) => wheel,
        None => {
            let args = [
                "download".to_owned(),
                "--no-deps".to_owned(),
                "--only-binary".to_owned(),
                ":all:".to_owned(),
                "--dest".to_owned(),
                ".".to_owned(),
                format!("mlx-cpu=={version}"),
            ];
            let cmd = Pip::find()?.command(&pip_dir, args);
            tools::run_shown(cmd, "downloading the mlx-cpu wheel with `pip download`")?;
            done = Done::Fetched;
            find_wheel(&pip_dir, version)?.with_context(|| {
                format!(
                    "`pip download` succeeded but {} holds no mlx_cpu-{version} wheel for {}",
                    pip_dir.display(),
                    std::env::consts::ARCH
                )
            })?
        }
    };
    let staging = fsutil::temp_dir_next_to(&dir)?;
    unpack_wheel(&wheel, staging.path())?;
    for needed in ["mlx/lib/libmlx.so", "mlx/share/cmake/MLX/MLXConfig.cmake"] {
        if !staging.path().join(needed).is_file() {
            bail!("{} has no {needed}", wheel.display());
        }
    }
    fsutil::replace_dir(staging, &dir)?;
    Ok((mlx, done))
}

/// The `mlx_cpu-<version>-*.whl` for this machine's architecture in `dir`, if any.
fn find_wheel(dir: &Path, version: &str) -> Result<Option<PathBuf>> {
    let prefix = format!("mlx_cpu-{version}-");
    let mut found = None;
    for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix)
            && name.ends_with(".whl")
            && name.contains(std::env::consts::ARCH)
        {
            found = Some(entry.path());
        }
    }
    Ok(found)
}

/// Unpacks the wheel at `wheel` into `dst`, keeping the files' permission bits.
fn unpack_wheel(wheel: &Path, dst: &Path) -> Result<()> {
    let file = File::open(wheel).with_context(|| format!("opening {}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file)
        .with_context(|| format!("reading {} as a zip archive", wheel.display()))?;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .with_context(|| format!("reading entry {i} of {}", wheel.display()))?;
        let Some(relative) = entry.enclosed_name() else {
            bail!("{} has an entry outside its root", wheel.display());
        };
        let path = dst.join(relative);
        if entry.is_dir() {
            fsutil::create_dir(&path)?;
            continue;
        }
        if let Some(parent) = path.parent() {
            fsutil::create_dir(parent)?;
        }
        let mut out =
            File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        io::copy(&mut entry, &mut out)
            .with_context(|| format!("unpacking {} from {}", path.display(), wheel.display()))?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o755 | 0o644))
                .with_context(|| format!("setting the permissions of {}", path.display()))?;
        }
    }
    Ok(())
}

/// Installs the bindgen CLI into `$STENCIL_CACHE/mlx/bindgen-cli-<version>/`; returns the
/// program.
fn install_bindgen(layout: &Layout, version: &str) -> Result<(PathBuf, Done)> {
    let root = layout
        .cache
        .join("mlx")
        .join(format!("bindgen-cli-{version}"));
    let program = root.join("bin").join("bindgen");
    if program.is_file() {
        return Ok((program, Done::Ok));
    }
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["install", "--locked", "--quiet", "--no-default-features"])
        .args(["--features", "runtime,prettyplease"])
        .arg(format!("bindgen-cli@{version}"))
        .arg("--root")
        .arg(&root)
        // Its own target folder: not the workspace's, and gone once installed.
        .arg("--target-dir")
        .arg(root.join("build"));
    tools::run_captured(cmd, "installing bindgen-cli with `cargo install`")?;
    let _ = fs::remove_dir_all(root.join("build"));
    if !program.is_file() {
        bail!(
            "`cargo install` succeeded but {} is not there",
            program.display()
        );
    }
    Ok((program, Done::Fetched))
}

/// Everything that decides the result of the mlx-c build and the bindings.
struct BuildInputs {
    /// One `name: value` line per input, support files by content hash.
    description: String,
    /// The support files: (name, bytes).
    files: Vec<(&'static str, Vec<u8>)>,
}

impl BuildInputs {
    fn read(layout: &Layout, host: &str, sys: &MlxSys, mlx_version: &str) -> Result<Self> {
        let mut description = format!(
            "host: {host}\nmlx-sys: {}\nmlx: {mlx_version}\nbindgen: {}\n",
            sys.version, sys.bindgen_version
        );
        let mut files = Vec::with_capacity(SUPPORT_FILES.len());
        for name in SUPPORT_FILES {
            let path = layout.root.join(SUPPORT_DIR).join(name);
            let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            description.push_str(&format!(
                "{name}: {}\n",
                fsutil::hex(&Sha256::digest(&bytes))
            ));
            files.push((name, bytes));
        }
        Ok(Self { description, files })
    }

    fn hash(&self) -> String {
        fsutil::hex(&Sha256::digest(self.description.as_bytes()))
    }
}

/// What the mlx-c build produced.
struct Built {
    /// Folders holding the static libraries.
    lib_dirs: Vec<PathBuf>,
    /// The folder holding `bindings.rs`.
    bindings_dir: PathBuf,
}

/// Builds mlx-c and our shim with CMake in `dir` and generates the bindings, unless `dir`
/// already holds a finished build of the same inputs.
fn build_mlx_c(
    dir: &Path,
    inputs: &BuildInputs,
    sys: &MlxSys,
    mlx: &Mlx,
    bindgen: &Path,
) -> Result<(Built, Done)> {
    let src = dir.join("src");
    let build = dir.join("build");
    let built = Built {
        lib_dirs: vec![build.clone(), build.join("mlx-c")],
        bindings_dir: dir.join("bindings"),
    };
    let stamp = dir.join("complete");
    let outputs_exist = STATIC_LIBS
        .iter()
        .zip(&built.lib_dirs)
        .all(|(lib, d)| d.join(format!("lib{lib}.a")).is_file())
        && built.bindings_dir.join("bindings.rs").is_file();
    if outputs_exist && fsutil::same_content(&stamp, inputs.description.as_bytes())? {
        return Ok((built, Done::Ok));
    }

    // Our sources are copied next to the build, so the CMake cache never refers to a
    // checkout (several checkouts share this folder).
    for (name, bytes) in &inputs.files {
        if !fsutil::same_content(&src.join(name), bytes)? {
            fsutil::write_atomic(&src.join(name), bytes)?;
        }
    }
    if !build.join("CMakeCache.txt").is_file() {
        let mut cmd = Command::new("cmake");
        cmd.arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build)
            .arg("-DCMAKE_BUILD_TYPE=Release")
            .arg(define("MLX_C_SOURCE_DIR", &sys.mlx_c))
            .arg(define("MLX_DIR", &mlx.cmake_dir()));
        tools::run_captured(cmd, "configuring mlx-c with CMake")?;
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new("cmake");
    cmd.arg("--build")
        .arg(&build)
        .args(["--parallel", &jobs.to_string()]);
    tools::run_captured(cmd, "building mlx-c with CMake")?;

    generate_bindings(bindgen, &src, &sys.mlx_c, &built.bindings_dir)?;
    fsutil::write_atomic(&stamp, inputs.description.as_bytes())?;
    Ok((built, Done::Built))
}

/// `-D<name>=<path>` for CMake.
fn define(name: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(format!("-D{name}="));
    arg.push(path);
    arg
}

/// Generates `bindings.rs` in `out_dir` the way mlx-sys's build script does (every header of
/// `mlx/c/`, sorted, with the same bindgen options), after our prelude for the half types.
fn generate_bindings(bindgen: &Path, src: &Path, mlx_c: &Path, out_dir: &Path) -> Result<()> {
    let header_dir = mlx_c.join("mlx/c");
    let mut headers: Vec<PathBuf> = fs::read_dir(&header_dir)
        .with_context(|| format!("listing {}", header_dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()
        .with_context(|| format!("listing {}", header_dir.display()))?;
    headers.retain(|p| p.extension().is_some_and(|e| e == "h"));
    headers.sort();
    if headers.is_empty() {
        bail!("{} holds no headers", header_dir.display());
    }
    let mut wrapper = String::new();
    for header in std::iter::once(src.join("bindings_prelude.h")).chain(headers) {
        let header = header
            .to_str()
            .with_context(|| format!("{} is not valid UTF-8", header.display()))?;
        wrapper.push_str(&format!("#include \"{header}\"\n"));
    }
    let wrapper_path = out_dir.join("mlx-c.h");
    fsutil::write_atomic(&wrapper_path, wrapper.as_bytes())?;

    let out = out_dir.join("bindings.rs");
    let tmp = fsutil::temp_next_to(&out)?;
    let mut cmd = Command::new(bindgen);
    cmd.arg(&wrapper_path)
        .arg("--output")
        .arg(tmp.path())
        .args(["--rust-target", "1.73.0", "--formatter", "prettyplease"])
        .args(["--blocklist-function", "malloc"])
        .args(["--blocklist-function", "realloc"])
        .arg("--")
        .arg({
            let mut arg = OsString::from("-I");
            arg.push(mlx_c);
            arg
        });
    tools::run_captured(cmd, "generating the mlx-c bindings with bindgen")?;
    fsutil::persist(tmp, &out)
}

/// The Cargo configuration that replaces mlx-sys's build script.
fn render_config(host: &str, built: &Built, mlx: &Mlx) -> Result<String> {
    let quote = |path: &Path| -> Result<String> {
        let text = path
            .to_str()
            .with_context(|| format!("{} is not valid UTF-8", path.display()))?;
        // A JSON string is a valid TOML basic string.
        Ok(serde_json::to_string(text)?)
    };
    let mut search = Vec::new();
    for dir in built.lib_dirs.iter().chain([&mlx.lib_dir()]) {
        search.push(format!("\"native={}", &quote(dir)?[1..]));
    }
    let libs: Vec<String> = STATIC_LIBS
        .iter()
        .map(|l| format!("\"static={l}\""))
        .chain(["\"dylib=mlx\"".to_owned(), "\"dylib=stdc++\"".to_owned()])
        .collect();
    Ok(format!(
        "\
# Written by `cargo xtask mlx-setup`; included by .cargo/config.toml. It replaces the build
# script of mlx-sys (`links = \"mlx\"`) with MLX from the mlx-cpu wheel and mlx-c built against
# it, both in the download cache. Delete this file to go back to mlx-sys's own build script.
[target.{host}.mlx]
rustc-link-search = [{search}]
rustc-link-lib = [{libs}]
# mlx-sys includes `$OUT_DIR/bindings.rs`: the generated bindings.
rustc-env = {{ OUT_DIR = {bindings} }}
# DEP_MLX_LIBDIR for runtime-mlx's build script, which puts it in the rpath of its tests.
libdir = {libdir}
",
        search = search.join(", "),
        libs = libs.join(", "),
        bindings = quote(&built.bindings_dir)?,
        libdir = quote(&mlx.lib_dir())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_triple_from_rustc() {
        let text = "rustc 1.95.0\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\n";
        assert_eq!(
            parse_host_triple(text).as_deref(),
            Some("x86_64-unknown-linux-gnu")
        );
        assert_eq!(parse_host_triple("rustc 1.95.0\n"), None);
    }

    #[test]
    fn mlx_version_from_mlx_c_cmake() {
        let cmake = "FetchContent_Declare(\n  mlx\n  GIT_REPOSITORY \"x\"\n  GIT_TAG v0.32.2)\n";
        assert_eq!(parse_mlx_version(cmake).as_deref(), Some("0.32.2"));
        assert_eq!(parse_mlx_version("GIT_TAG main\n"), None);
        assert_eq!(parse_mlx_version("GIT_TAG v1..2\n"), None);
    }

    #[test]
    fn mlx_sys_and_its_bindgen_from_metadata() {
        let meta = serde_json::json!({
            "packages": [
                {"name": "mlx-sys", "version": "0.7.0", "id": "sys",
                 "manifest_path": "/reg/mlx-sys-0.7.0/Cargo.toml"},
                {"name": "bindgen", "version": "0.72.1", "id": "bg"},
                {"name": "bindgen", "version": "0.69.5", "id": "old"},
            ],
            "resolve": {"nodes": [
                {"id": "other", "deps": [{"name": "bindgen", "pkg": "old"}]},
                {"id": "sys", "deps": [{"name": "bindgen", "pkg": "bg"}]},
            ]},
        });
        let sys = MlxSys::from_metadata(&meta).unwrap();
        assert_eq!(sys.version, "0.7.0");
        assert_eq!(sys.bindgen_version, "0.72.1");
        assert_eq!(sys.mlx_c, Path::new("/reg/mlx-sys-0.7.0/src/mlx-c"));
        let none = serde_json::json!({"packages": [], "resolve": {"nodes": []}});
        let err = MlxSys::from_metadata(&none).err().unwrap().to_string();
        assert!(err.contains("does not depend on mlx-sys"), "{err}");
    }

    #[test]
    fn config_points_the_override_at_the_cache() {
        let built = Built {
            lib_dirs: vec![PathBuf::from("/c/b"), PathBuf::from("/c/b/mlx-c")],
            bindings_dir: PathBuf::from("/c/bindings"),
        };
        let mlx = Mlx {
            prefix: PathBuf::from("/c/mlx \"q\""),
        };
        let text = render_config("x86_64-unknown-linux-gnu", &built, &mlx).unwrap();
        assert!(
            text.contains("[target.x86_64-unknown-linux-gnu.mlx]\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "rustc-link-search = [\"native=/c/b\", \"native=/c/b/mlx-c\", \
                 \"native=/c/mlx \\\"q\\\"/lib\"]"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "rustc-link-lib = [\"static=mlxc_shim\", \"static=mlxc\", \"dylib=mlx\", \
                 \"dylib=stdc++\"]"
            ),
            "{text}"
        );
        assert!(
            text.contains("rustc-env = { OUT_DIR = \"/c/bindings\" }"),
            "{text}"
        );
    }

    #[test]
    fn wheels_are_found_by_version_and_architecture() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find_wheel(dir.path(), "0.32.2").unwrap(), None);
        let arch = std::env::consts::ARCH;
        for name in [
            format!("mlx_cpu-0.32.1-py3-none-manylinux_2_35_{arch}.whl"),
            "mlx_cpu-0.32.2-py3-none-manylinux_2_35_other.whl".to_owned(),
            format!("mlx-0.32.2-cp311-cp311-manylinux_2_35_{arch}.whl"),
        ] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(find_wheel(dir.path(), "0.32.2").unwrap(), None);
        let good = dir
            .path()
            .join(format!("mlx_cpu-0.32.2-py3-none-manylinux_2_35_{arch}.whl"));
        fs::write(&good, b"").unwrap();
        assert_eq!(find_wheel(dir.path(), "0.32.2").unwrap(), Some(good));
    }
}
