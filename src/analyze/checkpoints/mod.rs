//! Per-test and per-checkpoint leaks: ties the leak snapshots a process
//! took mid-run (`leakgate_probe.checkpoint(label)`: a `<clientmsg>` marker,
//! then a changed-blocks leak check) to the checkpoint before them, follows
//! each block across snapshots by its allocation stack (a block that still
//! looked reachable at one check and is lost at the next belongs to the
//! checkpoint that first saw it), and gives every finding its `tests` and
//! `growth` (`per_call`, `one_time`, `unknown`).
//!
//! Snapshot records are told from the final leak check's by the delta
//! Valgrind prints in delta mode ("80 (+40) bytes in 2 (+1) blocks ..."):
//! they never become findings themselves, so the totals stay those of the
//! final check.
//!
//! `track` follows blocks across snapshots, `shares` turns one
//! finding's shares into its `tests` and `growth`, `notes` says what the
//! checkpoints show beyond the findings.

mod notes;
mod shares;
#[cfg(test)]
mod tests;
mod track;

pub use notes::recycled_note;
pub use shares::test_growth;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::parse::{Marker, parse_marker};
use crate::report::{Finding, PerTestOut};
use track::EXIT;

/// A non-leak record's place: (process, `<clientmsg>`s before it, finding key).
pub type ErrMark = (usize, u32, (u64, Option<u32>));

/// The growth since the previous leak check that Valgrind prints for a loss
/// record in delta mode: `(bytes, blocks)`; `None` for a record of a plain
/// (final) leak check.
pub fn parse_delta(what: &str) -> Option<(i64, i64)> {
    // "80 (+40) bytes in 2 (+1) blocks ...",
    // "48 (+48) (16 (+16) direct, 32 (+32) indirect) bytes in 1 (+1) blocks ..."
    let mut it = what.split_whitespace();
    it.next()?;
    let bytes = signed(it.next()?)?;
    let rest = &what[what.find(" bytes in ")? + " bytes in ".len()..];
    let mut it = rest.split_whitespace();
    it.next()?;
    let blocks = signed(it.next()?)?;
    Some((bytes, blocks))
}

/// `(+1,024)` → 1024, `(-16)` → -16.
fn signed(tok: &str) -> Option<i64> {
    let inner = tok.strip_prefix('(')?.strip_suffix(')')?;
    let (neg, digits) = match inner.as_bytes().first()? {
        b'+' => (false, &inner[1..]),
        b'-' => (true, &inner[1..]),
        _ => return None,
    };
    // A count beyond i64 (hostile input) saturates: never wraps, never panics.
    let n = i64::try_from(crate::parse::parse_num(digits)?).unwrap_or(i64::MAX);
    Some(if neg { n.saturating_neg() } else { n })
}

/// One loss record of a snapshot, reduced to what the tracker needs.
#[derive(Debug, Clone)]
pub struct SnapRec {
    /// Index of the process (file).
    pub process: usize,
    /// `<clientmsg>` elements before it in its file.
    pub msgs: u32,
    /// The key of the finding the record belongs to (fingerprint, line).
    pub key: (u64, Option<u32>),
    /// The allocation stack, without the kind: the same blocks across kinds.
    pub site: u64,
    /// Definitely or indirectly lost.
    pub lost: bool,
    pub dbytes: i64,
    pub dblocks: i64,
}

/// (allocation site, finding key, lost): what one loss record counts.
type SiteKey = (u64, (u64, Option<u32>), bool);

/// A checkpoint: (process, index of its marker among the process' messages).
type Ckpt = (usize, usize);

/// Grown bytes and blocks per (finding key, checkpoint).
/// A checkpoint: (process, index of its marker among the process' `<clientmsg>`s).
/// What the tracker reads, per process (by index) and in file order.
pub struct Inputs<'a> {
    /// Each process' `<clientmsg>` texts.
    pub messages: &'a [&'a [String]],
    pub pids: &'a [Option<u64>],
    /// Whether each process' XML is complete (its final leak check is there).
    pub complete: &'a [bool],
    /// Loss records of the snapshots.
    pub snaps: &'a [SnapRec],
    /// Loss records of the final leak checks (absolute values).
    pub finals: &'a [SnapRec],
    /// Where each non-leak record was.
    pub errors: &'a [ErrMark],
    pub hidden_reachable: u64,
}

