//! Live runs under every Valgrind release leakgate is tested with: Debian 12's
//! 3.19.0 (on PATH) is the reference, and the builds of 3.22.0 (Ubuntu
//! 24.04), 3.26.0 and 3.27.1 in `../shared/valgrind/` (passed as
//! `--valgrind PATH`; leakgate sets `VALGRIND_LIB` for such a tree) must give
//! the same result: the same exit code and the same user findings (kind,
//! function, file, line, bytes, blocks, occurrences, and per-test growth),
//! with every process' report complete and records conserved.
//!
//! Scenarios, one representative of each live suite (docs/valgrind-versions.md
//! says why these): C and C++ programs (`c_programs.rs`), a
//! CPython and a pybind11 extension (`python_ext.rs`), multiprocessing
//! (`real_runs.rs`), per-test pytest checkpoints (`per_test.rs`), the
//! suppression differential against Valgrind's own matcher
//! (`suppress_diff.rs`) and the generated-suppression round trip
//! (`generate.rs`); plus what differs by version: descriptor errors
//! (`--track-fds`, 3.23+), Valgrind 3.26.0's unclosed `<still_reachable>`
//! and the `--num-callers` minimum. Without `../shared/valgrind` the
//! extra versions are skipped with a `SKIP:` line (a failure under
//! `LEAKGATE_REQUIRE_ALL=1`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `leakgate run --format json [--valgrind VG] ARGS -- CMD` in `dir`:
/// (exit code, report, stderr).
fn run(dir: &Path, vg: Option<&Path>, args: &[&str], cmd: &[&str]) -> (i32, Value, String) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let mut c = Command::new(common::leakgate_bin());
    c.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("PYTHONPATH")
        .env_remove("VALGRIND_LIB")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0")
        .args(["run", "-q", "--format", "json", "--output"])
        .arg(&json);
    if let Some(vg) = vg {
        c.arg("--valgrind").arg(vg);
    }
    let out = c
        .args(args)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let bytes = std::fs::read(&json).unwrap_or_default();
    let r: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (out.status.code().expect("exit code"), r, stderr)
}

/// One line per user finding (sorted): what must not depend on the version.
fn user_summary(r: &Value) -> Vec<String> {
    let mut v: Vec<String> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            let tests: Vec<String> = f["tests"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| format!("{}:{}:{}", t["test"], t["bytes"], t["blocks"]))
                        .collect()
                })
                .unwrap_or_default();
            format!(
                "{} {} {}:{} bytes={} blocks={} count={} tests=[{}]",
                f["kind"].as_str().unwrap_or(""),
                f["location"]["function"].as_str().unwrap_or(""),
                f["location"]["file"].as_str().unwrap_or(""),
                f["location"]["line"],
                f["bytes"],
                f["blocks"],
                f["count"],
                tests.join(" ")
            )
        })
        .collect();
    v.sort();
    v
}

/// Memcheck error kinds newer than 3.19 (3.21, 3.22): a newer Valgrind may
/// find more at the same line (3.22 adds `MismatchedAllocateDeallocateSize`
/// to `MismatchedFree` for `new[]` released by a sized `delete`); those are
/// left out of the comparison with the 3.19 reference and printed.
const NEWER_KINDS: [&str; 6] = [
    "ReallocSizeZero",
    "InvalidSizeAndAlignment",
    "InvalidAlignment",
    "InvalidSize",
    "MismatchedAllocateDeallocateSize",
    "MismatchedAllocateDeallocateAlignment",
];

/// Noise findings of kinds the default gate would fail on.
fn gated_noise(r: &Value) -> Vec<String> {
    r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["category"] == "noise")
        .filter(|f| {
            let k = f["kind"].as_str().unwrap_or("");
            !matches!(k, "Leak_PossiblyLost" | "Leak_StillReachable")
        })
        .map(|f| format!("{} {} {}", f["kind"], f["source"], f["message"]))
        .collect()
}

fn assert_complete(r: &Value, what: &str) {
    for p in r["processes"].as_array().expect("processes") {
        assert_eq!(p["complete"], true, "{what}: {p}");
    }
    common::assert_conserved(r);
}

/// The extra versions, or `None` (skip) when valgrind is missing.
fn versions() -> Option<Vec<(String, PathBuf)>> {
    if !common::valgrind_or_skip() {
        return None;
    }
    Some(common::extra_valgrinds())
}

