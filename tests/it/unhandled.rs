//! Integration tests: instructions Valgrind cannot run. `tests/programs/c/unhandled_insn.c`
//! (correct code) executes one AVX-512 or SHA-NI instruction, which
//! Valgrind's decoder does not know on any CPU: it prints "vex
//! amd64->IR: unhandled instruction bytes" on standard error and kills the
//! process with SIGILL. `leakgate run` must say so (the object, the bytes,
//! how to rebuild), mark the report incomplete (exit 3) and leave the
//! crash and the leaks of the aborted leak check out of your findings; a
//! real illegal instruction (`ud2`) stays your crash. `analyze`, with the
//! XML alone, cannot tell the two apart (`fixtures/recorded/unhandled_insn.xml`).

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Builds the program (`-O1`: the buffers' only pointers are in registers
/// when the process dies, so its leak check reports them definitely lost).
fn build(dir: &Path) -> String {
    let exe = common::build_c_opt("c/unhandled_insn.c", dir, "-O1");
    exe.to_str().unwrap().to_string()
}

/// `leakgate run --format json [--valgrind VG]` of the program in `mode`:
/// (exit code, the report, leakgate's standard error, the text report
/// re-rendered from it).
fn run(dir: &Path, vg: Option<&Path>, exe: &str, mode: &str) -> (i32, Value, String, String) {
    let json = dir.join(format!("{mode}.json"));
    let mut c = Command::new(common::leakgate_bin());
    c.current_dir(dir)
        .env_remove("VALGRIND_LIB")
        .args(["run", "--quiet", "--format", "json", "--output"])
        .arg(&json);
    if let Some(vg) = vg {
        c.arg("--valgrind").arg(vg);
    }
    let out = c.args(["--", exe, mode]).output().expect("run leakgate");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {}", common::show(&out)));
    let text = Command::new(common::leakgate_bin())
        .args(["report", "--format", "text"])
        .arg(&json)
        .output()
        .expect("leakgate report");
    common::check_success(&text, "leakgate report");
    (
        common::code(&out),
        report,
        common::stderr(&out),
        String::from_utf8_lossy(&text.stdout).into_owned(),
    )
}

fn user(r: &Value) -> Vec<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect()
}

fn incomplete(r: &Value) -> Vec<&str> {
    r["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|s| s.starts_with("incomplete: "))
        .collect()
}

/// The checks common to both unhandled instructions: exit 3, one reason
/// naming the object, the bytes, Valgrind and the rebuild, the process
/// incomplete, no user finding, the crash and the aborted leak check's
/// leaks noise of source `valgrind`, and the text report saying the same.
fn check_unhandled(dir: &Path, vg: Option<&Path>, exe: &str, mode: &str, bytes: &str) -> Value {
    let (code, r, err, text) = run(dir, vg, exe, mode);
    common::assert_conserved(&r);
    assert_eq!(code, 3, "incomplete, never the user's: {}", r["verdict"]);
    assert!(
        err.contains("unhandled instruction bytes: "),
        "Valgrind's line still reaches standard error: {err}"
    );
    let reasons = incomplete(&r);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    for want in [
        exe,
        bytes,
        "in add16 (unhandled_insn.c:",
        "a limitation of Valgrind, not a finding in your code",
        "its leak check means nothing",
        "-march=x86-64-v3",
    ] {
        if mode == "sha" && want.starts_with("in add16") {
            continue;
        }
        assert!(reasons[0].contains(want), "{want:?} not in {}", reasons[0]);
        assert!(
            text.contains(want),
            "{want:?} not in the text report:\n{text}"
        );
    }
    assert!(text.contains("INCOMPLETE"), "{text}");
    let p = &r["processes"][0];
    assert_eq!(p["complete"], false);
    assert!(user(&r).is_empty(), "no user finding: {:#?}", user(&r));
    let findings = r["findings"].as_array().unwrap();
    let crash: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"] == "FatalSignal")
        .collect();
    assert_eq!(crash.len(), 1);
    assert_eq!(crash[0]["source"], "valgrind");
    assert!(crash[0]["advice"].as_str().unwrap().contains("rebuild"));
    let leaks: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"].as_str().unwrap().starts_with("Leak_"))
        .collect();
    assert!(!leaks.is_empty(), "the abort leaves its buffers behind");
    for l in &leaks {
        assert_eq!(l["source"], "valgrind", "{l:#}");
    }
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("its leak check ran on a process that did not finish")),
        "{notes:?}"
    );
    r
}

