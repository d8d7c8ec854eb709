//! Shared helpers for leakgate's integration tests (`crate::common` in the
//! `it` test binary; `outputs` runs `analyze` with every output).
//!
//! They build the small leaky programs under `tests/programs/` from source
//! (C/C++ with gcc/g++, Python extensions with `setup.py build_ext --inplace`),
//! find leak-site markers (`/* @name */` comments) in those sources, pick the
//! Python interpreter to test with, and decide whether a test whose
//! prerequisite is missing is skipped or fails (`LEAKGATE_REQUIRE_ALL=1`).
//!
//! Only `std`, `tempfile`, `serde_json` (reports) and `regex` (`outputs`) are used. Every
//! builder copies the sources into a caller-provided directory (usually a
//! `tempfile::TempDir`) and builds the copy there, so the repository tree is never written to and the debug info
//! (and therefore Valgrind's `<dir>`/`<file>`) points into that directory.
#![allow(dead_code)]

pub(crate) mod outputs;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Environment variable naming the Python interpreter to test with.
pub(crate) const PYTHON_ENV: &str = "LEAKGATE_TEST_PYTHON";
/// Environment variable that turns a missing prerequisite into a failure.
pub(crate) const REQUIRE_ALL_ENV: &str = "LEAKGATE_REQUIRE_ALL";

