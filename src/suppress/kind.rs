//! Suppression kinds (`Memcheck:Addr4`, `Memcheck:Leak`, ...), leak-kind sets,
//! and the kind of an XML record as the suppression matcher sees it
//! (Valgrind's `MC_(is_recognised_suppression)` and
//! `MC_(error_matches_suppression)`, spec §1.5.2, §2.6, §3.2).

use std::fmt;

use crate::model::Record;

/// One leak state of a loss record (spec §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LeakKind {
    Reachable,
    Possible,
    Indirect,
    Definite,
}

impl LeakKind {
    /// All four kinds, in Valgrind's enum order.
    pub const ALL: [LeakKind; 4] = [
        LeakKind::Reachable,
        LeakKind::Possible,
        LeakKind::Indirect,
        LeakKind::Definite,
    ];

    /// The token used in `match-leak-kinds:` and `--show-leak-kinds`.
    pub fn token(self) -> &'static str {
        match self {
            LeakKind::Reachable => "reachable",
            LeakKind::Possible => "possible",
            LeakKind::Indirect => "indirect",
            LeakKind::Definite => "definite",
        }
    }

    /// Parses one token (`definite`, ...). `all`/`none` are not kinds.
    pub fn from_token(tok: &str) -> Option<Self> {
        LeakKind::ALL.into_iter().find(|k| k.token() == tok)
    }

    /// The leak kind of an XML `<kind>` (`Leak_DefinitelyLost`, ...).
    pub fn from_xml_kind(kind: &str) -> Option<Self> {
        match crate::kind::Kind::parse(kind) {
            crate::kind::Kind::DefinitelyLost => Some(LeakKind::Definite),
            crate::kind::Kind::IndirectlyLost => Some(LeakKind::Indirect),
            crate::kind::Kind::PossiblyLost => Some(LeakKind::Possible),
            crate::kind::Kind::StillReachable => Some(LeakKind::Reachable),
            _ => None,
        }
    }

    fn bit(self) -> u8 {
        match self {
            LeakKind::Reachable => 1,
            LeakKind::Possible => 2,
            LeakKind::Indirect => 4,
            LeakKind::Definite => 8,
        }
    }
}

/// A set of leak kinds, as given by `match-leak-kinds:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LeakKindSet(u8);

/// Why a `match-leak-kinds:` value was rejected (Valgrind: "bad or missing
/// extra suppression info").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeakKindsError {
    /// A word that is not a leak kind, `all` or `none` (this includes words
    /// with spaces, as in `definite, possible`).
    UnknownWord(String),
    /// `all` or `none` mixed with another word.
    Mixed,
    /// No word at all.
    Empty,
}

impl fmt::Display for LeakKindsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeakKindsError::UnknownWord(w) => write!(f, "unknown leak kind {w:?}"),
            LeakKindsError::Mixed => f.write_str("'all' or 'none' mixed with other leak kinds"),
            LeakKindsError::Empty => f.write_str("empty leak kind list"),
        }
    }
}

impl std::error::Error for LeakKindsError {}

impl LeakKindSet {
    /// Every kind (also the meaning of a missing `match-leak-kinds:` line).
    pub const ALL: LeakKindSet = LeakKindSet(15);
    /// No kind (`match-leak-kinds: none`).
    pub const NONE: LeakKindSet = LeakKindSet(0);

    /// A set with one kind.
    pub fn only(k: LeakKind) -> Self {
        LeakKindSet(k.bit())
    }

    pub fn contains(self, k: LeakKind) -> bool {
        self.0 & k.bit() != 0
    }

