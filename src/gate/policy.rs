//! The gate policy's vocabulary: which kinds of user findings fail the gate
//! (`--fail-on LIST`). The gate itself (`gate.rs`) applies it.
//!
//! A list is comma-separated; each item is a group name (`definite`,
//! `indirect`, `possible`, `reachable`, `leaks`, `errors`, `all`, `none`) or
//! one Valgrind kind (`Leak_DefinitelyLost`, `InvalidRead`, `FatalSignal`,
//! ...). `errors` means every kind that is not a leak, including kinds
//! leakgate does not know yet; it is `memerrors` (memory errors) plus `fds`
//! (the descriptor kinds of `--track-fds`, which exist only when descriptors
//! were tracked, so the default gates them exactly when they were asked for).

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The default `--fail-on`.
pub const DEFAULT_FAIL_ON: &str = "definite,indirect,errors";

/// Memcheck's leak kinds, in severity order.
pub const LEAK_KINDS: [&str; 4] = [
    "Leak_DefinitelyLost",
    "Leak_IndirectlyLost",
    "Leak_PossiblyLost",
    "Leak_StillReachable",
];

/// Memcheck's error kinds (protocol 4-6) and leakgate's `FatalSignal`.
pub const ERROR_KINDS: [&str; 20] = [
    "InvalidFree",
    "MismatchedFree",
    "InvalidRead",
    "InvalidWrite",
    "InvalidJump",
    "Overlap",
    "InvalidMemPool",
    "UninitCondition",
    "UninitValue",
    "SyscallParam",
    "ClientCheck",
    "FishyValue",
    "ReallocSizeZero",
    "InvalidAlignment",
    "InvalidSizeAndAlignment",
    "InvalidSize",
    "MismatchedAllocateDeallocateSize",
    "MismatchedAllocateDeallocateAlignment",
    "InvalidFreeSized",
    "FatalSignal",
];

/// The descriptor kinds of `--track-fds` (Valgrind 3.23+): the `fds` group.
pub const FD_KINDS: [&str; 3] = ["FdNotClosed", "FdBadClose", "FdBadUse"];

/// Whether `kind` is one of [`FD_KINDS`].
pub fn is_fd_kind(kind: &str) -> bool {
    FD_KINDS.contains(&kind)
}

/// A `--fail-on` item that is neither a group nor a known kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "unknown --fail-on item {0:?} (use definite, indirect, possible, reachable, leaks, errors, memerrors, fds, all, none, cuda-ipc, or a Valgrind kind such as Leak_DefinitelyLost or InvalidRead)"
    )]
    UnknownItem(String),
    #[error("--fail-on is empty (use `none` to fail on no finding)")]
    Empty,
}

/// Which user findings fail the gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailOn {
    /// Individual kinds (leak kinds and error kinds).
    pub kinds: BTreeSet<String>,
    /// Every non-leak kind, known or not, except the descriptor kinds
    /// ([`FD_KINDS`], listed in `kinds` when gated) and `cuda-ipc`.
    pub errors: bool,
}

impl Default for FailOn {
    fn default() -> Self {
        FailOn::parse(DEFAULT_FAIL_ON).expect("the default --fail-on parses")
    }
}

