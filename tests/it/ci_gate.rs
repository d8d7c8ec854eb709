//! Integration tests for the CI gate (issue 5): policies (`--fail-on`,
//! `--max-leaked-bytes`, `--[no-]fail-on-incomplete`) on the C, CPython and
//! pybind11 test programs; the baseline round trip on edited, rebuilt copies
//! of `tests/programs/c/baseline.c`; the CI outputs checked by real
//! consumers (SARIF against the official 2.1.0 schema with `jsonschema`,
//! JUnit with `junitparser`, Code Quality against GitLab's required fields);
//! GitHub annotations and step summary; and the CI examples of docs/ci.md
//! and of README's "CI" section.
//!
//! Each program runs once under Valgrind (`--keep-xml`); the policies are
//! then applied to the kept XML with `leakgate analyze`, which shares the
//! gate with `run`.

use crate::common;
use crate::common::{code, stderr};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs leakgate in `dir` with `args` and extra environment; GitHub's
/// variables are removed unless given.
fn lg(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(common::leakgate_bin());
    c.current_dir(dir)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("PYTHONMALLOC")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run leakgate")
}

/// `leakgate SUB --format json -o DIR/report.json OPTS TAIL`: (exit code, report).
fn lg_json(dir: &Path, sub: &str, opts: &[&str], tail: &[&str]) -> (i32, Value) {
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let mut args = vec![sub, "--format", "json", "-o", json.to_str().unwrap()];
    args.extend_from_slice(opts);
    args.extend_from_slice(tail);
    let out = lg(dir, &args, &[]);
    let bytes = std::fs::read(&json).unwrap_or_default();
    let r: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "no JSON report for {args:?} ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        )
    });
    (code(&out), r)
}

fn notes(r: &Value) -> Vec<String> {
    r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn user(r: &Value) -> Vec<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect()
}

/// Analyses `xml` (a directory) under each policy and checks the exit code
/// and that some reason contains the expected text (or that there is none).
fn check_policies(dir: &Path, xml: &Path, cases: &[(&[&str], i32, Option<&str>)]) {
    let root = dir.to_str().unwrap();
    for (opts, want, reason) in cases {
        let mut all = vec!["--src-root", root];
        all.extend_from_slice(opts);
        let (got, r) = lg_json(dir, "analyze", &all, &[xml.to_str().unwrap()]);
        let rs = common::reasons(&r);
        assert_eq!(got, *want, "exit code with {opts:?}; reasons: {rs:#?}");
        assert_eq!(r["verdict"]["exit_code"], *want);
        match reason {
            Some(text) => assert!(
                rs.iter().any(|x| x.contains(text)),
                "with {opts:?} expected a reason containing {text:?}; reasons: {rs:#?}"
            ),
            None => assert!(rs.is_empty(), "with {opts:?} expected no reasons: {rs:#?}"),
        }
    }
}

/// The test Python when it can import `module`; else skip.
fn python_with(module: &str) -> Option<PathBuf> {
    let Some(py) = common::python() else {
        common::require_or_skip("no Python interpreter (set LEAKGATE_TEST_PYTHON)");
        return None;
    };
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(py)
    } else {
        common::require_or_skip(&format!(
            "{} cannot import {module} (pip install {module})",
            py.display()
        ));
        None
    }
}

