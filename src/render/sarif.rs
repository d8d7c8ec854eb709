//! The SARIF 2.1.0 renderer (`--sarif FILE`), for GitHub code scanning and
//! other SARIF consumers.
//!
//! One run; one rule per Valgrind kind among the results (sorted, with help
//! text); one result per user finding, located at its user frame with a URI
//! relative to the repository root (`%SRCROOT%`), the whole stack as a code
//! flow (outermost call first), the other user frames and the auxiliary
//! stacks (where the block was freed or allocated, at their top user frame)
//! as related locations, `partialFingerprints["leakgate/v1"]` (stable
//! across runs, rebuilds and line shifts), and `baselineState`
//! (`new`/`unchanged`) with `--baseline`.
//! Findings that fail the gate are `error`s, the others `warning`s (kinds
//! not in `--fail-on`) or `note`s (known from the baseline). Noise is not
//! reported as results; the run's `properties.leakgate` summarise it, the
//! verdict and the baseline's fixed entries. Checked against the official
//! schema in `tests/it/ci_gate.rs`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::kind::Kind;
use crate::render::ci::{self, CiContext};
use crate::report::{AuxStack, BaselineState, Finding, FrameOut, Report, Status};

/// Where the SARIF 2.1.0 schema is published (GitHub's examples use it).
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Renders the report as SARIF 2.1.0 (pretty JSON and a newline).
pub fn render(r: &Report, ctx: &CiContext) -> String {
    let user = ci::user_findings(r);
    let kinds: Vec<&str> = user
        .iter()
        .map(|f| f.kind.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rules: Vec<Value> = kinds.iter().map(|k| rule(r, k)).collect();
    let results: Vec<Value> = user
        .iter()
        .map(|f| {
            let idx = kinds.iter().position(|k| f.kind == **k).unwrap_or(0);
            result(r, ctx, f, idx)
        })
        .collect();
    let mut run = json!({
        "tool": {
            "driver": {
                "name": r.tool.name,
                "version": r.tool.version,
                "semanticVersion": r.tool.version,
                "rules": rules,
            }
        },
        "invocations": [invocation(r)],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {
            "leakgate": {
                "verdict": r.verdict,
                "noise": {
                    "findings": r.summary.noise.findings,
                    "records_by_source": r.summary.noise.by_source,
                    "bytes_by_source": r.summary.noise.bytes_by_source,
                },
                "suppressed_records": r.summary.suppressed.records,
                "fixed": r.baseline.as_ref().map(|b| &b.fixed),
            }
        },
    });
    if let Some(e) = &r.engine {
        run["properties"]["leakgate"]["engine"] = json!(e);
    }
    if let Some(root) = ctx.repo_root {
        run["originalUriBaseIds"] = json!({
            "%SRCROOT%": {
                "uri": dir_uri(&root.to_string_lossy()),
                "description": {"text": "The repository root (--repo-root)."},
            }
        });
    }
    if r.mode == "run" {
        run["invocations"][0]["commandLine"] = json!(crate::util::shell_join(&r.command));
    }
    let doc = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [run],
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("SARIF serialises");
    s.push('\n');
    s
}

fn invocation(r: &Report) -> Value {
    let notes: Vec<Value> = r
        .notes
        .iter()
        .map(|n| json!({"level": "note", "message": {"text": n}}))
        .chain(r.verdict.reasons.iter().map(|n| {
            json!({"level": if r.verdict.status == Status::Incomplete { "error" } else { "note" },
                   "message": {"text": n}})
        }))
        .collect();
    json!({
        "executionSuccessful": !matches!(r.verdict.status, Status::Incomplete | Status::Error),
        "exitCode": r.verdict.exit_code,
        "toolExecutionNotifications": notes,
    })
}

/// The rule's level: `error` when the gate counted this kind's findings
/// (their `gated`), else `warning`.
fn rule(r: &Report, kind: &str) -> Value {
    let kind_t = Kind::parse(kind);
    let (short, full) = ci::kind_help(&kind_t);
    let gated = r.findings.iter().any(|f| f.kind == kind_t && f.is_gated());
    let leak = kind_t.is_leak();
    let tag = if leak { "memory-leak" } else { "memory-error" };
    json!({
        "id": kind,
        "name": kind.replace('_', ""),
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {
            "text": format!("{full}\n\nReported by Valgrind Memcheck (kind {kind}) through leakgate."),
            "markdown": format!("**{short}** (Valgrind Memcheck `{kind}`)\n\n{full}\n\nThe result's code flow is the {} stack, outermost call first.", if leak { "allocation" } else { "error's" }),
        },
        "defaultConfiguration": {"level": if gated { "error" } else { "warning" }},
        "properties": {"tags": ["memcheck", tag], "precision": "high"},
    })
}

fn level(f: &Finding) -> &'static str {
    if f.fails {
        "error"
    } else if f.is_known() || f.at_import {
        "note"
    } else {
        "warning"
    }
}

