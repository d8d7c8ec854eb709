//! Stage 5 of the pipeline: the gate. Decides pass/fail and the exit code from
//! the findings, the completeness of the XML and the target's exit status.
//!
//! Exit codes (README.md "Exit codes"): 0 passed; 1 gate failed; 2 usage,
//! configuration or input error (decided before this stage); 3 incomplete;
//! 4 the target exited non-zero and nothing else failed. When several apply:
//! 1, then 3, then 4.

use crate::model::ExitStatus;
use crate::report::{Finding, ProcessOut, Verdict};

pub const EXIT_PASS: i32 = 0;
pub const EXIT_FAIL: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_INCOMPLETE: i32 = 3;
pub const EXIT_TARGET: i32 = 4;

/// What fails the gate.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Fail when the target exits non-zero (and nothing else failed).
    pub fail_on_target_exit: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            fail_on_target_exit: true,
        }
    }
}

/// Whether a user finding of this kind fails the gate by default:
/// definitely and indirectly lost leaks and every non-leak error kind.
pub fn is_gated_kind(kind: &str) -> bool {
    match kind {
        "Leak_DefinitelyLost" | "Leak_IndirectlyLost" => true,
        k if k.starts_with("Leak_") => false,
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

/// Computes the verdict. `problems` are incompleteness reasons found outside
/// the XML (no XML written, Valgrind failed).
pub fn verdict(
    policy: &Policy,
    findings: &[Finding],
    processes: &[ProcessOut],
    target_exit: Option<&ExitStatus>,
    problems: &[String],
) -> Verdict {
    let mut reasons = Vec::new();
    let mut code = EXIT_PASS;
    let gated: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.is_user() && is_gated_kind(&f.kind))
        .collect();
    if !gated.is_empty() {
        let mut by_kind: std::collections::BTreeMap<&str, u64> = Default::default();
        for f in &gated {
            *by_kind.entry(f.kind.as_str()).or_default() += 1;
        }
        let list: Vec<String> = by_kind
            .iter()
            .map(|(k, n)| format!("{} {}", n, k))
            .collect();
        reasons.push(format!(
            "{} in your code ({})",
            plural(gated.len() as u64, "gated finding", "gated findings"),
            list.join(", ")
        ));
        code = EXIT_FAIL;
    }
    let mut incomplete: Vec<String> = problems.to_vec();
    for p in processes.iter().filter(|p| !p.complete) {
        incomplete.push(format!(
            "{} (pid {}): {}",
            p.xml,
            p.pid.map_or("?".into(), |v| v.to_string()),
            p.incomplete_reason.as_deref().unwrap_or("incomplete")
        ));
    }
    if !incomplete.is_empty() {
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
        };
        let v = verdict(&q, &[], &[], Some(&ExitStatus::Code(3)), &[]);
        assert_eq!(v.exit_code, EXIT_PASS);
    }
}
