//! Turns for the forked checkers of the sanitizer engines: which of them
//! run their leak check, and which end without one.
//!
//! Under `--engine lsan|asan` each checkpoint of a single-threaded process
//! forks a checker (`run::checkers`), and each check scans the whole heap
//! (about 40 ms for a small pytest process) on a core the target then
//! shares. Most checkpoints of a suite find what the one before found. With
//! `LEAKGATE_CHECKER_TURNS=1` a checker writes its head line
//! (`leakgate-checker {"parent","seq","kind","waits":true}`) and waits (the
//! probe's `_await_turn`) for SIGUSR1 (check) or SIGUSR2 (end without a
//! report). This thread gives the turns, reading the checkers' logs:
//!
//! - LeakSanitizer's report at a checkpoint lists every leak found so far,
//!   and a block once lost stays lost: when the checks at checkpoints `a`
//!   and `b` of a process (`a` first) found the same leaks, so did every
//!   checkpoint between them. Their checkers end unchecked, and
//!   [`super::checkers::put_back`] gives them `a`'s report;
//! - where `a` and `b` differ, the waiting checkpoint halfway between is
//!   checked (bisection), down to the checkpoints where the report changes;
//!   before a process's first check, its first waiting checkpoint is;
//! - the newest waiting checker after a process's last check gets its turn
//!   when [`FRONTIER`] wait there, when it is the session's last (`finish`)
//!   checkpoint, when its process has ended, or when no newer one came for
//!   [`IDLE`];
//! - at most one check per core but one runs at once (at least one).
//!
//! A checker that hears nothing for 60 s checks anyway; one whose leakgate
//! is gone ends. A checker that ended without a report keeps its neighbours
//! checked.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::checkers::{self, Same};
use crate::probe::{CHECKER_PREFIX, MARKER_PREFIX, SANITIZER_END};

/// Waiting checkers after a process's last check that get the newest its
/// turn.
pub(super) const FRONTIER: usize = 8;
/// How long the newest waiting checker waits for a newer one.
pub(super) const IDLE: Duration = Duration::from_millis(250);
/// How often the logs are looked at.
const TICK: Duration = Duration::from_millis(3);

/// What the turns came to.
#[derive(Default)]
pub(super) struct Given {
    pub(super) same: Same,
    /// Checkers that waited for a turn and checked.
    pub(super) checked: usize,
}

/// Where a checker stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    /// Checked; the digest of its report.
    Done(u64),
    /// Told to end without a check.
    Skipped,
}

struct Checker {
    pid: i32,
    parent: u64,
    seq: u64,
    /// The session's last checkpoint (`finish`).
    last: bool,
    path: PathBuf,
    state: State,
    seen: Instant,
    len: u64,
}

/// The thread giving the turns (see the module header).
pub(super) struct Turns {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Given>,
}

