//! The gate policy's vocabulary: which kinds of user findings fail the gate
//! (`--fail-on LIST`). The gate itself (`gate/decide.rs`) applies it.
//!
//! A list is comma-separated; each item is a group name (`definite`,
//! `indirect`, `possible`, `reachable`, `leaks`, `errors`, `all`, `none`) or
//! one Valgrind kind (`Leak_DefinitelyLost`, `InvalidRead`, `FatalSignal`,
//! ...). `errors` means every kind that is not a leak, including kinds
//! leakgate does not know yet; it is `memerrors` (memory errors) plus `fds`
//! (the descriptor kinds of `--track-fds`, which exist only when descriptors
//! were tracked, so the default gates them exactly when they were asked for).
//! `import` adds the user's leaks made once at import (`Finding::at_import`)
//! of the kinds selected; `all` includes it.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::kind::{FD_KINDS, Kind, LEAK_KINDS};

/// The default `--fail-on`.
pub const DEFAULT_FAIL_ON: &str = "definite,indirect,errors";

/// A `--fail-on` item that is neither a group nor a known kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "unknown --fail-on item {0:?} (use {names}, or a Valgrind kind such as Leak_DefinitelyLost or InvalidRead)",
        names = GROUPS.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
    )]
    UnknownItem(String),
    #[error("--fail-on is empty (use `none` to fail on no finding)")]
    Empty,
}

/// A group name of `--fail-on`: what it selects, said in `--help`.
pub struct Group {
    /// The name, as written in the list (lower case).
    pub name: &'static str,
    /// What it selects, for `--help` and the error of an unknown item.
    pub help: &'static str,
    apply: fn(&mut FailOn),
}

/// Every group name the parser accepts, in the order `--help` lists them:
/// [`FailOn::parse`] looks items up here, and [`fail_on_help`] lists them,
/// so the help cannot omit one. Any other item must be a Valgrind kind.
pub const GROUPS: &[Group] = &[
    Group {
        name: "definite",
        help: "definitely lost leaks",
        apply: |f| f.add(&Kind::DefinitelyLost),
    },
    Group {
        name: "indirect",
        help: "indirectly lost leaks",
        apply: |f| f.add(&Kind::IndirectlyLost),
    },
    Group {
        name: "possible",
        help: "possibly lost leaks",
        apply: |f| f.add(&Kind::PossiblyLost),
    },
    Group {
        name: "reachable",
        help: "still-reachable blocks",
        apply: |f| f.add(&Kind::StillReachable),
    },
    Group {
        name: "leaks",
        help: "the four leak kinds",
        apply: |f| LEAK_KINDS.iter().for_each(|k| f.add(k)),
    },
    Group {
        name: "errors",
        help: "every kind that is not a leak: memerrors and fds",
        apply: |f| {
            f.errors = true;
            FD_KINDS.iter().for_each(|k| f.add(k));
        },
    },
    Group {
        name: "memerrors",
        help: "memory errors: errors without the descriptor kinds",
        apply: |f| f.errors = true,
    },
    Group {
        name: "fds",
        help: "FdNotClosed, FdBadClose, FdBadUse from --track-fds",
        apply: |f| FD_KINDS.iter().for_each(|k| f.add(k)),
    },
    Group {
        name: "import",
        help: "also the leaks of the kinds selected that were made once, at import; not gated by default",
        apply: |f| f.import = true,
    },
    Group {
        name: "all",
        help: "leaks, errors and import",
        apply: |f| {
            LEAK_KINDS.iter().for_each(|k| f.add(k));
            FD_KINDS.iter().for_each(|k| f.add(k));
            f.errors = true;
            f.import = true;
        },
    },
    Group {
        name: "none",
        help: "nothing fails the gate",
        apply: |_| {},
    },
    Group {
        name: "cuda-ipc",
        help: "PyTorch's CUDA-IPC producer warning; not gated by default, not in all",
        apply: |f| f.add(&Kind::CudaIpcProducerExited),
    },
];

/// `--fail-on`'s help: every group of [`GROUPS`] with what it selects.
pub fn fail_on_help() -> String {
    let groups: Vec<String> = GROUPS
        .iter()
        .map(|g| format!("{} ({})", g.name, g.help))
        .collect();
    format!(
        "User findings that fail the gate, comma-separated: {}; or Valgrind kinds (Leak_PossiblyLost, InvalidRead, ...).",
        groups.join(", ")
    )
}