    pub fn insert(&mut self, k: LeakKind) {
        self.0 |= k.bit();
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn is_all(self) -> bool {
        self == LeakKindSet::ALL
    }

    /// The kinds in the set, in enum order.
    pub fn iter(self) -> impl Iterator<Item = LeakKind> {
        LeakKind::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// Parses a value exactly like Valgrind's `VG_(parse_enum_set)` with
    /// `allow_all`: comma-separated words (empty items ignored, no spaces
    /// allowed), each a kind, or a lone `all` or `none`.
    pub fn parse(value: &str) -> Result<Self, LeakKindsError> {
        let mut set = LeakKindSet::NONE;
        let (mut all, mut none, mut words) = (false, false, 0usize);
        for w in value.split(',').filter(|w| !w.is_empty()) {
            words += 1;
            match w {
                "all" => all = true,
                "none" => none = true,
                _ => match LeakKind::from_token(w) {
                    Some(k) => set.insert(k),
                    None => return Err(LeakKindsError::UnknownWord(w.to_string())),
                },
            }
        }
        if all {
            if none || !set.is_empty() {
                return Err(LeakKindsError::Mixed);
            }
            Ok(LeakKindSet::ALL)
        } else if none {
            if !set.is_empty() {
                return Err(LeakKindsError::Mixed);
            }
            Ok(LeakKindSet::NONE)
        } else if words == 0 {
            Err(LeakKindsError::Empty)
        } else {
            Ok(set)
        }
    }
}

impl fmt::Display for LeakKindSet {
    /// `all`, `none`, or the kinds joined by `,` (the `match-leak-kinds:` syntax).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_all() {
            return f.write_str("all");
        }
        if self.is_empty() {
            return f.write_str("none");
        }
        let mut first = true;
        for k in self.iter() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(k.token())?;
        }
        Ok(())
    }
}

/// The `FUNC(ARG)` extra line of a `FishyValue` suppression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FishyTarget {
    pub func: String,
    pub arg: String,
}

/// The kind of a suppression (the part after `Tool:`), with its extra line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuppKind {
    /// `Param` + the syscall parameter line (exact string equality).
    Param(String),
    User,
    /// Accepted but never matches anything (Valgrind compares with NULL).
    CoreMem,
    /// `AddrN`, N ∈ 1,2,4,8,16,32.
    Addr(u32),
    /// `ValueN`, N ∈ 1,2,4,8,16,32 (`Value0` is [`SuppKind::Cond`]).
    Value(u32),
    Cond,
    Jump,
    Free,
    Overlap,
    Mempool,
    /// `Leak` with its `match-leak-kinds:` set (all kinds when absent).
    Leak(LeakKindSet),
    /// `FishyValue`; `None` when a location line followed the kind line
    /// (Valgrind accepts it, then crashes when such a suppression is tested).
    FishyValue(Option<FishyTarget>),
    /// 3.21+.
    ReallocZero,
    /// 3.22+.
    BadAlign,
    /// 3.22+ (renamed `UnsafeZeroSize` in 3.26; both are accepted there).
    BadSize,
    /// 3.26+.
    UnsafeZeroSize,
    /// 3.22+.
    SizeMismatch,
    /// 3.22+.
    AlignMismatch,
    /// A kind of another tool (Helgrind, drd, ...), compared by name.
    Other(String),
}