impl Turns {
    /// Starts giving turns to the checkers whose logs appear in `dir` as
    /// `<prefix>.<pid>`.
    pub(super) fn start(dir: &Path, prefix: &str) -> Turns {
        let stop = Arc::new(AtomicBool::new(false));
        let mut board = Board {
            dir: dir.to_path_buf(),
            name_prefix: format!("{prefix}."),
            parents: BTreeMap::new(),
            classified: HashSet::new(),
            same: Same::new(),
            checked: 0,
            limit: std::thread::available_parallelism()
                .map_or(1, |n| n.get().saturating_sub(1))
                .max(1),
        };
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                board.tick(Instant::now());
                std::thread::sleep(TICK);
            }
            let rest = board
                .parents
                .values()
                .flatten()
                .filter(|c| matches!(c.state, State::Done(_)))
                .count();
            Given {
                same: board.same,
                checked: board.checked + rest,
            }
        });
        Turns { stop, handle }
    }

    /// Stops (the run's processes have all ended) and says which
    /// checkpoints take another's report.
    pub(super) fn finish(self) -> Given {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

struct Board {
    dir: PathBuf,
    name_prefix: String,
    /// Each process's waiting checkers, by seq.
    parents: BTreeMap<u64, Vec<Checker>>,
    /// Log files already looked at (checkers' or not).
    classified: HashSet<OsString>,
    same: Same,
    /// Checks done and pruned (`prune`).
    checked: usize,
    limit: usize,
}

impl Board {
    fn tick(&mut self, now: Instant) {
        self.discover(now);
        let mut running = 0;
        for list in self.parents.values_mut() {
            for c in list.iter_mut() {
                refresh(c);
                running += usize::from(c.state == State::Running);
            }
        }
        for (&parent, list) in self.parents.iter_mut() {
            let states: Vec<(u64, State)> = list.iter().map(|c| (c.seq, c.state)).collect();
            for (i, as_seq) in skips(&states) {
                let c = &mut list[i];
                self.same.insert((parent, c.seq), as_seq);
                signal(c.pid, libc::SIGUSR2);
                c.state = State::Skipped;
            }
        }
        for (&parent, list) in self.parents.iter_mut() {
            if !list.iter().any(|c| c.state == State::Waiting) {
                continue; // nothing to give a turn to: no need to look at the process
            }
            let end =
                list.iter().any(|c| c.last) || i32::try_from(parent).map_or(true, |p| !alive(p));
            // The cores the process no longer uses, at its end.
            let limit = self.limit + usize::from(end);
            if running >= limit {
                continue;
            }
            let states: Vec<(u64, State)> = list.iter().map(|c| (c.seq, c.state)).collect();
            let ready = frontier_ready(list, now);
            for i in next_turns(&states, ready, end, limit - running) {
                let c = &mut list[i];
                c.state = if signal(c.pid, libc::SIGUSR1) {
                    State::Running
                } else {
                    State::Done(gone_digest(c.seq))
                };
                running += 1;
            }
        }
        self.prune();
    }

    /// Forgets what no turn depends on any more: each process's checks
    /// before its last one ahead of every checker still waiting or
    /// checking (counted in `checked`).
    fn prune(&mut self) {
        for list in self.parents.values_mut() {
            let open = list
                .iter()
                .position(|c| matches!(c.state, State::Waiting | State::Running))
                .unwrap_or(list.len());
            let Some(keep) = list[..open]
                .iter()
                .rposition(|c| matches!(c.state, State::Done(_)))
            else {
                continue;
            };
            self.checked += list[..keep]
                .iter()
                .filter(|c| matches!(c.state, State::Done(_)))
                .count();
            list.drain(..keep);
        }
    }

    /// Adds the checkers whose logs appeared since the last tick.
    fn discover(&mut self, now: Instant) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if self.classified.contains(&name) {
                continue;
            }
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(&self.name_prefix))
                .and_then(|p| p.parse::<i32>().ok())
            else {
                self.classified.insert(name);
                continue;
            };
            let path = e.path();
            let Some(first) = first_line(&path) else {
                continue; // not written yet: look again next tick
            };
            self.classified.insert(name);
            let Some(head) = first
                .strip_prefix(CHECKER_PREFIX)
                .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
            else {
                continue;
            };
            let (Some(parent), Some(seq), Some(true)) = (
                head["parent"].as_u64(),
                head["seq"].as_u64(),
                head["waits"].as_bool(),
            ) else {
                continue;
            };
            let list = self.parents.entry(parent).or_default();
            let at = list.partition_point(|c| c.seq < seq);
            list.insert(
                at,
                Checker {
                    pid,
                    parent,
                    seq,
                    last: head["kind"].as_str() == Some("finish"),
                    path,
                    state: State::Waiting,
                    seen: now,
                    len: 0,
                },
            );
        }
    }
}

/// The first line of a log, once it is whole.
fn first_line(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 4096];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    let end = buf[..n].iter().position(|&b| b == b'\n')?;
    String::from_utf8(buf[..end].to_vec()).ok()
}

/// Reads a waiting or running checker's log again when it grew: a marker
/// line means its check began, the end line that it is done.
fn refresh(c: &mut Checker) {
    if !matches!(c.state, State::Waiting | State::Running) {
        return;
    }
    let len = std::fs::metadata(&c.path).map_or(0, |m| m.len());
    if len != c.len {
        c.len = len;
        if let Ok(text) = std::fs::read(&c.path) {
            match report_digest(&text, u64::try_from(c.pid).unwrap_or(0), c.parent) {
                Some(Some(d)) => c.state = State::Done(d),
                Some(None) => c.state = State::Running,
                None => {}
            }
            return;
        }
    }
    if c.state == State::Running && !alive(c.pid) {
        // Ended without its end line (killed): its neighbours get checked.
        c.state = State::Done(gone_digest(c.seq));
    }
}

/// A digest no report has.
fn gone_digest(seq: u64) -> u64 {
    !seq ^ 0x5bd1_e995_0000_0000
}

