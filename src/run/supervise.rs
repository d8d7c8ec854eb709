//! Supervising a started run: reaping Valgrind and the orphans of its
//! process group, forwarding signals, `--timeout`, `--kill-after` and the
//! grace period for children that outlive the target; process statuses and
//! signal names in the report's form; durations as the options take them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::config::RunConfig;
use super::signals::signal_name;
use super::{children, progress, signals};
use crate::model::ExitStatus;
use crate::report::StoppedOut;

/// What supervising the run found.
pub(super) struct Supervised {
    pub(super) exits: HashMap<u64, ExitStatus>,
    pub(super) stopped: Option<StoppedOut>,
    pub(super) stopped_children: Option<String>,
}

/// Waits for the target and every process of its group, reaping them;
/// stops the group on timeout or a signal to leakgate (the signal, or
/// SIGTERM on timeout, then SIGKILL after `kill_after`; a second Ctrl-C
/// kills at once).
pub(super) fn supervise(
    child: &mut std::process::Child,
    cfg: &RunConfig,
    started: Instant,
) -> Supervised {
    let pid = child.id();
    let mut exits = HashMap::new();
    let mut stopped: Option<StoppedOut> = None;
    let mut stopped_children = None;
    let mut kill_at: Option<Instant> = None;
    let mut killed = false;
    let mut handled_signals = 0usize;
    let mut target_ended: Option<Instant> = None;
    let main = u64::from(pid);
    loop {
        // Valgrind's pid is its leader: orphans of the group are reaped
        // here, Valgrind itself through its `Child`.
        children::reap(pid, &[pid], &mut exits);
        if target_ended.is_none() {
            let status = match child.try_wait() {
                Ok(Some(status)) => Some(exit_status(status)),
                Ok(None) => None,
                Err(_) => Some(ExitStatus::Code(-1)),
            };
            if let Some(status) = status {
                exits.insert(main, status);
                target_ended = Some(Instant::now());
            }
        }
        if target_ended.is_some() && !children::group_alive(pid) {
            break;
        }
        let (sig, count) = signals::received();
        if count > handled_signals {
            handled_signals = count;
            if stopped.is_none() {
                let name = signal_name(sig);
                signals::kill_group(pid, sig);
                stopped = Some(StoppedOut {
                    reason: "interrupted".into(),
                    detail: format!(
                        "interrupted by {name} after {}: {name} forwarded to Valgrind's process group",
                        progress::elapsed(started.elapsed())
                    ),
                    signals_sent: vec![name],
                });
                kill_at = Some(Instant::now() + cfg.kill_after);
            } else if !killed {
                signals::kill_group(pid, libc::SIGKILL);
                killed = true;
                if let Some(s) = stopped.as_mut() {
                    s.signals_sent.push("SIGKILL".into());
                    s.detail.push_str("; SIGKILL at the second signal");
                }
            }
        }
        if stopped.is_none()
            && let Some(t) = cfg.timeout
            && started.elapsed() >= t
        {
            signals::kill_group(pid, libc::SIGTERM);
            stopped = Some(StoppedOut {
                reason: "timeout".into(),
                detail: format!(
                    "timed out after {} (--timeout): SIGTERM sent to Valgrind's process group",
                    progress::elapsed(t)
                ),
                signals_sent: vec!["SIGTERM".into()],
            });
            kill_at = Some(Instant::now() + cfg.kill_after);
        }
        if stopped.is_none()
            && stopped_children.is_none()
            && cfg.timeout.is_none()
            && let Some(t) = target_ended
            && t.elapsed() >= cfg.children_grace
        {
            signals::kill_group(pid, libc::SIGTERM);
            stopped_children = Some(format!(
                "child processes were still running {} after the target exited: SIGTERM sent to them",
                progress::elapsed(cfg.children_grace)
            ));
            kill_at = Some(Instant::now() + cfg.kill_after);
        }
        if !killed
            && let Some(k) = kill_at
            && Instant::now() >= k
        {
            signals::kill_group(pid, libc::SIGKILL);
            killed = true;
            if let Some(s) = stopped.as_mut() {
                s.signals_sent.push("SIGKILL".into());
                s.detail.push_str(&format!(
                    "; SIGKILL after {} more (--kill-after)",
                    progress::elapsed(cfg.kill_after)
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Supervised {
        exits,
        stopped,
        stopped_children,
    }
}

/// Converts a process status into the report's form.
pub fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    if let Some(c) = status.code() {
        return ExitStatus::Code(c);
    }
    match status.signal() {
        Some(s) => ExitStatus::Signal(signal_name(s)),
        None => ExitStatus::Code(-1),
    }
}

/// Parses `90s`, `10m`, `1h`, `1m30s`, `500ms` or a plain number of
/// seconds (`--timeout`, `--kill-after`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("invalid duration {s:?} (use e.g. 90s, 10m, 1h30m, 500ms)");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = t.parse::<f64>() {
        return (n.is_finite() && n >= 0.0)
            .then(|| Duration::from_secs_f64(n))
            .ok_or_else(bad);
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "ms" => n / 1000.0,
            "s" | "sec" => n,
            "m" | "min" => n * 60.0,
            "h" => n * 3600.0,
            _ => return Err(bad()),
        };
        total += Duration::from_secs_f64(secs);
        rest = &rest[unit_len..];
    }
    Ok(total)
}