/// Root of the leakgate crate (where `Cargo.toml` lives).
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/programs/`: sources of the programs the integration tests run.
pub(crate) fn programs_dir() -> PathBuf {
    repo_root().join("tests").join("programs")
}

/// The `leakgate` binary built by Cargo for these integration tests.
pub(crate) fn leakgate_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_leakgate"))
}

/// A fresh temporary directory (removed when the returned guard drops).
pub(crate) fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("leakgate-test-")
        .tempdir()
        .expect("cannot create a temporary directory")
}

/// 1-based number of the single line of `src` that contains `marker`
/// (e.g. `"@definite"`).
///
/// The marker must not be followed by an identifier character, so
/// `@indirect` does not match `@indirect_outer`. Panics if the marker is
/// missing or appears on more than one line.
pub(crate) fn marker_line(src: &Path, marker: &str) -> u32 {
    let text =
        fs::read_to_string(src).unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
    let hits: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| contains_marker(line, marker))
        .map(|(i, _)| u32::try_from(i + 1).expect("line number overflows u32"))
        .collect();
    match hits.as_slice() {
        [line] => *line,
        [] => panic!("marker {marker:?} not found in {}", src.display()),
        many => panic!(
            "marker {marker:?} appears on several lines of {}: {many:?}",
            src.display()
        ),
    }
}

fn contains_marker(line: &str, marker: &str) -> bool {
    line.match_indices(marker).any(|(at, _)| {
        line[at + marker.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// Builds one C (`gcc`) or C++ (`g++`, for `.cpp`/`.cc`/`.cxx`) program with
/// `-g -O0`.
///
/// `src_rel` is relative to [`programs_dir`], e.g. `"c/leak_kinds.c"` or
/// `"cpp/mismatch.cpp"`. The source is first copied into `out_dir` and the
/// copy is compiled, so the debug info names `out_dir/<file>`. Returns the
/// executable's path (`out_dir/<file stem>`). Panics with the compiler's
/// output on failure.
pub(crate) fn build_c(src_rel: &str, out_dir: &Path) -> PathBuf {
    build_c_opt(src_rel, out_dir, "-O0")
}

/// [`build_c`] with another optimisation level (e.g. `-O2` for inlining).
pub(crate) fn build_c_opt(src_rel: &str, out_dir: &Path, opt: &str) -> PathBuf {
    let src = programs_dir().join(src_rel);
    let file_name = src
        .file_name()
        .unwrap_or_else(|| panic!("{src_rel:?} has no file name"));
    let stem = src
        .file_stem()
        .unwrap_or_else(|| panic!("{src_rel:?} has no file stem"));
    let compiler = match src.extension().and_then(OsStr::to_str) {
        Some("c") => "gcc",
        Some("cpp" | "cc" | "cxx") => "g++",
        _ => panic!("{src_rel:?}: expected a .c or .cpp source"),
    };
    fs::create_dir_all(out_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
    let copy = out_dir.join(file_name);
    fs::copy(&src, &copy)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", src.display(), copy.display()));
    let exe = out_dir.join(stem);
    let mut cmd = Command::new(compiler);
    cmd.current_dir(out_dir)
        .args(["-g", opt, "-o"])
        .arg(&exe)
        .arg(&copy);
    let out = run_capture(&mut cmd, compiler);
    check_success(&out, &format!("{compiler} -g {opt} {}", copy.display()));
    assert!(exe.is_file(), "{compiler} produced no {}", exe.display());
    exe
}

/// The Python interpreter to test with, if any: `$LEAKGATE_TEST_PYTHON`
/// when set and non-empty (a bare name is looked up on `PATH`), else
/// `<repo>/.venv/bin/python` when it exists, else `python3` on `PATH`.
pub(crate) fn python() -> Option<PathBuf> {
    if let Some(val) = std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&val);
        if p.components().count() > 1 {
            return Some(p);
        }
        return Some(find_on_path(&val).unwrap_or(p));
    }
    let venv = repo_root().join(".venv").join("bin").join("python");
    if venv.exists() {
        return Some(venv);
    }
    find_on_path(OsStr::new("python3"))
}

/// First executable file called `name` in the directories of `PATH`.
pub(crate) fn find_on_path(name: &OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|cand| is_executable(cand))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Whether `valgrind` is on `PATH`.
pub(crate) fn has_valgrind() -> bool {
    find_on_path(OsStr::new("valgrind")).is_some()
}

/// Whether `py` can import `setuptools` (needed to build any extension).
pub(crate) fn has_setuptools(py: &Path) -> bool {
    python_can_import(py, "setuptools")
}

/// Whether `py` can import `numpy` (and `setuptools`).
pub(crate) fn has_numpy(py: &Path) -> bool {
    python_can_import(py, "setuptools, numpy")
}

/// Whether `py` can import `pybind11` and `setuptools`.
pub(crate) fn has_pybind11(py: &Path) -> bool {
    python_can_import(py, "setuptools, pybind11")
}

pub(crate) fn python_can_import(py: &Path, modules: &str) -> bool {
    Command::new(py)
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A venv at `venv` whose Python sees what `py`'s site-packages holds
/// (pytest and the rest, linked, no network) except the distributions
/// whose names start with one of `without` (`["xdist", "pytest_xdist"]`):
/// its `bin/python`, or `None` (said as a skip) when `py` has no pytest or
/// no venv can be made.
pub(crate) fn python_without(py: &Path, venv: &Path, without: &[&str]) -> Option<PathBuf> {
    let ask = |py: &Path, code: &str| -> Option<PathBuf> {
        let out = Command::new(py).args(["-c", code]).output().ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let Some(site) = ask(
        py,
        "import os, pytest; print(os.path.dirname(os.path.dirname(pytest.__file__)))",
    ) else {
        require_or_skip(&format!("{} cannot import pytest", py.display()));
        return None;
    };
    let made = Command::new(py)
        .args(["-m", "venv", "--without-pip"])
        .arg(venv)
        .output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        require_or_skip(&format!("{} -m venv failed: {made:?}", py.display()));
        return None;
    }
    let vpy = venv.join("bin").join("python");
    let purelib = ask(
        &vpy,
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    )?;
    fs::create_dir_all(&purelib).unwrap();
    for e in fs::read_dir(&site).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if without.iter().any(|w| name.starts_with(w)) || purelib.join(&name).exists() {
            continue;
        }
        std::os::unix::fs::symlink(e.path(), purelib.join(&name)).unwrap();
    }
    Some(vpy)
}

/// Builds a Python extension from `tests/programs/<kind>/` (`kind` is
/// `"cpython"` or `"pybind11"`) with the interpreter from [`python`].
///
/// The sources (top-level files only; stale `build/` and `*.so` are left
/// behind) are copied into `out_dir/<kind>/`, where
/// `<python> setup.py build_ext --inplace` is run quietly. Panics with the
/// build's stdout/stderr on failure. Returns `out_dir/<kind>/`, which then
/// holds `test.py` next to the built module.
pub(crate) fn build_python_ext(kind: &str, out_dir: &Path) -> PathBuf {
    let py = python().expect("no Python interpreter found (set LEAKGATE_TEST_PYTHON)");
    build_python_ext_with(&py, kind, out_dir)
}

/// [`build_python_ext`] with an explicit interpreter.
pub(crate) fn build_python_ext_with(py: &Path, kind: &str, out_dir: &Path) -> PathBuf {
    assert!(
        matches!(
            kind,
            "cpython"
                | "pybind11"
                | "freelists"
                | "gcleaks"
                | "library_calls"
                | "import_time"
                | "nanobind"
                | "arena"
        ),
        "unknown extension kind {kind:?}"
    );
    let src_dir = programs_dir().join(kind);
    let dest = out_dir.join(kind);
    fs::create_dir_all(&dest).unwrap_or_else(|e| panic!("cannot create {}: {e}", dest.display()));
    let entries =
        fs::read_dir(&src_dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", src_dir.display()));
    for entry in entries {
        let entry = entry.expect("cannot read directory entry");
        let path = entry.path();
        let is_so = path.extension() == Some(OsStr::new("so"));
        if !path.is_file() || is_so {
            continue;
        }
        fs::copy(&path, dest.join(entry.file_name())).unwrap_or_else(|e| {
            panic!(
                "cannot copy {} into {}: {e}",
                path.display(),
                dest.display()
            )
        });
    }
    let mut cmd = Command::new(py);
    cmd.current_dir(&dest)
        .args(["setup.py", "-q", "build_ext", "--inplace"])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = run_capture(&mut cmd, &py.display().to_string());
    check_success(
        &out,
        &format!(
            "{} setup.py build_ext --inplace (in {})",
            py.display(),
            dest.display()
        ),
    );
    let built = fs::read_dir(&dest)
        .expect("cannot list the build directory")
        .filter_map(Result::ok)
        .any(|e| e.path().extension() == Some(OsStr::new("so")));
    assert!(
        built,
        "building the {kind} extension produced no .so in {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        dest.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dest
}

/// Whether `LEAKGATE_REQUIRE_ALL=1` (CI): missing prerequisites are errors.
pub(crate) fn require_all() -> bool {
    std::env::var(REQUIRE_ALL_ENV).is_ok_and(|v| v == "1")
}

/// Call when the prerequisite `what` is missing. With
/// `LEAKGATE_REQUIRE_ALL=1` this panics; otherwise it prints `SKIP: <what>`
/// to stderr and returns `true`, so the test can return early:
///
/// ```ignore
/// if !common::has_valgrind() && common::require_or_skip("valgrind") {
///     return;
/// }
/// ```
pub(crate) fn require_or_skip(what: &str) -> bool {
    if require_all() {
        panic!("missing prerequisite: {what} (LEAKGATE_REQUIRE_ALL=1)");
    }
    eprintln!("SKIP: {what}");
    true
}

