//! Integration tests: `leakgate lint`, `leakgate suppressions list|show`,
//! `--suppressions` errors before any run, counting per rule, unused rules,
//! and the bundled files: accepted by Valgrind itself, commented, anchored.

use crate::common;

use std::process::Command;

use serde_json::Value;

fn leakgate(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::leakgate_bin())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn lint_lists_every_problem_with_file_and_line() {
    let tmp = common::tempdir();
    let bad = tmp.path().join("bad.supp");
    std::fs::write(
        &bad,
        "{\n   a\n   Memcheck: Cond\n   fun:x\n}\n{\n   b\n   Memcheck:Leak\n   match-leak-kinds: definite, possible\n   fun:y\n}\n{\n   c\n   Memcheck:Cond\n   ...\n}\n",
    )
    .unwrap();
    let (code, out, _) = leakgate(&["lint", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let b = bad.display().to_string();
    assert!(lines[0].starts_with(&format!("{b}:3: ")), "{out}");
    assert!(lines[1].starts_with(&format!("{b}:9: ")), "{out}");
    let good = tmp.path().join("good.supp");
    std::fs::write(
        &good,
        "# fine\n{\n   ok\n   Memcheck:Addr4\n   fun:f\n   obj:*/libfoo.so*\n}\n",
    )
    .unwrap();
    let (code, out, _) = leakgate(&["lint", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let (code, _, _) = leakgate(&["lint", tmp.path().join("missing.supp").to_str().unwrap()]);
    assert_eq!(code, 2);
}

#[test]
fn a_broken_suppression_file_stops_before_valgrind_runs() {
    let tmp = common::tempdir();
    let bad = tmp.path().join("bad.supp");
    std::fs::write(&bad, "{\n   a\n   Memcheck:Leak\n   src:x.c\n}\n").unwrap();
    let marker = tmp.path().join("ran");
    let (code, _, err) = leakgate(&[
        "run",
        "--suppressions",
        bad.to_str().unwrap(),
        "--",
        "/usr/bin/touch",
        marker.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.supp:4:"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the target must not have run");
    let (code, _, err) = leakgate(&[
        "analyze",
        "--suppressions",
        tmp.path().to_str().unwrap(),
        "x.xml",
    ]);
    assert_eq!(code, 2, "a directory is not a suppression file: {err}");
}

#[test]
fn bundled_files_are_listed_and_shown() {
    let (code, out, _) = leakgate(&["suppressions", "list"]);
    assert_eq!(code, 0);
    for f in [
        "cuda.supp",
        "python.supp",
        "pybind11.supp",
        "torch.supp",
        "glibc.supp",
    ] {
        assert!(out.contains(f), "{out}");
    }
    let (code, out, _) = leakgate(&["suppressions", "show", "cuda"]);
    assert_eq!(code, 0);
    let on_disk =
        std::fs::read_to_string(common::repo_root().join("suppressions/cuda.supp")).unwrap();
    assert_eq!(out, on_disk);
    let (code, _, err) = leakgate(&["suppressions", "show", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("cuda.supp"), "names the real ones: {err}");
}

#[test]
fn bundled_files_are_accepted_by_valgrind_and_well_formed() {
    let dir = common::repo_root().join("suppressions");
    let mut names = std::collections::HashSet::new();
    for f in ["cuda", "python", "pybind11", "torch", "glibc"] {
        let path = dir.join(format!("{f}.supp"));
        let (code, out, _) = leakgate(&["lint", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        // Each rule: a comment right above it, a unique name with the file's
        // prefix, at least two library anchors, no absolute or versioned paths.
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, l) in lines.iter().enumerate() {
            if *l != "{" {
                continue;
            }
            assert!(
                i > 0 && lines[i - 1].starts_with('#'),
                "{f}.supp:{}: rule without a comment",
                i + 1
            );
            let name = lines[i + 1];
            assert!(name.starts_with(&format!("{f}-")), "{f}.supp: name {name}");
            assert!(names.insert(name.to_string()), "duplicate rule name {name}");
            let body: Vec<&str> = lines[i + 2..]
                .iter()
                .take_while(|x| **x != "}")
                .copied()
                .collect();
            let anchors = body
                .iter()
                .filter(|x| {
                    (x.starts_with("fun:") || x.starts_with("obj:"))
                        && **x != "fun:*"
                        && **x != "obj:*"
                })
                .count();
            assert!(anchors >= 2, "{f}.supp: {name} has {anchors} anchors");
            for x in &body {
                if let Some(o) = x.strip_prefix("obj:") {
                    assert!(!o.starts_with('/'), "{f}.supp: {name}: absolute path {o}");
                }
            }
        }
        if common::has_valgrind() {
            let tmp = common::tempdir();
            let out = Command::new("valgrind")
                .arg(format!("--suppressions={}", path.display()))
                .arg("--xml=yes")
                .arg(format!("--xml-file={}/x.xml", tmp.path().display()))
                .arg(format!("--log-file={}/x.log", tmp.path().display()))
                .arg("/bin/true")
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "valgrind rejects {f}.supp: {}",
                std::fs::read_to_string(tmp.path().join("x.log")).unwrap_or_default()
            );
        }
    }
}

#[test]
fn suppressed_records_are_counted_per_rule_and_unused_rules_listed() {
    let tmp = common::tempdir();
    let supp = tmp.path().join("mine.supp");
    std::fs::write(
        &supp,
        "# leak_definite\n{\n   mine-definite\n   Memcheck:Leak\n   fun:malloc\n   fun:leak_definite\n}\n# never used\n{\n   mine-unused\n   Memcheck:Addr16\n   fun:nothing_here\n   fun:nor_here\n}\n",
    )
    .unwrap();
    let xml = common::repo_root().join("fixtures/recorded/leak_kinds.xml");
    let out = Command::new(common::leakgate_bin())
        .args([
            "analyze",
            "--format",
            "json",
            "--no-bundled-suppressions",
            "--show-unused-suppressions",
        ])
        .arg("--suppressions")
        .arg(&supp)
        .arg(&xml)
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["summary"]["suppressed"]["records"], 1);
    assert_eq!(
        r["summary"]["suppressed"]["by_suppression"]["mine-definite"],
        1
    );
    let unused = r["summary"]["suppressed"]["unused"].to_string();
    assert!(
        unused.contains("mine-unused") && !unused.contains("mine-definite"),
        "{unused}"
    );
    // It hid a record of the user's: said so.
    assert!(r["notes"].to_string().contains("mine-definite"));
    let sum: u64 = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["records"].as_u64().unwrap())
        .sum();
    assert_eq!(r["summary"]["records"].as_u64().unwrap(), sum + 1);
    // Text: one line.
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--no-bundled-suppressions", "--suppressions"])
        .arg(&supp)
        .arg(&xml)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("suppressed: 1 record by 1 rule"), "{text}");
}
