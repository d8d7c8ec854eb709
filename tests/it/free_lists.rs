//! Integration tests of CPython's free lists and refcount leaks: a pytest
//! suite over `tests/programs/freelists/` (an extension whose leaks are
//! tuples and dicts, the objects CPython recycles) run through
//! `leakgate run -- python -m pytest` under real Valgrind. With the probe's
//! free-list switch (the default) every leak is found at its line from one
//! call on, a correct scratch tuple freed just before is not blamed, the
//! fixed functions pass, and a reference leaked to an object made by Python
//! code is named in a note; with `LEAKGATE_FREE_LISTS=keep` the free lists
//! misplace the leaks (what the switch is for). And a real package:
//! lru-dict 1.4.1 from PyPI, whose `popitem()` leaks a tuple.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn suite_or_skip(tmp: &Path) -> Option<(PathBuf, PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = common::python_or_skip()?;
    let has_pytest = Command::new(&py)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest {
        common::require_or_skip(&format!("{} cannot import pytest", py.display()));
        return None;
    }
    let dir = common::build_python_ext_with(&py, "freelists", tmp);
    Some((py, dir))
}

/// `leakgate run --format json [args] -- python -m pytest test_freelists.py`.
fn run(py: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let mut cmd = Command::new(common::leakgate_bin());
    cmd.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("PYTHONPATH")
        .env_remove("LEAKGATE_FREE_LISTS")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "-q", "--format", "json", "--output"])
        .arg(&json)
        .args(args)
        .arg("--")
        .arg(py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_freelists.py",
        ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run_capture(&mut cmd, "leakgate run");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "no JSON report ({e}); stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    common::assert_conserved(&r);
    (out.status.code().expect("exit code"), r)
}

