//! Folds attributed records into findings: records with the same
//! fingerprint (and, for user findings, the same line) become one finding,
//! with per-process shares; checkpoint snapshots and error positions are
//! kept for the per-test tracker. [`Aggregator::finish`] sorts the findings
//! and computes the summary.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use super::attribute::{Attribution, Attributor};
use super::checkpoints::{ErrMark, SnapRec};
use super::fingerprint::fingerprint;
use super::summary;
use crate::kind::Kind;
use crate::model::{Frame, ProcessInfo, Record};
use crate::report::{Category, Finding, FindingProcess, FrameOut, Location, Summary};
use crate::suppress::{MatchOutcome, SuppressionSet, Suppressor};

/// Stacks of noise findings are cut to this many frames (user findings keep all).
const NOISE_STACK_FRAMES: usize = 16;

/// The result of analysing a set of files, before gating and rendering.
pub struct Analysis {
    pub processes: Vec<ProcessInfo>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    /// Per suppression (load order): records it suppressed.
    pub supp_used: Vec<u64>,
    /// Names of suppressions that swallowed records leakgate attributes to
    /// the user, with counts.
    pub supp_hid_user: Vec<(String, u64)>,
    pub timings: StageTimes,
    /// The checkpoints' section of the report, when the run had any.
    pub per_test: Option<crate::report::PerTestOut>,
    /// Records read that are not records of the report (checkpoint
    /// snapshots, hidden still-reachable noise).
    pub outside_records: u64,
    /// Records beyond the one that cut records were split into by an
    /// exact re-run (`stacks::Exact::Split`): the analysis saw them on top
    /// of what the parser read.
    pub split_records: u64,
}

/// Options of an analysis beyond what is yours and the suppressions.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Leave out still-reachable noise records of the final leak check:
    /// `run` asked Valgrind for reachable blocks only to follow blocks
    /// across checkpoint snapshots, not to report them.
    pub hide_noise_reachable: bool,
    /// Origins found by a re-run with `--track-origins=yes` (`--origins
    /// auto`): given to the records without one before attribution.
    pub origins: Option<Arc<super::origins::OriginMap>>,
    /// Exact stacks from a re-run of the tests whose leaks fast unwinding
    /// cut short (`--engine lsan|asan`): given to those leaks' records
    /// before attribution.
    pub stacks: Option<Arc<super::stacks::StackMap>>,
}

/// Bounds the error places kept (one per error record, not per occurrence).
const ERR_MARKS_MAX: usize = 1 << 20;

struct Acc {
    key: (u64, Option<u32>),
    finding: Finding,
    pids: BTreeSet<u64>,
    /// Per (pid, process part): records, count, bytes, blocks (see
    /// `FindingProcess`). A pid that exec'd has one part per program.
    per_pid: std::collections::BTreeMap<(u64, usize), FindingProcess>,
}

/// Adds `n` to a byte or block total: numbers from the XML may be as large
/// as `u64::MAX` (a hostile report), so sums saturate instead of wrapping.
fn add_to(total: &mut Option<u64>, n: u64) {
    let t = total.get_or_insert(0);
    *t = t.saturating_add(n);
}

/// Adds one record's share to its pid's entry.
fn add_per_pid(acc: &mut Acc, rec: &Record) {
    let Some(pid) = rec.pid else { return };
    let e = acc
        .per_pid
        .entry((pid, rec.process))
        .or_insert_with(|| FindingProcess {
            pid,
            ..FindingProcess::default()
        });
    e.records += 1;
    e.count = e.count.saturating_add(1);
    if rec.is_leak() {
        add_to(&mut e.bytes, rec.leaked_bytes.unwrap_or(0));
        add_to(&mut e.blocks, rec.leaked_blocks.unwrap_or(0));
        add_to(&mut e.direct_bytes, direct_bytes(rec));
    }
}

