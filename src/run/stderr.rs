//! The target's stderr, watched on its way through. Every byte is written
//! on to leakgate's own stderr as soon as it is read (no line buffering, no
//! reordering); beside that, complete lines are checked for PyTorch's
//! CUDA-IPC producer warning, Valgrind's own `==PID==` messages (its log,
//! shown when Valgrind fails) and its decoder's "unhandled instruction"
//! lines (an instruction Valgrind cannot run, such as AVX-512).
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
use crate::model::UnhandledInstruction;

/// What the watcher found.
#[derive(Debug, Default)]
pub struct Seen {
    /// pid → (first warning line, how many).
    pub cuda_ipc: HashMap<u64, (String, u64)>,
    /// Valgrind's `==PID==` lines, in order.
    pub valgrind_log: Vec<String>,
    /// Instructions Valgrind's decoder could not translate, in order.
    pub unhandled: Vec<UnhandledInstruction>,
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
                note_unhandled(&mut s, pid.unwrap_or(default_pid), pid.is_some(), l);
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
        let credited = pid.is_some();
        let pid = pid.unwrap_or(default_pid);
        let pending = lines.entry(pid).or_default();
        for chunk in data.split_inclusive(|b| *b == b'\n') {
            pending.extend_from_slice(chunk);
            if chunk.ends_with(b"\n") {
                check_line(pid, credited, pending, seen);
                pending.clear();
            } else if pending.len() > LINE_MAX {
                pending.clear();
            }
        }
    }
    for (pid, rest) in lines {
        if !rest.is_empty() {
            check_line(pid, false, &rest, seen);
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

/// How many unhandled instructions are kept (a program that handles
/// SIGILL itself can hit one again and again).
const UNHANDLED_MAX: usize = 64;

/// The decoder's line: `vex amd64->IR: unhandled instruction bytes: 0x62 …`
/// (x86, amd64) or `disInstr(arm64): unhandled instruction 0x04FC635A`:
/// the architecture and the bytes.
fn unhandled_bytes(line: &str) -> Option<(&str, &str)> {
    let (arch, bytes) = if let Some(rest) = line.strip_prefix("vex ") {
        rest.split_once("->IR: unhandled instruction bytes:")?
    } else {
        line.strip_prefix("disInstr(")?
            .split_once("): unhandled instruction ")?
    };
    let bytes = bytes.trim();
    (!arch.is_empty() && bytes.starts_with("0x")).then_some((arch, bytes))
}

/// `==PID== valgrind: Unrecognised instruction at address 0x109159.`: the
/// pid and the address (Valgrind prints this for every instruction it
/// cannot decode, `ud2` included; only an unhandled one has the decoder's
/// line before it).
fn unrecognised_at(line: &str) -> Option<(u64, u64)> {
    let (pid, rest) = line.strip_prefix("==")?.split_once("==")?;
    let pid = pid.parse().ok()?;
    let addr = rest
        .trim()
        .strip_prefix("valgrind: Unrecognised instruction at address 0x")?
        .trim_end_matches('.');
    Some((pid, u64::from_str_radix(addr, 16).ok()?))
}

/// Records the decoder's line, and gives the "Unrecognised instruction"
/// line that follows it its pid and address. `writer` is the line's
/// writer, `credited` whether the kernel said so (else it is a guess, and
/// the pid of the `==PID==` line that follows is taken at its word).
fn note_unhandled(s: &mut Seen, writer: u64, credited: bool, line: &str) {
    if let Some((arch, bytes)) = unhandled_bytes(line) {
        if s.unhandled.len() < UNHANDLED_MAX {
            s.unhandled.push(UnhandledInstruction {
                pid: writer,
                arch: arch.to_string(),
                bytes: bytes.to_string(),
                address: None,
            });
        }
    } else if let Some((pid, addr)) = unrecognised_at(line) {
        let open = |u: &UnhandledInstruction| u.address.is_none();
        let at = s
            .unhandled
            .iter()
            .rposition(|u| open(u) && u.pid == pid)
            .or_else(|| {
                (!credited)
                    .then(|| s.unhandled.iter().rposition(open))
                    .flatten()
            });
        if let Some(u) = at.map(|i| &mut s.unhandled[i]) {
            u.pid = pid;
            u.address = Some(addr);
        }
    }
}

fn check_line(pid: u64, credited: bool, line: &[u8], seen: &Mutex<Seen>) {
    let line = String::from_utf8_lossy(line);
    let line = line.trim_end_matches(['\n', '\r']);
    if unhandled_bytes(line).is_some() || unrecognised_at(line).is_some() {
        note_unhandled(&mut seen.lock().expect("watcher lock"), pid, credited, line);
    }
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
        check_line(7, true, b"[rank0]:[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n", &seen);
        check_line(7, true, b"[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]\n", &seen);
        let s = seen.lock().unwrap();
        assert_eq!(s.cuda_ipc[&7].1, 2);
        assert!(s.cuda_ipc[&7].0.starts_with("[rank0]"));
    }

    #[test]
    fn unhandled_instruction_lines() {
        assert_eq!(
            unhandled_bytes(
                "vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0xFE 0x48 0x6F 0x7"
            ),
            Some(("amd64", "0x62 0xF1 0xFE 0x48 0x6F 0x7"))
        );
        assert_eq!(
            unhandled_bytes("disInstr(arm64): unhandled instruction 0x04FC635A"),
            Some(("arm64", "0x04FC635A"))
        );
        assert_eq!(unhandled_bytes("vex amd64->IR:   REX=0 REX.W=0"), None);
        assert_eq!(
            unrecognised_at("==5372== valgrind: Unrecognised instruction at address 0x109159."),
            Some((5372, 0x109159))
        );
        assert_eq!(unrecognised_at("==5372== Your program just tried"), None);
    }

    #[test]
    fn unhandled_instruction_gets_its_process_and_address() {
        let seen = Mutex::new(Seen::default());
        // Credited: the decoder's line and Valgrind's, both from pid 40.
        check_line(
            40,
            true,
            b"vex amd64->IR: unhandled instruction bytes: 0x62 0xF1\n",
            &seen,
        );
        check_line(
            40,
            true,
            b"==40== valgrind: Unrecognised instruction at address 0x4001159.\n",
            &seen,
        );
        // ud2: Valgrind's line without the decoder's: nothing recorded.
        check_line(
            41,
            true,
            b"==41== valgrind: Unrecognised instruction at address 0x10.\n",
            &seen,
        );
        // A pipe: every line credited to the target (7); the `==PID==` says 42.
        check_line(
            7,
            false,
            b"vex amd64->IR: unhandled instruction bytes: 0xF 0x38 0xCB\n",
            &seen,
        );
        check_line(
            7,
            false,
            b"==42== valgrind: Unrecognised instruction at address 0x20.\n",
            &seen,
        );
        let s = seen.lock().unwrap();
        let got: Vec<_> = s
            .unhandled
            .iter()
            .map(|u| (u.pid, u.arch.as_str(), u.bytes.as_str(), u.address))
            .collect();
        assert_eq!(
            got,
            vec![
                (40, "amd64", "0x62 0xF1", Some(0x4001159)),
                (42, "amd64", "0xF 0x38 0xCB", Some(0x20)),
            ]
        );
    }

    /// Valgrind 3.19's standard error for `tests/programs/c/unhandled_insn.c`
    /// (`gcc -g -O1`, the AVX-512 mode), from `valgrind --xml=yes
    /// --xml-file=/dev/null --leak-check=full ./unhandled_insn`.
    const RECORDED: &str = "\
vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 0xFE 0x48 0x6F 0x7 0x62 0xF1 0x7D 0x48
vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0
vex amd64->IR:   VEX=0 VEX.L=0 VEX.nVVVV=0x0 ESC=NONE
vex amd64->IR:   PFX.66=0 PFX.F2=0 PFX.F3=0
==22731== valgrind: Unrecognised instruction at address 0x109169.
==22731== Your program just tried to execute an instruction that Valgrind
==22731== did not recognise.  There are two possible reasons for this.
==22731== 1. Your program has a bug and erroneously jumped to a non-code
==22731==    location.  If you are running Memcheck and you just saw a
==22731==    warning about a bad jump, it's probably your program's fault.
==22731== 2. The instruction is legitimate but Valgrind doesn't handle it,
==22731==    i.e. it's Valgrind's fault.  If you think this is the case or
==22731==    you are not sure, please let us know and we'll try to fix it.
==22731== Either way, Valgrind will now raise a SIGILL signal which will
==22731== probably kill your program.
";

    #[test]
    fn recorded_stderr() {
        let seen = Mutex::new(Seen::default());
        for l in RECORDED.split_inclusive('\n') {
            check_line(22731, true, l.as_bytes(), &seen);
        }
        let s = seen.lock().unwrap();
        assert_eq!(
            s.unhandled,
            vec![UnhandledInstruction {
                pid: 22731,
                arch: "amd64".into(),
                bytes: "0x62 0xF1 0xFE 0x48 0x6F 0x7 0x62 0xF1 0x7D 0x48".into(),
                address: Some(0x109169),
            }]
        );
        assert_eq!(s.valgrind_log.len(), 11);
    }
}
