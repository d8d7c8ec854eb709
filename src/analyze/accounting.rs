//! The conservation law of every analysis: each record the parser read is
//! in exactly one finding or was suppressed. A mismatch is a bug in
//! leakgate, reported loudly (exit 5), never silently.

use super::aggregate::Analysis;
use crate::report::{Finding, Summary};

/// The conservation law of every analysis: the records the parser read all
/// reached the analysis (Σ `processes[].records` = `summary.records` +
/// `outside`, the records that are not records of the report: checkpoint
/// snapshots, hidden still-reachable noise; `summary.records` =
/// Σ `records_by_kind`), and each is in exactly one finding or was
/// suppressed (`summary.records` = Σ `findings[].records` +
/// `suppressed.records`). `None` when it holds; otherwise what is off —
/// a bug in leakgate, reported loudly (exit 5), never silently.
pub fn conservation_error(
    summary: &Summary,
    findings: &[Finding],
    parsed: u64,
    outside: u64,
) -> Option<String> {
    let mut off = Vec::new();
    if parsed != summary.records + outside {
        off.push(format!(
            "the XML held {parsed} records but {} were analysed ({outside} outside the report)",
            summary.records
        ));
    }
    let by_kind = summary.records_by_kind.values().sum::<u64>();
    if by_kind != summary.records {
        off.push(format!(
            "{} records read but {by_kind} counted by kind",
            summary.records
        ));
    }
    let in_findings = findings.iter().map(|f| f.records).sum::<u64>();
    let accounted = in_findings + summary.suppressed.records;
    if accounted != summary.records {
        off.push(format!(
            "{} records read but {accounted} accounted for ({in_findings} in findings + {} suppressed)",
            summary.records, summary.suppressed.records
        ));
    }
    (!off.is_empty()).then(|| format!("records are not conserved: {}", off.join("; ")))
}

/// [`conservation_error`] for a finished analysis.
pub fn check_conservation(a: &Analysis) -> Option<String> {
    // Cut records an exact re-run split into several: each part counts.
    let parsed = a.processes.iter().map(|p| p.records).sum::<u64>() + a.split_records;
    conservation_error(&a.summary, &a.findings, parsed, a.outside_records)
}
