//! Unit tests of the gate: precedence of exit codes, marks, notes.

use super::policy::FailOn;
use super::*;
use crate::kind::Kind;
use crate::model::ExitStatus;
use crate::report::{Category, Finding, Report};

#[test]
fn gated_kinds() {
    let gated = |s: &str| Kind::parse(s).gated_by_default();
    assert!(gated("Leak_DefinitelyLost"));
    assert!(gated("Leak_IndirectlyLost"));
    assert!(!gated("Leak_PossiblyLost"));
    assert!(!gated("Leak_StillReachable"));
    assert!(gated("InvalidRead"));
    assert!(gated("SomeFutureKind"));
}

#[test]
fn precedence() {
    let p = Policy::default();
    let v = verdict(&p, &[], &[], Some(&ExitStatus::Code(3)), &["no XML".into()]);
    assert_eq!(v.exit_code, crate::exit::INCOMPLETE);
    let v = verdict(&p, &[], &[], Some(&ExitStatus::Code(3)), &[]);
    assert_eq!(v.exit_code, crate::exit::TARGET);
    let q = Policy {
        fail_on_target_exit: false,
        ..Policy::default()
    };
    let v = verdict(&q, &[], &[], Some(&ExitStatus::Code(3)), &[]);
    assert_eq!(v.exit_code, crate::exit::PASS);
}

/// A finding whose stack is `malloc` in Valgrind's preload, then one
/// frame in each of `objects`.
fn noise(kind: &str, source: &str, records: u64, objects: &[&str]) -> Finding {
    let frame = |function: &str, object: &str| crate::report::FrameOut {
        function: Some(function.into()),
        object: Some(object.into()),
        file: None,
        path: None,
        line: None,
        ip: None,
        user: false,
        generated: None,
    };
    let mut stack = vec![frame(
        "malloc",
        "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
    )];
    stack.extend(objects.iter().map(|o| frame("f", o)));
    Finding {
        kind: kind.into(),
        category: if source == "user" {
            Category::User
        } else {
            Category::Noise
        },
        source: (source != "user").then(|| source.into()),
        count: 1,
        stack,
        pids: vec![1],
        records,
        ..Finding::default()
    }
}

const LIBPY: &str = "/opt/py/lib/libpython3.11.so.1.0";
const EXT: &str = "/w/.venv/lib/python3.11/site-packages/spam.cpython-311-x86_64-linux-gnu.so";

