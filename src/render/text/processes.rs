//! The text report's process table: pid, parent, how each process ended,
//! whether its XML is complete, its command line (shell-quoted), in columns
//! under one header; the fork children that only exec'd a program leakgate
//! does not trace (a compiler building the probe's shim, `uname`, ...) are
//! one line after it, not rows that read as the user's processes.

use std::fmt::Write as _;

use crate::model::ExitStatus;
use crate::report::{ProcessOut, Report};
use crate::util::{plural, shell_join};

/// A part that is only a fork child's time before it exec'd a program
/// Valgrind does not trace (`--trace-children-skip`): the pid has no other
/// part, so nothing of that program was checked.
pub(super) fn is_untraced_exec(r: &Report, p: &ProcessOut) -> bool {
    p.pre_exec
        && p.records == 0
        && p.pid.is_some()
        && r.processes.iter().filter(|q| q.pid == p.pid).count() == 1
}

/// One row: the columns of [`process_table`]'s header.
fn row(pid: &str, ppid: &str, ended: &str, xml: &str, cmd: &str) -> String {
    format!("  {pid:>9} {ppid:>7}  {ended:<16} {xml:<13}  {cmd}")
        .trim_end()
        .to_string()
}

/// The process table, when more than one process of the target's was
/// traced or one ended abnormally.
pub(super) fn process_table(o: &mut String, r: &Report) {
    let (helpers, rows): (Vec<&ProcessOut>, Vec<&ProcessOut>) =
        r.processes.iter().partition(|p| is_untraced_exec(r, p));
    let notable = rows
        .iter()
        .any(|p| !p.complete || matches!(p.exit, Some(ExitStatus::Signal(_))));
    if rows.len() > 1 || notable {
        let _ = writeln!(o, "processes:");
        let _ = writeln!(o, "{}", row("pid", "ppid", "ended", "XML", "command"));
        for p in rows {
            let ended = match &p.exit {
                Some(ExitStatus::Code(c)) => format!("exit {c}"),
                Some(ExitStatus::Signal(s)) => format!("killed by {s}"),
                None if p.pre_exec => "exec'd".to_string(),
                None if p.complete => "finished".to_string(),
                None => "?".to_string(),
            };
            let xml = if p.pre_exec {
                "pre-exec part"
            } else if p.complete {
                "complete"
            } else {
                "INCOMPLETE"
            };
            let mut cmd = shell_join(&p.command);
            if cmd.chars().count() > 80 {
                cmd = cmd.chars().take(77).collect::<String>() + "...";
            }
            if p.forked {
                cmd.push_str(" (fork)");
            }
            let id = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
            let _ = writeln!(o, "{}", row(&id(p.pid), &id(p.ppid), &ended, xml, &cmd));
        }
    }
    if !helpers.is_empty() {
        let _ = writeln!(
            o,
            "processes: also {} that exec'd a program leakgate does not trace (a compiler or tool: --trace-children-skip), not checked",
            plural(helpers.len() as u64, "fork child", "fork children")
        );
    }
}
