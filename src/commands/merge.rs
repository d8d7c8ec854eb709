//! `leakgate merge REPORT.json...`: the saved JSON reports of shards (CI
//! jobs that each ran part of a suite) folded into one report
//! (`analyze::merge`), decided again by this command's policy and baseline,
//! and written in every format asked for, as `analyze` writes its own.

use anyhow::{Result, bail};

use super::outputs::Outputs;
use super::report::read_report;
use crate::cli::MergeArgs;
use crate::gate;
use crate::report::Status;

/// `leakgate merge`.
pub(super) fn merge(a: MergeArgs) -> Result<i32> {
    if !a.report.suppressions.is_empty() || !a.report.src_roots.is_empty() {
        bail!(
            "merge: --suppressions and --src-root do not apply to saved reports (each shard applied its own when it ran)"
        );
    }
    let outputs = Outputs::prepare(&a.report, super::outputs::policy(&a.report, true))?;
    let mut shards = Vec::with_capacity(a.reports.len());
    // A shard whose own run was incomplete for a reason outside its XML
    // (no XML written, Valgrind failed) keeps the merge incomplete.
    let mut problems = Vec::new();
    for p in &a.reports {
        let r = read_report(p)?;
        if r.verdict.status == Status::Incomplete {
            for reason in &r.verdict.reasons {
                problems.push(format!("{}: {reason}", p.display()));
            }
        }
        shards.push(r);
    }
    problems.extend(crate::analyze::merge::shard_problems(&shards));
    // A shard whose own verdict did not count its target's exit (a
    // sanitizer runtime's exit code, --ignore-target-exit): nor does the merge.
    let mut policy = outputs.policy().clone();
    policy.fail_on_target_exit &= shards
        .iter()
        .all(|r| r.policy.as_ref().is_none_or(|p| p.fail_on_target_exit));
    let mut report = crate::analyze::merge::merge(shards);
    let baseline = outputs.classify(&mut report.findings);
    report.verdict = gate::verdict(
        &policy,
        &report.findings,
        &report.processes,
        report.target_exit.as_ref(),
        &problems,
    );
    outputs.finish(&mut report, baseline, &problems);
    if let Some(p) = report.policy.as_mut() {
        p.fail_on_target_exit = policy.fail_on_target_exit;
    }
    let mut seen = std::collections::HashSet::new();
    report.notes.retain(|n| seen.insert(n.clone()));
    outputs.write(&report, &a.report);
    Ok(report.verdict.exit_code)
}
