//! Unit tests of `suppress::kind`.

use super::*;
use crate::model::GenSuppression;

fn rec(kind: &str, what: &str) -> Record {
    Record {
        kind: kind.into(),
        what: what.into(),
        ..Default::default()
    }
}

#[test]
fn leak_kind_sets() {
    assert_eq!(LeakKindSet::parse("all"), Ok(LeakKindSet::ALL));
    assert_eq!(LeakKindSet::parse("none"), Ok(LeakKindSet::NONE));
    let s = LeakKindSet::parse("definite,possible").unwrap();
    assert!(s.contains(LeakKind::Definite) && s.contains(LeakKind::Possible));
    assert!(!s.contains(LeakKind::Reachable));
    assert_eq!(s.to_string(), "possible,definite");
    // empty items are ignored
    assert_eq!(
        LeakKindSet::parse(",definite,,"),
        Ok(LeakKindSet::only(LeakKind::Definite))
    );
    // E13: no spaces after commas
    assert!(matches!(
        LeakKindSet::parse("definite, possible"),
        Err(LeakKindsError::UnknownWord(_))
    ));
    assert_eq!(
        LeakKindSet::parse("all,definite"),
        Err(LeakKindsError::Mixed)
    );
    assert_eq!(
        LeakKindSet::parse("none,definite"),
        Err(LeakKindsError::Mixed)
    );
    assert_eq!(LeakKindSet::parse("all,none"), Err(LeakKindsError::Mixed));
    assert_eq!(LeakKindSet::parse(""), Err(LeakKindsError::Empty));
    assert_eq!(LeakKindSet::parse(",,"), Err(LeakKindsError::Empty));
    assert!(LeakKindSet::parse("Definite").is_err());
}

#[test]
fn kinds_from_what() {
    let k = |kind, what| record_kind(&rec(kind, what));
    assert_eq!(
        k("InvalidRead", "Invalid read of size 4"),
        Some(RecordKind::Addr(4))
    );
    assert_eq!(
        k("InvalidWrite", "Invalid write of size 16"),
        Some(RecordKind::Addr(16))
    );
    assert_eq!(
        k("UninitValue", "Use of uninitialised value of size 8"),
        Some(RecordKind::Value(8))
    );
    assert_eq!(
        k(
            "UninitCondition",
            "Conditional jump or move depends on uninitialised value(s)"
        ),
        Some(RecordKind::Cond)
    );
    assert_eq!(
        k(
            "SyscallParam",
            "Syscall param write(buf) points to uninitialised byte(s)"
        ),
        Some(RecordKind::Param("write(buf)".into()))
    );
    assert_eq!(
        k(
            "SyscallParam",
            "Syscall param ioctl(generic) contains uninitialised byte(s)"
        ),
        Some(RecordKind::Param("ioctl(generic)".into()))
    );
    assert_eq!(
        k("MismatchedFree", "Mismatched free() / delete / delete []"),
        Some(RecordKind::Free)
    );
    assert_eq!(
        k(
            "FishyValue",
            "Argument 'size' of function malloc has a fishy (possibly negative) value: -5\n"
        ),
        Some(RecordKind::FishyValue {
            func: "malloc".into(),
            arg: "size".into()
        })
    );
    assert_eq!(
        k("Leak_PossiblyLost", "8 bytes in 1 blocks are possibly lost"),
        Some(RecordKind::Leak(LeakKind::Possible))
    );
    assert_eq!(k("ClientCheck", "x"), Some(RecordKind::User));
    assert_eq!(k("InvalidJump", "x"), Some(RecordKind::Jump));
    assert_eq!(k("ReallocSizeZero", "x"), Some(RecordKind::ReallocZero));
    assert_eq!(k("InvalidSize", "x"), Some(RecordKind::BadSize));
    assert_eq!(k("InvalidAlignment", "x"), Some(RecordKind::BadAlign));
    assert_eq!(
        k("Race", "x"),
        Some(RecordKind::Other {
            tool: "Helgrind".into(),
            kind: "Race".into()
        })
    );
    assert_eq!(k("FatalSignal", ""), None);
    assert_eq!(k("InvalidRead", "garbled"), None);
    assert_eq!(k("SyscallParam", "Syscall param x"), None);
}

#[test]
fn kinds_from_skind() {
    let mut r = rec("SyscallParam", "garbled");
    r.suppression = Some(GenSuppression {
        kind: "Memcheck:Param".into(),
        aux: Some("write(buf)".into()),
        frames: vec![],
    });
    assert_eq!(
        record_kind(&r),
        Some(RecordKind::Param("write(buf)".into()))
    );
    let mut r = rec("Leak_IndirectlyLost", "");
    r.suppression = Some(GenSuppression {
        kind: "Memcheck:Leak".into(),
        aux: Some("match-leak-kinds: indirect".into()),
        frames: vec![],
    });
    assert_eq!(record_kind(&r), Some(RecordKind::Leak(LeakKind::Indirect)));
    let mut r = rec("FishyValue", "");
    r.suppression = Some(GenSuppression {
        kind: "Memcheck:FishyValue".into(),
        aux: Some("malloc(size)".into()),
        frames: vec![],
    });
    assert_eq!(
        record_kind(&r),
        Some(RecordKind::FishyValue {
            func: "malloc".into(),
            arg: "size".into()
        })
    );
}

#[test]
fn kind_test() {
    assert!(SuppKind::Addr(4).matches(&RecordKind::Addr(4)));
    assert!(!SuppKind::Addr(4).matches(&RecordKind::Addr(8)));
    assert!(!SuppKind::Addr(4).matches(&RecordKind::Value(4)));
    assert!(SuppKind::Param("write(buf)".into()).matches(&RecordKind::Param("write(buf)".into())));
    assert!(
        !SuppKind::Param("write(buf) ".into()).matches(&RecordKind::Param("write(buf)".into()))
    );
    assert!(!SuppKind::CoreMem.matches(&RecordKind::CoreMem));
    assert!(SuppKind::UnsafeZeroSize.matches(&RecordKind::BadSize));
    assert!(
        !SuppKind::FishyValue(None).matches(&RecordKind::FishyValue {
            func: "malloc".into(),
            arg: "size".into()
        })
    );
    let set = LeakKindSet::parse("definite,possible").unwrap();
    assert!(SuppKind::Leak(set).matches(&RecordKind::Leak(LeakKind::Possible)));
    assert!(!SuppKind::Leak(set).matches(&RecordKind::Leak(LeakKind::Reachable)));
    assert!(!SuppKind::Leak(LeakKindSet::NONE).matches(&RecordKind::Leak(LeakKind::Definite)));
    assert_eq!(SuppKind::ReallocZero.introduced_in(), Some("3.21"));
    assert!(!SuppKind::SizeMismatch.known_to_3_19());
    use crate::versions::VgVersion;
    let (v19, v22, v26) = (
        VgVersion::new(3, 19, 0),
        VgVersion::new(3, 22, 0),
        VgVersion::new(3, 26, 0),
    );
    assert!(SuppKind::Cond.accepted_by(v19) && SuppKind::Cond.accepted_range().is_none());
    assert!(!SuppKind::BadSize.accepted_by(v19) && SuppKind::BadSize.accepted_by(v22));
    assert!(SuppKind::BadSize.accepted_by(v26));
    assert!(!SuppKind::UnsafeZeroSize.accepted_by(v22));
    assert!(SuppKind::UnsafeZeroSize.accepted_by(v26));
    assert!(SuppKind::FishyValue(None).accepted_range().is_none());
}
