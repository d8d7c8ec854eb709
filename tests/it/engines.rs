//! The sanitizer engines against the Valgrind engine on the same programs:
//! `leakgate run --engine lsan` must find the same user leaks (kind,
//! file:line, direct bytes, blocks, and under pytest the tests) as
//! `leakgate run` (Valgrind), on a C program, a CPython C extension
//! (including a leaked small object, whose fast-unwound stack skips the
//! extension's frame: the exact re-run), a pybind11 extension, forked
//! multiprocessing children and the per-test pytest suite; and the run's
//! bad inputs (no runtime, a static target, Valgrind-only options) get one
//! clear line. What LeakSanitizer does not look for (possibly-lost and
//! still-reachable blocks, memory errors, uninitialised values) is left
//! out of the comparison and named in the report's `engine`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub(crate) fn liblsan() -> bool {
    let ok = [
        "/usr/lib/x86_64-linux-gnu/liblsan.so.0",
        "/usr/lib64/liblsan.so.0",
    ]
    .iter()
    .any(|p| Path::new(p).is_file())
        || Command::new("gcc")
            .arg("-print-file-name=liblsan.so.0")
            .output()
            .is_ok_and(|o| Path::new(String::from_utf8_lossy(&o.stdout).trim()).is_absolute());
    if !ok {
        common::require_or_skip("no liblsan (Debian: liblsan0)");
    }
    ok
}

fn run(dir: &Path, engine: &str, extra: &[&str], cmd: &[&str]) -> (i32, Value, String) {
    run_env(dir, engine, &[], extra, cmd)
}

/// [`run`] with some variables set for leakgate and the target.
fn run_env(
    dir: &Path,
    engine: &str,
    env: &[(&str, &str)],
    extra: &[&str],
    cmd: &[&str],
) -> (i32, Value, String) {
    let json = dir.join(format!("report-{engine}.json"));
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .envs(env.iter().copied())
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("LSAN_OPTIONS")
        .env_remove("ASAN_OPTIONS")
        .args(["run", "--engine", engine, "--format", "json", "--output"])
        .arg(&json)
        .args(extra)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let code = common::code(&out);
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}", common::show(&out)));
    (code, r, common::stderr(&out))
}

/// The test Python when it can import `module` (else skipped, or a
/// failure under LEAKGATE_REQUIRE_ALL).
fn python_with(module: &str) -> Option<std::path::PathBuf> {
    let py = common::python_or_skip()?;
    if common::python_can_import(&py, module) {
        Some(py)
    } else {
        common::require_or_skip(&format!("{} cannot import {module}", py.display()));
        None
    }
}

/// The user's definite and indirect leaks: (kind, file, line, direct
/// bytes, blocks, tests), sorted.
fn user_leaks(r: &Value) -> Vec<String> {
    let mut v: Vec<String> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .filter(|f| f["kind"] == "Leak_DefinitelyLost" || f["kind"] == "Leak_IndirectlyLost")
        .map(|f| {
            let tests: Vec<String> = f["tests"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|x| x["test"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            format!(
                "{} {}:{} {}B/{} {:?}",
                f["kind"].as_str().unwrap(),
                f["location"]["file"].as_str().unwrap_or("?"),
                f["location"]["line"],
                f["direct_bytes"]
                    .as_u64()
                    .or(f["bytes"].as_u64())
                    .unwrap_or(0),
                f["blocks"],
                tests
            )
        })
        .collect();
    v.sort();
    v
}

/// Runs `cmd` under both engines in `dir` and asserts the same user leaks;
/// returns the lsan report.
fn same_user_leaks(dir: &Path, cmd: &[&str]) -> Value {
    let (vcode, v, verr) = run(dir, "valgrind", &[], cmd);
    let (lcode, l, lerr) = run(dir, "lsan", &[], cmd);
    assert_eq!(
        user_leaks(&l),
        user_leaks(&v),
        "lsan (left) and valgrind (right) disagree\nlsan stderr:\n{lerr}\nvalgrind stderr:\n{verr}"
    );
    assert!(!user_leaks(&v).is_empty(), "no leak to compare");
    assert_eq!(lcode, vcode, "exit codes\n{lerr}");
    assert_eq!(l["engine"]["name"], "lsan");
    assert!(
        l["engine"]["not_checked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains("possibly-lost")),
        "{}",
        l["engine"]
    );
    l
}

#[test]
fn c_program_same_leaks_as_valgrind() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let l = same_user_leaks(tmp.path(), &[exe.to_str().unwrap()]);
    // strdup's frame in glibc (no frame pointers) cut one stack: the exact
    // re-run, said in a note.
    assert_eq!(l["engine"]["unwind"], "exact", "{}", l["notes"]);
}

#[test]
fn pybind11_extension_same_leaks_as_valgrind() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "pybind11", tmp.path());
    same_user_leaks(&dir, &[py.to_str().unwrap(), "test.py"]);
}

