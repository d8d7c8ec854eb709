//! A report directory that could not hold the XML: a full disk (ENOSPC), a
//! quota (EDQUOT) or the file-size limit (`ulimit -f`, RLIMIT_FSIZE) cut
//! Valgrind's XML short, and the parser alone would only say "file ends
//! inside <suppression>". After the run, [`diagnose`] looks at the report
//! files that do not end with `</valgrindoutput>` and at the evidence
//! (the file-size limit against their sizes, the free space of their
//! directory by `statvfs`, a small test write into it, Valgrind's standard
//! error, a process killed by SIGXFSZ) and names the cause: which
//! directory, how much was written, and how to point leakgate elsewhere
//! (`TMPDIR`). The run then ends incomplete (exit 3), never a pass.
//! [`survive_file_size_limit`] keeps leakgate itself from being killed by
//! SIGXFSZ, so that its own failed writes are said, not fatal.

#![allow(unsafe_code)] // statvfs, getrlimit and sigaction: no std API

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::model::ExitStatus;
use crate::util::thousands;

/// Bytes a test write puts into the directory to see whether it takes any.
const PROBE_BYTES: usize = 64 * 1024;

/// What stopped the XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cause {
    /// The file-size limit (`ulimit -f`), in bytes.
    FileSize(Option<u64>),
    /// The file system or the quota: the error seen, the bytes free.
    NoSpace { why: String, free: Option<u64> },
}

/// A SIGXFSZ handler that does nothing: a write over the file-size limit
/// then fails with EFBIG (said, like any failed write) instead of killing
/// leakgate. A handler, not SIG_IGN: exec resets it, so the target and
/// Valgrind keep the default disposition.
pub fn survive_file_size_limit() {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: an all-zero sigaction is valid; the handler is
    // async-signal-safe (it does nothing).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGXFSZ, &sa, std::ptr::null_mut());
    }
}

/// Why the report files in `dir` were cut short by the space they had, as
/// an incompleteness reason for the report, or `None` when no file was cut
/// or nothing points at space (a killed process cuts its XML too).
/// `reports`: the report files; `log`: Valgrind's standard error; `exits`:
/// how the processes ended. Second: the empty report files (nothing
/// written at all), to be left out of the analysis as missing.
pub fn diagnose(
    dir: &Path,
    reports: &[PathBuf],
    log: &str,
    exits: &HashMap<u64, ExitStatus>,
) -> Option<(String, Vec<PathBuf>)> {
    let cut: Vec<(PathBuf, u64)> = reports
        .iter()
        .filter(|p| !ends_complete(p) && !is_pre_exec(p, reports))
        .map(|p| (p.clone(), std::fs::metadata(p).map_or(0, |m| m.len())))
        .collect();
    let cause = cause(dir, &cut, log, exits)?;
    if cut.is_empty() && !reports.is_empty() {
        return None;
    }
    let written: u64 = reports
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let empty: Vec<PathBuf> = cut
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(p, _)| p.clone())
        .collect();
    let parent = dir.parent().unwrap_or(dir);
    let files = if cut.is_empty() {
        "no XML report could be written".to_string()
    } else {
        let (first, n) = &cut[0];
        format!(
            "{} of {} XML report{} cut short ({} at {} bytes{}), {} bytes written in all",
            cut.len(),
            reports.len(),
            if reports.len() == 1 { "" } else { "s" },
            first.file_name().unwrap_or_default().to_string_lossy(),
            thousands(*n),
            if empty.is_empty() {
                String::new()
            } else {
                format!(", {} empty", empty.len())
            },
            thousands(written)
        )
    };
    let text = match cause {
        Cause::FileSize(limit) => format!(
            "the file-size limit{} stopped Valgrind's XML in {}: {files}; raise it (`ulimit -f unlimited`) before leakgate run",
            limit.map_or_else(
                || " (ulimit -f)".to_string(),
                |l| format!(" (ulimit -f: {} bytes)", thousands(l))
            ),
            dir.display()
        ),
        Cause::NoSpace { why, free } => format!(
            "{} has no room for Valgrind's XML ({why}{}): {files} in {}; point leakgate at a directory with room: TMPDIR=/path/with/room leakgate run … (the XML and Valgrind's vgdb files go to $TMPDIR)",
            parent.display(),
            free.map_or_else(String::new, |f| format!(", {} bytes free", thousands(f))),
            dir.display()
        ),
    };
    Some((text, empty))
}