fn result(r: &Report, ctx: &CiContext, f: &Finding, rule_index: usize) -> Value {
    let mut text = format!("{} ({})", ci::headline(f), ci::place(ctx, f));
    if let Some(src) = ci::source(f) {
        text.push_str(&format!(": `{src}`"));
    }
    for p in &f.indirect_parts {
        text.push_str(&format!(
            "; with it, indirectly lost: {}",
            crate::render::indirect_part_text(p)
        ));
    }
    if let Some(why) = ci::why_not_failing(r, f) {
        text.push_str(&format!(". {why}"));
    }
    let mut res = json!({
        "ruleId": f.kind,
        "ruleIndex": rule_index,
        "level": level(f),
        "message": {"text": text},
        "locations": [primary_location(ctx, f)],
        "partialFingerprints": {"leakgate/v1": ci::site_key(r, f)},
        "properties": {
            "fingerprint": f.fingerprint,
            "gated": f.is_gated(),
            "count": f.count,
            "pids": f.pids,
        },
    });
    if f.at_import {
        res["properties"]["atImport"] = json!(true);
    }
    if f.is_leak() {
        res["properties"]["bytes"] = json!(f.bytes);
        res["properties"]["blocks"] = json!(f.blocks);
    }
    if let Some(state) = &f.baseline {
        res["baselineState"] = json!(match state {
            BaselineState::Known => "unchanged",
            BaselineState::New => "new",
        });
    }
    if !f.stack.is_empty() {
        res["codeFlows"] = json!([code_flow(ctx, f)]);
    }
    let related = related(ctx, f);
    if !related.is_empty() {
        res["relatedLocations"] = json!(related);
    }
    res
}

/// The finding's location: repository-relative when inside the root, an
/// absolute `file:` URI for a local path elsewhere, else only its function.
fn primary_location(ctx: &CiContext, f: &Finding) -> Value {
    let loc = f.location.as_ref();
    let line = loc.and_then(|l| l.line).filter(|l| *l > 0);
    let mut out = json!({});
    let artifact = match (ctx.finding_path(f), loc.and_then(|l| l.path.as_deref())) {
        (Some(rel), _) => Some(json!({"uri": rel_uri(&rel), "uriBaseId": "%SRCROOT%"})),
        (None, Some(p)) if p.starts_with('/') => Some(json!({"uri": file_uri(p)})),
        (None, Some(p)) => Some(json!({"uri": rel_uri(p)})),
        (None, None) => None,
    };
    if let Some(artifact) = artifact {
        let mut phys = json!({"artifactLocation": artifact});
        if let Some(l) = line {
            let mut region = json!({"startLine": l});
            if let Some(src) = &f.source_line {
                region["snippet"] = json!({"text": src});
            }
            phys["region"] = region;
        }
        out["physicalLocation"] = phys;
    }
    if let Some(func) = loc.and_then(|l| l.function.as_deref()) {
        out["logicalLocations"] = json!([{"name": func, "kind": "function"}]);
    }
    out
}

/// A frame as a SARIF location: physical when inside the repository.
fn frame_location(ctx: &CiContext, fr: &FrameOut) -> Value {
    let mut out = json!({"message": {"text": ci::frame_text(fr)}});
    if let Some(rel) = ctx.frame_path(fr) {
        let mut phys =
            json!({"artifactLocation": {"uri": rel_uri(&rel), "uriBaseId": "%SRCROOT%"}});
        if let Some(l) = fr.line.filter(|l| *l > 0) {
            phys["region"] = json!({"startLine": l});
        }
        out["physicalLocation"] = phys;
    }
    if let Some(func) = &fr.function {
        out["logicalLocations"] = json!([{"name": func, "kind": "function"}]);
    }
    out
}

