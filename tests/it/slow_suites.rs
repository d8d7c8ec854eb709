//! Suites that assume native speed (`tests/programs/deadlines/`): a
//! hypothesis profile with a 100 ms deadline loaded by the suite's
//! conftest, a test with its own `@settings(deadline=50)` and a
//! `@pytest.mark.timeout(1)` test, each doing a few milliseconds of pure
//! Python work natively: about a hundred times that under Memcheck. Under
//! `leakgate run` the plugin relaxes them (`LEAKGATE_TIMEOUT_FACTOR`,
//! `python/leakgate_probe/deadlines.py`), so the suite passes, keeps its
//! profile's other settings, and the report says so. hypothesis and
//! pytest-timeout come from the test Python, else from `pip install
//! --target` into the build's temporary directory (else the test skips).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A directory to put on `PYTHONPATH` for hypothesis and pytest-timeout
/// (`Some(None)`: `py` has them), or `None` after a skip.
fn deps(py: &Path) -> Option<Option<PathBuf>> {
    if common::python_can_import(py, "pytest, hypothesis, pytest_timeout") {
        return Some(None);
    }
    if !common::python_can_import(py, "pytest") {
        common::require_or_skip(&format!("{} cannot import pytest", py.display()));
        return None;
    }
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Named site-packages, as an install is: its objects are a library's.
    let site = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slow-suites/site-packages");
    let ok = |site: &Path| {
        Command::new(py)
            .args(["-c", "import hypothesis, pytest_timeout"])
            .env("PYTHONPATH", site)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok(&site) {
        let _ = std::fs::remove_dir_all(&site);
        let out = Command::new(py)
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
            .arg(&site)
            .args([
                "hypothesis",
                "sortedcontainers",
                "exceptiongroup",
                "pytest-timeout",
            ])
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_INPUT", "1")
            .output();
        if !out.as_ref().is_ok_and(|o| o.status.success()) || !ok(&site) {
            common::require_or_skip(&format!(
                "{} cannot import hypothesis and pytest_timeout, and pip install --target could not fetch them: {}",
                py.display(),
                out.map(|o| common::stderr(&o))
                    .unwrap_or_else(|e| e.to_string())
            ));
            return None;
        }
    }
    Some(Some(site))
}

/// The suite in a fresh directory, the test Python and the deps' path.
fn suite() -> Option<(tempfile::TempDir, PathBuf, Option<PathBuf>)> {
    let py = common::python()?;
    let site = deps(&py)?;
    let tmp = common::tempdir();
    for e in std::fs::read_dir(common::programs_dir().join("deadlines")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
    }
    Some((tmp, py, site))
}

/// `leakgate run --format json -o report.json ARGS -- PY -m pytest -q`:
/// exit code, report, pytest's output.
fn run(
    dir: &Path,
    py: &Path,
    site: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, String) {
    let mut c = Command::new(common::leakgate_bin());
    c.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("LEAKGATE_KEEP_DEADLINES")
        .env_remove("LEAKGATE_TIMEOUT_FACTOR")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--format", "json", "-o", "report.json"])
        .args(args)
        .arg("--")
        .arg(py)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "."]);
    match site {
        Some(s) => c.env("PYTHONPATH", s),
        None => c.env_remove("PYTHONPATH"),
    };
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run leakgate");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        common::stderr(&out)
    );
    let r: Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap_or_default())
            .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{text}"));
    (common::code(&out), r, text)
}

/// Under Valgrind the deadlines of hypothesis (the profile's and a test's
/// own) and pytest-timeout's timeout would fail every test (checked by
/// hand with `LEAKGATE_KEEP_DEADLINES=1`: 4 failed, `DeadlineExceeded`,
/// `Timeout (>1.0s)`); leakgate relaxes them and the suite passes with
/// its profile's 5 examples.
#[test]
fn deadlines_relaxed_under_valgrind() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some((tmp, py, site)) = suite() else {
        return;
    };
    let (code, r, text) = run(tmp.path(), &py, site.as_deref(), &[], &[]);
    assert_eq!(code, 0, "{text}\n{:#}", r["verdict"]);
    assert!(text.contains("4 passed"), "{text}");
    assert!(
        text.contains("leakgate: hypothesis runs without deadlines (profile 'leakgate' = 'suite' with deadline=None; 2 tests (1 with their own @settings)"),
        "{text}"
    );
    assert!(
        text.contains("leakgate: pytest-timeout's timeouts ×50"),
        "{text}"
    );
    let env = r["environment"].to_string();
    assert!(
        env.contains("LEAKGATE_TIMEOUT_FACTOR=50 (set by leakgate"),
        "{env}"
    );
}

/// `--engine lsan` relaxes them by its own factor; `LEAKGATE_KEEP_DEADLINES=1`
/// keeps them (the suite still passes at close to native speed).
#[test]
fn deadlines_under_lsan_and_kept() {
    if !crate::engines::liblsan() {
        return;
    }
    let Some((tmp, py, site)) = suite() else {
        return;
    };
    let lsan = ["--engine", "lsan"];
    let (code, r, text) = run(tmp.path(), &py, site.as_deref(), &lsan, &[]);
    assert_eq!(code, 0, "{text}\n{:#}", r["verdict"]);
    assert!(text.contains("4 passed"), "{text}");
    assert!(text.contains("pytest-timeout's timeouts ×10"), "{text}");
    let env = r["environment"].to_string();
    assert!(
        env.contains(
            "LEAKGATE_TIMEOUT_FACTOR=10 (set by leakgate: tests run slower under --engine lsan"
        ),
        "{env}"
    );

    let keep = [("LEAKGATE_KEEP_DEADLINES", "1")];
    let (code, r, text) = run(tmp.path(), &py, site.as_deref(), &lsan, &keep);
    assert_eq!(code, 0, "{text}\n{:#}", r["verdict"]);
    assert!(!text.contains("leakgate: hypothesis runs"), "{text}");
    let env = r["environment"].to_string();
    assert!(env.contains("LEAKGATE_KEEP_DEADLINES=1 (yours"), "{env}");
    assert!(!env.contains("LEAKGATE_TIMEOUT_FACTOR"), "{env}");
}
