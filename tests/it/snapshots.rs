//! Snapshot tests of every renderer, from the recorded fixtures (no
//! Valgrind): text, JSON, HTML (without its inline stylesheet), JUnit,
//! SARIF, Code Quality, Markdown and GitHub annotations of `leakgate
//! analyze`, each compared with its committed snapshot in
//! `tests/it/snapshots/` (the `insta` crate), so that a change of a
//! renderer is reviewed as a diff of these files.
//!
//! Machine-dependent parts are normalised (`common::outputs::normalise`):
//! the checkout's path is `[ROOT]`, the temporary directory `[TMP]`, the
//! tool's version `[VERSION]`. The fixtures' own paths (`/tmp/...` of the
//! recording) are part of the fixture and stay.
//!
//! After an intended change: `INSTA_UPDATE=always cargo test --release
//! --test it snapshots` rewrites the snapshots; review them with `git
//! diff tests/it/snapshots/` and commit them. Without it a mismatch fails
//! and (outside CI) leaves a `.snap.new` file next to the snapshot; under
//! `CI=true` it only fails.

use crate::common::outputs::{self, Outputs};

/// Analyses `args` and checks every output against its snapshot
/// `<name>__<output>.snap`.
fn check(name: &str, args: &[&str]) {
    let (_guard, work) = outputs::workdir();
    check_outputs(name, args, &outputs::analyze_all(&work, args), &work);
}

fn check_outputs(name: &str, args: &[&str], out: &Outputs, work: &std::path::Path) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!(
        "leakgate analyze {} (exit {})",
        outputs::normalise(&args.join(" "), work),
        out.exit
    ));
    settings.bind(|| {
        for (format, content) in out.all() {
            let content = if format == "html" {
                outputs::html_without_css(content)
            } else {
                content.to_string()
            };
            insta::assert_snapshot!(
                format!("{name}__{format}"),
                outputs::normalise(&content, work)
            );
        }
    });
}

#[test]
fn leak_kinds_default_policy() {
    check(
        "leak_kinds",
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
        ],
    );
}

#[test]
fn leak_kinds_within_max_leaked_bytes() {
    check(
        "leak_kinds_max_bytes",
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
            "--fail-on",
            "leaks",
            "--max-leaked-bytes",
            "1000",
        ],
    );
}

#[test]
fn mem_errors_default_policy() {
    check(
        "mem_errors",
        &[
            "fixtures/recorded/mem_errors.xml",
            "--src-root",
            "tests/programs/c",
        ],
    );
}

#[test]
fn pybind11_extension() {
    // The recording's pybind11 headers lie in /work/main/.venv: with the
    // checkout as --repo-root they would be repository files on a machine
    // that cloned to /work/main and absolute paths elsewhere.
    let args = [
        "fixtures/recorded/pybind11.xml",
        "--src-root",
        "tests/programs/pybind11",
    ];
    let (_guard, work) = outputs::workdir();
    let out = outputs::analyze_all_in(&work, &args, &work);
    check_outputs("pybind11", &args, &out, &work);
}

#[test]
fn every_memcheck_kind() {
    check("many", &["fixtures/raw-3.19/many.xml"]);
}

#[test]
fn checkpoints_growth() {
    check(
        "checkpoints",
        &[
            "fixtures/checkpoints/checkpoints.xml",
            "--src-root",
            "tests/programs/pytest",
        ],
    );
}

/// Two processes (two XML files), the leaks known from a baseline recorded
/// from the first: the memory errors are new, the leaks known.
#[test]
fn two_processes_with_a_baseline() {
    let (_guard, work) = outputs::workdir();
    let baseline = work.join("baseline.json");
    let base = baseline.to_str().unwrap();
    let first = outputs::analyze_all(
        &work,
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
            "--fail-on",
            "none",
            "--write-baseline",
            base,
        ],
    );
    assert_eq!(first.exit, 0, "--fail-on none passes");
    insta::with_settings!({prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(
            "baseline_file",
            outputs::normalise(&std::fs::read_to_string(&baseline).unwrap(), &work)
        );
    });
    let args = [
        "fixtures/recorded/leak_kinds.xml",
        "fixtures/recorded/mem_errors.xml",
        "--src-root",
        "tests/programs/c",
        "--baseline",
        base,
        "--fail-on",
        "all",
    ];
    let out = outputs::analyze_all(&work, &args);
    check_outputs("two_processes_baseline", &args, &out, &work);
}
