//! pytest-xdist's syntax under leakgate. `-n N` forks N workers from one
//! pytest under Valgrind after collection, and they report one session
//! (crash, `-x`, `--junitxml`, warnings, `worker_id`); `--dist loadfile`
//! keeps pytest-xdist's workers. `-n auto`: the tests are collected
//! natively and the worker count chosen from them and the cores, one worker
//! per 6 test runs at most one per idle core, no workers for fewer than two;
//! the report's environment says what was chosen, and the run is the one
//! that count gives (every test checked once). Without pytest-xdist in the
//! target's Python, `-n 2` still forks 2 workers (the option dropped), and
//! what needs pytest-xdist's own workers stops at once (exit 2). A
//! mistyped test path or a module that cannot be imported stops after the
//! native collection, in seconds, with pytest's own lines (exit 2).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

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
    let (code, report, _) = run_full(dir, py, args);
    (code, report)
}

/// [`run`], with the target's standard output too.
fn run_full(dir: &Path, py: &Path, args: &[&str]) -> (i32, Value, String) {
    let json = dir.join("report.json");
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTEST_ADDOPTS")
        .env_remove("LEAKGATE_FORK_WORKERS")
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
    (
        common::code(&out),
        report,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
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
        // One pytest under Valgrind, `-n 0`, forking the workers.
        let fork = format!("-n {want} → -n 0, LEAKGATE_FORK_WORKERS={want} (set by leakgate");
        assert!(env.iter().any(|e| e.starts_with(&fork)), "{env:#?}");
        assert!(cmd.iter().any(|a| a == "0"), "{cmd:?}");
        let forked = r["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["forked"] == true)
            .count();
        assert_eq!(forked as u64, want, "{:#}", r["processes"]);
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

/// `--dist loadfile` (tests that must share a worker) keeps pytest-xdist's
/// workers, each under Valgrind with the controller native, and says so.
#[test]
fn grouped_tests_keep_pytest_xdist_workers() {
    let Some(py) = python_with_xdist() else {
        return;
    };
    let tmp = common::tempdir();
    suite(tmp.path(), 12);
    let (code, r) = run(
        tmp.path(),
        &py,
        &["-n", "2", "--dist", "loadfile", "test_many.py"],
    );
    assert_eq!(code, 0, "{r:#}");
    let env = environment(&r);
    assert!(
        env.iter()
            .any(|e| e
                == "-n 2: pytest-xdist's workers, each started under Valgrind (--dist loadfile)"),
        "{env:#?}"
    );
    assert!(
        env.iter().any(|e| e.starts_with("LEAKGATE_XDIST_WORKERS=")),
        "{env:#?}"
    );
    assert_eq!(r["per_test"]["tests"].as_array().unwrap().len(), 12);
}

/// Forked workers under `-n 2` report one session: a worker that crashes
/// fails its test (the other worker's tests run on), pytest's own
/// `--junitxml` lists every test once, a worker is `gw0`/`gw1` to the
/// suite's `worker_id`, and `-x` stops every worker.
#[test]
fn forked_workers_report_one_session() {
    let Some(py) = python_with_xdist() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = tmp.path();
    std::fs::write(
        dir.join("test_session.py"),
        "import ctypes\nimport warnings\n\n\n\
         def test_0(worker_id):\n    open(f\"id-{worker_id}\", \"w\").close()\n\n\n\
         def test_1(worker_id):\n    open(f\"id-{worker_id}\", \"w\").close()\n\n\n\
         def test_2():\n    assert 1 == 2\n\n\n\
         def test_3():\n    ctypes.string_at(0)\n\n\n\
         def test_4():\n    warnings.warn(\"careful\", UserWarning)\n\n\n\
         def test_5():\n    pass\n",
    )
    .unwrap();
    let (code, r, stdout) = run_full(
        dir,
        &py,
        &["-n", "2", "--junitxml=junit.xml", "test_session.py"],
    );
    // The target failed (a failed test): exit 4, with no finding of yours.
    assert_eq!(code, 4, "{stdout}\n{:#}", r["verdict"]);
    // Each worker is a pytest-xdist worker to the suite: gw0, gw1.
    assert!(dir.join("id-gw0").exists() && dir.join("id-gw1").exists());
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    // Worker 2 had tests 1, 3 and 5 and crashed in test 3.
    for t in ["test_0", "test_1", "test_2", "test_3", "test_4"] {
        assert_eq!(
            junit.matches(&format!("name=\"{t}\"")).count(),
            1,
            "{t}: {junit}"
        );
    }
    assert!(!junit.contains("name=\"test_5\""), "{junit}");
    assert!(
        junit.contains("ended (signal SIGSEGV) while running this test"),
        "{junit}"
    );
    assert!(junit.contains("failures=\"2\""), "{junit}");
    assert!(
        stdout.contains("in test_session.py::test_3; 1 of its tests did not run"),
        "{stdout}"
    );
    assert!(stdout.contains("careful"), "the warning: {stdout}");
    let ended: Vec<String> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["ended"].to_string())
        .collect();
    assert_eq!(ended.len(), 3, "{ended:?}");

    // -x: test_0 fails at once; worker 2 stops after the test it is in.
    std::fs::write(
        dir.join("test_stop.py"),
        "import time\n\nimport pytest\n\n\n\
         def test_fails():\n    assert False\n\n\n\
         @pytest.mark.parametrize(\"i\", range(7))\n\
         def test_slow(i):\n    time.sleep(0.5)\n",
    )
    .unwrap();
    let (code, r, stdout) = run_full(dir, &py, &["-n", "2", "-x", "test_stop.py"]);
    assert_eq!(code, 4, "{stdout}\n{:#}", r["verdict"]);
    assert!(stdout.contains("stopping after 1 failures"), "{stdout}");
    let ran = r["per_test"]["tests"].as_array().unwrap().len();
    assert!(ran < 8, "every test ran despite -x: {stdout}");
}

/// `leakgate run ARGS -- PY -m pytest -q -p no:cacheprovider PYTEST` in
/// `dir` that must stop before anything runs: its standard error, after
/// checking exit 2, that it took seconds and that no report was written.
fn refused(dir: &Path, args: &[&str], py: &Path, pytest: &[&str]) -> String {
    let json = dir.join("refused.json");
    let started = Instant::now();
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTEST_ADDOPTS")
        .env_remove("LEAKGATE_FORK_WORKERS")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .args(args)
        .arg("--")
        .arg(py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(pytest)
        .output()
        .expect("run leakgate");
    assert_eq!(common::code(&out), 2, "{pytest:?}: {}", common::show(&out));
    // Valgrind's start-up of Python alone takes longer.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{pytest:?}: {:?}",
        started.elapsed()
    );
    assert!(!json.exists(), "{pytest:?}: a report was written");
    let err = common::stderr(&out);
    assert_eq!(
        err.matches("leakgate: error:").count(),
        1,
        "{pytest:?}: {err}"
    );
    err
}

/// Without pytest-xdist in the target's Python, `-n 2` under Valgrind
/// forks 2 workers all the same (the option dropped, not rewritten to an
/// `-n 0` pytest cannot read); what needs pytest-xdist's own workers
/// (`--dist loadfile`; `-n` under `--engine lsan`) stops before anything
/// starts, in one line.
#[test]
fn without_pytest_xdist_workers_are_forked_or_refused() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python() else {
        common::require_or_skip("no Python interpreter (set LEAKGATE_TEST_PYTHON)");
        return;
    };
    let tmp = common::tempdir();
    let dir = tmp.path();
    let Some(vpy) = common::python_without(&py, &dir.join("venv"), &["xdist", "pytest_xdist"])
    else {
        return;
    };
    assert!(!common::python_can_import(&vpy, "xdist"));
    assert!(common::python_can_import(&vpy, "pytest"));
    suite(dir, 6);
    let (code, r, stdout) = run_full(dir, &vpy, &["-n", "2", "test_many.py"]);
    assert_eq!(code, 0, "{stdout}\n{:#}", r["verdict"]);
    let env = environment(&r);
    assert!(
        env.iter().any(|e| e.starts_with(
            "-n 2 → LEAKGATE_FORK_WORKERS=2, -n dropped (set by leakgate: pytest-xdist is not installed"
        )),
        "{env:#?}"
    );
    let cmd: Vec<&str> = r["valgrind_command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(!cmd.contains(&"-n"), "{cmd:?}");
    let forked = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["forked"] == true)
        .count();
    assert_eq!(forked, 2, "{:#}", r["processes"]);
    assert_eq!(r["per_test"]["tests"].as_array().unwrap().len(), 6);

    for (engine, args, why) in [
        (
            "valgrind",
            &["-n", "2", "--dist", "loadfile"][..],
            "--dist loadfile keeps pytest-xdist's workers",
        ),
        ("lsan", &["-n", "2"][..], "under --engine lsan its workers"),
    ] {
        let mut pytest = args.to_vec();
        pytest.push("test_many.py");
        let err = refused(dir, &["--engine", engine], &vpy, &pytest);
        assert!(
            err.contains(&format!("-n 2 needs pytest-xdist here ({why}")),
            "{err}"
        );
        assert!(err.contains("pip install pytest-xdist"), "{err}");
    }
}

/// A mistyped test path, a test module that cannot be imported, and an
/// option pytest does not know stop after the native collection, in
/// seconds and before Valgrind starts, with pytest's own lines: exit 2.
#[test]
fn collection_errors_stop_before_valgrind() {
    let Some(py) = python_with_xdist() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = tmp.path();
    suite(dir, 2);
    std::fs::write(dir.join("test_broken.py"), "import no_such_module_here\n").unwrap();
    for (pytest, said) in [
        (
            &["test_mny.py"][..],
            "ERROR: file or directory not found: test_mny.py",
        ),
        (
            &["-n", "auto", "test_mny.py"][..],
            "ERROR: file or directory not found: test_mny.py",
        ),
        (
            &["test_many.py", "test_broken.py"][..],
            "No module named 'no_such_module_here'",
        ),
        (
            &["--no-such-option", "test_many.py"][..],
            "unrecognized arguments: --no-such-option",
        ),
    ] {
        let err = refused(dir, &[], &py, pytest);
        assert!(
            err.contains("pytest stopped while collecting the tests (a native `--collect-only`"),
            "{err}"
        );
        assert!(err.contains(said), "{pytest:?}: {err}");
    }
}
