//! The processes of a run: Valgrind and the target run in their own process
//! group (so a timeout or Ctrl-C reaches every traced child and nothing
//! else), leakgate becomes their subreaper (so orphaned children are waited
//! for and their exit statuses known), and the default
//! `--trace-children-skip` list.

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

/// Reaps every child that has ended, without blocking.
pub fn reap(into: &mut HashMap<u64, ExitStatus>) -> Vec<u64> {
    let mut ended = Vec::new();
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid with a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
        let st = if libc::WIFEXITED(status) {
            ExitStatus::Code(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            ExitStatus::Signal(super::signal_name(libc::WTERMSIG(status)))
        } else {
            continue;
        };
        into.insert(pid as u64, st);
        ended.push(pid as u64);
    }
    ended
}

/// Whether any process of the group is still alive (zombies included, so
/// reap first).
pub fn group_alive(pgid: u32) -> bool {
    let Ok(pg) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence.
    unsafe { libc::kill(-pg, 0) == 0 }
}
