//! Unit tests of the per-test tracker: deltas, block lag, growth, notes.

use super::notes::python_only_growth;
use super::*;
use crate::report::{BytesBlocks, Growth, TestShare};

#[test]
fn deltas() {
    assert_eq!(
        parse_delta("80 (+40) bytes in 2 (+1) blocks are definitely lost in loss record 5 of 10"),
        Some((40, 1))
    );
    assert_eq!(
        parse_delta(
            "1,048 (+1,024) (16 (+16) direct, 32 (+32) indirect) bytes in 3 (-1) blocks are still reachable in loss record 1 of 2"
        ),
        Some((1024, -1))
    );
    assert_eq!(
        parse_delta("16 bytes in 1 blocks are definitely lost in loss record 1 of 1"),
        None
    );
    assert_eq!(
        parse_delta("48 (16 direct, 32 indirect) bytes in 1 blocks are definitely lost"),
        None
    );
}

fn finding(kind: &str, bytes: u64, blocks: u64) -> Finding {
    serde_json::from_value(serde_json::json!({
        "fingerprint": "f", "kind": kind, "category": "user", "source": null,
        "message": "", "bytes": bytes, "direct_bytes": bytes, "blocks": blocks,
        "count": 1, "location": null, "source_line": null, "stack": [],
        "origin": null, "pids": [], "records": 1, "aux": []
    }))
    .unwrap()
}

fn marker(label: &str, rep: u32) -> String {
    format!(
        "leakgate-checkpoint {{\"v\":1,\"kind\":\"test\",\"label\":\"{label}\",\"rep\":{rep},\"of\":2}}"
    )
}

fn rec(msgs: u32, key: u64, lost: bool, dbytes: i64, dblocks: i64) -> SnapRec {
    SnapRec {
        process: 0,
        msgs,
        key: (key, Some(1)),
        site: 7,
        lost,
        dbytes,
        dblocks,
    }
}

/// [`resolve`] for one complete process (pid 1) with one finding, `f`,
/// keyed `key`.
fn resolve_one(
    msgs: &[String],
    snaps: &[SnapRec],
    finals: &[SnapRec],
    key: u64,
    f: &mut Finding,
) -> Option<PerTestOut> {
    let key = (key, Some(1));
    resolve(
        &mut [(&key, f)],
        &Inputs {
            messages: &[msgs],
            pids: &[Some(1)],
            complete: &[true],
            snaps,
            finals,
            errors: &[],
            hidden_reachable: 0,
        },
    )
}

#[test]
fn a_block_lost_later_belongs_to_the_test_that_allocated_it() {
    // Test a (2 repetitions) allocates a block per run at site 7: still
    // reachable at its checkpoints (a stale pointer); the first is lost
    // at test b's checkpoint, the second only at exit.
    let msgs = vec![
        marker("a", 1),
        marker("a", 2),
        marker("b", 1),
        marker("b", 2),
    ];
    let (reach, lost) = (1u64, 2u64);
    let snaps = vec![
        rec(1, reach, false, 16, 1),
        rec(2, reach, false, 16, 1),
        rec(3, lost, true, 16, 1),
        rec(3, reach, false, -16, -1),
    ];
    // At exit: 2 blocks lost, none reachable.
    let finals = vec![rec(0, lost, true, 32, 2)];
    let mut fl = finding("Leak_DefinitelyLost", 32, 2);
    let out = resolve_one(&msgs, &snaps, &finals, lost, &mut fl).unwrap();
    assert_eq!(out.checkpoints, 4);
    assert_eq!(out.repeat, 2);
    let t: Vec<(&str, u64, u64)> = fl
        .tests
        .iter()
        .map(|t| (t.test.as_str(), t.bytes, t.blocks))
        .collect();
    assert_eq!(t, [("a", 32, 2)]);
    assert_eq!(
        fl.tests[0].repetitions,
        [
            BytesBlocks {
                bytes: 16,
                blocks: 1
            },
            BytesBlocks {
                bytes: 16,
                blocks: 1
            }
        ]
    );
    assert_eq!(fl.growth, Some(Growth::PerCall));
}

#[test]
fn a_leak_seen_only_at_exit_is_not_called_one_time() {
    // Test a ran twice and grew nothing; the block is lost at exit only:
    // nothing measured its growth.
    let msgs = vec![marker("a", 1), marker("a", 2)];
    let finals = vec![rec(0, 2, true, 16, 1)];
    let mut fl = finding("Leak_DefinitelyLost", 16, 1);
    fl.pids = vec![1];
    resolve_one(&msgs, &[], &finals, 2, &mut fl).unwrap();
    assert!(!fl.tests.is_empty(), "{:?}", fl.tests);
    assert!(fl.tests.iter().all(|t| t.kind != "test"), "{:?}", fl.tests);
    assert!(
        fl.tests.iter().all(|t| t.growth != Some(Growth::OneTime)),
        "{:?}",
        fl.tests
    );
    assert_eq!(fl.growth, Some(Growth::Unknown));
}

