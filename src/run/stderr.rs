//! The target's stderr, watched on its way through. Every byte is written
//! on to leakgate's own stderr as soon as it is read (no line buffering, no
//! reordering); beside that, complete lines are checked for PyTorch's
//! CUDA-IPC producer warning and Valgrind's own `==PID==` messages (its log,
//! shown when Valgrind fails).
//!
//! To know which process printed a line, the target's stderr is one end of
//! a Unix stream socket with `SO_PASSCRED`: each read carries the writer's
//! pid, and Linux never joins data from two writers into one read. Where
//! that cannot be set up, a pipe is used and lines are credited to the
//! target's pid. Both come from std (`UnixStream::pair`, `std::io::pipe`,
//! close-on-exec); only switching on and reading the credentials needs
//! libc (`passcred`).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use super::progress::SharedTerm;
use crate::kind::CUDA_IPC_TEXT;

/// What the watcher found.
#[derive(Debug, Default)]
pub struct Seen {
    /// pid → (first warning line, how many).
    pub cuda_ipc: HashMap<u64, (String, u64)>,
    /// Valgrind's `==PID==` lines, in order.
    pub valgrind_log: Vec<String>,
    /// The stream ended (every writer closed it).
    pub eof: bool,
}

/// The watcher: the child's end of the stream and the reading thread.
pub struct Watcher {
    pub seen: Arc<Mutex<Seen>>,
    child_end: Option<OwnedFd>,
    reader: Option<Source>,
}

/// leakgate's end of the stream.
enum Source {
    /// A socket with `SO_PASSCRED`: every read names its writer.
    Creds(UnixStream),
    /// A socket without credentials, or a pipe.
    Plain(Box<dyn Read + Send>),
}

impl Source {
    /// One read: the bytes and the writer's pid (when credentials came with it).
    fn recv(&mut self, buf: &mut [u8]) -> std::io::Result<(usize, Option<u64>)> {
        match self {
            Source::Creds(s) => super::passcred::recv(s, buf),
            Source::Plain(r) => Ok((r.read(buf)?, None)),
        }
    }
}

const LINE_MAX: usize = 64 << 10;

impl Watcher {
    /// Creates the socket pair (or pipe).
    pub fn new() -> std::io::Result<Watcher> {
        if let Ok((r, w)) = UnixStream::pair() {
            // The child writes only; leakgate reads only.
            let _ = r.shutdown(Shutdown::Write);
            let _ = w.shutdown(Shutdown::Read);
            let reader = if super::passcred::enable(&r) {
                Source::Creds(r)
            } else {
                Source::Plain(Box::new(r))
            };
            return Ok(Watcher {
                seen: Default::default(),
                child_end: Some(w.into()),
                reader: Some(reader),
            });
        }
        let (r, w) = std::io::pipe()?;
        Ok(Watcher {
            seen: Default::default(),
            child_end: Some(w.into()),
            reader: Some(Source::Plain(Box::new(r))),
        })
    }

    /// The end to give the child as its stderr (once).
    pub fn child_stdio(&mut self) -> std::process::Stdio {
        std::process::Stdio::from(self.child_end.take().expect("child end taken once"))
    }

    /// Starts the reading thread; `default_pid` is credited when the
    /// writer's pid is unknown.
    pub fn start(&mut self, default_pid: u64, term: SharedTerm) {
        let source = self.reader.take().expect("started once");
        let seen = self.seen.clone();
        std::thread::spawn(move || read_loop(source, default_pid, &seen, &term));
    }
}

fn read_loop(mut source: Source, default_pid: u64, seen: &Mutex<Seen>, term: &SharedTerm) {
    let mut buf = vec![0u8; 64 << 10];
    let mut lines: HashMap<u64, Vec<u8>> = HashMap::new();
    loop {
        let (n, pid) = match source.recv(&mut buf) {
            Ok((0, _)) => break,
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let data = &buf[..n];
        // Valgrind writes each of its messages whole: a read that holds
        // nothing but `==PID==` lines is its log, kept for the report
        // (shown when Valgrind failed) rather than mixed into the target's
        // output.
        if all_valgrind_lines(data) {
            let mut s = seen.lock().expect("watcher lock");
            for l in String::from_utf8_lossy(data).lines() {
                s.valgrind_log.push(l.to_string());
            }
            continue;
        }
        {
            let mut t = term.lock().expect("terminal lock");
            let mut e = std::io::stderr().lock();
            if t.drawn {
                let _ = e.write_all(b"\r\x1b[K");
                t.drawn = false;
            }
            let _ = e.write_all(data);
            let _ = e.flush();
            t.at_line_start = data.last() == Some(&b'\n');
        }
        let pid = pid.unwrap_or(default_pid);
        let pending = lines.entry(pid).or_default();
        for chunk in data.split_inclusive(|b| *b == b'\n') {
            pending.extend_from_slice(chunk);
            if chunk.ends_with(b"\n") {
                check_line(pid, pending, seen);
                pending.clear();
            } else if pending.len() > LINE_MAX {
                pending.clear();
            }
        }
    }
    for (pid, rest) in lines {
        if !rest.is_empty() {
            check_line(pid, &rest, seen);
        }
    }
    seen.lock().expect("watcher lock").eof = true;
}

/// Whether a read holds only whole Valgrind message lines.
fn all_valgrind_lines(data: &[u8]) -> bool {
    data.ends_with(b"\n") && String::from_utf8_lossy(data).lines().all(is_valgrind_line)
}

/// Whether `line` is one of Valgrind's own messages (`==1234== ...`).
fn is_valgrind_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("==") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with("==")
}

fn check_line(pid: u64, line: &[u8], seen: &Mutex<Seen>) {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_end_matches(['\n', '\r']);
    if line.contains(CUDA_IPC_TEXT) {
        let mut s = seen.lock().expect("watcher lock");
        let e = s
            .cuda_ipc
            .entry(pid)
            .or_insert_with(|| (line.to_string(), 0));
        e.1 += 1;
    } else if is_valgrind_line(line) {
        seen.lock()
            .expect("watcher lock")
            .valgrind_log
            .push(line.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valgrind_lines() {
        assert!(is_valgrind_line("==123== FATAL: can't open"));
        assert!(!is_valgrind_line("== not valgrind"));
        assert!(!is_valgrind_line("plain"));
        assert!(all_valgrind_lines(b"==1== a\n==1== b\n"));
        assert!(!all_valgrind_lines(b"==1== a\nmine\n"));
        assert!(!all_valgrind_lines(b"==1== a"));
    }

    #[test]
    fn warning_with_any_prefix() {
        let seen = Mutex::new(Seen::default());
        check_line(7, b"[rank0]:[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n", &seen);
        check_line(7, b"[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n", &seen);
        let s = seen.lock().unwrap();
        assert_eq!(s.cuda_ipc[&7].1, 2);
        assert!(s.cuda_ipc[&7].0.starts_with("[rank0]"));
    }
}
