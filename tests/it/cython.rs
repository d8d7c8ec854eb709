//! Integration tests: a Cython module (`tests/programs/cython/leaky.pyx`)
//! with a leak in a `def`, a `cdef` and a `cpdef` method, cythonized as C
//! and as C++ and built with `-O0 -g`, run under `leakgate run -- python
//! run.py`. Each finding names the `.pyx` line and the Python-level
//! function, with the generated file's line beside it, in JSON, text,
//! SARIF and GitHub annotations; with the `.pyx` deleted after the build
//! it is still named and the line shown is Cython's copy of it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The planted leaks: (marker, Python-level function, the C call that allocates).
const LEAKS: [(&str, &str, &str); 3] = [
    ("@def_leak", "leaky.leak_def", "PyBytes_FromStringAndSize("),
    ("@cdef_leak", "leaky.leak_cdef", "malloc("),
    (
        "@cpdef_leak",
        "leaky.Holder.leak_cpdef",
        "PyBytes_FromStringAndSize(",
    ),
];

/// The module built in `dir/<language>` (C or C++), with the Python to run
/// it, or `None` when a prerequisite is missing.
fn build(language: &str, tmp: &Path) -> Option<(PathBuf, PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = common::python_or_skip()?;
    let has_cython = Command::new(&py)
        .args(["-c", "import Cython"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cython {
        common::require_or_skip(&format!(
            "{} cannot import Cython (pip install cython)",
            py.display()
        ));
        return None;
    }
    let dest = tmp.join(language.replace('+', "p"));
    std::fs::create_dir_all(&dest).unwrap();
    for f in ["leaky.pyx", "setup.py", "run.py"] {
        std::fs::copy(common::programs_dir().join("cython").join(f), dest.join(f)).unwrap();
    }
    let out = common::run_capture(
        Command::new(&py)
            .current_dir(&dest)
            .args(["setup.py", "-q", "build_ext", "--inplace"])
            .env("LEAKY_LANGUAGE", language)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "python setup.py build_ext",
    );
    common::check_success(&out, &format!("cythonize and build ({language})"));
    Some((dest, py))
}

/// Runs the module's driver under leakgate: (exit code, JSON report, text
/// report, SARIF, standard output with the annotations).
fn run(dir: &Path, py: &Path) -> (i32, Value, String, Value, String) {
    let (json, sarif) = (dir.join("report.json"), dir.join("report.sarif"));
    let out = common::run_capture(
        Command::new(common::leakgate_bin())
            .current_dir(dir)
            .env_remove("PYTHONMALLOC")
            .env_remove("GITHUB_ACTIONS")
            .args(["run", "--format", "json", "--output"])
            .arg(&json)
            .arg("--sarif")
            .arg(&sarif)
            .args(["--annotations", "always", "--"])
            .arg(py)
            .arg("run.py"),
        "leakgate run",
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}", common::show(&out)));
    assert!(common::check_sarif_schema(&sarif) || !common::require_all());
    let sarif_v: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
    let text = common::run_capture(
        Command::new(common::leakgate_bin())
            .args(["report", "--format", "text"])
            .arg(&json),
        "leakgate report",
    );
    (
        common::code(&out),
        report,
        String::from_utf8_lossy(&text.stdout).into_owned(),
        sarif_v,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The line of the generated file that makes `call` for the statement at
/// `pyx_line`: the first line after its marker comment that makes the call.
fn generated_line(generated: &str, pyx_line: u32, call: &str) -> u32 {
    let marker = format!("/* \"leaky.pyx\":{pyx_line}");
    let lines: Vec<&str> = generated.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start() == marker)
        .unwrap_or_else(|| panic!("no marker {marker:?}"));
    let at = lines[start..]
        .iter()
        .position(|l| l.contains(call) && !l.trim_start().starts_with('*'))
        .unwrap_or_else(|| panic!("no {call:?} after {marker:?}"));
    u32::try_from(start + at + 1).unwrap()
}

/// Checks every output of a run against the planted leaks.
fn check(dir: &Path, py: &Path, generated_name: &str, pyx_present: bool) {
    let pyx_text =
        std::fs::read_to_string(common::programs_dir().join("cython/leaky.pyx")).unwrap();
    let pyx_lines: Vec<&str> = pyx_text.lines().collect();
    let generated = std::fs::read_to_string(dir.join(generated_name)).unwrap();
    let (code, r, text, sarif, stdout) = run(dir, py);
    assert_eq!(code, 1, "the leaks fail the gate:\n{text}");
    let user: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect();
    assert_eq!(user.len(), LEAKS.len(), "{text}");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    for (marker, function, call) in LEAKS {
        let line = common::marker_line(&common::programs_dir().join("cython/leaky.pyx"), marker);
        let src = pyx_lines[line as usize - 1].trim_end();
        let gline = generated_line(&generated, line, call);
        let f = user
            .iter()
            .find(|f| f["location"]["function"] == function)
            .unwrap_or_else(|| panic!("no finding in {function}:\n{text}"));
        let loc = &f["location"];
        let g = &loc["generated"];
        assert_eq!(loc["file"], "leaky.pyx", "{loc}");
        assert_eq!(loc["line"], line, "{loc}");
        assert!(
            loc["path"]
                .as_str()
                .is_some_and(|p| Path::new(p) == dir.join("leaky.pyx")),
            "{loc}"
        );
        assert_eq!(g["generator"], "cython", "{loc}");
        assert_eq!(g["file"], generated_name, "{loc}");
        assert_eq!(g["line"], gline, "{loc}");
        assert!(
            g["function"]
                .as_str()
                .is_some_and(|s| s.starts_with("__pyx_")),
            "{loc}"
        );
        assert_eq!(g["source_found"], pyx_present, "{loc}");
        assert_eq!(f["source_line"], src, "the .pyx's line");
        let top = f["stack"]
            .as_array()
            .unwrap()
            .iter()
            .find(|fr| fr["user"] == true)
            .unwrap();
        assert_eq!(
            (&top["file"], &top["line"], &top["function"]),
            (&loc["file"], &loc["line"], &loc["function"])
        );
        assert_eq!(top["generated"]["line"], gline);
        // Text: the place, the generated line beside it, the .pyx's line.
        let at = format!("at leaky.pyx:{line} (generated {generated_name}:{gline}) in {function}");
        assert!(text.contains(&at), "{at:?} not in:\n{text}");
        assert!(
            text.contains(&format!("{line:>5} | {src}")),
            "{src:?} not in:\n{text}"
        );
        // SARIF: the result points at the .pyx.
        let res = results
            .iter()
            .find(|r| r["locations"][0]["logicalLocations"][0]["name"] == function)
            .unwrap_or_else(|| panic!("no SARIF result for {function}: {sarif}"));
        let phys = &res["locations"][0]["physicalLocation"];
        assert_eq!(phys["artifactLocation"]["uri"], "leaky.pyx", "{phys}");
        assert_eq!(phys["region"]["startLine"], line, "{phys}");
        assert_eq!(phys["region"]["snippet"]["text"], src, "{phys}");
        // GitHub annotations point at the .pyx too.
        let ann = format!("::error file=leaky.pyx,line={line},");
        assert!(stdout.contains(&ann), "{ann:?} not in:\n{stdout}");
    }
    let missing = "leaky.pyx not found here: the line shown is the copy Cython wrote into";
    assert_eq!(text.contains(missing), !pyx_present, "{text}");
}

#[test]
fn cython_c_findings_name_the_pyx_even_when_it_is_gone() {
    let tmp = common::tempdir();
    let Some((dir, py)) = build("c", tmp.path()) else {
        return;
    };
    check(&dir, &py, "leaky.c", true);
    std::fs::remove_file(dir.join("leaky.pyx")).unwrap();
    check(&dir, &py, "leaky.c", false);
}

#[test]
fn cython_cpp_findings_name_the_pyx() {
    let tmp = common::tempdir();
    let Some((dir, py)) = build("c++", tmp.path()) else {
        return;
    };
    check(&dir, &py, "leaky.cpp", true);
}
