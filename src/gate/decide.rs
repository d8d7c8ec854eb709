//! The gate's decision for each finding: `gated` (the policy counts it)
//! and `fails` (it fails the gate), set once by [`mark`] and read by the
//! verdict and every renderer.

use super::policy::FailOn;
use crate::kind::Kind;
use crate::report::{Finding, Growth, PolicyOut, Report};

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
    /// kind (or a leak that grows at every call) that is not known from the
    /// baseline; a leak made once at import only with `--fail-on import`.
    fn gates(&self, f: &Finding) -> bool {
        f.is_user()
            && (self.fail_on.matches_finding(&f.kind, f.at_import)
                || (grows_per_call(f) && !self.fail_on.is_empty()))
            && !f.is_known()
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

/// The gate's decision for every finding: `gated` (the policy counts it)
/// and `fails` (it fails the gate: gated, and for leaks, the gated leaks'
/// bytes exceed `--max-leaked-bytes`). Call after the baseline marked the
/// findings and before [`verdict`](super::verdict).
pub fn mark(policy: &Policy, findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        f.gated = Some(policy.gates(f));
    }
    super::indirect::fold(findings);
    set_fails(findings, policy.max_leaked_bytes);
}

/// Sets `fails` from `gated` and `--max-leaked-bytes`.
fn set_fails(findings: &mut [Finding], max_leaked_bytes: Option<u64>) {
    let leaks_fail = match max_leaked_bytes {
        None => true,
        Some(max) => gated_leaked_bytes(findings) > max,
    };
    for f in findings.iter_mut() {
        f.fails = f.is_gated() && (!f.is_leak() || leaks_fail);
    }
}

/// The bytes `--max-leaked-bytes` compares: the gated leaks' direct bytes.
pub fn gated_leaked_bytes(findings: &[Finding]) -> u64 {
    findings
        .iter()
        .filter(|f| f.is_gated() && f.is_leak())
        .map(leaked_bytes)
        .fold(0u64, u64::saturating_add)
}

/// Gives a saved report (`leakgate report`) its marks back: `fails` is not
/// in the JSON; reports from before policies have no `gated` either, and get
/// the default policy's.
pub fn restore(report: &mut Report) {
    let before_policies = report.findings.iter().any(|f| f.gated.is_none());
    for f in &mut report.findings {
        if f.gated.is_none() {
            f.gated =
                Some(f.is_user() && f.kind.gated_by_default() && !f.is_known() && !f.at_import);
        }
    }
    // A report gated by this version keeps its `indirect_of` marks; one
    // from before gets them as the default policy would set them.
    if before_policies {
        super::indirect::fold(&mut report.findings);
    }
    let max = report.policy.as_ref().and_then(|p| p.max_leaked_bytes);
    set_fails(&mut report.findings, max);
}

/// A possibly-lost or still-reachable leak that grows at every call (seen
/// with checkpoints): a container that grows forever is a leak even while
/// reachable, so it is gated whatever `--fail-on` says (`--fail-on none`
/// aside, which gates nothing).
pub fn grows_per_call(f: &Finding) -> bool {
    f.growth == Some(Growth::PerCall) && matches!(f.kind, Kind::PossiblyLost | Kind::StillReachable)
}

/// Leaked bytes a leak finding contributes to `--max-leaked-bytes`: its
/// bytes as the finding shows them (a definite leak's with the indirect
/// blocks it owns). The indirect findings a gated definite leak owns are
/// not gated (`indirect_of`), so their bytes are not counted twice.
pub fn leaked_bytes(f: &Finding) -> u64 {
    f.bytes.or(f.direct_bytes).unwrap_or(0)
}