#[test]
fn avx512_is_valgrinds_limitation_not_a_finding() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build(tmp.path());
    let r = check_unhandled(tmp.path(), None, &exe, "avx512", "0x62 0xF1 ");
    assert!(incomplete(&r)[0].contains("EVEX prefix of AVX-512"));
}

#[test]
fn sha_ni_is_valgrinds_limitation_too() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build(tmp.path());
    let r = check_unhandled(tmp.path(), None, &exe, "sha", "0xF 0x38 0xCB ");
    let reason = incomplete(&r)[0];
    assert!(
        !reason.contains("AVX-512") && reason.contains("for an older CPU"),
        "{reason}"
    );
}

#[test]
fn ud2_is_your_crash() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build(tmp.path());
    let line = common::marker_line(&tmp.path().join("unhandled_insn.c"), "@trap");
    let (code, r, err, _) = run(tmp.path(), None, &exe, "trap");
    common::assert_conserved(&r);
    assert_eq!(code, 1, "{}", r["verdict"]);
    assert!(!err.contains("unhandled instruction bytes"), "{err}");
    assert!(incomplete(&r).is_empty(), "{:?}", incomplete(&r));
    let crash = user(&r)
        .into_iter()
        .find(|f| f["kind"] == "FatalSignal")
        .expect("a user crash");
    assert_eq!(crash["location"]["line"], line);
    assert!(
        crash["advice"].is_null(),
        "run knows it is no unhandled one"
    );
}

#[test]
fn errors_before_the_abort_stay_yours() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build(tmp.path());
    let line = common::marker_line(&tmp.path().join("unhandled_insn.c"), "@invalid_read");
    let (code, r, _, _) = run(tmp.path(), None, &exe, "error");
    common::assert_conserved(&r);
    assert_eq!(code, 1, "the invalid read fails the gate");
    assert_eq!(incomplete(&r).len(), 1, "and the report is incomplete");
    let mine = user(&r);
    assert_eq!(mine.len(), 1, "{mine:#?}");
    assert_eq!(mine[0]["kind"], "InvalidRead");
    assert_eq!(mine[0]["location"]["line"], line);
}

/// Valgrind 3.22.0, 3.26.0 and 3.27.1 (`../shared/valgrind/`) decode
/// neither instruction either, and say it the same way.
#[test]
fn every_tested_valgrind_stops_the_same_way() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build(tmp.path());
    for (v, vg) in common::extra_valgrinds() {
        for (mode, bytes) in [("avx512", "0x62 0xF1 "), ("sha", "0xF 0x38 0xCB ")] {
            let r = check_unhandled(tmp.path(), Some(&vg), &exe, mode, bytes);
            assert_eq!(r["valgrind"]["version"], v.as_str());
        }
    }
}

#[test]
fn analyze_alone_cannot_tell_and_says_what_to_check() {
    let xml = common::repo_root().join("fixtures/recorded/unhandled_insn.xml");
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--format", "json"])
        .arg(&xml)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_conserved(&r);
    assert_eq!(common::code(&out), 1, "a SIGILL crash in your code");
    assert_eq!(r["processes"][0]["complete"], true);
    let crash = user(&r)
        .into_iter()
        .find(|f| f["kind"] == "FatalSignal")
        .expect("the crash stays the user's");
    let advice = crash["advice"].as_str().unwrap();
    for want in [
        "unhandled instruction bytes",
        "leakgate run",
        "-march=native",
    ] {
        assert!(advice.contains(want), "{want:?} not in {advice}");
    }
}
