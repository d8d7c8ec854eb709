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

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Deserialize;

use crate::report::{BytesBlocks, Finding, Growth, PerTestOut, TestShare};

use crate::probe::MARKER_PREFIX;

/// A non-leak record's place: (process, `<clientmsg>`s before it, finding key).
pub type ErrMark = (usize, u32, (u64, Option<u32>));

/// A checkpoint marker, as the probe writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Marker {
    /// `test` (a pytest test), `start` (before the first test), `finish`
    /// (end of the session), `checkpoint` (a call of `checkpoint()`).
    #[serde(default = "default_kind")]
    pub kind: String,
    pub label: String,
    /// Repetition (1-based) and how many were asked for (`--repeat`).
    #[serde(default)]
    pub rep: Option<u32>,
    #[serde(default)]
    pub of: Option<u32>,
    /// On the first marker of a process: CPython's free lists, `off` or why
    /// they stayed on (see `free_lists_off` in the probe).
    #[serde(default)]
    pub freelists: Option<String>,
}

fn default_kind() -> String {
    "checkpoint".into()
}

/// Parses a `<clientmsg>` text; `None` when it is not a leakgate marker.
pub fn parse_marker(text: &str) -> Option<Marker> {
    let json = text.trim().strip_prefix(MARKER_PREFIX.trim_end())?.trim();
    serde_json::from_str(json).ok()
}

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
type Shares = HashMap<(u64, Option<u32>), BTreeMap<Ckpt, (i64, i64)>>;

/// Blocks still not lost (reachable, possibly lost) at a site, oldest first:
/// (checkpoint that saw them appear, their finding key, blocks, bytes).
type Live = VecDeque<(Ckpt, (u64, Option<u32>), i64, i64)>;

fn add_share(shares: &mut Shares, key: (u64, Option<u32>), c: Ckpt, bytes: i64, blocks: i64) {
    let e = shares.entry(key).or_default().entry(c).or_insert((0, 0));
    e.0 = e.0.saturating_add(bytes);
    e.1 = e.1.saturating_add(blocks);
}

/// Takes up to `want` blocks from the oldest live blocks; returns the
/// owners taken, with their blocks and bytes, and cancels their share.
fn take_live(live: &mut Live, want: i64, shares: &mut Shares) -> Vec<(Ckpt, i64, i64)> {
    let mut out = Vec::new();
    let mut want = want;
    while want > 0 {
        let Some(front) = live.front_mut() else { break };
        let take = want.min(front.2);
        let bytes = if front.2 > 0 {
            // i128: bytes × blocks of hostile input must not overflow.
            (i128::from(front.3) * i128::from(take) / i128::from(front.2)) as i64
        } else {
            0
        };
        add_share(
            shares,
            front.1,
            front.0,
            bytes.saturating_neg(),
            take.saturating_neg(),
        );
        out.push((front.0, take, bytes));
        front.2 = front.2.saturating_sub(take);
        front.3 = front.3.saturating_sub(bytes);
        want = want.saturating_sub(take);
        if front.2 <= 0 {
            live.pop_front();
        }
    }
    out
}

/// The final leak check, as a checkpoint of its own.
const EXIT: usize = usize::MAX - 1;