#[test]
fn markers() {
    let m = parse_marker(
        "leakgate-checkpoint {\"v\":1,\"kind\":\"test\",\"label\":\"t.py::a[\\u003c1\\u003e]\",\"rep\":2,\"of\":3}\n",
    )
    .unwrap();
    assert_eq!(m.kind, "test");
    assert_eq!(m.label, "t.py::a[<1>]");
    assert_eq!((m.rep, m.of), (Some(2), Some(3)));
    assert_eq!(m.freelists, None);
    assert!(parse_marker("hello").is_none());
    let m = parse_marker(
        "leakgate-checkpoint {\"v\":1,\"kind\":\"start\",\"label\":\"collection\",\"freelists\":\"off\"}",
    )
    .unwrap();
    assert_eq!(m.freelists.as_deref(), Some("off"));
}

/// A finding that grew by `per_rep` blocks of 56 bytes at each of two
/// repetitions of `test`.
fn grew(kind: &str, source: Option<&str>, test: &str, per_rep: u64) -> Finding {
    let mut f = finding(kind, 112 * per_rep, 2 * per_rep);
    if let Some(s) = source {
        f.category = crate::report::Category::Noise;
        f.source = Some(s.into());
    }
    let r = BytesBlocks {
        bytes: 56 * per_rep,
        blocks: per_rep,
    };
    f.tests = vec![TestShare {
        test: test.into(),
        kind: "test".into(),
        bytes: 112 * per_rep,
        blocks: 2 * per_rep,
        repetitions: vec![r.clone(), r],
        growth: Some(Growth::PerCall),
        errors: 0,
    }];
    f
}

#[test]
fn recycled_note_counts_lost_python_blocks_from_free_list_allocators() {
    let frame = |f: &str| crate::report::FrameOut {
        function: Some(f.into()),
        object: None,
        file: None,
        path: None,
        line: None,
        ip: None,
        user: false,
        generated: None,
    };
    let mut tuple = grew("Leak_DefinitelyLost", Some("python"), "t", 1);
    tuple.stack = vec![frame("malloc"), frame("gc_alloc"), frame("PyTuple_New")];
    let mut resized = grew("Leak_DefinitelyLost", Some("python"), "t", 1);
    resized.stack = vec![
        frame("realloc"),
        frame("_PyObject_GC_Resize"),
        frame("_PyTuple_Resize"),
    ];
    let mut other = grew("Leak_DefinitelyLost", Some("python"), "t", 1);
    other.stack = vec![frame("malloc"), frame("PyUnicode_New"), frame("PyList_New")];
    let mut reachable = tuple.clone();
    reachable.kind = "Leak_StillReachable".into();
    let note = recycled_note(&[tuple, resized, other, reachable]).unwrap();
    assert!(
        note.starts_with("4 lost blocks (224 bytes) in `python` noise were made as tuples"),
        "{note}"
    );
    assert_eq!(recycled_note(&[]), None);
}

#[test]
fn python_only_growth_is_noted_once_per_test() {
    let fs = [
        // t1: only the interpreter's blocks grow, in two findings.
        grew("Leak_DefinitelyLost", Some("python"), "t1", 1),
        grew("Leak_IndirectlyLost", Some("python"), "t1", 2),
        // t2: python noise grows, but so does a leak of yours.
        grew("Leak_DefinitelyLost", Some("python"), "t2", 1),
        grew("Leak_PossiblyLost", None, "t2", 1),
        // t3: reachable python noise (pytest's own bookkeeping) and
        // another library's lost blocks: not notes.
        grew("Leak_StillReachable", Some("python"), "t3", 1),
        grew("Leak_DefinitelyLost", Some("system"), "t3", 1),
    ];
    let notes = python_only_growth(fs.iter());
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].starts_with(
            "t1: 168 bytes in 3 blocks lost at every call, all allocated by the interpreter (`python` noise, 2 findings)"
        ),
        "{}",
        notes[0]
    );
    // Growth seen once only (no --repeat) is not a note.
    let mut once = grew("Leak_DefinitelyLost", Some("python"), "t4", 1);
    once.tests[0].growth = Some(Growth::Unknown);
    assert!(python_only_growth([once].iter()).is_empty());
}

