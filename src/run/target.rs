//! Finding what to run: Valgrind (on `PATH` or `--valgrind`, its
//! `VALGRIND_LIB` when relocated, its version) and the target (resolved
//! like exec; a Python interpreter, a pytest run, a pyenv-style wrapper
//! script that selects the real interpreter).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::config::RunError;

/// Locates valgrind.
pub fn find_valgrind(explicit: Option<&Path>) -> Result<PathBuf, RunError> {
    match explicit {
        Some(p) => {
            if p.components().count() > 1 || p.is_absolute() {
                if p.is_file() {
                    Ok(p.to_path_buf())
                } else {
                    Err(RunError::ValgrindPathMissing(p.to_path_buf()))
                }
            } else {
                which::which(p).map_err(|_| RunError::ValgrindPathMissing(p.to_path_buf()))
            }
        }
        None => which::which("valgrind").map_err(|_| RunError::ValgrindMissing),
    }
}

/// `VALGRIND_LIB` for a Valgrind tree that is not at its configured prefix:
/// when `valgrind` is `DIR/bin/valgrind` next to `DIR/libexec/valgrind/`
/// (a relocated or unpacked build) and `VALGRIND_LIB` is not set, the
/// launcher needs to be told where its tools are. `None` otherwise.
pub fn valgrind_lib_for(valgrind: &Path) -> Option<PathBuf> {
    if std::env::var_os("VALGRIND_LIB").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let bin = valgrind.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let lib = bin.parent()?.join("libexec").join("valgrind");
    let has_tool = std::fs::read_dir(&lib)
        .ok()?
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("memcheck-"));
    has_tool.then_some(lib)
}

/// `valgrind --version` → `3.19.0`.
pub fn valgrind_version(valgrind: &Path) -> Option<String> {
    valgrind_version_with(valgrind, valgrind_lib_for(valgrind).as_deref())
}

pub(super) fn valgrind_version_with(valgrind: &Path, lib: Option<&Path>) -> Option<String> {
    let mut cmd = Command::new(valgrind);
    if let Some(lib) = lib {
        cmd.env("VALGRIND_LIB", lib);
    }
    let out = cmd.arg("--version").output().ok()?;
    let s = String::from_utf8_lossy(&out.stdout);
    let v = s.trim().strip_prefix("valgrind-")?.to_string();
    Some(v)
}

/// Resolves the target's argv[0] the way exec would (PATH lookup without a slash).
pub fn resolve_target(argv0: &str) -> Result<PathBuf, RunError> {
    if argv0.contains('/') {
        let p = PathBuf::from(argv0);
        if p.is_file() {
            Ok(p)
        } else {
            Err(RunError::TargetMissing(argv0.to_string()))
        }
    } else {
        which::which(argv0).map_err(|_| RunError::TargetMissing(argv0.to_string()))
    }
}

