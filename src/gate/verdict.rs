//! The verdict: the exit code and one reason per failed rule, read from
//! the marks [`super::mark`] set; and the notes on what the policy let pass.

use crate::model::ExitStatus;
use crate::report::{Finding, ProcessOut, Status, Verdict};

use super::decide::{Policy, gated_leaked_bytes, grows_per_call};

/// How many findings a reason names before "and N more".
const SITES_NAMED: usize = 5;

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `Leak_DefinitelyLost at spam.c:22 in spam_leaky (16 bytes)`.
fn site(f: &Finding) -> String {
    let mut s = f.kind.to_string();
    if let Some(loc) = &f.location {
        match (&loc.file, loc.line) {
            (Some(file), Some(l)) => s.push_str(&format!(" at {file}:{l}")),
            (Some(file), None) => s.push_str(&format!(" in {file}")),
            _ => {}
        }
        if let Some(func) = &loc.function {
            s.push_str(&format!(" in {func}"));
        }
    }
    if f.is_leak() {
        s.push_str(&format!(
            " ({})",
            plural(f.bytes.unwrap_or(0), "byte", "bytes")
        ));
        if let Some(pc) = f.per_call.as_ref().filter(|_| grows_per_call(f)) {
            s.push_str(&format!(
                " growing by {} per call",
                plural(pc.bytes, "byte", "bytes")
            ));
        }
    }
    s
}

fn sites(fs: &[&Finding]) -> String {
    let mut parts: Vec<String> = fs.iter().take(SITES_NAMED).map(|f| site(f)).collect();
    if fs.len() > SITES_NAMED {
        parts.push(format!("and {} more", fs.len() - SITES_NAMED));
    }
    parts.join("; ")
}

