//! Unit tests of `run`.

use super::files::supports_seq;
use super::target::{is_python_name, shebang_python};
use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
    assert!(parse_duration("ten").is_err());
    assert!(parse_duration("5x").is_err());
    assert!(parse_duration("").is_err());
}

#[test]
fn seq_support() {
    assert!(supports_seq(Some("3.19.0")));
    assert!(supports_seq(Some("3.22.0")));
    assert!(!supports_seq(Some("3.18.1")));
    assert!(!supports_seq(None));
}

#[test]
fn python_names() {
    assert!(is_python_name("python"));
    assert!(is_python_name("python3"));
    assert!(is_python_name("python3.11"));
    assert!(!is_python_name("python-config"));
    assert!(!is_python_name("cpython"));
}

#[test]
fn shebang_interpreters() {
    let py = |l: &str| shebang_python(l);
    assert_eq!(
        py("/venv/bin/python3.11").as_deref(),
        Some("/venv/bin/python3.11")
    );
    assert_eq!(py("/usr/bin/env python3").as_deref(), Some("python3"));
    assert_eq!(
        py("/usr/bin/env -S PYTHONX=1 python3 -u").as_deref(),
        Some("python3")
    );
    assert_eq!(py("/bin/sh"), None);
    assert_eq!(py("/usr/bin/env bash"), None);
    assert_eq!(py(""), None);
}

#[test]
fn xdist_targets() {
    let v = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    for yes in [
        "python -m pytest -n 2 tests",
        "pytest -n2",
        "pytest --numprocesses=auto",
        "pytest --numprocesses 4",
        "python3 -m pytest --tx 2*popen",
    ] {
        assert!(is_xdist_target(&v(yes)), "{yes}");
    }
    for no in [
        "python -m pytest tests",
        "pytest -n 0",
        "pytest -n0",
        "python test.py -n 2",
        "pytest -- -n 2",
        "pytest -n 2 tests -n 0",
    ] {
        assert!(!is_xdist_target(&v(no)), "{no}");
    }
}
