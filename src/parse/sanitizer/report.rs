//! One sanitizer report's lines into pending records: the loss records of
//! a LeakSanitizer report (`Direct leak of N byte(s) in M object(s)
//! allocated from:` and its stack), or the one error of an
//! AddressSanitizer report (headline, access line, stack, then the block
//! description and the `freed by` / `allocated by` stacks).

use super::frames::{RawFrame, parse_frame};
use super::kinds::{Located, access_line, aux_text, classify, located, thread_of};

/// A report as cut out of the log: its header and the lines up to its
/// `SUMMARY:` line, with any common prefix removed.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// Byte offset of the line holding the `==PID==ERROR:` header.
    pub(super) start: usize,
    pub(super) pid: Option<u64>,
    /// The header's text after `ERROR: ` (`LeakSanitizer: detected memory leaks`).
    pub(super) header: String,
    pub(super) lines: Vec<String>,
    /// Its `SUMMARY:` line was seen.
    pub(super) ended: bool,
}

/// A record before its frames are symbolised and trimmed.
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) kind: &'static str,
    pub(super) what: String,
    pub(super) bytes: Option<u64>,
    pub(super) blocks: Option<u64>,
    pub(super) tid: Option<u64>,
    pub(super) thread_name: Option<String>,
    pub(super) signame: Option<&'static str>,
    pub(super) stack: Vec<RawFrame>,
    pub(super) aux: Vec<(String, Vec<RawFrame>)>,
}

/// What a report gave: its complete records, and whether one was cut off.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) records: Vec<Pending>,
    pub(super) partial: bool,
}

pub(super) fn parse_report(r: &Report) -> Parsed {
    // LeakSanitizer's own deadly-signal handler writes its crash report
    // under the same name (`LeakSanitizer: SEGV on unknown address ...`):
    // only `detected memory leaks` is a leak report, every other headline
    // is an error (a crash is never read as an empty leak report).
    if is_leak_report(&r.header) {
        leaks(r)
    } else {
        error(r)
    }
}

/// `LeakSanitizer: detected memory leaks` (also what AddressSanitizer's
/// leak check writes under LeakSanitizer's name).
fn is_leak_report(header: &str) -> bool {
    header
        .strip_prefix("LeakSanitizer:")
        .is_some_and(|h| h.trim_start().starts_with("detected memory leaks"))
}

/// The sanitizer that wrote a report, from its header.
fn sanitizer_name(header: &str) -> &'static str {
    if header.starts_with("LeakSanitizer:") {
        "LeakSanitizer"
    } else {
        "AddressSanitizer"
    }
}

/// `Direct leak of 64 byte(s) in 1 object(s) allocated from:`.
fn leak_entry(t: &str) -> Option<(bool, u64, u64)> {
    let (direct, rest) = if let Some(r) = t.strip_prefix("Direct leak of ") {
        (true, r)
    } else {
        (false, t.strip_prefix("Indirect leak of ")?)
    };
    let (bytes, rest) = rest.split_once(" byte(s) in ")?;
    let (blocks, _) = rest.split_once(" object(s)")?;
    Some((direct, bytes.parse().ok()?, blocks.parse().ok()?))
}

fn leaks(r: &Report) -> Parsed {
    let mut out = Parsed::default();
    let mut cur: Option<Pending> = None;
    for line in &r.lines {
        let t = line.trim();
        if let Some((direct, bytes, blocks)) = leak_entry(t) {
            out.records.extend(cur.take());
            cur = Some(Pending {
                kind: if direct {
                    "Leak_DefinitelyLost"
                } else {
                    "Leak_IndirectlyLost"
                },
                bytes: Some(bytes),
                blocks: Some(blocks),
                ..Pending::default()
            });
            continue;
        }
        if let Some(f) = parse_frame(t) {
            if let Some(c) = cur.as_mut() {
                c.stack.push(f);
            }
            continue;
        }
        // A blank or other line ends the entry's stack.
        out.records.extend(cur.take());
    }
    if r.ended {
        out.records.extend(cur.take());
    } else if cur.is_some() {
        out.partial = true;
    }
    let n = out.records.len();
    for (i, p) in out.records.iter_mut().enumerate() {
        let (b, k) = (p.bytes.unwrap_or(0), p.blocks.unwrap_or(0));
        let how = if p.kind == "Leak_DefinitelyLost" {
            "definitely"
        } else {
            "indirectly"
        };
        p.what = format!(
            "{b} bytes in {k} blocks are {how} lost in loss record {} of {n}",
            i + 1
        );
    }
    out
}

/// The headline without the registers (`at pc 0x.. bp 0x.. sp 0x..`,
/// `(pc 0x.. bp 0x.. sp 0x.. T0)`) and the trailing colon.
fn headline(header: &str) -> &str {
    let h = header
        .strip_prefix("AddressSanitizer:")
        .or_else(|| header.strip_prefix("LeakSanitizer:"))
        .unwrap_or(header)
        .trim();
    let h = h.split(" at pc 0x").next().unwrap_or(h);
    let h = h.split(" (pc 0x").next().unwrap_or(h);
    h.trim_end_matches(':').trim()
}

fn error(r: &Report) -> Parsed {
    let head = headline(&r.header);
    let mut access = None;
    let (mut tid, mut name) = thread_of(head);
    let mut stack = Vec::new();
    let mut main_done = false;
    let mut aux: Vec<(String, Vec<RawFrame>)> = Vec::new();
    let mut aux_open = false;
    let mut loc: Option<Located> = None;
    let mut saw_free = false;
    for line in &r.lines {
        let t = line.trim();
        if !main_done {
            if access.is_none()
                && let Some((w, n, t_id, t_name)) = access_line(t)
            {
                access = Some((w, n));
                (tid, name) = (t_id, t_name);
                continue;
            }
            if let Some(f) = parse_frame(t) {
                stack.push(f);
                continue;
            }
            if stack.is_empty() {
                continue;
            }
            main_done = true;
        }
        if let Some(f) = parse_frame(t) {
            if !aux_open {
                let text = loc.take().map(|l| l.line).unwrap_or_default();
                aux.push((text, Vec::new()));
                aux_open = true;
            }
            if let Some(a) = aux.last_mut() {
                a.1.push(f);
            }
            continue;
        }
        aux_open = false;
        if let Some(l) = located(t) {
            if let Some(old) = loc.replace(l) {
                aux.push((old.line, Vec::new()));
            }
            continue;
        }
        if t.ends_with(" here:") {
            let text = aux_text(t, &mut loc, saw_free);
            saw_free |= t.starts_with("freed by");
            aux.push((text, Vec::new()));
            aux_open = true;
        }
    }
    if let Some(l) = loc {
        aux.push((l.line, Vec::new()));
    }
    let complete = r.ended || main_done;
    if !complete {
        return Parsed {
            records: Vec::new(),
            partial: true,
        };
    }
    let k = classify(head, access);
    let rec = Pending {
        kind: k.kind,
        what: format!("{} ({}: {head})", k.what, sanitizer_name(&r.header)),
        tid: tid.map(|t| t + 1),
        thread_name: name,
        signame: k.signame,
        stack,
        aux,
        ..Pending::default()
    };
    Parsed {
        records: vec![rec],
        partial: false,
    }
}
