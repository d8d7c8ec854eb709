//! The process table across a multi-process run (`--trace-children=yes`):
//! which XML document is the part of a process before it exec'd, which
//! process was forked without exec, and how a fork child's copy of its
//! parent's leaks is reported once, for the parent. Also the run-level
//! additions to an analysis: exit statuses, the signals leakgate sent
//! (timeout, Ctrl-C), and PyTorch's CUDA-IPC producer warning.
//!
//! Valgrind 3.19 facts this relies on (spec §1.7, verified on this machine):
//! with `--xml-file=vg.%p.%n.xml` a fork child opens its own document with a
//! sequence number of 2 or more (the counter is inherited and advanced), and
//! a traced exec starts a fresh Valgrind whose counter restarts at 1, so the
//! post-exec document never overwrites the pre-exec one. The pre-exec part
//! stops at the exec without FINISHED or a closing tag; nothing is missing.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::kind::{CUDA_IPC_ADVICE, CUDA_IPC_TEXT, Kind};
use crate::model::ProcessInfo;
use crate::report::{Category, Finding, StoppedOut, Summary};

/// The `%n` sequence number of a `vg.<pid>.<n>.xml` file name, if any.
fn seq_of(file: &str) -> Option<u64> {
    let base = file.rsplit('/').next().unwrap_or(file);
    let stem = base.strip_suffix(".zst").unwrap_or(base);
    let stem = stem.strip_suffix(".xml")?;
    let mut parts = stem.rsplit('.');
    let n = parts.next()?.parse().ok()?;
    let _pid: u64 = parts.next()?.parse().ok()?;
    Some(n)
}

/// Whether a (truncated) XML file has a `<status>` element: a fork child's
/// document never has one, a process started by exec always does.
fn has_status(file: &str) -> bool {
    if file.ends_with(".zst") {
        return true;
    }
    contains(Path::new(file), b"<status>").unwrap_or(true)
}

/// Whether the file holds `needle`, read a piece at a time (the file can be
/// as large as a report gets).
fn contains(path: &Path, needle: &[u8]) -> std::io::Result<bool> {
    use std::io::Read;
    let finder = memchr::memmem::Finder::new(needle);
    let mut f = std::fs::File::open(path)?;
    let keep = needle.len() - 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0;
    loop {
        let n = f.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(false);
        }
        have += n;
        if finder.find(&buf[..have]).is_some() {
            return Ok(true);
        }
        // Keep the tail: the needle may straddle two reads.
        let from = have.saturating_sub(keep);
        buf.copy_within(from..have, 0);
        have -= from;
    }
}

/// Whether a process was read from a sanitizer log (`parse::parse_sanitizer_log`):
/// its cut-off report is never a fork child's pre-exec part.
fn is_sanitizer_log(p: &ProcessInfo) -> bool {
    matches!(p.tool.as_deref(), Some("lsan" | "asan"))
}

/// Marks pre-exec parts and fork children.
///
/// * Several documents with one pid: the process exec'd. The post-exec
///   document is the complete one (else the lowest `%n`); the others are
///   pre-exec parts: complete (nothing is missing), `pre_exec`.
/// * A single truncated document without any record and without a status
///   element: a fork child that exec'd a program Valgrind does not trace
///   (`--trace-children-skip`) — also a pre-exec part (never a sanitizer
///   log: one cut off before its first record stays incomplete).
/// * A document whose parent is a traced process with the same command
///   line, that is not a pre-exec part: forked without exec.
pub fn classify(ps: &mut [ProcessInfo]) {
    let mut by_pid: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, p) in ps.iter().enumerate() {
        if let Some(pid) = p.pid {
            by_pid.entry(pid).or_default().push(i);
        }
    }
    let mut pre_exec = vec![false; ps.len()];
    for idxs in by_pid.values().filter(|v| v.len() > 1) {
        let complete: Vec<usize> = idxs.iter().copied().filter(|&i| ps[i].complete).collect();
        let last = if complete.len() == 1 {
            complete[0]
        } else {
            *idxs
                .iter()
                .min_by_key(|&&i| seq_of(&ps[i].file).unwrap_or(u64::MAX))
                .expect("non-empty")
        };
        for &i in idxs {
            pre_exec[i] = i != last;
        }
    }
    for (i, p) in ps.iter().enumerate() {
        if !pre_exec[i]
            && !p.complete
            && p.records == 0
            && p.pid.is_some_and(|pid| by_pid[&pid].len() == 1)
            && !is_sanitizer_log(p)
            && !has_status(&p.file)
        {
            pre_exec[i] = true;
        }
    }
    for (i, p) in ps.iter_mut().enumerate() {
        if pre_exec[i] {
            p.pre_exec = true;
            p.complete = true;
            p.incomplete_reason = None;
        }
    }
    // Forked without exec: same command line as the traced parent.
    let parents: HashMap<u64, Vec<String>> = ps
        .iter()
        .filter(|p| !p.pre_exec)
        .filter_map(|p| Some((p.pid?, p.command.clone())))
        .collect();
    for p in ps.iter_mut().filter(|p| !p.pre_exec) {
        if let Some(cmd) = p.ppid.and_then(|pp| parents.get(&pp))
            && *cmd == p.command
        {
            p.forked = true;
        }
    }
}

