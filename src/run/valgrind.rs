//! The Valgrind engine: Memcheck with `--leak-check=full`, one XML file per
//! process (`vg.%p.%n.xml`) in the private directory, children traced,
//! `PYTHONMALLOC=malloc` and the probe for Python targets, `-n N` as workers
//! forked from one pytest under Valgrind after collection, or pytest-xdist
//! workers under Valgrind with a native controller where they must be
//! xdist's (`-n auto` resolved from the tests, collected natively once,
//! which also stops at pytest's collection errors before Valgrind starts:
//! `workers`); and the version check
//! that refuses what this Valgrind cannot do before anything runs.

use std::path::Path;
use std::process::Command;

use super::config::{DEFAULT_SHOW_LEAK_KINDS, RunConfig, RunError, RunOutcome};
use super::target::{
    find_valgrind, is_python_target, is_xdist_target, resolve_target, valgrind_lib_for,
};
use super::{command, files, launch, target, workers};

/// Runs the target under Valgrind and waits for it.
pub(super) fn run(cfg: &RunConfig) -> Result<RunOutcome, RunError> {
    let valgrind = find_valgrind(cfg.valgrind.as_deref())?;
    let target = resolve_target(&cfg.cmd[0])?;
    if super::sanitizer::is_asan_elf(&target) {
        return Err(RunError::SanitizedTarget(target));
    }
    let mut target_argv = cfg.cmd.clone();
    let mut environment = Vec::new();
    super::unwrap_shim(cfg, &target, &mut target_argv, &mut environment);
    let (pytest, per_test) = super::per_test_mode(cfg)?;
    // pytest: one native collection first (its usage and collection
    // errors stop the run in seconds, and `-n auto` takes its count from
    // it), then `-n N` as workers forked from one pytest under Valgrind,
    // not pytest-xdist's, each of which would start under Valgrind.
    let opt_out = std::env::var_os("LEAKGATE_FORK_WORKERS").is_some_and(|v| v == "0");
    let check = cfg.only_tests.is_empty()
        && std::env::var_os("LEAKGATE_NATIVE_COLLECT").is_none_or(|v| v != "0");
    let shards = cfg.shard.map_or(1, |s| s.count);
    let plan = workers::plan(&target_argv, cfg.repeat, shards, per_test, check, opt_out)?;
    target_argv = plan.argv;
    environment.extend(plan.notes);
    let fork_workers = plan.workers;
    // The user's argv[0] with the arguments that run (`-n auto` resolved).
    let cmd_argv: Vec<String> = cfg.cmd[..1]
        .iter()
        .chain(&target_argv[1..])
        .cloned()
        .collect();
    // Only for an explicit --valgrind: the one on PATH is at its prefix.
    let valgrind_lib = cfg
        .valgrind
        .as_ref()
        .and_then(|_| valgrind_lib_for(&valgrind));
    let version = target::valgrind_version_with(&valgrind, valgrind_lib.as_deref());
    check_version(&valgrind, version.as_deref(), cfg)?;
    let dir = files::private_dir()?;
    let xml = files::xml_pattern(dir.path(), version.as_deref());
    // Checkpoints follow blocks that are still reachable at one snapshot
    // and lost at a later one, and report containers that grow while
    // reachable: Valgrind must show reachable blocks too.
    let added_reachable = per_test && cfg.show_leak_kinds.is_none();
    let show_leak_kinds = match &cfg.show_leak_kinds {
        Some(kinds) => kinds.as_str(),
        None if added_reachable => "all",
        None => DEFAULT_SHOW_LEAK_KINDS,
    };
    let args = command::valgrind_args(cfg, &xml, show_leak_kinds);
    // pytest-xdist: the controller runs no test; it runs natively and the
    // plugin starts each worker under Valgrind (a core and Valgrind's
    // start-up saved for the workers).
    let xdist = per_test && is_xdist_target(&cmd_argv);
    let mut cmd = if xdist {
        let mut c = Command::new(&target_argv[0]);
        c.args(&target_argv[1..]);
        command::set_xdist_workers(&mut c, &mut environment, &valgrind, &args);
        c
    } else {
        let mut c = Command::new(&valgrind);
        c.args(&args).args(&target_argv);
        c
    };
    if fork_workers >= 2 {
        cmd.env("LEAKGATE_FORK_WORKERS", fork_workers.to_string());
    }
    if let Some(lib) = &valgrind_lib {
        command::set_valgrind_lib(&mut cmd, &mut environment, lib, &valgrind);
    }
    if is_python_target(&cfg.cmd[0], &target) {
        command::set_python_malloc(&mut cmd, &mut environment);
    }
    // The probe goes into every Python target: its `sitecustomize` arms
    // the exit hook that shows leaks of objects the garbage collector
    // lists, and with checkpoints its pytest plugin takes them.
    let python = is_python_target(&cfg.cmd[0], &target);
    if per_test || python {
        let probe = crate::probe::write_probe(&dir.path().join("probe")).map_err(|e| {
            // A full disk or the file-size limit: name the directory and the way out.
            let room = matches!(
                e.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
            );
            RunError::TempDir(if room {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "{e}: the probe package could not be written into {}; point leakgate at a directory with room: TMPDIR=/path/with/room leakgate run …",
                        dir.path().display()
                    ),
                )
            } else {
                e
            })
        })?;
        command::set_probe(&mut cmd, &mut environment, &probe, pytest, per_test, cfg);
    }
    let valgrind_command = if xdist {
        // The controller runs natively; each worker under this command.
        command::command_text(
            &valgrind,
            &args,
            &["<each pytest-xdist worker>".to_string()],
        )
    } else {
        command::command_text(&valgrind, &args, &target_argv)
    };
    let launched = launch(cmd, &valgrind, dir.path(), cfg)?;
    let super::Launched {
        pid,
        exit,
        sup,
        seen,
        progress,
    } = launched;
    let xml_files = files::xml_files(dir.path());
    let log_text = super::log_text(&seen);
    // An extension built with -fsanitize=address, loaded by a Valgrind'ed
    // interpreter: its runtime stops the process before anything runs.
    if log_text.contains("ASan runtime does not come first") {
        return Err(RunError::AsanUnderValgrind);
    }
    let mut cuda_ipc: Vec<(u64, String, u64)> = seen
        .cuda_ipc
        .into_iter()
        .map(|(p, (l, n))| (p, l, n))
        .collect();
    cuda_ipc.sort();
    let running_tests = files::running_tests(dir.path());
    let durations = super::shard::read_durations(dir.path());
    Ok(RunOutcome {
        dir,
        reports: xml_files,
        engine: super::Engine::Valgrind,
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
        unhandled: seen.unhandled,
        log_shown: false,
        progress,
        per_test,
        added_reachable,
        running_tests,
        durations,
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
