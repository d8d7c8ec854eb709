//! Byte-code compiled natively, before Valgrind: the `leakgate_probe`
//! package is written afresh into each run's private directory, so without
//! this every Python process of every run compiled it (its `sitecustomize`
//! and `__init__`, some 30 kB of source) under Valgrind, where the
//! compiler runs some 50 times slower. `python -m compileall` with the
//! target's own interpreter writes the `.pyc` files beside it first; the
//! findings do not change (the same code runs, only its compilation moved).
//! A failure costs nothing but the saving.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::target::is_python_name;

/// The Python interpreter a target runs: argv[0] when it names Python
/// (`run_path`: the interpreter it resolved to), else the interpreter of
/// its shebang line (`#!/usr/bin/env python3`, `#!/opt/py/bin/python3.11`),
/// as a pytest script has. `None` for anything else.
pub(super) fn interpreter(argv0: &str, run_path: &Path) -> Option<PathBuf> {
    let base = Path::new(argv0).file_name()?.to_string_lossy().into_owned();
    if is_python_name(&base) {
        return Some(run_path.to_path_buf());
    }
    let head = std::fs::read(run_path).ok()?;
    let line = head.strip_prefix(b"#!")?.split(|b| *b == b'\n').next()?;
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let name = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    if is_python_name(&name(first)) {
        return Some(PathBuf::from(first));
    }
    if name(first) == "env" {
        let w = words.find(|w| !w.starts_with('-'))?;
        return is_python_name(&name(w))
            .then(|| which::which(w).ok())
            .flatten();
    }
    None
}

/// `python -m compileall -q DIR`, natively: the `.pyc` files of `dir`.
/// Whether it succeeded.
pub(super) fn compile_dir(python: &Path, dir: &Path) -> bool {
    Command::new(python)
        .args(["-m", "compileall", "-q"])
        .arg(dir)
        .env_remove("PYTHONPATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests;
