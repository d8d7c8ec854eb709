//! Integration tests: C/C++ programs built from `tests/programs/` run under
//! real Valgrind through `leakgate run`, checked finding by finding against
//! the markers in their sources.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `leakgate run --format json ARGS -- CMD` in `dir`; returns (exit code, report).
fn run_json(dir: &Path, extra: &[&str], cmd: &[&str]) -> (i32, Value) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .arg("run")
        .args(["--format", "json", "--output"])
        .arg(&json)
        .args(extra)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let code = out.status.code().expect("exit code");
    let bytes = std::fs::read(&json).unwrap_or_default();
    let report: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, report)
}

fn user_findings(r: &Value) -> Vec<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect()
}

/// The user finding of `kind` at `line`, exactly one.
fn find<'a>(r: &'a Value, kind: &str, line: u32) -> &'a Value {
    let hits: Vec<&Value> = user_findings(r)
        .into_iter()
        .filter(|f| f["kind"] == kind && f["location"]["line"] == line)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one {kind} at line {line}; user findings: {:#?}",
        user_findings(r)
            .iter()
            .map(|f| (f["kind"].clone(), f["location"].clone()))
            .collect::<Vec<_>>()
    );
    hits[0]
}

#[test]
fn every_leak_kind_is_found_at_its_line() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let src = tmp.path().join("leak_kinds.c");
    let line = |m| common::marker_line(&src, m);
    let (code, r) = run_json(
        tmp.path(),
        &["--show-leak-kinds", "all"],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1, "definite leaks fail the gate");
    common::assert_conserved(&r);
    let f = find(&r, "Leak_DefinitelyLost", line("@definite"));
    assert_eq!(f["bytes"], 64);
    assert_eq!(f["blocks"], 1);
    assert_eq!(f["location"]["function"], "leak_definite");
    assert!(
        f["source_line"].as_str().unwrap().contains("@definite"),
        "source line shown"
    );
    let f = find(&r, "Leak_DefinitelyLost", line("@indirect_outer"));
    assert_eq!(f["bytes"], 48, "leakedbytes is direct + indirect");
    let f = find(&r, "Leak_IndirectlyLost", line("@indirect_inner"));
    assert_eq!(f["bytes"], 32);
    let f = find(&r, "Leak_PossiblyLost", line("@possible"));
    assert_eq!(f["bytes"], 48);
    let f = find(&r, "Leak_StillReachable", line("@reachable"));
    assert_eq!(f["bytes"], 24);
    let f = find(&r, "Leak_DefinitelyLost", line("@loop"));
    assert_eq!(
        (f["bytes"].as_u64(), f["blocks"].as_u64()),
        (Some(80), Some(5))
    );
    assert_eq!(f["records"], 1, "one loss record for the loop");
    let f = find(&r, "Leak_DefinitelyLost", line("@strdup"));
    assert_eq!(
        f["location"]["function"], "leak_strdup",
        "the caller, not libc"
    );
    assert_eq!(user_findings(&r).len(), 7);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], 181);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["blocks"], 8);
    assert_eq!(r["verdict"]["status"], "fail");
    assert_eq!(r["valgrind"]["version"], "3.19.0");
    assert_eq!(r["valgrind"]["protocol"], 4);
    assert_eq!(r["mode"], "run");
    assert_eq!(r["processes"].as_array().unwrap().len(), 1);
    assert_eq!(r["processes"][0]["complete"], true);
    assert_eq!(r["processes"][0]["exit"]["code"], 0);
}

#[test]
fn memory_errors_are_found_and_fail_the_gate() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/mem_errors.c", tmp.path());
    let src = tmp.path().join("mem_errors.c");
    let line = |m| common::marker_line(&src, m);
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    common::assert_conserved(&r);
    find(&r, "InvalidRead", line("@invalid_read"));
    find(&r, "InvalidWrite", line("@invalid_write"));
    let f = find(&r, "UninitCondition", line("@uninit_cond"));
    assert!(f["origin"].is_array(), "--track-origins stack kept");
    find(&r, "InvalidFree", line("@invalid_free"));
    assert_eq!(r["summary"]["user"]["errors"], 4);
}

#[test]
fn mismatched_free_is_found() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("cpp/mismatch.cpp", tmp.path());
    let src = tmp.path().join("mismatch.cpp");
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    let f = find(
        &r,
        "MismatchedFree",
        common::marker_line(&src, "@mismatched"),
    );
    assert_eq!(f["location"]["function"], "mismatched_free()");
}

#[test]
fn clean_program_passes() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/clean.c", tmp.path());
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(r["verdict"]["status"], "pass");
    assert!(user_findings(&r).is_empty());
    // The text report says so in one line.
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["run", "--", exe.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PASS: no leaks or memory errors in your code"),
        "{text}"
    );
    assert!(text.contains("valgrind 3.19.0"), "version shown: {text}");
}

#[test]
fn target_exit_code_is_reported_and_can_be_ignored() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/exit3.c", tmp.path());
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 4);
    assert_eq!(r["target_exit"]["code"], 3);
    assert_eq!(r["verdict"]["status"], "target_failed");
    let (code, _) = run_json(
        tmp.path(),
        &["--ignore-target-exit"],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 0);
}

#[test]
fn keep_xml_copies_the_raw_reports_and_they_reanalyse_the_same() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let keep = tmp.path().join("xml");
    let (code, run) = run_json(
        tmp.path(),
        &["--keep-xml", keep.to_str().unwrap()],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    let files: Vec<_> = std::fs::read_dir(&keep).unwrap().collect();
    assert_eq!(files.len(), 1);
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["analyze", "--format", "json", "--src-root", "."])
        .arg(&keep)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fps = |r: &Value| {
        let mut v: Vec<String> = user_findings(r)
            .iter()
            .map(|f| f["fingerprint"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(fps(&run), fps(&again));
    assert_eq!(again["mode"], "analyze");
}

#[test]
fn argv_is_passed_without_a_shell() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let (code, r) = run_json(
        tmp.path(),
        &[],
        &["/bin/echo", "$HOME", "a b", ";", "exit 7"],
    );
    assert_eq!(code, 0);
    assert_eq!(r["command"][1], "$HOME");
    assert_eq!(r["processes"][0]["command"][2], "a b");
}

#[test]
fn missing_valgrind_is_exit_2_with_install_hint() {
    let tmp = common::tempdir();
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .env("PATH", tmp.path())
        .args(["run", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("valgrind not found"), "{err}");
    assert!(err.contains("apt-get install valgrind"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let out = Command::new(common::leakgate_bin())
        .args([
            "run",
            "--valgrind",
            "/nonexistent/valgrind",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_target_is_exit_2() {
    if !common::valgrind_or_skip() {
        return;
    }
    for target in ["./no-such-program", "no-such-program-on-path"] {
        let out = Command::new(common::leakgate_bin())
            .args(["run", "--", target])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("target not found"), "{err}");
    }
}

#[test]
fn bad_flags_are_exit_2() {
    let out = Command::new(common::leakgate_bin())
        .args(["run", "--no-such-flag", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(common::leakgate_bin())
        .args(["run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