/// `true` if valgrind is available; otherwise [`require_or_skip`]s and
/// returns `false`.
pub(crate) fn valgrind_or_skip() -> bool {
    has_valgrind() || !require_or_skip("valgrind not found on PATH")
}

/// The Python to use when it can build C extensions (has setuptools);
/// otherwise [`require_or_skip`]s and returns `None`.
pub(crate) fn python_or_skip() -> Option<PathBuf> {
    let Some(py) = python() else {
        require_or_skip("no Python interpreter (set LEAKGATE_TEST_PYTHON)");
        return None;
    };
    if !has_setuptools(&py) {
        require_or_skip(&format!("{} cannot import setuptools", py.display()));
        return None;
    }
    Some(py)
}

/// Like [`python_or_skip`] but also requires pybind11.
pub(crate) fn pybind11_python_or_skip() -> Option<PathBuf> {
    let py = python_or_skip()?;
    if !has_pybind11(&py) {
        require_or_skip(&format!("{} cannot import pybind11", py.display()));
        return None;
    }
    Some(py)
}

/// Runs `cmd` to completion, capturing its output; panics when it cannot start.
pub(crate) fn run_capture(cmd: &mut Command, what: &str) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// A finished command's exit code (panics when a signal ended it).
/// The verdict's reasons of a JSON report.
pub(crate) fn reasons(r: &serde_json::Value) -> Vec<String> {
    r["verdict"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

/// A finished command's standard error, as text.
pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A finished command's exit code, stdout and stderr, for assertion messages.
pub(crate) fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Panics with the command's stdout and stderr unless it succeeded.
pub(crate) fn check_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The conservation rule on a JSON report: records read = Σ findings'
/// records + suppressed records, and no internal error (exit code 5).
pub(crate) fn assert_conserved(r: &serde_json::Value) {
    let sum: u64 = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["records"].as_u64().expect("records"))
        .sum();
    let supp = r["summary"]["suppressed"]["records"]
        .as_u64()
        .expect("suppressed records");
    assert_eq!(
        r["summary"]["records"].as_u64().expect("records"),
        sum + supp,
        "records conserved"
    );
    assert_ne!(r["verdict"]["exit_code"], 5, "{}", r["verdict"]);
}

/// Checks a SARIF file against the SARIF 2.1.0 schema
/// (`tests/schemas/sarif-schema-2.1.0.json`) with the Python `jsonschema`
/// package: panics with the errors when it is invalid; returns `false`
/// (after [`require_or_skip`]) when no Python has `jsonschema`.
pub(crate) fn check_sarif_schema(sarif: &Path) -> bool {
    let Some(py) = python() else {
        require_or_skip("no Python interpreter (set LEAKGATE_TEST_PYTHON)");
        return false;
    };
    let has = Command::new(&py)
        .args(["-c", "import jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        require_or_skip(&format!(
            "{} cannot import jsonschema (pip install jsonschema)",
            py.display()
        ));
        return false;
    }
    let schema = repo_root().join("tests/schemas/sarif-schema-2.1.0.json");
    let validate = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
doc = json.load(open(sys.argv[2]))
jsonschema.Draft7Validator.check_schema(schema)
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=str)
for e in errors:
    print(list(e.absolute_path), e.message)
