//! Drives parse → attribute → (suppress) over a set of XML files and folds
//! the attributed records into findings: records with the same fingerprint
//! (and, for user findings, the same line) become one finding. Only the
//! findings are kept, never the records, so memory does not grow with the
//! report's size.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::attribute::{Attribution, Attributor, Location};
use crate::checkpoints::SnapRec;
use crate::model::{ExitStatus, Frame, ProcessInfo, Record};
use crate::parse::{self, InputError, Interner};
use crate::report::{Finding, FindingProcess, FrameOut, ProcessOut, Summary};
use crate::suppress::{MatchOutcome, SuppressionSet, Suppressor};

/// Stacks of noise findings are cut to this many frames (user findings keep all).
const NOISE_STACK_FRAMES: usize = 16;

/// Expands PATH arguments: files as given, directories to their `*.xml` and
/// `*.xml.zst` files (sorted).
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| InputError::Io {
                path: p.clone(),
                err: e,
            })?;
            let mut files: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    f.is_file() && (n.ends_with(".xml") || n.ends_with(".xml.zst"))
                })
                .collect();
            if files.is_empty() {
                return Err(InputError::EmptyDir(p.clone()));
            }
            files.sort();
            out.extend(files);
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(InputError::NotFound(p.clone()));
        }
    }
    Ok(out)
}

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
}

/// Options of an analysis beyond what is yours and the suppressions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Leave out still-reachable noise records of the final leak check:
    /// `run` asked Valgrind for reachable blocks only to follow blocks
    /// across checkpoint snapshots, not to report them.
    pub hide_noise_reachable: bool,
}

/// A non-leak record's place: (process, `<clientmsg>`s before it, finding key).
pub type ErrMark = (usize, u32, (u64, Option<u32>));

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
    processes: usize,
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
    snaps: Vec<SnapRec>,
    /// Loss records of the final leak checks (absolute `dbytes`/`dblocks`):
    /// the tracker's last snapshot.
    finals: Vec<SnapRec>,
    /// Non-leak records: (process, `<clientmsg>`s before it, finding key),
    /// to tell which test (checkpoint) an error occurred in.
    err_marks: Vec<ErrMark>,
    /// (process, site) of every snapshot record merged so far.
    snap_sites: std::collections::HashSet<(usize, u64)>,
    pub options: Options,
    hidden_reachable: u64,
    /// Records read that are not records of the report (checkpoint
    /// snapshots, hidden still-reachable noise): kept for the conservation
    /// check.
    outside: u64,
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

/// FNV-1a, 64 bit: stable across platforms and Rust versions.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for b in p.as_bytes().iter().chain(std::iter::once(&0x1f)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

fn frame_name(f: &Frame) -> String {
    if let Some(n) = &f.func {
        return n.to_string();
    }
    match &f.obj {
        Some(o) => format!("obj:{}", o.rsplit('/').next().unwrap_or(o)),
        None => "???".into(),
    }
}

/// Strips version numbers from an object's basename: `libfoo.so.1.2` → `libfoo.so`.
fn object_key(obj: Option<&str>) -> String {
    let Some(o) = obj else { return "???".into() };
    let base = o.rsplit('/').next().unwrap_or(o);
    match base.find(".so") {
        Some(i) => base[..i + 3].to_string(),
        None => base.to_string(),
    }
}

