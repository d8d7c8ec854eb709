//! Issue 41's wrong verdicts, each on a real program: a generated
//! suppression file never hides what `run` calls the user's (an object
//! installed under `site-packages` whose sources are in the current
//! directory); `analyze` refuses leakgate's own JSON report and never reads
//! a file of unknown kind as an empty pass; a crash under `--engine lsan`
//! (LeakSanitizer's own `SEGV on unknown address` report, exit 23) fails;
//! a clean program under `--engine lsan` (no log written) passes with its
//! process counted.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn leakgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("LSAN_OPTIONS")
        .env_remove("ASAN_OPTIONS")
        .args(args)
        .output()
        .expect("run leakgate")
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("JSON report")).expect("JSON")
}

fn user_count(r: &Value) -> usize {
    r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["category"] == "user")
        .count()
}

/// `leak40.c` under `DIR/src/`, built into `DIR/venv/lib/python3.11/
/// site-packages/leaky`: an installed object whose sources are the checkout's.
fn installed_leaky(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(
        common::programs_dir().join("c/leak40.c"),
        src.join("leak40.c"),
    )
    .unwrap();
    let site = dir.join("venv/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    let exe = site.join("leaky");
    let out = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(src.join("leak40.c"))
        .output()
        .expect("gcc");
    common::check_success(&out, "gcc leak40.c");
    exe
}

/// `run`, `analyze`, `suppress` and the generated file agree on what is the
/// user's: the file never suppresses the leak `run` fails on, and
/// `--include-user` says loudly that it does.
#[test]
fn generated_suppressions_never_hide_what_run_calls_yours() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let exe = installed_leaky(dir);
    let exe = exe.to_str().unwrap();
    let out = leakgate(
        dir,
        &[
            "run",
            "--quiet",
            "--keep-xml",
            "xml",
            "--format",
            "json",
            "-o",
            "run.json",
            "--",
            exe,
        ],
    );
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    let run = json(&dir.join("run.json"));
    assert_eq!(run["verdict"]["status"], "fail", "{run:#}");

    // analyze of the same XML, from the same directory: the same verdict.
    let out = leakgate(
        dir,
        &["analyze", "--format", "json", "-o", "an.json", "xml"],
    );
    assert_eq!(common::code(&out), 1, "analyze: {}", common::show(&out));
    assert_eq!(user_count(&json(&dir.join("an.json"))), user_count(&run));

    // suppress writes no rule for it, and a run with the file still fails.
    let out = leakgate(dir, &["suppress", "xml", "-o", "gen.supp"]);
    common::check_success(&out, "leakgate suppress");
    let gen_supp = std::fs::read_to_string(dir.join("gen.supp")).unwrap();
    assert!(!gen_supp.contains("keep_nothing"), "{gen_supp}");
    let out = leakgate(
        dir,
        &["run", "--quiet", "--suppressions", "gen.supp", "--", exe],
    );
    assert_eq!(
        common::code(&out),
        1,
        "with gen.supp: {}",
        common::show(&out)
    );

    // Asked to cover the user's records, it says so on stderr and in the file.
    let out = leakgate(
        dir,
        &["suppress", "--include-user", "xml", "-o", "all.supp"],
    );
    common::check_success(&out, "leakgate suppress --include-user");
    let err = common::stderr(&out);
    assert!(
        err.contains("leakgate: warning: --include-user: this file suppresses 1 record(s)"),
        "{err}"
    );
    let all = std::fs::read_to_string(dir.join("all.supp")).unwrap();
    assert!(all.contains("WARNING: --include-user"), "{all}");
}

