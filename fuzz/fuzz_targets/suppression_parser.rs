//! Fuzz target: the suppression-file reader (`leakgate lint`, `--suppressions`)
//! on arbitrary text, then building a matcher from what it read and matching
//! a fixed record with it. Must never panic; every error names a line of
//! the file.
#![no_main]

use leakgate::model::{Frame, Record};
use leakgate::suppress::{MatchOptions, SuppressionSet, parse_detailed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().count().max(1) as u32 + 1;
    for num_callers in [12, 500] {
        let parsed = parse_detailed("fuzz.supp", &text, "Memcheck", num_callers);
        for e in &parsed.errors {
            assert!(
                e.line <= lines,
                "error line {} beyond the file ({lines})",
                e.line
            );
        }
        let set = SuppressionSet::new(parsed.suppressions, MatchOptions::default());
        let frame = |f: &str, o: &str| Frame {
            ip: Some("0x1".into()),
            obj: Some(o.into()),
            func: Some(f.into()),
            sfun: Some(f.into()),
            ..Default::default()
        };
        for kind in [
            "Leak_DefinitelyLost",
            "InvalidRead",
            "UninitCondition",
            "SyscallParam",
        ] {
            let rec = Record {
                kind: kind.into(),
                what: "Invalid read of size 4 Syscall param write(buf) points to".into(),
                stack: vec![
                    frame(
                        "malloc",
                        "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
                    ),
                    frame("foo", "/home/u/app"),
                    frame("main", "/home/u/app"),
                ],
                ..Default::default()
            };
            let _ = set.first_match(&rec);
            let _ = set.explain(&rec);
        }
    }
});