/// Runs `cmd` under the system Valgrind and then every extra version;
/// asserts the same exit code and user findings, complete reports, and
/// returns the reference report and each version's.
fn same_everywhere(
    vgs: &[(String, PathBuf)],
    dir: &Path,
    args: &[&str],
    cmd: &[&str],
    what: &str,
) -> (Value, Vec<(String, Value)>) {
    let (code, reference, err) = run(dir, None, args, cmd);
    assert!(matches!(code, 0 | 1), "{what} (3.19): exit {code}\n{err}");
    assert_complete(&reference, what);
    let want = user_summary(&reference);
    let mut out = Vec::new();
    for (v, vg) in vgs {
        let (c, r, err) = run(dir, Some(vg), args, cmd);
        assert_eq!(r["valgrind"]["version"], v.as_str(), "{what}: {err}");
        assert_eq!(
            c, code,
            "{what} under {v}: exit code\n{err}\n{:#}",
            r["verdict"]
        );
        assert_complete(&r, &format!("{what} under {v}"));
        let (newer, got): (Vec<String>, Vec<String>) = user_summary(&r)
            .into_iter()
            .partition(|l| NEWER_KINDS.iter().any(|k| l.starts_with(&format!("{k} "))));
        assert_eq!(got, want, "{what}: user findings under {v}");
        if !newer.is_empty() {
            eprintln!("{what}: {v} also finds (kinds 3.19 lacks): {newer:?}");
        }
        let notes = r["notes"].to_string();
        assert!(
            !notes.contains("not a version leakgate is tested with"),
            "{notes}"
        );
        eprintln!("{what}: {v} agrees ({} user findings)", want.len());
        out.push((v.clone(), r));
    }
    (reference, out)
}

#[test]
fn c_and_cpp_programs() {
    let Some(vgs) = versions() else { return };
    let tmp = common::tempdir();
    for (src, expect_user) in [
        ("c/leak_kinds.c", 6),
        ("c/mem_errors.c", 4),
        ("cpp/mismatch.cpp", 1),
        ("c/leak40.c", 1),
    ] {
        let exe = common::build_c(src, tmp.path());
        let (r, _) = same_everywhere(&vgs, tmp.path(), &[], &[exe.to_str().unwrap()], src);
        assert!(
            user_summary(&r).len() >= expect_user,
            "{src}: {:#?}",
            user_summary(&r)
        );
    }
}

#[test]
fn cpython_and_pybind11_extensions() {
    let Some(vgs) = versions() else { return };
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    for kind in ["cpython", "pybind11"] {
        let dir = common::build_python_ext_with(&py, kind, tmp.path());
        let (r, all) = same_everywhere(&vgs, &dir, &[], &[py.to_str().unwrap(), "test.py"], kind);
        assert!(!user_summary(&r).is_empty(), "{kind}: the planted leaks");
        for (v, r) in std::iter::once(("3.19".to_string(), r)).chain(all) {
            assert_eq!(gated_noise(&r), Vec::<String>::new(), "{kind} under {v}");
        }
    }
}

#[test]
fn multiprocessing_children() {
    let Some(vgs) = versions() else { return };
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    std::fs::copy(
        common::programs_dir().join("real_runs/mp_workers.py"),
        dir.join("mp_workers.py"),
    )
    .unwrap();
    let (r, all) = same_everywhere(
        &vgs,
        &dir,
        &[],
        &[py.to_str().unwrap(), "mp_workers.py"],
        "mp_workers.py",
    );
    let n = r["processes"].as_array().unwrap().len();
    for (v, r) in all {
        assert_eq!(
            r["processes"].as_array().unwrap().len(),
            n,
            "processes under {v}"
        );
    }
}

