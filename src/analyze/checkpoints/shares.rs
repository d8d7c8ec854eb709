//! One finding's share of each checkpoint: its `tests` (bytes and blocks,
//! per repetition, or the memory errors that first occurred there) and its
//! `growth` (`per_call`, `one_time`, `unknown`).

use std::collections::BTreeMap;

use super::{Ckpt, EXIT, Timeline};
use crate::report::{BytesBlocks, Finding, Growth, TestShare};

/// A memory error's `tests`: the checkpoints after its first occurrences.
pub(super) fn errors_of(f: &mut Finding, errs: Option<&BTreeMap<Ckpt, u64>>, tl: &Timeline) {
    let Some(per) = errs else { return };
    let mut cks: Vec<(&Ckpt, &u64)> = per.iter().collect();
    cks.sort_by_key(|(c, _)| tl.rank.get(c).copied().unwrap_or(usize::MAX));
    for (c, n) in cks {
        let (kind, label) = match tl.markers.get(c) {
            Some(m) => (m.kind.clone(), m.label.clone()),
            None => (
                "exit".to_string(),
                "(after the last checkpoint)".to_string(),
            ),
        };
        match f
            .tests
            .iter_mut()
            .find(|t| t.test == label && t.kind == kind)
        {
            Some(t) => t.errors = t.errors.saturating_add(*n),
            None => f.tests.push(TestShare {
                test: label,
                kind,
                bytes: 0,
                blocks: 0,
                repetitions: Vec::new(),
                growth: None,
                errors: *n,
            }),
        }
    }
}

