//! Unit tests of the text renderer: numbers, the `target:` line, the
//! process table.

use super::*;
use crate::report::{Finding, Growth};

#[test]
fn formats_thousands() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1234567), "1,234,567");
}

/// A run report of `command` with `processes` and no findings.
fn report(command: &[&str], processes: serde_json::Value) -> Report {
    crate::render::test_report(command, processes, Vec::new())
}

fn process(pid: u64, ppid: u64, command: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "pid": pid, "ppid": ppid, "command": command, "complete": true,
        "exit": null, "xml": format!("vg.{pid}.xml"), "incomplete_reason": null,
        "records": 0, "client_messages": [],
    })
}

#[test]
fn the_target_line_is_shell_quoted() {
    let r = report(
        &["python", "-c", "import os; os.abort()"],
        serde_json::json!([]),
    );
    let text = render(&r, TextOptions::default());
    assert!(
        text.contains("target: python -c 'import os; os.abort()' (exit code 0)"),
        "{text}"
    );
}

#[test]
fn the_process_table_is_aligned_and_leaves_out_untraced_execs() {
    let mut helper = process(12, 10, &["python3", "-m", "pytest"]);
    helper["pre_exec"] = true.into();
    let mut child = process(11, 10, &["python3", "-m", "pytest", "a b"]);
    child["forked"] = true.into();
    let r = report(
        &["python3", "-m", "pytest"],
        serde_json::json!([
            process(10, 9, &["python3", "-m", "pytest", "a b"]),
            child,
            helper
        ]),
    );
    let text = render(&r, TextOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    let head = lines.iter().position(|l| *l == "processes:").expect(&text);
    let header = lines[head + 1];
    assert!(
        header.contains("pid") && header.ends_with("command"),
        "{text}"
    );
    // Every column starts where its header does.
    for row in &lines[head + 2..head + 4] {
        for word in ["pid", "ppid"] {
            let end = header.find(word).unwrap() + word.len();
            assert_eq!(
                row.as_bytes()[end],
                b' ',
                "{word} of {row:?} under {header:?}"
            );
            assert_ne!(
                row.as_bytes()[end - 1],
                b' ',
                "{word} of {row:?} under {header:?}"
            );
        }
        for word in ["ended", "XML", "command"] {
            let at = header.find(word).unwrap();
            assert_eq!(
                row.as_bytes()[at - 1],
                b' ',
                "{word} of {row:?} under {header:?}"
            );
            assert_ne!(
                row.as_bytes()[at],
                b' ',
                "{word} of {row:?} under {header:?}"
            );
        }
    }
    assert!(
        lines[head + 2].ends_with("python3 -m pytest 'a b'"),
        "{text}"
    );
    assert!(lines[head + 3].ends_with("'a b' (fork)"), "{text}");
    // The child that exec'd an untraced program is not a row.
    assert!(!text.contains("pre-exec part"), "{text}");
    assert!(
        lines[head + 4].starts_with(
            "processes: also 1 fork child that exec'd a program leakgate does not trace"
        ),
        "{text}"
    );
}

/// A user leak of `bytes` at `m.c:line`, grown in `test` (a share of
/// `kind`), of growth `growth`.
fn leak_in(line: u32, test: &str, kind: &str, growth: Option<Growth>) -> Finding {
    Finding {
        fingerprint: format!("f{line}"),
        kind: crate::report::Kind::DefinitelyLost,
        category: crate::report::Category::User,
        bytes: Some(16),
        direct_bytes: Some(16),
        blocks: Some(1),
        gated: Some(true),
        fails: true,
        location: Some(crate::report::Location {
            function: Some("f".into()),
            file: Some("m.c".into()),
            path: None,
            line: Some(line),
            object: None,
            generated: None,
        }),
        tests: vec![crate::report::TestShare {
            test: test.into(),
            kind: kind.into(),
            bytes: 16,
            blocks: 1,
            repetitions: Vec::new(),
            growth,
            errors: 0,
        }],
        growth,
        ..Finding::default()
    }
}

fn per_test_report(findings: Vec<Finding>) -> Report {
    let mut r = crate::render::test_report(&["pytest"], serde_json::json!([]), findings);
    r.per_test = Some(crate::report::PerTestOut {
        checkpoints: 2,
        repeat: 1,
        tests: vec!["t.py::test_a".into(), "t.py::test_b".into()],
        ..Default::default()
    });
    r
}

#[test]
fn unknown_growth_is_explained_once() {
    let r = per_test_report(vec![
        leak_in(1, "t.py::test_a", "test", Some(Growth::Unknown)),
        leak_in(2, "t.py::test_b", "test", Some(Growth::Unknown)),
    ]);
    let text = render(&r, TextOptions::default());
    assert_eq!(text.matches("--repeat 2").count(), 1, "{text}");
    assert!(
        text.contains("(growth unknown for 2 leaks: --repeat 2 or more tells"),
        "{text}"
    );
    assert_eq!(text.matches("grew in:").count(), 2, "{text}");
}

#[test]
fn a_leak_at_exit_is_not_labelled_one_time() {
    let r = per_test_report(vec![leak_in(
        1,
        "(after the last checkpoint)",
        "exit",
        Some(Growth::Unknown),
    )]);
    let text = render(&r, TextOptions::default());
    assert!(!text.contains("one-time"), "{text}");
    assert!(!text.contains("grew once"), "{text}");
    // --repeat cannot tell the growth of what ran once: no hint.
    assert!(!text.contains("--repeat"), "{text}");
}

#[test]
fn the_summary_counts_bytes_and_findings_as_the_findings_say_them() {
    let leak = crate::render::test_leak;
    use crate::report::Kind::{DefinitelyLost, IndirectlyLost};
    let mut findings = vec![
        leak(DefinitelyLost, "tree", 3, 232, 56),
        leak(DefinitelyLost, "list", 9, 100, 100),
        leak(IndirectlyLost, "leaf", 4, 176, 176),
    ];
    crate::gate::mark(&crate::gate::Policy::default(), &mut findings);
    let r = crate::render::test_report(&["t"], serde_json::json!([]), findings);
    let text = render(&r, TextOptions::default());
    assert!(
        text.contains("1. Leak_DefinitelyLost — 232 bytes (56 direct, 176 indirect) in 1 block"),
        "{text}"
    );
    assert!(
        text.contains("     with it, indirectly lost: 176 bytes in 1 block at m.c:4 in make_tree"),
        "{text}"
    );
    // Two bugs to fix: the indirect blocks are the tree's.
    assert!(!text.contains("Leak_IndirectlyLost —"), "{text}");
    assert!(
        text.contains(
            "yours: 2 findings (332 bytes (156 direct, 176 indirect) definitely lost, 0 errors)"
        ),
        "{text}"
    );
    // The verdict phrase names the same two (this report's verdict is a
    // fixed pass: the gate's marks are what the phrase reads).
    assert!(text.contains(": 2 definitely-lost leaks\n"), "{text}");
    assert!(!text.contains("indirectly-lost"), "{text}");
}

/// A passing run with many not-gated findings is a few lines: counts by
/// kind and reason and where the details are, no card per finding;
/// `--verbose` shows them all.
#[test]
fn a_pass_counts_its_many_not_gated_findings() {
    let findings: Vec<Finding> = (0..PASS_CARDS as u32 + 5)
        .map(|i| {
            let mut f = leak_in(i + 1, "t.py::test_a", "test", None);
            f.kind = if i % 3 == 0 {
                crate::report::Kind::StillReachable
            } else {
                crate::report::Kind::PossiblyLost
            };
            f.gated = Some(false);
            f.fails = false;
            f.tests.clear();
            f
        })
        .collect();
    let n = findings.len();
    let mut r = crate::render::test_report(&["python", "t.py"], serde_json::json!([]), findings);
    r.verdict.status = Status::Pass;
    let text = render(&r, TextOptions::default());
    assert!(
        text.contains(&format!(
            "not gated: {n} findings in your code (details: --verbose, --format json or --html):"
        )),
        "{text}"
    );
    assert!(
        text.contains("  Leak_PossiblyLost: 10, 160 bytes (not in --fail-on)"),
        "{text}"
    );
    assert!(
        text.contains("  Leak_StillReachable: 5, 80 bytes (not in --fail-on)"),
        "{text}"
    );
    assert!(!text.contains("(reported, not gated)"), "{text}");
    assert!(text.lines().count() < 20, "{text}");
    let verbose = render(
        &r,
        TextOptions {
            verbose: true,
            ..TextOptions::default()
        },
    );
    assert_eq!(
        verbose.matches("(reported, not gated)").count(),
        n,
        "{verbose}"
    );
}