/// Runs a Python snippet with arguments; returns its stdout, panics on failure.
fn python_script(py: &Path, script: &str, args: &[&Path]) -> String {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python check failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------- policies

#[test]
fn policies_on_leak_kinds() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    common::build_c("c/leak_kinds.c", dir);
    let xml = dir.join("xml");
    let (got, r) = lg_json(
        dir,
        "run",
        &[
            "--show-leak-kinds",
            "all",
            "--keep-xml",
            xml.to_str().unwrap(),
        ],
        &["--", "./leak_kinds"],
    );
    assert_eq!(got, 1, "{:#?}", common::reasons(&r));
    assert_eq!(
        r["policy"]["fail_on"],
        serde_json::json!(["definite", "indirect", "errors"])
    );
    for f in user(&r) {
        // The indirect block is the definite leak's at the line before it:
        // one leak to fix, gated once.
        let gated = f["kind"] == "Leak_DefinitelyLost";
        assert_eq!(f["gated"], gated, "{}", f["kind"]);
        assert_eq!(
            f.get("indirect_of").is_some(),
            f["kind"] == "Leak_IndirectlyLost",
            "{f:#}"
        );
    }
    // Bytes of the gated leaks: definite 80+64+48 (16 direct, 32 indirect)+21.
    check_policies(
        dir,
        &xml,
        &[
            (
                &[],
                1,
                Some(
                    "--fail-on definite,indirect,errors: 4 gated findings in your code (4 Leak_DefinitelyLost)",
                ),
            ),
            (
                &["--fail-on", "possible"],
                1,
                Some(
                    "--fail-on possible: 1 gated finding in your code (1 Leak_PossiblyLost): Leak_PossiblyLost at leak_kinds.c:",
                ),
            ),
            (
                &["--fail-on", "reachable"],
                1,
                Some("--fail-on reachable: 1 gated finding in your code (1 Leak_StillReachable)"),
            ),
            (
                &["--fail-on", "indirect"],
                1,
                Some("--fail-on indirect: 1 gated finding in your code (1 Leak_IndirectlyLost)"),
            ),
            (
                &["--fail-on", "Leak_DefinitelyLost"],
                1,
                Some("--fail-on definite: 4 gated findings in your code (4 Leak_DefinitelyLost)"),
            ),
            (&["--fail-on", "errors"], 0, None),
            (&["--fail-on", "none"], 0, None),
            (&["--max-leaked-bytes", "213"], 0, None),
            (
                &["--max-leaked-bytes", "212"],
                1,
                Some("--max-leaked-bytes 212: 213 bytes leaked in your code by 4 gated leaks"),
            ),
            (&["--fail-on", "all", "--max-leaked-bytes", "285"], 0, None),
            (
                &["--fail-on", "all", "--max-leaked-bytes", "284"],
                1,
                Some("--max-leaked-bytes 284: 285 bytes leaked in your code by 6 gated leaks"),
            ),
        ],
    );
    let (_, r) = lg_json(
        dir,
        "analyze",
        &[
            "--src-root",
            dir.to_str().unwrap(),
            "--max-leaked-bytes",
            "300",
        ],
        &[xml.to_str().unwrap()],
    );
    assert!(
        notes(&r).iter().any(|n| n
            == "213 bytes leaked in your code by 4 gated leaks, within --max-leaked-bytes 300"),
        "{:#?}",
        notes(&r)
    );
    assert_eq!(r["policy"]["max_leaked_bytes"], 300);

    // A typo is a usage error, before anything runs.
    let out = lg(
        dir,
        &["analyze", "--fail-on", "definte", xml.to_str().unwrap()],
        &[],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown --fail-on item"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn policies_on_memory_errors_target_exit_and_incomplete_reports() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    common::build_c("c/mem_errors.c", dir);
    common::build_c("c/exit3.c", dir);
    common::build_c("c/clean.c", dir);
    let xml = dir.join("xml");
    let (got, _) = lg_json(
        dir,
        "run",
        &["--keep-xml", xml.to_str().unwrap()],
        &["--", "./mem_errors"],
    );
    assert_eq!(got, 1);
    check_policies(
        dir,
        &xml,
        &[
            (
                &["--fail-on", "InvalidRead"],
                1,
                Some(
                    "--fail-on InvalidRead: 1 gated finding in your code (1 InvalidRead): InvalidRead at mem_errors.c:",
                ),
            ),
            (&["--fail-on", "definite,indirect"], 0, None),
            (
                &["--fail-on", "errors", "--max-leaked-bytes", "0"],
                1,
                Some(
                    "--fail-on errors: 4 gated errors in your code (1 InvalidFree, 1 InvalidRead, 1 InvalidWrite, 1 UninitCondition)",
                ),
            ),
        ],
    );

    // The target's exit status: 4 whatever --fail-on says, unless ignored.
    let (got, r) = lg_json(dir, "run", &["--fail-on", "none"], &["--", "./exit3"]);
    assert_eq!(got, 4, "{:#?}", common::reasons(&r));
    assert_eq!(common::reasons(&r), ["the target exited with code 3"]);
    let (got, _) = lg_json(
        dir,
        "run",
        &["--fail-on", "all", "--ignore-target-exit"],
        &["--", "./exit3"],
    );
    assert_eq!(got, 0);
    let (got, r) = lg_json(dir, "run", &["--fail-on", "all"], &["--", "./clean"]);
    assert_eq!(got, 0, "{:#?}", common::reasons(&r));

    // Incomplete: the report cut after its last record.
    let file = std::fs::read_dir(&xml)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let cut = text.rfind("</error>").unwrap() + "</error>".len();
    let trunc = dir.join("trunc");
    std::fs::create_dir_all(&trunc).unwrap();
    std::fs::write(trunc.join("vg.1.xml"), &text[..cut]).unwrap();
    check_policies(
        dir,
        &trunc,
        &[
            // 1 before 3.
            (
                &[],
                1,
                Some("--fail-on definite,indirect,errors: 4 gated findings"),
            ),
            (&["--fail-on", "none"], 3, Some("incomplete: ")),
            (&["--fail-on", "none", "--no-fail-on-incomplete"], 0, None),
            (
                &[
                    "--fail-on",
                    "none",
                    "--no-fail-on-incomplete",
                    "--fail-on-incomplete",
                ],
                3,
                Some("incomplete: "),
            ),
        ],
    );
    let (_, r) = lg_json(
        dir,
        "analyze",
        &["--fail-on", "none", "--no-fail-on-incomplete"],
        &[trunc.to_str().unwrap()],
    );
    assert_eq!(r["verdict"]["status"], "pass");
    assert_eq!(r["policy"]["fail_on_incomplete"], false);
    assert!(
        notes(&r)
            .iter()
            .any(|n| n.starts_with("incomplete (not gated: --no-fail-on-incomplete): ")),
        "{:#?}",
        notes(&r)
    );
}

/// Runs a built Python extension's test.py once under leakgate (keeping the
/// XML in `ext/xml`); returns the report.
fn run_python_ext(py: &Path, ext: &Path) -> (i32, Value, PathBuf) {
    let xml = ext.join("xml");
    let (got, r) = lg_json(
        ext,
        "run",
        &["--keep-xml", xml.to_str().unwrap()],
        &["--", py.to_str().unwrap(), "test.py"],
    );
    (got, r, xml)
}

#[test]
fn policies_on_the_cpython_extension() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let ext = common::build_python_ext_with(&py, "cpython", tmp.path());
    let (got, r, xml) = run_python_ext(&py, &ext);
    assert_eq!(got, 1, "{:#?}", common::reasons(&r));
    // 48 + 133 + 40 bytes, all definitely lost.
    let total: u64 = user(&r).iter().map(|f| f["bytes"].as_u64().unwrap()).sum();
    let under = total.to_string();
    let over = (total - 1).to_string();
    check_policies(
        &ext,
        &xml,
        &[
            (
                &[],
                1,
                Some(
                    "--fail-on definite,indirect,errors: 3 gated findings in your code (3 Leak_DefinitelyLost): Leak_DefinitelyLost at leakext.c:",
                ),
            ),
            // The interpreter's errors and possible leaks are noise.
            (&["--fail-on", "errors,possible,reachable"], 0, None),
            (&["--max-leaked-bytes", &under], 0, None),
            (
                &["--max-leaked-bytes", &over],
                1,
                Some(&format!(
                    "--max-leaked-bytes {over}: {total} bytes leaked in your code by 3 gated leaks"
                )),
            ),
        ],
    );
}