/// A fork child (no exec) inherits its parent's heap, so a leak the parent
/// made before the fork is in both XML files. For every leak finding, the
/// child's bytes and blocks minus the parent's (same finding: same kind and
/// same stack functions) are its own; when nothing remains the child's part
/// is purely inherited: it is taken out of the finding's totals and `pids`
/// and the child is listed in `inherited_by`. When something remains only
/// the inherited share is taken out, and the child is listed in both.
/// `records` is left as read (the invariant with `summary.records`).
pub fn fold_fork_inherited(findings: &mut [Finding], ps: &[ProcessInfo]) {
    let forked: HashMap<u64, u64> = ps
        .iter()
        .filter(|p| p.forked)
        .filter_map(|p| Some((p.pid?, p.ppid?)))
        .collect();
    if forked.is_empty() {
        return;
    }
    for f in findings.iter_mut().filter(|f| f.is_leak()) {
        let before: BTreeMap<u64, (u64, u64, u64)> = f
            .processes
            .iter()
            .map(|e| {
                (
                    e.pid,
                    (
                        e.bytes.unwrap_or(0),
                        e.blocks.unwrap_or(0),
                        e.direct_bytes.unwrap_or(0),
                    ),
                )
            })
            .collect();
        let mut drop_pids = Vec::new();
        for e in f.processes.iter_mut() {
            let Some(parent) = forked.get(&e.pid) else {
                continue;
            };
            let Some(&(pb, pk, pd)) = before.get(parent) else {
                continue;
            };
            let (cb, ck, cd) = before[&e.pid];
            let (ib, ik, id) = (cb.min(pb), ck.min(pk), cd.min(pd));
            if ib == 0 && ik == 0 {
                continue;
            }
            for (x, y) in [
                (&mut f.bytes, ib),
                (&mut f.blocks, ik),
                (&mut f.direct_bytes, id),
            ] {
                if let Some(x) = x {
                    *x = x.saturating_sub(y);
                }
            }
            e.bytes = Some(cb - ib);
            e.blocks = Some(ck - ik);
            e.direct_bytes = Some(cd - id);
            f.inherited_by.push(e.pid);
            if cb == ib && ck == ik {
                f.count = f.count.saturating_sub(e.count);
                drop_pids.push(e.pid);
            }
        }
        if !drop_pids.is_empty() {
            f.pids.retain(|p| !drop_pids.contains(p));
            f.processes.retain(|e| !drop_pids.contains(&e.pid));
        }
        f.inherited_by.sort_unstable();
    }
}

/// `FatalSignal` findings caused by the signals leakgate itself sent
/// (`--timeout`, Ctrl-C) are not crashes: they become noise labelled
/// `leakgate`. Returns how many were re-labelled.
pub fn relabel_own_signals(findings: &mut [Finding], sent: &[String]) -> usize {
    let mut n = 0;
    for f in findings.iter_mut().filter(|f| f.kind == Kind::FatalSignal) {
        if sent.iter().any(|s| f.message.contains(s.as_str())) {
            f.category = Category::Noise;
            f.source = Some("leakgate".into());
            f.gated = None;
            n += 1;
        }
    }
    n
}

/// One `CudaIpcProducerExited` finding per process that printed PyTorch's
/// warning: `(pid, the line as printed, how many times)`.
pub fn cuda_ipc_findings(hits: &[(u64, String, u64)]) -> Vec<Finding> {
    hits.iter()
        .map(|(pid, line, n)| Finding {
            fingerprint: format!(
                "{:016x}",
                crate::util::fnv1a_parts(&[Kind::CudaIpcProducerExited.as_str(), CUDA_IPC_TEXT])
            ),
            kind: Kind::CudaIpcProducerExited,
            category: Category::User,
            source: None,
            message: line.trim().to_string(),
            bytes: None,
            direct_bytes: None,
            blocks: None,
            count: *n,
            location: None,
            source_line: None,
            stack: Vec::new(),
            origin: None,
            pids: vec![*pid],
            records: 0,
            aux: vec![format!("printed on standard error by pid {pid}")],
            aux_stacks: Vec::new(),
            gated: None,
            baseline: None,
            processes: vec![crate::report::FindingProcess {
                pid: *pid,
                records: 0,
                count: *n,
                ..Default::default()
            }],
            inherited_by: Vec::new(),
            advice: Some(CUDA_IPC_ADVICE.into()),
            reason: None,
            location_note: None,
            tests: Vec::new(),
            growth: None,
            per_call: None,
            fails: false,
            at_import: false,
            indirect_of: None,
            indirect_parts: Vec::new(),
        })
        .collect()
}