/// What a checker's log says: None (no check begun), Some(None) (checking),
/// Some(Some(digest)) of the report its parent's log would get
/// ([`checkers::as_parent`]: each checker has its own pid).
fn report_digest(text: &[u8], pid: u64, parent: u64) -> Option<Option<u64>> {
    let (_, head) = checkers::find_line(text, CHECKER_PREFIX)?;
    let (_, marker) = checkers::find_line(&text[head..], MARKER_PREFIX)?;
    let report = &text[head + marker..];
    if report.trim_ascii_end().ends_with(SANITIZER_END.as_bytes()) && report.ends_with(b"\n") {
        let mut h = std::hash::DefaultHasher::new();
        checkers::as_parent(report, pid, parent).hash(&mut h);
        return Some(Some(h.finish()));
    }
    Some(None)
}

/// Whether the newest waiting checker after `list`'s last check may have
/// its turn before the process's end (see the module header).
fn frontier_ready(list: &[Checker], now: Instant) -> bool {
    let after = list
        .iter()
        .rposition(|c| matches!(c.state, State::Done(_)))
        .map_or(0, |i| i + 1);
    let waiting: Vec<&Checker> = list[after..]
        .iter()
        .filter(|c| c.state == State::Waiting)
        .collect();
    let Some(newest) = waiting.last() else {
        return false;
    };
    waiting.len() >= FRONTIER || now.duration_since(newest.seen) >= IDLE
}

/// The waiting checkers (indices into `list`, by seq) that end unchecked,
/// with the seq whose report is theirs: those between two checks that
/// found the same.
fn skips(list: &[(u64, State)]) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut prev: Option<(u64, u64)> = None; // the last check: (seq, digest)
    let mut between: Vec<usize> = Vec::new();
    for (i, &(seq, state)) in list.iter().enumerate() {
        match state {
            State::Done(d) => {
                if let Some((a, pd)) = prev
                    && pd == d
                {
                    out.extend(between.iter().map(|&j| (j, a)));
                }
                between.clear();
                prev = Some((seq, d));
            }
            State::Waiting => between.push(i),
            State::Running | State::Skipped => {}
        }
    }
    out
}

/// The checkers (indices into `list`, by seq) whose turn it is, at most
/// `free`: in each run of waiting checkers between two checks that differ,
/// the middle one; before the first check, the first one; after the last
/// check (once `frontier_ready`), the newest. A run with a check going
/// gets no other, except at the `end` (the process has ended or taken its
/// last checkpoint), when free cores split runs further (their middles
/// first, then the middles of their halves, ...).
fn next_turns(list: &[(u64, State)], frontier_ready: bool, end: bool, free: usize) -> Vec<usize> {
    let mut runs: Vec<Run> = Vec::new();
    let mut prev: Option<u64> = None;
    let mut waiting: Vec<usize> = Vec::new();
    let mut running = false;
    for (i, &(_, state)) in list.iter().enumerate() {
        match state {
            State::Done(d) => {
                runs.push((prev, Some(d), std::mem::take(&mut waiting), running));
                running = false;
                prev = Some(d);
            }
            State::Waiting => waiting.push(i),
            State::Running => running = true,
            State::Skipped => {}
        }
    }
    runs.push((prev, None, waiting, running));
    let mut queues: Vec<Vec<usize>> = Vec::new();
    for (before, after, waiting, running) in runs {
        if waiting.is_empty() || (running && !end) {
            continue;
        }
        let last = waiting.len() - 1;
        let mut order: Vec<usize> = match (before, after) {
            (Some(b), Some(a)) if a == b => continue, // skips() takes them
            (Some(_), Some(_)) => Vec::new(),
            // The first check of a process, which every other is compared
            // with: at once, on a core the process does not use.
            (None, Some(_)) => vec![0],
            (None, None) if end => vec![0, last],
            (None, None) => vec![0],
            (Some(_), None) if frontier_ready || end => vec![last],
            (Some(_), None) => continue,
        };
        order.dedup();
        if end || order.is_empty() {
            let head = order.clone();
            order.extend(midpoints(waiting.len()).filter(|k| !head.contains(k)));
        }
        if !end {
            order.truncate(1);
        }
        queues.push(order.into_iter().map(|k| waiting[k]).collect());
    }
    // One from each run in turn, up to `free`.
    let mut out = Vec::new();
    for round in 0.. {
        let before = out.len();
        for q in &queues {
            if out.len() < free
                && let Some(&i) = q.get(round)
            {
                out.push(i);
            }
        }
        if out.len() == before || out.len() >= free {
            break;
        }
    }
    out
}

/// Waiting checkers between two checks: (digest before, digest after, the
/// waiting ones, whether one there is checking).
type Run = (Option<u64>, Option<u64>, Vec<usize>, bool);

