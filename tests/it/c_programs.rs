//! Integration tests: C/C++ programs built from `tests/programs/` run under
//! real Valgrind through `leakgate run`, checked finding by finding against
//! the markers in their sources.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `leakgate run --format json ARGS -- CMD` in `dir`; returns (exit code, report).
fn run_json(dir: &Path, extra: &[&str], cmd: &[&str]) -> (i32, Value) {
    let json = dir.join("leakgate-report.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .arg("run")
        .args(["--format", "json", "--output"])
        .arg(&json)
        .args(extra)
        .arg("--")
        .args(cmd)
        .output()
        .expect("run leakgate");
    let code = out.status.code().expect("exit code");
    let bytes = std::fs::read(&json).unwrap_or_default();
    let report: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, report)
}

fn user_findings(r: &Value) -> Vec<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect()
}

/// The user finding of `kind` at `line`, exactly one.
fn find<'a>(r: &'a Value, kind: &str, line: u32) -> &'a Value {
    let hits: Vec<&Value> = user_findings(r)
        .into_iter()
        .filter(|f| f["kind"] == kind && f["location"]["line"] == line)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one {kind} at line {line}; user findings: {:#?}",
        user_findings(r)
            .iter()
            .map(|f| (f["kind"].clone(), f["location"].clone()))
            .collect::<Vec<_>>()
    );
    hits[0]
}

#[test]
fn every_leak_kind_is_found_at_its_line() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let src = tmp.path().join("leak_kinds.c");
    let line = |m| common::marker_line(&src, m);
    let (code, r) = run_json(
        tmp.path(),
        &["--show-leak-kinds", "all"],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1, "definite leaks fail the gate");
    common::assert_conserved(&r);
    let f = find(&r, "Leak_DefinitelyLost", line("@definite"));
    assert_eq!(f["bytes"], 64);
    assert_eq!(f["blocks"], 1);
    assert_eq!(f["location"]["function"], "leak_definite");
    assert!(
        f["source_line"].as_str().unwrap().contains("@definite"),
        "source line shown"
    );
    let f = find(&r, "Leak_DefinitelyLost", line("@indirect_outer"));
    assert_eq!(f["bytes"], 48, "leakedbytes is direct + indirect");
    let f = find(&r, "Leak_IndirectlyLost", line("@indirect_inner"));
    assert_eq!(f["bytes"], 32);
    let f = find(&r, "Leak_PossiblyLost", line("@possible"));
    assert_eq!(f["bytes"], 48);
    let f = find(&r, "Leak_StillReachable", line("@reachable"));
    assert_eq!(f["bytes"], 24);
    let f = find(&r, "Leak_DefinitelyLost", line("@loop"));
    assert_eq!(
        (f["bytes"].as_u64(), f["blocks"].as_u64()),
        (Some(80), Some(5))
    );
    assert_eq!(f["records"], 1, "one loss record for the loop");
    let f = find(&r, "Leak_DefinitelyLost", line("@strdup"));
    assert_eq!(
        f["location"]["function"], "leak_strdup",
        "the caller, not libc"
    );
    assert_eq!(user_findings(&r).len(), 7);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], 181);
    assert_eq!(r["summary"]["user"]["definitely_lost"]["blocks"], 8);
    assert_eq!(r["verdict"]["status"], "fail");
    assert_eq!(r["valgrind"]["version"], "3.19.0");
    assert_eq!(r["valgrind"]["protocol"], 4);
    assert_eq!(r["mode"], "run");
    assert_eq!(r["processes"].as_array().unwrap().len(), 1);
    assert_eq!(r["processes"][0]["complete"], true);
    assert_eq!(r["processes"][0]["exit"]["code"], 0);
}

#[test]
fn memory_errors_are_found_and_fail_the_gate() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/mem_errors.c", tmp.path());
    let src = tmp.path().join("mem_errors.c");
    let line = |m| common::marker_line(&src, m);
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    common::assert_conserved(&r);
    find(&r, "InvalidRead", line("@invalid_read"));
    find(&r, "InvalidWrite", line("@invalid_write"));
    let f = find(&r, "UninitCondition", line("@uninit_cond"));
    assert!(f["origin"].is_array(), "--track-origins stack kept");
    find(&r, "InvalidFree", line("@invalid_free"));
    assert_eq!(r["summary"]["user"]["errors"], 4);
}

/// The frame of `stack` (a JSON array of frames) marked as the user's
/// first: (function, line).
fn top_user(stack: &Value) -> (String, u64) {
    let f = stack
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["user"] == true)
        .unwrap_or_else(|| panic!("no user frame in {stack:#}"));
    (
        f["function"].as_str().unwrap().to_string(),
        f["line"].as_u64().unwrap(),
    )
}