/// The checkpoints of a run, in order, and what the per-finding shares need
/// to know about them.
pub(super) struct Timeline {
    markers: HashMap<Ckpt, Marker>,
    /// Per process, for each count of `<clientmsg>`s, the last marker.
    last_marker: Vec<Vec<Option<usize>>>,
    order: Vec<Ckpt>,
    /// Position of each checkpoint in `order`.
    rank: HashMap<Ckpt, usize>,
    /// Repetitions actually run, per test label.
    reps_run: HashMap<String, u32>,
    /// The plain `checkpoint()` calls, in order.
    user_ckpts: Vec<Ckpt>,
    /// Pids that wrote a marker.
    marked_pids: HashSet<u64>,
}

impl Timeline {
    /// Reads the markers of every process.
    fn read(messages: &[&[String]], pids: &[Option<u64>]) -> Timeline {
        // Markers per process, and for each message count the last marker.
        let mut markers: HashMap<Ckpt, Marker> = HashMap::new();
        let mut last_marker: Vec<Vec<Option<usize>>> = Vec::with_capacity(messages.len());
        let mut order: Vec<Ckpt> = Vec::new();
        for (p, msgs) in messages.iter().enumerate() {
            let mut last = vec![None; msgs.len() + 1];
            let mut cur = None;
            for (i, m) in msgs.iter().enumerate() {
                if let Some(mk) = parse_marker(m) {
                    markers.insert((p, i), mk);
                    order.push((p, i));
                    cur = Some(i);
                }
                last[i + 1] = cur;
            }
            last_marker.push(last);
        }
        serial_order(&mut order, &markers);
        // Repetitions actually run, per test label.
        let mut reps_run: HashMap<String, u32> = HashMap::new();
        for c in &order {
            let m = &markers[c];
            if m.kind == "test" {
                let e = reps_run.entry(m.label.clone()).or_default();
                *e = (*e).max(m.rep.unwrap_or(1));
            }
        }
        let rank = order.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let user_ckpts = order
            .iter()
            .copied()
            .filter(|c| markers[c].kind == "checkpoint")
            .collect();
        let marked_pids = order
            .iter()
            .filter_map(|c| pids.get(c.0).copied().flatten())
            .collect();
        Timeline {
            markers,
            last_marker,
            order,
            rank,
            reps_run,
            user_ckpts,
            marked_pids,
        }
    }

    /// The checkpoint a snapshot record belongs to: the last marker before it.
    fn ckpt_of(&self, s: &SnapRec) -> Ckpt {
        const UNMARKED: usize = usize::MAX;
        let m = self
            .last_marker
            .get(s.process)
            .and_then(|l| l.get(s.msgs as usize).copied().flatten());
        (s.process, m.unwrap_or(UNMARKED))
    }
}