/// 0..n in bisection order: the middle, then the middles of the halves, ...
fn midpoints(n: usize) -> impl Iterator<Item = usize> {
    let mut out = Vec::with_capacity(n);
    let mut spans = std::collections::VecDeque::from([(0, n)]);
    while let Some((lo, hi)) = spans.pop_front() {
        if lo >= hi {
            continue;
        }
        let mid = lo + (hi - lo - 1) / 2;
        out.push(mid);
        spans.push_back((lo, mid));
        spans.push_back((mid + 1, hi));
    }
    out.into_iter()
}

/// Whether `pid` is alive (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    if let Err(e) = super::signals::kill_one(pid, 0) {
        return e.raw_os_error() != Some(libc::ESRCH);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(") ")
            .is_none_or(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Sends `sig`; false when the process is gone.
fn signal(pid: i32, sig: i32) -> bool {
    super::signals::kill_one(pid, sig).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: State = State::Waiting;
    const R: State = State::Running;

    fn at(states: &[State]) -> Vec<(u64, State)> {
        states
            .iter()
            .enumerate()
            .map(|(i, &s)| (i as u64 + 2, s))
            .collect()
    }

    #[test]
    fn checkpoints_between_two_checks_that_agree_take_the_first_s_report() {
        let list = at(&[State::Done(1), W, W, State::Done(1), W, State::Done(2)]);
        assert_eq!(skips(&list), vec![(1, 2), (2, 2)]);
        assert_eq!(
            next_turns(&list, false, false, 1),
            vec![4],
            "1 → 2: checked"
        );
        assert!(
            skips(&at(&[W, State::Done(1)])).is_empty(),
            "no check before"
        );
    }

    #[test]
    fn bisection_then_the_first_then_the_newest() {
        let next = |l: &[(u64, State)], ready| next_turns(l, ready, false, 1).first().copied();
        let six = at(&[State::Done(1), W, W, W, W, W, State::Done(2), W, W]);
        assert_eq!(next(&six, true), Some(3), "the middle of five");
        let busy = at(&[State::Done(1), W, R, W, State::Done(2), W]);
        assert_eq!(next(&busy, true), Some(5), "one check per run");
        assert_eq!(next(&busy, false), None);
        let first = at(&[W, W, W, State::Done(3)]);
        assert_eq!(next(&first, false), Some(0), "the baseline first");
        let fresh = at(&[W, W, W]);
        assert_eq!(next(&fresh, false), Some(0), "the baseline at once");
        let on = at(&[State::Done(1), W, W, W]);
        assert_eq!(next(&on, false), None);
        assert_eq!(next(&on, true), Some(3), "the newest");
        assert_eq!(next(&at(&[R, W]), true), None);
    }

    #[test]
    fn at_the_end_free_cores_split_the_runs() {
        let fresh = at(&[W, W, W, W, W, W, W]);
        assert_eq!(next_turns(&fresh, false, true, 2), vec![0, 6]);
        let two = at(&[State::Done(1), W, W, W, W, W, State::Done(2)]);
        assert_eq!(next_turns(&two, false, true, 2), vec![3, 1]);
        let busy = at(&[State::Done(1), W, W, R, W, W, State::Done(2), W]);
        assert_eq!(next_turns(&busy, false, true, 2), vec![2, 7]);
        assert_eq!(midpoints(7).collect::<Vec<_>>(), vec![3, 1, 5, 0, 2, 4, 6]);
        assert_eq!(
            midpoints(2).collect::<Vec<_>>(),
            vec![0, 1],
            "the earlier of two"
        );
    }

    #[test]
    fn a_report_s_digest_leaves_the_pids_out() {
        let a = b"leakgate-checker {\"seq\":3}\nleakgate-checkpoint {\"seq\":3}\n==12==ERROR: x\nleakgate-checkpoint-end\n";
        let b = b"leakgate-checker {\"seq\":4}\nleakgate-checkpoint {\"seq\":4}\n==987==ERROR: x\nleakgate-checkpoint-end\n";
        let (Some(Some(da)), Some(Some(db))) = (report_digest(a, 12, 7), report_digest(b, 987, 7))
        else {
            panic!("both are done");
        };
        assert_eq!(da, db);
        assert_eq!(report_digest(b"leakgate-checker {}\n", 1, 7), None);
        assert_eq!(
            report_digest(
                b"leakgate-checker {}\nleakgate-checkpoint {}\n==1==ERR",
                1,
                7
            ),
            Some(None)
        );
    }
}
