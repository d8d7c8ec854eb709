//! Integration tests: what `leakgate run` does to the system around it. The
//! target is started without a shell (shell metacharacters in its arguments
//! reach it verbatim and do nothing); Valgrind's XML lives in a private
//! (0700) temporary directory that is removed afterwards (`--keep-xml`
//! copies it out first); and leakgate writes nothing outside the paths it
//! was given and that directory (fresh `HOME`, `TMPDIR` and working
//! directory stay empty).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

/// Runs leakgate with a clean environment: `HOME`, `TMPDIR` and the working
/// directory are the given (fresh) directories.
fn leakgate(args: &[&str], home: &Path, tmp: &Path, cwd: &Path) -> Output {
    let out = Command::new(common::leakgate_bin())
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TMPDIR", tmp)
        .output()
        .expect("run leakgate");
    assert_ne!(
        out.status.code(),
        Some(101),
        "panic: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every entry under `dir`, recursively (relative paths).
fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() && !p.is_symlink() {
                todo.push(p);
            }
        }
    }
    out.sort();
    out
}

struct Dirs {
    _root: tempfile::TempDir,
    home: std::path::PathBuf,
    tmp: std::path::PathBuf,
    cwd: std::path::PathBuf,
    out: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let root = common::tempdir();
    let mk = |n: &str| {
        let p = root.path().join(n);
        std::fs::create_dir(&p).unwrap();
        p
    };
    Dirs {
        home: mk("home"),
        tmp: mk("tmp"),
        cwd: mk("cwd"),
        out: mk("out"),
        _root: root,
    }
}

#[test]
fn target_arguments_never_meet_a_shell() {
    if !common::valgrind_or_skip() {
        return;
    }
    let d = dirs();
    let printf = common::find_on_path("printf".as_ref()).expect("printf");
    let tricky = [
        "a;touch pwned1",
        "$(touch pwned2)",
        "`touch pwned3`",
        "*",
        "&& touch pwned4",
        "> pwned5",
        "'\"\\",
        "$HOME",
    ];
    let report = d.out.join("r.json");
    let mut args = vec![
        "run",
        "-q",
        "--no-trace-children",
        "--format",
        "json",
        "-o",
        report.to_str().unwrap(),
        "--",
        printf.to_str().unwrap(),
        "[%s]",
    ];
    args.extend(tricky);
    let out = leakgate(&args, &d.home, &d.tmp, &d.cwd);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: String = tricky.iter().map(|a| format!("[{a}]")).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    assert!(listing(&d.cwd).is_empty(), "{:?}", listing(&d.cwd));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let cmd: Vec<&str> = r["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(&cmd[2..], &tricky[..]);
}

#[test]
fn xml_lives_in_a_private_directory_removed_afterwards() {
    if !common::valgrind_or_skip() {
        return;
    }
    let d = dirs();
    let sh = common::find_on_path("sh".as_ref()).expect("sh");
    // The target itself looks at leakgate's directory while it runs.
    let probe = "for d in \"$TMPDIR\"/leakgate-*; do stat -c 'mode=%a' \"$d\"; ls \"$d\"; done";
    let keep = d.out.join("kept");
    let report = d.out.join("r.json");
    for with_keep in [false, true] {
        let mut args = vec![
            "run",
            "-q",
            "--no-trace-children",
            "--format",
            "json",
            "-o",
            report.to_str().unwrap(),
        ];
        if with_keep {
            args.extend(["--keep-xml", keep.to_str().unwrap()]);
        }
        args.extend(["--", sh.to_str().unwrap(), "-c", probe]);
        let out = leakgate(&args, &d.home, &d.tmp, &d.cwd);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("mode=700"), "{stdout}");
        assert!(
            stdout.contains(".xml"),
            "the XML is written there: {stdout}"
        );
        assert!(
            listing(&d.tmp).is_empty(),
            "left behind: {:?}",
            listing(&d.tmp)
        );
        if with_keep {
            let kept = listing(&keep);
            assert!(
                kept.iter().any(|f| f.ends_with(".xml")),
                "--keep-xml: {kept:?}"
            );
        }
    }
}

#[test]
fn nothing_is_written_outside_the_given_paths() {
    if !common::valgrind_or_skip() {
        return;
    }
    let d = dirs();
    let build = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", build.path());
    let report = d.out.join("r.json");
    let html = d.out.join("r.html");
    let junit = d.out.join("j.xml");
    let base = d.out.join("base.json");
    let supp = d.out.join("noise.supp");
    let keep = d.out.join("xml");
    let out = leakgate(
        &[
            "run",
            "-q",
            "--format",
            "json",
            "-o",
            report.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--write-baseline",
            base.to_str().unwrap(),
            "--write-suppressions",
            supp.to_str().unwrap(),
            "--keep-xml",
            keep.to_str().unwrap(),
            "--repo-root",
            d.out.to_str().unwrap(),
            "--",
            exe.to_str().unwrap(),
        ],
        &d.home,
        &d.tmp,
        &d.cwd,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, dir) in [("HOME", &d.home), ("TMPDIR", &d.tmp), ("cwd", &d.cwd)] {
        assert!(listing(dir).is_empty(), "{name}: {:?}", listing(dir));
    }
    let written = listing(&d.out);
    for f in [
        "r.json",
        "r.html",
        "j.xml",
        "base.json",
        "noise.supp",
        "xml",
    ] {
        assert!(written.contains(&f.to_string()), "{f} in {written:?}");
    }
    // analyze of the kept XML: only its outputs.
    let out2 = d.out.join("again.json");
    let out = leakgate(
        &[
            "analyze",
            "--format",
            "json",
            "-o",
            out2.to_str().unwrap(),
            keep.to_str().unwrap(),
        ],
        &d.home,
        &d.tmp,
        &d.cwd,
    );
    assert_eq!(out.status.code(), Some(1));
    for (name, dir) in [("HOME", &d.home), ("TMPDIR", &d.tmp), ("cwd", &d.cwd)] {
        assert!(listing(dir).is_empty(), "{name}: {:?}", listing(dir));
    }
    assert!(out2.is_file());
}

#[test]
fn a_target_argument_that_is_not_utf8_is_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let out = Command::new(common::leakgate_bin())
        .args(["run", "--", "/bin/echo"])
        .arg(std::ffi::OsStr::from_bytes(b"a\xffb"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid UTF-8"));
}
