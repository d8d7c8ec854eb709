//! Drives parse → attribute → (suppress) over a set of XML files and folds
//! the attributed records into findings: records with the same fingerprint
//! (and, for user findings, the same line) become one finding. Only the
//! findings are kept, never the records, so memory does not grow with the
//! report's size.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use crate::attribute::{Attribution, Attributor, Location};
use crate::model::{ExitStatus, Frame, ProcessInfo, Record};
use crate::parse::{self, InputError, Interner};
use crate::report::{Finding, FrameOut, ProcessOut, Summary};
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
}

struct Acc {
    finding: Finding,
    pids: BTreeSet<u64>,
}

/// Folds attributed records into findings.
pub struct Aggregator {
    attributor: Attributor,
    accs: Vec<Acc>,
    index: HashMap<(u64, Option<u32>), usize>,
    /// (process, unique id) → finding, for non-leak errors (their counts
    /// arrive at the end of the file in `<errorcounts>`).
    err_index: HashMap<(usize, u64), usize>,
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
}

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
            attributor,
            accs: Vec::new(),
            index: HashMap::new(),
            err_index: HashMap::new(),
            summary: Summary::default(),
            processes: 0,
        }
    }

    /// Registers a process before its records arrive; returns its index.
    pub fn add_process(&mut self) -> usize {
        self.processes += 1;
        self.processes - 1
    }

    /// Attributes one record, applies the suppressions, and folds it in.
    pub fn add(&mut self, rec: Record, process: &ProcessInfo) {
        self.summary.records += 1;
        *self
            .summary
            .records_by_kind
            .entry(rec.kind.to_string())
            .or_default() += 1;
        let t0 = std::time::Instant::now();
        let att = self.attributor.attribute(&rec);
        let t1 = std::time::Instant::now();
        self.timings.attribute += t1 - t0;
        if !self.suppressor.is_empty() {
            let set = match self.sets.get(&rec.process) {
                Some(s) => s.clone(),
                None => {
                    let s = self.suppressor.set_for(&process.valgrind_args);
                    self.sets.insert(rec.process, s.clone());
                    s
                }
            };
            let outcome = set.first_match(&rec);
            self.timings.suppress += t1.elapsed();
            match outcome {
                MatchOutcome::Suppressed(i) => {
                    self.supp_used[i] += 1;
                    if att.is_user() {
                        self.supp_hid_user[i] += 1;
                    }
                    self.summary.suppressed.records += 1;
                    *self
                        .summary
                        .suppressed
                        .by_suppression
                        .entry(set.suppressions()[i].name.clone())
                        .or_default() += 1;
                    return;
                }
                MatchOutcome::Undecidable(i) => {
                    self.supp_undecided[i] += 1;
                    self.summary.suppressed.undecidable += 1;
                }
                MatchOutcome::NotSuppressed => {}
            }
        }
        let (fp, line) = fingerprint(&rec, &att);
        let key = (fp, line);
        let idx = match self.index.get(&key) {
            Some(&i) => {
                let acc = &mut self.accs[i];
                acc.finding.records += 1;
                if rec.is_leak() {
                    acc.finding.count += 1;
                    *acc.finding.bytes.get_or_insert(0) += rec.leaked_bytes.unwrap_or(0);
                    *acc.finding.blocks.get_or_insert(0) += rec.leaked_blocks.unwrap_or(0);
                    *acc.finding.direct_bytes.get_or_insert(0) += direct_bytes(&rec);
                } else {
                    acc.finding.count += 1;
                }
                i
            }
            None => {
                let f = new_finding(&rec, &att, fp);
                self.accs.push(Acc {
                    finding: f,
                    pids: BTreeSet::new(),
                });
                let i = self.accs.len() - 1;
                self.index.insert(key, i);
                i
            }
        };
        if let Some(pid) = rec.pid {
            self.accs[idx].pids.insert(pid);
        }
        if !rec.is_leak()
            && let Some(u) = rec.unique
        {
            self.err_index.insert((rec.process, u), idx);
        }
    }

    /// Applies a file's `<errorcounts>`: each error context's occurrences.
    pub fn apply_error_counts(&mut self, process: usize, counts: &[(u64, u64)]) {
        for (u, c) in counts {
            if let Some(&i) = self.err_index.get(&(process, *u))
                && *c > 1
            {
                self.accs[i].finding.count += c - 1;
            }
        }
    }

    /// Finishes: findings sorted (user first, then by kind severity and bytes),
    /// source lines read, summary filled in.
    pub fn finish(self, processes: Vec<ProcessInfo>) -> Analysis {
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
        let mut findings: Vec<Finding> = self
            .accs
            .into_iter()
            .map(|mut a| {
                a.finding.pids = a.pids.into_iter().collect();
                a.finding
            })
            .collect();
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
                        bb.bytes += f.direct_bytes.unwrap_or(0);
                        bb.blocks += f.blocks.unwrap_or(0);
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
                *summary.noise.bytes_by_source.entry(label).or_default() += f.bytes.unwrap_or(0);
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
        }
    }
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
    let location = att.owner.filter(|_| user).map(|i| {
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

/// Reads source lines, caching each file's content once.
#[derive(Default)]
struct SourceLines {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceLines {
    fn get(&mut self, path: &Path, line: u32) -> Option<String> {
        let content = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = std::fs::read(path).ok()?;
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

/// Parses and analyses `files` in order. `exits` gives the known exit status
/// of processes by pid (the target leakgate started).
pub fn analyze_files(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
) -> Result<Analysis, InputError> {
    let started = std::time::Instant::now();
    let mut agg = Aggregator::new(attributor, suppressor);
    let mut interner = Interner::default();
    let mut processes = Vec::new();
    for file in files {
        let input = parse::open_input(file)?;
        let pidx = agg.add_process();
        let mut sink = |rec, p: &ProcessInfo| agg.add(rec, p);
        let sum = match input {
            parse::Input::Mapped(map) => {
                parse::parse_slice(&map, file, pidx, &mut interner, &mut sink)?
            }
            parse::Input::Stream(r) => {
                parse::parse_stream(r, file, pidx, &mut interner, &mut sink)?
            }
        };
        agg.apply_error_counts(pidx, &sum.error_counts);
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
    let analysis = agg.finish(processes);
    if std::env::var_os("LEAKGATE_TIMINGS").is_some() {
        let t = analysis.timings;
        eprintln!(
            "leakgate timings: total {:.3}s, attribute {:.3}s, suppress {:.3}s, parse+rest {:.3}s ({} records, {} rules)",
            started.elapsed().as_secs_f64(),
            t.attribute.as_secs_f64(),
            t.suppress.as_secs_f64(),
            (started.elapsed() - t.attribute - t.suppress).as_secs_f64(),
            analysis.summary.records,
            analysis.supp_used.len()
        );
    }
    Ok(analysis)
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
        })
        .collect()
}
