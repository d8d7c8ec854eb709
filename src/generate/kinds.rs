//! Which kinds a generated suppression file covers (`--kinds`), and the
//! Valgrind suppression kind each record becomes.

use crate::suppress::{LeakKind, LeakKindSet, RecordKind};
use crate::versions::{FD_ERRORS_IN_XML, VgVersion};

/// Which record kinds the generator covers (`--kinds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFilter {
    pub leaks: LeakKindSet,
    pub errors: bool,
}

impl Default for KindFilter {
    /// The gated kinds: definite, indirect and every non-leak error.
    fn default() -> Self {
        let mut leaks = LeakKindSet::only(LeakKind::Definite);
        leaks.insert(LeakKind::Indirect);
        KindFilter {
            leaks,
            errors: true,
        }
    }
}

impl KindFilter {
    /// `definite,indirect,possible,reachable,errors` (any subset) or `all`.
    pub fn parse(s: &str) -> Result<KindFilter, String> {
        let mut k = KindFilter {
            leaks: LeakKindSet::NONE,
            errors: false,
        };
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "all" => {
                    k.leaks = LeakKindSet::ALL;
                    k.errors = true;
                }
                "errors" => k.errors = true,
                w => match LeakKind::from_token(w) {
                    Some(l) => k.leaks.insert(l),
                    None => {
                        return Err(format!(
                            "unknown kind {w:?} (definite, indirect, possible, reachable, errors or all)"
                        ));
                    }
                },
            }
        }
        if k.leaks.is_empty() && !k.errors {
            return Err("no kinds given".into());
        }
        Ok(k)
    }

    pub(super) fn covers(&self, rk: &RecordKind) -> bool {
        match rk {
            RecordKind::Leak(l) => self.leaks.contains(*l),
            _ => self.errors,
        }
    }

    /// The filter as `--kinds` text.
    pub fn describe(&self) -> String {
        let mut v: Vec<&str> = Vec::new();
        for k in [
            LeakKind::Definite,
            LeakKind::Indirect,
            LeakKind::Possible,
            LeakKind::Reachable,
        ] {
            if self.leaks.contains(k) {
                v.push(k.token());
            }
        }
        if self.errors {
            v.push("errors");
        }
        v.join(",")
    }
}

/// The kind part of a rule: `Memcheck:KIND` plus its extra line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GKind {
    Leak(LeakKindSet),
    Other { name: String, extra: Option<String> },
}

impl GKind {
    /// From the record's kind; `None` for kinds the target Valgrind cannot
    /// suppress (3.19 reads none of the 3.21/3.22 kinds; 3.26 renamed
    /// `BadSize` to `UnsafeZeroSize`, the name written for it from 3.26).
    pub(super) fn of(rk: &RecordKind, target: VgVersion) -> Option<GKind> {
        let plain = |n: &str| {
            Some(GKind::Other {
                name: n.to_string(),
                extra: None,
            })
        };
        match rk {
            RecordKind::Leak(l) => Some(GKind::Leak(LeakKindSet::only(*l))),
            RecordKind::ReallocZero if target.at_least(3, 21) => plain("ReallocZero"),
            RecordKind::BadAlign if target.at_least(3, 22) => plain("BadAlign"),
            RecordKind::BadSize if target.at_least(3, 26) => plain("UnsafeZeroSize"),
            RecordKind::BadSize if target.at_least(3, 22) => plain("BadSize"),
            RecordKind::SizeMismatch if target.at_least(3, 22) => plain("SizeMismatch"),
            RecordKind::Other { tool, kind }
                if tool == "CoreError"
                    && crate::kind::is_fd_kind(kind)
                    && target.at_least(FD_ERRORS_IN_XML.0, FD_ERRORS_IN_XML.1) =>
            {
                plain(&format!("CoreError:{kind}"))
            }
            RecordKind::AlignMismatch if target.at_least(3, 22) => plain("AlignMismatch"),
            RecordKind::Addr(n) => plain(&format!("Addr{n}")),
            RecordKind::Value(n) => plain(&format!("Value{n}")),
            RecordKind::Cond => plain("Cond"),
            RecordKind::Free => plain("Free"),
            RecordKind::Jump => plain("Jump"),
            RecordKind::Overlap => plain("Overlap"),
            RecordKind::Mempool => plain("Mempool"),
            RecordKind::User => plain("User"),
            RecordKind::Param(p) if is_extra_safe(p) => Some(GKind::Other {
                name: "Param".into(),
                extra: Some(p.clone()),
            }),
            RecordKind::FishyValue { func, arg }
                if is_extra_safe(func) && is_extra_safe(arg) && !func.contains('(') =>
            {
                Some(GKind::Other {
                    name: "FishyValue".into(),
                    extra: Some(format!("{func}({arg})")),
                })
            }
            _ => None,
        }
    }

    /// Key for merging (leak kinds are unioned, so they are not part of it).
    pub(super) fn key(&self) -> String {
        match self {
            GKind::Leak(_) => "Leak".into(),
            GKind::Other { name, extra } => format!("{name}\n{}", extra.as_deref().unwrap_or("")),
        }
    }

    pub(super) fn tag(&self) -> String {
        match self {
            GKind::Leak(set) => {
                let mut v: Vec<&str> = set.iter().map(LeakKind::token).collect();
                v.reverse();
                v.join("+")
            }
            GKind::Other { name, .. } => {
                name.strip_prefix("CoreError:").unwrap_or(name).to_string()
            }
        }
    }
}

/// An extra line must be one line that Valgrind reads back verbatim.
pub(super) fn is_extra_safe(s: &str) -> bool {
    !s.is_empty()
        && s.trim() == s
        && !s.contains(['\n', '\r'])
        && !s.starts_with('#')
        && !s.starts_with("fun:")
        && !s.starts_with("obj:")
        && s != "..."
        && s != "}"
}