#[test]
fn multiprocessing_children_same_leaks_as_valgrind() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
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
    // The fork worker leaves through os._exit, which skips LeakSanitizer's
    // exit check: the probe's check before it finds leak_bytes; the
    // parent's leak it inherited is reported once, for the parent.
    let l = same_user_leaks(&dir, &[py.to_str().unwrap(), "mp_workers.py"]);
    let forked: Vec<&Value> = l["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["forked"] == true)
        .collect();
    assert_eq!(forked.len(), 1, "{}", l["processes"]);
}

#[test]
fn cpython_extension_same_leaks_with_the_exact_rerun() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    let l = same_user_leaks(&dir, &[py.to_str().unwrap(), "test.py"]);
    // leak_bytes's stack is cut in CPython (no frame pointers) under fast
    // unwinding: the exact re-run found it at the extension's line.
    assert_eq!(l["engine"]["unwind"], "exact", "{}", l["notes"]);
    assert!(
        l["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("re-ran with exact unwinding")),
        "{}",
        l["notes"]
    );
    let text = user_leaks(&l).join("\n");
    assert_eq!(user_leaks(&l).len(), 3, "{text}");
}

/// What the pytest tests below share: Valgrind, the runtime and a Python
/// with pytest (else skipped), and the test extension `ext` (a directory
/// of `tests/programs/`) built in a temporary directory: (that directory's
/// guard, the directory, the Python).
fn pytest_ext(ext: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    if !common::valgrind_or_skip() || !liblsan() {
        return None;
    }
    let py = python_with("pytest")?;
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, ext, tmp.path());
    Some((tmp, dir, py))
}

/// `python -m pytest -q -p no:cacheprovider FILE`.
fn pytest_cmd<'a>(py: &'a Path, file: &'a str) -> [&'a str; 7] {
    [
        py.to_str().unwrap(),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        file,
    ]
}