/// Folds attributed records into findings.
pub struct Aggregator {
    attributor: Attributor,
    accs: Vec<Acc>,
    index: HashMap<(u64, Option<u32>), usize>,
    /// (process, unique id) → (finding, pid), for non-leak errors (their
    /// counts arrive at the end of the file in `<errorcounts>`).
    err_index: HashMap<(usize, u64), (usize, Option<u64>)>,
    summary: Summary,
    pub(super) processes: usize,
    suppressor: Arc<Suppressor>,
    /// The matcher for each process (by index), chosen from its Valgrind options.
    sets: HashMap<usize, Arc<SuppressionSet>>,
    supp_used: Vec<u64>,
    supp_undecided: Vec<u64>,
    supp_hid_user: Vec<u64>,
    /// Time spent attributing and matching suppressions (LEAKGATE_TIMINGS=1).
    pub timings: StageTimes,
    /// Sees every record after attribution and suppression (the generator).
    pub observer: Option<Observer>,
    /// Loss records of checkpoint snapshots, in file order.
    pub(super) snaps: Vec<SnapRec>,
    /// Loss records of the final leak checks (absolute `dbytes`/`dblocks`):
    /// the tracker's last snapshot.
    finals: Vec<SnapRec>,
    /// Non-leak records: (process, `<clientmsg>`s before it, finding key),
    /// to tell which test (checkpoint) an error occurred in.
    pub(super) err_marks: Vec<ErrMark>,
    /// (process, site) of every snapshot record merged so far.
    snap_sites: std::collections::HashSet<(usize, u64)>,
    pub options: Options,
    hidden_reachable: u64,
    /// Records read that are not records of the report (checkpoint
    /// snapshots, hidden still-reachable noise): kept for the conservation
    /// check.
    outside: u64,
    /// See [`Analysis::split_records`].
    split: u64,
}

/// Sees every record once, after attribution and the existing suppressions
/// (`true`: one of them matched it): the suppression generator's hook.
pub type Observer = Arc<dyn Fn(&Record, &Attribution, &ProcessInfo, bool) + Send + Sync>;

/// Wall time per stage, summed over records (for benchmarks and profiling).
#[derive(Debug, Default, Clone, Copy)]
pub struct StageTimes {
    pub attribute: std::time::Duration,
    pub suppress: std::time::Duration,
}

pub(super) fn frame_out(f: &Frame, user: bool, local: Option<&PathBuf>) -> FrameOut {
    FrameOut {
        function: f.func.as_deref().map(str::to_string),
        object: f.obj.as_deref().map(str::to_string),
        file: f.file.as_deref().map(str::to_string),
        path: local.map(|p| p.display().to_string()).or_else(|| f.path()),
        line: f.line,
        ip: f.ip.as_deref().map(str::to_string),
        user,
        generated: None,
    }
}

impl Aggregator {
    pub fn new(attributor: Attributor, suppressor: Arc<Suppressor>) -> Aggregator {
        let n = suppressor.suppressions().len();
        Aggregator {
            suppressor,
            sets: HashMap::new(),
            supp_used: vec![0; n],
            supp_undecided: vec![0; n],
            supp_hid_user: vec![0; n],
            timings: StageTimes::default(),
            observer: None,
            attributor,
            accs: Vec::new(),
            index: HashMap::new(),
            err_index: HashMap::new(),
            summary: Summary::default(),
            processes: 0,
            snaps: Vec::new(),
            finals: Vec::new(),
            snap_sites: Default::default(),
            err_marks: Vec::new(),
            options: Options::default(),
            hidden_reachable: 0,
            outside: 0,
            split: 0,
        }
    }

    /// The matcher for the record's process.
    fn set_for(&mut self, rec: &Record, process: &ProcessInfo) -> Arc<SuppressionSet> {
        match self.sets.get(&rec.process) {
            Some(s) => s.clone(),
            None => {
                let s = self.suppressor.set_for(&process.valgrind_args);
                self.sets.insert(rec.process, s.clone());
                s
            }
        }
    }

    /// A loss record of a checkpoint snapshot (a delta leak check): kept
    /// for the per-test tracker, never a finding itself. Returns false
    /// for any other record.
    fn add_snapshot(&mut self, rec: &Record, att: &Attribution, process: &ProcessInfo) -> bool {
        if !rec.is_leak() {
            return false;
        }
        let Some((dbytes, dblocks)) = crate::analyze::checkpoints::parse_delta(&rec.what) else {
            return false;
        };
        if !self.suppressor.is_empty()
            && matches!(
                self.set_for(rec, process).first_match(rec),
                MatchOutcome::Suppressed(_)
            )
        {
            return true;
        }
        self.snaps
            .push(snap_rec(rec, fingerprint(rec, att), dbytes, dblocks));
        true
    }

