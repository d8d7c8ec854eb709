//! Shards folded into one report (`leakgate merge`): the saved JSON reports
//! of `leakgate run` on parts of a suite (CI jobs of a matrix) become the
//! report of the whole, as the aggregator folds records into findings.
//!
//! Findings are the same finding when kind, category, fingerprint and line
//! agree; their bytes, blocks, counts and records add up, their pids and
//! processes join, and their per-test shares join by test (a test that ran
//! in two shards, or the `start`/`finish`/`outside` shares every shard has,
//! add up), with the growth derived again as the tracker derives it. The
//! per-test section lists the shards' tests in shard order. The summary's
//! record counts add up and its user and noise parts are computed again.
//! The gate is not merged: the caller decides the merged report again.
//! Reports of `run --shard K/N` are folded in the order of K (each holds a
//! contiguous part of the collected session, so the merged tests come in
//! the unsharded run's order, whatever order the files were given in);
//! [`shard_problems`] says which of the N are missing or given twice.

use std::collections::HashMap;

use super::checkpoints::test_growth;
use super::summary::summarize;
use crate::report::{BytesBlocks, Finding, Growth, PerTestOut, Report};

/// Folds `shards` (at least one) into one report; the verdict, policy and
/// baseline are left to the caller.
pub fn merge(mut shards: Vec<Report>) -> Report {
    // Stable: reports without a shard keep their order, first.
    shards.sort_by_key(|r| r.shard.as_ref().map_or(0, |s| s.index));
    let mut out = shards.remove(0);
    out.shard = None;
    out.mode = "merge".into();
    for s in shards {
        fold(&mut out, s);
    }
    for f in &mut out.findings {
        f.gated = None;
        f.fails = false;
        f.baseline = None;
        if !f.tests.is_empty() {
            regrow(f);
        }
    }
    summarize(&mut out.summary, &out.findings);
    super::aggregate::sort_findings(&mut out.findings);
    out.policy = None;
    out.baseline = None;
    out
}

