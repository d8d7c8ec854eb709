//! Stage 5 of the pipeline: the gate. Decides pass/fail and the exit code from
//! the findings, the completeness of the XML and the target's exit status.
//!
//! Exit codes (README.md "Exit codes"): 0 passed; 1 gate failed; 2 usage,
//! configuration or input error (decided before this stage); 3 incomplete;
//! 4 the target exited non-zero and nothing else failed; 5 internal error
//! (records not conserved, see `analysis::conservation_error`). When several
//! apply: 5, then 1, then 3, then 4.

pub mod baseline;
pub mod policy;

use crate::model::ExitStatus;
use crate::gate::policy::FailOn;
use crate::report::{Finding, PolicyOut, ProcessOut, Verdict};

pub const EXIT_PASS: i32 = 0;
pub const EXIT_FAIL: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INCOMPLETE: i32 = 3;
pub const EXIT_TARGET: i32 = 4;
/// leakgate's own accounting does not add up (a bug): the report cannot be
/// trusted. Comes before 1, 3 and 4.
pub const EXIT_INTERNAL: i32 = 5;

/// How many findings a reason names before "and N more".
const SITES_NAMED: usize = 5;

/// What fails the gate.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Fail when the target exits non-zero (and nothing else failed).
    pub fail_on_target_exit: bool,
    /// Which kinds of user findings fail (`--fail-on`).
    pub fail_on: FailOn,
    /// Gated leaks fail only when their bytes exceed this (`--max-leaked-bytes`).
    pub max_leaked_bytes: Option<u64>,
    /// An incomplete report gives exit 3 (`--no-fail-on-incomplete` turns it off).
    pub fail_on_incomplete: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            fail_on_target_exit: true,
            fail_on: FailOn::default(),
            max_leaked_bytes: None,
            fail_on_incomplete: true,
        }
    }
}

impl Policy {
    /// Whether `f` counts against the gate: a user finding of a `--fail-on`
    /// kind that is not known from the baseline.
    pub fn gates(&self, f: &Finding) -> bool {
        f.is_user()
            && (self.fail_on.matches(&f.kind) || (grows_per_call(f) && !self.fail_on.is_empty()))
            && f.baseline.as_deref() != Some("known")
    }

    /// Sets every finding's `gated` flag.
    pub fn mark(&self, findings: &mut [Finding]) {
        for f in findings {
            f.gated = Some(self.gates(f));
        }
    }

    /// The policy as the report shows it.
    pub fn describe(&self) -> PolicyOut {
        PolicyOut {
            fail_on: self.fail_on.items(),
            max_leaked_bytes: self.max_leaked_bytes,
            fail_on_incomplete: self.fail_on_incomplete,
            fail_on_target_exit: self.fail_on_target_exit,
        }
    }
}

/// A possibly-lost or still-reachable leak that grows at every call (seen
/// with checkpoints): a container that grows forever is a leak even while
/// reachable, so it is gated whatever `--fail-on` says (`--fail-on none`
/// aside, which gates nothing).
pub fn grows_per_call(f: &Finding) -> bool {
    f.growth.as_deref() == Some("per_call")
        && matches!(f.kind.as_str(), "Leak_PossiblyLost" | "Leak_StillReachable")
}

