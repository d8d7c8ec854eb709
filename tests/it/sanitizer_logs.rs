//! Integration tests: `leakgate analyze` on LeakSanitizer and
//! AddressSanitizer text reports (`fixtures/sanitizers/`): a stderr
//! recording, a `log_path` file, a directory of them, a CI log with the
//! report among timestamped lines, compressed logs, cut-off logs (never a
//! pass) and files that are neither XML nor a sanitizer log (exit 2).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    common::repo_root().join("fixtures/sanitizers").join(name)
}

/// `leakgate analyze ARGS PATHS`: (exit code, stdout, stderr).
fn analyze(args: &[&str], paths: &[&Path]) -> (i32, String, String) {
    let out = Command::new(common::leakgate_bin())
        .arg("analyze")
        .args(args)
        .args(paths)
        .output()
        .expect("run leakgate");
    let code = out.status.code().expect("not killed by a signal");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(code, 101, "leakgate panicked: {err}");
    assert_ne!(code, 5, "records not conserved: {err}");
    (code, String::from_utf8_lossy(&out.stdout).into_owned(), err)
}

fn analyze_json(paths: &[&Path]) -> (i32, Value) {
    let (code, out, err) = analyze(&["--format", "json"], paths);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    assert_eq!(v["verdict"]["exit_code"], code);
    (code, v)
}

/// The user's findings as (kind, file:line, bytes).
fn user_findings(v: &Value) -> Vec<(String, String, Option<u64>)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                format!(
                    "{}:{}",
                    f["location"]["file"].as_str().unwrap_or("?"),
                    f["location"]["line"]
                ),
                f["bytes"].as_u64(),
            )
        })
        .collect()
}

fn demo_leaks() -> Vec<(String, String, Option<u64>)> {
    [
        ("Leak_DefinitelyLost", "demo.c:18", 64),
        ("Leak_DefinitelyLost", "demo.c:7", 16),
        ("Leak_IndirectlyLost", "demo.c:7", 16),
        // strdup's blocks (malloc ← glibc's __GI___strdup ← make): the
        // caller's, as under Memcheck.
        ("Leak_IndirectlyLost", "demo.c:9", 13),
    ]
    .iter()
    .map(|(k, at, b)| (k.to_string(), at.to_string(), Some(*b)))
    .collect()
}

#[test]
fn lsan_leaks_are_the_user_s_at_demo_c_lines() {
    let log = fixture("lsan-preload-leak.txt");
    let (code, out, err) = analyze(&[], &[&log]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("FAIL: 2 definitely-lost leaks, 2 indirectly-lost leaks in your code"),
        "{out}"
    );
    assert!(out.contains("at demo.c:18 in main"), "{out}");
    assert!(out.contains("at demo.c:7 in make"), "{out}");
    assert!(!out.contains("not memcheck"), "{out}");

    let (code, v) = analyze_json(&[&log]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v), demo_leaks());
    let p = &v["processes"][0];
    assert_eq!(
        (p["pid"].as_u64(), &p["complete"]),
        (Some(9635), &Value::Bool(true))
    );
    assert_eq!(v["summary"]["records"], 5);
    let first = &v["findings"][0]["stack"][0];
    assert_eq!(first["function"], "malloc");
    assert_eq!(first["user"], false);
    assert_eq!(v["findings"][0]["gated"], true);
}

#[test]
fn asan_errors_are_memcheck_kinds_with_their_stacks() {
    let (code, v) = analyze_json(&[&fixture("asan-uaf.txt")]);
    assert_eq!(code, 1);
    assert_eq!(
        user_findings(&v),
        [("InvalidRead".to_string(), "demo.c:23".to_string(), None)]
    );
    let f = &v["findings"][0];
    assert_eq!(
        f["message"],
        "Invalid read of size 1 (AddressSanitizer: heap-use-after-free on address 0x602000000013)"
    );
    let aux: Vec<&str> = f["aux"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        aux,
        [
            "Address 0x602000000013 is 3 bytes inside a block of size 16 free'd",
            "Block was alloc'd at"
        ]
    );
    let stacks = &f["aux_stacks"];
    assert_eq!(stacks[0]["text"], aux[0]);
    assert_eq!(stacks[0]["stack"][0]["function"], "free");
    assert_eq!(stacks[0]["stack"][1]["line"], 22);
    assert_eq!(stacks[1]["stack"][0]["function"], "malloc");
    assert_eq!(stacks[1]["stack"][1]["line"], 21);

    let (code, v) = analyze_json(&[&fixture("asan-double.txt")]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v)[0].0, "InvalidFree");
    let (code, v) = analyze_json(&[&fixture("asan-segv.txt")]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v)[0].0, "FatalSignal");
}

