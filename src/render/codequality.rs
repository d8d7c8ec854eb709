//! The GitLab Code Quality renderer (`--codequality FILE`), for
//! `artifacts:reports:codequality`: a JSON array with one issue per user
//! finding, carrying GitLab's required fields (`description`, `check_name`,
//! `fingerprint`, `severity`, `location.path`, `location.lines.begin`).
//! GitLab compares fingerprints between the merge request and its target
//! branch itself, so known findings are included like new ones.

use serde_json::{Value, json};

use crate::kind::Kind;
use crate::render::ci::{self, CiContext};
use crate::report::{Finding, Report};

/// Renders the report as a Code Quality JSON array (and a newline).
pub fn render(r: &Report, ctx: &CiContext) -> String {
    let issues: Vec<Value> = ci::user_findings(r)
        .into_iter()
        .map(|f| issue(r, ctx, f))
        .collect();
    let mut s = serde_json::to_string_pretty(&issues).expect("Code Quality serialises");
    s.push('\n');
    s
}

/// GitLab's severities (info, minor, major, critical, blocker): memory
/// errors are critical, lost memory major, possibly lost minor.
fn severity(f: &Finding) -> &'static str {
    match f.kind {
        Kind::StillReachable => "info",
        Kind::PossiblyLost => "minor",
        Kind::DefinitelyLost | Kind::IndirectlyLost => "major",
        _ => "critical",
    }
}

fn issue(r: &Report, ctx: &CiContext, f: &Finding) -> Value {
    let path = ctx.display_path(f).unwrap_or_else(|| "unknown".to_string());
    let line = f
        .location
        .as_ref()
        .and_then(|l| l.line)
        .filter(|l| *l > 0)
        .unwrap_or(1);
    let mut description = ci::headline(f);
    if let Some(src) = ci::source(f) {
        description.push_str(&format!(": {src}"));
    }
    let (short, full) = ci::kind_help(&f.kind);
    let mut body = format!("{full}\n\nStack:\n```\n{}```\n", ci::stack_text(f));
    let parts = ci::indirect_parts_text(f);
    if !parts.is_empty() {
        body.push_str(&format!("\n{parts}"));
    }
    if let Some(why) = ci::why_not_failing(r, f) {
        body.push_str(&format!("\n{why}\n"));
    }
    json!({
        "type": "issue",
        "description": description,
        "check_name": format!("leakgate/{}", f.kind),
        "fingerprint": format!("leakgate-{}", ci::site_key(r, f)),
        "severity": severity(f),
        "categories": ["Bug Risk"],
        "content": {"body": format!("**{short}**\n\n{body}")},
        "location": {
            "path": path,
            "lines": {"begin": line},
        },
    })
}
