//! Puts the report together: the analysis, the notes the run and the
//! suppressions add, the accounting check, and the gate's verdict.

use crate::analyze::attribute::UserSpec;
use crate::analyze::{self, Analysis};
use crate::gate::{self, Policy};
use crate::model::ExitStatus;
use crate::report::{Report, SCHEMA_VERSION, ToolInfo, ValgrindInfo};
use crate::suppress::Suppressor;

#[allow(clippy::too_many_arguments)]
pub(super) fn build_report(
    mode: &str,
    command: Vec<String>,
    environment: Vec<String>,
    target_exit: Option<ExitStatus>,
    valgrind_version: Option<String>,
    analysis: Analysis,
    spec: &UserSpec,
    policy: &Policy,
    problems: &[String],
    mut notes: Vec<String>,
    suppressor: &Suppressor,
    show_unused: bool,
) -> Report {
    let mut analysis = analysis;
    let analysis_per_test = analysis.per_test.take();
    if let Some(pt) = &analysis_per_test {
        notes.extend(pt.notes.iter().cloned());
        if let Some(fl) = pt.free_lists.as_deref().filter(|fl| *fl != "off") {
            notes.push(format!("CPython free lists stayed on: {fl}; a leaked tuple, list, dict or float may carry the allocation stack of the code that first allocated its block (docs/attribution.md: CPython free lists and refcount leaks)"));
        }
    }
    let free_lists_off = analysis_per_test
        .as_ref()
        .is_some_and(|pt| pt.free_lists.as_deref() == Some("off"));
    if !free_lists_off {
        notes.extend(crate::analyze::checkpoints::recycled_note(
            &analysis.findings,
        ));
    }
    analysis.summary.suppressed.loaded = suppressor.suppressions().len() as u64;
    if show_unused {
        analysis.summary.suppressed.unused = Some(
            suppressor
                .suppressions()
                .iter()
                .zip(&analysis.supp_used)
                .filter(|(_, n)| **n == 0)
                .map(|(s, _)| format!("{} ({}:{})", s.name, s.file, s.line))
                .collect(),
        );
    }
    for (name, n) in &analysis.supp_hid_user {
        notes.push(format!(
            "suppression {name:?} hid {n} leak or error record(s) that leakgate attributes to your code; if they are yours, narrow that rule (leakgate suppressions show, or your --suppressions file) or run with --no-bundled-suppressions to see them"
        ));
    }
    if analysis.summary.suppressed.undecidable > 0 {
        notes.push(format!(
            "{} record(s) may match a suppression but the XML cannot decide it (no <sframe> names, or frames hidden below main); they are kept",
            analysis.summary.suppressed.undecidable
        ));
    }
    // LEAKGATE_TEST_MISCOUNT (tests only) breaks the accounting on purpose,
    // to show that a mismatch is never silent.
    if std::env::var_os("LEAKGATE_TEST_MISCOUNT").is_some() {
        analysis.summary.records += 1;
    }
    let accounting = analyze::check_conservation(&analysis);
    let processes = analyze::processes_out(&analysis.processes);
    let protocol = analysis.processes.iter().filter_map(|p| p.protocol).max();
    // Sanitizer logs: the engine that wrote them (asan over lsan).
    let engine = analysis
        .processes
        .iter()
        .filter_map(|p| match p.tool.as_deref() {
            Some("asan") => Some(crate::run::Engine::Asan),
            Some("lsan") => Some(crate::run::Engine::Lsan),
            _ => None,
        })
        .max_by_key(|e| *e == crate::run::Engine::Asan)
        .map(|e| crate::report::EngineOut {
            name: e.name().to_string(),
            runtime: None,
            not_checked: super::unwind::not_checked(e),
            unwind: None,
        });
    for p in &analysis.processes {
        if let Some(v) = p.protocol
            && !(4..=6).contains(&v)
        {
            notes.push(format!(
                "{}: XML protocol {v} is not one leakgate knows (4-6); read as best it could",
                p.file
            ));
        }
        // `lsan` and `asan`: a sanitizer log (`parse::parse_sanitizer_log`).
        if let Some(t) = &p.tool
            && !matches!(t.as_str(), "memcheck" | "lsan" | "asan")
        {
            notes.push(format!(
                "{}: produced by the {t} tool, not memcheck",
                p.file
            ));
        }
    }
    let mut verdict = gate::verdict(
        policy,
        &analysis.findings,
        &processes,
        target_exit.as_ref(),
        problems,
    );
    if let Some(what) = &accounting {
        eprintln!(
            "leakgate: internal error: {what}; the report cannot be trusted (exit {}), please report this bug",
            crate::exit::INTERNAL
        );
        notes.push(format!("internal error: {what}"));
        gate::internal_error(&mut verdict, what);
    }
    Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "leakgate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        valgrind: ValgrindInfo {
            version: valgrind_version,
            protocol,
        },
        mode: mode.into(),
        command,
        environment,
        target_exit,
        target_running_test: None,
        processes,
        findings: analysis.findings,
        summary: analysis.summary,
        verdict,
        notes,
        src_roots: spec.roots.iter().map(|r| r.display().to_string()).collect(),
        valgrind_command: Vec::new(),
        policy: None,
        baseline: None,
        stopped: None,
        origins: None,
        engine,
        per_test: analysis_per_test,
        shard: None,
    }
}

/// Names the pytest test each process was in when it ended (`running`, by
/// pid: the probe's record of a test that started and never ended, a crash
/// inside it): on its process (`running_test`), on that process' crash
/// finding (its share "after the last checkpoint" becomes the test's),
/// and for the target (pid `target`) in the report and the verdict's
/// reason ("the target was killed by SIGABRT in test t.py::test_x").
pub(super) fn name_running_tests(
    report: &mut Report,
    running: &std::collections::BTreeMap<u64, String>,
    target: u64,
) {
    if running.is_empty() {
        return;
    }
    for p in &mut report.processes {
        p.running_test = p.pid.and_then(|pid| running.get(&pid)).cloned();
    }
    for f in &mut report.findings {
        if f.kind != crate::kind::Kind::FatalSignal {
            continue;
        }
        let Some(test) = f.pids.iter().find_map(|pid| running.get(pid)) else {
            continue;
        };
        for s in &mut f.tests {
            if s.kind == "exit" {
                s.test = test.clone();
                s.kind = "test".into();
            }
        }
    }
    let Some(test) = running.get(&target) else {
        return;
    };
    report.target_running_test = Some(test.clone());
    let ended = match &report.target_exit {
        Some(crate::model::ExitStatus::Signal(s)) => format!("the target was killed by {s}"),
        Some(crate::model::ExitStatus::Code(c)) => format!("the target exited with code {c}"),
        None => return,
    };
    for r in &mut report.verdict.reasons {
        if *r == ended {
            r.push_str(&format!(" in test {test}"));
        }
    }
}