    /// Keeps a loss record of a final leak check for the tracker.
    /// A unit keeps all of them; merging keeps only those at allocation
    /// sites the snapshots saw, so memory does not grow with the size of
    /// ordinary reports.
    fn add_final(&mut self, rec: &Record, key: (u64, Option<u32>)) {
        if rec.is_leak() {
            let (b, n) = (
                rec.leaked_bytes.unwrap_or(0),
                rec.leaked_blocks.unwrap_or(0),
            );
            self.finals.push(snap_rec(rec, key, b as i64, n as i64));
        }
    }

    /// Registers a process before its records arrive; returns its index.
    pub fn add_process(&mut self) -> usize {
        self.processes += 1;
        self.processes - 1
    }

    /// Attributes one record, applies the suppressions, and folds it in.
    pub fn add(&mut self, mut rec: Record, process: &ProcessInfo) {
        if let Some(map) = &self.options.origins {
            super::origins::fill(&mut rec, map);
        }
        if let Some(map) = self.options.stacks.clone()
            && let Some(recs) = super::stacks::expand(&rec, &map)
        {
            self.split += recs.len().saturating_sub(1) as u64;
            for r in recs {
                self.add_filled(r, process);
            }
            return;
        }
        self.add_filled(rec, process);
    }

    /// [`Self::add`] once the record has its origins and exact stack.
    fn add_filled(&mut self, rec: Record, process: &ProcessInfo) {
        let t0 = std::time::Instant::now();
        let att = self.attributor.attribute(&rec);
        let t1 = std::time::Instant::now();
        self.timings.attribute += t1 - t0;
        if self.add_snapshot(&rec, &att, process) {
            self.outside += 1;
            return;
        }
        if self.options.hide_noise_reachable && Kind::StillReachable == *rec.kind && !att.is_user()
        {
            self.hidden_reachable += 1;
            self.outside += 1;
            self.add_final(&rec, fingerprint(&rec, &att));
            return;
        }
        self.summary.records += 1;
        *self
            .summary
            .records_by_kind
            .entry(rec.kind.to_string())
            .or_default() += 1;
        let t1 = std::time::Instant::now();
        if !self.suppressor.is_empty() {
            let set = self.set_for(&rec, process);
            let outcome = set.first_match(&rec);
            self.timings.suppress += t1.elapsed();
            match outcome {
                MatchOutcome::Suppressed(i) => {
                    self.supp_used[i] += 1;
                    if att.is_user() && hidden_user_matters(&rec) {
                        self.supp_hid_user[i] += 1;
                    }
                    self.summary.suppressed.records += 1;
                    *self
                        .summary
                        .suppressed
                        .by_suppression
                        .entry(set.suppressions()[i].name.clone())
                        .or_default() += 1;
                    if let Some(o) = &self.observer {
                        o(&rec, &att, process, true);
                    }
                    return;
                }
                MatchOutcome::Undecidable(i) => {
                    self.supp_undecided[i] += 1;
                    self.summary.suppressed.undecidable += 1;
                }
                MatchOutcome::NotSuppressed => {}
            }
        }
        if let Some(o) = &self.observer {
            o(&rec, &att, process, false);
        }
        let (fp, line) = fingerprint(&rec, &att);
        let key = (fp, line);
        self.add_final(&rec, key);
        if !rec.is_leak() && self.err_marks.len() < ERR_MARKS_MAX {
            self.err_marks.push((rec.process, rec.client_msgs, key));
        }
        let idx = match self.index.get(&key) {
            Some(&i) => {
                let acc = &mut self.accs[i];
                acc.finding.records += 1;
                acc.finding.count = acc.finding.count.saturating_add(1);
                acc.finding.at_import &= super::import_time::made_at_import(&rec);
                if rec.is_leak() {
                    add_to(&mut acc.finding.bytes, rec.leaked_bytes.unwrap_or(0));
                    add_to(&mut acc.finding.blocks, rec.leaked_blocks.unwrap_or(0));
                    add_to(&mut acc.finding.direct_bytes, direct_bytes(&rec));
                }
                i
            }
            None => {
                let mut f = new_finding(&rec, &att, fp);
                let cut = (!f.is_user()).then_some(NOISE_STACK_FRAMES);
                f.aux_stacks = super::auxiliary::aux_stacks(&mut self.attributor, &rec, cut);
                self.accs.push(Acc {
                    key,
                    finding: f,
                    pids: BTreeSet::new(),
                    per_pid: Default::default(),
                });
                let i = self.accs.len() - 1;
                self.index.insert(key, i);
                i
            }
        };
        if let Some(pid) = rec.pid {
            self.accs[idx].pids.insert(pid);
        }
        add_per_pid(&mut self.accs[idx], &rec);
        if !rec.is_leak()
            && let Some(u) = rec.unique
        {
            self.err_index.insert((rec.process, u), (idx, rec.pid));
        }
    }