fn frame_out(f: &Frame, user: bool, local: Option<&PathBuf>) -> FrameOut {
    FrameOut {
        function: f.func.as_deref().map(str::to_string),
        object: f.obj.as_deref().map(str::to_string),
        file: f.file.as_deref().map(str::to_string),
        path: local.map(|p| p.display().to_string()).or_else(|| f.path()),
        line: f.line,
        ip: f.ip.as_deref().map(str::to_string),
        user,
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
        let Some((dbytes, dblocks)) = crate::checkpoints::parse_delta(&rec.what) else {
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
    pub fn add(&mut self, rec: Record, process: &ProcessInfo) {
        let t0 = std::time::Instant::now();
        let att = self.attributor.attribute(&rec);
        let t1 = std::time::Instant::now();
        self.timings.attribute += t1 - t0;
        if self.add_snapshot(&rec, &att, process) {
            self.outside += 1;
            return;
        }
        if self.options.hide_noise_reachable
            && &*rec.kind == "Leak_StillReachable"
            && !att.is_user()
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
                if rec.is_leak() {
                    add_to(&mut acc.finding.bytes, rec.leaked_bytes.unwrap_or(0));
                    add_to(&mut acc.finding.blocks, rec.leaked_blocks.unwrap_or(0));
                    add_to(&mut acc.finding.direct_bytes, direct_bytes(&rec));
                }
                i
            }
            None => {
                let f = new_finding(&rec, &att, fp);
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
    }

    /// Finishes: findings sorted (user first, then by kind severity and bytes),
    /// source lines read, summary filled in.
    pub fn finish(self, mut processes: Vec<ProcessInfo>) -> Analysis {
        crate::processes::classify(&mut processes);
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
        crate::processes::fold_fork_inherited(&mut findings, &processes);
        let per_test = {
            let messages: Vec<&[String]> = processes
                .iter()
                .map(|p| p.client_messages.as_slice())
                .collect();
            let mut keyed: Vec<(&(u64, Option<u32>), &mut Finding)> =
                keys.iter().zip(findings.iter_mut()).collect();
            let complete: Vec<bool> = processes.iter().map(|p| p.complete).collect();
            let pids: Vec<Option<u64>> = processes.iter().map(|p| p.pid).collect();
            crate::checkpoints::resolve(
                &mut keyed,
                &crate::checkpoints::Inputs {
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
        let mut lines = SourceLines::default();
        for f in &mut findings {
            let kind = f.kind.clone();
            if f.is_user() {
                summary.user.findings += 1;
                let bb = match kind.as_str() {
                    "Leak_DefinitelyLost" => Some(&mut summary.user.definitely_lost),
                    "Leak_IndirectlyLost" => Some(&mut summary.user.indirectly_lost),
                    "Leak_PossiblyLost" => Some(&mut summary.user.possibly_lost),
                    "Leak_StillReachable" => Some(&mut summary.user.still_reachable),
                    _ => None,
                };
                match bb {
                    Some(bb) => {
                        bb.bytes = bb.bytes.saturating_add(f.direct_bytes.unwrap_or(0));
                        bb.blocks = bb.blocks.saturating_add(f.blocks.unwrap_or(0));
                    }
                    None => summary.user.errors += 1,
                }
                if let Some(loc) = &f.location
                    && let (Some(p), Some(l)) = (&loc.path, loc.line)
                {
                    f.source_line = lines.get(Path::new(p), l);
                }
            } else {
                summary.noise.findings += 1;
                let label = f.source.clone().unwrap_or_default();
                *summary.noise.by_source.entry(label.clone()).or_default() += f.records;
                let b = summary.noise.bytes_by_source.entry(label).or_default();
                *b = b.saturating_add(f.bytes.unwrap_or(0));
                *summary.noise.by_kind.entry(kind).or_default() += f.records;
            }
        }
        findings.sort_by(|a, b| {
            (
                !a.is_user(),
                severity(&a.kind),
                std::cmp::Reverse(a.bytes.unwrap_or(0)),
                &a.fingerprint,
            )
                .cmp(&(
                    !b.is_user(),
                    severity(&b.kind),
                    std::cmp::Reverse(b.bytes.unwrap_or(0)),
                    &b.fingerprint,
                ))
        });
        Analysis {
            processes,
            findings,
            summary,
            supp_used: self.supp_used,
            supp_hid_user,
            timings: self.timings,
            per_test,
            outside_records: self.outside,
        }
    }
}

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
    let parsed = a.processes.iter().map(|p| p.records).sum();
    conservation_error(&a.summary, &a.findings, parsed, a.outside_records)
}

/// Sort rank: errors and definite leaks first, reachable last.
fn severity(kind: &str) -> u8 {
    match kind {
        "FatalSignal" => 0,
        "Leak_DefinitelyLost" => 2,
        "Leak_IndirectlyLost" => 3,
        "Leak_PossiblyLost" => 4,
        "Leak_StillReachable" => 5,
        _ => 1,
    }
}

/// A loss record as the per-test tracker keeps it: the finding it belongs
/// to (`key`, its [`fingerprint`]), its allocation stack (without the kind)
/// and its growth.
fn snap_rec(rec: &Record, key: (u64, Option<u32>), dbytes: i64, dblocks: i64) -> SnapRec {
    let mut h: u64 = 0xcbf29ce484222325;
    for f in &rec.stack {
        let part = f.ip.as_deref().or(f.func.as_deref()).unwrap_or("?");
        for b in part.as_bytes().iter().chain(std::iter::once(&0x1f)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    SnapRec {
        process: rec.process,
        msgs: rec.client_msgs,
        key,
        site: h,
        lost: matches!(&*rec.kind, "Leak_DefinitelyLost" | "Leak_IndirectlyLost"),
        dbytes,
        dblocks,
    }
}

/// Whether a user record that a suppression hid is worth a note: a kind
/// the default gate fails on (a definite or indirect leak, a memory error)
/// that was not made while the interpreter imported the extension (module
/// initialisation allocates for the life of the process, and the bundled
/// rules for the import machinery hide those records on purpose).
fn hidden_user_matters(rec: &Record) -> bool {
    let gated_kind =
        !rec.is_leak() || matches!(&*rec.kind, "Leak_DefinitelyLost" | "Leak_IndirectlyLost");
    let module_init = rec.stack.iter().any(|f| {
        f.func.as_deref().is_some_and(|n| {
            n.starts_with("PyInit_")
                || n.starts_with("_imp_create_dynamic")
                || n == "_PyImport_LoadDynamicModuleWithSpec"
                || n.starts_with("PyModule_ExecDef")
        })
    });
    gated_kind && !module_init
}

/// The finding's fingerprint and (for user findings) its line, which
/// separates distinct sites in one function.
fn fingerprint(rec: &Record, att: &Attribution) -> (u64, Option<u32>) {
    let mut parts: Vec<String> = vec![rec.kind.to_string()];
    match (att.is_user(), att.owner) {
        (true, Some(owner)) => {
            // The callee of the innermost user frame (malloc, strdup, ...)
            // separates different kinds of allocation in one function.
            if owner > 0 {
                parts.push(frame_name(&rec.stack[owner - 1]));
            }
            for &i in &att.user_frames {
                parts.push(frame_name(&rec.stack[i]));
            }
            let line = rec.stack[owner].line;
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (fnv1a(&refs), line)
        }
        (_, Some(owner)) => {
            let f = &rec.stack[owner];
            parts.push(frame_name(f));
            parts.push(object_key(f.obj.as_deref()));
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (fnv1a(&refs), None)
        }
        (_, None) => {
            for f in rec.stack.iter().take(4) {
                parts.push(frame_name(f));
            }
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (fnv1a(&refs), None)
        }
    }
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
        }
    });
    let origin = rec
        .origin()
        .map(|a| a.stack.iter().map(|f| frame_out(f, false, None)).collect());
    Finding {
        fingerprint: format!("{fp:016x}"),
        kind: rec.kind.to_string(),
        category: if user { "user".into() } else { "noise".into() },
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
        gated: None,
        baseline: None,
        processes: Vec::new(),
        inherited_by: Vec::new(),
        advice: None,
        reason: att.reason.as_ref().map(|r| r.describe()),
        tests: Vec::new(),
        growth: None,
        per_call: None,
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

/// Source files larger than this are not read for their lines.
const SOURCE_MAX: u64 = 16 << 20;

/// A source file's bytes, if it is a regular file of a sane size: a path
/// from a hostile report (`/dev/zero`, a FIFO, `/proc/kcore`) must not make
/// leakgate read forever or block.
fn read_source(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > SOURCE_MAX {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(SOURCE_MAX).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Reads source lines, caching each file's content once.
#[derive(Default)]
struct SourceLines {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceLines {
    fn get(&mut self, path: &Path, line: u32) -> Option<String> {
        let content = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = read_source(path)?;
            Some(
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let lines = content.as_ref()?;
        lines
            .get(line.checked_sub(1)? as usize)
            .map(|s| s.trim_end().to_string())
    }
}

/// Files larger than this are read in chunks of about `CHUNK` bytes (cut at
/// `<error>` lines), parsed in parallel, each mapped on its own and unmapped
/// when done: memory stays flat whatever the file's size (one map of the
/// whole file would count all of it in the resident set).
const CHUNK_MIN: u64 = 32 << 20;
const CHUNK: u64 = 8 << 20;

/// This process's peak resident set (`VmHWM`), for LEAKGATE_TIMINGS.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Maps `len` bytes of `file` from `offset`, read ahead in one go. Cheaper
/// than copying them (`read_at`): the pages come straight from the page
/// cache, and unmapping at the end of the chunk returns them, so the
/// resident set stays at about one chunk per worker.
#[allow(unsafe_code)] // memmap2::MmapOptions::map is unsafe (a file changed while mapped)
fn map_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the file is only read; as for every memory-mapped input, a
    // file truncated by another process while it is read is not supported.
    unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .populate()
            .map(file)
    }
}

/// Reads `len` bytes at `offset` (short at end of file).
fn read_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The offset of the first `<error>` line at or after `from` (or `len`).
fn next_error_line(file: &std::fs::File, from: u64, len: u64) -> std::io::Result<u64> {
    const WINDOW: usize = 256 << 10;
    let pat = b"\n<error>\n";
    let mut at = from.saturating_sub(1);
    while at < len {
        let buf = read_at(file, at, WINDOW)?;
        if let Some(p) = memchr::memmem::find(&buf, pat) {
            return Ok(at + p as u64 + 1);
        }
        if buf.len() < WINDOW {
            break;
        }
        at += (WINDOW - pat.len()) as u64;
    }
    Ok(len)
}

/// A piece of work: a whole file, or a byte range of a mapped file that
/// starts at an `<error>` line (or at the file's start).
struct Unit {
    file: usize,
    range: Option<(usize, usize)>,
    /// The range is too large to hold at once (no `<error>` line to cut it
    /// at, e.g. a file on one line): read it as a stream.
    stream: bool,
}

/// Reads a byte range of a file (positional reads: the ranges of one file
/// are read by several workers at once).
struct RangeReader<'f> {
    file: &'f std::fs::File,
    pos: u64,
    end: u64,
}

impl std::io::Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// An opened input shared by the units that read it.
enum Slot {
    Mapped(Arc<memmap2::Mmap>),
    /// A large regular file, read in chunks.
    Chunked(std::fs::File),
    Stream(std::sync::Mutex<Option<Box<dyn std::io::BufRead + Send>>>),
}

/// What a unit produced.
struct UnitOut {
    agg: Aggregator,
    sum: parse::FileSummary,
}

/// Combines the summaries of one file's chunks, in order.
fn combine(mut parts: Vec<parse::FileSummary>) -> parse::FileSummary {
    let mut first = parts.remove(0);
    for p in parts {
        first.process.records += p.process.records;
        first
            .process
            .client_messages
            .extend(p.process.client_messages);
        if p.process.fatal_signal.is_some() {
            first.process.fatal_signal = p.process.fatal_signal;
        }
        first.error_counts.extend(p.error_counts);
        first.supp_counts.extend(p.supp_counts);
        first.closed = p.closed;
        first.saw_finished |= p.saw_finished;
        first.problem = first.problem.or(p.problem);
        first.partial_record = p.partial_record;
    }
    first
}

/// Parses and analyses `files` (several files, and large files in chunks,
/// in parallel). `exits` gives the known exit status of processes by pid
/// (the target leakgate started).
pub fn analyze_files(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
) -> Result<Analysis, InputError> {
    analyze_files_observed(files, attributor, suppressor, exits, None)
}

/// [`analyze_files`] with an [`Observer`] that sees every record.
pub fn analyze_files_observed(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
    observer: Option<Observer>,
) -> Result<Analysis, InputError> {
    analyze_files_with(
        files,
        attributor,
        suppressor,
        exits,
        observer,
        Options::default(),
    )
}

/// [`analyze_files_observed`] with [`Options`].
pub fn analyze_files_with(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
    observer: Option<Observer>,
    options: Options,
) -> Result<Analysis, InputError> {
    let started = std::time::Instant::now();
    let spec = attributor.spec().clone();
    let threads = std::env::var("LEAKGATE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    // LEAKGATE_CHUNK_BYTES (tests, benchmarks) forces chunking of smaller files.
    let forced: Option<u64> = std::env::var("LEAKGATE_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok());
    let (chunk_min, chunk) = forced.map_or((CHUNK_MIN, CHUNK), |c| (c, c));
    let mut inputs = Vec::with_capacity(files.len());
    for f in files {
        inputs.push(match parse::open_input(f)? {
            parse::Input::Mapped(m) if m.len() as u64 > chunk_min => {
                drop(m);
                let file = std::fs::File::open(f).map_err(|e| InputError::Io {
                    path: f.clone(),
                    err: e,
                })?;
                Slot::Chunked(file)
            }
            parse::Input::Mapped(m) => Slot::Mapped(Arc::new(m)),
            parse::Input::Stream(r) => Slot::Stream(std::sync::Mutex::new(Some(r))),
        });
    }
    // Plan the units; chunked files get their header read first.
    // A piece larger than this has no `<error>` line to cut it at (a file
    // on one line, a 1 GB line): it is read as a stream, never held whole.
    let too_big = chunk.saturating_mul(8);
    let mut units = Vec::new();
    let mut headers: Vec<Option<ProcessInfo>> = vec![None; files.len()];
    for i in 0..inputs.len() {
        let Slot::Chunked(file) = &inputs[i] else {
            units.push(Unit {
                file: i,
                range: None,
                stream: false,
            });
            continue;
        };
        let io = |e| InputError::Io {
            path: files[i].clone(),
            err: e,
        };
        let len = file.metadata().map_err(io)?.len();
        let first = next_error_line(file, 0, len.min(too_big + 1)).map_err(io)?;
        if first > too_big {
            // No `<error>` line near the start: not cut into chunks.
            let mut f = file.try_clone().map_err(io)?;
            std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).map_err(io)?;
            inputs[i] = Slot::Stream(std::sync::Mutex::new(Some(Box::new(
                std::io::BufReader::with_capacity(256 * 1024, f),
            ))));
            units.push(Unit {
                file: i,
                range: None,
                stream: false,
            });
            continue;
        }
        let head_bytes = std::io::BufReader::new(RangeReader {
            file,
            pos: 0,
            end: first,
        });
        let mut scratch = Interner::default();
        let mut head = parse::parse_chunk_stream(
            head_bytes,
            0,
            None,
            &files[i],
            i,
            &mut scratch,
            &mut |_, _| {},
        )?;
        head.finalize();
        headers[i] = Some(head.process);
        let mut start = 0u64;
        while start < len {
            let end = if len - start <= chunk {
                len
            } else {
                next_error_line(file, start.max(first) + chunk, len).map_err(io)?
            };
            let end = end.max(start + 1).min(len);
            units.push(Unit {
                file: i,
                range: Some((start as usize, end as usize)),
                stream: end - start > too_big,
            });
            start = end;
        }
    }
    let supps = suppressor.suppressions().to_vec();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = threads.min(units.len()).max(1);
    let mut master = Aggregator::new(Attributor::new(spec.clone()), suppressor.clone());
    let mut processes = Vec::with_capacity(files.len());
    let mut pending: Vec<parse::FileSummary> = Vec::new();
    // Results are merged in unit order as they arrive, so at most about
    // `workers` unit results are held at once.
    let mut fold = |u: usize, mut out: UnitOut| {
        let unit = &units[u];
        // Snapshot records count the messages of their own chunk only.
        let before: usize = pending
            .iter()
            .map(|p| p.process.client_messages.len())
            .sum();
        if before > 0 {
            for s in &mut out.agg.snaps {
                s.msgs += before as u32;
            }
            for e in &mut out.agg.err_marks {
                e.1 += before as u32;
            }
        }
        master.merge(out.agg);
        pending.push(out.sum);
        let last_of_file = units.get(u + 1).is_none_or(|n| n.file != unit.file);
        if last_of_file {
            let mut sum = combine(std::mem::take(&mut pending));
            sum.finalize();
            master.apply_error_counts(unit.file, &sum.error_counts);
            let mut info = sum.process;
            if let Some(pid) = info.pid
                && let Some(e) = exits.get(&pid)
            {
                info.exit = Some(e.clone());
            }
            if info.exit.is_none()
                && let Some(sig) = &info.fatal_signal
            {
                info.exit = Some(ExitStatus::Signal(sig.clone()));
            }
            processes.push(info);
        }
    };
    let mut first_error: Option<InputError> = None;
    {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<UnitOut, InputError>)>();
        let (units_ref, inputs_ref, headers_ref, spec_ref, supps_ref) =
            (&units, &inputs, &headers, &spec, &supps);
        let next_ref = &next;
        let observer_ref = &observer;
        std::thread::scope(|sc| {
            for _ in 0..workers {
                let tx = tx.clone();
                sc.spawn(move || {
                    // Per worker, kept across its units: the matcher's
                    // per-name caches and the interned names stay warm.
                    let suppressor = Arc::new(Suppressor::new(supps_ref.to_vec()));
                    let mut interner = Interner::default();
                    loop {
                        let u = next_ref.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(unit) = units_ref.get(u) else { break };
                        let shared = Shared {
                            inputs: inputs_ref,
                            headers: headers_ref,
                            files,
                            spec: spec_ref,
                            observer: observer_ref,
                            options,
                        };
                        let out = run_unit(unit, &shared, &suppressor, &mut interner);
                        if tx.send((u, out)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut waiting: std::collections::BTreeMap<usize, Result<UnitOut, InputError>> =
                Default::default();
            let mut want = 0usize;
            for (u, out) in rx {
                waiting.insert(u, out);
                while let Some(out) = waiting.remove(&want) {
                    match out {
                        Ok(o) if first_error.is_none() => fold(want, o),
                        Ok(_) => {}
                        Err(e) => {
                            if first_error.is_none() {
                                first_error = Some(e);
                                // Stop handing out work.
                                next_ref
                                    .store(usize::MAX / 2, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                    want += 1;
                }
            }
        });
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let analysis = master.finish(processes);
    if std::env::var_os("LEAKGATE_TIMINGS").is_some() {
        let t = analysis.timings;
        eprintln!(
            "leakgate timings: total {:.3}s, attribute {:.3}s, suppress {:.3}s (summed over {} units on {} threads) ({} records, {} rules), peak RSS {} KiB",
            started.elapsed().as_secs_f64(),
            t.attribute.as_secs_f64(),
            t.suppress.as_secs_f64(),
            units.len(),
            workers,
            analysis.summary.records,
            analysis.supp_used.len(),
            peak_rss_kib().map_or_else(|| "?".to_string(), |k| k.to_string())
        );
    }
    Ok(analysis)
}

/// What every unit of one analysis reads.
struct Shared<'s> {
    inputs: &'s [Slot],
    headers: &'s [Option<ProcessInfo>],
    files: &'s [PathBuf],
    spec: &'s crate::attribute::UserSpec,
    observer: &'s Option<Observer>,
    options: Options,
}

/// Parses and aggregates one unit with its own attributor, and the worker's
/// matcher and interner.
fn run_unit(
    unit: &Unit,
    shared: &Shared<'_>,
    suppressor: &Arc<Suppressor>,
    interner: &mut Interner,
) -> Result<UnitOut, InputError> {
    let Shared {
        inputs,
        headers,
        files,
        spec,
        observer,
        options,
    } = *shared;
    let mut agg = Aggregator::new(Attributor::new(spec.clone()), suppressor.clone());
    agg.observer = observer.clone();
    agg.options = options;
    let file = &files[unit.file];
    let pidx = unit.file;
    let mut sink = |rec, p: &ProcessInfo| agg.add(rec, p);
    let sum = match (&inputs[unit.file], unit.range) {
        (Slot::Chunked(f), Some((start, end))) => {
            let header = if start == 0 {
                None
            } else {
                headers[unit.file].as_ref()
            };
            if unit.stream {
                let r = RangeReader {
                    file: f,
                    pos: start as u64,
                    end: end as u64,
                };
                let r = std::io::BufReader::with_capacity(256 * 1024, r);
                let sum = parse::parse_chunk_stream(
                    r,
                    start as u64,
                    header,
                    file,
                    pidx,
                    interner,
                    &mut sink,
                )?;
                agg.processes = unit.file + 1;
                return Ok(UnitOut { agg, sum });
            }
            let buf = map_at(f, start as u64, end - start).map_err(|e| InputError::Io {
                path: file.clone(),
                err: e,
            })?;
            parse::parse_chunk(&buf, start as u64, header, file, pidx, interner, &mut sink)?
        }
        (Slot::Mapped(map), _) => parse::parse_slice(map, file, pidx, interner, &mut sink)?,
        (Slot::Stream(r), _) => {
            let r = r
                .lock()
                .expect("input lock")
                .take()
                .expect("a stream is read by one unit");
            parse::parse_stream(r, file, pidx, interner, &mut sink)?
        }
        (Slot::Chunked(_), None) => unreachable!("chunked files are planned in ranges"),
    };
    agg.processes = unit.file + 1;
    Ok(UnitOut { agg, sum })
}

/// Converts process infos for the report.
pub fn processes_out(ps: &[ProcessInfo]) -> Vec<ProcessOut> {
    ps.iter()
        .map(|p| ProcessOut {
            pid: p.pid,
            ppid: p.ppid,
            command: p.command.clone(),
            complete: p.complete,
            exit: p.exit.clone(),
            xml: p.file.clone(),
            incomplete_reason: p.incomplete_reason.clone(),
            records: p.records,
            client_messages: p.client_messages.clone(),
            valgrind_args: p.valgrind_args.clone(),
            pre_exec: p.pre_exec,
            forked: p.forked,
        })
        .collect()
}
