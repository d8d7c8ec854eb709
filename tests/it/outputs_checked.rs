//! Integration tests: every output is checked before Valgrind starts (a
//! missing or unwritable directory is exit 2 at once and the target never
//! runs), and a write that fails after the run names the file and keeps
//! the exit code the verdict earned.

use std::path::Path;
use std::process::Command;

use crate::common;

/// `leakgate run ARGS -- sh -c 'touch MARKER'`: exit code, stderr, and
/// whether the target ran.
fn run_with(args: &[&str], dir: &Path) -> (i32, String, bool) {
    let marker = dir.join("target-ran");
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .arg("run")
        .args(args)
        .args(["--", "sh", "-c"])
        .arg(format!("touch '{}'", marker.display()))
        .output()
        .expect("run leakgate");
    (
        out.status.code().expect("exit code"),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
        marker.exists(),
    )
}

#[test]
fn a_bad_output_path_is_refused_before_the_run() {
    // No Valgrind needed: the check comes first, and the target must not run.
    let tmp = common::tempdir();
    let d = tmp.path();
    let missing = d.join("no/such/dir/out");
    let ro = d.join("read-only");
    std::fs::create_dir(&ro).unwrap();
    let file_as_dir = d.join("a-file");
    std::fs::write(&file_as_dir, "").unwrap();
    for flag in [
        "-o",
        "--html",
        "--junit",
        "--sarif",
        "--codequality",
        "--markdown",
        "--write-baseline",
        "--write-suppressions",
    ] {
        for (bad, needle) in [
            (missing.clone(), "no such directory"),
            (file_as_dir.join("x"), "no such directory"),
            (d.to_path_buf(), "is a directory"),
        ] {
            let (code, err, ran) = run_with(&[flag, bad.to_str().unwrap()], d);
            assert_eq!(code, 2, "{flag} {}: {err}", bad.display());
            assert!(!ran, "{flag} {}: the target ran", bad.display());
            assert_eq!(err.lines().count(), 1, "one line: {err}");
            assert!(err.contains(needle), "{needle:?} in {err:?}");
        }
    }
    // A directory that exists but takes no new file (root ignores the mode
    // bits, so this part only runs as another user).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(ro.join("probe"), "").is_err() {
        let (code, err, ran) = run_with(&["-o", ro.join("r.json").to_str().unwrap()], d);
        assert_eq!(code, 2, "{err}");
        assert!(!ran && err.contains("cannot write in"), "{err}");
    }
}

#[test]
fn a_write_that_fails_after_the_run_keeps_the_verdict() {
    // /dev/full passes the check (its directory takes files) and fails the
    // write: the report names it, the other outputs are written, and the
    // exit code is the gate's (the fixture has gated user leaks: 1).
    if !Path::new("/dev/full").exists() {
        eprintln!("SKIP: no /dev/full");
        return;
    }
    let tmp = common::tempdir();
    let junit = tmp.path().join("junit.xml");
    let out = Command::new(common::leakgate_bin())
        .current_dir(common::repo_root())
        .args([
            "analyze",
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
            "--format",
            "json",
            "-o",
            "/dev/full",
            "--junit",
        ])
        .arg(&junit)
        .output()
        .expect("run leakgate");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write /dev/full"), "{err}");
    assert!(junit.exists(), "the other outputs are still written");
}
