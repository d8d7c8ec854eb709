//! Stage 1 of the pipeline: run the target under Valgrind Memcheck.
//!
//! Finds valgrind, builds its command line (one XML file per process,
//! `vg.%p.%n.xml`, into a private temporary directory; child processes
//! traced by default), sets `PYTHONMALLOC=malloc` for Python targets (and
//! for pytest targets puts the `leakgate_probe` package on `PYTHONPATH`
//! with its plugin in `PYTEST_PLUGINS`: per-test checkpoints), runs
//! the target with its argv passed as argv (never through a shell), its
//! stdout untouched and its stderr passed through as it comes (watched for
//! PyTorch's CUDA-IPC warning and Valgrind's own messages), and hands back
//! the XML files and how every process it saw end ended.
//!
//! Valgrind runs in its own process group: `--timeout` and a forwarded
//! Ctrl-C (SIGINT/SIGTERM/SIGHUP) reach every traced child, SIGKILL follows
//! after `--kill-after`. leakgate is the subreaper of the run, waits for
//! the children that outlive the target, and draws the progress line.
//!
//! Children: `signals` (handlers, group kill), `children` (reaping, the
//! default `--trace-children-skip`), `progress` (the line), `stderr` (the
//! watcher).

pub mod children;
mod passcred;
pub mod progress;
pub mod signals;
pub mod stderr;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::model::ExitStatus;
use crate::report::StoppedOut;
pub use progress::ProgressMode;

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
    #[error(
        "--repeat {0} needs per-test checkpoints: a pytest target (pytest, python -m pytest), or --per-test"
    )]
    RepeatWithoutPerTest(u32),
    #[error(
        "--track-fds needs Valgrind 3.23 or later (it writes descriptor errors to the XML from 3.23); {path} is Valgrind {version}, which reports descriptors in its text log only"
    )]
    TrackFdsTooOld { path: PathBuf, version: String },
    #[error("--num-callers {n}: Valgrind {version} accepts {min} to {max}")]
    NumCallers {
        n: u32,
        version: String,
        min: u32,
        max: u32,
    },
}

/// `--show-leak-kinds` unless given.
pub const DEFAULT_SHOW_LEAK_KINDS: &str = "definite,indirect,possible";

/// Per-test checkpoints (`--per-test`, `--no-per-test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerTest {
    /// When the target is pytest.
    Auto,
    On,
    Off,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub valgrind: Option<PathBuf>,
    pub num_callers: u32,
    /// `--show-leak-kinds` as given; `None`: [`DEFAULT_SHOW_LEAK_KINDS`],
    /// widened to `all` for per-test checkpoints (a given value never is).
    pub show_leak_kinds: Option<String>,
    pub per_test: PerTest,
    /// `--repeat`: how often the pytest plugin runs each test.
    pub repeat: u32,
    pub track_origins: bool,
    /// `--track-fds=yes`: descriptors left open at exit and bad closes
    /// become XML errors (Valgrind 3.23+).
    pub track_fds: bool,
    pub extra_args: Vec<String>,
    pub cmd: Vec<String>,
    /// `--trace-children=yes` (default) with one XML file per process.
    pub trace_children: bool,
    /// `--trace-children-skip` patterns; `None`: [`children::DEFAULT_SKIP`].
    pub trace_children_skip: Option<String>,
    /// Stop the run after this long (SIGTERM to the process group).
    pub timeout: Option<Duration>,
    /// SIGKILL this long after SIGTERM.
    pub kill_after: Duration,
    /// How long to wait for children that outlive the target (without
    /// `--timeout`) before stopping them the same way.
    pub children_grace: Duration,
    pub progress: ProgressMode,
}

impl RunConfig {
    /// A configuration with the defaults of `leakgate run` for `cmd`.
    pub fn new(cmd: Vec<String>) -> RunConfig {
        RunConfig {
            valgrind: None,
            num_callers: 40,
            show_leak_kinds: None,
            per_test: PerTest::Auto,
            repeat: 1,
            track_origins: true,
            track_fds: false,
            extra_args: Vec::new(),
            cmd,
            trace_children: true,
            trace_children_skip: None,
            timeout: None,
            kill_after: Duration::from_secs(10),
            children_grace: Duration::from_secs(120),
            progress: ProgressMode::Auto,
        }
    }
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
    /// How every process leakgate reaped ended (the target, and orphaned
    /// children), by pid.
    pub exits: HashMap<u64, ExitStatus>,
    /// Set when leakgate stopped the run (timeout, Ctrl-C).
    pub stopped: Option<StoppedOut>,
    /// Children still running when the target ended, stopped after the grace period.
    pub stopped_children: Option<String>,
    /// PyTorch's CUDA-IPC producer warning: (pid, line, times).
    pub cuda_ipc: Vec<(u64, String, u64)>,
    /// Valgrind's messages already reached the user's stderr (so the log
    /// need not be printed again). False: the watcher kept them back.
    pub log_shown: bool,
    /// The progress line, still drawn (phase `analysing`) until finished.
    pub progress: Option<progress::Progress>,
    /// Per-test checkpoints were enabled (the probe was on `PYTHONPATH`).
    pub per_test: bool,
    /// leakgate widened `--show-leak-kinds` to `all` for the checkpoints:
    /// still-reachable noise of the final check is not to be reported.
    pub added_reachable: bool,
}