/// Handles the loss records of one snapshot (checkpoint `c`).
fn process_group(
    group: &[SnapRec],
    c: Ckpt,
    live: &mut HashMap<(usize, u64), Live>,
    shares: &mut Shares,
) {
    // Per site: blocks that left the not-lost kinds in this snapshot.
    let mut left: HashMap<u64, i64> = HashMap::new();
    for s in group.iter().filter(|s| !s.lost && s.dblocks < 0) {
        let e = left.entry(s.site).or_default();
        *e = e.saturating_add(s.dblocks.saturating_neg());
    }
    let mut moved: HashMap<u64, i64> = HashMap::new();
    // Lost blocks: first those that were reachable before (the lag).
    for s in group.iter().filter(|s| s.lost && s.dblocks > 0) {
        let l = live.entry((s.process, s.site)).or_default();
        let avail = left
            .get(&s.site)
            .copied()
            .unwrap_or(0)
            .saturating_sub(moved.get(&s.site).copied().unwrap_or(0));
        let from_live = s.dblocks.min(avail.max(0));
        let per_block = s.dbytes.max(0) / s.dblocks.max(1);
        let mut placed: i64 = 0;
        for (owner, blocks, _) in take_live(l, from_live, shares) {
            add_share(
                shares,
                s.key,
                owner,
                per_block.saturating_mul(blocks),
                blocks,
            );
            placed = placed.saturating_add(blocks);
        }
        let m = moved.entry(s.site).or_default();
        *m = m.saturating_add(placed);
        let rest_blocks = s.dblocks.saturating_sub(placed);
        let rest_bytes = s
            .dbytes
            .max(0)
            .saturating_sub(per_block.saturating_mul(placed));
        if rest_blocks > 0 || rest_bytes > 0 {
            add_share(shares, s.key, c, rest_bytes, rest_blocks);
        }
    }
    // Not-lost blocks: freed ones leave (oldest first), new ones arrive.
    for s in group.iter().filter(|s| !s.lost) {
        let l = live.entry((s.process, s.site)).or_default();
        if s.dblocks < 0 {
            let m = moved.entry(s.site).or_default();
            let already = (*m).min(s.dblocks.saturating_neg());
            *m = m.saturating_sub(already);
            let freed = s.dblocks.saturating_neg().saturating_sub(already);
            take_live(l, freed, shares);
        } else if s.dblocks > 0 || s.dbytes > 0 {
            l.push_back((c, s.key, s.dblocks, s.dbytes.max(0)));
            add_share(shares, s.key, c, s.dbytes.max(0), s.dblocks);
        }
    }
}

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
    if markers.is_empty() && snaps.is_empty() {
        return None;
    }
    const UNMARKED: usize = usize::MAX;
    let ckpt_of = |s: &SnapRec| -> Ckpt {
        let m = last_marker
            .get(s.process)
            .and_then(|l| l.get(s.msgs as usize).copied().flatten());
        (s.process, m.unwrap_or(UNMARKED))
    };
    let mut shares: Shares = HashMap::new();
    let mut live: HashMap<(usize, u64), Live> = HashMap::new();
    type CumKey = (usize, u64, (u64, Option<u32>), bool);
    let mut cum: HashMap<CumKey, (i64, i64)> = HashMap::new();
    // Records of one snapshot are consecutive; handle them a snapshot at a time.
    let mut i = 0;
    while i < snaps.len() {
        let c = ckpt_of(&snaps[i]);
        let mut j = i;
        while j < snaps.len() && ckpt_of(&snaps[j]) == c {
            j += 1;
        }
        let group = &snaps[i..j];
        i = j;
        process_group(group, c, &mut live, &mut shares);
        for s in group {
            let e = cum
                .entry((s.process, s.site, s.key, s.lost))
                .or_insert((0, 0));
            e.0 = e.0.saturating_add(s.dbytes);
            e.1 = e.1.saturating_add(s.dblocks);
        }
    }
    // The final leak check (at exit) is one more snapshot: its growth is
    // what it holds beyond what the snapshots added up to. A block still
    // reachable at the last checkpoint and lost at exit is found here.
    let with_snaps: std::collections::BTreeSet<usize> = snaps.iter().map(|s| s.process).collect();
    for p in with_snaps {
        if !complete.get(p).copied().unwrap_or(false) {
            continue;
        }
        let mut fin: BTreeMap<SiteKey, (i64, i64)> = BTreeMap::new();
        for f in finals.iter().filter(|f| f.process == p) {
            let e = fin.entry((f.site, f.key, f.lost)).or_insert((0, 0));
            e.0 = e.0.saturating_add(f.dbytes);
            e.1 = e.1.saturating_add(f.dblocks);
        }
        let mut all = fin.clone();
        for (&(q, site, key, lost), v) in &cum {
            if q == p {
                let e = all.entry((site, key, lost)).or_insert((0, 0));
                e.0 = e.0.saturating_sub(v.0);
                e.1 = e.1.saturating_sub(v.1);
            }
        }
        let group: Vec<SnapRec> = all
            .into_iter()
            .filter(|(_, v)| v.0 != 0 || v.1 != 0)
            .map(|((site, key, lost), v)| SnapRec {
                process: p,
                msgs: 0,
                key,
                site,
                lost,
                dbytes: v.0,
                dblocks: v.1,
            })
            .collect();
        process_group(&group, (p, EXIT), &mut live, &mut shares);
    }
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
    // Repetitions actually run, per test label.
    let mut reps_run: HashMap<&str, u32> = HashMap::new();
    for c in &order {
        let m = &markers[c];
        if m.kind == "test" {
            let e = reps_run.entry(m.label.as_str()).or_default();
            *e = (*e).max(m.rep.unwrap_or(1));
        }
    }
    let user_ckpts: Vec<Ckpt> = order
        .iter()
        .copied()
        .filter(|c| markers[c].kind == "checkpoint")
        .collect();
    let marked_pids: std::collections::HashSet<u64> = order
        .iter()
        .filter_map(|c| pids.get(c.0).copied().flatten())
        .collect();
    let rank: HashMap<Ckpt, usize> = order.iter().enumerate().map(|(i, c)| (*c, i)).collect();
    for (key, f) in findings.iter_mut() {
        if !f.is_leak() {
            let Some(per) = errs.get(*key) else { continue };
            let mut cks: Vec<(&Ckpt, &u64)> = per.iter().collect();
            cks.sort_by_key(|(c, _)| rank.get(c).copied().unwrap_or(usize::MAX));
            for (c, n) in cks {
                let (kind, label) = match markers.get(c) {
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
            continue;
        }
        let empty = BTreeMap::new();
        let per = shares.get(*key).unwrap_or(&empty);
        let mut cks: Vec<(&Ckpt, &(i64, i64))> =
            per.iter().filter(|(_, v)| v.0 > 0 || v.1 > 0).collect();
        if cks.is_empty() && (!f.is_leak() || !f.pids.iter().any(|p| marked_pids.contains(p))) {
            continue;
        }
        cks.sort_by_key(|(c, _)| rank.get(c).copied().unwrap_or(usize::MAX));
        let mut tests: Vec<TestShare> = Vec::new();
        let mut total = (0u64, 0u64);
        for (c, v) in &cks {
            let (kind, label, rep, of) = match markers.get(c) {
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
            let t = match tests
                .iter_mut()
                .position(|t| t.test == label && t.kind == kind)
            {
                Some(i) => &mut tests[i],
                None => {
                    let reps = if kind == "test" {
                        reps_run.get(label.as_str()).copied().unwrap_or(1)
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
            if let Some(t) = tests.iter_mut().find(|t| t.kind == "outside") {
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
            let g = match t.kind.as_str() {
                "start" | "finish" | "exit" | "outside" => Growth::OneTime,
                "test" if t.repetitions.len() > 1 => {
                    let r = &t.repetitions;
                    if r.iter().all(|x| x.blocks > 0 || x.bytes > 0) {
                        if per_call.is_none() {
                            per_call = r.last().cloned();
                        }
                        Growth::PerCall
                    } else if (r[0].blocks > 0 || r[0].bytes > 0)
                        && r[1..].iter().all(|x| x.blocks == 0 && x.bytes == 0)
                    {
                        Growth::OneTime
                    } else {
                        Growth::Unknown
                    }
                }
                _ => Growth::Unknown,
            };
            match g {
                Growth::OneTime => any_one_time = true,
                Growth::Unknown => any_unknown = true,
                Growth::PerCall => {}
            }
            t.growth = Some(g);
        }
        // Plain checkpoints (a service's requests): one sequence of calls.
        let grew: Vec<bool> = user_ckpts
            .iter()
            .map(|c| per.get(c).is_some_and(|v| v.0 > 0 || v.1 > 0))
            .collect();
        if let Some(first) = grew.iter().position(|g| *g) {
            let after = &grew[first..];
            let g = if after.len() >= 2 && after.iter().all(|g| *g) {
                let last = user_ckpts[first + after.len() - 1];
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
    let notes = python_only_growth(findings.iter().map(|(_, f)| &**f));
    // Free lists: "off" only when every process that said anything turned
    // them off; otherwise the first reason they stayed on.
    let mut free_lists: Option<String> = None;
    for c in &order {
        if let Some(fl) = &markers[c].freelists
            && free_lists.as_deref().is_none_or(|cur| cur == "off")
        {
            free_lists = Some(fl.clone());
        }
    }
    let mut tests: Vec<String> = Vec::new();
    let mut repeat = 1;
    for c in &order {
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
    })
}

/// Allocator functions (libc's, as Memcheck replaces them, and CPython's
/// object allocators) skipped to find the function that made a block.
fn is_allocator_frame(name: &str) -> bool {
    matches!(name, "malloc" | "calloc" | "realloc" | "_PyObject_GC_Alloc")
        || crate::analyze::attribute::CPYTHON_ALLOCATORS.contains(&name)
}

/// Whether a block was made as a tuple, list, dict or float (the types
/// with free lists): the first function after the allocators names one
/// (`PyTuple_New`, `_PyTuple_Resize`, `PyList_New`, `dict_new`,
/// `PyFloat_FromDouble`, ...).
fn made_as_free_list_type(f: &Finding) -> bool {
    let Some(maker) = f
        .stack
        .iter()
        .filter_map(|fr| fr.function.as_deref())
        .find(|n| !is_allocator_frame(n))
    else {
        return false;
    };
    let m = maker.to_ascii_lowercase();
    ["tuple", "list", "dict", "float"]
        .iter()
        .any(|t| m.contains(t))
}

/// When CPython's free lists were on (no checkpoints, or kept): a note on
/// the lost `python` noise allocated by a free-list allocator, whose block
/// may have been recycled and so carry an earlier owner's stack.
pub fn recycled_note(findings: &[Finding]) -> Option<String> {
    let (mut blocks, mut bytes) = (0u64, 0u64);
    for f in findings.iter().filter(|f| {
        !f.is_user()
            && f.source.as_deref() == Some("python")
            && f.kind.is_lost()
            && made_as_free_list_type(f)
    }) {
        blocks = blocks.saturating_add(f.blocks.unwrap_or(0));
        bytes = bytes.saturating_add(f.direct_bytes.or(f.bytes).unwrap_or(0));
    }
    (blocks > 0).then(|| {
        format!(
            "{blocks} lost block{} ({bytes} bytes) in `python` noise were made as tuples, lists, dicts or floats, which CPython recycles through its free lists: a recycled block carries the allocation stack of its first owner, not of the code that leaked it; with checkpoints (pytest targets, or --per-test) leakgate turns the free lists off (README: CPython free lists and refcount leaks)",
            if blocks == 1 { "" } else { "s" }
        )
    })
}

/// Tests whose lost blocks (definitely or indirectly lost) grew at every
/// call, but only in `python` noise: nothing of yours grew there. That is
/// how a missing `Py_DECREF` of an object made by Python code looks (the
/// allocation stack holds only the interpreter): leakgate cannot name the
/// line, so it says so, one note per test (not gated).
fn python_only_growth<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<String> {
    #[derive(Default)]
    struct Grew {
        user: bool,
        records: u64,
        bytes: u64,
        blocks: u64,
    }
    // Checkpoints of a service (kind `checkpoint`) are one sequence.
    let name = |t: &TestShare| {
        if t.kind == "checkpoint" {
            "the checkpoint() calls".to_string()
        } else {
            t.test.clone()
        }
    };
    let mut order: Vec<String> = Vec::new();
    let mut by: HashMap<String, Grew> = HashMap::new();
    for f in findings.filter(|f| f.is_leak()) {
        let lost = f.kind.is_lost();
        let python = !f.is_user() && f.source.as_deref() == Some("python");
        for t in f
            .tests
            .iter()
            .filter(|t| matches!(t.kind.as_str(), "test" | "checkpoint"))
        {
            let key = name(t);
            if !by.contains_key(&key) {
                order.push(key.clone());
            }
            let g = by.entry(key).or_default();
            if f.is_user() {
                g.user = true;
            } else if python && lost && t.growth == Some(Growth::PerCall) {
                let one = match t.repetitions.last() {
                    Some(r) if t.kind == "test" => r.clone(),
                    _ => f.per_call.clone().unwrap_or_default(),
                };
                g.records += 1;
                g.bytes = g.bytes.saturating_add(one.bytes);
                g.blocks = g.blocks.saturating_add(one.blocks);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|k| {
            let g = &by[&k];
            (!g.user && g.records > 0).then(|| {
                format!(
                    "{k}: {} byte{} in {} block{} lost at every call, all allocated by the interpreter (`python` noise, {} finding{}) and none in your code: an object made by Python code whose reference an extension never releases (a missing Py_DECREF) leaks like this, and its allocation stack cannot name the line (README: CPython free lists and refcount leaks)",
                    g.bytes,
                    if g.bytes == 1 { "" } else { "s" },
                    g.blocks,
                    if g.blocks == 1 { "" } else { "s" },
                    g.records,
                    if g.records == 1 { "" } else { "s" },
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