#[test]
fn per_test_pytest_checkpoints() {
    let Some(vgs) = versions() else { return };
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let has_pytest = Command::new(&py)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest && common::require_or_skip(&format!("{} cannot import pytest", py.display())) {
        return;
    }
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    for e in std::fs::read_dir(common::programs_dir().join("pytest")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let pyv = py.to_str().unwrap();
    let cmd = [
        pyv,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "test_suite.py",
    ];
    let (r, all) = same_everywhere(&vgs, &dir, &[], &cmd, "pytest per test");
    let checkpoints = &r["per_test"]["checkpoints"];
    assert!(checkpoints.as_u64().unwrap() > 2, "{checkpoints}");
    for (v, x) in all {
        assert_eq!(&x["per_test"]["checkpoints"], checkpoints, "under {v}");
        assert_eq!(x["per_test"]["tests"], r["per_test"]["tests"], "under {v}");
    }
}

#[test]
fn suppression_differential() {
    let Some(vgs) = versions() else { return };
    let tmp = common::tempdir();
    let dir = tmp.path();
    let leaks = common::build_c("c/leak_kinds.c", dir);
    let errors = common::build_c("c/mem_errors.c", dir);
    let supp = dir.join("rules.supp");
    std::fs::write(
        &supp,
        "{\n   definite-exact\n   Memcheck:Leak\n   match-leak-kinds: definite\n   fun:malloc\n   fun:leak_definite\n}\n\
         {\n   loop-glob\n   Memcheck:Leak\n   fun:mall?c\n   fun:leak_l*p\n}\n\
         {\n   possible-ellipsis\n   Memcheck:Leak\n   match-leak-kinds: possible\n   ...\n   fun:run_all\n}\n\
         {\n   strdup-wrong-kind\n   Memcheck:Leak\n   match-leak-kinds: reachable\n   ...\n   fun:leak_strdup\n}\n\
         {\n   read4\n   Memcheck:Addr4\n   ...\n   fun:main\n}\n\
         {\n   cond\n   Memcheck:Cond\n   obj:*/mem_errors\n}\n",
    )
    .unwrap();
    let all: Vec<(String, Option<PathBuf>)> = std::iter::once(("3.19".to_string(), None))
        .chain(vgs.iter().map(|(v, p)| (v.clone(), Some(p.clone()))))
        .collect();
    for (v, vg) in &all {
        for exe in [&leaks, &errors] {
            let name = exe.file_name().unwrap().to_string_lossy().into_owned();
            let label = format!("{name}-{v}");
            let keep = dir.join(format!("{label}-a"));
            let keep_s = keep.to_str().unwrap().to_string();
            let args = ["--no-bundled-suppressions", "--keep-xml", keep_s.as_str()];
            let (code, _, err) = run(dir, vg.as_deref(), &args, &[exe.to_str().unwrap()]);
            assert!(matches!(code, 0 | 1), "{label}: {err}");
            let b = dir.join(format!("{label}-b"));
            common::valgrind_with_suppressions(
                vg.as_deref(),
                dir,
                &b,
                &supp,
                &[exe.to_str().unwrap()],
                &label,
            );
            let post_hoc = common::analyze_json(dir, &[&keep], Some(&supp));
            let valgrind = common::analyze_json(dir, &[&b], None);
            assert_eq!(
                post_hoc["summary"]["suppressed"]["undecidable"], 0,
                "{label}"
            );
            assert!(
                post_hoc["summary"]["suppressed"]["records"]
                    .as_u64()
                    .unwrap()
                    > 0,
                "{label}: the rules suppress something"
            );
            assert_eq!(
                common::survivors(&post_hoc),
                common::survivors(&valgrind),
                "{label}"
            );
        }
    }
}

#[test]
fn generated_suppressions_round_trip() {
    let Some(vgs) = versions() else { return };
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    let cmd = [py.to_str().unwrap(), "test.py"];
    let all: Vec<(String, Option<PathBuf>)> = std::iter::once(("3.19.0".to_string(), None))
        .chain(vgs.iter().map(|(v, p)| (v.clone(), Some(p.clone()))))
        .collect();
    for (v, vg) in &all {
        let gen_file = dir.join(format!("gen-{v}.supp"));
        let gen_s = gen_file.to_str().unwrap();
        let (_, before, err) = run(
            &dir,
            vg.as_deref(),
            &["--no-bundled-suppressions", "--write-suppressions", gen_s],
            &cmd,
        );
        assert!(before.is_object(), "{v}: {err}");
        assert!(!gated_noise(&before).is_empty(), "{v}: noise to cover");
        // The file targets the Valgrind that ran: lint for that version.
        let text = std::fs::read_to_string(&gen_file).unwrap();
        assert!(
            text.contains(&format!("Written for Valgrind {v}")),
            "{v}: header\n{text}"
        );
        let mut lint = Command::new(common::leakgate_bin());
        lint.arg("lint");
        if let Some(vg) = vg {
            lint.arg("--valgrind").arg(vg);
        }
        let l = lint.arg(&gen_file).output().unwrap();
        assert_eq!(
            l.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&l.stdout)
        );
        // Valgrind's own matcher with the file: no gated noise, yours intact.
        let supp_arg = format!("--valgrind-arg=--suppressions={gen_s}");
        let (_, after, err) = run(
            &dir,
            vg.as_deref(),
            &["--no-bundled-suppressions", &supp_arg],
            &cmd,
        );
        assert!(after.is_object(), "{v}: {err}");
        assert_eq!(gated_noise(&after), Vec::<String>::new(), "{v}");
        assert_eq!(user_summary(&after), user_summary(&before), "{v}");
    }
}