/// Inserts `extra` after the last user finding (findings are user first).
pub fn insert_user_findings(findings: &mut Vec<Finding>, extra: Vec<Finding>) {
    let at = findings.iter().take_while(|f| f.is_user()).count();
    findings.splice(at..at, extra);
}

/// What the run itself (not the XML) knows.
pub struct RunFacts<'a> {
    /// leakgate stopped the run (timeout, Ctrl-C).
    pub stopped: Option<&'a StoppedOut>,
    /// Children outlived the target and were stopped.
    pub stopped_children: Option<&'a str>,
    /// PyTorch's CUDA-IPC producer warning: (pid, line, times).
    pub cuda_ipc: &'a [(u64, String, u64)],
}

/// Adds what the run knows to the analysis: a stopped run is incomplete
/// (a problem: exit 3 unless a gated finding gives 1) and the crashes its
/// signals caused are not the user's; CUDA-IPC warnings become findings;
/// the summary is recomputed.
pub fn after_run(
    findings: &mut Vec<Finding>,
    summary: &mut Summary,
    facts: &RunFacts<'_>,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let mut sent: Vec<String> = Vec::new();
    if let Some(s) = facts.stopped {
        problems.push(s.detail.clone());
        sent.extend(s.signals_sent.iter().cloned());
    }
    if let Some(c) = facts.stopped_children {
        notes.push(c.to_string());
        sent.push("SIGTERM".into());
    }
    let n = relabel_own_signals(findings, &sent);
    if n > 0 {
        notes.push(format!(
            "{n} fatal-signal record(s) caused by the signals leakgate sent ({}) are listed as noise (source `leakgate`), not as crashes",
            sent.join(", ")
        ));
        // Keep user findings first.
        findings.sort_by_key(|f| !f.is_user());
    }
    if !facts.cuda_ipc.is_empty() {
        insert_user_findings(findings, cuda_ipc_findings(facts.cuda_ipc));
    }
    let inherited: usize = findings
        .iter()
        .filter(|f| !f.inherited_by.is_empty())
        .count();
    if inherited > 0 {
        notes.push(format!(
            "{inherited} leak finding(s) also appear in fork children that inherited the parent's heap; each is reported once, for the parent (see inherited_by)"
        ));
    }
    super::summary::summarize(summary, findings);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FindingProcess;

    fn proc(file: &str, pid: u64, ppid: u64, cmd: &str, complete: bool) -> ProcessInfo {
        ProcessInfo {
            file: file.into(),
            pid: Some(pid),
            ppid: Some(ppid),
            command: vec![cmd.into()],
            complete,
            incomplete_reason: (!complete).then(|| "truncated".into()),
            records: 1,
            ..Default::default()
        }
    }

    #[test]
    fn sequence_numbers() {
        assert_eq!(seq_of("/tmp/x/vg.123.2.xml"), Some(2));
        assert_eq!(seq_of("vg.123.xml"), None);
        assert_eq!(seq_of("/a.b/vg.7.1.xml.zst"), Some(1));
    }

    #[test]
    fn exec_parts_and_forks() {
        let mut ps = vec![
            proc("vg.10.1.xml", 10, 1, "python", true),
            proc("vg.11.2.xml", 11, 10, "python", false),
            proc("vg.11.1.xml", 11, 10, "spawn", true),
            proc("vg.12.2.xml", 12, 10, "python", true),
        ];
        classify(&mut ps);
        assert!(ps[1].pre_exec && ps[1].complete);
        assert!(!ps[2].pre_exec && !ps[2].forked);
        assert!(ps[3].forked && !ps[3].pre_exec);
        assert!(!ps[0].forked);
    }

    #[test]
    fn inherited_leak_is_reported_once() {
        let ps = {
            let mut v = vec![
                proc("vg.10.1.xml", 10, 1, "python", true),
                proc("vg.12.2.xml", 12, 10, "python", true),
            ];
            classify(&mut v);
            v
        };
        let entry = |pid, bytes| FindingProcess {
            pid,
            records: 1,
            count: 1,
            bytes: Some(bytes),
            blocks: Some(1),
            direct_bytes: Some(bytes),
            xml: None,
        };
        let mut f = cuda_ipc_findings(&[(1, String::new(), 1)]).remove(0);
        f.kind = "Leak_DefinitelyLost".into();
        f.bytes = Some(96);
        f.direct_bytes = Some(96);
        f.blocks = Some(2);
        f.count = 2;
        f.records = 2;
        f.pids = vec![10, 12];
        f.processes = vec![entry(10, 48), entry(12, 48)];
        let mut fs = vec![f];
        fold_fork_inherited(&mut fs, &ps);
        assert_eq!(fs[0].pids, vec![10]);
        assert_eq!(fs[0].inherited_by, vec![12]);
        assert_eq!(fs[0].bytes, Some(48));
        assert_eq!(fs[0].blocks, Some(1));
        assert_eq!(fs[0].records, 2);
    }
}