fn code_flow(ctx: &CiContext, f: &Finding) -> Value {
    let what = if f.is_leak() {
        "allocation stack"
    } else {
        "stack"
    };
    let locations: Vec<Value> = f
        .stack
        .iter()
        .rev()
        .enumerate()
        .map(|(depth, fr)| {
            json!({
                "location": frame_location(ctx, fr),
                "nestingLevel": depth,
                "importance": if fr.user { "essential" } else { "unimportant" },
            })
        })
        .collect();
    json!({
        "message": {"text": format!("{} ({what}, outermost call first)", f.kind)},
        "threadFlows": [{"locations": locations}],
    })
}

/// The other user frames inside the repository (callers of the location),
/// then each auxiliary stack (where the block was freed or allocated).
fn related(ctx: &CiContext, f: &Finding) -> Vec<Value> {
    let primary = f.stack.iter().position(|fr| fr.user);
    let mut out: Vec<Value> = f
        .stack
        .iter()
        .enumerate()
        .filter(|(i, fr)| fr.user && Some(*i) != primary && ctx.frame_path(fr).is_some())
        .map(|(_, fr)| {
            let mut l = frame_location(ctx, fr);
            l["message"] = json!({"text": format!("called from {}", ci::frame_text(fr))});
            l.as_object_mut().map(|o| o.remove("logicalLocations"));
            l
        })
        .collect();
    out.extend(f.aux_stacks.iter().map(|a| aux_location(ctx, a)));
    for (n, l) in out.iter_mut().enumerate() {
        l["id"] = json!(n + 1);
    }
    out
}

/// An auxiliary stack as a related location: its top user frame (else its
/// top frame with a source file), with Valgrind's text as the message
/// (`Address 0x… is 0 bytes inside a block of size 4 free'd`).
fn aux_location(ctx: &CiContext, a: &AuxStack) -> Value {
    let text = if a.text.is_empty() {
        "another stack"
    } else {
        a.text.as_str()
    };
    let mut out = json!({"message": {"text": text}});
    let top = a
        .stack
        .iter()
        .find(|fr| fr.user)
        .or_else(|| a.stack.iter().find(|fr| fr.file.is_some()));
    let Some(fr) = top else { return out };
    let artifact = match (ctx.frame_path(fr), fr.path.as_deref()) {
        (Some(rel), _) => Some(json!({"uri": rel_uri(&rel), "uriBaseId": "%SRCROOT%"})),
        (None, Some(p)) if p.starts_with('/') => Some(json!({"uri": file_uri(p)})),
        _ => None,
    };
    if let Some(artifact) = artifact {
        let mut phys = json!({"artifactLocation": artifact});
        if let Some(l) = fr.line.filter(|l| *l > 0) {
            phys["region"] = json!({"startLine": l});
        }
        out["physicalLocation"] = phys;
    }
    if let Some(func) = &fr.function {
        out["logicalLocations"] = json!([{"name": func, "kind": "function"}]);
    }
    out
}

/// Percent-encodes a path for a URI (RFC 3986: unreserved characters and
/// `/` stay).
fn encode_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A relative URI reference for a repository-relative path.
fn rel_uri(p: &str) -> String {
    encode_path(p.trim_start_matches("./"))
}

/// A `file:` URI for an absolute path.
fn file_uri(p: &str) -> String {
    format!("file://{}", encode_path(p))
}

/// A `file:` URI for a directory, ending in `/` (as `originalUriBaseIds` needs).
fn dir_uri(p: &str) -> String {
    let mut u = file_uri(p);
    if !u.ends_with('/') {
        u.push('/');
    }
    u
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        assert_eq!(rel_uri("src/my file.c"), "src/my%20file.c");
        assert_eq!(file_uri("/tmp/a+b.c"), "file:///tmp/a%2Bb.c");
        assert_eq!(dir_uri("/repo"), "file:///repo/");
    }
}