/// Which user findings fail the gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailOn {
    /// Individual kinds (leak kinds and error kinds).
    pub kinds: BTreeSet<Kind>,
    /// Every non-leak kind, known or not, except the descriptor kinds
    /// ([`FD_KINDS`], listed in `kinds` when gated) and `cuda-ipc`.
    pub errors: bool,
    /// Leaks made once at import (of the kinds selected) too: `import`.
    #[serde(default)]
    pub import: bool,
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
            import: false,
        };
        let mut any = false;
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            any = true;
            let lower = item.to_ascii_lowercase();
            if let Some(g) = GROUPS.iter().find(|g| g.name == lower) {
                (g.apply)(&mut f);
                continue;
            }
            let known = Kind::KNOWN
                .iter()
                .filter(|k| **k != Kind::CudaIpcProducerExited)
                .find(|k| k.as_str().eq_ignore_ascii_case(item));
            match known {
                Some(k) => f.add(k),
                None => return Err(PolicyError::UnknownItem(item.to_string())),
            }
        }
        if !any {
            return Err(PolicyError::Empty);
        }
        Ok(f)
    }

    fn add(&mut self, kind: &Kind) {
        self.kinds.insert(kind.clone());
    }

    /// Whether a user finding of `kind` fails the gate.
    pub fn matches(&self, kind: &Kind) -> bool {
        // Leaks, descriptors and the CUDA-IPC warning only when named.
        if kind.is_memory_error() {
            self.errors || self.kinds.contains(kind)
        } else {
            self.kinds.contains(kind)
        }
    }

    /// Whether a user finding fails the gate by its kind and, for a leak
    /// made once at import, whether `import` is named.
    pub fn matches_finding(&self, kind: &Kind, at_import: bool) -> bool {
        self.matches(kind) && (!at_import || self.import)
    }

    /// Whether nothing is selected (`--fail-on none`).
    pub fn is_empty(&self) -> bool {
        !self.errors && self.kinds.is_empty()
    }

    /// The canonical list: group names where they apply, then single kinds.
    pub fn items(&self) -> Vec<String> {
        let mut out = Vec::new();
        let names = ["definite", "indirect", "possible", "reachable"];
        for (name, kind) in names.iter().zip(&LEAK_KINDS) {
            if self.kinds.contains(kind) {
                out.push((*name).to_string());
            }
        }
        let fds = FD_KINDS.iter().all(|k| self.kinds.contains(k));
        match (self.errors, fds) {
            (true, true) => out.push("errors".into()),
            (true, false) => out.push("memerrors".into()),
            (false, true) => out.push("fds".into()),
            (false, false) => {}
        }
        if self.import {
            out.push("import".into());
        }
        for k in &self.kinds {
            if *k == Kind::CudaIpcProducerExited {
                out.push("cuda-ipc".into());
                continue;
            }
            let covered = if k.is_fd() {
                fds
            } else {
                k.is_leak() || self.errors
            };
            if covered {
                continue;
            }
            out.push(k.to_string());
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

    fn k(s: &str) -> Kind {
        Kind::parse(s)
    }

    #[test]
    fn default_list() {
        let f = FailOn::default();
        assert!(f.matches(&k("Leak_DefinitelyLost")));
        assert!(f.matches(&k("Leak_IndirectlyLost")));
        assert!(!f.matches(&k("Leak_PossiblyLost")));
        assert!(!f.matches(&k("Leak_StillReachable")));
        assert!(f.matches(&k("InvalidRead")));
        assert!(f.matches(&k("SomeFutureKind")));
        assert_eq!(f.to_string(), DEFAULT_FAIL_ON);
    }

    #[test]
    fn single_kinds_and_groups() {
        let f = FailOn::parse("possible, invalidread").unwrap();
        assert!(f.matches(&k("Leak_PossiblyLost")));
        assert!(f.matches(&k("InvalidRead")));
        assert!(!f.matches(&k("InvalidWrite")));
        assert!(!f.matches(&k("Leak_DefinitelyLost")));
        assert_eq!(f.to_string(), "possible,InvalidRead");
        let n = FailOn::parse("none").unwrap();
        assert!(n.is_empty());
        assert!(!n.matches(&k("InvalidRead")));
        assert_eq!(n.to_string(), "none");
        let a = FailOn::parse("all").unwrap();
        assert!(a.matches(&k("Leak_StillReachable")));
        assert_eq!(
            a.to_string(),
            "definite,indirect,possible,reachable,errors,import"
        );
    }

    #[test]
    fn descriptor_kinds() {
        let d = FailOn::default();
        assert!(
            d.matches(&k("FdNotClosed"))
                && d.matches(&k("FdBadClose"))
                && d.matches(&k("FdBadUse"))
        );
        let m = FailOn::parse("definite,memerrors").unwrap();
        assert!(m.matches(&k("InvalidRead")) && !m.matches(&k("FdNotClosed")));
        assert_eq!(m.to_string(), "definite,memerrors");
        let f = FailOn::parse("definite,fds").unwrap();
        assert!(f.matches(&k("FdBadClose")) && !f.matches(&k("InvalidRead")));
        assert_eq!(f.to_string(), "definite,fds");
        assert_eq!(
            FailOn::parse("memerrors,fds").unwrap().to_string(),
            "errors"
        );
        let one = FailOn::parse("FdNotClosed").unwrap();
        assert!(one.matches(&k("FdNotClosed")) && !one.matches(&k("FdBadClose")));
        assert_eq!(one.to_string(), "FdNotClosed");
        assert_eq!(
            FailOn::parse("all").unwrap(),
            FailOn::parse("leaks,errors,import").unwrap()
        );
    }

    #[test]
    fn import_word() {
        let f = FailOn::parse("definite,import").unwrap();
        assert!(f.import);
        assert_eq!(f.items(), ["definite", "import"]);
        assert!(f.matches_finding(&k("Leak_DefinitelyLost"), true));
        let d = FailOn::default();
        assert!(!d.import);
        assert!(!d.matches_finding(&k("Leak_DefinitelyLost"), true));
        assert!(d.matches_finding(&k("Leak_DefinitelyLost"), false));
        // Not a kind: a memory error made at import stays an error.
        assert!(d.matches_finding(&k("InvalidRead"), false));
    }

    #[test]
    fn help_lists_every_group_the_parser_accepts() {
        let help = fail_on_help();
        for g in GROUPS {
            assert!(FailOn::parse(g.name).is_ok(), "{}", g.name);
            assert!(
                help.contains(&format!("{} (", g.name)),
                "{}: {help}",
                g.name
            );
        }
        // The words `items()` writes back are all groups, and parse.
        for name in ["definite", "memerrors", "fds", "import", "none", "cuda-ipc"] {
            assert!(GROUPS.iter().any(|g| g.name == name), "{name}");
        }
        assert!(help.contains("import ("), "{help}");
        let err = FailOn::parse("definte").unwrap_err().to_string();
        assert!(
            err.contains("memerrors, fds, import, all, none, cuda-ipc"),
            "{err}"
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