/// A leak's `tests`, `growth` and `per_call` from its shares of the
/// checkpoints.
pub(super) fn leak_of(f: &mut Finding, shares: Option<&BTreeMap<Ckpt, (i64, i64)>>, tl: &Timeline) {
    let empty = BTreeMap::new();
    let per = shares.unwrap_or(&empty);
    let mut cks: Vec<(&Ckpt, &(i64, i64))> =
        per.iter().filter(|(_, v)| v.0 > 0 || v.1 > 0).collect();
    if cks.is_empty() && (!f.is_leak() || !f.pids.iter().any(|p| tl.marked_pids.contains(p))) {
        return;
    }
    cks.sort_by_key(|(c, _)| tl.rank.get(c).copied().unwrap_or(usize::MAX));
    let mut tests: Vec<TestShare> = Vec::new();
    let mut total = (0u64, 0u64);
    for (c, v) in &cks {
        let (kind, label, rep, of) = match tl.markers.get(c) {
            Some(m) => (m.kind.clone(), m.label.clone(), m.rep, m.of),
            None if c.1 == EXIT => (
                "exit".to_string(),
                "(after the last checkpoint)".to_string(),
                None,
                None,
            ),
            None => (
                "unmarked".to_string(),
                "(leak check without a leakgate marker)".to_string(),
                None,
                None,
            ),
        };
        let (b, n) = (v.0.max(0) as u64, v.1.max(0) as u64);
        total.0 = total.0.saturating_add(b);
        total.1 = total.1.saturating_add(n);
        // Bytes grown at exit without a new block (a lost block's indirect
        // part grew): the final size of blocks an earlier test lost.
        if kind == "exit"
            && n == 0
            && let Some(t) = tests.iter_mut().rev().find(|t| t.blocks > 0)
        {
            t.bytes = t.bytes.saturating_add(b);
            continue;
        }
        let t = match tests
            .iter_mut()
            .position(|t| t.test == label && t.kind == kind)
        {
            Some(i) => &mut tests[i],
            None => {
                let reps = if kind == "test" {
                    tl.reps_run.get(label.as_str()).copied().unwrap_or(1)
                } else {
                    0
                };
                tests.push(TestShare {
                    test: label.clone(),
                    kind: kind.clone(),
                    bytes: 0,
                    blocks: 0,
                    repetitions: if reps > 1 || of.unwrap_or(1) > 1 {
                        vec![BytesBlocks::default(); reps as usize]
                    } else {
                        Vec::new()
                    },
                    growth: None,
                    errors: 0,
                });
                tests.last_mut().expect("just pushed")
            }
        };
        t.bytes = t.bytes.saturating_add(b);
        t.blocks = t.blocks.saturating_add(n);
        if let Some(r) = rep
            && let Some(slot) = t.repetitions.get_mut(r.saturating_sub(1) as usize)
        {
            slot.bytes = slot.bytes.saturating_add(b);
            slot.blocks = slot.blocks.saturating_add(n);
        }
    }
    // What the final check has beyond the snapshots, at allocation
    // sites no snapshot saw: allocated before the first checkpoint (a
    // `start` baseline lists nothing) or after the last one.
    let fb = f.bytes.unwrap_or(0);
    let fk = f.blocks.unwrap_or(0);
    if f.is_leak() && (fb > total.0 || fk > total.1) {
        let with_blocks = tests.iter().rposition(|t| t.blocks > 0);
        if fk <= total.1
            && let Some(i) = with_blocks
        {
            // Only bytes, no block: what the blocks the tests lost grew to.
            tests[i].bytes = tests[i].bytes.saturating_add(fb - total.0);
        } else if let Some(t) = tests.iter_mut().find(|t| t.kind == "outside") {
            t.bytes = t.bytes.saturating_add(fb.saturating_sub(total.0));
            t.blocks = t.blocks.saturating_add(fk.saturating_sub(total.1));
        } else {
            tests.push(TestShare {
                test: "(before the first or after the last checkpoint)".into(),
                kind: "outside".into(),
                bytes: fb.saturating_sub(total.0),
                blocks: fk.saturating_sub(total.1),
                repetitions: Vec::new(),
                growth: None,
                errors: 0,
            });
        }
    }
    let mut per_call: Option<BytesBlocks> = None;
    let mut any_unknown = false;
    let mut any_one_time = false;
    for t in &mut tests {
        if t.kind == "checkpoint" {
            continue; // below: plain checkpoints are one sequence of calls
        }
        let g = test_growth(t).unwrap_or(Growth::Unknown);
        if g == Growth::PerCall && per_call.is_none() {
            per_call = t.repetitions.last().cloned();
        }
        match g {
            Growth::OneTime => any_one_time = true,
            Growth::Unknown => any_unknown = true,
            Growth::PerCall => {}
        }
        t.growth = Some(g);
    }
    // Plain checkpoints (a service's requests): one sequence of calls.
    let grew: Vec<bool> = tl
        .user_ckpts
        .iter()
        .map(|c| per.get(c).is_some_and(|v| v.0 > 0 || v.1 > 0))
        .collect();
    if let Some(first) = grew.iter().position(|g| *g) {
        let after = &grew[first..];
        let g = if after.len() >= 2 && after.iter().all(|g| *g) {
            let last = tl.user_ckpts[first + after.len() - 1];
            let v = per[&last];
            if per_call.is_none() {
                per_call = Some(BytesBlocks {
                    bytes: v.0.max(0) as u64,
                    blocks: v.1.max(0) as u64,
                });
            }
            Growth::PerCall
        } else if after.len() >= 2 && after[1..].iter().all(|g| !*g) {
            Growth::OneTime
        } else {
            Growth::Unknown
        };
        for t in tests.iter_mut().filter(|t| t.kind == "checkpoint") {
            t.growth = Some(g);
        }
        match g {
            Growth::OneTime => any_one_time = true,
            Growth::Unknown => any_unknown = true,
            Growth::PerCall => {}
        }
    }
    let growth = if per_call.is_some() {
        Growth::PerCall
    } else if any_one_time && !any_unknown {
        Growth::OneTime
    } else {
        Growth::Unknown
    };
    f.growth = Some(growth);
    f.per_call = per_call;
    f.tests = tests;
}

/// One share's own growth, from its repetitions: for a test run more than
/// once, `per_call` when every repetition grew, `one_time` when only the
/// first did, else `unknown`. `None` where the share alone cannot tell (one
/// run, plain checkpoints), and for the shares outside the tests (`start`,
/// `finish`, `exit`, `outside`): they ran once, so nothing was measured
/// (a leak found only at exit is not "one-time", its growth is unknown).
pub fn test_growth(t: &TestShare) -> Option<Growth> {
    let grew = |x: &BytesBlocks| x.bytes > 0 || x.blocks > 0;
    match t.kind.as_str() {
        "test" if t.repetitions.len() > 1 => {
            let r = &t.repetitions;
            Some(if r.iter().all(grew) {
                Growth::PerCall
            } else if grew(&r[0]) && !r[1..].iter().any(grew) {
                Growth::OneTime
            } else {
                Growth::Unknown
            })
        }
        _ => None,
    }
}
