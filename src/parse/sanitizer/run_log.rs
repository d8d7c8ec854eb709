//! A sanitizer log written under `leakgate run --engine lsan|asan`, where
//! the probe adds its own lines among the runtime's reports:
//!
//! - `leakgate-process {"pid", "ppid", "argv", "forked"}`: who the process
//!   is (the `<pid>`, `<ppid>` and `<argv>` of Valgrind's XML);
//! - `leakgate-checkpoint {...}`, a report, `leakgate-checkpoint-end`: a
//!   checkpoint (the marker is the process's next `<clientmsg>`) and the
//!   report `__lsan_do_recoverable_leak_check` printed there.
//!
//! LeakSanitizer reports every leak found so far at each check, where
//! Memcheck's changed-leak check (what the Valgrind engine's checkpoints
//! take) reports only what changed, with the change: `48 (+48) bytes in 1
//! (+1) blocks`. This turns each checkpoint's report into that form (the
//! difference from the previous check, by kind and allocation stack; a
//! `start` checkpoint only sets the baseline), so `analyze::checkpoints`
//! ties leaks to tests the same way for both engines. A report outside a
//! checkpoint is the final check (at exit, or before `os._exit`): its
//! records pass as they are.

use std::collections::HashMap;
use std::path::Path;

use super::{parse_reports, report_offsets};
use crate::model::{ExitStatus, ProcessInfo, Record};
use crate::parse::{FileSummary, InputError, Interner};
use crate::probe::{FORKED_PREFIX, MARKER_PREFIX, PROCESS_PREFIX, SANITIZER_END};

/// One line of the probe's, at its byte offset.
enum Line {
    Marker(String),
    End,
    Process(serde_json::Value),
    /// A forked checker's report that never came (`run::checkers`).
    Forked,
}

fn probe_lines(input: &[u8]) -> Vec<(usize, Line)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    for raw in input.split(|&b| b == b'\n') {
        let start = at;
        at += raw.len() + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            continue;
        };
        let line = line.trim_end_matches('\r');
        if line == SANITIZER_END {
            out.push((start, Line::End));
        } else if line.starts_with(FORKED_PREFIX) {
            out.push((start, Line::Forked));
        } else if line.starts_with(MARKER_PREFIX) {
            out.push((start, Line::Marker(line.to_string())));
        } else if let Some(json) = line.strip_prefix(PROCESS_PREFIX)
            && let Ok(v) = serde_json::from_str(json)
        {
            out.push((start, Line::Process(v)));
        }
    }
    out
}

/// Where a report stands: inside checkpoint `n` (1-based: the markers up
/// to and including its own), a `start` one, or outside any (final).
struct Place {
    markers: u32,
    snapshot: bool,
    start: bool,
}

/// What a loss record is across reports: its kind and allocation stack.
/// A leak's site: its kind and its stack's functions.
type Site = (String, Vec<Option<String>>);

fn site(rec: &Record) -> Site {
    (
        rec.kind.to_string(),
        rec.stack
            .iter()
            .map(|f| {
                f.ip.as_deref()
                    .map(str::to_string)
                    .or_else(|| f.func.as_deref().map(str::to_string))
            })
            .collect(),
    )
}

fn lost_word(kind: &str) -> &'static str {
    if kind == "Leak_IndirectlyLost" {
        "indirectly"
    } else {
        "definitely"
    }
}

/// Parses a log of `leakgate run --engine lsan|asan` (see the module
/// header); a log without the probe's lines is read as it is.
pub fn parse_run_log(
    input: &[u8],
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    let lines = probe_lines(input);
    if lines.is_empty() {
        return last_leak_reports(input, path, process_index, interner, sink);
    }
    let offsets = report_offsets(input);
    let places: Vec<Place> = offsets
        .iter()
        .map(|&off| {
            let before: Vec<&(usize, Line)> = lines.iter().filter(|(o, _)| *o < off).collect();
            let markers = before
                .iter()
                .filter(|(_, l)| matches!(l, Line::Marker(_)))
                .count() as u32;
            let last = before
                .iter()
                .rev()
                .find(|(_, l)| matches!(l, Line::Marker(_) | Line::End));
            let (snapshot, start) = match last {
                Some((_, Line::Marker(m))) => (
                    true,
                    crate::parse::parse_marker(m).is_some_and(|m| m.kind == "start"),
                ),
                _ => (false, false),
            };
            Place {
                markers,
                snapshot,
                start,
            }
        })
        .collect();
    let mut records: Vec<Record> = Vec::new();
    let mut sum = parse_reports(input, path, process_index, interner, &mut |r, _| {
        records.push(r)
    })?;
    let p = &mut sum.process;
    let mut lost = 0u32;
    for (_, l) in &lines {
        match l {
            Line::Marker(m) => p.client_messages.push(m.clone()),
            Line::Process(v) => {
                if let Some(pid) = v["pid"].as_u64() {
                    p.pid = Some(pid);
                }
                p.ppid = v["ppid"].as_u64().or(p.ppid);
                if let Some(argv) = v["argv"].as_array() {
                    p.command = argv
                        .iter()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect();
                }
                p.forked |= v["forked"].as_bool().unwrap_or(false);
            }
            Line::End => {}
            Line::Forked => {
                lost += 1;
            }
        }
    }
    if lost > 0 && sum.problem.is_none() {
        // `finalize` makes the process incomplete with this reason.
        sum.problem = Some(format!(
            "the leak check{} of {lost} checkpoint{} ran in a forked copy of the process \
             that ended before writing its report (killed?): leaks cannot be tied to tests",
            if lost == 1 { "" } else { "s" },
            if lost == 1 { "" } else { "s" },
        ));
        sum.finalize();
    }
    // The exit check after the last checkpoint of a per-test run: what grew
    // since that checkpoint gets a snapshot of its own (kind `exit`), so
    // that a leak first seen there (an object the garbage collector listed
    // until the probe's exit hook took it out) is told from one made before
    // the first test (at import), which the start checkpoint had already.
    let total = sum.process.client_messages.len() as u32;
    let exit_at = places
        .iter()
        .position(|p| !p.snapshot && p.markers == total && total > 0);
    if exit_at.is_some() {
        sum.process.client_messages.push(format!(
            "{MARKER_PREFIX}{{\"v\":1,\"kind\":\"exit\",\"label\":\"at exit (the runtime's exit check: leaks of objects the garbage collector listed show here)\",\"seq\":{}}}",
            total + 1
        ));
    }
    let process = sum.process.clone();
    // The previous check's totals by site; what a snapshot changed.
    let mut previous: HashMap<Site, (u64, u64)> = HashMap::new();
    let mut by_report: Vec<Vec<Record>> = (0..offsets.len()).map(|_| Vec::new()).collect();
    for r in records {
        let i = r.client_msgs as usize;
        if let Some(v) = by_report.get_mut(i) {
            v.push(r);
        }
    }
    let mut emitted = 0u64;
    for (i, recs) in by_report.into_iter().enumerate() {
        let place = &places[i];
        if !place.snapshot {
            let mut finals = place.markers;
            if exit_at == Some(i) {
                finals += 1;
                emitted += emit_changes(&recs, &mut previous, finals, &process, sink);
            }
            for mut r in recs {
                r.client_msgs = finals;
                emitted += 1;
                sink(r, &process);
            }
            continue;
        }
        if place.start {
            previous = totals(&recs).0;
        } else {
            emitted += emit_changes(&recs, &mut previous, place.markers, &process, sink);
        }
    }
    sum.process.records = emitted;
    Ok(sum)
}

