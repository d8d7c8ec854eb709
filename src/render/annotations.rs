//! GitHub Actions workflow annotations (`::error file=…,line=…::…`),
//! printed when `GITHUB_ACTIONS=true` (`--annotations auto`) or always
//! (`--annotations always`). One per user finding: `error` when it fails the
//! gate, `warning` when it is only reported, `notice` when the baseline
//! knows it. GitHub shows at most 10 of each level per step, so more are
//! summed up in one notice. Paths are relative to the repository root.

use std::fmt::Write as _;

use crate::render::ci::{self, CiContext};
use crate::report::Report;

/// Annotations of one level printed before the rest are summed up.
pub const MAX_PER_LEVEL: usize = 10;

/// The workflow commands, one a line.
pub fn render(r: &Report, ctx: &CiContext) -> String {
    let mut o = String::new();
    let mut shown = [0usize; 3];
    let mut hidden = 0usize;
    for f in ci::user_findings(r) {
        let (level, slot) = if f.fails {
            ("error", 0)
        } else if f.is_known() || f.at_import {
            ("notice", 2)
        } else {
            ("warning", 1)
        };
        if shown[slot] >= MAX_PER_LEVEL {
            hidden += 1;
            continue;
        }
        shown[slot] += 1;
        let mut props = Vec::new();
        if let Some(p) = ctx.finding_path(f) {
            props.push(format!("file={}", escape_property(&p)));
            if let Some(l) = f.location.as_ref().and_then(|l| l.line).filter(|l| *l > 0) {
                props.push(format!("line={l}"));
            }
        }
        props.push(format!(
            "title={}",
            escape_property(&format!("leakgate: {}", f.kind))
        ));
        let mut msg = format!("{} ({})", ci::headline(f), ci::place(ctx, f));
        if let Some(src) = ci::source(f) {
            msg.push_str(&format!("\n    {src}"));
        }
        for p in &f.indirect_parts {
            msg.push_str(&format!(
                "\nwith it, indirectly lost: {}",
                crate::render::indirect_part_text(p)
            ));
        }
        if let Some(why) = ci::why_not_failing(r, f) {
            msg.push_str(&format!("\n{why}"));
        }
        let user_frames: Vec<String> = f
            .stack
            .iter()
            .filter(|fr| fr.user)
            .map(ci::frame_text)
            .collect();
        if user_frames.len() > 1 {
            msg.push_str(&format!("\ncalled from: {}", user_frames[1..].join(" <- ")));
        }
        let _ = writeln!(o, "::{level} {}::{}", props.join(","), escape_data(&msg));
    }
    if hidden > 0 {
        let _ = writeln!(
            o,
            "::notice title=leakgate::{}",
            escape_data(&format!(
                "{hidden} more finding(s) not annotated; see the leakgate report"
            ))
        );
    }
    o
}

/// Escapes a workflow command's message.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_data("50%\nx"), "50%25%0Ax");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