/// Orders the checkpoints of several processes as one serial run would
/// have taken them: every `start` first, then the tests by their index in
/// the collected session (pytest-xdist workers run them interleaved; a
/// marker without an index takes that of the test before it in its
/// process), then every `finish`. Only when tests with indices come from
/// more than one process: otherwise file order stands.
fn serial_order(order: &mut [Ckpt], markers: &HashMap<Ckpt, Marker>) {
    let indexed: HashSet<usize> = order
        .iter()
        .filter(|c| markers[c].index.is_some())
        .map(|c| c.0)
        .collect();
    if indexed.len() < 2 {
        return;
    }
    // A marker without an index (a `checkpoint()` inside a test) takes the
    // index of the next test marker of its process (the test it ran in),
    // or of the one before it at the end.
    let mut idx: HashMap<Ckpt, u64> = HashMap::with_capacity(order.len());
    let (mut next, mut prev): (Option<(usize, u64)>, HashMap<usize, u64>) = (None, HashMap::new());
    for c in order.iter() {
        if let Some(i) = markers[c].index {
            prev.insert(c.0, i);
        } else if let Some(&i) = prev.get(&c.0) {
            idx.insert(*c, i);
        }
    }
    for c in order.iter().rev() {
        if next.is_some_and(|n| n.0 != c.0) {
            next = None;
        }
        match markers[c].index {
            Some(i) => next = Some((c.0, i)),
            None => {
                if let Some((_, i)) = next {
                    idx.insert(*c, i);
                }
            }
        }
        if let Some(i) = markers[c].index {
            idx.insert(*c, i);
        }
    }
    let key = |c: &Ckpt| {
        let phase = match markers[c].kind.as_str() {
            "start" => 0u8,
            "finish" => 2,
            // A sanitizer's exit check after the last checkpoint (the
            // `exit` snapshot parse::sanitizer makes of it).
            "exit" => 3,
            _ => 1,
        };
        (phase, idx.get(c).copied().unwrap_or(0))
    };
    // Stable: ties (the same test's repetitions, the markers of processes
    // without indices) keep file order, process by process.
    order.sort_by_key(key);
}

/// What the checkpoints say about each finding: fills `tests`, `growth`
/// and `per_call` of `findings` (given with their keys) and returns the
/// report's per-test section.
pub fn resolve(
    findings: &mut [(&(u64, Option<u32>), &mut Finding)],
    input: &Inputs<'_>,
) -> Option<PerTestOut> {
    let Inputs {
        messages,
        pids,
        complete,
        snaps,
        finals,
        errors,
        hidden_reachable,
    } = *input;
    let tl = Timeline::read(messages, pids);
    if tl.markers.is_empty() && snaps.is_empty() {
        return None;
    }
    let shares = track::track(snaps, finals, complete, |s| tl.ckpt_of(s));
    let (markers, order) = (&tl.markers, &tl.order);
    // Memory errors: the checkpoint after a record ended the test it
    // happened in (Valgrind writes an error context at its first occurrence).
    let mut errs: HashMap<(u64, Option<u32>), BTreeMap<Ckpt, u64>> = HashMap::new();
    for &(p, msgs, key) in errors {
        let Some(msgs_of) = messages.get(p) else {
            continue;
        };
        if !order.iter().any(|c| c.0 == p) {
            continue;
        }
        let next = (msgs as usize..msgs_of.len()).find(|i| markers.contains_key(&(p, *i)));
        *errs
            .entry(key)
            .or_default()
            .entry((p, next.unwrap_or(EXIT)))
            .or_default() += 1;
    }
    for (key, f) in findings.iter_mut() {
        if f.is_leak() {
            shares::leak_of(f, shares.get(*key), &tl);
        } else {
            shares::errors_of(f, errs.get(*key), &tl);
        }
    }
    let notes = notes::python_only_growth(findings.iter().map(|(_, f)| &**f));
    // Free lists: "off" only when every process that said anything turned
    // them off; otherwise the first reason they stayed on.
    let mut free_lists: Option<String> = None;
    for c in order {
        if let Some(fl) = &markers[c].freelists
            && free_lists.as_deref().is_none_or(|cur| cur == "off")
        {
            free_lists = Some(fl.clone());
        }
    }
    let mut tests: Vec<String> = Vec::new();
    let mut repeat = 1;
    for c in order {
        let m = &markers[c];
        if m.kind == "test" {
            repeat = repeat.max(m.of.unwrap_or(1));
            if !tests.contains(&m.label) {
                tests.push(m.label.clone());
            }
        }
    }
    Some(PerTestOut {
        checkpoints: order.len() as u64,
        snapshot_records: snaps.len() as u64,
        hidden_reachable,
        repeat,
        tests,
        free_lists,
        notes,
        durations: Default::default(),
    })
}