#[test]
fn descriptor_errors_need_3_23_and_are_attributed() {
    let Some(vgs) = versions() else { return };
    let tmp = common::tempdir();
    let exe = common::build_c("c/fds.c", tmp.path());
    let src = tmp.path().join("fds.c");
    let exe_s = exe.to_str().unwrap();
    // 3.19 (and 3.22 below) write descriptor errors to the text log only.
    let (code, _, err) = run(tmp.path(), None, &["--track-fds"], &[exe_s]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--track-fds needs Valgrind 3.23 or later"),
        "{err}"
    );
    for (v, vg) in &vgs {
        let (code, r, err) = run(tmp.path(), Some(vg), &["--track-fds"], &[exe_s]);
        if v.as_str() < "3.23" {
            assert_eq!(code, 2, "{v}: {err}");
            assert!(err.contains(&format!("is Valgrind {v}")), "{v}: {err}");
            continue;
        }
        assert_eq!(code, 1, "{v}: {err}");
        assert_complete(&r, v);
        let line = |m| common::marker_line(&src, m);
        let want = vec![
            format!(
                "FdBadClose close_twice fds.c:{} bytes=null blocks=null count=1 tests=[]",
                line("@fd_close2")
            ),
            format!(
                "FdNotClosed open_and_forget fds.c:{} bytes=null blocks=null count=1 tests=[]",
                line("@fd_open")
            ),
        ];
        assert_eq!(user_summary(&r), want, "{v}");
        // Not gated without `fds`; the default gates them.
        let (code, _, err) = run(
            tmp.path(),
            Some(vg),
            &["--track-fds", "--fail-on", "definite,indirect,memerrors"],
            &[exe_s],
        );
        assert_eq!(code, 0, "{v}: {err}");
    }
}

#[test]
fn interpreter_descriptors_are_noise() {
    let Some(vgs) = versions() else { return };
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    // A descriptor the interpreter opens (os.open) and never closes, then
    // the extension's test.
    std::fs::write(
        dir.join("fdtest.py"),
        "import os, runpy\nos.open('/dev/null', os.O_RDONLY)\nrunpy.run_path('test.py', run_name='__main__')\n",
    )
    .unwrap();
    for (v, vg) in vgs.iter().filter(|(v, _)| v.as_str() >= "3.23") {
        let (_, plain, _) = run(&dir, Some(vg), &[], &[py.to_str().unwrap(), "test.py"]);
        let gen_file = dir.join(format!("fd-{v}.supp"));
        let (code, fds, err) = run(
            &dir,
            Some(vg),
            &[
                "--track-fds",
                "--write-suppressions",
                gen_file.to_str().unwrap(),
            ],
            &[py.to_str().unwrap(), "fdtest.py"],
        );
        assert_eq!(code, 1, "{v}: {err}");
        assert_complete(&fds, v);
        assert_eq!(
            user_summary(&fds),
            user_summary(&plain),
            "{v}: no descriptor is yours"
        );
        let fd_noise: Vec<&Value> = fds["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == "FdNotClosed")
            .collect();
        assert_eq!(fd_noise.len(), 1, "{v}: the interpreter's descriptor");
        assert_eq!(fd_noise[0]["category"], "noise");
        assert_eq!(
            fd_noise[0]["source"], "python",
            "{v}: labelled by os.open's library"
        );
        assert!(
            fd_noise[0]["message"]
                .as_str()
                .unwrap()
                .contains("/dev/null")
        );
        // The generated file covers it with a CoreError rule Valgrind applies.
        let text = std::fs::read_to_string(&gen_file).unwrap();
        assert!(text.contains("CoreError:FdNotClosed"), "{v}:\n{text}");
        let supp_arg = format!("--valgrind-arg=--suppressions={}", gen_file.display());
        let (code, after, err) = run(
            &dir,
            Some(vg),
            &["--track-fds", &supp_arg],
            &[py.to_str().unwrap(), "fdtest.py"],
        );
        assert_eq!(code, 1, "{v}: {err}");
        assert!(
            !after["summary"]["records_by_kind"]
                .to_string()
                .contains("FdNotClosed"),
            "{v}: {}",
            after["summary"]["records_by_kind"]
        );
        assert_eq!(user_summary(&after), user_summary(&plain), "{v}");
    }
}

#[test]
fn num_callers_minimum_follows_the_version() {
    let Some(vgs) = versions() else { return };
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak40.c", tmp.path());
    for (v, vg) in &vgs {
        let (code, _, err) = run(
            tmp.path(),
            Some(vg),
            &["--num-callers", "1"],
            &[exe.to_str().unwrap()],
        );
        if v.as_str() >= "3.26" {
            assert_eq!(code, 2, "{v}: {err}");
            assert!(
                err.contains("--num-callers 1: Valgrind") && err.contains("accepts 2 to 500"),
                "{v}: {err}"
            );
        } else {
            assert_ne!(code, 2, "{v} accepts --num-callers 1: {err}");
        }
    }
}

fn analyze_code(args: &[&str], input: &Path) -> (i32, Value) {
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--format", "json"])
        .args(args)
        .arg(input)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
    )
}