    /// Applies a file's `<errorcounts>`: each error context's occurrences.
    pub fn apply_error_counts(&mut self, process: usize, counts: &[(u64, u64)]) {
        for (u, c) in counts {
            if let Some(&(i, pid)) = self.err_index.get(&(process, *u))
                && *c > 1
            {
                let f = &mut self.accs[i].finding;
                f.count = f.count.saturating_add(c - 1);
                if let Some(e) = pid.and_then(|p| self.accs[i].per_pid.get_mut(&(p, process))) {
                    e.count = e.count.saturating_add(c - 1);
                }
            }
        }
    }

    /// Folds in the aggregate of a later part of the input (another file, or
    /// a later chunk of the same file): findings first seen here stay first.
    pub fn merge(&mut self, other: Aggregator) {
        let mut remap = Vec::with_capacity(other.accs.len());
        for acc in other.accs {
            match self.index.get(&acc.key) {
                Some(&i) => {
                    let mine = &mut self.accs[i];
                    let (a, b) = (&mut mine.finding, &acc.finding);
                    a.records += b.records;
                    a.at_import &= b.at_import;
                    a.count = a.count.saturating_add(b.count);
                    for (x, y) in [
                        (&mut a.bytes, b.bytes),
                        (&mut a.blocks, b.blocks),
                        (&mut a.direct_bytes, b.direct_bytes),
                    ] {
                        if let Some(y) = y {
                            add_to(x, y);
                        }
                    }
                    mine.pids.extend(acc.pids);
                    for (key, e) in acc.per_pid {
                        match mine.per_pid.get_mut(&key) {
                            Some(m) => {
                                m.records += e.records;
                                m.count = m.count.saturating_add(e.count);
                                for (x, y) in [
                                    (&mut m.bytes, e.bytes),
                                    (&mut m.blocks, e.blocks),
                                    (&mut m.direct_bytes, e.direct_bytes),
                                ] {
                                    if let Some(y) = y {
                                        add_to(x, y);
                                    }
                                }
                            }
                            None => {
                                mine.per_pid.insert(key, e);
                            }
                        }
                    }
                    remap.push(i);
                }
                None => {
                    self.index.insert(acc.key, self.accs.len());
                    remap.push(self.accs.len());
                    self.accs.push(acc);
                }
            }
        }
        for (k, (i, pid)) in other.err_index {
            self.err_index.insert(k, (remap[i], pid));
        }
        let (s, o) = (&mut self.summary, other.summary);
        s.records += o.records;
        for (k, n) in o.records_by_kind {
            *s.records_by_kind.entry(k).or_default() += n;
        }
        s.suppressed.records += o.suppressed.records;
        s.suppressed.undecidable += o.suppressed.undecidable;
        for (k, n) in o.suppressed.by_suppression {
            *s.suppressed.by_suppression.entry(k).or_default() += n;
        }
        for (mine, theirs) in [
            (&mut self.supp_used, other.supp_used),
            (&mut self.supp_undecided, other.supp_undecided),
            (&mut self.supp_hid_user, other.supp_hid_user),
        ] {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        self.timings.attribute += other.timings.attribute;
        self.timings.suppress += other.timings.suppress;
        // Final checks follow the snapshots in their file (units merge in
        // order): keep their records only where a snapshot looked.
        self.snap_sites
            .extend(other.snaps.iter().map(|s| (s.process, s.site)));
        self.snaps.extend(other.snaps);
        self.err_marks.extend(other.err_marks);
        let sites = &self.snap_sites;
        self.finals.extend(
            other
                .finals
                .into_iter()
                .filter(|f| sites.contains(&(f.process, f.site))),
        );
        self.hidden_reachable += other.hidden_reachable;
        self.outside += other.outside;
        self.split += other.split;
    }

    /// Finishes: findings sorted (user first, then by kind severity and bytes),
    /// source lines read, summary filled in.
    pub fn finish(self, mut processes: Vec<ProcessInfo>) -> Analysis {
        crate::analyze::processes::classify(&mut processes);
        let mut summary = self.summary;
        let supps = self.suppressor.suppressions();
        let supp_hid_user: Vec<(String, u64)> = self
            .supp_hid_user
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (supps[i].name.clone(), *n))
            .collect();
        for (i, n) in self.supp_undecided.iter().enumerate() {
            if *n > 0 {
                *summary
                    .suppressed
                    .undecidable_by_suppression
                    .entry(supps[i].name.clone())
                    .or_default() += n;
            }
        }
        let keys: Vec<(u64, Option<u32>)> = self.accs.iter().map(|a| a.key).collect();
        // A pid with several XML parts (it exec'd): each entry names its part.
        let mut parts: HashMap<u64, usize> = HashMap::new();
        for p in &processes {
            if let Some(pid) = p.pid {
                *parts.entry(pid).or_default() += 1;
            }
        }
        let mut findings: Vec<Finding> = self
            .accs
            .into_iter()
            .map(|mut a| {
                a.finding.pids = a.pids.into_iter().collect();
                a.finding.processes = a
                    .per_pid
                    .into_iter()
                    .map(|((pid, process), mut e)| {
                        if parts.get(&pid).is_some_and(|n| *n > 1)
                            && let Some(p) = processes.get(process)
                        {
                            e.xml = Some(p.file.clone());
                        }
                        e
                    })
                    .collect();
                a.finding
            })
            .collect();
        // A fork child repeats the leaks it inherited: report them once.
        crate::analyze::processes::fold_fork_inherited(&mut findings, &processes);
        let per_test = {
            let messages: Vec<&[String]> = processes
                .iter()
                .map(|p| p.client_messages.as_slice())
                .collect();
            let mut keyed: Vec<(&(u64, Option<u32>), &mut Finding)> =
                keys.iter().zip(findings.iter_mut()).collect();
            let complete: Vec<bool> = processes.iter().map(|p| p.complete).collect();
            let pids: Vec<Option<u64>> = processes.iter().map(|p| p.pid).collect();
            crate::analyze::checkpoints::resolve(
                &mut keyed,
                &crate::analyze::checkpoints::Inputs {
                    messages: &messages,
                    pids: &pids,
                    complete: &complete,
                    snaps: &self.snaps,
                    finals: &self.finals,
                    errors: &self.err_marks,
                    hidden_reachable: self.hidden_reachable,
                },
            )
        };
        let pytest = per_test.as_ref().is_some_and(|p| !p.tests.is_empty());
        super::import_time::mark_from_checkpoints(&mut findings, pytest);
        super::sources::fill_user_locations(&mut findings);
        summary::summarize(&mut summary, &findings);
        sort_findings(&mut findings);
        Analysis {
            processes,
            findings,
            summary,
            supp_used: self.supp_used,
            supp_hid_user,
            timings: self.timings,
            per_test,
            outside_records: self.outside,
            split_records: self.split,
        }
    }
}

