//! `leakgate run`: the target under Valgrind, then the analysis, the gate
//! and the outputs. Every output is checked before Valgrind starts.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};

use super::assemble::build_report;
use super::config::{load_suppressions, user_spec};
use super::outputs::Outputs;
use crate::analyze::{self, attribute::Attributor};
use crate::cli::{Origins, RunArgs};
use crate::model::ExitStatus;
use crate::run::{self, RunConfig};

/// `leakgate run [OPTIONS] -- CMD...`.
pub(super) fn run(a: RunArgs) -> Result<i32> {
    super::unwind::check_options(&a)?;
    let spec = user_spec(&a.report)?;
    let outputs = Outputs::prepare(
        &a.report,
        super::outputs::policy(&a.report, !a.ignore_target_exit),
    )?;
    let suppressor = load_suppressions(&a.report)?;
    let mut gen_supp = super::suppress_cmd::RunWriter::new(
        a.write_suppressions.as_deref(),
        &a.write_suppressions_kinds,
        &suppressor,
    )?;
    if let Some(dir) = &a.keep_xml {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--keep-xml {}: cannot create directory", dir.display()))?;
    }
    let per_test = if a.no_per_test {
        run::PerTest::Off
    } else if a.per_test {
        run::PerTest::On
    } else {
        run::PerTest::Auto
    };
    if a.repeat == 0 {
        bail!("--repeat 0: a test must run at least once");
    }
    let shard_durations = match &a.shard_durations {
        Some(p) => Some(run::ShardDurations {
            from: p.display().to_string(),
            seconds: super::report::read_report(p)
                .with_context(|| format!("--shard-durations {}", p.display()))?
                .per_test
                .map(|t| t.durations)
                .unwrap_or_default(),
        }),
        None => None,
    };
    let origins_mode = if a.no_track_origins || a.engine != crate::run::Engine::Valgrind {
        Origins::No
    } else {
        a.origins
    };
    let mut cfg = RunConfig {
        engine: a.engine,
        sanitizer_runtime: a.sanitizer_runtime.clone(),
        valgrind: a.valgrind.clone(),
        num_callers: a.num_callers,
        show_leak_kinds: a.show_leak_kinds.clone(),
        per_test,
        repeat: a.repeat,
        track_origins: origins_mode == Origins::Yes,
        track_fds: a.track_fds,
        extra_args: a.valgrind_args.clone(),
        cmd: a.cmd.clone(),
        trace_children: !a.no_trace_children,
        trace_children_skip: a.trace_children_skip.clone(),
        timeout: a.timeout,
        kill_after: a.kill_after,
        progress: if a.quiet {
            run::ProgressMode::Never
        } else if a.progress {
            run::ProgressMode::Always
        } else {
            run::ProgressMode::Auto
        },
        shard: a.shard,
        shard_durations,
        ..RunConfig::new(a.cmd.clone())
    };
    let mut out = run::run(&cfg)?;
    // Every test's seconds, from the run of them all (a re-run of some
    // tests times only those).
    let durations = out.durations.clone();
    let mut notes = Vec::new();
    // What the checkers found that only a full collection frees: those
    // that could not collect in their own copy make the target run again
    // with full collections; those that did get a note (the run whose
    // reports are analysed, unless a whole exact re-run below replaces it).
    let (young, mut copies) = if out.engine != crate::run::Engine::Valgrind && !cfg.full_collect {
        super::unwind::garbage_notes(&out.reports)
    } else {
        (None, None)
    };
    if let Some(g) = young {
        // A test's checkpoint collected only the young objects and its
        // checker found more that a full collection frees: what they hold
        // may have been lost in that test. Judged only on a run that
        // collects fully at every checkpoint, as the Valgrind engine does.
        let started = std::time::Instant::now();
        out.end_progress();
        drop(out);
        cfg.full_collect = true;
        out = run::run(&cfg)?;
        copies = None; // this run collects fully at every checkpoint
        notes.push(format!(
            "{g}: ran again with a full garbage collection at every checkpoint ({:.1}s); this report is that run's",
            started.elapsed().as_secs_f64()
        ));
    }
    let mut unwind = if cfg.slow_unwind { "exact" } else { "fast" }.to_string();
    let mut stacks = None;
    if out.engine != crate::run::Engine::Valgrind && !cfg.slow_unwind {
        // Leaks whose fast-unwound stacks were cut short with none of the
        // user's frames left: judged only after an exact re-run.
        let (obs, seen) = super::unwind::cut_observer(cfg.num_callers as usize);
        analyze::analyze_files_with(
            &out.reports,
            Attributor::new(spec.clone()),
            suppressor.clone(),
            &HashMap::new(),
            Some(obs),
            analyze::Options::default(),
        )?;
        let cut = seen.lock().expect("cut observer").clone();
        if cut.count > 0 || !cut.skipped.is_empty() {
            let e =
                super::unwind::rerun_exact(&cfg, out, &cut, &mut Attributor::new(spec.clone()))?;
            out = e.out;
            if e.unwind == "exact" {
                copies = None;
            }
            stacks = e.stacks;
            unwind = e.unwind;
            notes.extend(e.note);
        }
    }
    notes.extend(copies);
    let runtime_exit = super::unwind::runtime_exit(&out);
    notes.extend(runtime_exit.clone());
    if let Some(g) = &mut gen_supp {
        g.set_target(out.valgrind_version.as_deref());
    }
    out.analysing();
    if let Some(dir) = &a.keep_xml {
        for f in &out.reports {
            let dest = dir.join(f.file_name().unwrap_or_default());
            std::fs::copy(f, &dest)
                .with_context(|| format!("cannot copy {} to {}", f.display(), dest.display()))?;
        }
        let what = if out.engine == crate::run::Engine::Valgrind {
            "raw XML"
        } else {
            "the runtime's logs"
        };
        notes.push(format!("{what} kept in {}", dir.display()));
    }
    if let Some(v) = out
        .valgrind_version
        .as_deref()
        .and_then(crate::versions::VgVersion::parse)
        .filter(|v| !crate::versions::is_tested(*v))
    {
        notes.push(format!(
            "Valgrind {v} is not a version leakgate is tested with ({}); its XML is read the same way, report anything that looks wrong",
            crate::versions::tested_list()
        ));
    }
    if out.added_reachable {
        notes.push(
            "per-test checkpoints: Valgrind ran with --show-leak-kinds=all to follow blocks that are reachable at one checkpoint and lost at a later one; still-reachable noise of the final leak check is left out".into(),
        );
    }
    let mut problems = Vec::new();
    let mut exits: HashMap<u64, ExitStatus> = out.exits.clone();
    exits.insert(u64::from(out.pid), out.exit.clone());
    // A full disk or the file-size limit: named, its empty files missing.
    if out.engine == crate::run::Engine::Valgrind
        && let Some((why, empty)) =
            run::space_problem(out.dir.path(), &out.reports, &out.log, &exits)
    {
        out.reports.retain(|p| !empty.contains(p));
        problems.push(why);
    } else if out.reports.is_empty() && out.engine == crate::run::Engine::Valgrind {
        problems
            .push("Valgrind wrote no XML report (it failed to start or was killed)".to_string());
    }
    let options = analyze::Options {
        hide_noise_reachable: out.added_reachable,
        origins: None,
        stacks,
    };
    let xml_files = out.reports.clone();
    let analyse = |observer, options| {
        analyze::analyze_files_with(
            &xml_files,
            Attributor::new(spec.clone()),
            suppressor.clone(),
            &exits,
            observer,
            options,
        )
    };
    let observer = gen_supp.as_mut().map(|g| g.observer());
    let mut origins_out = None;
    let mut analysis = if origins_mode == Origins::Auto {
        out.end_progress();
        let (analysis, o) = super::origins::analyse_auto(
            &cfg,
            || Attributor::new(spec.clone()),
            &suppressor,
            observer,
            options,
            &analyse,
        )?;
        notes.extend(super::origins::note(&o));
        origins_out = Some(o);
        analysis
    } else {
        analyse(observer, options)?
    };
    if let Some(g) = gen_supp {
        g.write()?;
    }
    // A sanitizer writes a log only when it has something to say: the
    // processes it ran in silently are clean ones, counted all the same.
    super::unwind::silent_processes(&mut analysis.processes, &out, &a.cmd);
    // The runtime's own crash report, then its exit code: the target was
    // killed by that signal, whatever code the runtime ended it with.
    let crash = super::unwind::runtime_crash(&analysis.processes, &out);
    let mut target_exit = out.exit.clone();
    if let Some((sig, note)) = crash {
        notes.retain(|n| Some(n) != runtime_exit.as_ref());
        notes.push(note);
        target_exit = ExitStatus::Signal(sig);
    }
    let unhandled = crate::analyze::unhandled::apply(
        &mut analysis.findings,
        &mut analysis.processes,
        &out.unhandled,
        &mut notes,
    );
    crate::analyze::processes::after_run(
        &mut analysis.findings,
        &mut analysis.summary,
        &crate::analyze::processes::RunFacts {
            stopped: out.stopped.as_ref(),
            stopped_children: out.stopped_children.as_deref(),
            cuda_ipc: &out.cuda_ipc,
        },
        &mut problems,
        &mut notes,
    );
    // An unhandled instruction is said in its process' reason: Valgrind's
    // log would only repeat it.
    let valgrind_failed = !problems.is_empty()
        || analysis
            .processes
            .iter()
            .any(|p| !p.complete && !p.pid.is_some_and(|pid| unhandled.contains(&pid)));
    if valgrind_failed && !out.log.trim().is_empty() {
        if !out.log_shown {
            eprintln!(
                "leakgate: Valgrind's log ({}):",
                out.valgrind_path.display()
            );
            for line in out.log.lines() {
                eprintln!("  {line}");
            }
        }
        notes.push(format!("Valgrind's log: {}", summarize_log(&out.log)));
    }
    let mut policy = outputs.policy().clone();
    if runtime_exit.is_some() && !matches!(target_exit, ExitStatus::Signal(_)) {
        // The runtime's code after its own report, not the target's.
        policy.fail_on_target_exit = false;
    }
    let baseline = outputs.classify(&mut analysis.findings);
    let mut report = build_report(
        "run",
        a.cmd.clone(),
        out.environment.clone(),
        Some(target_exit),
        out.valgrind_version.clone(),
        analysis,
        &spec,
        &policy,
        &problems,
        notes,
        &suppressor,
        a.report.show_unused_suppressions,
    );
    report.valgrind_command = out.valgrind_command.clone();
    super::assemble::name_running_tests(&mut report, &out.running_tests, u64::from(out.pid));
    report.stopped = out.stopped.clone();
    report.origins = origins_out;
    report.engine = super::unwind::engine_out(&out, &unwind);
    if let Some(pt) = report.per_test.as_mut() {
        pt.durations = durations;
    }
    report.shard = cfg.shard.map(|s| crate::report::ShardOut {
        index: s.index,
        count: s.count,
        durations_from: cfg
            .shard_durations
            .as_ref()
            .filter(|d| !d.seconds.is_empty())
            .map(|d| d.from.clone()),
    });
    outputs.finish(&mut report, baseline, &problems);
    if let Some(p) = report.policy.as_mut() {
        // As decided: a sanitizer runtime's exit code is not the target's
        // (what `leakgate merge` of this report must know too).
        p.fail_on_target_exit = policy.fail_on_target_exit;
    }
    out.end_progress();
    outputs.write(&report, &a.report);
    drop(out);
    Ok(report.verdict.exit_code)
}

/// The last few meaningful lines of Valgrind's log, on one line.
fn summarize_log(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(|l| {
            l.trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" | ")
}
