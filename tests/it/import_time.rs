//! Integration tests of leaks made once at import
//! (`tests/programs/import_time/`): an extension that heap-allocates its
//! module definition and slot array in `PyInit_impext` and keeps one
//! reference too many on `__version__` in its exec slot. Each leaks once per
//! interpreter that imports the module: the findings are in their own group
//! ("made once at import") in every output and the default gate passes;
//! `--fail-on ...,import` gates them. A leak on an error path called once
//! at run time stays gated, and under pytest with `--per-test` what
//! collection allocated (before the first test) joins the import group.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn ext_or_skip(tmp: &Path) -> Option<(PathBuf, PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = common::python_or_skip()?;
    let dir = common::build_python_ext_with(&py, "import_time", tmp);
    Some((py, dir))
}

/// `leakgate run --format json -o report.json FLAGS -- python ARGS` in
/// `dir`: exit code, report, text (stderr and stdout).
fn run(py: &Path, dir: &Path, flags: &[&str], args: &[&str]) -> (i32, Value, String) {
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let mut cmd = Command::new(common::leakgate_bin());
    cmd.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("PYTHONPATH")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .args(flags)
        .arg("--")
        .arg(py)
        .args(args);
    let out = common::run_capture(&mut cmd, "leakgate run");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}", common::show(&out)));
    common::assert_conserved(&r);
    (common::code(&out), r, common::show(&out))
}

/// The user's findings as (line, at_import, gated), sorted.
fn user(r: &Value) -> Vec<(u64, bool, bool)> {
    let mut v: Vec<_> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            (
                f["location"]["line"].as_u64().unwrap_or(0),
                f["at_import"] == true,
                f["gated"] == true,
            )
        })
        .collect();
    v.sort();
    v
}

fn line(dir: &Path, marker: &str) -> u64 {
    u64::from(common::marker_line(&dir.join("impext.c"), marker))
}

#[test]
fn import_time_leaks_are_their_own_group_and_not_gated_by_default() {
    let tmp = common::tempdir();
    let Some((py, dir)) = ext_or_skip(tmp.path()) else {
        return;
    };
    let (def, slots, version, once) = (
        line(&dir, "@import_def"),
        line(&dir, "@import_slots"),
        line(&dir, "@import_version"),
        line(&dir, "@fail_once"),
    );
    let mut at_import = vec![
        (def, true, false),
        (slots, true, false),
        (version, true, false),
    ];
    at_import.sort();

    // Import only: a pass, in every output.
    let outputs = [
        "--sarif",
        "r.sarif",
        "--junit",
        "r.xml",
        "--markdown",
        "r.md",
        "--html",
        "r.html",
        "--write-baseline",
        "base.json",
    ];
    let (code, r, _) = run(&py, &dir, &outputs, &["script.py"]);
    assert_eq!(code, 0, "{:#}", r["findings"]);
    assert_eq!(user(&r), at_import, "{:#}", r["findings"]);
    assert_eq!(r["summary"]["user"]["at_import"], 3);
    let notes = r["notes"].to_string();
    assert!(notes.contains("made once at import"), "{notes}");
    assert!(notes.contains("add `import` to --fail-on"), "{notes}");
    let text = Command::new(common::leakgate_bin())
        .current_dir(&dir)
        .args(["report", "report.json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("PASS: no gated leaks or memory errors in your code; reported, not gated: 2 definitely-lost leaks made once at import, 1 indirectly-lost leak made once at import"),
        "{text}"
    );
    assert!(
        text.contains("made once at import: leaks once per interpreter that imports the module:"),
        "{text}"
    );
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let sarif: Value = serde_json::from_str(&read("r.sarif")).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for res in results {
        assert_eq!(res["level"], "note", "{res:#}");
        assert_eq!(res["properties"]["atImport"], true, "{res:#}");
        assert!(
            res["message"]["text"]
                .as_str()
                .unwrap()
                .contains("made once at import"),
            "{res:#}"
        );
    }
    common::check_sarif_schema(&dir.join("r.sarif"));
    let junit = read("r.xml");
    assert_eq!(junit.matches("<skipped").count(), 3, "{junit}");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(junit.contains("made once at import"), "{junit}");
    let md = read("r.md");
    assert_eq!(md.matches("(made once at import)").count(), 3, "{md}");
    let html = read("r.html");
    assert_eq!(html.matches(">made once at import</span>").count(), 3);
    let base = read("base.json");
    assert_eq!(base.matches("made once at import").count(), 3, "{base}");

    // The error path, called once at run time: gated like any leak.
    let (code, r, _) = run(&py, &dir, &[], &["script.py", "fail"]);
    assert_eq!(code, 1, "{:#}", r["findings"]);
    let mut want = at_import.clone();
    want.push((once, false, true));
    want.sort();
    assert_eq!(user(&r), want, "{:#}", r["findings"]);

    // Sub-interpreter users gate them.
    let (code, r, _) = run(
        &py,
        &dir,
        &["--fail-on", "definite,indirect,errors,import"],
        &["script.py"],
    );
    assert_eq!(code, 1, "{:#}", r["findings"]);
    // The slots array (indirectly lost) is the gated module definition's
    // that points to it: one leak to fix, gated once.
    let mut gated: Vec<_> = at_import
        .iter()
        .map(|(l, _, _)| (*l, true, *l != slots))
        .collect();
    gated.sort();
    assert_eq!(user(&r), gated, "{:#}", r["findings"]);
    let part = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["location"]["line"] == slots)
        .unwrap();
    assert_eq!(part["kind"], "Leak_IndirectlyLost", "{part:#}");
    assert!(part.get("indirect_of").is_some(), "{part:#}");
    assert_eq!(
        r["policy"]["fail_on"],
        serde_json::json!(["definite", "indirect", "errors", "import"])
    );
}

#[test]
fn per_test_what_collection_allocated_joins_the_import_group() {
    let tmp = common::tempdir();
    let Some((py, dir)) = ext_or_skip(tmp.path()) else {
        return;
    };
    let has_pytest = Command::new(&py)
        .args(["-c", "import pytest"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_pytest && common::require_or_skip(&format!("{} cannot import pytest", py.display())) {
        return;
    }
    let (cache, once) = (line(&dir, "@collection_cache"), line(&dir, "@fail_once"));
    let args = [
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_imp.py",
    ];
    let (code, r, _) = run(&py, &dir, &["--per-test"], &args);
    assert_eq!(code, 1, "{:#}", r["findings"]);
    let found = user(&r);
    assert!(found.contains(&(cache, true, false)), "{found:?}");
    assert!(found.contains(&(once, false, true)), "{found:?}");
    // Only the error path's leak is gated, tied to its test.
    let gated: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["gated"] == true)
        .collect();
    assert_eq!(gated.len(), 1, "{gated:#?}");
    assert_eq!(gated[0]["tests"][0]["test"], "test_imp.py::test_error_path");
    assert_eq!(r["summary"]["user"]["at_import"], 4, "{found:?}");
}
