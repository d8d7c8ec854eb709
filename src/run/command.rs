//! The Valgrind command line and the target's environment: Memcheck's
//! options (XML per process, leak kinds, children traced), `VALGRIND_LIB`,
//! `PYTHONMALLOC=malloc` for Python targets, the per-test probe on
//! `PYTHONPATH`/`PYTEST_PLUGINS`; each change to the environment is also
//! described for the report. And [`crate::util::shell_join`], an argv as a person would
//! type it.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::{RunConfig, children};

/// Valgrind's options for this run, before the target's argv: XML into
/// `xml` (a pattern with `%p`), leaks of `show_leak_kinds`.
pub(super) fn valgrind_args(cfg: &RunConfig, xml: &Path, show_leak_kinds: &str) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--tool=memcheck".into(),
        "--leak-check=full".into(),
        "--xml=yes".into(),
        os_concat("--xml-file=", xml),
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
    args
}

/// `VALGRIND_LIB` for a relocated `--valgrind`.
pub(super) fn set_valgrind_lib(
    cmd: &mut Command,
    environment: &mut Vec<String>,
    lib: &Path,
    valgrind: &Path,
) {
    cmd.env("VALGRIND_LIB", lib);
    environment.push(format!(
        "VALGRIND_LIB={} (set by leakgate: the tools of --valgrind {})",
        lib.display(),
        valgrind.display()
    ));
}