sys.exit(1 if errors else 0)
"#;
    let out = run_capture(
        Command::new(&py)
            .arg("-c")
            .arg(validate)
            .arg(&schema)
            .arg(sarif),
        "python",
    );
    assert!(
        out.status.success(),
        "{} is not valid SARIF 2.1.0:\n{}",
        sarif.display(),
        show(&out)
    );
    true
}

/// The files of `fixtures/<dir>` for each of `dirs`, sorted.
pub(crate) fn fixture_files(dirs: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let dir = repo_root().join("fixtures").join(d);
        for e in fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        {
            files.push(e.expect("directory entry").path());
        }
    }
    files.sort();
    files
}

/// The Valgrind releases besides the system's (Debian 12: 3.19.0) that the
/// live version tests run under: the builds in `../shared/valgrind/`.
pub(crate) const EXTRA_VALGRINDS: [&str; 3] = ["3.22.0", "3.26.0", "3.27.1"];

/// `(version, launcher)` for each of [`EXTRA_VALGRINDS`] (or those named in
/// `LEAKGATE_TEST_VALGRIND_VERSIONS`, comma-separated), unpacked once by
/// `../shared/valgrind/unpack.sh` into `~/.cache/leakgate-valgrind`.
/// leakgate sets `VALGRIND_LIB` itself for such a tree (`--valgrind PATH`);
/// for running it directly see [`valgrind_command`]. Without
/// `../shared/valgrind` this [`require_or_skip`]s and returns nothing.
pub(crate) fn extra_valgrinds() -> Vec<(String, PathBuf)> {
    let unpack = repo_root()
        .join("..")
        .join("shared")
        .join("valgrind")
        .join("unpack.sh");
    if !unpack.is_file() {
        require_or_skip("../shared/valgrind is absent: only the system Valgrind is tested");
        return Vec::new();
    }
    let wanted: Vec<String> = match std::env::var("LEAKGATE_TEST_VALGRIND_VERSIONS") {
        Ok(v) if !v.trim().is_empty() => v.split(',').map(|s| s.trim().to_string()).collect(),
        _ => EXTRA_VALGRINDS.iter().map(|s| (*s).to_string()).collect(),
    };
    // unpack.sh replaces a half-unpacked tree: one call at a time in this
    // process (the tests run in parallel threads of one binary).
    static UNPACK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = UNPACK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    wanted
        .into_iter()
        .map(|v| {
            let out = run_capture(Command::new("bash").arg(&unpack).arg(&v), "unpack.sh");
            check_success(&out, &format!("{} {v}", unpack.display()));
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            assert!(path.is_file(), "unpack.sh {v} printed {}", path.display());
            (v, path)
        })
        .collect()
}

