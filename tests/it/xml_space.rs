//! A report directory that cannot hold Valgrind's XML, for real: the
//! file-size limit (`ulimit -f`, RLIMIT_FSIZE, set by `sh` before it execs
//! leakgate) cuts the XML of a small C program, and, where a user and mount
//! namespace can be made (`unshare -rm`), a nearly full tmpfs as `TMPDIR`
//! does. The report names the cause, the directory and what was written,
//! says how to point leakgate elsewhere, and the run ends incomplete
//! (exit 3, or 1 when a gated finding was read before the cut), never a
//! pass. The tmpfs half prints `SKIP` where no namespace can be made (it
//! does not fail under `LEAKGATE_REQUIRE_ALL`: that is the kernel's policy,
//! not a missing package).

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `sh -c "SETUP; exec leakgate run --format json ARGS -- EXE"` (report on
/// stdout: a pipe, which the file-size limit does not touch); (exit code,
/// report, stderr).
fn run_sh(
    dir: &Path,
    wrap: &[&str],
    setup: &str,
    args: &[&str],
    exe: &Path,
) -> (i32, Value, String) {
    let script = format!("{setup}; exec \"$0\" run --format json \"$@\"");
    let out = Command::new(wrap[0])
        .args(&wrap[1..])
        .current_dir(dir)
        .arg("sh")
        .arg("-c")
        .arg(script)
        .arg(common::leakgate_bin())
        .args(args)
        .arg("--")
        .arg(exe)
        .output()
        .expect("run sh");
    let stderr = common::stderr(&out);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}); stderr:\n{stderr}"));
    (common::code(&out), report, stderr)
}

#[test]
fn file_size_limit_is_named_and_never_passes() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let clean = common::build_c("c/clean.c", tmp.path());
    // 2 blocks of 512 bytes: the clean program's XML (about 1.5 kB) does not fit.
    let (code, r, stderr) = run_sh(tmp.path(), &["env"], "ulimit -f 2", &[], &clean);
    assert_eq!(
        code, 3,
        "a cut XML is incomplete, never a pass; stderr:\n{stderr}"
    );
    assert_eq!(r["verdict"]["status"], "incomplete");
    let why = common::reasons(&r);
    let named = why
        .iter()
        .find(|w| w.contains("the file-size limit (ulimit -f: 1,024 bytes) stopped Valgrind's XML"))
        .unwrap_or_else(|| panic!("no file-size reason: {why:#?}"));
    assert!(named.contains("at 1,024 bytes"), "{named}");
    assert!(named.contains("ulimit -f unlimited"), "{named}");

    // A leak read before the cut still fails the gate (1), and the limit is said.
    let leak = common::build_c("c/leak40.c", tmp.path());
    let (code, r, stderr) = run_sh(tmp.path(), &["env"], "ulimit -f 8", &[], &leak);
    assert_eq!(code, 1, "stderr:\n{stderr}");
    let why = common::reasons(&r);
    assert!(
        why.iter().any(|w| w.contains("ulimit -f: 4,096 bytes")),
        "{why:#?}"
    );
    assert!(why.iter().any(|w| w.starts_with("incomplete")), "{why:#?}");
}

/// Whether `unshare -rm` can mount a tmpfs on `dir` here.
fn can_mount(dir: &Path) -> bool {
    Command::new("unshare")
        .args(["-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(dir)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn full_tmpdir_is_named_and_never_passes() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let small = tmp.path().join("small");
    std::fs::create_dir(&small).unwrap();
    if !can_mount(&small) {
        eprintln!("SKIP: unshare -rm cannot mount a tmpfs here (no user namespaces)");
        return;
    }
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let s = small.display();
    // 16 KiB free of 64: Valgrind starts, its 26 kB of XML do not fit; then
    // 8 KiB free: not even Valgrind's vgdb file fits, the XML is empty.
    for (free_k, what) in [(16, "cut"), (8, "empty")] {
        let setup = format!(
            "mount -t tmpfs -o size=64k tmpfs {s} && head -c {}k /dev/zero > {s}/fill && export TMPDIR={s}",
            64 - free_k
        );
        let (code, r, stderr) = run_sh(
            tmp.path(),
            &["unshare", "-rm"],
            &setup,
            &["--show-leak-kinds", "all"],
            &exe,
        );
        assert!(
            code == 3 || code == 1,
            "{what}: exit {code}, never a pass nor a usage error; stderr:\n{stderr}"
        );
        let why = common::reasons(&r);
        let named = why
            .iter()
            .find(|w| w.contains(&format!("{s} has no room for Valgrind's XML")))
            .unwrap_or_else(|| panic!("{what}: no full-disk reason: {why:#?}\n{stderr}"));
        assert!(named.contains("TMPDIR=/path/with/room"), "{named}");
        assert!(named.contains("bytes written in all"), "{named}");
    }
}