#[test]
fn recorded_3_26_report_with_zero_still_reachable_is_complete() {
    // Valgrind 3.26.0 leaves <still_reachable> unclosed in <leak_summary>
    // when no byte is still reachable (upstream bug 514613).
    let p = common::repo_root().join("fixtures/raw-3.26/leak40.xml");
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(
        text.contains(
            "<still_reachable>\n    <bytes>0</bytes>\n    <blocks>0</blocks>\n  <suppressed>"
        ),
        "the fixture carries the defect"
    );
    let (code, r) = analyze_code(&[], &p);
    assert_eq!(code, 1, "{:#}", r["verdict"]);
    assert_complete(&r, "leak40.xml");
    assert_eq!(r["notes"], serde_json::json!([]), "no alarming note");
    assert_eq!(user_summary(&r).len(), 1);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], 40);
    // Nothing gated: a clean pass, not "incomplete" (exit 3).
    let (code, r) = analyze_code(&["--fail-on", "none"], &p);
    assert_eq!(code, 0, "{:#}", r["verdict"]);
    // Real truncation is still detected: cut inside the leak summary, or
    // just before the closing root tag.
    let tmp = common::tempdir();
    for cut in ["  <suppressed>", "</valgrindoutput>"] {
        let at = text.rfind(cut).unwrap();
        let f = tmp.path().join("cut.xml");
        std::fs::write(&f, &text[..at]).unwrap();
        let (code, r) = analyze_code(&["--fail-on", "none"], &f);
        assert_eq!(code, 3, "cut at {cut:?}: {:#}", r["verdict"]);
        assert_eq!(r["processes"][0]["complete"], false);
    }
}

#[test]
fn recorded_3_26_descriptor_errors_are_findings() {
    let p = common::repo_root().join("fixtures/raw-3.26/fds.xml");
    let (code, r) = analyze_code(&[], &p);
    assert_eq!(code, 1, "{:#}", r["verdict"]);
    assert_complete(&r, "fds.xml");
    let mut kinds: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| f["location"]["function"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["close_twice", "open_and_forget"]);
    let (code, _) = analyze_code(&["--fail-on", "definite,indirect,memerrors"], &p);
    assert_eq!(code, 0);
}

#[test]
fn version_says_which_valgrind_and_an_untested_one_gets_a_note() {
    let out = Command::new(common::leakgate_bin())
        .arg("--version")
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        v.contains("3.19.0") && v.contains("3.22.0") && v.contains("3.27.1"),
        "{v}"
    );
    assert!(v.contains("valgrind on PATH: "), "{v}");
    if !common::valgrind_or_skip() {
        return;
    }
    // A launcher that reports another version (a wrapper around the real one).
    let tmp = common::tempdir();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("valgrind");
    let real = common::find_on_path(std::ffi::OsStr::new("valgrind")).unwrap();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo valgrind-3.24.0; exit 0; }}\nexec {} \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = common::build_c("c/leak40.c", tmp.path());
    let (code, r, err) = run(tmp.path(), Some(&wrapper), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(r["valgrind"]["version"], "3.24.0");
    let notes: Vec<&Value> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| {
            n.as_str()
                .unwrap()
                .contains("not a version leakgate is tested with")
        })
        .collect();
    assert_eq!(notes.len(), 1, "{:#}", r["notes"]);
    // A tested one gets none.
    let (_, r, _) = run(tmp.path(), None, &[], &[exe.to_str().unwrap()]);
    assert!(
        !r["notes"].to_string().contains("not a version"),
        "{}",
        r["notes"]
    );
}

