//! Stage 1 of the pipeline: run the target under an engine that watches its
//! memory: Valgrind Memcheck (`valgrind`, the default) or a sanitizer
//! runtime preloaded into it (`sanitizer`: `--engine lsan|asan`). One
//! engine per module; both hand back the same [`RunOutcome`] (the report
//! files, how every process ended), and [`launch`] starts and supervises
//! either.
//!
//! The Valgrind engine finds valgrind, builds its command line (one XML file per process,
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
//! Files: this one ([`run`] choosing the engine, [`launch`]), `valgrind`
//! (the Valgrind engine, the version check), `sanitizer` (the sanitizer
//! engines), `config` (the configuration, the outcome, the errors), `target` (finding Valgrind and the
//! target), `command` (Valgrind's options, the target's environment,
//! [`crate::util::shell_join`]), `files` (the private directory and the XML files in
//! it), `supervise` (waiting, timeouts, forwarded signals), `children`
//! (reaping, the default `--trace-children-skip`), `signals` (handlers,
//! group kill), `shard` (`--shard K/N`, per-test durations), `workers` (the native collection of a pytest target, `-n N`, `-n auto`: the worker count from the
//! tests collected natively), `space` (XML cut short by a full disk or the file-size
//! limit), `progress` (the line), `stderr` (the watcher), `passcred`
//! (who wrote to stderr).

mod checkers;
pub mod children;
mod command;
mod config;
mod files;
mod passcred;
pub mod progress;
mod sanitizer;
mod shard;
pub mod signals;
mod space;
pub mod stderr;
mod supervise;
mod target;
mod turns;
mod valgrind;
mod workers;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::model::ExitStatus;
pub use config::{DEFAULT_SHOW_LEAK_KINDS, Engine, PerTest, RunConfig, RunError, RunOutcome};
pub use progress::ProgressMode;
pub use sanitizer::{LSAN_EXIT_CODE, find_runtime};
pub use shard::{Shard, ShardDurations, parse_shard};
pub use signals::signal_name;
pub use space::{diagnose as space_problem, survive_file_size_limit};
pub use supervise::{exit_status, parse_duration};
pub use target::{
    find_valgrind, is_pytest_target, is_python_target, is_xdist_target, resolve_target,
    target_python, valgrind_lib_for, valgrind_version,
};

/// Runs the target under the engine `cfg.engine` names and waits for it.
pub fn run(cfg: &RunConfig) -> Result<RunOutcome, RunError> {
    survive_file_size_limit();
    match cfg.engine {
        Engine::Valgrind => valgrind::run(cfg),
        Engine::Lsan | Engine::Asan => sanitizer::run(cfg),
    }
}

/// The interpreter a wrapper script (pyenv's shim) selects, put in place of
/// `argv[0]` with an environment line saying so; `None` for any other target.
fn unwrap_shim(
    cfg: &RunConfig,
    target: &Path,
    argv: &mut [String],
    environment: &mut Vec<String>,
) -> Option<std::path::PathBuf> {
    let real = target::unwrap_python_shim(&cfg.cmd[0], target)?;
    environment.push(format!(
        "{} is a wrapper script ({}); running the interpreter it selects: {}",
        cfg.cmd[0],
        target.display(),
        real.display()
    ));
    argv[0] = real.display().to_string();
    Some(real)
}

/// Whether the target is pytest, and whether it gets per-test checkpoints
/// (`--per-test`, automatic for pytest); `--repeat` needs them.
fn per_test_mode(cfg: &RunConfig) -> Result<(bool, bool), RunError> {
    let pytest = is_pytest_target(&cfg.cmd);
    let per_test = match cfg.per_test {
        PerTest::Auto => pytest,
        PerTest::On => true,
        PerTest::Off => false,
    };
    if cfg.repeat > 1 && !per_test {
        return Err(RunError::RepeatWithoutPerTest(cfg.repeat));
    }
    if let Some(shard) = cfg.shard {
        let why = if !pytest {
            Some("the target is not pytest (pytest, py.test, python -m pytest)")
        } else if !per_test {
            Some("--no-per-test leaves the plugin out")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(RunError::ShardWithoutPytest {
                shard: shard.to_string(),
                why,
            });
        }
    }
    Ok((pytest, per_test))
}

/// What [`launch`] saw: how the started process and its group ended, and
/// what their standard error said.
struct Launched {
    pid: u32,
    exit: ExitStatus,
    sup: supervise::Supervised,
    seen: stderr::Seen,
    progress: Option<progress::Progress>,
}

/// The tool's lines of the target's stderr (Valgrind's `==PID==` log, or
/// what a sanitizer runtime wrote there), one per line.
fn log_text(seen: &stderr::Seen) -> String {
    let mut text = String::new();
    for l in &seen.valgrind_log {
        text.push_str(l);
        text.push('\n');
    }
    text
}

/// Starts `cmd` (whose program is `program`, for errors) in a process group
/// of its own with its stderr watched, draws the progress line over `dir`
/// (where the report files appear), and supervises it to the end
/// (timeouts, forwarded signals, orphans reaped).
fn launch(
    mut cmd: Command,
    program: &Path,
    dir: &Path,
    cfg: &RunConfig,
) -> Result<Launched, RunError> {
    let term = progress::new_term();
    let mut watcher = stderr::Watcher::new().map_err(|e| RunError::Spawn {
        path: program.to_path_buf(),
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
        path: program.to_path_buf(),
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
        show_progress.then(|| progress::Progress::start(dir.to_path_buf(), term.clone()));
    let sup = supervise::supervise(&mut child, cfg, started);
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
    Ok(Launched {
        pid,
        exit,
        sup,
        seen,
        progress,
    })
}

#[cfg(test)]
mod tests;