/// Lost user findings as (function, line, blocks, tests).
fn user_lost(r: &Value) -> Vec<(String, u64, u64, Vec<String>)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["kind"] == "Leak_DefinitelyLost")
        .map(|f| {
            (
                f["location"]["function"].as_str().unwrap_or("").to_string(),
                f["location"]["line"].as_u64().unwrap_or(0),
                f["blocks"].as_u64().unwrap_or(0),
                f["tests"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|t| t["test"].as_str().unwrap().into())
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// Definitely-lost `python` noise blocks that grew in `test`.
fn python_lost_in(r: &Value, test: &str) -> u64 {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["source"] == "python" && f["kind"] == "Leak_DefinitelyLost")
        .flat_map(|f| f["tests"].as_array().cloned().unwrap_or_default())
        .filter(|t| t["test"] == test)
        .map(|t| t["blocks"].as_u64().unwrap())
        .sum()
}

fn notes(r: &Value) -> Vec<String> {
    r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

const T: &str = "test_freelists.py::";

#[test]
fn leaks_of_recycled_objects_are_found_at_their_lines() {
    let tmp = common::tempdir();
    let Some((py, dir)) = suite_or_skip(tmp.path()) else {
        return;
    };
    let src = dir.join("flext.c");
    let pair = common::marker_line(&src, "@fl_pair") as u64;
    let scratch_ok = common::marker_line(&src, "@fl_scratch_ok") as u64;
    let scratch_leak = common::marker_line(&src, "@fl_scratch_leak") as u64;
    let dict = common::marker_line(&src, "@fl_dict") as u64;

    // One leaky call per repetition, two repetitions: every leaked block at
    // its line, growing per call; the refcount leak only as a note.
    let (code, r) = run(&py, &dir, &["--repeat", "2"], &[("FLEXT_CALLS", "1")]);
    assert_eq!(code, 1, "the leaks fail the gate: {:#}", r["verdict"]);
    assert_eq!(r["per_test"]["free_lists"], "off", "{:#}", r["per_test"]);
    let mut lost = user_lost(&r);
    lost.sort();
    let want =
        |f: &str, line: u64, test: &str| (f.to_string(), line, 2, vec![format!("{T}{test}")]);
    let mut expected = vec![
        want("options", dict, "test_options"),
        want("pair", pair, "test_pair"),
        want("scratch_impl", scratch_leak, "test_scratch"),
    ];
    expected.sort();
    assert_eq!(lost, expected, "user findings: {:#}", r["findings"]);
    assert!(
        !lost.iter().any(|l| l.1 == scratch_ok),
        "the scratch tuple, freed correctly, is not blamed"
    );
    for f in r["findings"].as_array().unwrap() {
        if f["category"] == "user" {
            assert_eq!(f["growth"], "per_call", "{f:#}");
        }
    }
    for t in ["test_pair", "test_scratch", "test_options"] {
        assert_eq!(
            python_lost_in(&r, &format!("{T}{t}")),
            0,
            "{t}: nothing left in python noise"
        );
    }
    // The refcount leak of a tuple made by Python code: python noise,
    // growing per call, named in a note (not gated).
    assert_eq!(python_lost_in(&r, &format!("{T}test_first")), 2);
    let n = notes(&r);
    let first: Vec<&String> = n
        .iter()
        .filter(|n| n.starts_with(&format!("{T}test_first: ")))
        .collect();
    assert_eq!(first.len(), 1, "one note for test_first: {n:#?}");
    assert!(
        first[0].contains("lost at every call") && first[0].contains("Py_DECREF"),
        "{}",
        first[0]
    );
    assert!(
        !n.iter().any(|n| n.starts_with(&format!("{T}test_pair"))),
        "no python-only note where your code leaks: {n:#?}"
    );
    assert_eq!(r["per_test"]["notes"].as_array().unwrap().len(), 1);

    // The fixed functions: nothing of yours, no note, the gate passes.
    let (code, r) = run(
        &py,
        &dir,
        &["--repeat", "2"],
        &[("FLEXT_CALLS", "1"), ("FLEXT_FIXED", "1")],
    );
    assert_eq!(
        code,
        0,
        "fixed: {:#} {:#}",
        r["verdict"],
        user_lost(&r).len()
    );
    assert_eq!(r["summary"]["user"]["findings"], 0, "{:#}", r["findings"]);
    assert_eq!(r["per_test"]["notes"], Value::Null, "{:#}", r["per_test"]);
    assert_eq!(r["per_test"]["free_lists"], "off");
}

#[test]
fn with_free_lists_kept_recycled_blocks_carry_their_first_owner() {
    let tmp = common::tempdir();
    let Some((py, dir)) = suite_or_skip(tmp.path()) else {
        return;
    };
    let src = dir.join("flext.c");
    let pair = common::marker_line(&src, "@fl_pair") as u64;
    let scratch_ok = common::marker_line(&src, "@fl_scratch_ok") as u64;
    let (code, r) = run(
        &py,
        &dir,
        &[],
        &[("FLEXT_CALLS", "1"), ("LEAKGATE_FREE_LISTS", "keep")],
    );
    assert_eq!(
        r["per_test"]["free_lists"],
        "kept (LEAKGATE_FREE_LISTS=keep)"
    );
    assert!(
        notes(&r)
            .iter()
            .any(|n| n.starts_with("CPython free lists stayed on: kept")),
        "{:#?}",
        notes(&r)
    );
    assert!(
        notes(&r)
            .iter()
            .any(|n| n.contains("which CPython recycles through its free lists")),
        "{:#?}",
        notes(&r)
    );
    // What the switch is for: one leaky call, and the leaked tuple is a
    // recycled block: the interpreter's (python noise, the gate does not
    // see it) or the correctly freed scratch tuple's line.
    let lost = user_lost(&r);
    let pair_found = lost.iter().any(|l| l.0 == "pair" && l.1 == pair);
    let scratch_misplaced = lost.iter().any(|l| l.1 == scratch_ok);
    let in_noise = python_lost_in(&r, &format!("{T}test_pair"));
    eprintln!(
        "free lists kept: pair found at its line: {pair_found}, in python noise: {in_noise}, scratch leak blamed on the freed scratch tuple: {scratch_misplaced} (exit {code})"
    );
    assert!(
        !pair_found || scratch_misplaced,
        "free lists kept, yet every leak was at its line: this Python does not recycle as CPython 3.11 does; {:#}",
        r["findings"]
    );
}

/// Runs `cmd`, panicking with its output when it fails.
fn must(cmd: &mut Command, what: &str) {
    let out = common::run_capture(cmd, what);
    common::check_success(&out, what);
}

/// A real package: lru-dict 1.4.1 (the latest release) from its sdist on
/// PyPI, built with -O0 -g and installed with pip into a venv, its own
/// `test_popitem` run from the unpacked sdist. `LRU.popitem()` takes one
/// reference too many on the tuple it returns (amitdev/lru-dict#64, fixed
/// by the still unreleased amitdev/lru-dict#65, which removes that
/// `Py_INCREF`): every popped item leaks a 2-tuple built by
/// `LRU_peek_*_item`. With the free lists kept, CPython hands that tuple a
/// recycled block and the leak is `python` noise; turned off, it is found
/// at the `Py_BuildValue` line; with #65 applied the gate passes.
#[test]
fn real_package_lru_dict_popitem() {
    let tmp = common::tempdir();
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let t = tmp.path();
    let dl = Command::new(&py)
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--no-binary",
            ":all:",
            "--no-deps",
        ])
        .args(["lru-dict==1.4.1", "-d"])
        .arg(t)
        .output()
        .expect("run pip");
    if !dl.status.success() {
        common::require_or_skip(&format!(
            "cannot download lru-dict 1.4.1 from PyPI: {}",
            String::from_utf8_lossy(&dl.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
        return;
    }
    must(
        Command::new("tar")
            .current_dir(t)
            .args(["xzf", "lru_dict-1.4.1.tar.gz"]),
        "tar xzf lru_dict-1.4.1.tar.gz",
    );
    let src = t.join("lru_dict-1.4.1");
    let venv = t.join("venv");
    must(
        Command::new(&py).args(["-m", "venv"]).arg(&venv),
        "python -m venv",
    );
    let vpy = venv.join("bin/python");
    must(
        Command::new(&vpy).args(["-m", "pip", "install", "-q", "pytest", "setuptools>=77"]),
        "pip install pytest setuptools",
    );
    let install = |dir: &Path| {
        must(
            Command::new(&vpy)
                .env("CFLAGS", "-O0 -g")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--no-build-isolation",
                    "--force-reinstall",
                    "--no-deps",
                ])
                .arg(dir),
            "pip install lru-dict",
        )
    };
    let c = src.join("src/lru/_lru.c");
    let text = std::fs::read_to_string(&c).unwrap();
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in _lru.c")) as u64
            + 1
    };
    let first = line_of("Py_BuildValue(\"OO\", self->first->key");
    let last = line_of("Py_BuildValue(\"OO\", self->last->key");
    let lg = |env: &[(&str, &str)]| {
        let json = t.join("report.json");
        let _ = std::fs::remove_file(&json);
        let mut cmd = Command::new(common::leakgate_bin());
        cmd.current_dir(&src)
            .env_remove("PYTHONMALLOC")
            .env_remove("PYTEST_PLUGINS")
            .env_remove("PYTHONPATH")
            .env_remove("LEAKGATE_FREE_LISTS")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            // Installed into the venv's site-packages and run from the
            // checkout, as its users do: no --src-root, no --user-object.
            .args(["run", "-q"])
            .args(["--format", "json", "--output"])
            .arg(&json)
            .arg("--")
            .arg(&vpy)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .args(["test/test_lru.py", "-k", "popitem"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = common::run_capture(&mut cmd, "leakgate run");
        let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
            .unwrap_or_else(|e| {
                panic!(
                    "no JSON report ({e}); stderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        common::assert_conserved(&r);
        (out.status.code().expect("exit code"), r)
    };

    install(&src);
    let (code, r) = lg(&[]);
    assert_eq!(code, 1, "{:#}", r["verdict"]);
    assert_eq!(r["per_test"]["free_lists"], "off");
    let mut lost = user_lost(&r);
    lost.sort();
    let popitem = vec!["test/test_lru.py::TestLRU::test_popitem".to_string()];
    assert_eq!(
        lost,
        [
            ("LRU_peek_first_item".to_string(), first, 1, popitem.clone()),
            ("LRU_peek_last_item".to_string(), last, 2, popitem.clone()),
        ],
        "{:#}",
        r["findings"]
    );

    // Free lists kept: the same three tuples are (mostly) recycled blocks.
    let (_, kept) = lg(&[("LEAKGATE_FREE_LISTS", "keep")]);
    let found: u64 = user_lost(&kept).iter().map(|l| l.2).sum();
    eprintln!("lru-dict popitem, free lists kept: {found} of 3 leaked tuples in lru's code");
    assert!(found < 3, "{:#}", kept["findings"]);

    // amitdev/lru-dict#65: no Py_INCREF before popitem's return.
    let fixed = text.replacen(
        "    Py_INCREF(result);\n    return result;\n}\n\nstatic PyObject *\nLRU_keys",
        "    return result;\n}\n\nstatic PyObject *\nLRU_keys",
        1,
    );
    assert_ne!(fixed, text, "the popitem fix applies");
    std::fs::write(&c, fixed).unwrap();
    install(&src);
    let (code, r) = lg(&[]);
    assert_eq!(code, 0, "fixed: {:#} {:#}", r["verdict"], r["findings"]);
    assert_eq!(r["summary"]["user"]["findings"], 0);
}