#[test]
fn lint_and_suppress_target_the_valgrind_that_reads_the_file() {
    let tmp = common::tempdir();
    let f = tmp.path().join("kinds.supp");
    std::fs::write(
        &f,
        "{\n   old-name\n   Memcheck:BadSize\n   fun:f\n}\n{\n   new-name\n   Memcheck:UnsafeZeroSize\n   fun:f\n}\n{\n   plain\n   Memcheck:Leak\n   fun:f\n}\n",
    )
    .unwrap();
    let lint = |args: &[&str]| {
        let out = Command::new(common::leakgate_bin())
            .arg("lint")
            .args(args)
            .arg(&f)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = lint(&["--valgrind-version", "3.19.0"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(
        out.matches("Valgrind 3.19.0 rejects this file").count(),
        2,
        "{out}"
    );
    let (code, out) = lint(&["--valgrind-version", "3.22.0"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(":6: new-name: kind UnsafeZeroSize is read by Valgrind 3.26 and later"),
        "{out}"
    );
    assert!(
        out.contains(":1: note: old-name: kind BadSize is read by Valgrind 3.22 and later"),
        "{out}"
    );
    let (code, out) = lint(&["--valgrind-version", "3.26.0"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok for Valgrind 3.26.0"), "{out}");
    let (code, out) = lint(&["--valgrind-version", "nope"]);
    assert_eq!(code, 2, "{out}");
    // The version comes from --valgrind PATH when given.
    if let Some((v, vg)) = versions()
        .unwrap_or_default()
        .into_iter()
        .find(|(v, _)| v.as_str() >= "3.26")
    {
        let (code, out) = lint(&["--valgrind", vg.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains(&format!("ok for Valgrind {v}")), "{out}");
    }
    // The generator writes for the version asked for.
    let out = Command::new(common::leakgate_bin())
        .args(["suppress", "--valgrind-version", "3.22.0"])
        .arg(common::repo_root().join("fixtures/raw-3.26/leak40.xml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Written for Valgrind 3.22.0"), "{text}");
}

#[test]
fn descriptor_suppressions_agree_with_valgrind() {
    let Some(vgs) = versions() else { return };
    let tmp = common::tempdir();
    let dir = tmp.path();
    let exe = common::build_c("c/fds.c", dir);
    let exe_s = exe.to_str().unwrap();
    let supp = dir.join("fd.supp");
    std::fs::write(
        &supp,
        "{\n   fd-open-and-forget\n   CoreError:FdNotClosed\n   fun:open*\n   fun:open_and_forget\n}\n\
         {\n   fd-bad-close-elsewhere\n   CoreError:FdBadClose\n   fun:close\n   fun:somewhere_else\n}\n",
    )
    .unwrap();
    for (v, vg) in vgs.iter().filter(|(v, _)| v.as_str() >= "3.23") {
        let keep = dir.join(format!("a-{v}"));
        let (code, _, err) = run(
            dir,
            Some(vg),
            &[
                "--track-fds",
                "--no-bundled-suppressions",
                "--keep-xml",
                keep.to_str().unwrap(),
            ],
            &[exe_s],
        );
        assert_eq!(code, 1, "{v}: {err}");
        let b = dir.join(format!("b-{v}"));
        std::fs::create_dir_all(&b).unwrap();
        let st = common::valgrind_command(Some(vg))
            .current_dir(dir)
            .args([
                "--tool=memcheck",
                "--leak-check=full",
                "--track-fds=yes",
                "--xml=yes",
                "--gen-suppressions=all",
                "--num-callers=40",
            ])
            .arg(format!("--xml-file={}/vg.%p.xml", b.display()))
            .arg(format!("--log-file={}/vg.%p.log", b.display()))
            .arg(format!("--suppressions={}", supp.display()))
            .arg(exe_s)
            .output()
            .unwrap();
        assert!(st.status.success(), "{v}: valgrind with {}", supp.display());
        let post_hoc = common::analyze_json(dir, &[&keep], Some(&supp));
        let valgrind = common::analyze_json(dir, &[&b], None);
        assert_eq!(
            post_hoc["summary"]["suppressed"]["records"], 1,
            "{v}: {:#}",
            post_hoc["summary"]
        );
        assert_eq!(
            common::survivors(&post_hoc),
            common::survivors(&valgrind),
            "{v}"
        );
        let kinds: Vec<&str> = valgrind["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["FdBadClose"], "{v}: Valgrind's own matcher");
    }
}