/// Whether the target is a Python interpreter, pytest, or a script whose
/// shebang runs Python.
pub fn is_python_target(argv0: &str, resolved: &Path) -> bool {
    let base = Path::new(argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if is_python_name(&base) || base == "pytest" || base == "py.test" {
        return true;
    }
    // A script: look at its shebang line.
    let Ok(bytes) = read_head(resolved, 256) else {
        return false;
    };
    if !bytes.starts_with(b"#!") {
        return false;
    }
    let line = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let line = String::from_utf8_lossy(line);
    line[2..]
        .split_whitespace()
        .take(3)
        .any(|w| is_python_name(w.rsplit('/').next().unwrap_or(w)))
}

/// Whether the target runs pytest: `pytest`, `py.test`, `python -m pytest`,
/// or `python path/to/pytest`.
/// Whether a pytest command runs pytest-xdist workers: `-n N`, `-nN`,
/// `--numprocesses N`, `--numprocesses=N` with N other than 0 (the last one
/// given wins, as in pytest), or `--tx`.
pub fn is_xdist_target(argv: &[String]) -> bool {
    if !is_pytest_target(argv) {
        return false;
    }
    let (mut workers, mut tx) = (None::<bool>, false);
    let mut it = argv[1..].iter();
    while let Some(a) = it.next() {
        let n = match a.as_str() {
            "--" => break,
            "-n" | "--numprocesses" => it.next().map(String::as_str),
            "--tx" => {
                tx = true;
                None
            }
            s if s.starts_with("--tx=") => {
                tx = true;
                None
            }
            s if s.starts_with("--numprocesses=") => Some(&s["--numprocesses=".len()..]),
            s if s.starts_with("-n") && s.len() > 2 && !s.starts_with("--") => Some(&s[2..]),
            _ => None,
        };
        if let Some(n) = n {
            workers = Some(n != "0");
        }
    }
    workers.unwrap_or(tx)
}

pub fn is_pytest_target(argv: &[String]) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let Some(first) = argv.first() else {
        return false;
    };
    let b = base(first);
    if b == "pytest" || b == "py.test" || b.starts_with("pytest-") {
        return true;
    }
    if !is_python_name(&b) {
        return false;
    }
    let mut it = argv[1..].iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-m" => return it.next().is_some_and(|m| m == "pytest" || m == "py.test"),
            "-mpytest" => return true,
            "-c" => return false,
            "-X" | "-W" => {
                it.next();
            }
            s if s.starts_with('-') => {}
            s => {
                let b = base(s);
                return b == "pytest" || b == "py.test";
            }
        }
    }
    false
}

pub(super) fn is_python_name(base: &str) -> bool {
    match base.strip_prefix("python") {
        Some(rest) => rest.chars().all(|c| c.is_ascii_digit() || c == '.'),
        None => false,
    }
}

fn read_head(p: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut buf = vec![0; n];
    let k = f.read(&mut buf)?;
    buf.truncate(k);
    Ok(buf)
}

/// When argv[0] names Python but resolves to a wrapper script (a pyenv shim,
/// say), Valgrind would check the shell, not Python: ask the wrapper which
/// interpreter it runs and use that instead.
pub(super) fn unwrap_python_shim(argv0: &str, resolved: &Path) -> Option<PathBuf> {
    let base = Path::new(argv0).file_name()?.to_string_lossy().into_owned();
    if !is_python_name(&base) {
        return None;
    }
    let head = read_head(resolved, 256).ok()?;
    if !head.starts_with(b"#!") {
        return None; // an ELF interpreter: fine as is
    }
    let out = Command::new(resolved)
        .args(["-c", "import sys; print(sys.executable)"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (out.status.success() && exe.is_absolute() && exe.is_file()).then_some(exe)
}

/// The Python interpreter a target command runs, when it runs one: argv[0]
/// itself when it is named like Python (`python3`, `python3.11`, a venv's
/// `python`), else the interpreter on the shebang line of the script it
/// names (`pytest`, a console script: `#!/path/python3` or
/// `#!/usr/bin/env python3`, looked up on PATH). `leakgate init` asks it
/// for its version, which its workflow's setup-python then installs.
pub fn target_python(argv0: &str) -> Option<PathBuf> {
    let resolved = resolve_target(argv0).ok()?;
    let base = Path::new(argv0).file_name()?.to_string_lossy().into_owned();
    if is_python_name(&base) {
        return Some(resolved);
    }
    let head = read_head(&resolved, 256).ok()?;
    let line = head.strip_prefix(b"#!")?.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    shebang_python(&line).and_then(|w| resolve_target(&w).ok())
}

/// The Python interpreter of a shebang line (without `#!`): its first word,
/// or the command `env` runs (after its options and `NAME=value`s), when
/// its file name is Python's.
pub(super) fn shebang_python(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let mut first = words.next()?;
    if first.rsplit('/').next() == Some("env") {
        first = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    }
    is_python_name(first.rsplit('/').next().unwrap_or(first)).then(|| first.to_string())
}