/// The totals of a report by site, and the first record of each site.
fn totals(recs: &[Record]) -> (HashMap<Site, (u64, u64)>, Vec<Record>) {
    let mut now: HashMap<Site, (u64, u64)> = HashMap::new();
    let mut firsts: Vec<Record> = Vec::new();
    for r in recs {
        let e = now.entry(site(r)).or_default();
        if e.0 == 0 && e.1 == 0 {
            firsts.push(r.clone());
        }
        e.0 += r.leaked_bytes.unwrap_or(0);
        e.1 += r.leaked_blocks.unwrap_or(0);
    }
    (now, firsts)
}

/// Emits what changed since `previous` as Memcheck's changed-leak records
/// (`48 (+48) bytes in 1 (+1) blocks ...`) after marker `markers`, and
/// makes this report the previous one; returns how many were emitted.
fn emit_changes(
    recs: &[Record],
    previous: &mut HashMap<Site, (u64, u64)>,
    markers: u32,
    process: &ProcessInfo,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> u64 {
    let (now, firsts) = totals(recs);
    let n = firsts.len();
    let mut emitted = 0;
    for (k, mut r) in firsts.into_iter().enumerate() {
        let key = site(&r);
        let (bytes, blocks) = now[&key];
        let (pb, pk) = previous.get(&key).copied().unwrap_or((0, 0));
        if (bytes, blocks) == (pb, pk) {
            continue;
        }
        let db = bytes as i64 - pb as i64;
        let dk = blocks as i64 - pk as i64;
        r.what = format!(
            "{bytes} ({db:+}) bytes in {blocks} ({dk:+}) blocks are {} lost in loss record {} of {n}",
            lost_word(&r.kind),
            k + 1
        );
        r.leaked_bytes = Some(bytes);
        r.leaked_blocks = Some(blocks);
        r.client_msgs = markers;
        emitted += 1;
        sink(r, process);
    }
    *previous = now;
    emitted
}

/// A log without the probe's lines: each leak report of a process lists
/// every leak found so far (a recoverable check prints one, the exit check
/// the last), so only a process's last leak report counts; a leak an
/// earlier one listed and the last does not was freed in between. Error
/// reports (AddressSanitizer's, each one error) all count.
fn last_leak_reports(
    input: &[u8],
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    let mut records: Vec<(Record, ProcessInfo)> = Vec::new();
    let mut sum = parse_reports(input, path, process_index, interner, &mut |r, p| {
        records.push((r, p.clone()))
    })?;
    // The last leak report of each pid.
    let mut last: HashMap<Option<u64>, u32> = HashMap::new();
    for (r, _) in &records {
        if r.is_leak() {
            let e = last.entry(r.pid).or_insert(r.client_msgs);
            *e = (*e).max(r.client_msgs);
        }
    }
    let mut kept = 0u64;
    for (r, p) in records {
        if r.is_leak() && last.get(&r.pid) != Some(&r.client_msgs) {
            continue;
        }
        kept += 1;
        sink(r, &p);
    }
    sum.process.records = kept;
    Ok(sum)
}

/// A sanitizer process that died of a signal never ran its exit-time leak
/// check: its log, however complete it looks, does not hold it.
pub fn mark_killed(p: &mut ProcessInfo) {
    if let Some(ExitStatus::Signal(s)) = &p.exit
        && p.complete
    {
        p.complete = false;
        p.incomplete_reason = Some(format!(
            "killed by {s}: the sanitizer's leak check at exit did not run"
        ));
    }
}