#[test]
fn site_packages_hint_names_the_objects_and_the_flag() {
    let p = Policy::default();
    let findings = vec![
        noise(
            "Leak_DefinitelyLost",
            "third_party",
            2,
            &[LIBPY, EXT, LIBPY],
        ),
        noise("InvalidRead", "third_party", 1, &[EXT]),
        noise(
            "Leak_IndirectlyLost",
            "third_party",
            1,
            &["/usr/lib/python3/dist-packages/ham/core/_hamcore.so"],
        ),
        // not gated kinds, other noise, other third-party places: no hint
        noise(
            "Leak_PossiblyLost",
            "third_party",
            5,
            &["/v/site-packages/poss.so"],
        ),
        noise("Leak_DefinitelyLost", "python", 7, &[LIBPY]),
        noise(
            "Leak_DefinitelyLost",
            "third_party",
            9,
            &["/src/third_party/lib.so"],
        ),
    ];
    let notes = notes(&p, &findings, &[], &[]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let n = &notes[0];
    assert!(!n.contains('\n'), "{n}");
    assert!(
        n.starts_with("not gated: 4 records of a gated kind in objects under site-packages"),
        "{n}"
    );
    assert!(
        n.contains("_hamcore.so (1), spam.cpython-311-x86_64-linux-gnu.so (3)"),
        "{n}"
    );
    assert!(
        n.ends_with("--user-object 'spam.cpython-311-x86_64-linux-gnu.so'"),
        "{n}"
    );
    assert!(!n.contains("poss.so") && !n.contains("lib.so"), "{n}");
}

#[test]
fn site_packages_hint_only_where_its_advice_can_be_right() {
    let p = Policy::default();
    let at = |obj: &str, path: Option<&str>| {
        let mut f = noise("Leak_DefinitelyLost", "third_party", 1, &[obj]);
        f.location = Some(crate::report::Location {
            function: Some("f".into()),
            file: path.map(|p| p.rsplit('/').next().unwrap().into()),
            path: path.map(Into::into),
            line: path.map(|_| 567),
            object: Some(obj.into()),
            generated: None,
        });
        f
    };
    assert!(site_packages_hint(&p, &[at(EXT, None)]).is_some());
    // pybind11's own block in the user's extension: its header decided.
    let pybind11 = at(
        EXT,
        Some("/w/.venv/lib/python3.11/site-packages/pybind11/include/pybind11/detail/class.h"),
    );
    assert_eq!(site_packages_hint(&p, &[pybind11]), None);
    // The run recognised the object as the user's: a frame of it, in
    // another finding (an ungated one here), resolved under a root.
    let mut mine = noise("Leak_PossiblyLost", "user", 1, &[EXT]);
    mine.stack[1].user = true;
    assert_eq!(site_packages_hint(&p, &[at(EXT, None), mine]), None);
    // A well-known package's object (NumPy's import-time blocks).
    let numpy = "/w/.venv/lib/python3.11/site-packages/numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so";
    assert_eq!(site_packages_hint(&p, &[at(numpy, None)]), None);
    let n = site_packages_hint(&p, &[at(numpy, None), at(EXT, None)]).unwrap();
    assert!(!n.contains("_multiarray_umath"), "{n}");
}

#[test]
fn site_packages_hint_only_when_nothing_is_gated() {
    let p = Policy::default();
    let mut findings = vec![noise("Leak_DefinitelyLost", "third_party", 1, &[EXT])];
    mark(&p, &mut findings);
    assert!(site_packages_hint(&p, &findings).is_some());
    findings.push(noise("InvalidWrite", "user", 1, &["/w/spam.so"]));
    mark(&p, &mut findings);
    assert_eq!(site_packages_hint(&p, &findings), None);
    // --fail-on none: nothing of a gated kind
    let none = Policy {
        fail_on: FailOn::parse("none").unwrap(),
        ..Policy::default()
    };
    let findings = vec![noise("Leak_DefinitelyLost", "third_party", 1, &[EXT])];
    assert_eq!(site_packages_hint(&none, &findings), None);
    // the deciding frame (location) names the object when known
    let at = |obj: &str| {
        let mut f = noise("Leak_DefinitelyLost", "third_party", 1, &[EXT]);
        f.location = Some(crate::report::Location {
            function: Some("f".into()),
            file: None,
            path: None,
            line: None,
            object: Some(obj.into()),
            generated: None,
        });
        f
    };
    let n = site_packages_hint(&p, &[at("/v/site-packages/other.so")]).unwrap();
    assert!(n.contains(": other.so (1);"), "{n}");
    assert_eq!(site_packages_hint(&p, &[at("/w/build/mine.so")]), None);
    // more objects than named
    let objs: Vec<String> = (0..5)
        .map(|i| format!("/v/site-packages/m{i}.so"))
        .collect();
    let findings: Vec<Finding> = objs
        .iter()
        .map(|o| noise("Leak_DefinitelyLost", "third_party", 1, &[o.as_str()]))
        .collect();
    let n = site_packages_hint(&p, &findings).unwrap();
    assert!(
        n.contains("m0.so (1), m1.so (1), m2.so (1), and 2 more"),
        "{n}"
    );
}

fn user(kind: &str, direct: u64) -> Finding {
    Finding {
        kind: kind.into(),
        category: Category::User,
        direct_bytes: Kind::parse(kind).is_leak().then_some(direct),
        bytes: Kind::parse(kind).is_leak().then_some(direct),
        count: 1,
        records: 1,
        ..Finding::default()
    }
}

#[test]
fn mark_decides_gated_and_fails_once_for_every_reader() {
    let mut fs = vec![
        user("Leak_DefinitelyLost", 40),
        user("Leak_PossiblyLost", 8),
        user("InvalidRead", 0),
    ];
    // Default policy: possibly lost is reported, not gated.
    mark(&Policy::default(), &mut fs);
    let marks: Vec<(bool, bool)> = fs.iter().map(|f| (f.is_gated(), f.fails)).collect();
    assert_eq!(marks, [(true, true), (false, false), (true, true)]);
    // --fail-on all --max-leaked-bytes 100: the leaks are gated but within
    // the budget (48 bytes), the error still fails.
    let p = Policy {
        fail_on: FailOn::parse("all").unwrap(),
        max_leaked_bytes: Some(100),
        ..Policy::default()
    };
    mark(&p, &mut fs);
    let marks: Vec<(bool, bool)> = fs.iter().map(|f| (f.is_gated(), f.fails)).collect();
    assert_eq!(marks, [(true, false), (true, false), (true, true)]);
    let v = verdict(&p, &fs, &[], None, &[]);
    assert_eq!(v.exit_code, crate::exit::FAIL);
    assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
    assert!(v.reasons[0].contains("gated error"), "{:?}", v.reasons);
    // Over the budget: every gated leak fails.
    let p = Policy {
        max_leaked_bytes: Some(47),
        ..p
    };
    mark(&p, &mut fs);
    assert!(fs.iter().all(|f| f.fails));
    // Known from the baseline: reported, not gated.
    fs[0].baseline = Some(crate::report::BaselineState::Known);
    mark(&Policy::default(), &mut fs);
    assert!(!fs[0].is_gated() && !fs[0].fails);
}

#[test]
fn a_saved_report_gets_its_marks_back() {
    let mut fs = vec![
        user("Leak_DefinitelyLost", 40),
        user("Leak_PossiblyLost", 8),
    ];
    let p = Policy {
        fail_on: FailOn::parse("all").unwrap(),
        max_leaked_bytes: Some(100),
        ..Policy::default()
    };
    mark(&p, &mut fs);
    let report_json = serde_json::json!({
        "schema_version": 1,
        "tool": {"name": "leakgate", "version": "0"},
        "valgrind": {"version": null, "protocol": null},
        "mode": "analyze", "command": [], "environment": [], "target_exit": null,
        "processes": [], "findings": fs, "notes": [], "src_roots": [],
        "summary": serde_json::to_value(crate::report::Summary::default()).unwrap(),
        "verdict": {"status": "pass", "exit_code": 0, "reasons": []},
        "policy": p.describe(),
    });
    let mut r: Report = serde_json::from_value(report_json).unwrap();
    assert!(
        r.findings.iter().all(|f| !f.fails),
        "fails is not in the JSON"
    );
    restore(&mut r);
    let marks: Vec<(bool, bool)> = r.findings.iter().map(|f| (f.is_gated(), f.fails)).collect();
    assert_eq!(marks, [(true, false), (true, false)]);
    // A report from before policies: the default policy's marks.
    for f in &mut r.findings {
        f.gated = None;
    }
    r.policy = None;
    restore(&mut r);
    let marks: Vec<(bool, bool)> = r.findings.iter().map(|f| (f.is_gated(), f.fails)).collect();
    assert_eq!(marks, [(true, true), (false, false)]);
}

#[test]
fn leaks_made_at_import_are_gated_only_with_import() {
    let leak = |at_import: bool| Finding {
        at_import,
        bytes: Some(16),
        direct_bytes: Some(16),
        ..noise("Leak_DefinitelyLost", "user", 1, &[])
    };
    let mut findings = vec![leak(true), leak(false)];
    let p = Policy::default();
    mark(&p, &mut findings);
    assert_eq!(
        findings.iter().map(|f| f.fails).collect::<Vec<_>>(),
        [false, true]
    );
    let mut only_import = vec![leak(true)];
    mark(&p, &mut only_import);
    let v = verdict(&p, &only_import, &[], Some(&ExitStatus::Code(0)), &[]);
    assert_eq!(v.exit_code, crate::exit::PASS);
    let n = notes(&p, &only_import, &[], &[]);
    assert!(
        n.iter()
            .any(|l| l.contains("made once at import") && l.contains("16 bytes")),
        "{n:?}"
    );
    let q = Policy {
        fail_on: FailOn::parse("definite,import").unwrap(),
        ..Policy::default()
    };
    mark(&q, &mut only_import);
    assert!(only_import[0].fails);
    assert!(notes(&q, &only_import, &[], &[]).is_empty());
    // `all` includes it.
    assert!(FailOn::parse("all").unwrap().import);
}

/// A user leak of `kind` in pid 7: `bytes` of which `direct`, at a line of
/// `function`.
fn leak_in(kind: &str, fp: &str, function: &str, bytes: u64, direct: u64) -> Finding {
    Finding {
        fingerprint: fp.into(),
        bytes: Some(bytes),
        direct_bytes: Some(direct),
        blocks: Some(1),
        pids: vec![7],
        location: Some(crate::report::Location {
            function: Some(function.into()),
            file: Some("m.c".into()),
            path: None,
            line: Some(1),
            object: None,
            generated: None,
        }),
        ..user(kind, direct)
    }
}

#[test]
fn an_indirect_leak_a_gated_definite_leak_owns_is_not_gated_again() {
    // Two bugs: a tree (16 direct + 32 indirect) and a list (40 + 136):
    // four records, two findings to fix.
    let mut fs = vec![
        leak_in("Leak_DefinitelyLost", "tree", "make_tree", 48, 16),
        leak_in("Leak_DefinitelyLost", "list", "make_list", 176, 40),
        leak_in("Leak_IndirectlyLost", "leaf", "make_tree", 32, 32),
        leak_in("Leak_IndirectlyLost", "node", "make_list", 136, 136),
    ];
    let p = Policy::default();
    mark(&p, &mut fs);
    let marks: Vec<(bool, bool)> = fs.iter().map(|f| (f.is_gated(), f.fails)).collect();
    assert_eq!(
        marks,
        [(true, true), (true, true), (false, false), (false, false)]
    );
    assert_eq!(fs[2].indirect_of.as_deref(), Some("tree"));
    assert_eq!(fs[3].indirect_of.as_deref(), Some("list"));
    assert_eq!(fs[0].indirect_parts.len(), 1);
    assert_eq!(fs[0].indirect_parts[0].fingerprint, "leaf");
    assert_eq!(fs.iter().filter(|f| f.is_user_shown()).count(), 2);
    let v = verdict(&p, &fs, &[], Some(&ExitStatus::Code(0)), &[]);
    assert!(
        v.reasons[0].contains("2 gated findings in your code (2 Leak_DefinitelyLost)"),
        "{:?}",
        v.reasons
    );
    // --max-leaked-bytes counts what the findings show: 48 + 176, once.
    assert_eq!(gated_leaked_bytes(&fs), 224);
    let q = Policy {
        max_leaked_bytes: Some(224),
        ..Policy::default()
    };
    mark(&q, &mut fs);
    assert!(fs.iter().all(|f| !f.fails));
    let q = Policy {
        max_leaked_bytes: Some(223),
        ..Policy::default()
    };
    mark(&q, &mut fs);
    assert!(fs[0].fails && fs[1].fails && !fs[2].fails);
}

#[test]
fn an_indirect_leak_without_a_gated_owner_still_fails() {
    let tree = || {
        vec![
            leak_in("Leak_DefinitelyLost", "tree", "make_tree", 48, 16),
            leak_in("Leak_IndirectlyLost", "leaf", "make_tree", 32, 32),
        ]
    };
    // The owner is known from the baseline: the indirect leak is new.
    let mut fs = tree();
    fs[0].baseline = Some(crate::report::BaselineState::Known);
    mark(&Policy::default(), &mut fs);
    assert!(fs[1].fails && fs[1].indirect_of.is_none());
    // --fail-on indirect: the owner is not gated.
    let mut fs = tree();
    let p = Policy {
        fail_on: FailOn::parse("indirect").unwrap(),
        ..Policy::default()
    };
    mark(&p, &mut fs);
    assert_eq!((fs[0].fails, fs[1].fails), (false, true));
    // The owner is noise: nothing of the user's owns the block.
    let mut fs = tree();
    fs[0].category = Category::Noise;
    mark(&Policy::default(), &mut fs);
    assert!(fs[1].fails && fs[1].indirect_of.is_none());
    // More indirect bytes than the owner holds: not its own.
    let mut fs = tree();
    fs[1].bytes = Some(40);
    mark(&Policy::default(), &mut fs);
    assert!(fs[1].fails && fs[1].indirect_of.is_none());
    // Another process's definite leak does not own it.
    let mut fs = tree();
    fs[1].pids = vec![8];
    mark(&Policy::default(), &mut fs);
    assert!(fs[1].fails && fs[1].indirect_of.is_none());
    // Gated again (a saved report): the marks are set afresh.
    let mut fs = tree();
    mark(&Policy::default(), &mut fs);
    assert!(fs[1].indirect_of.is_some());
    let p = Policy {
        fail_on: FailOn::parse("indirect").unwrap(),
        ..Policy::default()
    };
    mark(&p, &mut fs);
    assert!(fs[1].fails && fs[1].indirect_of.is_none() && fs[0].indirect_parts.is_empty());
}

#[test]
fn owners_that_share_the_indirect_leaks_function_are_tried_first() {
    let mut fs = vec![
        leak_in("Leak_DefinitelyLost", "a", "make_a", 48, 16),
        leak_in("Leak_DefinitelyLost", "b", "make_b", 48, 16),
        leak_in("Leak_IndirectlyLost", "b_leaf", "make_b", 32, 32),
        leak_in("Leak_IndirectlyLost", "a_leaf", "make_a", 32, 32),
    ];
    mark(&Policy::default(), &mut fs);
    assert_eq!(fs[2].indirect_of.as_deref(), Some("b"));
    assert_eq!(fs[3].indirect_of.as_deref(), Some("a"));
}
