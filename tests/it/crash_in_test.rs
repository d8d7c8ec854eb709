//! A crash inside a pytest test names the test: the probe records the test
//! each process is running (`LEAKGATE_RUNNING_DIR`), and a process that
//! ends inside one gets it in the verdict's reason ("the target was killed
//! by SIGABRT in test …"), the report's `target_running_test`, its
//! process' `running_test`, its crash finding's `tests` and the JUnit
//! testcase, under Valgrind and under `--engine lsan`.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const TEST: &str = "test_crash.py::test_abort";

/// `leakgate run ENGINE_ARGS --junit junit.xml -- PY -m pytest -q … test_crash.py`
/// in `dir`: (exit code, report, standard error).
fn run(dir: &Path, py: &Path, engine: &[&str]) -> (i32, Value, String) {
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTEST_ADDOPTS")
        .env_remove("PYTHONPATH")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .args(["--junit", "junit.xml"])
        .args(engine)
        .arg("--")
        .arg(py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_crash.py",
        ])
        .output()
        .expect("run leakgate");
    let r = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", common::show(&out)));
    (common::code(&out), r, common::stderr(&out))
}

/// The crash is named, in every place that says it, after the test whose
/// start was recorded and whose end never came.
fn assert_named(dir: &Path, r: &Value, engine: &str) {
    assert_eq!(r["target_exit"]["signal"], "SIGABRT", "{engine}: {r:#}");
    assert_eq!(r["target_running_test"], TEST, "{engine}");
    let want = format!("the target was killed by SIGABRT in test {TEST}");
    let reasons = common::reasons(r);
    assert!(reasons.contains(&want), "{engine}: {reasons:#?}");
    let named: Vec<&Value> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["running_test"] == TEST)
        .collect();
    assert_eq!(named.len(), 1, "{engine}: {:#}", r["processes"]);
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains(&want), "{engine}: {junit}");
}

#[test]
fn a_crash_names_the_test_it_was_in() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    if !common::python_can_import(&py, "pytest") {
        common::require_or_skip(&format!("{} cannot import pytest", py.display()));
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    std::fs::write(
        dir.join("test_crash.py"),
        "import os\n\n\ndef test_ok():\n    pass\n\n\n\
         def test_abort():\n    os.abort()\n\n\n\
         def test_after():\n    pass\n",
    )
    .unwrap();
    let (code, r, err) = run(dir, &py, &[]);
    // The crash is in the interpreter's abort(), not your code: exit 4.
    assert_eq!(code, 4, "{err}\n{:#}", r["verdict"]);
    assert_named(dir, &r, "valgrind");
    // Valgrind's crash record: its share is the test's, not "after the
    // last checkpoint".
    let crash = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "FatalSignal")
        .unwrap_or_else(|| panic!("no FatalSignal finding: {:#}", r["findings"]));
    let tests: Vec<&str> = crash["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["test"].as_str().unwrap())
        .collect();
    assert_eq!(tests, [TEST], "{crash:#}");

    let (code, r, err) = run(dir, &py, &["--engine", "lsan"]);
    if err.contains("runtime was not found") {
        common::require_or_skip("no liblsan (Debian: liblsan0)");
        return;
    }
    // The sanitizer's exit check did not run: incomplete, exit 3.
    assert_eq!(code, 3, "{err}\n{:#}", r["verdict"]);
    assert_named(dir, &r, "lsan");
}