#[test]
fn policies_on_the_pybind11_extension() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let ext = common::build_python_ext_with(&py, "pybind11", tmp.path());
    let (got, r, xml) = run_python_ext(&py, &ext);
    assert_eq!(got, 1, "{:#?}", common::reasons(&r));
    let user_possible = user(&r)
        .iter()
        .filter(|f| f["kind"] == "Leak_PossiblyLost")
        .count();
    check_policies(
        &ext,
        &xml,
        &[
            (
                &[],
                1,
                Some(
                    "--fail-on definite,indirect,errors: 4 gated findings in your code (3 Leak_DefinitelyLost, 1 MismatchedFree)",
                ),
            ),
            (
                &["--fail-on", "errors"],
                1,
                Some(
                    "--fail-on errors: 1 gated finding in your code (1 MismatchedFree): MismatchedFree at pbext.cpp:",
                ),
            ),
            (
                &[
                    "--fail-on",
                    "MismatchedFree,definite",
                    "--max-leaked-bytes",
                    "100000",
                ],
                1,
                Some(
                    "--fail-on definite,MismatchedFree: 1 gated error in your code (1 MismatchedFree)",
                ),
            ),
            (
                &["--fail-on", "definite", "--max-leaked-bytes", "100000"],
                0,
                None,
            ),
            (
                &["--fail-on", "definite", "--max-leaked-bytes", "100"],
                1,
                Some("--max-leaked-bytes 100: 528 bytes leaked in your code by 3 gated leaks"),
            ),
        ],
    );
    let (got, _) = lg_json(
        &ext,
        "analyze",
        &["--src-root", ext.to_str().unwrap(), "--fail-on", "possible"],
        &[xml.to_str().unwrap()],
    );
    assert_eq!(got, i32::from(user_possible > 0));
}

