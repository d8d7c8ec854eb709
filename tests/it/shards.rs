//! `leakgate run --shard K/N` on the per-test suite of `tests/it/per_test.rs`
//! (`tests/programs/pytest/`): the whole suite once (its report records each
//! test's seconds, `per_test.durations`), then as 2 shards balanced by those
//! durations, merged in the wrong order with `leakgate merge`: the same
//! tests, user findings (with their tests and growth), verdict and JUnit
//! testcases as the unsharded run, under Valgrind and under `--engine lsan`.
//! A merge that misses a shard is incomplete; a target that is not pytest
//! is refused.

use crate::common;
use crate::per_test::{junit_cases, leakgate_json, live_suite, pytest_cmd, user_view};

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn tests_of(r: &Value) -> Vec<String> {
    r["per_test"]["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("no per_test.tests: {r:#}"))
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

fn merge(dir: &Path, out: &str, junit: &str, reports: &[&str]) -> (i32, Value) {
    let o = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .args(["merge", "--format", "json", "-o", out, "--junit", junit])
        .args(reports)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&std::fs::read(dir.join(out)).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {}", common::show(&o)));
    (common::code(&o), r)
}

/// The unsharded run, then `--shard 1/2` and `--shard 2/2` balanced by its
/// durations, merged: the unsharded run's results.
fn shards_merge_to_the_whole(engine: &[&str]) {
    let Some((py, _tmp, dir)) = live_suite() else {
        return;
    };
    let pyv = py.to_str().unwrap();
    let pytest = pytest_cmd(pyv, &["test_suite.py", "test_grow.py"]);
    let with = |extra: &[&str]| -> Vec<String> {
        engine.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let args = with(&["--junit", "junit.xml"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, whole, stderr) = leakgate_json(&dir, &args, &pytest);
    assert_eq!(code, 1, "{stderr}\n{:#}", whole["verdict"]);
    std::fs::copy(dir.join("leakgate-report.json"), dir.join("whole.json")).unwrap();
    let all = tests_of(&whole);
    assert_eq!(all.len(), 7, "{all:?}");
    let durations = whole["per_test"]["durations"]
        .as_object()
        .unwrap_or_else(|| panic!("no per_test.durations: {:#}", whole["per_test"]));
    for t in &all {
        let s = durations.get(t).and_then(Value::as_f64);
        assert!(s.is_some_and(|s| s > 0.0), "{t}: {durations:?}");
    }
    assert!(whole["shard"].is_null());

    let mut parts = Vec::new();
    for k in ["1/2", "2/2"] {
        let junit = format!("junit-{}.xml", &k[..1]);
        let args = with(&[
            "--shard",
            k,
            "--shard-durations",
            "whole.json",
            "--junit",
            &junit,
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, r, stderr) = leakgate_json(&dir, &args, &pytest);
        assert!(code == 0 || code == 1, "{k}: {code}\n{stderr}");
        let env = r["environment"].to_string();
        assert!(
            env.contains(&format!("LEAKGATE_SHARD={k} (set by leakgate"))
                && env.contains("balanced by the durations of 7 tests in whole.json"),
            "{env}"
        );
        assert_eq!(r["shard"]["index"].as_u64(), k[..1].parse().ok(), "{r:#}");
        assert_eq!(r["shard"]["count"], 2);
        assert_eq!(r["shard"]["durations_from"], "whole.json");
        let name = format!("shard-{}.json", &k[..1]);
        std::fs::copy(dir.join("leakgate-report.json"), dir.join(&name)).unwrap();
        parts.push(tests_of(&r));
    }
    // Two non-empty contiguous parts of the collected session.
    assert!(!parts[0].is_empty() && !parts[1].is_empty(), "{parts:?}");
    assert_eq!([parts[0].clone(), parts[1].clone()].concat(), all);

    // Merged in the wrong order: the unsharded run's results.
    let (code, merged) = merge(
        &dir,
        "merged.json",
        "junit-merged.xml",
        &["shard-2.json", "shard-1.json"],
    );
    assert_eq!(code, 1, "{:#}", merged["verdict"]);
    assert_eq!(tests_of(&merged), all);
    assert_eq!(user_view(&merged), user_view(&whole));
    assert_eq!(merged["verdict"], whole["verdict"]);
    assert_eq!(
        junit_cases(&dir, "junit-merged.xml"),
        junit_cases(&dir, "junit.xml")
    );
    assert!(merged["shard"].is_null());

    // One shard alone is not the suite: the merge is incomplete.
    let (code, part) = merge(
        &dir,
        "part.json",
        "junit-part.xml",
        &["--fail-on", "none", "shard-1.json"],
    );
    assert_eq!(code, 3, "{:#}", part["verdict"]);
    assert!(
        part["verdict"]["reasons"]
            .to_string()
            .contains("shard 2/2 is missing"),
        "{:#}",
        part["verdict"]
    );
}

#[test]
fn valgrind_shards_merge_to_the_whole_run() {
    shards_merge_to_the_whole(&[]);
}

#[test]
fn lsan_shards_merge_to_the_whole_run() {
    if !crate::engines::liblsan() {
        return;
    }
    shards_merge_to_the_whole(&["--engine", "lsan"]);
}

/// `--shard` needs a pytest run with leakgate's plugin: refused with exit 2
/// and one line before anything runs; a shard outside 1..=N is a usage error.
#[test]
fn shard_is_refused_without_pytest() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    for (args, what) in [
        (
            &["--shard", "1/2", "--", "true"][..],
            "the target is not pytest",
        ),
        (
            &[
                "--shard",
                "1/2",
                "--no-per-test",
                "--",
                "python3",
                "-m",
                "pytest",
            ][..],
            "--no-per-test leaves the plugin out",
        ),
        (&["--shard", "3/2", "--", "true"][..], "1 <= K <= N"),
    ] {
        let out = Command::new(common::leakgate_bin())
            .current_dir(tmp.path())
            .arg("run")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(common::code(&out), 2, "{args:?}: {}", common::show(&out));
        let err = common::stderr(&out);
        assert!(err.contains(what), "{args:?}: {err}");
        if what != "1 <= K <= N" {
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
    }
}