#[test]
fn hostile_deltas_saturate_instead_of_panicking_or_wrapping() {
    // Counts beyond i64 in a delta: saturate (a debug build used to
    // panic on the negation, a release build wrapped).
    assert_eq!(
        parse_delta(
            "1 (-9223372036854775808) bytes in 1 (-9223372036854775808) blocks are still reachable in loss record 1 of 1"
        ),
        Some((-i64::MAX, -i64::MAX))
    );
    assert_eq!(
        parse_delta("1 (+18446744073709551615) bytes in 1 (+1) blocks are definitely lost"),
        Some((i64::MAX, 1))
    );
    let msgs = vec![marker("a", 1), marker("a", 2), marker("b", 1)];
    let (reach, lost) = (1u64, 2u64);
    let snaps = vec![
        rec(1, reach, false, i64::MAX, i64::MAX),
        rec(2, reach, false, i64::MAX, i64::MAX),
        rec(3, lost, true, i64::MAX, i64::MAX),
        rec(3, reach, false, i64::MIN, i64::MIN),
        rec(3, lost, true, i64::MIN, -1),
    ];
    let finals = vec![rec(0, lost, true, i64::MAX, i64::MAX)];
    let mut fl = finding("Leak_DefinitelyLost", u64::MAX, u64::MAX);
    let out = resolve_one(&msgs, &snaps, &finals, lost, &mut fl);
    assert!(out.is_some());
    // Every share saturated instead of wrapping to a small or negative number.
    assert!(!fl.tests.is_empty());
}

#[test]
fn xdist_workers_are_ordered_like_a_serial_run() {
    // Two pytest-xdist workers, each with its start and finish, ran the
    // collected tests 0..4 interleaved; a plain checkpoint() in test 2
    // stays with it.
    let mk = |kind: &str, label: &str, index: Option<u64>| {
        let idx = index.map(|i| format!(",\"index\":{i}")).unwrap_or_default();
        format!("leakgate-checkpoint {{\"v\":1,\"kind\":\"{kind}\",\"label\":\"{label}\"{idx}}}")
    };
    let w0 = vec![
        mk("start", "collection", None),
        mk("test", "t1", Some(1)),
        mk("test", "t2", Some(2)),
        mk("finish", "session finish", None),
    ];
    let w1 = vec![
        mk("start", "collection", None),
        mk("test", "t0", Some(0)),
        mk("checkpoint", "inside t3", None),
        mk("test", "t3", Some(3)),
        mk("finish", "session finish", None),
    ];
    let labels = |tl: &Timeline| -> Vec<String> {
        tl.order
            .iter()
            .map(|c| tl.markers[c].label.clone())
            .collect()
    };
    let msgs: Vec<&[String]> = vec![&w0, &w1];
    let tl = Timeline::read(&msgs, &[Some(10), Some(11)]);
    assert_eq!(
        labels(&tl),
        [
            "collection",
            "collection",
            "t0",
            "t1",
            "t2",
            "inside t3",
            "t3",
            "session finish",
            "session finish"
        ]
    );
    // One process: file order, whatever the indices say.
    let one: Vec<&[String]> = vec![&w1];
    let tl = Timeline::read(&one, &[Some(11)]);
    assert_eq!(
        labels(&tl),
        ["collection", "t0", "inside t3", "t3", "session finish"]
    );
}

/// A loss record whose bytes grow after the last checkpoint without a new
/// block (a lost block's indirect part grew) adds those bytes to the test
/// that lost it: no "(after the last checkpoint)" entry with 0 blocks.
#[test]
fn bytes_grown_at_exit_without_a_block_belong_to_the_test_that_lost_it() {
    let msgs = vec![
        "leakgate-checkpoint {\"v\":1,\"kind\":\"test\",\"label\":\"a\",\"rep\":1,\"of\":1}"
            .to_string(),
        "leakgate-checkpoint {\"v\":1,\"kind\":\"test\",\"label\":\"b\",\"rep\":1,\"of\":1}"
            .to_string(),
    ];
    let lost = 2u64;
    let snaps = vec![rec(1, lost, true, 16, 1)];
    let finals = vec![rec(0, lost, true, 24, 1)];
    let mut fl = finding("Leak_DefinitelyLost", 24, 1);
    resolve_one(&msgs, &snaps, &finals, lost, &mut fl).unwrap();
    let t: Vec<(&str, u64, u64)> = fl
        .tests
        .iter()
        .map(|t| (t.test.as_str(), t.bytes, t.blocks))
        .collect();
    assert_eq!(t, [("a", 24, 1)]);
}