// ---------------------------------------------------------------- baselines

/// Builds an edited copy of `tests/programs/c/baseline.c` in `dir`
/// (each edit replaces one exact text) and returns `dir`.
fn build_variant(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut src = std::fs::read_to_string(common::programs_dir().join("c/baseline.c")).unwrap();
    for (from, to) in edits {
        assert_eq!(src.matches(from).count(), 1, "{from:?}");
        src = src.replace(from, to);
    }
    let file = dir.join("baseline.c");
    std::fs::write(&file, src).unwrap();
    let out = Command::new("gcc")
        .current_dir(dir)
        .args(["-g", "-O0", "-o", "baseline", "baseline.c"])
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.to_path_buf()
}

const SHIFT: (&str, &str) = (
    "/* @shift_here */",
    "/* edited: */\n/* three lines */\n/* inserted */\n/* elsewhere */",
);
const THIRD: (&str, &str) = (
    "    /* @third_here */",
    "    char *r = malloc(24); /* @third */\n    r[0] = 'c';\n    r = NULL;",
);
const NO_CALL_A: (&str, &str) = ("    leak_a(); /* @call_a */", "    /* leak_a removed */");

/// `leakgate run --repo-root DIR OPTS -- ./baseline` in `dir`.
fn run_baseline(dir: &Path, opts: &[&str]) -> (i32, Value) {
    let mut all = vec!["--repo-root", dir.to_str().unwrap()];
    all.extend_from_slice(opts);
    lg_json(dir, "run", &all, &["--", "./baseline"])
}

