//! Distribution tests: what users install is what we test.
//!
//! * `pip install pyleakgate`: the manylinux2014 (glibc 2.17) x86-64 wheel is
//!   built by `dist/build-wheels.sh --arch x86_64` (maturin + zig, from the
//!   test Python's environment, `LEAKGATE_TEST_PYTHON`/`.venv`, which CI
//!   gives maturin, ziglang and auditwheel), so the release script itself is
//!   tested; its tag (file name and `auditwheel show`) and the highest GLIBC
//!   symbol version its executable needs (<= 2.17) are checked here again.
//!   Then it is installed into a fresh venv without network, and used from
//!   that venv's PATH: `leakgate --version`, `leakgate analyze` on a recorded
//!   fixture, `leakgate run` of the CPython test program, the Python helper
//!   (`leakgate_probe`, `python -m leakgate`) and its `pytest11` entry point.
//! * `cargo install --path . --root DIR`: the same checks on the installed
//!   binary.
//! * The aarch64 wheel, cross-built by the same script and run under
//!   qemu-user (`aarch64_wheel_cross_builds`).
//!
//! Each builds leakgate again (release) in a target directory under
//! `target/tmp`, one at a time.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use crate::common::{check_success as check, run_capture as output};

/// One build at a time (the x86-64 two share a target directory).
static BUILD: Mutex<()> = Mutex::new(());

fn build_target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("distribution-target")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).unwrap()
}

