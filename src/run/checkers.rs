//! Forked leak checks of the sanitizer engines put back in place.
//!
//! Under `--engine lsan|asan` the probe runs a checkpoint's leak check in a
//! forked copy of a single-threaded process (a checker) while the process
//! goes on with the next test: the copy holds the heap as it was at the
//! checkpoint, so its report is the one an in-process check would have
//! printed there, and the check's cost leaves the test run's path. The
//! runtime writes the checker's report into the checker's own log
//! (`<engine>.<pid>`, starting with `leakgate-checker {"parent", "seq"}`);
//! the process's log holds the marker and a `leakgate-checkpoint-forked
//! {"seq"}` line where the report belongs. This puts each report in its
//! place (rewriting the process's log in leakgate's private directory) and
//! drops the checkers' logs from the list the parse stage reads, so that it
//! sees what an in-process check would have written. A placeholder left
//! without its report (a checker killed before it ended) stays, and the
//! parse stage marks that process incomplete.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::probe::{CHECKER_PREFIX, FORKED_PREFIX, MARKER_PREFIX};

/// Checkpoints whose checker ended unchecked (`turns` gave it no turn):
/// (parent pid, seq) → the seq whose report is theirs.
pub(super) type Same = HashMap<(u64, u64), u64>;

/// What a checker wrote: the bytes after its marker line (the report and
/// the end line), by (parent pid, checkpoint sequence number).
type Reports = HashMap<(u64, u64), Vec<u8>>;

/// The first line of `text` starting with `prefix`: (start, end past the
/// newline).
pub(super) fn find_line(text: &[u8], prefix: &str) -> Option<(usize, usize)> {
    let mut at = 0;
    for raw in text.split_inclusive(|&b| b == b'\n') {
        if raw.starts_with(prefix.as_bytes()) {
            return Some((at, at + raw.len()));
        }
        at += raw.len();
    }
    None
}

/// A checker's log: its (parent, seq) and what goes into the parent's log,
/// the runtime's `==PID==` line prefixes naming the parent (`pid` is the
/// checker's).
fn checker_report(text: &[u8], pid: Option<u64>) -> Option<((u64, u64), Vec<u8>)> {
    let (start, end) = find_line(text, CHECKER_PREFIX)?;
    let head: serde_json::Value =
        serde_json::from_slice(text[start + CHECKER_PREFIX.len()..end].trim_ascii_end()).ok()?;
    let key = (head["parent"].as_u64()?, head["seq"].as_u64()?);
    let rest = &text[end..];
    let rest = match find_line(rest, MARKER_PREFIX) {
        Some((_, e)) => &rest[e..],
        None => rest,
    };
    let Some(pid) = pid else {
        return Some((key, rest.to_vec()));
    };
    Some((key, as_parent(rest, pid, key.0)))
}

/// A checker's report as its parent's log gets it: the runtime's `==PID==`
/// line prefixes name the parent instead of the checker `pid`.
pub(super) fn as_parent(report: &[u8], pid: u64, parent: u64) -> Vec<u8> {
    let from = format!("=={pid}==");
    let to = format!("=={parent}==");
    let mut out = Vec::with_capacity(report.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(report, from.as_bytes()) {
        out.extend_from_slice(&report[last..at]);
        out.extend_from_slice(to.as_bytes());
        last = at + from.len();
    }
    out.extend_from_slice(&report[last..]);
    out
}

/// `text` with each placeholder line whose checker report is in `reports`
/// replaced by it; None when there was none to replace.
fn splice(text: &[u8], pid: u64, reports: &Reports) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut changed = false;
    for raw in text.split_inclusive(|&b| b == b'\n') {
        let seq = raw
            .strip_prefix(FORKED_PREFIX.as_bytes())
            .and_then(|j| serde_json::from_slice::<serde_json::Value>(j.trim_ascii_end()).ok())
            .and_then(|v| v["seq"].as_u64());
        match seq.and_then(|s| reports.get(&(pid, s))) {
            Some(report) => {
                out.extend_from_slice(report);
                if !report.is_empty() && !report.ends_with(b"\n") {
                    out.push(b'\n');
                }
                changed = true;
            }
            None => out.extend_from_slice(raw),
        }
    }
    changed.then_some(out)
}