impl RunOutcome {
    /// Shows `analysing` on the progress line.
    pub fn analysing(&self) {
        if let Some(p) = &self.progress {
            p.set_phase("analysing");
        }
    }

    /// Clears the progress line (before the report is printed).
    pub fn end_progress(&mut self) {
        if let Some(mut p) = self.progress.take() {
            p.finish();
        }
    }
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

fn valgrind_version_with(valgrind: &Path, lib: Option<&Path>) -> Option<String> {
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
    // Only for an explicit --valgrind: the one on PATH is at its prefix.
    let valgrind_lib = cfg
        .valgrind
        .as_ref()
        .and_then(|_| valgrind_lib_for(&valgrind));
    let version = valgrind_version_with(&valgrind, valgrind_lib.as_deref());
    check_version(&valgrind, version.as_deref(), cfg)?;
    // Private: the XML holds the target's command line, paths and stacks.
    let private = || {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o700)
    };
    let dir = tempfile::Builder::new()
        .prefix("leakgate-")
        .permissions(private())
        .tempdir()
        .map_err(RunError::TempDir)?;
    std::fs::set_permissions(dir.path(), private()).map_err(RunError::TempDir)?;
    // %p: one file per process; %n: a fork child's file (and the part of
    // a process before a traced exec) gets a sequence number >= 2 while
    // the post-exec Valgrind restarts at 1, so an exec does not overwrite
    // the pre-exec part. Valgrind's text log goes to stderr (the watcher
    // collects it): with `--log-file=...%p` Valgrind 3.19 does not reopen
    // the XML file in a fork child, which then writes into its parent's.
    let xml = dir.path().join(if supports_seq(version.as_deref()) {
        "vg.%p.%n.xml"
    } else {
        "vg.%p.xml"
    });
    let pytest = is_pytest_target(&cfg.cmd);
    let per_test = match cfg.per_test {
        PerTest::Auto => pytest,
        PerTest::On => true,
        PerTest::Off => false,
    };
    if cfg.repeat > 1 && !per_test {
        return Err(RunError::RepeatWithoutPerTest(cfg.repeat));
    }
    // Checkpoints follow blocks that are still reachable at one snapshot
    // and lost at a later one, and report containers that grow while
    // reachable: Valgrind must show reachable blocks too.
    let added_reachable = per_test && cfg.show_leak_kinds.is_none();
    let show_leak_kinds = match &cfg.show_leak_kinds {
        Some(kinds) => kinds.as_str(),
        None if added_reachable => "all",
        None => DEFAULT_SHOW_LEAK_KINDS,
    };
    let mut args: Vec<OsString> = vec![
        "--tool=memcheck".into(),
        "--leak-check=full".into(),
        "--xml=yes".into(),
        os_concat("--xml-file=", &xml),
        "--gen-suppressions=all".into(),
        // Frames below main take part in Valgrind's suppression matching;
        // leakgate matches after the run, so it needs to see them.
        "--show-below-main=yes".into(),
        format!("--num-callers={}", cfg.num_callers).into(),
        format!("--show-leak-kinds={show_leak_kinds}").into(),
        "--error-limit=no".into(),
    ];
    if cfg.track_origins {
        args.insert(2, "--track-origins=yes".into());
    }
    if cfg.track_fds {
        args.push("--track-fds=yes".into());
    }
    if cfg.trace_children {
        args.push("--trace-children=yes".into());
        let skip = cfg
            .trace_children_skip
            .clone()
            .unwrap_or_else(|| children::DEFAULT_SKIP.to_string());
        if !skip.is_empty() {
            args.push(format!("--trace-children-skip={skip}").into());
        }
    }
    for a in &cfg.extra_args {
        args.push(a.into());
    }
    let mut cmd = Command::new(&valgrind);
    cmd.args(&args).args(&target_argv);
    if let Some(lib) = &valgrind_lib {
        cmd.env("VALGRIND_LIB", lib);
        environment.push(format!(
            "VALGRIND_LIB={} (set by leakgate: the tools of --valgrind {})",
            lib.display(),
            valgrind.display()
        ));
    }
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
    if per_test {
        let probe = crate::checkpoints::write_probe(&dir.path().join("probe"))
            .map_err(RunError::TempDir)?;
        let mut pp = OsString::from(probe.as_os_str());
        let old = std::env::var_os("PYTHONPATH").filter(|v| !v.is_empty());
        if let Some(old) = &old {
            pp.push(":");
            pp.push(old);
        }
        cmd.env("PYTHONPATH", &pp);
        cmd.env("LEAKGATE_PROBE", "1");
        environment.push(format!(
            "PYTHONPATH={}{} (set by leakgate: the leakgate_probe package for per-test leak checks)",
            probe.display(),
            if old.is_some() { ":… (yours after it)" } else { "" }
        ));
        if pytest {
            let plugins = match std::env::var("PYTEST_PLUGINS") {
                Ok(v) if !v.trim().is_empty() => format!("{v},leakgate_probe.autoload"),
                _ => "leakgate_probe.autoload".to_string(),
            };
            cmd.env("PYTEST_PLUGINS", &plugins);
            environment.push(format!(
                "PYTEST_PLUGINS={plugins} (set by leakgate: a leak checkpoint after every test)"
            ));
        }
        if cfg.repeat > 1 {
            cmd.env("LEAKGATE_REPEAT", cfg.repeat.to_string());
            environment.push(format!(
                "LEAKGATE_REPEAT={} (set by leakgate: --repeat)",
                cfg.repeat
            ));
        }
    }
    let mut valgrind_command = vec![valgrind.display().to_string()];
    valgrind_command.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
    valgrind_command.extend(target_argv.iter().cloned());
    let term = progress::new_term();
    let mut watcher = stderr::Watcher::new().map_err(|e| RunError::Spawn {
        path: valgrind.clone(),
        err: e,
    })?;
    cmd.stderr(watcher.child_stdio());
    {
        // A process group of its own, so signals reach every traced child.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    children::become_subreaper();
    let guard = signals::install();
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| RunError::Spawn {
        path: valgrind.clone(),
        err: e,
    })?;
    drop(cmd); // our copy of the child's stderr: EOF comes when the children close theirs
    let pid = child.id();
    watcher.start(u64::from(pid), term.clone());
    let show_progress = match cfg.progress {
        ProgressMode::Always => true,
        ProgressMode::Never => false,
        ProgressMode::Auto => {
            use std::io::IsTerminal;
            std::io::stderr().is_terminal()
        }
    };
    let progress =
        show_progress.then(|| progress::Progress::start(dir.path().to_path_buf(), term.clone()));
    let sup = supervise(&mut child, cfg, started);
    drop(guard);
    drop(child);
    // The stream ends when the last writer is gone; do not wait for a
    // daemon that escaped the process group.
    let wait_until = Instant::now() + Duration::from_secs(2);
    while !watcher.seen.lock().expect("watcher lock").eof && Instant::now() < wait_until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = std::mem::take(&mut *watcher.seen.lock().expect("watcher lock"));
    let exit = sup
        .exits
        .get(&u64::from(pid))
        .cloned()
        .unwrap_or(ExitStatus::Code(-1));
    let mut xml_files = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir.path()) {
        for e in rd.flatten() {
            let p = e.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".xml") {
                xml_files.push(p);
            }
        }
    }
    xml_files.sort();
    let mut log_text = String::new();
    for l in &seen.valgrind_log {
        log_text.push_str(l);
        log_text.push('\n');
    }
    let mut cuda_ipc: Vec<(u64, String, u64)> = seen
        .cuda_ipc
        .into_iter()
        .map(|(p, (l, n))| (p, l, n))
        .collect();
    cuda_ipc.sort();
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
        exits: sup.exits,
        stopped: sup.stopped,
        stopped_children: sup.stopped_children,
        cuda_ipc,
        log_shown: false,
        progress,
        per_test,
        added_reachable,
    })
}