impl FailOn {
    /// Parses a comma-separated `--fail-on` list.
    pub fn parse(list: &str) -> Result<FailOn, PolicyError> {
        let mut f = FailOn {
            kinds: BTreeSet::new(),
            errors: false,
        };
        let mut any = false;
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            any = true;
            match item.to_ascii_lowercase().as_str() {
                "definite" => f.add("Leak_DefinitelyLost"),
                "indirect" => f.add("Leak_IndirectlyLost"),
                "possible" => f.add("Leak_PossiblyLost"),
                "reachable" => f.add("Leak_StillReachable"),
                "leaks" => LEAK_KINDS.iter().for_each(|k| f.add(k)),
                "errors" => {
                    f.errors = true;
                    FD_KINDS.iter().for_each(|k| f.add(k));
                }
                "memerrors" => f.errors = true,
                "fds" => FD_KINDS.iter().for_each(|k| f.add(k)),
                "all" => {
                    LEAK_KINDS.iter().for_each(|k| f.add(k));
                    FD_KINDS.iter().for_each(|k| f.add(k));
                    f.errors = true;
                }
                "none" => {}
                "cuda-ipc" => f.add(crate::analyze::processes::CUDA_IPC_KIND),
                _ => {
                    let known = LEAK_KINDS
                        .iter()
                        .chain(ERROR_KINDS.iter())
                        .chain(FD_KINDS.iter())
                        .find(|k| k.eq_ignore_ascii_case(item));
                    match known {
                        Some(k) => f.add(k),
                        None => return Err(PolicyError::UnknownItem(item.to_string())),
                    }
                }
            }
        }
        if !any {
            return Err(PolicyError::Empty);
        }
        Ok(f)
    }

    fn add(&mut self, kind: &str) {
        self.kinds.insert(kind.to_string());
    }

    /// Whether a user finding of `kind` fails the gate.
    pub fn matches(&self, kind: &str) -> bool {
        // Not a memory error: gated only when asked for (`cuda-ipc`).
        if kind == crate::analyze::processes::CUDA_IPC_KIND {
            return self.kinds.contains(kind);
        }
        if kind.starts_with("Leak_") || is_fd_kind(kind) {
            self.kinds.contains(kind)
        } else {
            self.errors || self.kinds.contains(kind)
        }
    }

    /// Whether nothing is selected (`--fail-on none`).
    pub fn is_empty(&self) -> bool {
        !self.errors && self.kinds.is_empty()
    }

    /// The canonical list: group names where they apply, then single kinds.
    pub fn items(&self) -> Vec<String> {
        let mut out = Vec::new();
        let names = ["definite", "indirect", "possible", "reachable"];
        for (name, kind) in names.iter().zip(LEAK_KINDS) {
            if self.kinds.contains(kind) {
                out.push((*name).to_string());
            }
        }
        let fds = FD_KINDS.iter().all(|k| self.kinds.contains(*k));
        match (self.errors, fds) {
            (true, true) => out.push("errors".into()),
            (true, false) => out.push("memerrors".into()),
            (false, true) => out.push("fds".into()),
            (false, false) => {}
        }
        for k in &self.kinds {
            if k == crate::analyze::processes::CUDA_IPC_KIND {
                out.push("cuda-ipc".into());
                continue;
            }
            let covered = if is_fd_kind(k) {
                fds
            } else {
                LEAK_KINDS.contains(&k.as_str()) || self.errors
            };
            if covered {
                continue;
            }
            out.push(k.clone());
        }
        if out.is_empty() {
            out.push("none".into());
        }
        out
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.items().join(","))
    }
}

/// clap value parser for `--fail-on`.
pub fn parse_fail_on(s: &str) -> Result<FailOn, PolicyError> {
    FailOn::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_list() {
        let f = FailOn::default();
        assert!(f.matches("Leak_DefinitelyLost"));
        assert!(f.matches("Leak_IndirectlyLost"));
        assert!(!f.matches("Leak_PossiblyLost"));
        assert!(!f.matches("Leak_StillReachable"));
        assert!(f.matches("InvalidRead"));
        assert!(f.matches("SomeFutureKind"));
        assert_eq!(f.to_string(), DEFAULT_FAIL_ON);
    }

    #[test]
    fn single_kinds_and_groups() {
        let f = FailOn::parse("possible, invalidread").unwrap();
        assert!(f.matches("Leak_PossiblyLost"));
        assert!(f.matches("InvalidRead"));
        assert!(!f.matches("InvalidWrite"));
        assert!(!f.matches("Leak_DefinitelyLost"));
        assert_eq!(f.to_string(), "possible,InvalidRead");
        let n = FailOn::parse("none").unwrap();
        assert!(n.is_empty());
        assert!(!n.matches("InvalidRead"));
        assert_eq!(n.to_string(), "none");
        let a = FailOn::parse("all").unwrap();
        assert!(a.matches("Leak_StillReachable"));
        assert_eq!(a.to_string(), "definite,indirect,possible,reachable,errors");
    }

    #[test]
    fn descriptor_kinds() {
        let d = FailOn::default();
        assert!(d.matches("FdNotClosed") && d.matches("FdBadClose") && d.matches("FdBadUse"));
        let m = FailOn::parse("definite,memerrors").unwrap();
        assert!(m.matches("InvalidRead") && !m.matches("FdNotClosed"));
        assert_eq!(m.to_string(), "definite,memerrors");
        let f = FailOn::parse("definite,fds").unwrap();
        assert!(f.matches("FdBadClose") && !f.matches("InvalidRead"));
        assert_eq!(f.to_string(), "definite,fds");
        assert_eq!(
            FailOn::parse("memerrors,fds").unwrap().to_string(),
            "errors"
        );
        let one = FailOn::parse("FdNotClosed").unwrap();
        assert!(one.matches("FdNotClosed") && !one.matches("FdBadClose"));
        assert_eq!(one.to_string(), "FdNotClosed");
        assert_eq!(
            FailOn::parse("all").unwrap(),
            FailOn::parse("leaks,errors").unwrap()
        );
    }

    #[test]
    fn rejects_typos() {
        assert_eq!(
            FailOn::parse("definte"),
            Err(PolicyError::UnknownItem("definte".into()))
        );
        assert_eq!(FailOn::parse(" , "), Err(PolicyError::Empty));
    }
}