#[test]
fn a_directory_of_log_path_files() {
    let tmp = common::tempdir();
    let d = tmp.path();
    std::fs::copy(fixture("lsan-log_path.9637"), d.join("logpath.9637")).unwrap();
    std::fs::copy(fixture("asan-uaf.txt"), d.join("logpath.9642")).unwrap();
    std::fs::write(d.join("notes.md"), "not a report\n").unwrap();
    let (code, v) = analyze_json(&[d]);
    assert_eq!(code, 1);
    let files: Vec<&str> = v["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["xml"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[0].ends_with("logpath.9637") && files[1].ends_with("logpath.9642"));
    let mut got = user_findings(&v);
    got.sort();
    let mut want = demo_leaks();
    want.push(("InvalidRead".into(), "demo.c:23".into(), None));
    want.sort();
    assert_eq!(got, want);
    // A directory holding neither is still an error.
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.md"), "x\n").unwrap();
    let (code, _, err) = analyze(&[], &[&empty]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_ci_log_with_timestamps_and_a_compressed_log() {
    let tmp = common::tempdir();
    let body = std::fs::read_to_string(fixture("lsan-preload-leak.txt")).unwrap();
    let mut log = String::from("##[group]Run python -m pytest\n");
    for (n, l) in body.lines().enumerate() {
        log.push_str(&format!(
            "2024-05-01T10:00:{:02}.{:07}Z {l}\n",
            n % 60,
            n * 7919
        ));
    }
    log.push_str("2024-05-01T10:01:00.0000000Z ##[error]Process completed with exit code 23.\n");
    let ci = tmp.path().join("job.log");
    std::fs::write(&ci, &log).unwrap();
    let (code, v) = analyze_json(&[&ci]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v), demo_leaks());
    let (_, plain) = analyze_json(&[&fixture("lsan-preload-leak.txt")]);
    let fps = |v: &Value| -> Vec<Value> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["fingerprint"].clone())
            .collect()
    };
    assert_eq!(fps(&v), fps(&plain), "the same findings as the plain log");

    let zst = tmp.path().join("asan.log.zst");
    let raw = std::fs::read(fixture("asan-uaf.txt")).unwrap();
    std::fs::write(&zst, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
    let (code, v) = analyze_json(&[&zst]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v)[0].1, "demo.c:23");
}

/// A log cut anywhere inside its report is never a pass: incomplete
/// (exit 3), or 1 when a gated leak was read before the cut.
#[test]
fn cut_off_logs_are_incomplete_never_a_pass() {
    let tmp = common::tempdir();
    let full = std::fs::read(fixture("lsan-preload-leak.txt")).unwrap();
    let header = memchr::memmem::find(&full, b"==ERROR:").unwrap();
    let summary = memchr::memmem::find(&full, b"SUMMARY:").unwrap();
    let first_entry_end = memchr::memmem::find(&full, b"\n\nDirect leak of 16").unwrap() + 2;
    for (i, cut) in [
        header + 60,
        header + 200,
        first_entry_end,
        summary - 1,
        summary + 10,
    ]
    .into_iter()
    .enumerate()
    {
        let p = tmp.path().join(format!("cut{i}.txt"));
        std::fs::write(&p, &full[..cut]).unwrap();
        let (code, v) = analyze_json(&[&p]);
        let reasons = v["verdict"]["reasons"].to_string();
        assert!(
            reasons.contains("sanitizer report cut off mid-way"),
            "{cut}: {reasons}"
        );
        assert_eq!(v["processes"][0]["complete"], false, "{cut}");
        let gated = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["gated"] == true);
        assert_eq!(code, if gated { 1 } else { 3 }, "{cut}: {reasons}");
    }
    // Before the first entry ended: nothing read, exit 3.
    let p = tmp.path().join("cut-early.txt");
    std::fs::write(&p, &full[..header + 200]).unwrap();
    assert_eq!(analyze(&[], &[&p]).0, 3);
    let p = tmp.path().join("cut-late.txt");
    std::fs::write(&p, &full[..first_entry_end]).unwrap();
    let (code, v) = analyze_json(&[&p]);
    assert_eq!(code, 1);
    assert_eq!(user_findings(&v), demo_leaks()[..1]);
}

#[test]
fn a_fatal_sanitizer_error_is_incomplete() {
    let tmp = common::tempdir();
    let p = tmp.path().join("lsan.123");
    std::fs::write(
        &p,
        "==123==LeakSanitizer has encountered a fatal error.\n==123==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1\n==123==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)\n",
    )
    .unwrap();
    let (code, v) = analyze_json(&[&p]);
    assert_eq!(code, 3);
    assert_eq!(
        v["processes"][0]["incomplete_reason"],
        "LeakSanitizer has encountered a fatal error; LeakSanitizer does not work under ptrace (strace, gdb, etc); 0 records before it were read"
    );
}

#[test]
fn a_file_that_is_neither_is_one_clear_line() {
    let tmp = common::tempdir();
    let p = tmp.path().join("pytest-output.txt");
    std::fs::write(&p, "===== 3 passed in 0.12s =====\n").unwrap();
    let (code, out, err) = analyze(&[], &[&p]);
    assert_eq!(code, 2, "{out}{err}");
    let err = err.trim();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("pytest-output.txt"), "{err}");
    assert!(err.contains("not a Valgrind XML report"), "{err}");
    assert!(
        err.contains("nor a LeakSanitizer/AddressSanitizer log"),
        "{err}"
    );
}

/// A suppression written for Valgrind's stacks (`fun:malloc` first)
/// hides the same leak in a sanitizer log.
#[test]
fn valgrind_suppressions_match_sanitizer_stacks() {
    let tmp = common::tempdir();
    let supp = tmp.path().join("demo.supp");
    std::fs::write(
        &supp,
        "{\n   demo-main-leak\n   Memcheck:Leak\n   match-leak-kinds: definite\n   fun:malloc\n   fun:main\n}\n",
    )
    .unwrap();
    let supp_s = supp.display().to_string();
    let (code, out, err) = analyze(
        &["--format", "json", "--suppressions", &supp_s],
        &[&fixture("lsan-preload-leak.txt")],
    );
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["summary"]["suppressed"]["records"], 1);
    assert_eq!(user_findings(&v), demo_leaks()[1..]);
}