impl SuppKind {
    /// The Valgrind version that introduced this kind, for kinds newer than
    /// the 3.9 baseline; a 3.19 reader rejects kinds newer than 3.19.
    pub fn introduced_in(&self) -> Option<&'static str> {
        match self {
            SuppKind::FishyValue(_) => Some("3.10"),
            SuppKind::ReallocZero => Some("3.21"),
            SuppKind::BadAlign
            | SuppKind::BadSize
            | SuppKind::SizeMismatch
            | SuppKind::AlignMismatch => Some("3.22"),
            SuppKind::UnsafeZeroSize => Some("3.26"),
            _ => None,
        }
    }

    /// Whether Valgrind `v` reads this kind (checked against 3.19.0,
    /// 3.22.0, 3.26.0 and 3.27.1: none of these drops a kind; 3.26 renamed
    /// `BadSize` to `UnsafeZeroSize` and still reads the old name).
    pub fn accepted_by(&self, v: crate::versions::VgVersion) -> bool {
        self.introduced_in()
            .and_then(crate::versions::VgVersion::parse)
            .is_none_or(|since| v >= since)
    }

    /// Which releases read this kind, for `leakgate lint`: `None` for kinds
    /// every supported release (3.19 and later) reads.
    pub fn accepted_range(&self) -> Option<String> {
        if self.known_to_3_19() {
            return None;
        }
        let since = self.introduced_in()?;
        Some(match self {
            SuppKind::BadSize => {
                format!(
                    "Valgrind {since} and later (renamed UnsafeZeroSize in 3.26, which still reads BadSize)"
                )
            }
            SuppKind::UnsafeZeroSize => {
                format!("Valgrind {since} and later (3.22 to 3.25 call it BadSize)")
            }
            _ => format!("Valgrind {since} and later"),
        })
    }

    /// Whether Valgrind 3.19 accepts this kind.
    pub fn known_to_3_19(&self) -> bool {
        !matches!(
            self,
            SuppKind::ReallocZero
                | SuppKind::BadAlign
                | SuppKind::BadSize
                | SuppKind::UnsafeZeroSize
                | SuppKind::SizeMismatch
                | SuppKind::AlignMismatch
        )
    }

    /// The kind test of `MC_(error_matches_suppression)` (spec §3.2).
    pub fn matches(&self, rk: &RecordKind) -> bool {
        match (self, rk) {
            (SuppKind::Param(s), RecordKind::Param(e)) => s == e,
            (SuppKind::User, RecordKind::User) => true,
            (SuppKind::CoreMem, _) => false,
            (SuppKind::Addr(a), RecordKind::Addr(b)) => a == b,
            (SuppKind::Value(a), RecordKind::Value(b)) => a == b,
            (SuppKind::Cond, RecordKind::Cond) => true,
            (SuppKind::Jump, RecordKind::Jump) => true,
            (SuppKind::Free, RecordKind::Free) => true,
            (SuppKind::Overlap, RecordKind::Overlap) => true,
            (SuppKind::Mempool, RecordKind::Mempool) => true,
            (SuppKind::Leak(set), RecordKind::Leak(k)) => set.contains(*k),
            (SuppKind::FishyValue(Some(t)), RecordKind::FishyValue { func, arg }) => {
                &t.func == func && &t.arg == arg
            }
            (SuppKind::ReallocZero, RecordKind::ReallocZero) => true,
            (SuppKind::BadAlign, RecordKind::BadAlign) => true,
            (SuppKind::BadSize | SuppKind::UnsafeZeroSize, RecordKind::BadSize) => true,
            (SuppKind::SizeMismatch, RecordKind::SizeMismatch) => true,
            (SuppKind::AlignMismatch, RecordKind::AlignMismatch) => true,
            (SuppKind::Other(a), RecordKind::Other { kind, .. }) => a == kind,
            _ => false,
        }
    }

    /// The coarse key used to index suppressions by kind.
    pub(crate) fn key(&self, tool: &str) -> KindKey {
        match self {
            SuppKind::Param(_) => KindKey::Param,
            SuppKind::User => KindKey::User,
            SuppKind::CoreMem => KindKey::CoreMem,
            SuppKind::Addr(n) => KindKey::Addr(*n),
            SuppKind::Value(n) => KindKey::Value(*n),
            SuppKind::Cond => KindKey::Cond,
            SuppKind::Jump => KindKey::Jump,
            SuppKind::Free => KindKey::Free,
            SuppKind::Overlap => KindKey::Overlap,
            SuppKind::Mempool => KindKey::Mempool,
            SuppKind::Leak(_) => KindKey::Leak,
            SuppKind::FishyValue(_) => KindKey::FishyValue,
            SuppKind::ReallocZero => KindKey::ReallocZero,
            SuppKind::BadAlign => KindKey::BadAlign,
            SuppKind::BadSize | SuppKind::UnsafeZeroSize => KindKey::BadSize,
            SuppKind::SizeMismatch => KindKey::SizeMismatch,
            SuppKind::AlignMismatch => KindKey::AlignMismatch,
            SuppKind::Other(k) => KindKey::Other(format!("{tool}:{k}")),
        }
    }
}

