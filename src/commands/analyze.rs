//! `leakgate analyze`: Valgrind XML produced elsewhere, through the same
//! analysis, gate and outputs as `run`.

use std::collections::HashMap;

use anyhow::Result;

use super::assemble::build_report;
use super::config::{load_suppressions, user_spec};
use super::outputs::Outputs;
use crate::analyze::{self, attribute::Attributor};
use crate::cli::AnalyzeArgs;

/// `leakgate analyze PATH...`.
pub(super) fn analyze(a: AnalyzeArgs) -> Result<i32> {
    let spec = user_spec(&a.report)?;
    let outputs = Outputs::prepare(&a.report, super::outputs::policy(&a.report, true))?;
    let suppressor = load_suppressions(&a.report)?;
    let files = analyze::collect_inputs(&a.paths)?;
    let analysis = analyze::analyze_files(
        &files,
        Attributor::new(spec.clone()),
        suppressor.clone(),
        &HashMap::new(),
    )?;
    let version = analysis
        .processes
        .iter()
        .find_map(|p| p.valgrind_version.clone());
    let command = a.paths.iter().map(|p| p.display().to_string()).collect();
    let mut analysis = analysis;
    analyze::unhandled::advise_sigill(&mut analysis.findings);
    let baseline = outputs.classify(&mut analysis.findings);
    let mut report = build_report(
        "analyze",
        command,
        Vec::new(),
        None,
        version,
        analysis,
        &spec,
        outputs.policy(),
        &[],
        Vec::new(),
        &suppressor,
        a.report.show_unused_suppressions,
    );
    outputs.finish(&mut report, baseline, &[]);
    outputs.write(&report, &a.report);
    Ok(report.verdict.exit_code)
}