/// The cause, if any evidence points at space.
fn cause(
    dir: &Path,
    cut: &[(PathBuf, u64)],
    log: &str,
    exits: &HashMap<u64, ExitStatus>,
) -> Option<Cause> {
    let limit = file_size_limit();
    let at_limit = limit.is_some_and(|l| cut.iter().any(|(_, n)| *n >= l));
    let killed = exits
        .values()
        .any(|e| matches!(e, ExitStatus::Signal(s) if s == "SIGXFSZ" || s == "signal 25"));
    if at_limit || killed || log.contains("File size limit exceeded") {
        return Some(Cause::FileSize(limit));
    }
    let free = free_bytes(dir);
    for (needle, why) in [
        ("No space left on device", "No space left on device"),
        ("Disk quota exceeded", "Disk quota exceeded"),
        ("to shared mem", "Valgrind could not write its vgdb file"),
    ] {
        if log.contains(needle) {
            return Some(Cause::NoSpace {
                why: why.to_string(),
                free,
            });
        }
    }
    if cut.is_empty() {
        return None;
    }
    if let Some(e) = test_write(dir) {
        return Some(Cause::NoSpace { why: e, free });
    }
    // Next to nothing free for an unprivileged writer.
    if free.is_some_and(|f| f < PROBE_BYTES as u64) {
        return Some(Cause::NoSpace {
            why: "the file system is full".to_string(),
            free,
        });
    }
    None
}

/// Whether a report file ends with Valgrind's closing tag.
fn ends_complete(p: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(p) else {
        return true; // gone: not ours to explain
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let tail = len.min(256);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(len - tail)).is_err() || f.read_to_end(&mut buf).is_err() {
        return true;
    }
    String::from_utf8_lossy(&buf)
        .trim_end()
        .ends_with("</valgrindoutput>")
}

/// Whether `p` is the part of a process before a traced exec, which ends
/// without the closing tag by design: `vg.PID.N.xml` with N >= 2 beside
/// the `vg.PID.1.xml` of the same process after its exec.
fn is_pre_exec(p: &Path, reports: &[PathBuf]) -> bool {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let mut parts = name.split('.');
    let (Some("vg"), Some(pid), Some(n), Some("xml"), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    let after = p.with_file_name(format!("vg.{pid}.1.xml"));
    n.parse::<u32>().is_ok_and(|n| n >= 2) && reports.contains(&after)
}

/// Writes [`PROBE_BYTES`] into a new file in `dir` (removed again): the
/// error of a directory that takes no more bytes (ENOSPC, EDQUOT, EFBIG).
fn test_write(dir: &Path) -> Option<String> {
    let path = dir.join(".leakgate-space-probe");
    let res = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&vec![0u8; PROBE_BYTES])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    let e = res.err()?;
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => {
            // "No space left on device (os error 28)": the words only.
            let text = e.to_string();
            Some(text.split(" (os error").next().unwrap_or(&text).to_string())
        }
        _ => None,
    }
}

/// Bytes an unprivileged writer may still put on `dir`'s file system.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid C string; `st` is written by statvfs.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The soft file-size limit (RLIMIT_FSIZE) in bytes, `None` when unlimited.
pub(super) fn file_size_limit() -> Option<u64> {
    // SAFETY: `r` is written by getrlimit.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut r) } != 0 {
        return None;
    }
    (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as u64)
}

#[cfg(test)]
mod tests;