/// Coarse kind used for indexing (sizes included, extra strings excluded).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum KindKey {
    Param,
    User,
    CoreMem,
    Addr(u32),
    Value(u32),
    Cond,
    Jump,
    Free,
    Overlap,
    Mempool,
    Leak,
    FishyValue,
    ReallocZero,
    BadAlign,
    BadSize,
    SizeMismatch,
    AlignMismatch,
    Other(String),
}

/// Which extra line a Memcheck kind takes (internal to the parser).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtraLine {
    None,
    Param,
    Leak,
    FishyValue,
}

/// Recognises a Memcheck kind name exactly as `MC_(is_recognised_suppression)`
/// (plus the kinds added after 3.19). Extra-line kinds come back with an
/// empty extra, to be filled by the parser.
pub(crate) fn memcheck_kind(name: &str) -> Option<(SuppKind, ExtraLine)> {
    let k = match name {
        "Param" => return Some((SuppKind::Param(String::new()), ExtraLine::Param)),
        "Leak" => return Some((SuppKind::Leak(LeakKindSet::ALL), ExtraLine::Leak)),
        "FishyValue" => return Some((SuppKind::FishyValue(None), ExtraLine::FishyValue)),
        "User" => SuppKind::User,
        "CoreMem" => SuppKind::CoreMem,
        "Addr1" => SuppKind::Addr(1),
        "Addr2" => SuppKind::Addr(2),
        "Addr4" => SuppKind::Addr(4),
        "Addr8" => SuppKind::Addr(8),
        "Addr16" => SuppKind::Addr(16),
        "Addr32" => SuppKind::Addr(32),
        "Jump" => SuppKind::Jump,
        "Free" => SuppKind::Free,
        "Overlap" => SuppKind::Overlap,
        "Mempool" => SuppKind::Mempool,
        "Cond" | "Value0" => SuppKind::Cond,
        "Value1" => SuppKind::Value(1),
        "Value2" => SuppKind::Value(2),
        "Value4" => SuppKind::Value(4),
        "Value8" => SuppKind::Value(8),
        "Value16" => SuppKind::Value(16),
        "Value32" => SuppKind::Value(32),
        "ReallocZero" => SuppKind::ReallocZero,
        "BadAlign" => SuppKind::BadAlign,
        "BadSize" => SuppKind::BadSize,
        "UnsafeZeroSize" => SuppKind::UnsafeZeroSize,
        "SizeMismatch" => SuppKind::SizeMismatch,
        "AlignMismatch" => SuppKind::AlignMismatch,
        _ => return None,
    };
    Some((k, ExtraLine::None))
}

/// Helgrind suppression kinds (XML kind = suppression kind, plus `FreeMemLock`).
pub const HELGRIND_KINDS: &[&str] = &[
    "Race",
    "FreeMemLock",
    "UnlockUnlocked",
    "UnlockForeign",
    "UnlockBogus",
    "PthAPIerror",
    "LockOrder",
    "Misc",
];

/// DRD suppression kinds (XML kind = suppression kind).
pub const DRD_KINDS: &[&str] = &[
    "ConflictingAccess",
    "MutexErr",
    "CondErr",
    "CondDestrErr",
    "CondRaceErr",
    "CondWaitErr",
    "SemaphoreErr",
    "BarrierErr",
    "RwlockErr",
    "HoldtimeErr",
    "GenericErr",
    "InvalidThreadId",
    "UnimpHgClReq",
    "UnimpDrdClReq",
];

/// Recognises a kind of `tool` (Valgrind's details name). Tools other than
/// Memcheck, Helgrind and drd accept any kind.
pub(crate) fn tool_kind(tool: &str, name: &str) -> Option<(SuppKind, ExtraLine)> {
    match tool {
        "Memcheck" => memcheck_kind(name),
        "Helgrind" if !HELGRIND_KINDS.contains(&name) => None,
        "drd" if !DRD_KINDS.contains(&name) => None,
        _ => Some((SuppKind::Other(name.to_string()), ExtraLine::None)),
    }
}

