//! The README's sample output (its first code block, `$ leakgate run --
//! python3 test_spam.py`) is what a run prints: `examples/leaky-ext` is
//! built in a temporary directory and run under leakgate, and the
//! structural lines of both (the header, target and environment lines, the
//! FAIL line and its reason, the finding's lines, the noise, suppressed and
//! summary lines) must be the same, in the same order, once numbers and
//! paths are normalised (`N`, `PATH`).

use std::process::{Command, Stdio};

use regex::Regex;

use crate::common;

/// The README block's lines after its `$ leakgate run ...` line.
fn readme_sample() -> Vec<String> {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).unwrap();
    let start = readme
        .find("```\n$ leakgate run -- python3 test_spam.py\n")
        .expect("README.md has no ``` block starting `$ leakgate run -- python3 test_spam.py`");
    let body = &readme[start + 4..];
    let end = body.find("\n```").unwrap();
    body[..end].lines().skip(1).map(str::to_string).collect()
}

/// Whether a line of the text report is one of the structural lines
/// compared (frames beyond the user's, the source file's path, the
/// process table of a multi-process run are not).
fn structural(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "leakgate ",
        "target: ",
        "environment: PYTHON",
        "FAIL: ",
        "PASS",
        "  - --fail-on ",
        "  1. ",
        "     at ",
        "     stack:",
        "       > ",
        "noise",
        "suppressed",
        "summary: ",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
        || Regex::new(r"^ +\d+ \| ").unwrap().is_match(line)
}

/// Numbers become `N`, absolute paths `PATH`, the target's command `CMD`,
/// `processes` `process`.
fn normalise(line: &str) -> String {
    let target = Regex::new(r"^target: .* \(exit code").unwrap();
    let line = target.replace(line, "target: CMD (exit code");
    let path = Regex::new(r"/[^\s():]+").unwrap();
    let line = path.replace_all(&line, "PATH");
    let num = Regex::new(r"\d[\d,.]*").unwrap();
    let line = num.replace_all(&line, "N");
    line.replace("processes", "process").trim_end().to_string()
}

fn shape(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| structural(l))
        .map(|l| normalise(l))
        .collect()
}

#[test]
fn readme_sample_output_is_a_real_run() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = tmp.path().join("leaky-ext");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["setup.py", "spam.c", "test_spam.py"] {
        std::fs::copy(
            common::repo_root().join("examples/leaky-ext").join(f),
            dir.join(f),
        )
        .unwrap();
    }
    let out = common::run_capture(
        Command::new(&py)
            .current_dir(&dir)
            .args(["setup.py", "-q", "build_ext", "--inplace"])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "setup.py build_ext",
    );
    common::check_success(&out, "building examples/leaky-ext");
    let out = common::run_capture(
        Command::new(common::leakgate_bin())
            .current_dir(&dir)
            .args(["run", "--"])
            .arg(&py)
            .arg("test_spam.py")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("NO_COLOR")
            .stdin(Stdio::null()),
        "leakgate run",
    );
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    let real: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let sample = readme_sample();
    let (want, got) = (shape(&sample), shape(&real));
    assert!(
        got.len() >= 10,
        "too few structural lines in the run: {got:#?}"
    );
    assert_eq!(
        want,
        got,
        "README.md's sample output is not what a run prints; the run:\n{}",
        real.join("\n")
    );
    // The target's own output comes first, as in the README.
    assert_eq!(sample.first().map(String::as_str), Some("spam ok"));
    assert_eq!(real.first().map(String::as_str), Some("spam ok"));
}