/// A `Command` for the Valgrind launcher `vg` (`valgrind` on PATH when
/// `None`), with `VALGRIND_LIB` pointing at an unpacked tree's tools.
pub(crate) fn valgrind_command(vg: Option<&Path>) -> Command {
    match vg {
        None => Command::new("valgrind"),
        Some(vg) => {
            let mut c = Command::new(vg);
            if let Some(root) = vg.parent().and_then(Path::parent) {
                c.env("VALGRIND_LIB", root.join("libexec").join("valgrind"));
            }
            c
        }
    }
}

/// Surviving records of a report, to compare two reports record for
/// record: (kind, fingerprint, line) → (records, bytes).
pub(crate) type Survivors = std::collections::BTreeMap<(String, String, u64), (u64, u64)>;

/// The [`Survivors`] of a JSON report.
pub(crate) fn survivors(r: &serde_json::Value) -> Survivors {
    let mut m = Survivors::new();
    for f in r["findings"].as_array().unwrap() {
        let key = (
            f["kind"].as_str().unwrap().to_string(),
            f["fingerprint"].as_str().unwrap().to_string(),
            f["location"]["line"].as_u64().unwrap_or(0),
        );
        let e = m.entry(key).or_default();
        e.0 += f["records"].as_u64().unwrap();
        e.1 += f["bytes"].as_u64().unwrap_or(0);
    }
    m
}

/// `leakgate analyze --format json --no-bundled-suppressions
/// [--suppressions SUPP] PATHS` in `dir`: the report (exit 0 or 1 required).
pub(crate) fn analyze_json(dir: &Path, paths: &[&Path], supp: Option<&Path>) -> serde_json::Value {
    let mut c = Command::new(leakgate_bin());
    c.current_dir(dir)
        .args(["analyze", "--format", "json", "--no-bundled-suppressions"]);
    if let Some(s) = supp {
        c.arg("--suppressions").arg(s);
    }
    let out = c.args(paths).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "analyze failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `cmd` in `dir` under plain Valgrind (`vg`, else the one on PATH)
/// with the options `leakgate run` uses, in Valgrind's default (not
/// --show-below-main) mode, and `--suppressions=SUPP` (Valgrind's own
/// matcher); its XML goes into `out` (created). Panics if Valgrind was killed.
/// The probe as `leakgate run` writes it (`src/probe.rs`), copied from the
/// source tree into `dir/.probe`; returns that directory.
pub(crate) fn probe_copy(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/leakgate_probe");
    let root = dir.join(".probe");
    let pkg = root.join("leakgate_probe");
    fs::create_dir_all(&pkg).unwrap();
    for e in fs::read_dir(&src).unwrap() {
        let path = e.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().unwrap();
        let to = if name == "sitecustomize.py" {
            root.join(name)
        } else {
            pkg.join(name)
        };
        fs::copy(&path, to).unwrap();
    }
    root
}

pub(crate) fn valgrind_with_suppressions(
    vg: Option<&Path>,
    dir: &Path,
    out: &Path,
    supp: &Path,
    cmd: &[&str],
    label: &str,
) {
    fs::create_dir_all(out).unwrap();
    let probe = probe_copy(dir);
    let st = valgrind_command(vg)
        .current_dir(dir)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONMALLOC", "malloc")
        // What `leakgate run` gives every Python process (the probe's
        // `sitecustomize` and exit hook), so that both runs are the same
        // process; a C program ignores it.
        .env("PYTHONPATH", &probe)
        .env("LEAKGATE_PROBE", "1")
        .args([
            "--tool=memcheck",
            "--leak-check=full",
            "--track-origins=yes",
            "--xml=yes",
            "--gen-suppressions=all",
            "--num-callers=40",
            "--show-leak-kinds=definite,indirect,possible",
            "--error-limit=no",
        ])
        .arg(format!("--xml-file={}/vg.%p.xml", out.display()))
        .arg(format!("--log-file={}/vg.%p.log", out.display()))
        .arg(format!("--suppressions={}", supp.display()))
        .args(cmd)
        .output()
        .unwrap();
    assert!(st.status.code().is_some(), "{label}: valgrind killed");
}