/// The kind of an error record, in the terms the suppression kind test uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKind {
    Addr(u32),
    Value(u32),
    Cond,
    Param(String),
    Free,
    Jump,
    Overlap,
    User,
    Mempool,
    CoreMem,
    FishyValue {
        func: String,
        arg: String,
    },
    Leak(LeakKind),
    ReallocZero,
    BadAlign,
    BadSize,
    SizeMismatch,
    AlignMismatch,
    /// A Helgrind/DRD/other-tool error: `tool` is the details name.
    Other {
        tool: String,
        kind: String,
    },
}

impl RecordKind {
    pub(crate) fn key(&self) -> KindKey {
        match self {
            RecordKind::Addr(n) => KindKey::Addr(*n),
            RecordKind::Value(n) => KindKey::Value(*n),
            RecordKind::Cond => KindKey::Cond,
            RecordKind::Param(_) => KindKey::Param,
            RecordKind::Free => KindKey::Free,
            RecordKind::Jump => KindKey::Jump,
            RecordKind::Overlap => KindKey::Overlap,
            RecordKind::User => KindKey::User,
            RecordKind::Mempool => KindKey::Mempool,
            RecordKind::CoreMem => KindKey::CoreMem,
            RecordKind::FishyValue { .. } => KindKey::FishyValue,
            RecordKind::Leak(_) => KindKey::Leak,
            RecordKind::ReallocZero => KindKey::ReallocZero,
            RecordKind::BadAlign => KindKey::BadAlign,
            RecordKind::BadSize => KindKey::BadSize,
            RecordKind::SizeMismatch => KindKey::SizeMismatch,
            RecordKind::AlignMismatch => KindKey::AlignMismatch,
            RecordKind::Other { tool, kind } => KindKey::Other(format!("{tool}:{kind}")),
        }
    }
}

/// The number after `of size ` (`Invalid read of size 4`).
fn size_after_of_size(what: &str) -> Option<u32> {
    let rest = &what[what.find("of size ")? + 8..];
    let end = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..end].parse().ok()
}

/// `P` from `Syscall param P contains ...` / `... points to ...` (the regex
/// `Syscall param (.*) (contains|points to)`, greedy).
fn syscall_param(what: &str) -> Option<String> {
    let start = what.find("Syscall param ")? + "Syscall param ".len();
    let rest = &what[start..];
    let end = [rest.rfind(" contains"), rest.rfind(" points to")]
        .into_iter()
        .flatten()
        .max()?;
    Some(rest[..end].to_string())
}

/// `(F, A)` from `Argument 'A' of function F has ...`.
fn fishy_from_what(what: &str) -> Option<(String, String)> {
    let start = what.find("Argument '")? + "Argument '".len();
    let rest = &what[start..];
    let sep = rest.find("' of function ")?;
    let arg = &rest[..sep];
    let after = &rest[sep + "' of function ".len()..];
    let func = &after[..after.find(" has")?];
    Some((func.to_string(), arg.to_string()))
}

/// `(F, A)` from a `FUNC(ARG)` suppression line, as Valgrind reads it:
/// FUNC is the text before the first `(`, ARG runs to the next `)`.
pub(crate) fn parse_fishy_line(line: &str) -> Option<FishyTarget> {
    let open = line.find('(')?;
    let rest = &line[open + 1..];
    let close = rest.find(')')?;
    Some(FishyTarget {
        func: line[..open].to_string(),
        arg: rest[..close].to_string(),
    })
}