/// A loss record as the per-test tracker keeps it: the finding it belongs
/// to (`key`, its [`fingerprint`]), its allocation stack (without the kind)
/// and its growth.
fn snap_rec(rec: &Record, key: (u64, Option<u32>), dbytes: i64, dblocks: i64) -> SnapRec {
    let mut h = crate::util::Fnv::default();
    for f in &rec.stack {
        h.part(f.ip.as_deref().or(f.func.as_deref()).unwrap_or("?"));
    }
    let h = h.finish();
    SnapRec {
        process: rec.process,
        msgs: rec.client_msgs,
        key,
        site: h,
        lost: Kind::is_lost_str(&rec.kind),
        dbytes,
        dblocks,
    }
}

/// Whether a user record that a suppression hid is worth a note: a kind
/// the default gate fails on (a definite leak, a memory error) that was not
/// made while the interpreter imported the extension (module
/// initialisation allocates for the life of the process, and the bundled
/// rules for the import machinery hide those records on purpose). An
/// indirectly lost block is not: the definitely lost block that owns it has
/// its own record, with the indirect bytes in its total (the bundled
/// `torch-tensor-storage-indirect` hides the tensor behind a leaked
/// `new torch::Tensor` this way, a block torch made for the user's call).
fn hidden_user_matters(rec: &Record) -> bool {
    let gated_kind = !rec.is_leak() || &*rec.kind == Kind::DefinitelyLost.as_str();
    let module_init = rec.stack.iter().any(|f| {
        f.func
            .as_deref()
            .is_some_and(crate::analyze::attribute::is_module_init)
    });
    gated_kind && !module_init
}