/// The pid in a log file's name (`<engine>.<pid>`).
fn pid_of(path: &Path) -> Option<u64> {
    path.extension()?.to_str()?.parse().ok()
}

/// Puts every checker's report into its process's log (rewritten in
/// place) and returns the logs without the checkers'. A log that cannot be
/// read or rewritten is left as it is (its placeholders then make its
/// process incomplete).
pub(super) fn put_back(logs: Vec<PathBuf>, same: &Same) -> Vec<PathBuf> {
    let mut reports = Reports::new();
    let mut kept = Vec::with_capacity(logs.len());
    for path in logs {
        // A checker's line comes first in its log (before anything the
        // runtime writes); the probe writes nothing else there. Only those
        // logs are read whole here.
        if starts_with_checker(&path)
            && let Ok(text) = std::fs::read(&path)
            && let Some((key, report)) = checker_report(&text, pid_of(&path))
        {
            reports.insert(key, report);
            continue;
        }
        kept.push(path);
    }
    // A checker that ended unchecked (`turns`) takes the report of the
    // check it agreed with; without that report its placeholder stays.
    for (&(parent, seq), &as_seq) in same {
        match reports.get(&(parent, as_seq)).cloned() {
            Some(r) => reports.insert((parent, seq), r),
            None => reports.remove(&(parent, seq)),
        };
    }
    for path in &kept {
        let Some(pid) = pid_of(path) else { continue };
        if !reports.keys().any(|(p, _)| *p == pid) {
            continue;
        }
        let Ok(text) = std::fs::read(path) else {
            continue;
        };
        if let Some(out) = splice(&text, pid, &reports) {
            let _ = std::fs::write(path, out);
        }
    }
    kept
}

/// Whether a log starts with a checker's line (its first bytes only).
fn starts_with_checker(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; CHECKER_PREFIX.len()];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == *CHECKER_PREFIX.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_go_where_their_placeholders_are() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("lsan.100");
        let checker = dir.path().join("lsan.102");
        let lost = dir.path().join("lsan.104");
        std::fs::write(
            &parent,
            "leakgate-checkpoint {\"seq\":1}\nleakgate-checkpoint-forked {\"seq\": 1}\n\
             leakgate-checkpoint {\"seq\":2}\nleakgate-checkpoint-forked {\"seq\": 2}\n\
             =================\nexit report\n",
        )
        .unwrap();
        std::fs::write(
            &checker,
            "leakgate-checker {\"parent\": 100, \"seq\": 1}\nleakgate-checkpoint {\"seq\":1}\n\
             ==102==REPORT 1 ==1020==\nleakgate-checkpoint-end\n",
        )
        .unwrap();
        std::fs::write(&lost, "=================\nsomething else\n").unwrap();
        let kept = put_back(vec![parent.clone(), checker, lost.clone()], &Same::new());
        assert_eq!(kept, vec![parent.clone(), lost]);
        assert_eq!(
            std::fs::read_to_string(&parent).unwrap(),
            "leakgate-checkpoint {\"seq\":1}\n==100==REPORT 1 ==1020==\nleakgate-checkpoint-end\n\
             leakgate-checkpoint {\"seq\":2}\nleakgate-checkpoint-forked {\"seq\": 2}\n\
             =================\nexit report\n",
            "the second checker wrote nothing: its placeholder stays"
        );
    }

    #[test]
    fn a_checker_without_a_header_is_a_process_of_its_own() {
        assert!(checker_report(b"leakgate-checker not json\n", Some(1)).is_none());
        assert_eq!(pid_of(Path::new("/x/lsan.42")), Some(42));
        assert_eq!(pid_of(Path::new("/x/lsan")), None);
    }
}
