//! Integration tests of per-test leaks: a pytest suite over the CPython test
//! extension (`tests/programs/pytest/` next to a build of
//! `tests/programs/cpython/`) run through `leakgate run -- python -m pytest`
//! under real Valgrind, with and without `--repeat`; the same suite under
//! plain python (the probe is a no-op there); a C program taking
//! checkpoints through `leakgate_probe.h`; and the recorded XML of that
//! program through `leakgate analyze`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The pytest suite's files copied next to a fresh build of the extension.
fn suite_dir(py: &Path, tmp: &Path) -> PathBuf {
    let dir = common::build_python_ext_with(py, "cpython", tmp);
    for e in std::fs::read_dir(common::programs_dir().join("pytest")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    dir
}

fn has_pytest(py: &Path) -> bool {
    has_module(py, "pytest")
}

fn pytest_python_or_skip() -> Option<PathBuf> {
    let py = common::python_or_skip()?;
    if !has_pytest(&py) {
        common::require_or_skip(&format!("{} cannot import pytest", py.display()));
        return None;
    }
    Some(py)
}

/// Valgrind and a python with pytest (else a skip), and the suite's files
/// next to a fresh build of the extension in a temporary directory (kept
/// while the second value lives).
pub(crate) fn live_suite() -> Option<(PathBuf, tempfile::TempDir, PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = pytest_python_or_skip()?;
    let tmp = common::tempdir();
    let dir = suite_dir(&py, tmp.path());
    Some((py, tmp, dir))
}

pub(crate) fn leakgate_json(dir: &Path, args: &[&str], cmd: &[&str]) -> (i32, Value, String) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("PYTHONPATH")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .args(args)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let bytes = std::fs::read(&json).unwrap_or_default();
    let r: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout:\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().expect("exit code"), r, stderr)
}

/// The user finding of `kind` in `function`.
fn finding<'a>(r: &'a Value, kind: &str, function: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["category"] == "user" && f["kind"] == kind && f["location"]["function"] == function
        })
        .unwrap_or_else(|| panic!("no user {kind} in {function}: {:#}", r["findings"]))
}

