//! Integration tests: a CPython C extension and a pybind11 extension, built
//! from `tests/programs/` with the test Python (a venv in CI), run through
//! `leakgate run -- python test.py` under real Valgrind. Exactly the planted
//! leaks are the user's; interpreter and pybind11 internals are noise.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run_json(dir: &Path, env: &[(&str, &str)], cmd: &[&str]) -> (i32, Value, String) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let mut c = Command::new(common::leakgate_bin());
    c.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .arg("--")
        .args(cmd);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run leakgate");
    let code = out.status.code().expect("exit code");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let bytes = std::fs::read(&json).unwrap_or_default();
    let r: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, r, stdout)
}

/// (kind, line, function) of every user finding, sorted.
fn user(r: &Value) -> Vec<(String, u64, String)> {
    let mut v: Vec<_> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["location"]["line"].as_u64().unwrap_or(0),
                f["location"]["function"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Noise findings of kinds the gate would fail on (were they the user's).
fn gated_noise(r: &Value) -> Vec<String> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "noise")
        .filter(|f| {
            let k = f["kind"].as_str().unwrap();
            !(k == "Leak_PossiblyLost" || k == "Leak_StillReachable")
        })
        .map(|f| format!("{} {}", f["kind"], f["source"]))
        .collect()
}

/// The CPython test extension built in a temporary directory (with the
/// Python to run it), or `None` when a prerequisite is missing.
fn cpython_ext() -> Option<(tempfile::TempDir, std::path::PathBuf, std::path::PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = common::python_or_skip()?;
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    Some((tmp, dir, py))
}

/// The three definite leaks planted in `leakext.c`, as `user` lists them.
fn planted_leaks(dir: &Path) -> Vec<(String, u64, String)> {
    let src = dir.join("leakext.c");
    let mut v: Vec<(String, u64, String)> = [
        ("@py_malloc", "leak_malloc"),
        ("@py_bytes", "leak_bytes"),
        ("@py_error_path", "error_path_leak"),
    ]
    .iter()
    .map(|(m, f)| {
        let line = u64::from(common::marker_line(&src, m));
        ("Leak_DefinitelyLost".to_string(), line, f.to_string())
    })
    .collect();
    v.sort();
    v
}

#[test]
fn cpython_extension_leaks_are_the_users_and_the_rest_is_noise() {
    let Some((_tmp, dir, py)) = cpython_ext() else {
        return;
    };
    let (code, r, stdout) = run_json(&dir, &[], &[py.to_str().unwrap(), "test.py"]);
    assert!(
        stdout.contains("ok"),
        "the target's stdout reaches the user: {stdout}"
    );
    assert_eq!(code, 1);
    assert_eq!(
        user(&r),
        planted_leaks(&dir),
        "noise: {:?}",
        gated_noise(&r)
    );
    let env = r["environment"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e.as_str().unwrap().starts_with("PYTHONMALLOC=malloc")),
        "says it set PYTHONMALLOC: {env:?}"
    );
    // The bundled suppressions absorb the interpreter's noise of gated kinds.
    assert!(gated_noise(&r).is_empty(), "{:?}", gated_noise(&r));
    assert!(r["summary"]["suppressed"]["records"].as_u64().unwrap() > 0);
}

/// With tracemalloc on (`-X tracemalloc`, as test suites that look for
/// leaks themselves do), tracemalloc's own traces and tracebacks, allocated
/// while the extension allocates, are the interpreter's: exactly the planted
/// leaks stay the user's.
#[test]
fn tracemalloc_bookkeeping_is_not_the_users() {
    let Some((_tmp, dir, py)) = cpython_ext() else {
        return;
    };
    let (code, r, _) = run_json(
        &dir,
        &[],
        &[py.to_str().unwrap(), "-X", "tracemalloc=25", "test.py"],
    );
    assert_eq!(code, 1);
    let found: Vec<_> = user(&r)
        .into_iter()
        .filter(|(k, _, _)| !(k == "Leak_PossiblyLost" || k == "Leak_StillReachable"))
        .collect();
    assert_eq!(found, planted_leaks(&dir), "noise: {:?}", gated_noise(&r));
}

#[test]
fn without_pythonmalloc_the_bytes_leak_is_hidden() {
    let Some((_tmp, dir, py)) = cpython_ext() else {
        return;
    };
    // The user's own PYTHONMALLOC wins; pymalloc hides the small bytes object.
    let (code, r, _) = run_json(
        &dir,
        &[("PYTHONMALLOC", "pymalloc")],
        &[py.to_str().unwrap(), "test.py"],
    );
    assert_eq!(code, 1);
    let found = user(&r);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(!found.iter().any(|(_, _, f)| f == "leak_bytes"));
    let env = r["environment"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e.as_str().unwrap().contains("yours, kept"))
    );
}

#[test]
fn pybind11_extension_leaks_are_the_users_and_internals_are_not() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "pybind11", tmp.path());
    let src = dir.join("pbext.cpp");
    let line = |m| u64::from(common::marker_line(&src, m));
    let (code, r, _) = run_json(&dir, &[], &[py.to_str().unwrap(), "test.py"]);
    assert_eq!(code, 1);
    let found = user(&r);
    let lines: Vec<(String, u64)> = found.iter().map(|(k, l, _)| (k.clone(), *l)).collect();
    for (kind, marker) in [
        ("Leak_DefinitelyLost", "@pb_new_array"),
        ("Leak_DefinitelyLost", "@pb_dtor_member"),
        ("Leak_DefinitelyLost", "@pb_throw_path"),
        ("MismatchedFree", "@pb_mismatched"),
    ] {
        assert!(
            lines.contains(&(kind.to_string(), line(marker))),
            "{kind} at {marker} (line {}) missing from {found:?}",
            line(marker)
        );
    }
    // Nothing else of the user's is gated: pybind11's own registrations
    // (possibly lost, compiled into pbext.so) are noise.
    let gated: Vec<_> = found
        .iter()
        .filter(|(k, _, _)| k != "Leak_PossiblyLost" && k != "Leak_StillReachable")
        .collect();
    assert_eq!(gated.len(), 4, "{found:?}");
    assert!(
        found.iter().all(|(_, _, f)| !f.starts_with("pybind11::")),
        "{found:?}"
    );
    assert!(gated_noise(&r).is_empty(), "{:?}", gated_noise(&r));
}

#[test]
fn python_wrapper_scripts_are_resolved_to_the_interpreter() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    // A shell wrapper named python3 (like a pyenv shim) that execs the real one.
    let Some(py) = common::python() else {
        common::require_or_skip("no Python interpreter");
        return;
    };
    let real = Command::new(&py)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let shim = bin.join("python3");
    std::fs::write(&shim, format!("#!/bin/sh\nexec {real} \"$@\"\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(tmp.path().join("t.py"), "print('hi')\n").unwrap();
    let (code, r, _) = run_json(tmp.path(), &[], &[shim.to_str().unwrap(), "t.py"]);
    assert_eq!(code, 0, "{r:#}");
    let exe = r["processes"][0]["command"][0].as_str().unwrap();
    assert!(!exe.ends_with("bin/python3") || exe == real, "ran {exe}");
    assert!(
        r["environment"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().contains("wrapper script"))
    );
}
