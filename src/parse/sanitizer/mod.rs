//! Stage 2 for the second engine: the text reports of gcc's and clang's
//! LeakSanitizer and AddressSanitizer, read into the same [`Record`]s the
//! XML reader makes (see `docs/sanitizer-logs.md`), so attribution,
//! suppressions, the gate and the renderers work unchanged.
//!
//! A log holds any number of reports (`==PID==ERROR: LeakSanitizer: ...`
//! or `==PID==ERROR: AddressSanitizer: ...`, up to its `SUMMARY:` line)
//! among other output: a `log_path` file, a program's stderr, a CI log
//! whose lines carry a prefix (a GitHub Actions timestamp: digits may
//! differ from line to line, the rest of the prefix may not).
//!
//! - A leak entry is a `Leak_DefinitelyLost` (`Direct leak`) or
//!   `Leak_IndirectlyLost` (`Indirect leak`) record with Valgrind's `what`
//!   (`64 bytes in 1 blocks are definitely lost in loss record 1 of 5`).
//! - An AddressSanitizer error is one record of a Memcheck kind
//!   (`InvalidRead`, `InvalidFree`, `MismatchedFree`, `FatalSignal`, ...);
//!   its `what` is Valgrind's wording followed by the sanitizer's own
//!   headline in parentheses: `Invalid read of size 1 (AddressSanitizer:
//!   heap-use-after-free on address 0x602000000013)`. Its `freed by` and
//!   `allocated by` stacks are `aux` entries with Valgrind's texts.
//! - Stacks start as Valgrind's do: the sanitizer's interceptor frames are
//!   replaced by one frame named after the function the program called
//!   (`malloc`, `free`, `operator new(unsigned long)`), in the runtime's
//!   object when the log names it. A symbolised frame's object is not
//!   printed: it is inferred from the `(module+0xoffset)` frames of the
//!   same log (the nearest load address below it), else left `None`.
//!   Frames printed without symbols are symbolised with `addr2line`
//!   (`symbolize`).
//! - Reports are snapshots: every record's `client_msgs` is the index
//!   (0, 1, ...) of the report it came from, and [`report_offsets`] gives
//!   the byte offset of each report's header line. `unique` numbers the
//!   log's records from 0; `tid` is the sanitizer's thread number plus one
//!   (Valgrind numbers the main thread 1, the sanitizers T0).
//! - The summary: `tool` `lsan` or `asan` (a report or `SUMMARY:` line of
//!   AddressSanitizer), the pid of the first report, no command. The log is
//!   complete when every report that started reached its `SUMMARY:` line;
//!   a report cut off mid-way, or a fatal error of the sanitizer itself
//!   (`LeakSanitizer has encountered a fatal error`, ...), makes it
//!   incomplete with the reason, and the complete records before the cut
//!   are still delivered. A log with no report is complete and empty.

mod frames;
mod kinds;
mod report;
mod run_log;
mod symbolize;

pub use run_log::{mark_killed, parse_run_log as parse_sanitizer_log};

use std::path::Path;

use super::input::InputError;
use super::summary::{FileSummary, Interner};
use crate::model::{AuxInfo, Frame, ProcessInfo, Record};
use frames::{ModuleMap, RawFrame, trim_runtime};
use report::{Pending, Report, parse_report};

/// Whether `head` (the start of a file, or all of it) holds a sanitizer
/// report, its summary line or one of the sanitizer's fatal errors; never
/// for Valgrind XML.
pub fn looks_like_sanitizer_log(head: &[u8]) -> bool {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let t = &head[start..];
    let t = t.strip_prefix(b"\xef\xbb\xbf").unwrap_or(t);
    if t.starts_with(b"<?xml")
        || t.starts_with(b"<valgrindoutput")
        || super::input::looks_like_json(t)
    {
        return false;
    }
    const MARKS: &[&[u8]] = &[
        b"==ERROR: LeakSanitizer:",
        b"==ERROR: AddressSanitizer:",
        b"SUMMARY: LeakSanitizer:",
        b"SUMMARY: AddressSanitizer:",
        b"LeakSanitizer has encountered a fatal error",
        b"ASan runtime does not come first in initial library list",
        // What the probe writes into a log of `leakgate run --engine lsan`.
        b"leakgate-process {",
        b"leakgate-checkpoint {",
    ];
    MARKS.iter().any(|m| memchr::memmem::find(t, m).is_some())
}

/// Whether a log holds a sanitizer's `ERROR:` or `SUMMARY:` line (what a
/// report starts or ends with).
fn names_a_finding(input: &[u8]) -> bool {
    const MARKS: &[&[u8]] = &[
        b"ERROR: LeakSanitizer:",
        b"ERROR: AddressSanitizer:",
        b"SUMMARY: LeakSanitizer:",
        b"SUMMARY: AddressSanitizer:",
    ];
    MARKS
        .iter()
        .any(|m| memchr::memmem::find(input, m).is_some())
}