/// Refuses what this Valgrind cannot do, before anything runs: `--track-fds`
/// before 3.23 (descriptor errors go to the text log only), a
/// `--num-callers` outside what it accepts. An unknown version passes.
fn check_version(valgrind: &Path, version: Option<&str>, cfg: &RunConfig) -> Result<(), RunError> {
    use crate::versions::{FD_ERRORS_IN_XML, MAX_NUM_CALLERS, VgVersion, min_num_callers};
    let Some(v) = version.and_then(VgVersion::parse) else {
        return Ok(());
    };
    if cfg.track_fds && !v.at_least(FD_ERRORS_IN_XML.0, FD_ERRORS_IN_XML.1) {
        return Err(RunError::TrackFdsTooOld {
            path: valgrind.to_path_buf(),
            version: v.to_string(),
        });
    }
    let min = min_num_callers(v);
    if !(min..=MAX_NUM_CALLERS).contains(&cfg.num_callers) {
        return Err(RunError::NumCallers {
            n: cfg.num_callers,
            version: v.to_string(),
            min,
            max: MAX_NUM_CALLERS,
        });
    }
    Ok(())
}

/// Whether this Valgrind expands `%n` in file names (3.19 does: checked).
fn supports_seq(version: Option<&str>) -> bool {
    let Some(v) = version else { return false };
    let mut it = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (major, minor) >= (3, 19)
}

