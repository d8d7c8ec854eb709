//! The run's configuration ([`RunConfig`]), what it returns
//! ([`RunOutcome`]) and why it could not start ([`RunError`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::progress::{self, ProgressMode};
use crate::model::ExitStatus;
use crate::report::StoppedOut;

/// `--engine`: what watches the target's memory (the run stage's choice;
/// `cli.rs` takes it from here).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Valgrind Memcheck: every leak kind, uninitialised values, the exact
    /// reference (15-60x native).
    Valgrind,
    /// LeakSanitizer preloaded into the target: definite and indirect leaks
    /// at close to native speed, nothing rebuilt.
    Lsan,
    /// AddressSanitizer's runtime preloaded, for extensions built with
    /// -fsanitize=address: memory errors where they happen, and leaks.
    Asan,
}

impl Engine {
    /// The name used in reports and options.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Valgrind => "valgrind",
            Engine::Lsan => "lsan",
            Engine::Asan => "asan",
        }
    }
}

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
    #[error(
        "the {engine} runtime was not found ({what}); install it (Debian/Ubuntu: apt-get install {package}) or pass --sanitizer-runtime PATH"
    )]
    RuntimeMissing {
        engine: &'static str,
        what: String,
        package: &'static str,
    },
    #[error("--sanitizer-runtime {0}: no such file")]
    RuntimePathMissing(PathBuf),
    #[error(
        "{path} is statically linked: a preloaded {engine} runtime cannot reach it; run it with --engine valgrind, or link it dynamically"
    )]
    StaticTarget { path: PathBuf, engine: &'static str },
    #[error(
        "{path} is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it, so --engine {engine} cannot watch it; run it with --engine valgrind"
    )]
    SetuidTarget { path: PathBuf, engine: &'static str },
    #[error(
        "{0} is built with AddressSanitizer (-fsanitize=address), which cannot run under Valgrind; run it with --engine asan, or build it without -fsanitize"
    )]
    SanitizedTarget(PathBuf),
    #[error(
        "the target loaded code built with -fsanitize=address, which needs the AddressSanitizer runtime first (\"ASan runtime does not come first\"); --engine {0} preloads another: run it with --engine asan"
    )]
    AsanNotFirst(&'static str),
    #[error(
        "the target loaded code built with -fsanitize=address (\"ASan runtime does not come first\"), which cannot run under Valgrind: run it with --engine asan, or build it without -fsanitize"
    )]
    AsanUnderValgrind,
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
    #[error(
        "{given} needs pytest-xdist here ({why}), and {} cannot import it (xdist); install it into that Python (pip install pytest-xdist), or leave {given} out",
        python.display()
    )]
    XdistMissing {
        given: String,
        python: PathBuf,
        why: String,
    },
    #[error(
        "pytest stopped while collecting the tests (a native `--collect-only`, {secs:.1}s), so nothing ran; pytest said:\n{}",
        indent(lines)
    )]
    Collection { lines: String, secs: f64 },
    #[error("--shard {shard} splits the tests of a pytest run in leakgate's pytest plugin: {why}")]
    ShardWithoutPytest { shard: String, why: &'static str },
    #[error("--num-callers {n}: Valgrind {version} accepts {min} to {max}")]
    NumCallers {
        n: u32,
        version: String,
        min: u32,
        max: u32,
    },
}