/// `tests` of a finding as (test, bytes, blocks).
fn shares(f: &Value) -> Vec<(String, u64, u64)> {
    f["tests"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t["test"].as_str().unwrap().to_string(),
                        t["bytes"].as_u64().unwrap(),
                        t["blocks"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn reps(f: &Value, test: &str) -> Vec<u64> {
    f["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == test)
        .unwrap_or_else(|| panic!("{test} not in {:#}", f["tests"]))["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["bytes"].as_u64().unwrap())
        .collect()
}

/// Every user leak's per-test shares add up to its bytes.
fn assert_shares_add_up(r: &Value) {
    for f in r["findings"].as_array().unwrap() {
        if f["category"] != "user" || f["tests"].is_null() {
            continue;
        }
        let sum: u64 = shares(f).iter().map(|s| s.1).sum();
        assert_eq!(Some(sum), f["bytes"].as_u64(), "{f:#}");
    }
}

const SUITE: &str = "test_suite.py::";

/// `PYTHON -m pytest -q -p no:cacheprovider FILES...`.
pub(crate) fn pytest_cmd<'a>(py: &'a str, files: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![py, "-m", "pytest", "-q", "-p", "no:cacheprovider"];
    v.extend(files);
    v
}

#[test]
fn pytest_suite_leaks_are_tied_to_their_tests() {
    let Some((py, _tmp, dir)) = live_suite() else {
        return;
    };
    let pyv = py.to_str().unwrap();
    let pytest = pytest_cmd(pyv, &["test_suite.py", "test_grow.py"]);
    let src = dir.join("leakext.c");
    let line = |m: &str| common::marker_line(&src, m);

    // 1. One run of each test.
    let (code, r, stderr) = leakgate_json(&dir, &["--junit", "junit.xml"], &pytest);
    assert_eq!(code, 1, "{stderr}\n{:#}", r["verdict"]);
    let env = r["environment"].to_string();
    assert!(
        env.contains("PYTEST_PLUGINS=leakgate_probe.autoload"),
        "{env}"
    );
    let pt = &r["per_test"];
    let tests: Vec<&str> = pt["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tests,
        [
            "test_suite.py::test_leaks_per_call",
            "test_suite.py::test_fills_cache",
            "test_suite.py::test_clean",
            "test_suite.py::test_param[0]",
            "test_suite.py::test_param[1]",
            "test_suite.py::test_param[2]",
            "test_grow.py::test_grows_registry",
        ]
    );
    let per_call = finding(&r, "Leak_DefinitelyLost", "leak_malloc");
    assert_eq!(
        per_call["location"]["line"].as_u64(),
        Some(line("@py_malloc").into())
    );
    assert_eq!(
        shares(per_call),
        [(format!("{SUITE}test_leaks_per_call"), 48, 1)]
    );
    assert_eq!(per_call["growth"], "unknown");
    let param = finding(&r, "Leak_DefinitelyLost", "error_path_leak");
    assert_eq!(shares(param), [(format!("{SUITE}test_param[1]"), 40, 1)]);
    let cache = finding(&r, "Leak_StillReachable", "fill_cache");
    assert_eq!(
        shares(cache),
        [(format!("{SUITE}test_fills_cache"), 256, 1)]
    );
    // No user finding grew in the clean tests.
    for f in r["findings"].as_array().unwrap() {
        for (t, _, _) in shares(f) {
            if f["category"] == "user" {
                assert!(
                    !t.ends_with("test_clean") && !t.ends_with("[0]") && !t.ends_with("[2]"),
                    "{f:#}"
                );
            }
        }
    }
    assert_shares_add_up(&r);
    // Reachable blocks were shown to follow them, but not as noise.
    assert_eq!(
        r["summary"]["noise"]["by_kind"]["Leak_StillReachable"],
        Value::Null
    );
    assert!(pt["hidden_reachable"].as_u64().unwrap() > 0);
    // JUnit: one testcase per leaking test, named as pytest names it.
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"name="test_leaks_per_call" classname="test_suite""#),
        "{junit}"
    );
    assert!(
        junit.contains(r#"name="test_param[1]" classname="test_suite""#),
        "{junit}"
    );
    assert!(!junit.contains(r#"name="test_clean""#), "{junit}");

    // 2. --repeat 3: per-call leaks grow at every repetition, the cache once.
    let (code, r3, stderr) =
        leakgate_json(&dir, &["--repeat", "3", "--junit", "junit3.xml"], &pytest);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(r3["per_test"]["repeat"], 3);
    let per_call = finding(&r3, "Leak_DefinitelyLost", "leak_malloc");
    assert_eq!(per_call["growth"], "per_call", "{per_call:#}");
    assert_eq!(per_call["per_call"]["bytes"], 48);
    assert_eq!(per_call["per_call"]["blocks"], 1);
    assert_eq!(
        reps(per_call, &format!("{SUITE}test_leaks_per_call")),
        [48, 48, 48]
    );
    assert_eq!(per_call["bytes"], 144);
    let param = finding(&r3, "Leak_DefinitelyLost", "error_path_leak");
    assert_eq!(param["growth"], "per_call");
    assert_eq!(reps(param, &format!("{SUITE}test_param[1]")), [40, 40, 40]);
    let cache = finding(&r3, "Leak_StillReachable", "fill_cache");
    assert_eq!(cache["growth"], "one_time", "{cache:#}");
    assert_eq!(
        reps(cache, &format!("{SUITE}test_fills_cache")),
        [256, 0, 0]
    );
    assert_eq!(cache["gated"], false);
    // A reachable container that grows at every call is gated.
    let registry = finding(&r3, "Leak_StillReachable", "grow_registry");
    assert_eq!(registry["growth"], "per_call");
    assert_eq!(registry["per_call"]["bytes"], 32);
    assert_eq!(registry["gated"], true);
    assert_shares_add_up(&r3);

    // 3. The totals are those of a plain run of the same suite.
    let (code, plain, stderr) = leakgate_json(&dir, &["--no-per-test"], &pytest);
    assert_eq!(code, 1, "{stderr}");
    assert!(plain["per_test"].is_null());
    for kind in ["definitely_lost", "indirectly_lost"] {
        assert_eq!(
            plain["summary"]["user"][kind], r["summary"]["user"][kind],
            "{kind}"
        );
    }
    let f = finding(&plain, "Leak_DefinitelyLost", "leak_malloc");
    assert_eq!(f["bytes"], 48);
    assert!(f["tests"].is_null());

    // 4. Two shards (CI jobs), merged: the unsharded run's results.
    let shard = |name: &str, files: &[&str], k: &str| {
        let mut cmd = pytest_cmd(pyv, files);
        cmd.extend(["-k", k]);
        let (code, _, stderr) = leakgate_json(&dir, &[], &cmd);
        assert_eq!(code, 1, "{stderr}");
        std::fs::copy(dir.join("leakgate-report.json"), dir.join(name)).unwrap();
    };
    shard("shard1.json", &["test_suite.py"], "not param");
    shard(
        "shard2.json",
        &["test_suite.py", "test_grow.py"],
        "param or grows",
    );
    let out = Command::new(common::leakgate_bin())
        .current_dir(&dir)
        .args(["merge", "--format", "json", "-o", "merged.json"])
        .args(["--junit", "junit-merged.xml", "shard1.json", "shard2.json"])
        .output()
        .unwrap();
    let merged: Value =
        serde_json::from_slice(&std::fs::read(dir.join("merged.json")).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(1), "{:#}", merged["verdict"]);
    assert_eq!(merged["per_test"]["tests"], r["per_test"]["tests"]);
    assert_eq!(user_view(&merged), user_view(&r));
    assert_eq!(merged["verdict"], r["verdict"]);
    assert_eq!(
        junit_cases(&dir, "junit-merged.xml"),
        junit_cases(&dir, "junit.xml")
    );

    // 5. `-n 2`: two workers forked from one pytest under Valgrind after
    // collection give the per-test results, growth and JUnit report of the
    // serial run.
    if !has_module(&py, "xdist") {
        common::require_or_skip(&format!(
            "{} cannot import xdist (pytest-xdist)",
            py.display()
        ));
        return;
    }
    let mut xdist = pytest.clone();
    xdist.extend(["-n", "2"]);
    let (code, rx, stderr) =
        leakgate_json(&dir, &["--repeat", "3", "--junit", "junitx.xml"], &xdist);
    assert_eq!(code, 1, "{stderr}\n{:#}", rx["verdict"]);
    // pytest ran under Valgrind with `-n 0`, and forked the two workers.
    assert!(
        rx["environment"]
            .to_string()
            .contains("LEAKGATE_FORK_WORKERS=2"),
        "{}",
        rx["environment"]
    );
    let forked = rx["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["forked"] == true)
        .count();
    assert_eq!(forked, 2, "two workers: {:#}", rx["processes"]);
    assert_eq!(rx["per_test"]["tests"], r3["per_test"]["tests"]);
    assert_eq!(user_view(&rx), user_view(&r3));
    assert_eq!(rx["verdict"], r3["verdict"]);
    // The same testcases and failures (stacks below the user's frames
    // differ: a worker calls tests through more interpreter frames).
    assert_eq!(
        junit_cases(&dir, "junitx.xml"),
        junit_cases(&dir, "junit3.xml")
    );
}

/// `--origins auto` runs without `--track-origins=yes`, re-runs only the
/// test whose uninitialised value is the user's, and reports what a
/// `--origins yes` run reports; without per-test checkpoints it re-runs the
/// whole command.
#[test]
fn origins_auto_reruns_only_the_tests_that_need_them() {
    let Some((py, _tmp, dir)) = live_suite() else {
        return;
    };
    let pyv = py.to_str().unwrap();
    let pytest = pytest_cmd(pyv, &["uninit_suite.py"]);
    let (code, auto, stderr) = leakgate_json(&dir, &["--origins", "auto"], &pytest);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        !auto["valgrind_command"]
            .to_string()
            .contains("--track-origins"),
        "{}",
        auto["valgrind_command"]
    );
    let o = &auto["origins"];
    assert_eq!(o["wanted"], 1, "{o:#}");
    assert_eq!(o["found"], 1, "{o:#}");
    assert_eq!(o["rerun"]["scope"], "tests");
    assert_eq!(
        o["rerun"]["tests"],
        serde_json::json!(["uninit_suite.py::test_uninit"])
    );
    let uninit = finding(&auto, "UninitCondition", "uninit_branch");
    let src = dir.join("leakext.c");
    let alloc = uninit["origin"]
        .as_array()
        .and_then(|o| o.iter().find(|f| f["function"] == "uninit_branch"));
    assert_eq!(
        alloc.and_then(|f| f["line"].as_u64()),
        Some(common::marker_line(&src, "@py_uninit_alloc").into()),
        "{uninit:#}"
    );
    let (code, yes, stderr) = leakgate_json(&dir, &[], &pytest);
    assert_eq!(code, 1, "{stderr}");
    assert!(yes["origins"].is_null());
    assert_eq!(user_view(&auto), user_view(&yes));
    assert_eq!(auto["verdict"], yes["verdict"]);

    // No checkpoints to choose tests by: the whole command again.
    let (code, whole, stderr) = leakgate_json(
        &dir,
        &["--origins", "auto", "--no-per-test"],
        &[pyv, "-c", "import leakext; leakext.uninit_branch()"],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(whole["origins"]["rerun"]["scope"], "command");
    assert_eq!(whole["origins"]["found"], 1);
    let uninit = finding(&whole, "UninitCondition", "uninit_branch");
    assert!(uninit["origin"].is_array(), "{uninit:#}");
}

/// A JUnit report's suites, testcases and failure messages (the stacks
/// in the failures' text differ between runs below the user's frames: an
/// xdist worker calls tests through more interpreter frames).
pub(crate) fn junit_cases(dir: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| {
            ["<testsuite", "<testcase", "<failure"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| l.split('>').next().unwrap_or(l).to_string())
        .collect()
}

fn has_module(py: &Path, module: &str) -> bool {
    Command::new(py)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What a user sees of their findings, without run-specific details (pids,
/// record counts): kind, place, bytes, gate, tests and growth.
pub(crate) fn user_view(r: &Value) -> Vec<String> {
    let mut v: Vec<String> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            serde_json::json!({
                "kind": f["kind"], "location": f["location"], "bytes": f["bytes"],
                "blocks": f["blocks"], "count": f["count"], "gated": f["gated"],
                "tests": f["tests"], "growth": f["growth"], "per_call": f["per_call"],
                "origin": f["origin"],
            })
            .to_string()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn pytest_outcomes_skip_fail_x_k() {
    let Some((py, _tmp, dir)) = live_suite() else {
        return;
    };
    let (code, r, stderr) = leakgate_json(
        &dir,
        &["--repeat", "2"],
        &[
            py.to_str().unwrap(),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            "-k",
            "not never",
            "outcomes_check.py",
        ],
    );
    // The gate fails (1) before the failed target (4) counts.
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(r["target_exit"]["code"], 1);
    let tests: Vec<&str> = r["per_test"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tests,
        [
            "outcomes_check.py::test_skipped",
            "outcomes_check.py::test_reads_past_end",
            "outcomes_check.py::test_leaks_then_fails"
        ]
    );
    // A memory error belongs to the test it first occurred in.
    let err = finding(&r, "InvalidRead", "read_past_end");
    let t = &err["tests"];
    assert_eq!(t.as_array().unwrap().len(), 1, "{err:#}");
    assert_eq!(t[0]["test"], "outcomes_check.py::test_reads_past_end");
    assert_eq!(t[0]["errors"], 1);
    assert_eq!(err["count"], 2, "both repetitions: {err:#}");
    let f = finding(&r, "Leak_DefinitelyLost", "leak_malloc");
    // -x stopped the repetitions after the failure: one run, one block.
    assert_eq!(
        shares(f),
        [(
            "outcomes_check.py::test_leaks_then_fails".to_string(),
            48,
            1
        )]
    );
    assert_eq!(f["bytes"], 48);
}

#[test]
fn python_service_checkpoints() {
    let Some((py, _tmp, dir)) = live_suite() else {
        return;
    };
    let (code, r, stderr) =
        leakgate_json(&dir, &["--per-test"], &[py.to_str().unwrap(), "service.py"]);
    assert_eq!(code, 1, "{stderr}");
    let leak = finding(&r, "Leak_DefinitelyLost", "leak_malloc");
    assert_eq!(leak["growth"], "per_call", "{leak:#}");
    assert_eq!(leak["per_call"]["bytes"], 48);
    let expect: Vec<(String, u64, u64)> =
        (1..=4).map(|i| (format!("request {i}"), 48, 1)).collect();
    assert_eq!(shares(leak), expect);
    let cache = finding(&r, "Leak_StillReachable", "fill_cache");
    assert_eq!(cache["growth"], "one_time", "{cache:#}");
    assert_eq!(shares(cache), [("request 1".to_string(), 256, 1)]);
}

#[test]
fn pytest_suite_passes_under_plain_python() {
    let Some(py) = pytest_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = suite_dir(&py, tmp.path());
    let probe = common::repo_root().join("python");
    let out = Command::new(&py)
        .current_dir(&dir)
        .env("PYTHONPATH", &probe)
        .env("PYTEST_PLUGINS", "leakgate_probe.autoload")
        .env("LEAKGATE_REPEAT", "2")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Without Valgrind the plugin does nothing: every test ran once.
    assert!(stdout.contains("7 passed"), "{stdout}");
    // An installed leakgate_probe registers the plugin through its pytest11
    // entry point; leakgate's autoload then leaves it alone (pytest would
    // refuse the same module under a second name).
    let site = tmp.path().join("site");
    let dist = site.join("leakgate_probe-1.dist-info");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.1\nName: leakgate-probe\nVersion: 1\n",
    )
    .unwrap();
    std::fs::write(
        dist.join("entry_points.txt"),
        "[pytest11]\nleakgate = leakgate_probe.pytest_plugin\n",
    )
    .unwrap();
    let both = std::env::join_paths([probe.clone(), site.clone()]).unwrap();
    let out = Command::new(&py)
        .current_dir(&dir)
        .env("PYTHONPATH", &both)
        .env("PYTEST_PLUGINS", "leakgate_probe.autoload")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--trace-config",
        ])
        .arg("test_grow.py")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
    // Registered once, by the entry point (before autoload ran).
    let plugin = "PLUGIN registered: <module 'leakgate_probe.pytest_plugin'";
    let autoload = "PLUGIN registered: <module 'leakgate_probe.autoload'";
    assert_eq!(stdout.matches(plugin).count(), 1, "{stdout}");
    assert!(
        stdout.find(plugin) < stdout.find(autoload),
        "entry point not loaded first: {stdout}"
    );
    let out = Command::new(&py)
        .env("PYTHONPATH", &probe)
        .args([
            "-c",
            "import leakgate_probe as p; assert p.running_on_valgrind() == 0; \
             assert p.checkpoint('x') is False; print(p.marker_text('a<b>&%', kind='test'))",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with(
            r#"leakgate-checkpoint {"v":1,"kind":"test","label":"a\u003cb\u003e\u0026\u0025"}"#
        ),
        "{stdout}"
    );
}

/// Builds `tests/programs/pytest/checkpoints.c` against the probe header.
fn build_checkpoints(out: &Path) -> PathBuf {
    std::fs::copy(
        common::programs_dir().join("pytest/checkpoints.c"),
        out.join("checkpoints.c"),
    )
    .unwrap();
    let exe = out.join("checkpoints");
    let st = Command::new("gcc")
        .current_dir(out)
        .args(["-g", "-O0", "-I"])
        .arg(common::repo_root().join("python/leakgate_probe"))
        .arg("-o")
        .arg(&exe)
        .arg("checkpoints.c")
        .status()
        .expect("gcc");
    assert!(st.success());
    exe
}

fn assert_c_checkpoints(r: &Value, src: &Path) {
    let leak = finding(r, "Leak_DefinitelyLost", "handle");
    assert_eq!(
        leak["location"]["line"].as_u64(),
        Some(common::marker_line(src, "@c_request_leak").into())
    );
    assert_eq!(leak["growth"], "per_call", "{leak:#}");
    assert_eq!(leak["per_call"]["bytes"], 24);
    let expect: Vec<(String, u64, u64)> =
        (1..=5).map(|i| (format!("request {i}"), 24, 1)).collect();
    assert_eq!(shares(leak), expect);
    let cache = finding(r, "Leak_StillReachable", "handle");
    assert_eq!(cache["growth"], "one_time", "{cache:#}");
    assert_eq!(shares(cache), [("request 1".to_string(), 100, 1)]);
    assert_eq!(r["per_test"]["checkpoints"], 6);
}

#[test]
fn c_program_checkpoints_through_the_header() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = build_checkpoints(tmp.path());
    // Natively the checkpoints are no-ops.
    assert!(Command::new(&exe).status().unwrap().success());
    let (code, r, stderr) = leakgate_json(tmp.path(), &["--per-test"], &["./checkpoints"]);
    assert_eq!(code, 1, "{stderr}");
    assert_c_checkpoints(&r, &tmp.path().join("checkpoints.c"));
}

#[test]
fn recorded_checkpoints_fixture() {
    let xml = common::repo_root().join("fixtures/checkpoints/checkpoints.xml");
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--format", "json"])
        .arg(&xml)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_c_checkpoints(&r, &common::programs_dir().join("pytest/checkpoints.c"));
    // Read in small chunks, in parallel: the same report.
    for chunk in ["2000", "7000"] {
        let chunked = Command::new(common::leakgate_bin())
            .args(["analyze", "--format", "json"])
            .arg(&xml)
            .env("LEAKGATE_CHUNK_BYTES", chunk)
            .env("LEAKGATE_THREADS", "2")
            .output()
            .unwrap();
        assert_eq!(chunked.stdout, out.stdout, "chunks of {chunk} bytes");
    }
}

#[test]
fn repeat_needs_a_pytest_target() {
    let out = Command::new(common::leakgate_bin())
        .args(["run", "--repeat", "3", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--repeat 3 needs per-test"));
}
