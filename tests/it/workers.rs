//! `-n auto` under leakgate (pytest-xdist's syntax): the tests are collected
//! natively and the worker count chosen from them and the cores, one worker
//! per 6 test runs at most one per idle core, no workers for fewer than two; the
//! report's environment says what was chosen, and the run is the one that
//! count gives (every test checked once).

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A pytest file of `n` trivial tests.
fn suite(dir: &Path, n: usize) {
    std::fs::write(
        dir.join("test_many.py"),
        format!(
            "import pytest\n\n\n@pytest.mark.parametrize(\"i\", range({n}))\ndef test_many(i):\n    assert i >= 0\n"
        ),
    )
    .unwrap();
}

/// `leakgate run --format json -- PY -m pytest -q -p no:cacheprovider ARGS`
/// in `dir`: (exit code, report).
fn run(dir: &Path, py: &Path, args: &[&str]) -> (i32, Value) {
    let json = dir.join("report.json");
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTEST_ADDOPTS")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .arg("--")
        .arg(py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(args)
        .output()
        .expect("run leakgate");
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", common::show(&out)));
    (common::code(&out), report)
}

fn environment(r: &Value) -> Vec<String> {
    r["environment"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn python_with_xdist() -> Option<std::path::PathBuf> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let Some(py) = common::python() else {
        common::require_or_skip("no Python interpreter (set LEAKGATE_TEST_PYTHON)");
        return None;
    };
    if !common::python_can_import(&py, "pytest, xdist") {
        common::require_or_skip(&format!(
            "{} cannot import pytest and xdist (pytest-xdist)",
            py.display()
        ));
        return None;
    }
    Some(py)
}

fn cores() -> u64 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
}

#[test]
fn auto_picks_workers_from_tests_and_cores() {
    let Some(py) = python_with_xdist() else {
        return;
    };
    let tmp = common::tempdir();
    suite(tmp.path(), 12);
    let (code, r) = run(tmp.path(), &py, &["-n", "auto", "test_many.py"]);
    assert_eq!(code, 0, "{r:#}");
    // At most one worker per idle core: what other jobs keep busy at the
    // moment of the run is not known here, so the number is read back.
    let cores_text = if cores() == 1 {
        "1 core".to_string()
    } else {
        format!("{} cores", cores())
    };
    let env = environment(&r);
    let prefix = format!("-n auto: 12 tests, {cores_text}");
    let line = env
        .iter()
        .find(|e| e.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{prefix}\n{env:#?}"));
    let want: u64 = line
        .split("→ -n ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number chosen: {line}"));
    assert!(want == 0 || (2..=cores().min(2)).contains(&want), "{line}");
    assert!(line.contains("(set by leakgate"), "{line}");
    assert_eq!(r["per_test"]["tests"].as_array().unwrap().len(), 12);
    let cmd = r["valgrind_command"].as_array().unwrap();
    if want > 0 {
        // The controller runs natively; the workers under Valgrind.
        assert!(
            env.iter().any(|e| e.starts_with("LEAKGATE_XDIST_WORKERS=")),
            "{env:#?}"
        );
        assert!(
            cmd.iter().any(|a| a == "<each pytest-xdist worker>"),
            "{cmd:?}"
        );
    }
}

#[test]
fn auto_runs_a_small_selection_without_workers() {
    let Some(py) = python_with_xdist() else {
        return;
    };
    let tmp = common::tempdir();
    suite(tmp.path(), 12);
    // `--numprocesses=auto` with -k: 3 of 12 tests, no workers.
    let (code, r) = run(
        tmp.path(),
        &py,
        &[
            "--numprocesses=auto",
            "-k",
            "many[0] or many[1] or many[2]",
            "test_many.py",
        ],
    );
    assert_eq!(code, 0, "{r:#}");
    let env = environment(&r);
    assert!(
        env.iter()
            .any(|e| e.starts_with("--numprocesses=auto: 3 tests, ") && e.contains("→ -n 0")),
        "{env:#?}"
    );
    assert!(
        !env.iter().any(|e| e.starts_with("LEAKGATE_XDIST_WORKERS=")),
        "serial: {env:#?}"
    );
    let cmd: Vec<&str> = r["valgrind_command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(cmd.contains(&"--numprocesses=0"), "{cmd:?}");
    assert_eq!(r["per_test"]["tests"].as_array().unwrap().len(), 3);
}