/// `text` with every line indented by two spaces.
fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
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
    /// What watches the target (`--engine`).
    pub engine: Engine,
    /// `--sanitizer-runtime`: the runtime to preload (lsan, asan).
    pub sanitizer_runtime: Option<PathBuf>,
    /// (lsan, asan) Unwind every allocation's stack exactly
    /// (`fast_unwind_on_malloc=0`): the re-run for stacks that fast
    /// unwinding cut short in code without frame pointers.
    pub slow_unwind: bool,
    /// (lsan, asan) A full garbage collection at every checkpoint
    /// (`LEAKGATE_COLLECT=full`), where a test's checkpoint with a forked
    /// check otherwise collects the young generations only: the run again
    /// after a checker found objects that only a full collection frees.
    pub full_collect: bool,
    pub valgrind: Option<PathBuf>,
    pub num_callers: u32,
    /// `--show-leak-kinds` as given; `None`: [`DEFAULT_SHOW_LEAK_KINDS`],
    /// widened to `all` for per-test checkpoints (a given value never is).
    pub show_leak_kinds: Option<String>,
    pub per_test: PerTest,
    /// `--repeat`: how often the pytest plugin runs each test.
    pub repeat: u32,
    pub track_origins: bool,
    /// pytest node ids: the plugin deselects every other test and takes
    /// no checkpoints (`LEAKGATE_ONLY_TESTS`, `LEAKGATE_CHECKPOINTS=0`:
    /// the re-run of `--origins auto`, which wants origins only). Empty: all.
    pub only_tests: Vec<String>,
    /// With `only_tests`: keep the checkpoints (the sanitizer engines'
    /// exact-unwinding re-run of some tests wants their leaks per test).
    pub only_tests_checkpoints: bool,
    /// `--track-fds=yes`: descriptors left open at exit and bad closes
    /// become XML errors (Valgrind 3.23+).
    pub track_fds: bool,
    pub extra_args: Vec<String>,
    pub cmd: Vec<String>,
    /// `--trace-children=yes` (default) with one XML file per process.
    pub trace_children: bool,
    /// `--trace-children-skip` patterns; `None`: [`DEFAULT_SKIP`](super::children::DEFAULT_SKIP).
    pub trace_children_skip: Option<String>,
    /// Stop the run after this long (SIGTERM to the process group).
    pub timeout: Option<Duration>,
    /// SIGKILL this long after SIGTERM.
    pub kill_after: Duration,
    /// How long to wait for children that outlive the target (without
    /// `--timeout`) before stopping them the same way.
    pub children_grace: Duration,
    pub progress: ProgressMode,
    /// `--shard K/N`: the pytest plugin runs only that part of the tests.
    pub shard: Option<super::shard::Shard>,
    /// `--shard-durations`: what the parts are balanced by.
    pub shard_durations: Option<super::shard::ShardDurations>,
}

impl RunConfig {
    /// A configuration with the defaults of `leakgate run` for `cmd`.
    pub fn new(cmd: Vec<String>) -> RunConfig {
        RunConfig {
            engine: Engine::Valgrind,
            sanitizer_runtime: None,
            slow_unwind: false,
            full_collect: false,
            valgrind: None,
            num_callers: 40,
            show_leak_kinds: None,
            per_test: PerTest::Auto,
            repeat: 1,
            track_origins: true,
            only_tests: Vec::new(),
            only_tests_checkpoints: false,
            track_fds: false,
            extra_args: Vec::new(),
            cmd,
            trace_children: true,
            trace_children_skip: None,
            timeout: None,
            kill_after: Duration::from_secs(10),
            children_grace: Duration::from_secs(120),
            progress: ProgressMode::Auto,
            shard: None,
            shard_durations: None,
        }
    }
}

/// What a run produced.
pub struct RunOutcome {
    /// Private directory holding the XML and log files (removed on drop).
    pub dir: tempfile::TempDir,
    /// The engine's report files: Valgrind's XML, or the sanitizer's
    /// per-process logs.
    pub reports: Vec<PathBuf>,
    /// The engine that ran.
    pub engine: Engine,
    /// Valgrind's text log(s) (or what the sanitizer runtime wrote to the
    /// target's stderr), concatenated (shown when something failed).
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
    /// Instructions Valgrind could not decode (from its standard error).
    pub unhandled: Vec<crate::model::UnhandledInstruction>,
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
    /// The pytest test each process was running when it ended, by pid:
    /// the probe's `LEAKGATE_RUNNING_DIR` files that no test's end removed
    /// (a process killed inside a test).
    pub running_tests: std::collections::BTreeMap<u64, String>,
    /// Each pytest test's seconds under the engine (its repetitions and
    /// checkpoints included), by node id: the report's `per_test.durations`.
    pub durations: std::collections::BTreeMap<String, f64>,
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
