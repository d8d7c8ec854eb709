//! Stage 6 of the pipeline: renderers. One file per output format; each takes
//! the finished [`Report`](crate::report::Report) and produces text.

pub mod annotations;
pub mod ci;
pub mod codequality;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod text;

use crate::kind::Kind;
use crate::report::{Finding, FrameOut, Report};
use crate::util::plural;

/// The verdict in words, for people: what fails the gate first, then what
/// was reported but does not fail it. `2 definitely-lost leaks in your
/// code`; a pass reads as one: `no gated leaks or memory errors in your
/// code; reported, not gated: 6 possibly-lost leaks`; `no leaks or memory
/// errors in your code` when there is nothing of the user's.
pub fn user_findings_phrase(r: &Report) -> String {
    let user: Vec<&Finding> = r.findings.iter().filter(|f| f.is_user_shown()).collect();
    if user.is_empty() {
        return "no leaks or memory errors in your code".into();
    }
    let (failing, others): (Vec<&Finding>, Vec<&Finding>) = user.iter().partition(|f| f.fails);
    let mut out = if failing.is_empty() {
        "no gated leaks or memory errors in your code".to_string()
    } else {
        format!("{} in your code", by_kind_phrase(&failing))
    };
    if !others.is_empty() {
        let label = if others.iter().any(|f| f.is_gated()) {
            "reported, not failing the gate"
        } else if failing.is_empty() {
            "reported, not gated"
        } else {
            "also reported, not gated"
        };
        out.push_str(&format!("; {label}: {}", by_kind_phrase(&others)));
    }
    out
}

/// `2 definitely-lost leaks, 1 InvalidRead error, 3 definitely-lost leaks
/// made once at import`, in report order.
fn by_kind_phrase(findings: &[&Finding]) -> String {
    let mut by_kind: Vec<((&Kind, bool), u64)> = Vec::new();
    for f in findings {
        let key = (&f.kind, f.at_import);
        match by_kind.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => by_kind.push((key, 1)),
        }
    }
    let parts: Vec<String> = by_kind
        .iter()
        .map(|((k, at_import), n)| {
            let (one, many) = k.noun();
            let p = plural(*n, &one, &many);
            if *at_import {
                format!("{p} made once at import")
            } else {
                p
            }
        })
        .collect();
    parts.join(", ")
}

/// The user's definitely lost leaks as their findings show them: bytes
/// (with the indirect blocks each owns, Valgrind's "48 (16 direct, 32
/// indirect) bytes"), of which direct, and blocks.
pub fn definitely_lost(r: &Report) -> (u64, u64, u64) {
    r.findings
        .iter()
        .filter(|f| f.is_user() && f.kind == Kind::DefinitelyLost)
        .fold((0u64, 0u64, 0u64), |(b, d, n), f| {
            let bytes = f.bytes.unwrap_or(0);
            (
                b.saturating_add(bytes),
                d.saturating_add(f.direct_bytes.unwrap_or(bytes)),
                n.saturating_add(f.blocks.unwrap_or(0)),
            )
        })
}

/// `232 bytes (56 direct, 176 indirect)`, or `56 bytes` when all are
/// direct: a leak's bytes, in the words of every finding and summary.
pub fn bytes_split(bytes: u64, direct: u64) -> String {
    let s = crate::util::plural(bytes, "byte", "bytes");
    if direct == bytes {
        return s;
    }
    format!(
        "{s} ({} direct, {} indirect)",
        crate::util::thousands(direct),
        crate::util::thousands(bytes.saturating_sub(direct))
    )
}

/// An indirectly lost part under the leak that owns it: `32 bytes in 1
/// block at leak_kinds.c:37 in leak_indirect`.
pub fn indirect_part_text(p: &crate::report::IndirectPart) -> String {
    let at = p.location.as_ref().map_or_else(
        || "???".to_string(),
        |l| {
            let place = match (&l.file, l.line) {
                (Some(file), Some(n)) => format!("{file}:{n}"),
                _ => l.object.clone().unwrap_or_else(|| "???".into()),
            };
            format!("{place} in {}", l.function.as_deref().unwrap_or("???"))
        },
    );
    format!(
        "{} in {} at {at}",
        crate::util::plural(p.bytes, "byte", "bytes"),
        crate::util::plural(p.blocks, "block", "blocks")
    )
}

