//! Signals during a run: leakgate catches SIGINT, SIGTERM and SIGHUP while
//! the target runs (the handler only records the signal), so that it can
//! forward them to Valgrind's process group and still print a report. The
//! previous dispositions come back when the guard drops.
#![allow(unsafe_code)] // sigaction and kill(-pgid, sig): std cannot catch signals or signal a group

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// The last signal received (0: none).
static LAST: AtomicI32 = AtomicI32::new(0);
/// How many were received.
static COUNT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
}

const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Restores the previous signal dispositions on drop.
pub struct Guard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

/// Installs the recording handler for SIGINT, SIGTERM and SIGHUP.
pub fn install() -> Guard {
    LAST.store(0, Ordering::SeqCst);
    COUNT.store(0, Ordering::SeqCst);
    let mut old = Vec::new();
    for sig in CAUGHT {
        // SAFETY: a zeroed sigaction is a valid initial value; the handler
        // only touches atomics (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut prev: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &sa, &mut prev) == 0 {
                old.push((sig, prev));
            }
        }
    }
    Guard { old }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring a disposition sigaction returned earlier.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}

/// `(last signal, how many)` received since [`install`].
pub fn received() -> (i32, usize) {
    (LAST.load(Ordering::SeqCst), COUNT.load(Ordering::SeqCst))
}

/// Sends `sig` to every process of the process group `pgid`.
pub fn kill_group(pgid: u32, sig: libc::c_int) -> bool {
    let Ok(pg) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: plain kill(2) on a negative pid (a process group).
    unsafe { libc::kill(-pg, sig) == 0 }
}

/// Sends `sig` to the process `pid` (the error when it cannot: gone, or
/// not ours); signal 0 only asks whether it exists.
pub fn kill_one(pid: i32, sig: libc::c_int) -> Result<(), std::io::Error> {
    // SAFETY: plain kill(2) to one process.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `11` → `SIGSEGV`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}