fn states(r: &Value) -> Vec<(String, u64, String)> {
    let mut v: Vec<_> = user(r)
        .iter()
        .map(|f| {
            (
                f["location"]["function"].as_str().unwrap().to_string(),
                f["location"]["line"].as_u64().unwrap(),
                f["baseline"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn baseline_round_trip() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let base = tmp.path().join("baseline.json");
    let base_s = base.to_str().unwrap();

    // Record on the original: two leaks.
    let v1 = build_variant(&tmp.path().join("v1"), &[]);
    let (got, r) = run_baseline(&v1, &["--fail-on", "none", "--write-baseline", base_s]);
    assert_eq!(got, 0, "{:#?}", common::reasons(&r));
    let recorded = std::fs::read_to_string(&base).unwrap();
    let b: Value = serde_json::from_str(&recorded).unwrap();
    assert_eq!(b["leakgate_baseline"], 1);
    let entries = b["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{recorded}");
    let fps: Vec<&str> = entries
        .iter()
        .map(|e| e["fingerprint"].as_str().unwrap())
        .collect();
    assert!(fps.windows(2).all(|w| w[0] <= w[1]), "sorted: {fps:?}");
    for e in entries {
        assert_eq!(e["file"], "baseline.c");
        let d = e["description"].as_str().unwrap();
        assert!(d.starts_with("definitely-lost leak in leak_"), "{d}");
        assert!(d.contains("via malloc"), "{d}");
    }
    assert!(
        !recorded.contains("\"line\""),
        "no line numbers: {recorded}"
    );

    // Stable: a rebuilt copy whose leaks moved gives the same file.
    let moved = build_variant(&tmp.path().join("moved"), &[SHIFT]);
    let again = tmp.path().join("again.json");
    let (got, r) = run_baseline(
        &moved,
        &[
            "--baseline",
            base_s,
            "--write-baseline",
            again.to_str().unwrap(),
        ],
    );
    assert_eq!(got, 0, "{:#?}", common::reasons(&r));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), recorded);
    assert_eq!(r["baseline"]["known"], 2);
    assert_eq!(r["baseline"]["new"], 0);

    // A third leak (in leak_b, above the old one: same fingerprint), the old
    // ones shifted: exactly one new finding fails, two are known.
    let v2 = build_variant(&tmp.path().join("v2"), &[SHIFT, THIRD]);
    let src = v2.join("baseline.c");
    let line = |m| u64::from(common::marker_line(&src, m));
    let (got, r) = run_baseline(&v2, &["--baseline", base_s]);
    assert_eq!(got, 1, "{:#?}", common::reasons(&r));
    assert_eq!(
        states(&r),
        [
            ("leak_a".to_string(), line("@keep_a"), "known".to_string()),
            ("leak_b".to_string(), line("@third"), "new".to_string()),
            ("leak_b".to_string(), line("@keep_b"), "known".to_string()),
        ]
    );
    assert_eq!(
        common::reasons(&r),
        [format!(
            "--fail-on definite,indirect,errors: 1 new gated finding in your code (1 Leak_DefinitelyLost): Leak_DefinitelyLost at baseline.c:{} in leak_b (24 bytes)",
            line("@third")
        )]
    );
    assert_eq!(r["baseline"]["new"], 1);
    assert_eq!(r["baseline"]["known"], 2);
    assert_eq!(r["baseline"]["fixed"], serde_json::json!([]));
    let gated: Vec<bool> = user(&r)
        .iter()
        .map(|f| f["gated"].as_bool().unwrap())
        .collect();
    assert_eq!(gated.iter().filter(|g| **g).count(), 1);
    assert!(
        notes(&r)
            .iter()
            .any(|n| n == "2 findings known from the baseline: reported, not gated"),
        "{:#?}",
        notes(&r)
    );

    // One old leak removed: reported fixed; the rest known; the gate passes.
    let v3 = build_variant(&tmp.path().join("v3"), &[SHIFT, NO_CALL_A]);
    let (got, r) = run_baseline(&v3, &["--baseline", base_s]);
    assert_eq!(got, 0, "{:#?}", common::reasons(&r));
    let keep_b = u64::from(common::marker_line(&v3.join("baseline.c"), "@keep_b"));
    assert_eq!(
        states(&r),
        [("leak_b".to_string(), keep_b, "known".to_string())]
    );
    let fixed = r["baseline"]["fixed"].as_array().unwrap();
    assert_eq!(fixed.len(), 1);
    assert_eq!(fixed[0]["function"], "leak_a");
    assert!(
        notes(&r)
            .iter()
            .any(|n| n.starts_with("fixed since the baseline: definitely-lost leak in leak_a")),
        "{:#?}",
        notes(&r)
    );

    // A missing or broken baseline is a usage error.
    let out = lg(
        &v3,
        &["run", "--baseline", "no-such.json", "--", "./baseline"],
        &[],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no-such.json: cannot read"),
        "{}",
        stderr(&out)
    );
    std::fs::write(tmp.path().join("bad.json"), "{}").unwrap();
    let out = lg(
        &v3,
        &[
            "analyze",
            "--baseline",
            tmp.path().join("bad.json").to_str().unwrap(),
            ".",
        ],
        &[],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("not a leakgate baseline"),
        "{}",
        stderr(&out)
    );
}

// ---------------------------------------------------------------- outputs

/// A scenario with every baseline state: baseline recorded on the original,
/// then a shifted copy with a third leak and without leak_a's.
fn ci_scenario(tmp: &Path) -> (PathBuf, PathBuf) {
    let base = tmp.join("baseline.json");
    let v1 = build_variant(&tmp.join("v1"), &[]);
    let (got, _) = run_baseline(
        &v1,
        &[
            "--fail-on",
            "none",
            "--write-baseline",
            base.to_str().unwrap(),
        ],
    );
    assert_eq!(got, 0);
    let v = build_variant(&tmp.join("pr"), &[SHIFT, THIRD, NO_CALL_A]);
    (v, base)
}

#[test]
fn sarif_is_valid_sarif_2_1_0() {
    if !common::valgrind_or_skip() {
        return;
    }
    if python_with("jsonschema").is_none() {
        return;
    }
    let tmp = common::tempdir();
    let (dir, base) = ci_scenario(tmp.path());
    let sarif = dir.join("leakgate.sarif");
    let (got, r) = run_baseline(
        &dir,
        &[
            "--baseline",
            base.to_str().unwrap(),
            "--sarif",
            sarif.to_str().unwrap(),
        ],
    );
    assert_eq!(got, 1, "{:#?}", common::reasons(&r));
    assert!(common::check_sarif_schema(&sarif));

    let s: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(s["version"], "2.1.0");
    let run = &s["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "leakgate");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["id"], "Leak_DefinitelyLost");
    assert!(rules[0]["help"]["text"].as_str().unwrap().len() > 40);
    let root_uri = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert!(
        root_uri.starts_with("file:///") && root_uri.ends_with('/'),
        "{root_uri}"
    );
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let src = dir.join("baseline.c");
    for res in results {
        let phys = &res["locations"][0]["physicalLocation"];
        assert_eq!(phys["artifactLocation"]["uri"], "baseline.c");
        assert_eq!(phys["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        let line = phys["region"]["startLine"].as_u64().unwrap();
        let key = res["partialFingerprints"]["leakgate/v1"].as_str().unwrap();
        assert!(key.len() >= 16, "{key}");
        let flow = res["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap();
        assert!(flow.len() >= 3);
        // Outermost first, the allocation (malloc) last.
        assert!(
            flow.last().unwrap()["location"]["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with("malloc"),
            "{flow:#?}"
        );
        if line == u64::from(common::marker_line(&src, "@third")) {
            assert_eq!(res["baselineState"], "new");
            assert_eq!(res["level"], "error");
        } else {
            assert_eq!(line, u64::from(common::marker_line(&src, "@keep_b")));
            assert_eq!(res["baselineState"], "unchanged");
            assert_eq!(res["level"], "note");
        }
        assert!(!res["relatedLocations"].as_array().unwrap().is_empty());
    }
    // Same fingerprint, different sites: the keys differ.
    assert_ne!(
        results[0]["partialFingerprints"]["leakgate/v1"],
        results[1]["partialFingerprints"]["leakgate/v1"]
    );
    let fixed = run["properties"]["leakgate"]["fixed"].as_array().unwrap();
    assert_eq!(fixed.len(), 1);

    // A clean run is valid SARIF too, with no results.
    let tmp2 = common::tempdir();
    common::build_c("c/clean.c", tmp2.path());
    let sarif2 = tmp2.path().join("clean.sarif");
    let out = lg(
        tmp2.path(),
        &["run", "--sarif", sarif2.to_str().unwrap(), "--", "./clean"],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(common::check_sarif_schema(&sarif2));
}

const JUNIT_SUMMARY: &str = r#"
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
cases = []
suites = 0
out = ''
for suite in xml:
    suites += 1
    so = suite._elem.find('system-out')
    out = so.text if so is not None else ''
    for case in suite:
        res = [type(r).__name__ for r in case.result]
        msgs = [r.message for r in case.result]
        cases.append({'name': case.name, 'classname': case.classname, 'result': res, 'messages': msgs})
print(json.dumps({'suites': suites, 'cases': cases, 'system_out': out}))
"#;

#[test]
fn junit_is_read_by_a_junit_consumer() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = python_with("junitparser") else {
        return;
    };
    let tmp = common::tempdir();
    let (dir, base) = ci_scenario(tmp.path());
    let junit = dir.join("leakgate.xml");
    let (got, _) = run_baseline(
        &dir,
        &[
            "--baseline",
            base.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(got, 1);
    let j: Value = serde_json::from_str(&python_script(&py, JUNIT_SUMMARY, &[&junit])).unwrap();
    assert_eq!(j["suites"], 1);
    let cases = j["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "{cases:#?}");
    let failing: Vec<&Value> = cases
        .iter()
        .filter(|c| c["result"] == serde_json::json!(["Failure"]))
        .collect();
    let skipped: Vec<&Value> = cases
        .iter()
        .filter(|c| c["result"] == serde_json::json!(["Skipped"]))
        .collect();
    assert_eq!(failing.len(), 1, "{cases:#?}");
    assert_eq!(skipped.len(), 1, "{cases:#?}");
    let third = common::marker_line(&dir.join("baseline.c"), "@third");
    assert_eq!(
        failing[0]["name"],
        format!("Leak_DefinitelyLost in leak_b (baseline.c:{third})")
    );
    assert_eq!(failing[0]["classname"], "leakgate.Leak_DefinitelyLost");
    assert!(
        skipped[0]["messages"][0]
            .as_str()
            .unwrap()
            .starts_with("known from the baseline")
    );
    let out = j["system_out"].as_str().unwrap();
    assert!(out.contains("noise (not yours): "), "{out}");
    assert!(out.contains("1 new, 1 known, 1 fixed"), "{out}");
    assert!(
        out.contains("fixed: definitely-lost leak in leak_a"),
        "{out}"
    );

    // No user findings: one passing testcase.
    let tmp2 = common::tempdir();
    common::build_c("c/clean.c", tmp2.path());
    let junit2 = tmp2.path().join("clean.xml");
    let out = lg(
        tmp2.path(),
        &["run", "--junit", junit2.to_str().unwrap(), "--", "./clean"],
        &[],
    );
    assert_eq!(code(&out), 0);
    let j: Value = serde_json::from_str(&python_script(&py, JUNIT_SUMMARY, &[&junit2])).unwrap();
    assert_eq!(
        j["cases"],
        serde_json::json!([{"name": "no leaks or memory errors in your code", "classname": "leakgate", "result": [], "messages": []}])
    );
}

#[test]
fn codequality_markdown_and_github_annotations() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let (dir, base) = ci_scenario(tmp.path());
    let cq = dir.join("gl-code-quality.json");
    let md = dir.join("leakgate.md");
    let summary = dir.join("step-summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let out = lg(
        &dir,
        &[
            "run",
            "--repo-root",
            dir.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
            "--codequality",
            cq.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--",
            "./baseline",
        ],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
    );
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let src = dir.join("baseline.c");
    let third = common::marker_line(&src, "@third");
    let keep_b = common::marker_line(&src, "@keep_b");

    // GitLab Code Quality: the documented required fields.
    let issues: Value = serde_json::from_str(&std::fs::read_to_string(&cq).unwrap()).unwrap();
    let issues = issues.as_array().unwrap();
    assert_eq!(issues.len(), 2);
    let mut lines = Vec::new();
    for i in issues {
        for field in ["description", "check_name", "fingerprint", "severity"] {
            assert!(
                i[field].as_str().is_some_and(|s| !s.is_empty()),
                "{field} in {i:#}"
            );
        }
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&i["severity"].as_str().unwrap())
        );
        assert_eq!(i["location"]["path"], "baseline.c");
        lines.push(i["location"]["lines"]["begin"].as_u64().unwrap());
    }
    lines.sort_unstable();
    assert_eq!(lines, [u64::from(third), u64::from(keep_b)]);
    assert_ne!(issues[0]["fingerprint"], issues[1]["fingerprint"]);

    // Markdown: the file, and the same appended to the step summary.
    let m = std::fs::read_to_string(&md).unwrap();
    assert!(
        m.starts_with("### ❌ leakgate: failed — 2 findings in your code, 1 failing the gate"),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "| ❌ | `Leak_DefinitelyLost` | `baseline.c:{third}` | `leak_b` | 24 | new |"
        )),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "| ➖ | `Leak_DefinitelyLost` | `baseline.c:{keep_b}` | `leak_b` | 56 | known |"
        )),
        "{m}"
    );
    assert!(m.contains("- fixed: definitely-lost leak in leak_a"), "{m}");
    let s = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(s, format!("# earlier step\n{m}"));

    // Workflow commands on stdout, after the text report.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cmds: Vec<&str> = stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(cmds.len(), 2, "{stdout}");
    assert!(
        cmds.iter().any(|c| c.starts_with(&format!(
            "::error file=baseline.c,line={third},title=leakgate%3A Leak_DefinitelyLost::24 bytes in 1 block definitely lost in leak_b"
        ))),
        "{cmds:#?}"
    );
    assert!(
        cmds.iter().any(
            |c| c.starts_with(&format!("::notice file=baseline.c,line={keep_b},"))
                && c.contains("known from the baseline")
        ),
        "{cmds:#?}"
    );

    // --annotations never; and a JSON report on stdout stays parseable.
    let out = lg(
        &dir,
        &["run", "--annotations", "never", "--", "./baseline"],
        &[("GITHUB_ACTIONS", "true")],
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("::error"));
    let out = lg(
        &dir,
        &[
            "run",
            "--format",
            "json",
            "--annotations",
            "always",
            "--",
            "./baseline",
        ],
        &[],
    );
    let _: Value = serde_json::from_slice(&out.stdout).expect("stdout is only the JSON report");
    assert!(
        stderr(&out).contains("::error file=baseline.c,"),
        "{}",
        stderr(&out)
    );

    // An output file in a missing directory is a usage error, before the run.
    let out = lg(
        &dir,
        &["run", "--sarif", "no/such/dir/x.sarif", "--", "./baseline"],
        &[],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("no such directory"),
        "{}",
        stderr(&out)
    );
}

// ------------------------------------------------- docs/ci.md and README

/// The `leakgate run` command lines shown in docs/ci.md and in the README's
/// "CI" section, found as `docs::` finds every command on the pages.
fn readme_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).unwrap();
    // The README's "## CI" section, as 1-based lines.
    let mut ci = 0..0;
    for (i, line) in readme.lines().enumerate() {
        if line.starts_with("## ") {
            if line == "## CI" {
                ci = i + 1..usize::MAX;
            } else if ci.end == usize::MAX {
                ci.end = i + 1;
            }
        }
    }
    crate::docs::shown_commands()
        .into_iter()
        .filter(|s| s.page == "docs/ci.md" || (s.page == "README.md" && ci.contains(&s.line)))
        .filter(|s| s.argv.get(1).is_some_and(|a| a == "run"))
        .map(|s| s.argv)
        .collect()
}

#[test]
fn readme_ci_examples_run() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let cmds = readme_commands();
    let record: Vec<&Vec<String>> = cmds
        .iter()
        .filter(|c| c.contains(&"--write-baseline".to_string()))
        .collect();
    let gate: Vec<&Vec<String>> = cmds
        .iter()
        .filter(|c| c.contains(&"--baseline".to_string()))
        .collect();
    assert!(
        !record.is_empty(),
        "a baseline-recording command: {cmds:#?}"
    );
    assert!(
        gate.len() >= 2,
        "a GitHub and a GitLab gate command: {cmds:#?}"
    );
    let tmp = common::tempdir();
    let ext = common::build_python_ext_with(&py, "cpython", tmp.path());
    let run = |cmd: &Vec<String>, env: &[(&str, &str)]| -> i32 {
        let dash = cmd
            .iter()
            .position(|a| a == "--")
            .expect("a -- before the command");
        let mut args: Vec<&str> = cmd[1..dash].iter().map(String::as_str).collect();
        args.extend(["--", py.to_str().unwrap(), "test.py"]);
        let out = lg(&ext, &args, env);
        eprintln!("{args:?}: {}", stderr(&out));
        code(&out)
    };
    for c in &record {
        assert_eq!(run(c, &[]), 0, "{c:?}");
    }
    for c in &gate {
        let summary = ext.join("summary.md");
        assert_eq!(
            run(
                c,
                &[
                    ("GITHUB_ACTIONS", "true"),
                    ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())
                ]
            ),
            0,
            "the recorded leaks are known: {c:?}"
        );
        for (i, a) in c.iter().enumerate() {
            if ["--sarif", "--junit", "--codequality", "--markdown"].contains(&a.as_str()) {
                let f = ext.join(&c[i + 1]);
                assert!(f.is_file(), "{a} wrote {}", f.display());
            }
        }
    }
}