fn new_finding(rec: &Record, att: &Attribution, fp: u64) -> Finding {
    let user = att.is_user();
    let local = |i: usize| {
        att.local_paths
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, p)| p)
    };
    let take = if user {
        rec.stack.len()
    } else {
        NOISE_STACK_FRAMES.min(rec.stack.len())
    };
    let stack: Vec<FrameOut> = rec.stack[..take]
        .iter()
        .enumerate()
        .map(|(i, f)| frame_out(f, att.user_frames.contains(&i), local(i)))
        .collect();
    // The deciding frame: the user's frame of a user finding, the frame
    // whose library the noise is labelled by (or, for noise that ran
    // through the user's code for a reason, the user's frame).
    let location = att.owner.map(|i| {
        let f = &rec.stack[i];
        Location {
            function: f.func.as_deref().map(str::to_string),
            file: f.file.as_deref().map(str::to_string),
            path: local(i)
                .map(|p| p.display().to_string())
                .or_else(|| f.path()),
            line: f.line,
            object: f.obj.as_deref().map(str::to_string),
            generated: None,
        }
    });
    let origin = rec
        .origin()
        .map(|a| a.stack.iter().map(|f| frame_out(f, false, None)).collect());
    Finding {
        fingerprint: format!("{fp:016x}"),
        kind: Kind::parse(&rec.kind),
        category: if user {
            Category::User
        } else {
            Category::Noise
        },
        source: att.source.map(|s| s.label().to_string()),
        message: rec.what.clone(),
        bytes: rec.is_leak().then(|| rec.leaked_bytes.unwrap_or(0)),
        blocks: rec.is_leak().then(|| rec.leaked_blocks.unwrap_or(0)),
        direct_bytes: rec.is_leak().then(|| direct_bytes(rec)),
        count: 1,
        location,
        source_line: None,
        stack,
        origin,
        pids: Vec::new(),
        records: 1,
        aux: rec
            .aux
            .iter()
            .filter(|a| !a.text.is_empty())
            .map(|a| a.text.clone())
            .collect(),
        aux_stacks: Vec::new(),
        gated: None,
        baseline: None,
        processes: Vec::new(),
        inherited_by: Vec::new(),
        advice: None,
        reason: att
            .reason
            .as_ref()
            .map(|r| r.describe())
            .or_else(|| att.made_by.as_ref().map(|m| m.describe())),
        location_note: None,
        tests: Vec::new(),
        growth: None,
        per_call: None,
        fails: false,
        at_import: user && super::import_time::made_at_import(rec),
        indirect_of: None,
        indirect_parts: Vec::new(),
    }
}

/// The direct bytes of a leak record: "48 (16 direct, 32 indirect) bytes in
/// 1 blocks ..." → 16; without the parenthesis all bytes are direct.
fn direct_bytes(rec: &Record) -> u64 {
    let total = rec.leaked_bytes.unwrap_or(0);
    let Some(open) = rec.what.find('(') else {
        return total;
    };
    let rest = &rec.what[open + 1..];
    match rest.find(" direct") {
        Some(end) => crate::parse::parse_num(&rest[..end]).unwrap_or(total),
        None => total,
    }
}

/// The report's order of findings: the user's first, then by kind
/// severity, bytes (most first) and fingerprint.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (
            !a.is_user(),
            a.at_import,
            a.kind.severity(),
            std::cmp::Reverse(a.bytes.unwrap_or(0)),
            &a.fingerprint,
        )
            .cmp(&(
                !b.is_user(),
                b.at_import,
                b.kind.severity(),
                std::cmp::Reverse(b.bytes.unwrap_or(0)),
                &b.fingerprint,
            ))
    });
}
