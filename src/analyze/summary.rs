//! The report's summary of the findings: per category, the user's leaked
//! bytes and blocks by leak kind and error count, and the noise by label and
//! kind. Computed here only, by the analysis and again after the run's own
//! facts changed the findings.

use crate::kind::Kind;
use crate::report::{Finding, Summary};

/// Computes `summary.user` and `summary.noise` from the findings (again,
/// after findings were added or re-labelled).
pub fn summarize(summary: &mut Summary, findings: &[Finding]) {
    summary.user = Default::default();
    summary.noise = Default::default();
    for f in findings {
        if f.is_user() {
            let u = &mut summary.user;
            u.findings += 1;
            u.at_import += u64::from(f.at_import);
            let bb = match f.kind {
                Kind::DefinitelyLost => Some(&mut u.definitely_lost),
                Kind::IndirectlyLost => Some(&mut u.indirectly_lost),
                Kind::PossiblyLost => Some(&mut u.possibly_lost),
                Kind::StillReachable => Some(&mut u.still_reachable),
                _ => None,
            };
            match bb {
                Some(bb) => {
                    bb.bytes = bb.bytes.saturating_add(f.direct_bytes.unwrap_or(0));
                    bb.blocks = bb.blocks.saturating_add(f.blocks.unwrap_or(0));
                }
                None => u.errors += 1,
            }
        } else {
            let n = &mut summary.noise;
            n.findings += 1;
            let label = f.source.clone().unwrap_or_default();
            *n.by_source.entry(label.clone()).or_default() += f.records;
            let b = n.bytes_by_source.entry(label).or_default();
            *b = b.saturating_add(f.bytes.unwrap_or(0));
            *n.by_kind.entry(f.kind.to_string()).or_default() += f.records;
        }
    }
}