/// `PYTHONMALLOC=malloc` for a Python target, unless the user set it.
pub(super) fn set_python_malloc(cmd: &mut Command, environment: &mut Vec<String>) {
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

/// The `leakgate_probe` package and its `sitecustomize` at `probe` first on
/// `PYTHONPATH` (every Python process arms the probe's exit hook for leaks
/// of objects the garbage collector lists); with per-test checkpoints, its
/// pytest plugin in `PYTEST_PLUGINS` for a pytest target, `LEAKGATE_REPEAT`
/// for `--repeat`, `LEAKGATE_ONLY_TESTS` for a selection.
pub(super) fn set_probe(
    cmd: &mut Command,
    environment: &mut Vec<String>,
    probe: &Path,
    pytest: bool,
    per_test: bool,
    cfg: &super::RunConfig,
) {
    let repeat = cfg.repeat;
    let mut pp = OsString::from(probe.as_os_str());
    let old = std::env::var_os("PYTHONPATH").filter(|v| !v.is_empty());
    if let Some(old) = &old {
        pp.push(":");
        pp.push(old);
    }
    cmd.env("PYTHONPATH", &pp);
    cmd.env("LEAKGATE_PROBE", "1");
    environment.push(format!(
        "PYTHONPATH={}{} (set by leakgate: the leakgate_probe package, for {}leaks the garbage collector hides)",
        probe.display(),
        if old.is_some() {
            ":… (yours after it)"
        } else {
            ""
        },
        if per_test { "per-test leak checks and " } else { "" }
    ));
    if !per_test {
        return;
    }
    if pytest
        && let Some(dir) = probe.parent()
        && std::fs::create_dir_all(super::files::running_dir(dir)).is_ok()
    {
        // The test each process is in: a crash names it.
        cmd.env("LEAKGATE_RUNNING_DIR", super::files::running_dir(dir));
    }
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
    if pytest {
        set_deadlines(cmd, environment, cfg.engine);
        if let Some(dir) = probe.parent() {
            super::shard::set_shard(cmd, environment, dir, cfg);
        }
    }
    if repeat > 1 {
        cmd.env("LEAKGATE_REPEAT", repeat.to_string());
        environment.push(format!(
            "LEAKGATE_REPEAT={repeat} (set by leakgate: --repeat)"
        ));
    }
    if pytest && !cfg.only_tests.is_empty() {
        cmd.env("LEAKGATE_ONLY_TESTS", cfg.only_tests.join("\n"));
        if cfg.only_tests_checkpoints {
            environment.push(format!(
                "LEAKGATE_ONLY_TESTS={} (set by leakgate: only these tests run)",
                cfg.only_tests.join(" ")
            ));
        } else {
            cmd.env("LEAKGATE_CHECKPOINTS", "0");
            environment.push(format!(
                "LEAKGATE_ONLY_TESTS={} LEAKGATE_CHECKPOINTS=0 (set by leakgate: only these tests run, without checkpoints)",
                cfg.only_tests.join(" ")
            ));
        }
    }
}

/// How much longer than natively a test may take under `engine`, for
/// pytest-timeout's timeouts: Memcheck runs code 20-50 times slower and
/// every checkpoint is a leak check of the whole heap; a sanitizer's
/// allocations and forked checks cost far less.
pub(super) fn timeout_factor(engine: super::Engine) -> u32 {
    match engine {
        super::Engine::Valgrind => 50,
        super::Engine::Lsan | super::Engine::Asan => 10,
    }
}

/// `LEAKGATE_TIMEOUT_FACTOR` for the pytest plugin (`deadlines.py`):
/// hypothesis' deadlines off, pytest-timeout's timeouts stretched, unless
/// the user keeps them (`LEAKGATE_KEEP_DEADLINES=1`) or set the factor.
fn set_deadlines(cmd: &mut Command, environment: &mut Vec<String>, engine: super::Engine) {
    let keep = std::env::var("LEAKGATE_KEEP_DEADLINES").is_ok_and(|v| !v.is_empty() && v != "0");
    if keep {
        environment.push(
            "LEAKGATE_KEEP_DEADLINES=1 (yours: hypothesis' deadlines and pytest-timeout's timeouts stay as the suite sets them)".into(),
        );
        return;
    }
    let what = "hypothesis runs without deadlines (a profile `leakgate` derived from the loaded one, and tests that set their own) and without its too_slow health check, pytest-timeout's timeouts are multiplied by it; LEAKGATE_KEEP_DEADLINES=1 keeps them";
    match std::env::var("LEAKGATE_TIMEOUT_FACTOR") {
        Ok(v) if !v.trim().is_empty() => {
            environment.push(format!("LEAKGATE_TIMEOUT_FACTOR={v} (yours, kept: {what})"))
        }
        _ => {
            let f = timeout_factor(engine);
            cmd.env("LEAKGATE_TIMEOUT_FACTOR", f.to_string());
            environment.push(format!(
                "LEAKGATE_TIMEOUT_FACTOR={f} (set by leakgate: tests run slower under {}: {what})",
                if engine == super::Engine::Valgrind {
                    "Valgrind".to_string()
                } else {
                    format!("--engine {}", engine.name())
                }
            ));
        }
    }
}

/// pytest-xdist: the command prefix the plugin puts before each worker's
/// Python (`LEAKGATE_XDIST_WORKERS`), for a controller that runs natively.
pub(super) fn set_xdist_workers(
    cmd: &mut Command,
    environment: &mut Vec<String>,
    valgrind: &Path,
    args: &[OsString],
) {
    let mut prefix = vec![valgrind.display().to_string()];
    prefix.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
    cmd.env("LEAKGATE_XDIST_WORKERS", crate::util::shell_join(&prefix));
    environment.push(
        "LEAKGATE_XDIST_WORKERS=valgrind … (set by leakgate: each pytest-xdist worker runs under Valgrind, the controller natively)".into(),
    );
}

/// The whole command line, as text for the report.
pub(super) fn command_text(
    valgrind: &Path,
    args: &[OsString],
    target_argv: &[String],
) -> Vec<String> {
    let mut v = vec![valgrind.display().to_string()];
    v.extend(args.iter().map(|a| a.to_string_lossy().into_owned()));
    v.extend(target_argv.iter().cloned());
    v
}

fn os_concat(prefix: &str, p: &Path) -> OsString {
    let mut s = OsString::from(prefix);
    s.push(p.as_os_str());
    s
}
