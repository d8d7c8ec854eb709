//! The progress line: on a terminal, one line on stderr, redrawn about four
//! times a second, with the phase (running / leak check / analysing), the
//! elapsed time, the processes seen and the records so far. The growing XML
//! files are followed incrementally: each poll reads only the bytes added
//! since the last one. The target's stderr (passed through by the watcher)
//! and the line share one lock, so the line is cleared before the target
//! writes and redrawn only at the start of a line.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Whether a progress line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// When stderr is a terminal (and not `--quiet`).
    Auto,
    Always,
    Never,
}

/// The terminal's state, shared by the progress line and the stderr
/// pass-through.
#[derive(Debug)]
pub struct Term {
    /// A progress line is on screen (no newline after it).
    pub drawn: bool,
    /// The last byte the target wrote to stderr was a newline (or nothing yet).
    pub at_line_start: bool,
}

pub type SharedTerm = Arc<Mutex<Term>>;

pub fn new_term() -> SharedTerm {
    Arc::new(Mutex::new(Term {
        drawn: false,
        at_line_start: true,
    }))
}

/// Follows one XML file.
#[derive(Default)]
struct Tail {
    offset: u64,
    /// The last bytes of the previous read (a tag may straddle two reads).
    carry: Vec<u8>,
    records: u64,
    finished: bool,
    closed: bool,
}

const TAGS: [&[u8]; 4] = [
    b"<error>",
    b"<fatal_signal>",
    b"<state>FINISHED</state>",
    b"</valgrindoutput>",
];

impl Tail {
    fn poll(&mut self, path: &Path) {
        let Ok(f) = std::fs::File::open(path) else {
            return;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Truncated and rewritten (an exec): start over.
            *self = Tail::default();
        }
        let mut buf = vec![0u8; 1 << 20];
        while self.offset < len {
            let n = match f.read_at(&mut buf, self.offset) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut hay = std::mem::take(&mut self.carry);
            let old = hay.len();
            hay.extend_from_slice(&buf[..n]);
            for (i, tag) in TAGS.iter().enumerate() {
                // Count only matches that end in the new bytes.
                let hits = memchr::memmem::find_iter(&hay, tag)
                    .filter(|&p| p + tag.len() > old)
                    .count() as u64;
                match i {
                    0 | 1 => self.records += hits,
                    2 => self.finished |= hits > 0,
                    _ => self.closed |= hits > 0,
                }
            }
            let keep = hay.len().min(32);
            self.carry = hay[hay.len() - keep..].to_vec();
            self.offset += n as u64;
        }
    }
}

struct Shared {
    stop: AtomicBool,
    phase: Mutex<Option<&'static str>>,
}

/// The running progress line; stops and clears the line when dropped.
pub struct Progress {
    shared: Arc<Shared>,
    term: SharedTerm,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts the line (the caller decided that it is wanted).
    pub fn start(dir: PathBuf, term: SharedTerm) -> Progress {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            phase: Mutex::new(None),
        });
        let (s, t) = (shared.clone(), term.clone());
        let thread = std::thread::spawn(move || run_line(&dir, &s, &t));
        Progress {
            shared,
            term,
            thread: Some(thread),
        }
    }

    /// Sets the phase shown (`analysing`); `None`: decided from the XML.
    pub fn set_phase(&self, phase: &'static str) {
        *self.shared.phase.lock().expect("progress lock") = Some(phase);
    }

    /// Stops the line and clears it.
    pub fn finish(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut term = self.term.lock().expect("terminal lock");
        if term.drawn {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(b"\r\x1b[K");
            let _ = e.flush();
            term.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn run_line(dir: &Path, shared: &Shared, term: &SharedTerm) {
    let started = Instant::now();
    let mut tails: HashMap<PathBuf, Tail> = HashMap::new();
    let mut last_poll = Instant::now() - Duration::from_secs(1);
    while !shared.stop.load(Ordering::SeqCst) {
        let fixed = *shared.phase.lock().expect("progress lock");
        if fixed.is_none() && last_poll.elapsed() >= Duration::from_millis(500) {
            last_poll = Instant::now();
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().is_some_and(|x| x == "xml") {
                        tails.entry(p.clone()).or_default().poll(&p);
                    }
                }
            }
        }
        let pids: std::collections::HashSet<&str> = tails
            .keys()
            .filter_map(|p| p.file_name()?.to_str()?.split('.').nth(1))
            .collect();
        let records: u64 = tails.values().map(|t| t.records).sum();
        let phase = fixed.unwrap_or_else(|| {
            if tails.values().any(|t| t.finished && !t.closed) {
                "leak check"
            } else {
                "running"
            }
        });
        let line = format!(
            "leakgate: {phase} · {} · {} · {}",
            elapsed(started.elapsed()),
            crate::util::thousands(pids.len() as u64)
                + if pids.len() == 1 {
                    " process"
                } else {
                    " processes"
                },
            crate::util::thousands(records) + if records == 1 { " record" } else { " records" }
        );
        {
            let mut t = term.lock().expect("terminal lock");
            if t.at_line_start {
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "\r\x1b[K{line}");
                let _ = e.flush();
                t.drawn = true;
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `83s` → `1m23s`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_a_growing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("vg.1.1.xml");
        std::fs::write(&p, "<valgrindoutput>\n<err").unwrap();
        let mut t = Tail::default();
        t.poll(&p);
        assert_eq!(t.records, 0);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"or>\n</error>\n<state>FINISHED</state>\n<error>\n")
            .unwrap();
        t.poll(&p);
        assert_eq!(t.records, 2);
        assert!(t.finished && !t.closed);
        f.write_all(b"</valgrindoutput>\n").unwrap();
        t.poll(&p);
        assert_eq!(t.records, 2);
        assert!(t.closed);
    }

    #[test]
    fn elapsed_times() {
        assert_eq!(elapsed(Duration::from_secs(5)), "5s");
        assert_eq!(elapsed(Duration::from_secs(83)), "1m23s");
        assert_eq!(elapsed(Duration::from_secs(3725)), "1h02m05s");
    }
}
