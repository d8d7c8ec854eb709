//! Origins on demand (`leakgate run --origins auto`): the run goes without
//! `--track-origins=yes` (about 40 % of Valgrind's time); when the user's
//! code has uninitialised-value errors, what had them is re-run with it,
//! and the origins found there are given to the first run's records before
//! attribution, so the analysis is the one a `--origins yes` run gives
//! (an origin can make a record the interpreter's: see
//! `attribute::NoiseReason::InterpreterOrigin`).
//!
//! Records are matched by their kind and the innermost [`KEY_FRAMES`]
//! frames of their error stack (function, file, line and object): the
//! error's place and its callers into the interpreter. Deeper frames are
//! the test harness's and differ between a pytest-xdist worker and the
//! re-run's serial pytest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::aggregate::Observer;
use crate::kind::Kind;
use crate::model::{AuxInfo, Record};
use crate::report::{Category, Finding};

/// Error stack (see [`key`]) → the origin's `<auxwhat>` and stack.
pub type OriginMap = HashMap<u64, AuxInfo>;

/// Whether errors of this kind and message carry an origin under
/// `--track-origins=yes`: uses of uninitialised values.
pub fn has_origin(kind: &Kind, what: &str) -> bool {
    match kind {
        Kind::UninitCondition | Kind::UninitValue => true,
        Kind::SyscallParam | Kind::ClientCheck => what.contains("uninitialised"),
        _ => false,
    }
}

/// How many innermost frames identify an error across runs.
pub const KEY_FRAMES: usize = 12;

/// The record's kind and innermost error stack, hashed.
pub fn key(rec: &Record) -> u64 {
    frames_key(&rec.kind, rec.stack.iter().take(KEY_FRAMES))
}

/// A kind and frames (function, file, line and object of each; not the
/// addresses, which differ between runs), hashed: what identifies an error
/// or a leak across runs.
pub fn frames_key<'a>(kind: &str, frames: impl Iterator<Item = &'a crate::model::Frame>) -> u64 {
    let mut parts: Vec<String> = vec![kind.to_string()];
    for f in frames {
        parts.push(format!(
            "{}\u{1}{}\u{1}{}\u{1}{}",
            f.func.as_deref().unwrap_or(""),
            f.file.as_deref().unwrap_or(""),
            f.line.map(|l| l.to_string()).unwrap_or_default(),
            f.obj.as_deref().unwrap_or("")
        ));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    crate::util::fnv1a_parts(&refs)
}

/// Gives `rec` the origin of the same error in `map`, if it has none and
/// one is there. Returns whether it did.
pub fn fill(rec: &mut Record, map: &OriginMap) -> bool {
    if rec.is_leak() || rec.origin().is_some() || !has_origin(&Kind::parse(&rec.kind), &rec.what) {
        return false;
    }
    match map.get(&key(rec)) {
        Some(aux) => {
            rec.aux.push(aux.clone());
            true
        }
        None => false,
    }
}

/// An observer that collects the origin of every record that has one (the
/// re-run's analysis), and the map it fills.
pub fn collector() -> (Observer, Arc<Mutex<OriginMap>>) {
    let map: Arc<Mutex<OriginMap>> = Arc::default();
    let m = map.clone();
    let obs: Observer = Arc::new(move |rec: &Record, _att, _p, _suppressed| {
        if let Some(o) = rec.origin() {
            let mut m = m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            m.entry(key(rec)).or_insert_with(|| o.clone());
        }
    });
    (obs, map)
}

/// The user's findings that lack the origin a `--track-origins=yes` run
/// would have given them.
pub fn wanting(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| {
            f.category == Category::User && f.origin.is_none() && has_origin(&f.kind, &f.message)
        })
        .collect()
}

/// What a re-run must cover to find the origins of `wanting`: the pytest
/// tests their errors first occurred in, or `None` (the whole run) when an
/// error is tied to no test (per-test checkpoints off, or it happened
/// before the first or after the last test).
pub fn tests_to_rerun(wanting: &[&Finding]) -> Option<Vec<String>> {
    let mut tests: Vec<String> = Vec::new();
    for f in wanting {
        if f.tests.is_empty() {
            return None;
        }
        for t in &f.tests {
            if t.kind != "test" {
                return None;
            }
            if !tests.contains(&t.test) {
                tests.push(t.test.clone());
            }
        }
    }
    Some(tests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Frame;

    fn rec(kind: &str, what: &str, func: &str, origin: bool) -> Record {
        let frame = Frame {
            func: Some(func.into()),
            file: Some("ext.c".into()),
            line: Some(7),
            ..Frame::default()
        };
        Record {
            kind: kind.into(),
            what: what.into(),
            stack: vec![frame.clone()],
            aux: if origin {
                vec![AuxInfo {
                    text: "Uninitialised value was created by a heap allocation".into(),
                    stack: vec![frame],
                }]
            } else {
                Vec::new()
            },
            ..Record::default()
        }
    }

    #[test]
    fn origins_go_to_the_same_error_only() {
        let with = rec("UninitCondition", "Conditional jump", "f", true);
        let mut map = OriginMap::new();
        map.insert(key(&with), with.origin().unwrap().clone());
        let mut same = rec("UninitCondition", "Conditional jump", "f", false);
        assert!(fill(&mut same, &map));
        assert_eq!(same.origin(), with.origin());
        // Filled once: a record that has its origin keeps it.
        assert!(!fill(&mut same, &map));
        let mut other = rec("UninitCondition", "Conditional jump", "g", false);
        assert!(!fill(&mut other, &map));
        let mut read = rec("InvalidRead", "Invalid read of size 1", "f", false);
        assert!(!fill(&mut read, &map));
        assert!(has_origin(
            &Kind::SyscallParam,
            "Syscall param write(buf) points to uninitialised byte(s)"
        ));
        assert!(!has_origin(
            &Kind::SyscallParam,
            "Syscall param write(buf) points to unaddressable byte(s)"
        ));
    }
}