/// leakgate's own JSON report given to `analyze` (it holds the probe's and
/// the sanitizers' words in its strings) is refused with exit 2 and the
/// command that reads it, never taken for an empty sanitizer log.
#[test]
fn analyze_refuses_a_json_report() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let report = common::repo_root().join("fixtures/sanitizers/lsan-segv.txt");
    let out = leakgate(
        dir,
        &[
            "analyze",
            "--format",
            "json",
            "-o",
            "r.json",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    // A JSON report whose strings hold a checkpoint marker and a header.
    let mut r = json(&dir.join("r.json"));
    r["notes"] = serde_json::json!([
        "leakgate-checkpoint {\"v\":1}",
        "==1==ERROR: LeakSanitizer: detected memory leaks"
    ]);
    std::fs::write(dir.join("r.json"), serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    let out = leakgate(dir, &["analyze", "r.json"]);
    assert_eq!(common::code(&out), 2, "{}", common::show(&out));
    let err = common::stderr(&out);
    assert!(
        err.contains("a leakgate JSON report") && err.contains("leakgate report"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A summary line without its report is incomplete, not a pass.
    std::fs::write(
        dir.join("summary.txt"),
        "SUMMARY: AddressSanitizer: 10 byte(s) leaked in 1 allocation(s).\n",
    )
    .unwrap();
    let out = leakgate(dir, &["analyze", "summary.txt"]);
    assert_eq!(common::code(&out), 3, "{}", common::show(&out));
}

fn build(dir: &Path, name: &str, code: &str) -> String {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, code).unwrap();
    let exe = dir.join(name);
    let out = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("gcc");
    common::check_success(&out, name);
    exe.to_str().unwrap().to_string()
}

/// Under `--engine lsan`: a crash the runtime reports itself (exit 23) fails
/// with the signal, its site and the target "killed by SIGSEGV" (`analyze`
/// of the kept log too); a crash in a library is never a pass; a clean
/// program passes with one process.
#[test]
fn lsan_crashes_fail_and_clean_programs_pass() {
    if !crate::engines::liblsan() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let deadly = build(
        dir,
        "deadly",
        "#include <stdio.h>\n#include <stdlib.h>\nstatic int *bad(void) { return (int *)16; }\nint main(void) {\n    void *kept = malloc(10);\n    int *p = bad();\n    printf(\"%d %p\\n\", *p, kept); /* @crash */\n    return 0;\n}\n",
    );
    let out = leakgate(
        dir,
        &[
            "run",
            "--quiet",
            "--engine",
            "lsan",
            "--keep-xml",
            "logs",
            "--format",
            "json",
            "-o",
            "d.json",
            "--",
            &deadly,
        ],
    );
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    let r = json(&dir.join("d.json"));
    assert_eq!(r["verdict"]["status"], "fail", "{r:#}");
    let text = r.to_string();
    assert!(text.contains("SIGSEGV"), "{r:#}");
    assert!(text.contains("deadly.c"), "{r:#}");
    let out = leakgate(dir, &["analyze", "logs"]);
    assert_eq!(common::code(&out), 1, "analyze: {}", common::show(&out));

    // strlen(NULL): the crash site is libc's, the target still crashed.
    let libc = build(
        dir,
        "libc_crash",
        "#include <string.h>\n#include <stdio.h>\n#include <stdlib.h>\nint main(int argc, char **argv) {\n    void *kept = malloc(10);\n    char *volatile s = argc > 5 ? argv[0] : NULL;\n    printf(\"%zu %p\\n\", strlen(s), kept);\n    return 0;\n}\n",
    );
    let out = leakgate(dir, &["run", "--quiet", "--engine", "lsan", "--", &libc]);
    assert_ne!(common::code(&out), 0, "{}", common::show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("SIGSEGV"),
        "{}",
        common::show(&out)
    );

    // A crash before the runtime set up its handler (no allocation yet):
    // no log at all, and still never a pass.
    let early = build(
        dir,
        "early",
        "int main(void) {\n    int *volatile p = (int *)16;\n    return *p;\n}\n",
    );
    let out = leakgate(dir, &["run", "--quiet", "--engine", "lsan", "--", &early]);
    assert_ne!(common::code(&out), 0, "{}", common::show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("killed by SIGSEGV"),
        "{}",
        common::show(&out)
    );

    let clean = build(
        dir,
        "clean",
        "#include <stdlib.h>\nint main(void) { void *p = malloc(10); free(p); return 0; }\n",
    );
    let out = leakgate(
        dir,
        &[
            "run", "--quiet", "--engine", "lsan", "--format", "json", "-o", "c.json", "--", &clean,
        ],
    );
    assert_eq!(common::code(&out), 0, "{}", common::show(&out));
    let r = json(&dir.join("c.json"));
    assert_eq!(r["verdict"]["status"], "pass", "{r:#}");
    assert_eq!(r["processes"].as_array().map(Vec::len), Some(1), "{r:#}");
    let text = r.to_string();
    assert!(!text.contains("Valgrind wrote no"), "{r:#}");
}
