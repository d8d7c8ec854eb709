//! The Markdown renderer (`--markdown FILE`, and appended to
//! `$GITHUB_STEP_SUMMARY` when that is set): the verdict, its reasons, a
//! short table of the user findings, the baseline's fixed entries and one
//! line of noise. Meant for a CI job summary or a merge-request comment.

use std::fmt::Write as _;

use crate::render::ci::{self, CiContext, md_cell};
use crate::report::{BaselineState, Report};
use crate::util::{plural, thousands};

/// Table rows shown before "... and N more".
const MAX_ROWS: usize = 50;

/// Renders the summary.
pub fn render(r: &Report, ctx: &CiContext) -> String {
    let mut o = String::new();
    let (icon, word) = match r.verdict.status.as_str() {
        "pass" => ("✅", "passed"),
        "fail" => ("❌", "failed"),
        "incomplete" => ("⚠️", "incomplete"),
        "target_failed" => ("⚠️", "target failed"),
        _ => ("❌", "error"),
    };
    let user = ci::user_findings(r);
    let failing = user.iter().filter(|f| f.fails).count();
    let _ = writeln!(
        o,
        "### {icon} leakgate: {word} — {} in your code, {failing} failing the gate\n",
        match user.len() {
            1 => "1 finding".to_string(),
            n => format!("{n} findings"),
        }
    );
    for reason in &r.verdict.reasons {
        let _ = writeln!(o, "- {}", md_cell(reason));
    }
    if !r.verdict.reasons.is_empty() {
        o.push('\n');
    }
    if !user.is_empty() {
        let with_baseline = r.baseline.is_some();
        if with_baseline {
            let _ = writeln!(o, "| | kind | where | function | bytes | baseline |");
            let _ = writeln!(o, "|---|---|---|---|---:|---|");
        } else {
            let _ = writeln!(o, "| | kind | where | function | bytes |");
            let _ = writeln!(o, "|---|---|---|---|---:|");
        }
        for f in user.iter().take(MAX_ROWS) {
            let mark = if f.fails {
                "❌"
            } else if f.is_known() || f.at_import {
                "➖"
            } else {
                "⚠️"
            };
            let bytes = if f.is_leak() {
                thousands(f.bytes.unwrap_or(0))
            } else {
                String::new()
            };
            let _ = write!(
                o,
                "| {mark} | `{}`{} | `{}` | `{}` | {bytes} |",
                f.kind,
                if f.at_import {
                    " (made once at import)"
                } else {
                    ""
                },
                md_cell(&ci::place(ctx, f)),
                md_cell(ci::function(f))
            );
            if with_baseline {
                let _ = write!(o, " {} |", f.baseline.map_or("", BaselineState::as_str));
            }
            o.push('\n');
        }
        if user.len() > MAX_ROWS {
            let _ = writeln!(o, "\n… and {} more", user.len() - MAX_ROWS);
        }
        o.push('\n');
    }
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            o,
            "Baseline `{}`: {} new, {} known, {} fixed.",
            md_cell(&ctx.file_shown(&b.file)),
            b.new,
            b.known,
            b.fixed.len()
        );
        for e in &b.fixed {
            let _ = writeln!(o, "- fixed: {}", md_cell(&e.description));
        }
        o.push('\n');
    }
    let _ = writeln!(o, "Noise (not yours): {}.", md_cell(&ci::noise_line(r)));
    if r.summary.suppressed.records > 0 {
        let _ = writeln!(
            o,
            "Suppressed: {}.",
            plural(r.summary.suppressed.records, "record", "records")
        );
    }
    o
}