/// What supervising the run found.
struct Supervised {
    exits: HashMap<u64, ExitStatus>,
    stopped: Option<StoppedOut>,
    stopped_children: Option<String>,
}

/// Waits for the target and every process of its group, reaping them;
/// stops the group on timeout or a signal to leakgate (the signal, or
/// SIGTERM on timeout, then SIGKILL after `kill_after`; a second Ctrl-C
/// kills at once).
fn supervise(child: &mut std::process::Child, cfg: &RunConfig, started: Instant) -> Supervised {
    let pid = child.id();
    let mut exits = HashMap::new();
    let mut stopped: Option<StoppedOut> = None;
    let mut stopped_children = None;
    let mut kill_at: Option<Instant> = None;
    let mut killed = false;
    let mut handled_signals = 0usize;
    let mut target_ended: Option<Instant> = None;
    let main = u64::from(pid);
    loop {
        // Valgrind's pid is its leader: orphans of the group are reaped
        // here, Valgrind itself through its `Child`.
        children::reap(pid, &[pid], &mut exits);
        if target_ended.is_none() {
            let status = match child.try_wait() {
                Ok(Some(status)) => Some(exit_status(status)),
                Ok(None) => None,
                Err(_) => Some(ExitStatus::Code(-1)),
            };
            if let Some(status) = status {
                exits.insert(main, status);
                target_ended = Some(Instant::now());
            }
        }
        if target_ended.is_some() && !children::group_alive(pid) {
            break;
        }
        let (sig, count) = signals::received();
        if count > handled_signals {
            handled_signals = count;
            if stopped.is_none() {
                let name = signal_name(sig);
                signals::kill_group(pid, sig);
                stopped = Some(StoppedOut {
                    reason: "interrupted".into(),
                    detail: format!(
                        "interrupted by {name} after {}: {name} forwarded to Valgrind's process group",
                        progress::elapsed(started.elapsed())
                    ),
                    signals_sent: vec![name],
                });
                kill_at = Some(Instant::now() + cfg.kill_after);
            } else if !killed {
                signals::kill_group(pid, libc::SIGKILL);
                killed = true;
                if let Some(s) = stopped.as_mut() {
                    s.signals_sent.push("SIGKILL".into());
                    s.detail.push_str("; SIGKILL at the second signal");
                }
            }
        }
        if stopped.is_none()
            && let Some(t) = cfg.timeout
            && started.elapsed() >= t
        {
            signals::kill_group(pid, libc::SIGTERM);
            stopped = Some(StoppedOut {
                reason: "timeout".into(),
                detail: format!(
                    "timed out after {} (--timeout): SIGTERM sent to Valgrind's process group",
                    progress::elapsed(t)
                ),
                signals_sent: vec!["SIGTERM".into()],
            });
            kill_at = Some(Instant::now() + cfg.kill_after);
        }
        if stopped.is_none()
            && stopped_children.is_none()
            && cfg.timeout.is_none()
            && let Some(t) = target_ended
            && t.elapsed() >= cfg.children_grace
        {
            signals::kill_group(pid, libc::SIGTERM);
            stopped_children = Some(format!(
                "child processes were still running {} after the target exited: SIGTERM sent to them",
                progress::elapsed(cfg.children_grace)
            ));
            kill_at = Some(Instant::now() + cfg.kill_after);
        }
        if !killed
            && let Some(k) = kill_at
            && Instant::now() >= k
        {
            signals::kill_group(pid, libc::SIGKILL);
            killed = true;
            if let Some(s) = stopped.as_mut() {
                s.signals_sent.push("SIGKILL".into());
                s.detail.push_str(&format!(
                    "; SIGKILL after {} more (--kill-after)",
                    progress::elapsed(cfg.kill_after)
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Supervised {
        exits,
        stopped,
        stopped_children,
    }
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

/// Parses `90s`, `10m`, `1h`, `1m30s`, `500ms` or a plain number of
/// seconds (`--timeout`, `--kill-after`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("invalid duration {s:?} (use e.g. 90s, 10m, 1h30m, 500ms)");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = t.parse::<f64>() {
        return (n.is_finite() && n >= 0.0)
            .then(|| Duration::from_secs_f64(n))
            .ok_or_else(bad);
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "ms" => n / 1000.0,
            "s" | "sec" => n,
            "m" | "min" => n * 60.0,
            "h" => n * 3600.0,
            _ => return Err(bad()),
        };
        total += Duration::from_secs_f64(secs);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
