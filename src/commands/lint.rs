//! `leakgate lint`: suppression files checked as Valgrind reads them.

use std::fmt::Write as _;

use anyhow::{Context, Result};

use super::outputs::print_stdout;

use super::config::target_valgrind;
use crate::cli::LintArgs;
use crate::suppress;

/// `leakgate lint FILE...`: checks suppression files the way the target
/// Valgrind reads them; every problem on its own line.
pub(super) fn lint(a: LintArgs) -> Result<i32> {
    let (target, from) = target_valgrind(a.valgrind.as_deref(), a.valgrind_version.as_deref())?;
    let mut bad = false;
    // Printed at the end, in one write (a closed pipe is no error).
    let mut out = String::new();
    macro_rules! outln {
        ($out:ident, $($arg:tt)*) => {{
            let _ = writeln!($out, $($arg)*);
        }};
    }
    for f in &a.files {
        match suppress::load::parse_file(f) {
            Err(e) => {
                outln!(out, "{e}");
                bad = true;
            }
            Ok(p) => {
                for e in &p.errors {
                    outln!(out, "{e}");
                }
                let mut rejected = 0;
                for s in &p.suppressions {
                    for w in &s.warnings {
                        // The parser's version remark is replaced by the
                        // target-aware line below.
                        if w.starts_with("kind ") && w.contains("needs Valgrind") {
                            continue;
                        }
                        outln!(out, "{}:{}: warning: {}: {w}", s.file, s.line, s.name);
                    }
                    let Some(range) = s.kind.accepted_range() else {
                        continue;
                    };
                    if s.kind.accepted_by(target) {
                        outln!(
                            out,
                            "{}:{}: note: {}: kind {} is read by {range}; Valgrind {target} reads it",
                            s.file,
                            s.line,
                            s.name,
                            s.kind_name
                        );
                    } else {
                        rejected += 1;
                        outln!(
                            out,
                            "{}:{}: {}: kind {} is read by {range}; Valgrind {target} rejects this file",
                            s.file,
                            s.line,
                            s.name,
                            s.kind_name
                        );
                    }
                }
                for s in p.suppressions.iter().filter(|s| s.tool == "CoreError") {
                    outln!(
                        out,
                        "{}:{}: note: {}: CoreError:{} is read by Valgrind 3.23 and later, with --track-fds (older ones skip it){}",
                        s.file,
                        s.line,
                        s.name,
                        s.kind_name,
                        if target.at_least(3, 23) {
                            ""
                        } else {
                            "; the target skips it"
                        }
                    );
                }
                if p.errors.is_empty() && rejected == 0 {
                    outln!(
                        out,
                        "{}: ok for Valgrind {target} ({from}) ({} Memcheck suppressions, {} for other tools)",
                        f.display(),
                        p.suppressions.len(),
                        p.skipped.len()
                    );
                } else {
                    bad = true;
                }
            }
        }
    }
    print_stdout(out.as_bytes()).context("cannot write to standard output")?;
    Ok(if bad {
        crate::exit::USAGE
    } else {
        crate::exit::PASS
    })
}
