//! The processes of a run: Valgrind and the target run in their own process
//! group (so a timeout or Ctrl-C reaches every traced child and nothing
//! else), leakgate becomes their subreaper (so orphaned children are waited
//! for and their exit statuses known; only members of that group are
//! reaped, never other children of the calling process), and the default
//! `--trace-children-skip` list.
#![allow(unsafe_code)] // prctl(PR_SET_CHILD_SUBREAPER) and waitid(P_PGID, WNOWAIT): no std API

use std::collections::HashMap;

use crate::model::ExitStatus;

/// Programs Valgrind does not trace into by default (`--trace-children-skip`):
/// compilers, linkers and build tools a test may start (`ctypes.util`
/// runs `gcc`/`ld`, torch's JIT runs `nvcc`/`ninja`), version-control and
/// system query tools (`git`, `uname`, `ldconfig`, `nvidia-smi`,
/// `lsb_release`). Their leaks are not the user's and tracing them costs
/// minutes. Shells (`sh -c ...`) and `env` are traced: skipping them would
/// also leave untraced everything they start, and most exec the real target.
pub const DEFAULT_SKIP: &str = "*/gcc,*/gcc-[0-9]*,*/cc,*/g++,*/g++-[0-9]*,*/c++,*/clang,*/clang++,*/cc1,*/cc1plus,*/collect2,*/as,*/ld,*/ld.bfd,*/ld.gold,*/ld.lld,*/x86_64-linux-gnu-*,*/make,*/gmake,*/cmake,*/ninja,*/nvcc,*/ptxas,*/cicc,*/fatbinary,*/nvlink,*/cudafe++,*/git,*/uname,*/ldconfig,*/ldconfig.real,*/nvidia-smi,*/lsb_release";

/// Makes leakgate the subreaper of its descendants (Linux), so that
/// orphaned traced children are reparented to it and reaped by [`reap`].
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Reaps, without blocking, the children of leakgate that ended and belong
/// to the run: processes of the process group `pgid` (Valgrind's, which
/// leakgate created) other than those in `owned`.
///
/// A child that is not in that group is never touched: it belongs to
/// someone else in this process (a `std::process::Child` the caller waits
/// for, a library user's own children) and reaping it would make their
/// `wait()` fail with `ECHILD`. Members of the group that are children of
/// leakgate are Valgrind itself and orphans reparented to the subreaper.
/// Each ended member is first looked at without being reaped (`WNOWAIT`):
/// one listed in `owned` (Valgrind's pid, waited for through its
/// `std::process::Child`) is left for its owner, and the loop stops there
/// (the next `waitid` would report the same process again); any other is
/// reaped by its pid. An orphan that left the group (`setsid`) is not
/// reaped here; it stays a zombie until leakgate exits.
pub fn reap(pgid: u32, owned: &[u32], into: &mut HashMap<u64, ExitStatus>) -> Vec<u64> {
    let mut ended = Vec::new();
    let pg: libc::id_t = pgid;
    while let Some((pid, st)) = wait_one(libc::P_PGID, pg, libc::WNOWAIT) {
        if owned.contains(&pid) {
            break;
        }
        // Reap exactly the process looked at.
        if wait_one(libc::P_PID, pid, 0).is_none() {
            break;
        }
        if let Some(st) = st {
            into.insert(u64::from(pid), st);
            ended.push(u64::from(pid));
        }
    }
    ended
}

/// `waitid(idtype, id, WEXITED | WNOHANG | extra)`: the pid of an ended
/// child and how it ended (`None` for a status that is neither an exit nor
/// a signal); `None` when no child has ended or there is none.
fn wait_one(
    idtype: libc::idtype_t,
    id: libc::id_t,
    extra: libc::c_int,
) -> Option<(u32, Option<ExitStatus>)> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out value (si_pid stays 0
        // when WNOHANG finds nothing).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid with a valid out pointer.
        let r =
            unsafe { libc::waitid(idtype, id, &mut info, libc::WEXITED | libc::WNOHANG | extra) };
        if r != 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        // SAFETY: waitid filled in a SIGCHLD siginfo (or left it zeroed).
        let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
        let pid = u32::try_from(pid).ok().filter(|&p| p > 0)?;
        let st = match info.si_code {
            libc::CLD_EXITED => Some(ExitStatus::Code(status)),
            libc::CLD_KILLED | libc::CLD_DUMPED => {
                Some(ExitStatus::Signal(super::signals::signal_name(status)))
            }
            _ => None,
        };
        return Some((pid, st));
    }
}

/// Whether any process of the group is still alive (zombies included, so
/// reap first).
pub fn group_alive(pgid: u32) -> bool {
    // Signal 0 only checks for existence.
    super::signals::kill_group(pgid, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// Whether `pid` has ended and waits to be reaped (state `Z`).
    fn is_zombie(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('Z')))
            .unwrap_or(false)
    }

    /// A child the caller owns (a `std::process::Child`, outside the run's
    /// group) that ended while the reaper ran is still the caller's to
    /// wait for; the orphans of the run's group are reaped, its leader
    /// (owned by its `Child`) is not.
    #[test]
    fn reaper_leaves_the_callers_children() {
        become_subreaper();
        let mut mine = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        // The run: a group leader that leaves an orphan (the background
        // `sleep`, reparented to this process, the subreaper) behind.
        let mut leader = Command::new("sh")
            .args(["-c", "sleep 0.3 >/dev/null & echo $! ; exit 5"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(leader.stdout.as_mut().unwrap(), &mut out).unwrap();
        let orphan: u64 = out.trim().parse().unwrap();
        let (pg, mine_pid) = (leader.id(), mine.id());
        let deadline = Instant::now() + Duration::from_secs(60);
        // The caller's child has ended before the reaper runs.
        while !is_zombie(mine_pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut exits = HashMap::new();
        let mut leader_ended = false;
        while (!leader_ended || group_alive(pg)) && Instant::now() < deadline {
            reap(pg, &[pg], &mut exits);
            leader_ended = leader_ended || leader.try_wait().unwrap().is_some();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(leader.wait().unwrap().code(), Some(5));
        assert_eq!(exits.get(&orphan), Some(&ExitStatus::Code(0)), "{exits:?}");
        assert!(!exits.contains_key(&u64::from(pg)), "{exits:?}");
        assert!(!exits.contains_key(&u64::from(mine_pid)), "{exits:?}");
        // waitpid(-1) would have taken it: wait() would fail with ECHILD.
        assert_eq!(mine.wait().unwrap().code(), Some(3));
    }
}