/// The byte offset of the line holding each report's `==PID==ERROR:`
/// header, in order (the start of report `i`, whose records carry
/// `client_msgs == i`).
pub fn report_offsets(input: &[u8]) -> Vec<usize> {
    split(input).reports.iter().map(|r| r.start).collect()
}

/// Parses a sanitizer log held in memory, calling `sink` for each record
/// (after the whole log was read: symbolisation needs every frame); the
/// reports as they are, without the probe's lines (see [`run_log`]).
fn parse_reports(
    input: &[u8],
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    Ok(parse_with(input, path, process_index, interner, sink, true))
}

/// `==PID==ERROR: ` at byte `at` of the line: (prefix length, pid, text after `ERROR: `).
fn header(line: &str) -> Option<(usize, u64, &str)> {
    let at = line.find("==ERROR: ")?;
    let rest = &line[at + "==ERROR: ".len()..];
    if !(rest.starts_with("LeakSanitizer:") || rest.starts_with("AddressSanitizer:")) {
        return None;
    }
    let before = &line[..at];
    let digits = before.bytes().rev().take_while(u8::is_ascii_digit).count();
    let open = before.len() - digits;
    if digits == 0 || !before[..open].ends_with("==") {
        return None;
    }
    let pid = before[open..].parse().ok()?;
    Some((open - 2, pid, rest))
}

/// The sanitizer's own failure, as one line, when `line` reports one.
fn fatal(line: &str) -> Option<String> {
    const MARKS: &[&str] = &[
        "LeakSanitizer has encountered a fatal error",
        "LeakSanitizer does not work under ptrace",
        "ASan runtime does not come first in initial library list",
        "Tracer caught signal",
        "Sanitizer CHECK failed",
        "AddressSanitizer: nested bug",
    ];
    let i = MARKS.iter().find_map(|m| line.find(m))?;
    let mut t = &line[i..];
    if let Some(h) = line[..i].rfind("HINT: ") {
        t = &line[h + "HINT: ".len()..];
    }
    Some(t.trim().trim_end_matches('.').to_string())
}

/// The rest of `line` after a prefix of `prefix`'s shape (the same bytes,
/// any digit where it has a digit).
fn strip_shape<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let (l, p) = (line.as_bytes(), prefix.as_bytes());
    if l.len() < p.len() {
        return None;
    }
    let same = l
        .iter()
        .zip(p)
        .all(|(a, b)| a == b || (a.is_ascii_digit() && b.is_ascii_digit()));
    if same { line.get(p.len()..) } else { None }
}

/// A log cut into its reports.
#[derive(Default)]
struct Split {
    reports: Vec<Report>,
    fatal: Vec<String>,
    asan: bool,
    fatal_pid: Option<u64>,
}

fn split(input: &[u8]) -> Split {
    let mut out = Split::default();
    let mut open: Option<(Report, String)> = None;
    let mut at = 0usize;
    let ends_clean = input.ends_with(b"\n");
    for raw in input.split_inclusive(|&b| b == b'\n') {
        let start = at;
        at += raw.len();
        let complete_line = raw.ends_with(b"\n") || ends_clean;
        let text = String::from_utf8_lossy(raw);
        let line = text.trim_end_matches(['\n', '\r']);
        if let Some((plen, pid, rest)) = header(line) {
            if !complete_line {
                break;
            }
            if let Some((r, _)) = open.take() {
                out.reports.push(r);
            }
            out.asan |= rest.starts_with("AddressSanitizer:");
            let r = Report {
                start,
                pid: Some(pid),
                header: rest.to_string(),
                ..Report::default()
            };
            open = Some((r, line[..plen].to_string()));
            continue;
        }
        if let Some(f) = fatal(line) {
            if !out.fatal.contains(&f) {
                out.fatal.push(f);
            }
            if out.fatal_pid.is_none()
                && let Some(h) = line.find("==")
                && let Some(end) = line[h + 2..].find("==")
            {
                out.fatal_pid = line[h + 2..h + 2 + end].parse().ok();
            }
        }
        let Some((r, prefix)) = open.as_mut() else {
            continue;
        };
        if !complete_line {
            break;
        }
        let Some(body) = strip_shape(line, prefix) else {
            continue;
        };
        if body.starts_with("SUMMARY: ") && body.contains("Sanitizer") {
            out.asan |= body.starts_with("SUMMARY: AddressSanitizer");
            r.ended = true;
            if let Some((r, _)) = open.take() {
                out.reports.push(r);
            }
            continue;
        }
        r.lines.push(body.to_string());
    }
    if let Some((r, _)) = open.take() {
        out.reports.push(r);
    }
    out
}