/// The checks every installation must pass, with `bin_dir` (holding the
/// installed `leakgate`) first on PATH and `leakgate` called by name.
fn check_installed(bin_dir: &Path, work: &Path) {
    let path = path_with(bin_dir);
    let leakgate = || {
        let mut c = Command::new("leakgate");
        c.env("PATH", &path).env_remove("PYTHONMALLOC");
        c
    };
    // Which executable runs: the installed one.
    let which = output(
        Command::new("sh")
            .args(["-c", "command -v leakgate"])
            .env("PATH", &path),
        "sh",
    );
    assert_eq!(
        stdout(&which).trim(),
        bin_dir.join("leakgate").display().to_string()
    );

    let out = output(leakgate().arg("--version"), "leakgate --version");
    check(&out, "leakgate --version");
    let v = stdout(&out);
    assert!(
        v.starts_with(&format!("leakgate {}\n", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    assert!(v.contains("tested with Valgrind 3.19"), "{v}");

    // analyze on a recorded fixture: the bundled suppressions are inside.
    let fixture = common::repo_root().join("fixtures/recorded/leak_kinds.xml");
    let out = output(
        leakgate()
            .args(["analyze", "--format", "json"])
            .arg(&fixture),
        "leakgate analyze",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the fixture's leaks fail the gate"
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(r["summary"]["records"], 7);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], 181);
    assert!(r["summary"]["suppressed"]["loaded"].as_u64().unwrap() > 100);

    // Completions and the manual page come from the same binary.
    let out = output(leakgate().args(["completions", "bash"]), "completions");
    check(&out, "leakgate completions bash");
    assert!(stdout(&out).contains("_leakgate()"));
    let out = output(leakgate().args(["man", "run"]), "man");
    check(&out, "leakgate man run");
    assert!(stdout(&out).contains(".TH leakgate-run 1"));

    // run: the CPython test program under real Valgrind.
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let dir = common::build_python_ext_with(&py, "cpython", work);
    let json = work.join("run.json");
    let out = output(
        leakgate()
            .current_dir(&dir)
            .args(["run", "--format", "json", "-o"])
            .arg(&json)
            .arg("--")
            .arg(&py)
            .arg("test.py"),
        "leakgate run",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the planted leaks fail the gate\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("JSON report");
    let mut funcs: Vec<String> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["kind"] == "Leak_DefinitelyLost")
        .map(|f| f["location"]["function"].as_str().unwrap_or("").to_string())
        .collect();
    funcs.sort();
    assert_eq!(
        funcs,
        ["error_path_leak", "leak_bytes", "leak_malloc"],
        "{}",
        stdout(&out)
    );
}

/// `(major, minor)` of every `GLIBC_x.y[.z]` version the ELF file `exe`
/// needs (`readelf -V`).
fn glibc_needs(exe: &Path) -> Vec<(u32, u32)> {
    let out = output(
        Command::new("readelf").args(["-V", "-W"]).arg(exe),
        "readelf",
    );
    check(&out, "readelf -V");
    let text = stdout(&out);
    let mut v: Vec<(u32, u32)> = text
        .split("GLIBC_")
        .skip(1)
        .filter_map(|rest| {
            let ver: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = ver.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next()??))
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The test Python, when it has maturin, ziglang and auditwheel (what
/// `dist/build-wheels.sh` runs); else skips.
fn wheel_python() -> Option<PathBuf> {
    let py = common::python_or_skip()?;
    for module in ["maturin", "ziglang", "auditwheel"] {
        let has = Command::new(&py)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has
            && common::require_or_skip(&format!(
                "{} has no {module} (pip install maturin ziglang auditwheel)",
                py.display()
            ))
        {
            return None;
        }
    }
    Some(py)
}

/// `auditwheel show WHEEL`, its words on one line (its report wraps).
fn auditwheel_words(py: &Path, wheel: &Path) -> String {
    let out = output(
        Command::new(py)
            .args(["-m", "auditwheel", "show"])
            .arg(wheel),
        "auditwheel show",
    );
    check(&out, "auditwheel show");
    stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dist/build-wheels.sh --arch ARCH --python PY --target-dir TARGET OUT`,
/// one build at a time.
fn build_wheels(py: &Path, arch: &str, target: &Path, out: &Path) -> Output {
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    output(
        Command::new("bash")
            .current_dir(common::repo_root())
            .arg("dist/build-wheels.sh")
            .args(["--arch", arch, "--python"])
            .arg(py)
            .arg("--target-dir")
            .arg(target)
            .arg(out),
        "dist/build-wheels.sh",
    )
}

/// The `.whl` files in `dir`.
fn wheels_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect()
}

#[test]
fn wheel_installs_into_a_fresh_venv() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux"))
        && common::require_or_skip("the x86-64 wheel installs only on x86-64 Linux")
    {
        return;
    }
    let Some(py) = wheel_python() else {
        return;
    };
    let tmp = common::tempdir();
    let wheels = tmp.path().join("wheels");
    let out = build_wheels(&py, "x86_64", &build_target_dir(), &wheels);
    check(&out, "dist/build-wheels.sh --arch x86_64");
    let built = wheels_in(&wheels);
    let [wheel] = built.as_slice() else {
        panic!("expected one wheel in {}: {built:?}", wheels.display());
    };
    let wheel = wheel.clone();
    // The script names what it built, with its size.
    let listed = stdout(&out);
    assert!(
        listed.contains(&format!("wheel: {} (", wheel.display())),
        "{listed}"
    );
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!(
            "pyleakgate-{}-py3-none-",
            env!("CARGO_PKG_VERSION")
        )),
        "{name}"
    );
    assert!(
        name.contains("manylinux_2_17_x86_64") || name.contains("manylinux2014_x86_64"),
        "not a manylinux2014 wheel: {name}"
    );
    // auditwheel's own verdict (its report wraps lines: compare words).
    let words = auditwheel_words(&py, &wheel);
    assert!(
        words.contains("is consistent with the following platform tag: \"manylinux_2_17_x86_64\""),
        "{words}"
    );
    // A fresh venv, the wheel only (no index, no dependencies).
    let venv = tmp.path().join("venv");
    let out = output(
        Command::new(&py).args(["-m", "venv"]).arg(&venv),
        "python -m venv",
    );
    check(&out, "python -m venv");
    let vpy = venv.join("bin/python");
    let out = output(
        Command::new(&vpy)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-index",
                "--no-deps",
                "--disable-pip-version-check",
            ])
            .arg(&wheel),
        "pip install",
    );
    check(&out, "pip install the wheel");
    // The installed executable needs nothing newer than glibc 2.17.
    let needs = glibc_needs(&venv.join("bin/leakgate"));
    assert!(!needs.is_empty(), "no GLIBC_ versions found");
    assert!(
        needs.iter().all(|&v| v <= (2, 17)),
        "needs glibc newer than 2.17: {needs:?}"
    );

    // The Python side: the probe, `python -m leakgate`, the pytest plugin's
    // entry point.
    let script = "\
import importlib.metadata as md, leakgate, leakgate_probe, leakgate_probe.pytest_plugin
eps = [e.value for e in md.entry_points(group='pytest11') if e.name == 'leakgate']
print(eps)
print(leakgate.executable())
leakgate_probe.checkpoint('not under valgrind: a no-op')
";
    let out = output(Command::new(&vpy).args(["-c", script]), "python");
    check(&out, "importing the installed Python helper");
    let text = stdout(&out);
    assert!(
        text.contains("['leakgate_probe.pytest_plugin']"),
        "pytest11 entry point: {text}"
    );
    assert!(
        text.contains(&venv.join("bin/leakgate").display().to_string()),
        "{text}"
    );
    let out = output(
        Command::new(&vpy).args(["-m", "leakgate", "--version"]),
        "python -m leakgate",
    );
    check(&out, "python -m leakgate --version");
    assert!(stdout(&out).starts_with("leakgate "));

    check_installed(&venv.join("bin"), tmp.path());
}

/// The aarch64 wheel, cross-built on this x86-64 machine by
/// `dist/build-wheels.sh --arch aarch64` with a rustc that has the aarch64
/// standard library (rustup's target, or Debian's rustc-web with
/// libstd-rust-web-dev:arm64, which `.ci/run` installs with
/// `dist/debian-aarch64-std.sh`). The script checks the tag, auditwheel's
/// verdict and GLIBC <= 2.17, and runs the executable under
/// qemu-aarch64-static (`--version`, `analyze` of a recorded report); the
/// tag and auditwheel's verdict are checked here again.
#[test]
fn aarch64_wheel_cross_builds() {
    if !cfg!(all(target_arch = "x86_64", target_os = "linux"))
        && common::require_or_skip("the aarch64 wheel is cross-built on x86-64 Linux")
    {
        return;
    }
    let Some(py) = wheel_python() else {
        return;
    };
    let tmp = common::tempdir();
    let wheels = tmp.path().join("wheels");
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("distribution-aarch64");
    let out = build_wheels(&py, "aarch64", &target, &wheels);
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success()
        && log.contains("SKIP: aarch64 wheel")
        && common::require_or_skip(
            "no rustc with the aarch64 standard library (bash dist/debian-aarch64-std.sh)",
        )
    {
        return;
    }
    check(&out, "dist/build-wheels.sh --arch aarch64");
    let built = wheels_in(&wheels);
    let [wheel] = built.as_slice() else {
        panic!(
            "expected one wheel in {}: {built:?}\n{log}",
            wheels.display()
        );
    };
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.contains("manylinux_2_17_aarch64") || name.contains("manylinux2014_aarch64"),
        "not a manylinux2014 aarch64 wheel: {name}"
    );
    let words = auditwheel_words(&py, wheel);
    assert!(
        words.contains("is consistent with the following platform tag: \"manylinux_2_17_aarch64\""),
        "{words}"
    );
    // Where qemu-user and an arm64 glibc are installed (CI), the script ran
    // the aarch64 executable.
    if common::find_on_path("qemu-aarch64-static".as_ref()).is_some()
        && Path::new("/lib/ld-linux-aarch64.so.1").exists()
    {
        assert!(
            log.contains("under qemu-aarch64-static: leakgate analyze"),
            "{log}"
        );
    }
}

#[test]
fn cargo_install_puts_the_same_binary_in_root() {
    let tmp = common::tempdir();
    let root = tmp.path().join("root");
    {
        let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
        let out = output(
            Command::new(env!("CARGO"))
                .args(["install", "--quiet", "--locked", "--offline", "--path"])
                .arg(common::repo_root())
                .arg("--root")
                .arg(&root)
                .arg("--target-dir")
                .arg(build_target_dir()),
            "cargo install",
        );
        check(&out, "cargo install --path . --root DIR");
    }
    check_installed(&root.join("bin"), tmp.path());
}