/// Derives the record's kind from `<kind>` and `<what>` (spec §1.5.2, §3.7).
fn kind_from_xml(rec: &Record) -> Option<RecordKind> {
    let what = rec.what.as_str();
    let kind: &str = &rec.kind;
    Some(match kind {
        "InvalidRead" | "InvalidWrite" => RecordKind::Addr(size_after_of_size(what)?),
        "UninitValue" => RecordKind::Value(size_after_of_size(what)?),
        "UninitCondition" => RecordKind::Cond,
        "SyscallParam" => RecordKind::Param(syscall_param(what)?),
        "InvalidFree" | "MismatchedFree" => RecordKind::Free,
        "InvalidJump" => RecordKind::Jump,
        "Overlap" => RecordKind::Overlap,
        "ClientCheck" => RecordKind::User,
        "InvalidMemPool" => RecordKind::Mempool,
        "CoreMemError" => RecordKind::CoreMem,
        "FishyValue" => {
            let (func, arg) = fishy_from_what(what)?;
            RecordKind::FishyValue { func, arg }
        }
        "ReallocSizeZero" => RecordKind::ReallocZero,
        "InvalidSizeAndAlignment" | "InvalidAlignment" => RecordKind::BadAlign,
        "InvalidSize" => RecordKind::BadSize,
        "MismatchedAllocateDeallocateSize" => RecordKind::SizeMismatch,
        "MismatchedAllocateDeallocateAlignment" => RecordKind::AlignMismatch,
        k if HELGRIND_KINDS.contains(&k) => RecordKind::Other {
            tool: "Helgrind".into(),
            kind: k.into(),
        },
        k if DRD_KINDS.contains(&k) => RecordKind::Other {
            tool: "drd".into(),
            kind: k.into(),
        },
        k => RecordKind::Leak(LeakKind::from_xml_kind(k)?),
    })
}

/// Derives the record's kind from `<skind>`/`<skaux>` (exact), if present.
fn kind_from_skind(rec: &Record) -> Option<RecordKind> {
    let gs = rec.suppression.as_ref()?;
    let (tool, kind) = gs.kind.split_once(':')?;
    if tool != "Memcheck" {
        return Some(RecordKind::Other {
            tool: tool.to_string(),
            kind: kind.to_string(),
        });
    }
    let aux = gs.aux.as_deref();
    let (sk, _) = memcheck_kind(kind)?;
    Some(match sk {
        SuppKind::Param(_) => RecordKind::Param(aux?.to_string()),
        SuppKind::Leak(_) => {
            let k = LeakKind::from_xml_kind(&rec.kind).or_else(|| {
                let v = aux?.strip_prefix("match-leak-kinds:")?.trim_start();
                LeakKind::from_token(v)
            })?;
            RecordKind::Leak(k)
        }
        SuppKind::FishyValue(_) => {
            let t = parse_fishy_line(aux?)?;
            RecordKind::FishyValue {
                func: t.func,
                arg: t.arg,
            }
        }
        SuppKind::User => RecordKind::User,
        SuppKind::CoreMem => RecordKind::CoreMem,
        SuppKind::Addr(n) => RecordKind::Addr(n),
        SuppKind::Value(n) => RecordKind::Value(n),
        SuppKind::Cond => RecordKind::Cond,
        SuppKind::Jump => RecordKind::Jump,
        SuppKind::Free => RecordKind::Free,
        SuppKind::Overlap => RecordKind::Overlap,
        SuppKind::Mempool => RecordKind::Mempool,
        SuppKind::ReallocZero => RecordKind::ReallocZero,
        SuppKind::BadAlign => RecordKind::BadAlign,
        SuppKind::BadSize | SuppKind::UnsafeZeroSize => RecordKind::BadSize,
        SuppKind::SizeMismatch => RecordKind::SizeMismatch,
        SuppKind::AlignMismatch => RecordKind::AlignMismatch,
        SuppKind::Other(k) => RecordKind::Other {
            tool: tool.to_string(),
            kind: k,
        },
    })
}

/// The kind the suppression matcher tests for `rec`: from `<skind>`/`<skaux>`
/// when `--gen-suppressions=all` was used, otherwise derived from `<kind>` and
/// `<what>`. `None` for kinds no suppression can match (fatal signals, unknown
/// kinds, unparsable texts).
pub fn record_kind(rec: &Record) -> Option<RecordKind> {
    kind_from_skind(rec).or_else(|| kind_from_xml(rec))
}

#[cfg(test)]
mod tests;