fn count_by_kind(fs: &[&Finding]) -> String {
    let mut by_kind: std::collections::BTreeMap<&str, u64> = Default::default();
    for f in fs {
        *by_kind.entry(f.kind.as_str()).or_default() += 1;
    }
    by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Turns `verdict` into an internal error (exit 5): `what` is why leakgate's
/// own result cannot be trusted. The other reasons are kept after it.
pub fn internal_error(verdict: &mut Verdict, what: &str) {
    verdict
        .reasons
        .insert(0, format!("internal error (a bug in leakgate): {what}"));
    verdict.exit_code = crate::exit::INTERNAL;
    verdict.status = Status::Error;
}

/// Incompleteness reasons: `problems` found outside the XML, then every
/// process whose XML is incomplete.
fn incomplete_reasons(processes: &[ProcessOut], problems: &[String]) -> Vec<String> {
    let mut incomplete: Vec<String> = problems.to_vec();
    for p in processes.iter().filter(|p| !p.complete) {
        let pid = p.pid.map_or("?".into(), |v| v.to_string());
        let why = p.incomplete_reason.as_deref().unwrap_or("incomplete");
        // A process a sanitizer ran without writing a log has no file.
        incomplete.push(if p.xml.is_empty() {
            format!("process {pid}: {why}")
        } else {
            format!("{} (pid {pid}): {why}", p.xml)
        });
    }
    incomplete
}

/// Computes the verdict. `problems` are incompleteness reasons found outside
/// the XML (no XML written, Valgrind failed). Each reason names the rule
/// that failed (`--fail-on ...`, `--max-leaked-bytes N`, incomplete, the
/// target's exit).
pub fn verdict(
    policy: &Policy,
    findings: &[Finding],
    processes: &[ProcessOut],
    target_exit: Option<&ExitStatus>,
    problems: &[String],
) -> Verdict {
    let mut reasons = Vec::new();
    let mut code = crate::exit::PASS;
    let failing: Vec<&Finding> = findings.iter().filter(|f| f.fails).collect();
    let with_baseline = findings.iter().any(|f| f.baseline.is_some());
    let new = if with_baseline { "new " } else { "" };
    let rule = format!("--fail-on {}", policy.fail_on);
    match policy.max_leaked_bytes {
        None => {
            if !failing.is_empty() {
                reasons.push(format!(
                    "{rule}: {} in your code ({}): {}",
                    plural(
                        failing.len() as u64,
                        &format!("{new}gated finding"),
                        &format!("{new}gated findings")
                    ),
                    count_by_kind(&failing),
                    sites(&failing)
                ));
                code = crate::exit::FAIL;
            }
        }
        Some(max) => {
            let (leaks, errors): (Vec<&Finding>, Vec<&Finding>) =
                failing.iter().partition(|f| f.is_leak());
            if !errors.is_empty() {
                reasons.push(format!(
                    "{rule}: {} in your code ({}): {}",
                    plural(
                        errors.len() as u64,
                        &format!("{new}gated error"),
                        &format!("{new}gated errors")
                    ),
                    count_by_kind(&errors),
                    sites(&errors)
                ));
                code = crate::exit::FAIL;
            }
            if !leaks.is_empty() {
                let total = gated_leaked_bytes(findings);
                reasons.push(format!(
                    "--max-leaked-bytes {max}: {} leaked in your code by {} ({}), more than {max}: {}",
                    plural(total, "byte", "bytes"),
                    plural(
                        leaks.len() as u64,
                        &format!("{new}gated leak"),
                        &format!("{new}gated leaks")
                    ),
                    count_by_kind(&leaks),
                    sites(&leaks)
                ));
                code = crate::exit::FAIL;
            }
        }
    }
    let incomplete = incomplete_reasons(processes, problems);
    if !incomplete.is_empty() && policy.fail_on_incomplete {
        for r in &incomplete {
            reasons.push(format!("incomplete: {r}"));
        }
        if code == crate::exit::PASS {
            code = crate::exit::INCOMPLETE;
        }
    }
    if let Some(st) = target_exit {
        let failed = !matches!(st, ExitStatus::Code(0));
        if failed && policy.fail_on_target_exit {
            reasons.push(match st {
                ExitStatus::Code(c) => format!("the target exited with code {c}"),
                ExitStatus::Signal(s) => format!("the target was killed by {s}"),
            });
            if code == crate::exit::PASS {
                code = crate::exit::TARGET;
            }
        }
    }
    let status = match code {
        crate::exit::PASS => Status::Pass,
        crate::exit::FAIL => Status::Fail,
        crate::exit::INCOMPLETE => Status::Incomplete,
        crate::exit::TARGET => Status::TargetFailed,
        _ => Status::Error,
    };
    Verdict {
        status,
        exit_code: code,
        reasons,
    }
}

/// Notes on what the policy let pass: leaks within `--max-leaked-bytes`,
/// incompleteness with `--no-fail-on-incomplete`, findings known from the
/// baseline.
pub fn notes(
    policy: &Policy,
    findings: &[Finding],
    processes: &[ProcessOut],
    problems: &[String],
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(max) = policy.max_leaked_bytes {
        let leaks = findings
            .iter()
            .filter(|f| f.is_gated() && f.is_leak())
            .count();
        let total = gated_leaked_bytes(findings);
        if leaks > 0 && total <= max {
            notes.push(format!(
                "{} leaked in your code by {}, within --max-leaked-bytes {max}",
                plural(total, "byte", "bytes"),
                plural(leaks as u64, "gated leak", "gated leaks")
            ));
        }
    }
    if !policy.fail_on_incomplete {
        for r in incomplete_reasons(processes, problems) {
            notes.push(format!(
                "incomplete (not gated: --no-fail-on-incomplete): {r}"
            ));
        }
    }
    let known = findings
        .iter()
        .filter(|f| {
            f.is_user() && policy.fail_on.matches_finding(&f.kind, f.at_import) && f.is_known()
        })
        .count() as u64;
    if known > 0 {
        notes.push(format!(
            "{} known from the baseline: reported, not gated",
            plural(known, "finding", "findings")
        ));
    }
    notes.extend(import_note(policy, findings));
    notes.extend(site_packages_hint(policy, findings));
    notes
}

/// The user's leaks made once at import that `--fail-on` would gate but for
/// `import`: one line saying what they cost and how to gate them.
fn import_note(policy: &Policy, findings: &[Finding]) -> Option<String> {
    if policy.fail_on.import {
        return None;
    }
    let at_import: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.is_user() && f.at_import && policy.fail_on.matches(&f.kind))
        .collect();
    if at_import.is_empty() {
        return None;
    }
    let bytes: u64 = at_import
        .iter()
        .map(|f| f.direct_bytes.or(f.bytes).unwrap_or(0))
        .fold(0, u64::saturating_add);
    Some(format!(
        "not gated: {} ({}) {}; add `import` to --fail-on to gate them (for code that imports the module in sub-interpreters)",
        plural(at_import.len() as u64, "leak", "leaks"),
        plural(bytes, "byte", "bytes"),
        crate::analyze::import_time::GROUP
    ))
}