/// A use after free, a read past a block and a double free: each finding
/// has Valgrind's other stacks (where the block was freed, where it was
/// allocated) with the user's frames marked, in JSON, text, SARIF and HTML;
/// they change no fingerprint.
#[test]
fn freed_and_allocated_stacks_are_shown() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/heap_misuse.c", tmp.path());
    let src = tmp.path().join("heap_misuse.c");
    let line = |m| common::marker_line(&src, m);
    let sarif = tmp.path().join("r.sarif");
    let html = tmp.path().join("r.html");
    let (code, r) = run_json(
        tmp.path(),
        &[
            "--sarif",
            sarif.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
        ],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    common::assert_conserved(&r);
    assert_eq!(user_findings(&r).len(), 3);
    // (read/free site, [(aux text start, top user frame, its line)])
    let cases = [
        (
            find(&r, "InvalidRead", line("@uaf_read")),
            vec![
                ("Address 0x", "release", line("@uaf_free")),
                ("Block was alloc'd at", "make", line("@uaf_alloc")),
            ],
        ),
        (
            find(&r, "InvalidRead", line("@overflow_read")),
            vec![("Address 0x", "overflow", line("@overflow_alloc"))],
        ),
        (
            find(&r, "InvalidFree", line("@df_again")),
            vec![
                ("Address 0x", "double_free", line("@df_free")),
                ("Block was alloc'd at", "double_free", line("@df_alloc")),
            ],
        ),
    ];
    for (f, want) in &cases {
        let aux = f["aux_stacks"].as_array().expect("aux_stacks");
        assert_eq!(aux.len(), want.len(), "{f:#}");
        for (a, (text, func, l)) in aux.iter().zip(want) {
            assert!(a["text"].as_str().unwrap().starts_with(text), "{a:#}");
            assert_eq!(top_user(&a["stack"]), (func.to_string(), u64::from(*l)));
            // The allocator is not the user's.
            assert_eq!(a["stack"][0]["user"], false, "{a:#}");
        }
    }
    let uaf = &cases[0].0["aux_stacks"][0]["text"];
    assert!(uaf.as_str().unwrap().ends_with("free'd"), "{uaf}");
    let over = &cases[1].0["aux_stacks"][0]["text"];
    assert!(
        over.as_str()
            .unwrap()
            .ends_with("is 0 bytes after a block of size 8 alloc'd"),
        "{over}"
    );

    // Text: the free site under the read, in the default view and with -v.
    let json = tmp.path().join("leakgate-report.json");
    for verbose in [false, true] {
        let mut cmd = Command::new(common::leakgate_bin());
        cmd.current_dir(tmp.path()).arg("report").arg(&json);
        if verbose {
            cmd.arg("-v");
        }
        let out = common::run_capture(&mut cmd, "leakgate report");
        let text = String::from_utf8_lossy(&out.stdout);
        let free = format!("> release (heap_misuse.c:{})", line("@uaf_free"));
        let read = text.find("at heap_misuse.c:").expect("a finding");
        let at = text
            .find(&free)
            .unwrap_or_else(|| panic!("{free}:\n{text}"));
        assert!(at > read, "{text}");
        assert!(text.contains("free'd:\n"), "{text}");
        assert!(text.contains("Block was alloc'd at:\n"), "{text}");
        // The free stack up to the user's outermost frame by default (the
        // C runtime below main folded), all of it with -v.
        let free_stack = &text[at..text[at..].find("Block was").unwrap() + at];
        assert_eq!(free_stack.contains("__libc_start"), verbose, "{free_stack}");
        assert_eq!(free_stack.contains("more frames"), !verbose, "{free_stack}");
        assert!(
            text.contains(&format!(
                "> overflow (heap_misuse.c:{})",
                line("@overflow_alloc")
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "> double_free (heap_misuse.c:{})",
                line("@df_free")
            )),
            "{text}"
        );
    }

    // SARIF: a related location at each free and allocation site, valid
    // SARIF 2.1.0.
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let results = s["runs"][0]["results"].as_array().unwrap();
    let related = |read: u32| -> Vec<(String, u64)> {
        let res = results
            .iter()
            .find(|x| x["locations"][0]["physicalLocation"]["region"]["startLine"] == read)
            .unwrap_or_else(|| panic!("no result at line {read}"));
        res["relatedLocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let p = &l["physicalLocation"];
                assert!(
                    p["artifactLocation"]["uri"]
                        .as_str()
                        .unwrap()
                        .ends_with("heap_misuse.c"),
                    "{l:#}"
                );
                (
                    l["message"]["text"].as_str().unwrap().to_string(),
                    p["region"]["startLine"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let rel = related(line("@uaf_read"));
    let free = rel
        .iter()
        .find(|(t, _)| t.ends_with("free'd"))
        .expect("the free site");
    assert_eq!(free.1, u64::from(line("@uaf_free")));
    assert!(rel.contains(&("Block was alloc'd at".into(), u64::from(line("@uaf_alloc")))));
    let rel = related(line("@overflow_read"));
    assert!(
        rel.iter()
            .any(|(t, l)| t.ends_with("alloc'd") && *l == u64::from(line("@overflow_alloc"))),
        "{rel:?}"
    );
    let rel = related(line("@df_again"));
    assert!(
        rel.iter()
            .any(|(t, l)| t.ends_with("free'd") && *l == u64::from(line("@df_free"))),
        "{rel:?}"
    );
    common::check_sarif_schema(&sarif);

    // HTML: the card shows the free stack under Valgrind's text, the free
    // site marked as the user's.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<div class=\"stitle\">Address 0x"), "{page}");
    assert!(
        page.contains("<div class=\"stitle\">Block was alloc&#39;d at"),
        "{page}"
    );
    let free_site = format!(
        ">heap_misuse.c:{}</span> <span class=\"yours\">",
        line("@uaf_free")
    );
    assert!(page.contains(&free_site), "{free_site}: {page}");

    // The same program without the aux stacks' frames changes no
    // fingerprint: fingerprints come from the main stack only (a copy of
    // the source with `release` renamed frees elsewhere, same finding).
    let renamed = tmp.path().join("renamed");
    std::fs::create_dir(&renamed).unwrap();
    let text = std::fs::read_to_string(&src)
        .unwrap()
        .replace("release", "let_go");
    std::fs::write(renamed.join("heap_misuse.c"), text).unwrap();
    let out = common::run_capture(
        Command::new("gcc")
            .args(["-g", "-O0", "-o", "heap_misuse", "heap_misuse.c"])
            .current_dir(&renamed),
        "gcc",
    );
    common::check_success(&out, "gcc");
    let (_, again) = run_json(&renamed, &[], &["./heap_misuse"]);
    let fps = |r: &Value| {
        let mut v: Vec<String> = user_findings(r)
            .iter()
            .map(|f| f["fingerprint"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        fps(&r),
        fps(&again),
        "the free site is not in the fingerprint"
    );
}

#[test]
fn mismatched_free_is_found() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("cpp/mismatch.cpp", tmp.path());
    let src = tmp.path().join("mismatch.cpp");
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    let f = find(
        &r,
        "MismatchedFree",
        common::marker_line(&src, "@mismatched"),
    );
    assert_eq!(f["location"]["function"], "mismatched_free()");
}

#[test]
fn clean_program_passes() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/clean.c", tmp.path());
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(r["verdict"]["status"], "pass");
    assert!(user_findings(&r).is_empty());
    // The text report says so in one line.
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["run", "--", exe.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PASS: no leaks or memory errors in your code"),
        "{text}"
    );
    assert!(text.contains("valgrind 3.19.0"), "version shown: {text}");
}

#[test]
fn target_exit_code_is_reported_and_can_be_ignored() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/exit3.c", tmp.path());
    let (code, r) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 4);
    assert_eq!(r["target_exit"]["code"], 3);
    assert_eq!(r["verdict"]["status"], "target_failed");
    let (code, _) = run_json(
        tmp.path(),
        &["--ignore-target-exit"],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 0);
}

#[test]
fn keep_xml_copies_the_raw_reports_and_they_reanalyse_the_same() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/leak_kinds.c", tmp.path());
    let keep = tmp.path().join("xml");
    let (code, run) = run_json(
        tmp.path(),
        &["--keep-xml", keep.to_str().unwrap()],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    let files: Vec<_> = std::fs::read_dir(&keep).unwrap().collect();
    assert_eq!(files.len(), 1);
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["analyze", "--format", "json", "--src-root", "."])
        .arg(&keep)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fps = |r: &Value| {
        let mut v: Vec<String> = user_findings(r)
            .iter()
            .map(|f| f["fingerprint"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(fps(&run), fps(&again));
    assert_eq!(again["mode"], "analyze");
}

#[test]
fn argv_is_passed_without_a_shell() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let (code, r) = run_json(
        tmp.path(),
        &[],
        &["/bin/echo", "$HOME", "a b", ";", "exit 7"],
    );
    assert_eq!(code, 0);
    assert_eq!(r["command"][1], "$HOME");
    assert_eq!(r["processes"][0]["command"][2], "a b");
}

#[test]
fn missing_valgrind_is_exit_2_with_install_hint() {
    let tmp = common::tempdir();
    let out = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .env("PATH", tmp.path())
        .args(["run", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("valgrind not found"), "{err}");
    assert!(err.contains("apt-get install valgrind"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    let out = Command::new(common::leakgate_bin())
        .args([
            "run",
            "--valgrind",
            "/nonexistent/valgrind",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn missing_target_is_exit_2() {
    if !common::valgrind_or_skip() {
        return;
    }
    for target in ["./no-such-program", "no-such-program-on-path"] {
        let out = Command::new(common::leakgate_bin())
            .args(["run", "--", target])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("target not found"), "{err}");
    }
}

#[test]
fn bad_flags_are_exit_2() {
    let out = Command::new(common::leakgate_bin())
        .args(["run", "--no-such-flag", "--", "/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(common::leakgate_bin())
        .args(["run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