#[test]
fn pytest_per_test_same_leaks_and_tests_as_valgrind() {
    let Some((_tmp, dir, py)) = pytest_ext("cpython") else {
        return;
    };
    for f in ["test_suite.py", "conftest.py"] {
        std::fs::copy(common::programs_dir().join("pytest").join(f), dir.join(f)).unwrap();
    }
    let cmd = pytest_cmd(&py, "test_suite.py");
    let l = same_user_leaks(&dir, &cmd);
    assert!(l["per_test"].is_object(), "{}", l["per_test"]);
    // The leak checks ran in forked checkers (one thread here), whose
    // reports went back into the process's log: one process, complete.
    let procs = l["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 1, "{procs:?}");
    assert_eq!(procs[0]["complete"], true, "{procs:?}");
    // Every check in the process (LEAKGATE_FORKED_CHECKS=0), and a process
    // with a second thread (where a forked copy would miss that thread's
    // stack, so the probe checks in the process): the same findings.
    let (_, inproc, err) = run_env(&dir, "lsan", &[("LEAKGATE_FORKED_CHECKS", "0")], &[], &cmd);
    assert_eq!(user_leaks(&inproc), user_leaks(&l), "{err}");
    // Checkers as grandchildren (what a process whose parent is not
    // leakgate gets) instead of leakgate's children: the same findings.
    let (_, grand, err) = run_env(
        &dir,
        "lsan",
        &[("LEAKGATE_SIBLING_CHECKERS", "0")],
        &[],
        &cmd,
    );
    assert_eq!(user_leaks(&grand), user_leaks(&l), "{err}");
    std::fs::write(
        dir.join("conftest.py"),
        format!(
            "{}\nimport threading, time\n\
             threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n",
            std::fs::read_to_string(common::programs_dir().join("pytest/conftest.py")).unwrap()
        ),
    )
    .unwrap();
    let (_, threaded, err) = run(&dir, "lsan", &[], &cmd);
    assert_eq!(user_leaks(&threaded), user_leaks(&l), "{err}");
    assert_eq!(threaded["processes"].as_array().unwrap().len(), 1, "{err}");
}

/// A pytest suite whose refcount leak of a small object has its stack cut
/// short by fast unwinding (CPython keeps no frame pointers): only the
/// tests concerned run again with exact unwinding, their leaks get that
/// run's stacks, and the findings are Valgrind's, test for test.
#[test]
fn pytest_cut_stacks_rerun_only_the_tests_concerned() {
    let Some((_tmp, dir, py)) = pytest_ext("cpython") else {
        return;
    };
    std::fs::write(
        dir.join("test_cut.py"),
        "import leakext\n\n\
         def test_clean():\n    leakext.clean()\n\n\
         def test_leaks_bytes():\n    leakext.leak_bytes()\n\n\
         def test_leaks_malloc():\n    leakext.leak_malloc()\n\n\
         def test_clean_again():\n    leakext.clean()\n",
    )
    .unwrap();
    let l = same_user_leaks(&dir, &pytest_cmd(&py, "test_cut.py"));
    let leaks = user_leaks(&l).join("\n");
    assert!(leaks.contains("test_cut.py::test_leaks_bytes"), "{leaks}");
    let note = l["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.contains("with exact unwinding"))
        .unwrap_or_else(|| panic!("no re-run note: {}", l["notes"]))
        .to_string();
    assert!(note.contains("test_cut.py::test_leaks_bytes"), "{note}");
    assert!(
        !note.contains("test_leaks_malloc"),
        "its stack was whole: {note}"
    );
    assert!(
        note.contains("the rest of this report is the first run's"),
        "{note}"
    );
    let unwind = l["engine"]["unwind"].as_str().unwrap();
    assert!(unwind.starts_with("fast, exact for "), "{unwind}");
    // A cut leak made while collection imported a test module: the
    // collection alone runs again, not the whole suite.
    std::fs::write(
        dir.join("test_importcut.py"),
        "import leakext\n\nleakext.leak_bytes()\n\n\
         def test_clean():\n    leakext.clean()\n\n\
         def test_clean_too():\n    leakext.clean()\n",
    )
    .unwrap();
    let l = same_user_leaks(&dir, &pytest_cmd(&py, "test_importcut.py"));
    let notes = l["notes"].to_string();
    assert!(
        notes.contains("re-ran the collection only (no test) with exact unwinding"),
        "{notes}"
    );
    assert_eq!(
        l["engine"]["unwind"], "fast, exact for the collection",
        "{notes}"
    );
}

/// Checker turns (`run::turns`): in a suite of 30 quick tests that leak in
/// three, most checkpoints take the report of the checks before and after
/// them, and the findings are those of a run that checks every checkpoint
/// (`LEAKGATE_CHECKER_TURNS=0`), test for test.
#[test]
fn checker_turns_skip_checks_and_keep_the_findings() {
    let Some((_tmp, dir, py)) = pytest_ext("cpython") else {
        return;
    };
    std::fs::write(
        dir.join("test_many.py"),
        "import pytest\nimport leakext\n\n\
         @pytest.mark.parametrize('i', range(30))\n\
         def test_many(i):\n\
         \x20   if i in (4, 17, 18):\n\
         \x20       leakext.leak_malloc()\n\
         \x20   elif i == 25:\n\
         \x20       with pytest.raises(ValueError):\n\
         \x20           leakext.error_path_leak(True)\n\
         \x20   else:\n\
         \x20       leakext.clean()\n",
    )
    .unwrap();
    let cmd = pytest_cmd(&py, "test_many.py");
    let (code, turns, err) = run(&dir, "lsan", &[], &cmd);
    let (every_code, every, every_err) =
        run_env(&dir, "lsan", &[("LEAKGATE_CHECKER_TURNS", "0")], &[], &cmd);
    assert_eq!(user_leaks(&turns), user_leaks(&every), "{err}\n{every_err}");
    assert_eq!((code, every_code), (1, 1), "{err}");
    let leaks = user_leaks(&turns).join("\n");
    for t in [
        "test_many[4]",
        "test_many[17]",
        "test_many[18]",
        "test_many[25]",
    ] {
        assert!(leaks.contains(t), "{t}: {leaks}");
    }
    assert_eq!(turns["per_test"]["tests"], every["per_test"]["tests"]);
    let line = |r: &Value| {
        r["environment"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e.as_str())
            .find(|e| e.starts_with("checker turns: "))
            .map(str::to_string)
    };
    let said = line(&turns).unwrap_or_else(|| panic!("no turns line: {}", turns["environment"]));
    let ran: usize = said["checker turns: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(ran < 25, "most of 32 checkpoints need no check: {said}");
    assert_eq!(line(&every), None, "{}", every["environment"]);
}

/// Leaked references to objects the garbage collector lists (issue 28):
/// under pytest (free lists off in both engines) the same leaks; the test
/// that leaked them only Valgrind names;
/// the fixed script passes: nothing held by a C static, a C struct or
/// module state becomes a finding.
#[test]
fn gc_listed_leaks_same_as_valgrind_and_keepers_pass() {
    let Some((_tmp, dir, py)) = pytest_ext("gcleaks") else {
        return;
    };
    let pyv = py.to_str().unwrap();
    let cmd = pytest_cmd(&py, "test_gc.py");
    let (vcode, v, verr) = run(&dir, "valgrind", &[], &cmd);
    let (lcode, l, lerr) = run(&dir, "lsan", &[], &cmd);
    // The same leaks (lines, bytes, blocks) under the same test: the probe's
    // forked checkers take what only the collector's lists hold out of them
    // before each check, as the exit hook does at exit.
    assert_eq!(
        user_leaks(&l),
        user_leaks(&v),
        "lsan (left)\n{lerr}\n{verr}"
    );
    assert!(!user_leaks(&v).is_empty(), "no leak to compare");
    assert_eq!(lcode, vcode, "{lerr}");
    assert!(
        user_leaks(&l).iter().all(|s| s.contains("test_pack_leaky")),
        "{:?}",
        user_leaks(&l)
    );
    // With a second thread the checks stay in the process: the leaks are
    // found at exit, and the report says which test is not known there.
    std::fs::write(
        dir.join("conftest.py"),
        "import threading, time\n\
         threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n",
    )
    .unwrap();
    let (tcode, t, terr) = run(&dir, "lsan", &[], &cmd);
    assert_eq!(tcode, vcode, "{terr}");
    let untested = |r: &Value| -> Vec<String> {
        user_leaks(r)
            .iter()
            .map(|s| s.split(" [").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(untested(&t), untested(&v), "threaded lsan (left)\n{terr}");
    assert!(
        t["engine"]["not_checked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains("more than one thread")),
        "{}",
        t["engine"]
    );
    std::fs::remove_file(dir.join("conftest.py")).unwrap();
    let (code, r, err) = run(&dir, "lsan", &[], &[pyv, "leaky.py", "--fixed"]);
    assert_eq!(code, 0, "{err}\n{}", r["findings"]);
    assert!(user_leaks(&r).is_empty(), "{:?}", user_leaks(&r));
}

/// A test's checkpoint with a forked check collects only the young
/// generations (a full collection writes to every tracked object, each
/// page then a copy while checkers share it); the checker tells whether a
/// full one would have freed more. Here a test leaves a cycle in the oldest
/// generation that holds the only other reference to two leaked lists, and
/// an object whose finalizer appends to a file: the checker collects fully
/// in its own sandboxed copy, so the leaks are named under that test, as
/// Valgrind names them, nothing runs again, and the finalizer's write
/// happens once (the process's own collection), not again in the copy.
/// Where the copy cannot collect (`LEAKGATE_CHECKER_COLLECT=0` stands in
/// for a system without seccomp), the target runs again with full
/// collections, with the same leaks. A suite without such garbage runs
/// once, without either note.
#[test]
fn old_garbage_at_a_checkpoint_is_collected_in_the_checker_s_copy() {
    let Some((_tmp, dir, py)) = pytest_ext("gcleaks") else {
        return;
    };
    std::fs::write(
        dir.join("test_old.py"),
        "import gc\nimport os\nimport gcext\n\n\
         class Fin:\n    def __del__(self):\n\
         \x20       with open('fin-' + os.environ.get('LEAKGATE_ENGINE', 'valgrind') + '.txt', 'a') as f:\n\
         \x20           f.write('finalized\\n')\n\n\
         def test_clean():\n    assert gcext.pack_pair_fixed()\n\n\
         def test_old_garbage():\n    t = gcext.pack_pair()\n    cyc = [t, Fin()]\n    cyc.append(cyc)\n\
         \x20   gc.collect()  # cyc and t move to the oldest generation\n    del t, cyc\n\n\
         def test_clean_again():\n    assert gcext.pack_pair_fixed()\n",
    )
    .unwrap();
    let l = same_user_leaks(&dir, &pytest_cmd(&py, "test_old.py"));
    let leaks = user_leaks(&l);
    assert!(
        leaks
            .iter()
            .all(|s| s.contains("test_old.py::test_old_garbage")),
        "{leaks:?}"
    );
    let notes = |r: &Value| -> Vec<String> {
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect()
    };
    let env_has = |r: &Value, v: &str| {
        r["environment"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().starts_with(v))
    };
    let n = notes(&l);
    let note = n
        .iter()
        .find(|n| n.contains("own sandboxed copy"))
        .unwrap_or_else(|| panic!("no note of the copy's collection: {n:?}"));
    assert!(
        note.contains("the first after test_old.py::test_old_garbage"),
        "{note}"
    );
    assert!(
        !n.iter().any(|n| n.contains("ran again with a full")),
        "{n:?}"
    );
    assert!(
        !env_has(&l, "LEAKGATE_COLLECT=full"),
        "{}",
        l["environment"]
    );
    // Once per run of the test: the first run's, and the exact re-run's
    // when its stacks were cut (the checkers' copies wrote nothing).
    let reran = n.iter().filter(|n| n.contains("re-ran 1 test")).count();
    for (engine, runs) in [("valgrind", 1), ("lsan", 1 + reran)] {
        let fin =
            std::fs::read_to_string(dir.join(format!("fin-{engine}.txt"))).unwrap_or_default();
        assert_eq!(
            fin,
            "finalized\n".repeat(runs),
            "{engine}: the finalizer ran once per run"
        );
    }
    // Without the copy's collection: the whole run again, the same leaks.
    let (_, fallback, err) = run_env(
        &dir,
        "lsan",
        &[("LEAKGATE_CHECKER_COLLECT", "0")],
        &[],
        &pytest_cmd(&py, "test_old.py"),
    );
    assert_eq!(user_leaks(&fallback), leaks, "{err}");
    let n = notes(&fallback);
    let note = n
        .iter()
        .find(|n| n.contains("full garbage collection at every checkpoint"))
        .unwrap_or_else(|| panic!("no re-run note: {n:?}"));
    assert!(
        note.contains("after test_old.py::test_old_garbage found 3 objects"),
        "{note}"
    );
    assert!(
        env_has(&fallback, "LEAKGATE_COLLECT=full"),
        "{}",
        fallback["environment"]
    );
    let (_, plain, err) = run(&dir, "lsan", &[], &pytest_cmd(&py, "test_gc.py"));
    assert!(
        !plain["notes"].to_string().contains("garbage collection"),
        "{err}\n{}",
        plain["notes"]
    );
}

#[test]
fn sanitizer_engines_refuse_what_they_cannot_do() {
    let tmp = common::tempdir();
    let bin = common::leakgate_bin();
    let one = |args: &[&str]| {
        let out = Command::new(&bin)
            .current_dir(tmp.path())
            .args(args)
            .output()
            .unwrap();
        (common::code(&out), common::stderr(&out))
    };
    let (code, err) = one(&["run", "--engine", "lsan", "--track-fds", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--track-fds needs --engine valgrind"), "{err}");
    let (code, err) = one(&[
        "run",
        "--engine",
        "lsan",
        "--sanitizer-runtime",
        "/nonexistent/liblsan.so",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/nonexistent/liblsan.so: no such file"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A static executable ignores LD_PRELOAD.
    let src = tmp.path().join("s.c");
    std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
    let exe = tmp.path().join("s");
    let built = Command::new("gcc")
        .args(["-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if built && liblsan() {
        let (code, err) = one(&["run", "--engine", "lsan", "--", exe.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("is statically linked"), "{err}");
    }
}

/// A program built with -fsanitize=address (and -fsanitize-recover=address,
/// so that it goes on after an error as a Valgrind'ed one does): `--engine
/// asan` finds its memory errors at the lines where Memcheck finds them in
/// the plain build, less the uninitialised read it does not check; under
/// Valgrind the sanitized build is refused with a one-line error.
#[test]
fn asan_memory_errors_at_valgrind_lines() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
    let tmp = common::tempdir();
    let plain = common::build_c("c/mem_errors.c", tmp.path());
    let san = tmp.path().join("mem_errors_asan");
    let out = Command::new("gcc")
        .current_dir(tmp.path())
        .args([
            "-g",
            "-O0",
            "-fsanitize=address",
            "-fsanitize-recover=address",
        ])
        .args(["-o", san.to_str().unwrap(), "mem_errors.c"])
        .output()
        .unwrap();
    if !out.status.success() {
        common::require_or_skip("gcc cannot link -fsanitize=address (no libasan)");
        return;
    }
    let errors = |r: &Value| -> Vec<String> {
        let mut v: Vec<String> = r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["category"] == "user" && !f["kind"].as_str().unwrap().starts_with("Leak_")
            })
            .map(|f| format!("{} {}", f["kind"].as_str().unwrap(), f["location"]["line"]))
            .collect();
        v.sort();
        v
    };
    let (vcode, v, verr) = run(tmp.path(), "valgrind", &[], &[plain.to_str().unwrap()]);
    let (acode, a, aerr) = run(tmp.path(), "asan", &[], &[san.to_str().unwrap()]);
    assert_eq!(vcode, 1, "{verr}");
    assert_eq!(acode, 1, "{aerr}");
    let want: Vec<String> = errors(&v)
        .into_iter()
        .filter(|e| !e.starts_with("UninitCondition"))
        .collect();
    assert_eq!(errors(&a), want, "asan (left), valgrind (right)\n{aerr}");
    assert_eq!(want.len(), 3, "{want:?}");
    assert_eq!(a["engine"]["name"], "asan");

    let refused = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["run", "--", san.to_str().unwrap()])
        .output()
        .unwrap();
    let err = common::stderr(&refused);
    assert_eq!(common::code(&refused), 2, "{err}");
    assert!(err.contains("built with AddressSanitizer"), "{err}");
    assert!(err.contains("--engine asan"), "{err}");
}

/// `leakgate suppress --format lsan` writes narrow `leak:` rules for the
/// noise of a LeakSanitizer run: with them in LSAN_OPTIONS, the runtime
/// itself drops the noise, and every leak of the user's is still reported.
#[test]
fn lsan_rules_for_the_noise_keep_the_user_s_leaks() {
    if !liblsan() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    // The user's program (src/) and a library that is not theirs (in a
    // site-packages, without debug info), whose constructor leaks before
    // main: third-party noise with no frame of the user's.
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("site-packages/vendor")).unwrap();
    std::fs::copy(
        common::repo_root().join("fixtures/sanitizers/demo.c"),
        dir.join("src/demo.c"),
    )
    .unwrap();
    std::fs::write(
        dir.join("site-packages/vendor/vendor.c"),
        "#include <stdlib.h>\nvoid *vendor_keep;\n\
         __attribute__((constructor)) static void vendor_init(void)\n\
         {\n    vendor_keep = malloc(24);\n    vendor_keep = 0;\n}\n",
    )
    .unwrap();
    let gcc = |args: &[&str]| {
        let out = Command::new("gcc")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::show(&out));
    };
    let lib = dir.join("site-packages/vendor");
    gcc(&[
        "-O0",
        "-shared",
        "-fPIC",
        "-o",
        lib.join("libvendor.so").to_str().unwrap(),
        lib.join("vendor.c").to_str().unwrap(),
    ]);
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let libdir = format!("-L{}", lib.display());
    gcc(&[
        "-O0",
        "-g",
        "-o",
        "demo",
        "src/demo.c",
        "-Wl,--no-as-needed",
        &libdir,
        "-lvendor",
        &rpath,
    ]);
    let demo = dir.join("demo");
    let logs = dir.join("logs");
    let keep = ["--keep-xml", logs.to_str().unwrap(), "--src-root", "src"];
    let (_, first, err) = run(dir, "lsan", &keep, &[demo.to_str().unwrap()]);
    let noise = first["summary"]["noise"]["findings"].as_u64().unwrap_or(0);
    assert!(noise > 0, "no noise to write rules for:\n{err}");
    let supp = dir.join("lsan.supp");
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .args(["suppress", "--format", "lsan", "--src-root", "src", "-o"])
        .arg(&supp)
        .arg(&logs)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 0, "{}", common::show(&out));
    let rules = std::fs::read_to_string(&supp).unwrap();
    let leaks: Vec<&str> = rules.lines().filter(|l| l.starts_with("leak:^")).collect();
    assert!(
        !leaks.is_empty() && leaks.iter().all(|l| l.ends_with('$')),
        "{rules}"
    );

    let again = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env("LSAN_OPTIONS", format!("suppressions={}", supp.display()))
        .args([
            "run",
            "--engine",
            "lsan",
            "--src-root",
            "src",
            "--format",
            "json",
        ])
        .arg("--output")
        .arg(dir.join("again.json"))
        .arg("--")
        .arg(&demo)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&std::fs::read(dir.join("again.json")).unwrap()).unwrap();
    assert_eq!(
        user_leaks(&v),
        user_leaks(&first),
        "{}",
        common::show(&again)
    );
    assert_eq!(v["summary"]["noise"]["findings"], 0, "{rules}");
}

/// examples/asan-ext: a CPython extension built with -fsanitize=address
/// under `--engine asan` and pytest: its overflow and its leak, each under
/// the test that caused it, at the lines its README shows.
#[test]
fn asan_extension_example() {
    if !liblsan() {
        return;
    }
    let Some(py) = python_with("pytest") else {
        return;
    };
    let tmp = common::tempdir();
    let dir = tmp.path();
    for f in ["setup.py", "ham.c", "test_ham.py"] {
        std::fs::copy(
            common::repo_root().join("examples/asan-ext").join(f),
            dir.join(f),
        )
        .unwrap();
    }
    let out = Command::new(&py)
        .current_dir(dir)
        .args(["setup.py", "-q", "build_ext", "--inplace"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::show(&out));
    let pyv = py.to_str().unwrap();
    let (code, r, err) = run(
        dir,
        "asan",
        &[],
        &[
            pyv,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_ham.py",
        ],
    );
    assert_eq!(code, 1, "{err}");
    let mut got: Vec<String> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            let tests: Vec<&str> = f["tests"]
                .as_array()
                .map(|t| t.iter().filter_map(|x| x["test"].as_str()).collect())
                .unwrap_or_default();
            format!(
                "{} {}:{} {:?}",
                f["kind"].as_str().unwrap(),
                f["location"]["file"].as_str().unwrap_or("?"),
                f["location"]["line"],
                tests
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            "InvalidWrite ham.c:20 [\"test_ham.py::test_checksum\"]",
            "Leak_DefinitelyLost ham.c:35 [\"test_ham.py::test_label\"]",
        ],
        "{err}"
    );
    // The same build under an engine that does not preload libasan: the
    // runtime's refusal becomes one line and exit 2, never a pass.
    let mut engines = vec!["lsan"];
    if common::has_valgrind() {
        engines.push("valgrind");
    }
    for engine in engines {
        let out = Command::new(common::leakgate_bin())
            .current_dir(dir)
            .args(["run", "--engine", engine, "--", pyv, "-c", "import ham"])
            .output()
            .unwrap();
        let err = common::stderr(&out);
        assert_eq!(common::code(&out), 2, "{engine}: {err}");
        assert!(err.contains("--engine asan"), "{engine}: {err}");
    }
}

/// The per-test machinery under `--engine lsan`: pytest-xdist workers and
/// shards merged with `leakgate merge` give the serial run's leaks and
/// tests; `--repeat 2` tells a per-call leak by its growth.
#[test]
fn lsan_xdist_repeat_and_merge_as_serial() {
    if !liblsan() {
        return;
    }
    let Some(py) = python_with("xdist") else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    for f in ["test_suite.py", "conftest.py"] {
        std::fs::copy(common::programs_dir().join("pytest").join(f), dir.join(f)).unwrap();
    }
    let pyv = py.to_str().unwrap();
    let pytest = |extra: &[&'static str]| -> Vec<String> {
        let mut v = vec![pyv.to_string()];
        v.extend(["-m", "pytest", "-q", "-p", "no:cacheprovider"].map(String::from));
        v.extend(extra.iter().map(|s| s.to_string()));
        v.push("test_suite.py".into());
        v
    };
    fn as_refs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let serial_cmd = pytest(&[]);
    let (scode, serial, serr) = run(&dir, "lsan", &[], &as_refs(&serial_cmd));
    assert_eq!(scode, 1, "{serr}");
    assert!(!user_leaks(&serial).is_empty());

    let xdist_cmd = pytest(&["-n", "2"]);
    let (xcode, x, xerr) = run(&dir, "lsan", &[], &as_refs(&xdist_cmd));
    assert_eq!(xcode, 1, "{xerr}");
    assert_eq!(user_leaks(&x), user_leaks(&serial), "{xerr}");
    // The process lines name the whole command line, interpreter and
    // module included (not sys.argv's `-m -q -n 2 ...`).
    let main = &x["processes"].as_array().unwrap()[0]["command"];
    let argv: Vec<&str> = main
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(argv, as_refs(&xdist_cmd), "{:#}", x["processes"]);

    // Two shards, merged.
    let mut shards = Vec::new();
    for (i, k) in ["per_call", "not per_call"].iter().enumerate() {
        let json = dir.join(format!("shard{i}.json"));
        let mut cmd = pytest(&["-k"]);
        cmd.insert(cmd.len() - 1, k.to_string());
        let out = Command::new(common::leakgate_bin())
            .current_dir(&dir)
            .env_remove("PYTHONMALLOC")
            .args([
                "run",
                "--engine",
                "lsan",
                "--fail-on",
                "none",
                "--format",
                "json",
            ])
            .arg("--output")
            .arg(&json)
            .arg("--")
            .args(&cmd)
            .output()
            .unwrap();
        assert_eq!(common::code(&out), 0, "{}", common::show(&out));
        shards.push(json);
    }
    let merged = dir.join("merged.json");
    let out = Command::new(common::leakgate_bin())
        .current_dir(&dir)
        .args(["merge", "--format", "json", "--output"])
        .arg(&merged)
        .args(&shards)
        .output()
        .unwrap();
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    let m: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(user_leaks(&m), user_leaks(&serial));
    assert_eq!(m["engine"]["name"], "lsan", "{}", m["engine"]);

    let (rcode, r, rerr) = run(&dir, "lsan", &["--repeat", "2"], &as_refs(&serial_cmd));
    assert_eq!(rcode, 1, "{rerr}");
    let grows = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["growth"] == "per_call")
        .count();
    assert!(grows > 0, "{}", r["findings"]);
}

/// A baseline written under one engine recognises the same leaks under the
/// other (its entries are kinds and locations, not stacks): both ways, the
/// C program's leaks are all known and the run passes.
#[test]
fn baselines_cross_engines() {
    if !common::valgrind_or_skip() || !liblsan() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let exe = exe.to_str().unwrap();
    for (write, read) in [("valgrind", "lsan"), ("lsan", "valgrind")] {
        let base = tmp.path().join(format!("{write}.json"));
        let b = base.to_str().unwrap();
        let (code, _, err) = run(
            tmp.path(),
            write,
            &["--fail-on", "none", "--write-baseline", b],
            &[exe],
        );
        assert_eq!(code, 0, "{write}: {err}");
        let (code, r, err) = run(tmp.path(), read, &["--baseline", b], &[exe]);
        assert_eq!(code, 0, "{read} with {write}'s baseline: {err}");
        assert!(!user_leaks(&r).is_empty());
    }
}
