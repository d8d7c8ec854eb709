//! Integration tests: blocks another library's C API allocated for the
//! user's direct call and the user leaked are the user's, at the line of the
//! call (docs/attribution.md, "How leakgate decides what is yours"). A small
//! C library installed under a `site-packages` directory (so it classifies as
//! `third_party`) and a C program calling it; the string libstdc++ made for a
//! `std::runtime_error` the program leaked; and a CPython extension that
//! leaks the array NumPy's `PyArray_Ravel` returns, next to one that
//! releases it, whose run passes with NumPy's import-time blocks left as
//! noise and no advice to claim NumPy.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `leakgate run --format json -- CMD` in `dir`; (exit code, report).
fn run_json(dir: &Path, cmd: &[&str]) -> (i32, Value) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let code = out.status.code().expect("exit code");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}); {}", common::show(&out)));
    common::assert_conserved(&r);
    (code, r)
}

/// (kind, line, function, reason) of every gated user finding, sorted.
fn gated_user(r: &Value) -> Vec<(String, u64, String, String)> {
    let mut v: Vec<_> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["gated"] == true)
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["location"]["line"].as_u64().unwrap_or(0),
                f["location"]["function"].as_str().unwrap_or("").to_string(),
                f["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Noise findings that are indirectly lost blocks a library made for the
/// user's call (counted in the record of the lost block pointing to them).
fn inside_lost_blocks(r: &Value) -> usize {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["category"] == "noise"
                && f["kind"] == "Leak_IndirectlyLost"
                && f["reason"]
                    .as_str()
                    .is_some_and(|s| s.contains("reachable only from a lost block"))
        })
        .count()
}

fn must(cmd: &mut Command, what: &str) {
    let out = common::run_capture(cmd, what);
    common::check_success(&out, what);
}

#[test]
fn blocks_a_third_party_library_returned_are_the_callers() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let src = common::programs_dir().join("library_calls");
    // The library, built from source into a venv's site-packages.
    let lib = tmp.path().join("venv/lib/python3.11/site-packages/mylib");
    std::fs::create_dir_all(&lib).unwrap();
    for f in ["mylib.c", "mylib.h"] {
        std::fs::copy(src.join(f), lib.join(f)).unwrap();
    }
    must(
        Command::new("gcc").current_dir(&lib).args([
            "-g",
            "-O0",
            "-shared",
            "-fPIC",
            "-o",
            "libmylib.so",
            "mylib.c",
        ]),
        "gcc -shared mylib.c",
    );
    // The user's program, in its own checkout (the current directory).
    let prog = tmp.path().join("prog");
    std::fs::create_dir_all(&prog).unwrap();
    std::fs::copy(src.join("uselib.c"), prog.join("uselib.c")).unwrap();
    let l = lib.to_str().unwrap();
    must(
        Command::new("gcc").current_dir(&prog).args([
            "-g",
            "-O0",
            "-I",
            l,
            "-o",
            "uselib",
            "uselib.c",
            "-L",
            l,
            "-lmylib",
            &format!("-Wl,-rpath,{l}"),
        ]),
        "gcc uselib.c",
    );
    let line = u64::from(common::marker_line(&prog.join("uselib.c"), "@lib_call"));
    let why = "allocated by mylib (mylib_buf_new) for your call: yours to release";
    let (code, r) = run_json(&prog, &["./uselib"]);
    assert_eq!(code, 1, "{:#}", r["findings"]);
    assert_eq!(
        gated_user(&r),
        [(
            "Leak_DefinitelyLost".into(),
            line,
            "use_buffer".into(),
            why.into()
        ),],
        "{:#}",
        r["findings"]
    );
    // The buffer's data, indirectly lost, is counted in that record.
    assert_eq!(inside_lost_blocks(&r), 1, "{:#}", r["findings"]);
    assert_eq!(r["summary"]["noise"]["findings"], 1, "{:#}", r["findings"]);
    let (code, r) = run_json(&prog, &["./uselib", "fixed"]);
    assert_eq!(code, 0, "{:#}", r["findings"]);
    assert_eq!(r["summary"]["user"]["findings"], 0);
}

#[test]
fn the_string_of_a_leaked_runtime_error_is_the_callers() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    common::build_c("library_calls/rt_error.cpp", tmp.path());
    let line = u64::from(common::marker_line(
        &tmp.path().join("rt_error.cpp"),
        "@rt_error",
    ));
    let (code, r) = run_json(tmp.path(), &["./rt_error"]);
    assert_eq!(code, 1, "{:#}", r["findings"]);
    let found = gated_user(&r);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1, found[0].3.as_str()),
        ("Leak_DefinitelyLost", line, "")
    );
    // The message string libstdc++ made, indirectly lost, is counted in
    // the exception's record: noise that says so.
    let noise: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "noise")
        .collect();
    assert_eq!(noise.len(), 1, "{noise:#?}");
    assert_eq!(noise[0]["kind"], "Leak_IndirectlyLost");
    assert!(
        noise[0]["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("allocated by libstdc++ (std::runtime_error::runtime_error("),
        "{:#}",
        noise[0]
    );
    assert_eq!(inside_lost_blocks(&r), 1, "{noise:#?}");
}

#[test]
fn an_array_numpy_made_for_an_extension_is_the_extensions() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    if !common::has_numpy(&py)
        && common::require_or_skip(&format!("{} cannot import numpy", py.display()))
    {
        return;
    }
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "library_calls", tmp.path());
    let line = u64::from(common::marker_line(&dir.join("npext.c"), "@np_ravel"));
    let py = py.to_str().unwrap();
    // Leaked: the 200 arrays at the call, with no flags.
    let (code, r) = run_json(&dir, &[py, "np_driver.py", "leaky"]);
    assert_eq!(code, 1, "{:#}", r["verdict"]);
    let found = gated_user(&r);
    assert!(
        found.iter().all(|(_, l, f, why)| *l == line
            && f == "ravel_leaky"
            && why.starts_with("allocated by numpy (PyArray_Ravel) for your call")),
        "{found:?}"
    );
    let arrays = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["category"] == "user" && f["kind"] == "Leak_DefinitelyLost")
        .unwrap_or_else(|| panic!("no definite leak: {found:?}"));
    assert_eq!(arrays["blocks"], 200, "{arrays:#}");
    // Released: passes. NumPy's own import-time blocks stay noise, and
    // the note does not advise claiming NumPy.
    let (code, r) = run_json(&dir, &[py, "np_driver.py", "fixed"]);
    assert_eq!(code, 0, "{:#}", r["findings"]);
    assert_eq!(gated_user(&r), []);
    let notes = r["notes"].to_string();
    assert!(
        !notes.contains("_multiarray_umath"),
        "advice to claim NumPy: {notes}"
    );
}
