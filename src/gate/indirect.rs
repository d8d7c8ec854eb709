//! Indirectly lost blocks under the definite leak that owns them.
//!
//! Valgrind reports a definitely lost block with the blocks only it
//! pointed to folded into its total (`48 (16 direct, 32 indirect) bytes`),
//! and each of those blocks again as a `Leak_IndirectlyLost` record of its
//! own, without saying whose they are. Freeing the definite block's
//! structure frees them, so they are one thing to fix, not two: a user
//! indirect finding whose bytes a gated user definite leak of the same
//! process holds in its indirect part is marked `indirect_of` that leak,
//! not gated (the leak counts those bytes already) and listed in the
//! leak's `indirect_parts`. The link is inferred: in each process (each XML
//! part), the owners' indirect bytes are a budget that an indirect finding
//! must fit in whole, owners sharing its location's function or more of its
//! user frames tried first. An indirect leak that no gated definite leak has
//! room for (its owner is noise, known from the baseline, not in
//! `--fail-on`, or suppressed) keeps its own gate mark.

use std::collections::BTreeMap;

use crate::kind::Kind;
use crate::report::{Finding, IndirectPart};

/// A process part of a finding: its pid and XML part (a pid that exec'd
/// has one heap per program).
type Part = (u64, Option<String>);

/// A finding's bytes per process part, by `per` (for the whole finding
/// when it has no per-process shares).
fn per_part(f: &Finding, per: impl Fn(Option<u64>, Option<u64>) -> u64) -> BTreeMap<Part, u64> {
    let mut out: BTreeMap<Part, u64> = BTreeMap::new();
    if f.processes.is_empty() {
        let pid = f.pids.first().copied().unwrap_or(0);
        out.insert((pid, None), per(f.bytes, f.direct_bytes));
    }
    for p in &f.processes {
        let e = out.entry((p.pid, p.xml.clone())).or_default();
        *e = e.saturating_add(per(p.bytes, p.direct_bytes));
    }
    out
}

/// The indirect part of a leak's bytes.
fn indirect(bytes: Option<u64>, direct: Option<u64>) -> u64 {
    let b = bytes.unwrap_or(0);
    b.saturating_sub(direct.unwrap_or(b))
}

fn user_functions(f: &Finding) -> Vec<&str> {
    f.stack
        .iter()
        .filter(|fr| fr.user)
        .filter_map(|fr| fr.function.as_deref())
        .collect()
}

fn location_function(f: &Finding) -> Option<&str> {
    f.location.as_ref().and_then(|l| l.function.as_deref())
}

/// Clears the marks of a previous fold (a report gated again).
pub(super) fn clear(findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        f.indirect_of = None;
        f.indirect_parts.clear();
    }
}

/// Folds the user's indirect findings into the gated definite leaks that
/// own them (see the module's documentation). Call after every finding's
/// `gated` is set, before `fails`.
pub(super) fn fold(findings: &mut [Finding]) {
    clear(findings);
    let owners: Vec<usize> = (0..findings.len())
        .filter(|&i| {
            let f = &findings[i];
            f.is_user() && f.kind == Kind::DefinitelyLost && f.is_gated()
        })
        .collect();
    // What each owner has left to give, per process part.
    let mut budget: Vec<BTreeMap<Part, u64>> = owners
        .iter()
        .map(|&o| per_part(&findings[o], indirect))
        .collect();
    if budget.iter().all(|b| b.values().all(|n| *n == 0)) {
        return;
    }
    let candidates: Vec<usize> = (0..findings.len())
        .filter(|&i| {
            let f = &findings[i];
            f.is_user() && f.kind == Kind::IndirectlyLost && !f.is_known()
        })
        .collect();
    for c in candidates {
        let need = per_part(&findings[c], |b, _| b.unwrap_or(0));
        let (cf, cu) = (
            location_function(&findings[c]),
            user_functions(&findings[c]),
        );
        // Owners to try: the same location function, then more shared
        // user frames, then report order.
        let mut order: Vec<usize> = (0..owners.len()).collect();
        order.sort_by_key(|&k| {
            let o = &findings[owners[k]];
            let same = cf.is_some() && location_function(o) == cf;
            let shared = user_functions(o).iter().filter(|f| cu.contains(f)).count();
            (!same, std::cmp::Reverse(shared), k)
        });
        let fits = need.iter().all(|(part, n)| {
            let room: u64 = order
                .iter()
                .map(|&k| budget[k].get(part).copied().unwrap_or(0))
                .fold(0, u64::saturating_add);
            room >= *n
        });
        if !fits {
            continue;
        }
        // Take from the owners in that order; the one that gives most owns it.
        let mut given = vec![0u64; owners.len()];
        for (part, n) in &need {
            let mut left = *n;
            for &k in &order {
                let room = budget[k].entry(part.clone()).or_default();
                let take = left.min(*room);
                *room -= take;
                given[k] = given[k].saturating_add(take);
                left -= take;
            }
        }
        let best = given.iter().copied().max().unwrap_or(0);
        let Some(main) = order
            .iter()
            .copied()
            .find(|&k| given[k] == best && best > 0)
        else {
            continue; // nothing to take: no bytes
        };
        let owner = owners[main];
        let part = {
            let f = &mut findings[c];
            f.gated = Some(false);
            IndirectPart {
                fingerprint: f.fingerprint.clone(),
                bytes: f.bytes.unwrap_or(0),
                blocks: f.blocks.unwrap_or(0),
                location: f.location.clone(),
            }
        };
        findings[c].indirect_of = Some(findings[owner].fingerprint.clone());
        findings[owner].indirect_parts.push(part);
    }
}