/// [`parse_sanitizer_log`], with `addr2line` used or not (tests).
fn parse_with(
    input: &[u8],
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
    use_addr2line: bool,
) -> FileSummary {
    let log = split(input);
    let mut sum = FileSummary::default();
    sum.process.file = path.display().to_string();
    sum.process.tool = Some(if log.asan { "asan" } else { "lsan" }.to_string());
    sum.process.pid = log.reports.first().and_then(|r| r.pid).or(log.fatal_pid);
    sum.closed = true;
    sum.saw_finished = true;
    let mut pending: Vec<(usize, Option<u64>, Pending)> = Vec::new();
    let mut cut = false;
    for (i, r) in log.reports.iter().enumerate() {
        let parsed = parse_report(r);
        cut |= !r.ended;
        sum.partial_record |= parsed.partial;
        pending.extend(parsed.records.into_iter().map(|p| (i, r.pid, p)));
    }
    if use_addr2line {
        let mut stacks: Vec<&mut Vec<RawFrame>> = Vec::new();
        for (_, _, p) in pending.iter_mut() {
            stacks.push(&mut p.stack);
            stacks.extend(p.aux.iter_mut().map(|a| &mut a.1));
        }
        symbolize::symbolize(&mut stacks);
    }
    let mut modules = ModuleMap::default();
    for (_, _, p) in &pending {
        for f in p.stack.iter().chain(p.aux.iter().flat_map(|a| &a.1)) {
            modules.learn(f);
        }
    }
    let runtime = modules.runtime().map(str::to_string);
    let fix = |s: &mut Vec<RawFrame>| {
        for f in s.iter_mut().filter(|f| f.module.is_none()) {
            f.module = f.ip.and_then(|ip| modules.infer(ip)).map(str::to_string);
        }
        trim_runtime(s, runtime.as_deref());
    };
    for (_, _, p) in pending.iter_mut() {
        fix(&mut p.stack);
        for a in p.aux.iter_mut() {
            fix(&mut a.1);
        }
    }
    if !log.fatal.is_empty() {
        sum.problem = Some(log.fatal.join("; "));
    } else if cut {
        sum.problem = Some("sanitizer report cut off mid-way".to_string());
    } else if log.reports.is_empty() && names_a_finding(input) {
        // A sanitizer's summary or error line with no report leakgate could
        // read (a reformatted or cut log): never an empty pass.
        sum.problem = Some(
            "a sanitizer's ERROR or SUMMARY line, but no report leakgate could read (a log cut or reformatted?)"
                .to_string(),
        );
    }
    let mut unique = 0u64;
    for (report, pid, p) in pending {
        let rec = to_record(p, report, pid, process_index, &mut unique, interner);
        if let Some(s) = &rec.signame {
            sum.process.fatal_signal = Some(s.clone());
        }
        sum.process.records += 1;
        sink(rec, &sum.process);
    }
    sum.finalize();
    sum
}

fn to_frame(f: RawFrame, interner: &mut Interner) -> Frame {
    let (dir, file) = match f.path.as_deref() {
        Some(p) => match p.rsplit_once('/') {
            Some((d, name)) if !d.is_empty() && !name.is_empty() => (Some(d), Some(name)),
            _ => (None, Some(p)),
        },
        None => (None, None),
    };
    Frame {
        ip: Some(interner.intern(&f.ip_text)),
        obj: f.module.as_deref().map(|m| interner.intern(m)),
        func: f.func.as_deref().map(|n| interner.intern(n)),
        dir: dir.map(|d| interner.intern(d)),
        file: file.map(|n| interner.intern(n)),
        line: f.line,
        sfun: None,
        sobj: None,
    }
}

fn to_record(
    p: Pending,
    report: usize,
    pid: Option<u64>,
    process: usize,
    unique: &mut u64,
    interner: &mut Interner,
) -> Record {
    let fatal = p.kind == "FatalSignal";
    let id = (!fatal).then(|| {
        *unique += 1;
        *unique - 1
    });
    Record {
        process,
        pid,
        unique: id,
        tid: p.tid,
        thread_name: p.thread_name,
        kind: interner.intern(p.kind),
        what: p.what,
        leaked_bytes: p.bytes,
        leaked_blocks: p.blocks,
        stack: p.stack.into_iter().map(|f| to_frame(f, interner)).collect(),
        aux: p
            .aux
            .into_iter()
            .map(|(text, s)| AuxInfo {
                text,
                stack: s.into_iter().map(|f| to_frame(f, interner)).collect(),
            })
            .collect(),
        signame: p.signame.map(str::to_string),
        client_msgs: u32::try_from(report).unwrap_or(u32::MAX),
        ..Record::default()
    }
}

#[cfg(test)]
mod tests;