/// What keeps a merge of `run --shard K/N` reports from being the whole
/// suite's: shards of different splits, a shard missing, one given twice.
pub fn shard_problems(shards: &[Report]) -> Vec<String> {
    let parts: Vec<_> = shards.iter().filter_map(|r| r.shard.as_ref()).collect();
    let Some(first) = parts.first() else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    if parts.len() < shards.len() {
        problems.push(format!(
            "{} of the {} reports are of --shard runs and {} not: the merge may count some tests twice",
            parts.len(),
            shards.len(),
            shards.len() - parts.len()
        ));
    }
    if parts.iter().any(|p| p.count != first.count) {
        let mut counts: Vec<u32> = parts.iter().map(|p| p.count).collect();
        counts.sort_unstable();
        counts.dedup();
        problems.push(format!(
            "the reports are shards of different splits (of {}): the merge is not one suite's",
            counts
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return problems;
    }
    let n = first.count;
    for k in 1..=n {
        match parts.iter().filter(|p| p.index == k).count() {
            0 => problems.push(format!(
                "shard {k}/{n} is missing: its tests are not in the merge"
            )),
            1 => {}
            c => problems.push(format!(
                "shard {k}/{n} is given {c} times: its findings count {c} times"
            )),
        }
    }
    problems
}

fn fold(out: &mut Report, s: Report) {
    out.command.push("+".into());
    out.command.extend(s.command);
    for e in s.environment {
        if !out.environment.contains(&e) {
            out.environment.push(e);
        }
    }
    if out
        .target_exit
        .as_ref()
        .is_none_or(|e| *e == crate::model::ExitStatus::Code(0))
        && s.target_exit.is_some()
    {
        out.target_exit = s.target_exit;
    }
    out.processes.extend(s.processes);
    for n in s.notes {
        if !out.notes.contains(&n) {
            out.notes.push(n);
        }
    }
    for r in s.src_roots {
        if !out.src_roots.contains(&r) {
            out.src_roots.push(r);
        }
    }
    if out.stopped.is_none() {
        out.stopped = s.stopped;
    }
    // Findings.
    let key = |f: &Finding| {
        (
            f.kind.clone(),
            f.category,
            f.fingerprint.clone(),
            f.location.as_ref().and_then(|l| l.line),
        )
    };
    let mut index: HashMap<_, usize> = out
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| (key(f), i))
        .collect();
    for f in s.findings {
        match index.get(&key(&f)) {
            Some(&i) => add_finding(&mut out.findings[i], f),
            None => {
                index.insert(key(&f), out.findings.len());
                out.findings.push(f);
            }
        }
    }
    // Summary record counts (user and noise are computed from the findings).
    let (a, b) = (&mut out.summary, s.summary);
    a.records = a.records.saturating_add(b.records);
    for (k, n) in b.records_by_kind {
        *a.records_by_kind.entry(k).or_default() += n;
    }
    let (sa, sb) = (&mut a.suppressed, b.suppressed);
    sa.records = sa.records.saturating_add(sb.records);
    sa.undecidable = sa.undecidable.saturating_add(sb.undecidable);
    sa.loaded = sa.loaded.max(sb.loaded);
    for (k, n) in sb.by_suppression {
        *sa.by_suppression.entry(k).or_default() += n;
    }
    for (k, n) in sb.undecidable_by_suppression {
        *sa.undecidable_by_suppression.entry(k).or_default() += n;
    }
    if let (Some(ua), Some(ub)) = (&mut sa.unused, sb.unused) {
        // Unused in the merge: unused in every shard.
        ua.retain(|x| ub.contains(x));
    }
    out.per_test = match (out.per_test.take(), s.per_test) {
        (Some(a), Some(b)) => Some(merge_per_test(a, b)),
        (a, b) => a.or(b),
    };
}

fn add(a: &mut Option<u64>, b: Option<u64>) {
    if let Some(b) = b {
        *a = Some(a.unwrap_or(0).saturating_add(b));
    }
}

fn add_finding(a: &mut Finding, b: Finding) {
    add(&mut a.bytes, b.bytes);
    add(&mut a.direct_bytes, b.direct_bytes);
    add(&mut a.blocks, b.blocks);
    a.count = a.count.saturating_add(b.count);
    a.records = a.records.saturating_add(b.records);
    for p in b.pids {
        if !a.pids.contains(&p) {
            a.pids.push(p);
        }
    }
    a.processes.extend(b.processes);
    a.inherited_by.extend(b.inherited_by);
    if a.origin.is_none() {
        a.origin = b.origin;
    }
    for t in b.tests {
        match a
            .tests
            .iter_mut()
            .find(|x| x.test == t.test && x.kind == t.kind)
        {
            Some(x) => {
                x.bytes = x.bytes.saturating_add(t.bytes);
                x.blocks = x.blocks.saturating_add(t.blocks);
                x.errors = x.errors.saturating_add(t.errors);
                if x.repetitions.len() < t.repetitions.len() {
                    x.repetitions
                        .resize(t.repetitions.len(), BytesBlocks::default());
                }
                for (r, s) in x.repetitions.iter_mut().zip(&t.repetitions) {
                    r.bytes = r.bytes.saturating_add(s.bytes);
                    r.blocks = r.blocks.saturating_add(s.blocks);
                }
                x.growth = test_growth(x).or(x.growth);
            }
            None => a.tests.push(t),
        }
    }
}

/// The finding's growth from its tests' (as the tracker decides it).
fn regrow(f: &mut Finding) {
    let mut per_call = None;
    let (mut one_time, mut unknown) = (false, false);
    for t in &f.tests {
        // Shares outside the tests ran once: saved reports from before
        // called them one-time, which nothing measured.
        let outside = matches!(t.kind.as_str(), "start" | "finish" | "exit" | "outside");
        match t.growth.filter(|_| !outside) {
            Some(Growth::PerCall) => {
                if per_call.is_none() {
                    per_call = match t.kind.as_str() {
                        "test" => t.repetitions.last().cloned(),
                        _ => f.per_call.clone(),
                    };
                }
            }
            Some(Growth::OneTime) => one_time = true,
            Some(Growth::Unknown) | None => unknown = true,
        }
    }
    f.growth = Some(if per_call.is_some() {
        Growth::PerCall
    } else if one_time && !unknown {
        Growth::OneTime
    } else {
        Growth::Unknown
    });
    f.per_call = per_call;
}

fn merge_per_test(mut a: PerTestOut, b: PerTestOut) -> PerTestOut {
    a.checkpoints = a.checkpoints.saturating_add(b.checkpoints);
    a.snapshot_records = a.snapshot_records.saturating_add(b.snapshot_records);
    a.hidden_reachable = a.hidden_reachable.saturating_add(b.hidden_reachable);
    a.repeat = a.repeat.max(b.repeat);
    for t in b.tests {
        if !a.tests.contains(&t) {
            a.tests.push(t);
        }
    }
    if a.free_lists.as_deref().is_none_or(|f| f == "off") && b.free_lists.is_some() {
        a.free_lists = b.free_lists;
    }
    for n in b.notes {
        if !a.notes.contains(&n) {
            a.notes.push(n);
        }
    }
    for (t, s) in b.durations {
        *a.durations.entry(t).or_insert(0.0) += s;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(tests: serde_json::Value) -> Finding {
        serde_json::from_value(serde_json::json!({
            "fingerprint": "f", "kind": "Leak_DefinitelyLost", "category": "user",
            "source": null, "message": "", "bytes": 48, "direct_bytes": 48,
            "blocks": 1, "count": 1, "location": null, "source_line": null,
            "stack": [], "origin": null, "pids": [7], "records": 1, "aux": [],
            "tests": tests
        }))
        .unwrap()
    }

    fn shard(k: Option<u32>, n: u32, test: &str) -> Report {
        let mut r = crate::render::test_report(&["pytest"], serde_json::json!([]), Vec::new());
        r.shard = k.map(|index| crate::report::ShardOut {
            index,
            count: n,
            durations_from: None,
        });
        r.per_test = Some(PerTestOut {
            tests: vec![test.into()],
            ..Default::default()
        });
        r
    }

    #[test]
    fn shards_fold_in_their_order_and_gaps_are_said() {
        let all = vec![
            shard(Some(3), 3, "t::c"),
            shard(Some(1), 3, "t::a"),
            shard(Some(2), 3, "t::b"),
        ];
        assert!(shard_problems(&all).is_empty());
        let m = merge(all);
        assert_eq!(m.per_test.unwrap().tests, ["t::a", "t::b", "t::c"]);
        assert!(m.shard.is_none());
        let gaps = shard_problems(&[shard(Some(1), 3, "a"), shard(Some(1), 3, "a")]);
        assert_eq!(
            gaps,
            [
                "shard 1/3 is given 2 times: its findings count 2 times",
                "shard 2/3 is missing: its tests are not in the merge",
                "shard 3/3 is missing: its tests are not in the merge",
            ]
        );
        let mixed = shard_problems(&[shard(Some(1), 2, "a"), shard(Some(2), 3, "b")]);
        assert_eq!(mixed.len(), 1, "{mixed:?}");
        assert!(mixed[0].contains("different splits (of 2, 3)"), "{mixed:?}");
        assert!(shard_problems(&[shard(None, 1, "a"), shard(None, 1, "b")]).is_empty());
    }

    #[test]
    fn shares_join_by_test_and_growth_is_derived_again() {
        let rep = |b: u64| serde_json::json!({"bytes": b, "blocks": 1});
        // Shard 1: test a grew at both repetitions; the outside share.
        let mut a = finding(serde_json::json!([
            {"test": "t::a", "kind": "test", "bytes": 96, "blocks": 2,
             "repetitions": [rep(48), rep(48)], "growth": "per_call"},
            {"test": "(outside)", "kind": "outside", "bytes": 8, "blocks": 1, "growth": "one_time"}
        ]));
        // Shard 2: test b grew once; the same outside share.
        let b = finding(serde_json::json!([
            {"test": "t::b", "kind": "test", "bytes": 48, "blocks": 1,
             "repetitions": [rep(48), {"bytes": 0, "blocks": 0}], "growth": "one_time"},
            {"test": "(outside)", "kind": "outside", "bytes": 8, "blocks": 1, "growth": "one_time"}
        ]));
        add_finding(&mut a, b);
        regrow(&mut a);
        assert_eq!(a.bytes, Some(96));
        assert_eq!(a.count, 2);
        let shares: Vec<(&str, u64)> = a.tests.iter().map(|t| (t.test.as_str(), t.bytes)).collect();
        assert_eq!(shares, [("t::a", 96), ("(outside)", 16), ("t::b", 48)]);
        assert_eq!(a.growth, Some(Growth::PerCall));
        assert_eq!(a.per_call.as_ref().map(|p| p.bytes), Some(48));
    }
}