/// How to learn whether a leak grows per call: said once per report, where
/// leaks' growth is unknown (not on every finding).
pub const GROWTH_HINT: &str = "--repeat 2 or more tells per-call leaks from one-time ones";

/// The user's leaks grown in a test or `checkpoint()` whose growth is
/// neither per-call nor one-time (`--repeat` can tell those; not a leak
/// seen only before the first test or at exit, which run once).
pub fn unknown_growth_leaks(r: &Report) -> u64 {
    r.findings
        .iter()
        .filter(|f| f.is_user_shown() && f.is_leak())
        .filter(|f| {
            f.tests
                .iter()
                .any(|t| matches!(t.kind.as_str(), "test" | "checkpoint"))
        })
        .filter(|f| {
            !matches!(
                f.growth,
                Some(crate::report::Growth::PerCall | crate::report::Growth::OneTime)
            )
        })
        .count() as u64
}

/// Which frames of a stack a person needs to see (the text report prints
/// the others as `... N frames`, the HTML folds them): the user's frames
/// and one frame either side; the innermost three when no frame is the
/// user's; and a lone frame between shown ones (a fold of one frame would
/// cost a line anyway).
pub fn shown_frames(frames: &[FrameOut]) -> Vec<bool> {
    let n = frames.len();
    let mut keep = vec![false; n];
    for (i, fr) in frames.iter().enumerate() {
        if fr.user {
            keep[i.saturating_sub(1)..(i + 2).min(n)].fill(true);
        }
    }
    if !keep.contains(&true) {
        keep.iter_mut().take(3).for_each(|k| *k = true);
    }
    for i in 0..n {
        let before = i == 0 || keep[i - 1];
        let after = i + 1 == n || keep[i + 1];
        if !keep[i] && before && after {
            keep[i] = true;
        }
    }
    keep
}

/// A run report of `command` with `processes` and `findings`, for the
/// renderers' unit tests.
#[cfg(test)]
pub(crate) fn test_report(
    command: &[&str],
    processes: serde_json::Value,
    findings: Vec<Finding>,
) -> Report {
    serde_json::from_value(serde_json::json!({
        "schema_version": 1,
        "tool": {"name": "leakgate", "version": "0"},
        "valgrind": {"version": "3.22.0", "protocol": 4},
        "mode": "run", "command": command, "environment": [],
        "target_exit": {"code": 0},
        "processes": processes, "findings": findings, "notes": [], "src_roots": [],
        "summary": serde_json::to_value(crate::report::Summary::default()).unwrap(),
        "verdict": {"status": "pass", "exit_code": 0, "reasons": []},
    }))
    .unwrap()
}

/// A user leak of `kind` in `make_tree` at `m.c:line` (pid 7, one block),
/// `bytes` in all of which `direct` direct, for the renderers' unit tests.
#[cfg(test)]
pub(crate) fn test_leak(
    kind: crate::report::Kind,
    fingerprint: &str,
    line: u32,
    bytes: u64,
    direct: u64,
) -> Finding {
    Finding {
        fingerprint: fingerprint.into(),
        kind,
        category: crate::report::Category::User,
        bytes: Some(bytes),
        direct_bytes: Some(direct),
        blocks: Some(1),
        pids: vec![7],
        location: Some(crate::report::Location {
            function: Some("make_tree".into()),
            file: Some("m.c".into()),
            path: None,
            line: Some(line),
            object: None,
            generated: None,
        }),
        ..Finding::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(user: &[bool]) -> Vec<FrameOut> {
        user.iter()
            .map(|u| FrameOut {
                function: None,
                object: None,
                file: None,
                path: None,
                line: None,
                ip: None,
                user: *u,
                generated: None,
            })
            .collect()
    }

    #[test]
    fn user_frames_and_their_neighbours_are_shown() {
        let k = shown_frames(&stack(&[
            false, false, false, true, false, false, false, false,
        ]));
        assert_eq!(k, [false, false, true, true, true, false, false, false]);
        // no user frame: the innermost three (and a lone gap filled)
        let k = shown_frames(&stack(&[false; 5]));
        assert_eq!(k, [true, true, true, false, false]);
        let k = shown_frames(&stack(&[false; 4]));
        assert_eq!(k, [true, true, true, true]);
        // a single frame between shown ones is shown
        let k = shown_frames(&stack(&[true, false, false, true, false, false, false]));
        assert_eq!(k, [true, true, true, true, true, false, false]);
    }
}
