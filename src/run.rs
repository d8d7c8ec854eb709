//! Stage 1 of the pipeline: run the target under Valgrind Memcheck.
//!
//! Finds valgrind, builds its command line (XML per process into a private
//! temporary directory, the text log beside it), sets `PYTHONMALLOC=malloc`
//! for Python targets, runs the target with its argv passed as argv (never
//! through a shell) and its stdout/stderr untouched, and hands back the XML
//! files and how the target ended.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::model::ExitStatus;

/// Why a run could not start. All map to exit 2.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(
        "valgrind not found on PATH; install it (Debian/Ubuntu: apt-get install valgrind) or pass --valgrind PATH"
    )]
    ValgrindMissing,
    #[error(
        "valgrind not found at {0}; install it (Debian/Ubuntu: apt-get install valgrind) or fix --valgrind"
    )]
    ValgrindPathMissing(PathBuf),
    #[error("target not found: {0}")]
    TargetMissing(String),
    #[error("cannot start valgrind ({path}): {err}")]
    Spawn { path: PathBuf, err: std::io::Error },
    #[error("cannot create a temporary directory: {0}")]
    TempDir(std::io::Error),
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub valgrind: Option<PathBuf>,
    pub num_callers: u32,
    pub show_leak_kinds: String,
    pub track_origins: bool,
    pub extra_args: Vec<String>,
    pub cmd: Vec<String>,
}

/// What a run produced.
pub struct RunOutcome {
    /// Private directory holding the XML and log files (removed on drop).
    pub dir: tempfile::TempDir,
    pub xml_files: Vec<PathBuf>,
    /// Valgrind's text log(s), concatenated (shown when something failed).
    pub log: String,
    pub exit: ExitStatus,
    /// The pid of the process leakgate started (valgrind's pid is the target's).
    pub pid: u32,
    pub valgrind_version: Option<String>,
    pub valgrind_path: PathBuf,
    /// Environment changes made for the target, e.g. `PYTHONMALLOC=malloc`.
    pub environment: Vec<String>,
    /// The full valgrind command line used.
    pub valgrind_command: Vec<String>,
}

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

/// `valgrind --version` → `3.19.0`.
pub fn valgrind_version(valgrind: &Path) -> Option<String> {
    let out = Command::new(valgrind).arg("--version").output().ok()?;
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

fn is_python_name(base: &str) -> bool {
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
fn unwrap_python_shim(argv0: &str, resolved: &Path) -> Option<PathBuf> {
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

/// Runs the target under valgrind and waits for it.
pub fn run(cfg: &RunConfig) -> Result<RunOutcome, RunError> {
    let valgrind = find_valgrind(cfg.valgrind.as_deref())?;
    let target = resolve_target(&cfg.cmd[0])?;
    let mut target_argv = cfg.cmd.clone();
    let mut environment = Vec::new();
    if let Some(real) = unwrap_python_shim(&cfg.cmd[0], &target) {
        environment.push(format!(
            "{} is a wrapper script ({}); running the interpreter it selects: {}",
            cfg.cmd[0],
            target.display(),
            real.display()
        ));
        target_argv[0] = real.display().to_string();
    }
    let version = valgrind_version(&valgrind);
    let dir = tempfile::Builder::new()
        .prefix("leakgate-")
        .tempdir()
        .map_err(RunError::TempDir)?;
    let xml = dir.path().join("vg.%p.xml");
    let log = dir.path().join("vg.%p.log");
    let mut args: Vec<OsString> = vec![
        "--tool=memcheck".into(),
        "--leak-check=full".into(),
        "--xml=yes".into(),
        os_concat("--xml-file=", &xml),
        os_concat("--log-file=", &log),
        "--gen-suppressions=all".into(),
        // Frames below main take part in Valgrind's suppression matching;
        // leakgate matches after the run, so it needs to see them.
        "--show-below-main=yes".into(),
        format!("--num-callers={}", cfg.num_callers).into(),
        format!("--show-leak-kinds={}", cfg.show_leak_kinds).into(),
        "--error-limit=no".into(),
    ];
    if cfg.track_origins {
        args.insert(2, "--track-origins=yes".into());
    }
    for a in &cfg.extra_args {
        args.push(a.into());
    }
    let mut cmd = Command::new(&valgrind);
    cmd.args(&args).args(&target_argv);
    if is_python_target(&cfg.cmd[0], &target) {
        match std::env::var_os("PYTHONMALLOC") {
            None => {
                cmd.env("PYTHONMALLOC", "malloc");
                environment.push("PYTHONMALLOC=malloc (set by leakgate: Python target)".into());
            }
            Some(v) => environment.push(format!(
                "PYTHONMALLOC={} (yours, kept; leakgate would set malloc)",
                v.to_string_lossy()
            )),
        }
    }
    let mut valgrind_command = vec![valgrind.display().to_string()];
    valgrind_command.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
    valgrind_command.extend(target_argv.iter().cloned());
    let mut child = cmd.spawn().map_err(|e| RunError::Spawn {
        path: valgrind.clone(),
        err: e,
    })?;
    let pid = child.id();
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(RunError::Spawn {
                    path: valgrind.clone(),
                    err: e,
                });
            }
        }
    };
    let exit = exit_status(status);
    let mut xml_files = Vec::new();
    let mut logs = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir.path()) {
        for e in rd.flatten() {
            let p = e.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".xml") {
                xml_files.push(p);
            } else if name.ends_with(".log") {
                logs.push(p);
            }
        }
    }
    xml_files.sort();
    logs.sort();
    let mut log_text = String::new();
    for l in logs {
        if let Ok(t) = std::fs::read_to_string(&l) {
            log_text.push_str(&t);
        }
    }
    Ok(RunOutcome {
        dir,
        xml_files,
        log: log_text,
        exit,
        pid,
        valgrind_version: version,
        valgrind_path: valgrind,
        environment,
        valgrind_command,
    })
}

fn os_concat(prefix: &str, p: &Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(p.as_os_str());
    s
}

/// Converts a process status into the report's form.
pub fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    if let Some(c) = status.code() {
        return ExitStatus::Code(c);
    }
    match status.signal() {
        Some(s) => ExitStatus::Signal(signal_name(s)),
        None => ExitStatus::Code(-1),
    }
}

/// `11` → `SIGSEGV`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_names() {
        assert!(is_python_name("python"));
        assert!(is_python_name("python3"));
        assert!(is_python_name("python3.11"));
        assert!(!is_python_name("python-config"));
        assert!(!is_python_name("cpython"));
    }
}