/// Whether a user finding of this kind fails the gate by default:
/// definitely and indirectly lost leaks and every non-leak error kind.
pub fn is_gated_kind(kind: &str) -> bool {
    match kind {
        "Leak_DefinitelyLost" | "Leak_IndirectlyLost" => true,
        k if k.starts_with("Leak_") => false,
        crate::analyze::processes::CUDA_IPC_KIND => false,
        _ => true,
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Leaked bytes a leak finding contributes to `--max-leaked-bytes`: its
/// direct bytes, so that a definite leak's indirect blocks, which are their
/// own `Leak_IndirectlyLost` findings, are not counted twice.
pub fn leaked_bytes(f: &Finding) -> u64 {
    f.direct_bytes.or(f.bytes).unwrap_or(0)
}

/// `Leak_DefinitelyLost at spam.c:22 in spam_leaky (16 bytes)`.
fn site(f: &Finding) -> String {
    let mut s = f.kind.clone();
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
    verdict.exit_code = EXIT_INTERNAL;
    verdict.status = "error".into();
}

/// Incompleteness reasons: `problems` found outside the XML, then every
/// process whose XML is incomplete.
fn incomplete_reasons(processes: &[ProcessOut], problems: &[String]) -> Vec<String> {
    let mut incomplete: Vec<String> = problems.to_vec();
    for p in processes.iter().filter(|p| !p.complete) {
        incomplete.push(format!(
            "{} (pid {}): {}",
            p.xml,
            p.pid.map_or("?".into(), |v| v.to_string()),
            p.incomplete_reason.as_deref().unwrap_or("incomplete")
        ));
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
    let mut code = EXIT_PASS;
    let gated: Vec<&Finding> = findings.iter().filter(|f| policy.gates(f)).collect();
    let with_baseline = findings.iter().any(|f| f.baseline.is_some());
    let new = if with_baseline { "new " } else { "" };
    let rule = format!("--fail-on {}", policy.fail_on);
    match policy.max_leaked_bytes {
        None => {
            if !gated.is_empty() {
                reasons.push(format!(
                    "{rule}: {} in your code ({}): {}",
                    plural(
                        gated.len() as u64,
                        &format!("{new}gated finding"),
                        &format!("{new}gated findings")
                    ),
                    count_by_kind(&gated),
                    sites(&gated)
                ));
                code = EXIT_FAIL;
            }
        }
        Some(max) => {
            let (leaks, errors): (Vec<&Finding>, Vec<&Finding>) =
                gated.iter().partition(|f| f.is_leak());
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
                code = EXIT_FAIL;
            }
            let total: u64 = leaks
                .iter()
                .fold(0u64, |t, f| t.saturating_add(leaked_bytes(f)));
            if total > max {
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
                code = EXIT_FAIL;
            }
        }
    }
    let incomplete = incomplete_reasons(processes, problems);
    if !incomplete.is_empty() && policy.fail_on_incomplete {
        for r in &incomplete {
            reasons.push(format!("incomplete: {r}"));
        }
        if code == EXIT_PASS {
            code = EXIT_INCOMPLETE;
        }
    }
    if let Some(st) = target_exit {
        let failed = !matches!(st, ExitStatus::Code(0));
        if failed && policy.fail_on_target_exit {
            reasons.push(match st {
                ExitStatus::Code(c) => format!("the target exited with code {c}"),
                ExitStatus::Signal(s) => format!("the target was killed by {s}"),
            });
            if code == EXIT_PASS {
                code = EXIT_TARGET;
            }
        }
    }
    let status = match code {
        EXIT_PASS => "pass",
        EXIT_FAIL => "fail",
        EXIT_INCOMPLETE => "incomplete",
        EXIT_TARGET => "target_failed",
        _ => "error",
    };
    Verdict {
        status: status.into(),
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
        let leaks: Vec<&Finding> = findings
            .iter()
            .filter(|f| policy.gates(f) && f.is_leak())
            .collect();
        let total: u64 = leaks
            .iter()
            .fold(0u64, |t, f| t.saturating_add(leaked_bytes(f)));
        if !leaks.is_empty() && total <= max {
            notes.push(format!(
                "{} leaked in your code by {}, within --max-leaked-bytes {max}",
                plural(total, "byte", "bytes"),
                plural(leaks.len() as u64, "gated leak", "gated leaks")
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
            f.is_user() && policy.fail_on.matches(&f.kind) && f.baseline.as_deref() == Some("known")
        })
        .count() as u64;
    if known > 0 {
        notes.push(format!(
            "{} known from the baseline: reported, not gated",
            plural(known, "finding", "findings")
        ));
    }
    notes.extend(site_packages_hint(policy, findings));
    notes
}

/// How many objects the site-packages hint names before "and N more".
const OBJECTS_NAMED: usize = 3;

/// When nothing is gated but third-party noise of a gated kind comes from
/// objects under `site-packages`/`dist-packages`: one line naming those
/// objects and how to claim one (`--user-object`). An extension installed
/// with `pip install .` lands there; it is the user's only when its frames'
/// sources lie under a source root (README "Extensions installed into
/// site-packages").
pub fn site_packages_hint(policy: &Policy, findings: &[Finding]) -> Option<String> {
    if findings.iter().any(|f| policy.gates(f)) {
        return None;
    }
    // object file name -> records
    let mut objects: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    for f in findings {
        if f.is_user()
            || f.source.as_deref() != Some("third_party")
            || !policy.fail_on.matches(&f.kind)
        {
            continue;
        }
        let in_site_packages = |o: &&str| {
            o.split('/')
                .any(|c| c == "site-packages" || c == "dist-packages")
                && crate::analyze::attribute::classify_object(Some(o))
                    == crate::analyze::attribute::ObjClass::ThirdParty
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gated_kinds() {
        assert!(is_gated_kind("Leak_DefinitelyLost"));
        assert!(is_gated_kind("Leak_IndirectlyLost"));
        assert!(!is_gated_kind("Leak_PossiblyLost"));
        assert!(!is_gated_kind("Leak_StillReachable"));
        assert!(is_gated_kind("InvalidRead"));
        assert!(is_gated_kind("SomeFutureKind"));
    }

    #[test]
    fn precedence() {
        let p = Policy::default();
        let v = verdict(&p, &[], &[], Some(&ExitStatus::Code(3)), &["no XML".into()]);
        assert_eq!(v.exit_code, EXIT_INCOMPLETE);
        let v = verdict(&p, &[], &[], Some(&ExitStatus::Code(3)), &[]);
        assert_eq!(v.exit_code, EXIT_TARGET);
        let q = Policy {
            fail_on_target_exit: false,
            ..Policy::default()
        };
        let v = verdict(&q, &[], &[], Some(&ExitStatus::Code(3)), &[]);
        assert_eq!(v.exit_code, EXIT_PASS);
    }

    /// A finding whose stack is `malloc` in Valgrind's preload, then one
    /// frame in each of `objects`.
    fn noise(kind: &str, source: &str, records: u64, objects: &[&str]) -> Finding {
        let frame = |function: &str, object: &str| crate::report::FrameOut {
            function: Some(function.into()),
            object: Some(object.into()),
            file: None,
            path: None,
            line: None,
            ip: None,
            user: false,
        };
        let mut stack = vec![frame(
            "malloc",
            "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
        )];
        stack.extend(objects.iter().map(|o| frame("f", o)));
        Finding {
            kind: kind.into(),
            category: if source == "user" { "user" } else { "noise" }.into(),
            source: (source != "user").then(|| source.into()),
            count: 1,
            stack,
            pids: vec![1],
            records,
            ..Finding::default()
        }
    }

    const LIBPY: &str = "/opt/py/lib/libpython3.11.so.1.0";
    const EXT: &str = "/w/.venv/lib/python3.11/site-packages/spam.cpython-311-x86_64-linux-gnu.so";

    #[test]
    fn site_packages_hint_names_the_objects_and_the_flag() {
        let p = Policy::default();
        let findings = vec![
            noise(
                "Leak_DefinitelyLost",
                "third_party",
                2,
                &[LIBPY, EXT, LIBPY],
            ),
            noise("InvalidRead", "third_party", 1, &[EXT]),
            noise(
                "Leak_IndirectlyLost",
                "third_party",
                1,
                &["/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.so"],
            ),
            // not gated kinds, other noise, other third-party places: no hint
            noise(
                "Leak_PossiblyLost",
                "third_party",
                5,
                &["/v/site-packages/poss.so"],
            ),
            noise("Leak_DefinitelyLost", "python", 7, &[LIBPY]),
            noise(
                "Leak_DefinitelyLost",
                "third_party",
                9,
                &["/src/third_party/lib.so"],
            ),
        ];
        let notes = notes(&p, &findings, &[], &[]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        let n = &notes[0];
        assert!(!n.contains('\n'), "{n}");
        assert!(
            n.starts_with("not gated: 4 records of a gated kind in objects under site-packages"),
            "{n}"
        );
        assert!(
            n.contains("_multiarray_umath.so (1), spam.cpython-311-x86_64-linux-gnu.so (3)"),
            "{n}"
        );
        assert!(
            n.ends_with("--user-object 'spam.cpython-311-x86_64-linux-gnu.so'"),
            "{n}"
        );
        assert!(!n.contains("poss.so") && !n.contains("lib.so"), "{n}");
    }

    #[test]
    fn site_packages_hint_only_when_nothing_is_gated() {
        let p = Policy::default();
        let mut findings = vec![noise("Leak_DefinitelyLost", "third_party", 1, &[EXT])];
        assert!(site_packages_hint(&p, &findings).is_some());
        findings.push(noise("InvalidWrite", "user", 1, &["/w/spam.so"]));
        assert_eq!(site_packages_hint(&p, &findings), None);
        // --fail-on none: nothing of a gated kind
        let none = Policy {
            fail_on: FailOn::parse("none").unwrap(),
            ..Policy::default()
        };
        let findings = vec![noise("Leak_DefinitelyLost", "third_party", 1, &[EXT])];
        assert_eq!(site_packages_hint(&none, &findings), None);
        // the deciding frame (location) names the object when known
        let at = |obj: &str| {
            let mut f = noise("Leak_DefinitelyLost", "third_party", 1, &[EXT]);
            f.location = Some(crate::analyze::attribute::Location {
                function: Some("f".into()),
                file: None,
                path: None,
                line: None,
                object: Some(obj.into()),
            });
            f
        };
        let n = site_packages_hint(&p, &[at("/v/site-packages/other.so")]).unwrap();
        assert!(n.contains(": other.so (1);"), "{n}");
        assert_eq!(site_packages_hint(&p, &[at("/w/build/mine.so")]), None);
        // more objects than named
        let objs: Vec<String> = (0..5)
            .map(|i| format!("/v/site-packages/m{i}.so"))
            .collect();
        let findings: Vec<Finding> = objs
            .iter()
            .map(|o| noise("Leak_DefinitelyLost", "third_party", 1, &[o.as_str()]))
            .collect();
        let n = site_packages_hint(&p, &findings).unwrap();
        assert!(
            n.contains("m0.so (1), m1.so (1), m2.so (1), and 2 more"),
            "{n}"
        );
    }
}