/// How many objects the site-packages hint names before "and N more".
const OBJECTS_NAMED: usize = 3;

/// When nothing is gated but third-party noise of a gated kind comes from
/// objects under `site-packages`/`dist-packages`: one line naming those
/// objects and how to claim one (`--user-object`). An extension installed
/// with `pip install .` lands there; it is the user's only when its frames'
/// sources lie under a source root (docs/attribution.md, "Extensions
/// installed into site-packages").
///
/// Only where the advice can be right: not for an object this run already
/// recognised as the user's (a frame of it, in any finding, resolved to a
/// file under a source root), not for records a library's header code in
/// the object decided (pybind11's own blocks: neither flag makes them the
/// user's), and not for well-known packages' objects (NumPy's import).
pub fn site_packages_hint(policy: &Policy, findings: &[Finding]) -> Option<String> {
    use crate::analyze::attribute::{is_library_header, is_well_known_package};
    if findings.iter().any(Finding::is_gated) {
        return None;
    }
    let recognised: std::collections::HashSet<&str> = findings
        .iter()
        .flat_map(|f| &f.stack)
        .filter(|fr| fr.user)
        .filter_map(|fr| fr.object.as_deref())
        .collect();
    // object file name -> records
    let mut objects: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for f in findings {
        let header_decided = f.location.as_ref().is_some_and(|l| {
            l.path
                .as_deref()
                .or(l.file.as_deref())
                .is_some_and(is_library_header)
        });
        if f.is_user()
            || f.source.as_deref() != Some("third_party")
            || !policy.fail_on.matches(&f.kind)
            || header_decided
        {
            continue;
        }
        let in_site_packages = |o: &&str| {
            o.split('/')
                .any(|c| c == "site-packages" || c == "dist-packages")
                && crate::analyze::attribute::classify_object(Some(o))
                    == crate::analyze::attribute::ObjClass::ThirdParty
                && !recognised.contains(o)
                && !is_well_known_package(o)
        };
        // The deciding frame's object; reports without one: the innermost
        // site-packages object of the stack.
        let obj = match f.location.as_ref().and_then(|l| l.object.as_deref()) {
            Some(o) => Some(o).filter(in_site_packages),
            None => f
                .stack
                .iter()
                .filter_map(|fr| fr.object.as_deref())
                .find(in_site_packages),
        };
        if let Some(o) = obj {
            let name = o.rsplit('/').next().unwrap_or(o);
            *objects.entry(name).or_insert(0) += f.records;
        }
    }
    let (first, _) = objects.iter().max_by_key(|(_, n)| **n)?;
    let total: u64 = objects.values().sum();
    let mut named: Vec<String> = objects
        .iter()
        .take(OBJECTS_NAMED)
        .map(|(o, n)| format!("{o} ({n})"))
        .collect();
    if objects.len() > OBJECTS_NAMED {
        named.push(format!("and {} more", objects.len() - OBJECTS_NAMED));
    }
    Some(format!(
        "not gated: {} of a gated kind in objects under site-packages, counted as third-party noise: {}; \
         if one is yours, run from its source checkout (or add --src-root) or claim it with --user-object '{first}'",
        plural(total, "record", "records"),
        named.join(", ")
    ))
}
