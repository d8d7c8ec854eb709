//! `--help`: every option of `run` under the heading of what it is for
//! (Engine, Valgrind, Per-test, Target, ...), none of them under another
//! group's, and `--fail-on`'s help listing every word the parser accepts.

use std::collections::BTreeMap;
use std::process::Command;

use crate::common;

/// `leakgate ARGS --help`, as heading -> long options under it.
fn sections(args: &[&str]) -> BTreeMap<String, Vec<String>> {
    let out = Command::new(common::leakgate_bin())
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut heading = String::new();
    for line in text.lines() {
        // The exit codes (after_help) end the options.
        if line.starts_with("Exit codes:") {
            break;
        }
        if !line.starts_with(' ') && line.ends_with(':') {
            heading = line.trim_end_matches(':').to_string();
            map.entry(heading.clone()).or_default();
            continue;
        }
        let t = line.trim_start();
        // Options are indented 2 (with a short form) or 6; their
        // descriptions deeper.
        if line.len() - t.len() > 6 {
            continue;
        }
        // "  -o, --output <FILE>  ..." or "      --engine <ENGINE>  ..."
        let t = t.split_once(", ").map_or(t, |(short, rest)| {
            if short.len() == 2 && short.starts_with('-') {
                rest
            } else {
                t
            }
        });
        if line.len() > t.len() && (t.starts_with('<') || t.starts_with('[')) {
            let name = t.split(' ').next().unwrap();
            map.entry(heading.clone())
                .or_default()
                .push(name.to_string());
        } else if let Some(opt) = t.strip_prefix("--") {
            let name = opt.split([' ', '=', '<']).next().unwrap();
            map.entry(heading.clone())
                .or_default()
                .push(format!("--{name}"));
        }
    }
    map
}

#[test]
fn run_options_are_grouped_by_what_they_are_for() {
    let s = sections(&["run"]);
    let want: &[(&str, &[&str])] = &[
        ("Attribution", &["--src-root", "--user-object"]),
        (
            "Report",
            &[
                "--format",
                "--output",
                "--html",
                "--verbose",
                "--color",
                "--progress",
                "--quiet",
            ],
        ),
        (
            "Suppressions",
            &[
                "--suppressions",
                "--no-bundled-suppressions",
                "--show-unused-suppressions",
                "--write-suppressions",
                "--write-suppressions-kinds",
            ],
        ),
        ("Engine", &["--engine", "--sanitizer-runtime"]),
        (
            "Valgrind",
            &[
                "--valgrind",
                "--num-callers",
                "--show-leak-kinds",
                "--origins",
                "--no-track-origins",
                "--track-fds",
                "--valgrind-arg",
                "--keep-xml",
            ],
        ),
        (
            "Per-test",
            &[
                "--per-test",
                "--no-per-test",
                "--repeat",
                "--shard",
                "--shard-durations",
            ],
        ),
        (
            "Target",
            &[
                "--ignore-target-exit",
                "--no-trace-children",
                "--trace-children-skip",
                "--timeout",
                "--kill-after",
            ],
        ),
        (
            "Gate policy",
            &[
                "--fail-on",
                "--max-leaked-bytes",
                "--fail-on-incomplete",
                "--no-fail-on-incomplete",
            ],
        ),
        (
            "CI outputs",
            &[
                "--baseline",
                "--write-baseline",
                "--junit",
                "--sarif",
                "--codequality",
                "--markdown",
                "--annotations",
                "--repo-root",
            ],
        ),
    ];
    for (heading, opts) in want {
        let got = s
            .get(*heading)
            .unwrap_or_else(|| panic!("no {heading}: in run --help: {s:?}"));
        assert_eq!(got, opts, "{heading}: in run --help");
    }
    assert_eq!(
        s.get("Arguments").map(Vec::as_slice),
        Some(&["<CMD>...".to_string()][..]),
        "{s:?}"
    );
    // The shared options: the global ones and help only.
    assert_eq!(
        s.get("Options").map(Vec::as_slice),
        Some(&["--config", "--no-config", "--help"].map(String::from)[..]),
        "{s:?}"
    );
    // No other heading holds an option.
    let named: usize = want.iter().map(|(_, o)| o.len()).sum::<usize>() + 3 + 1;
    let all: usize = s.values().map(Vec::len).sum();
    assert_eq!(all, named, "{s:?}");
}

#[test]
fn positionals_of_analyze_and_merge_are_arguments() {
    for (cmd, arg) in [("analyze", "<PATH>..."), ("merge", "<REPORT>...")] {
        let s = sections(&[cmd]);
        assert_eq!(
            s.get("Arguments").map(Vec::as_slice),
            Some(&[arg.to_string()][..]),
            "{cmd}: {s:?}"
        );
        assert!(
            s.get("CI outputs")
                .is_some_and(|o| o.iter().all(|x| x.starts_with("--"))),
            "{cmd}: {s:?}"
        );
    }
}

#[test]
fn fail_on_help_lists_every_accepted_word() {
    let out = Command::new(common::leakgate_bin())
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for g in leakgate::gate::policy::GROUPS {
        assert!(
            help.contains(&format!("{} (", g.name)),
            "--fail-on's help omits {}: {help}",
            g.name
        );
        // The parser takes what the help lists.
        assert!(leakgate::gate::policy::FailOn::parse(g.name).is_ok());
    }
    assert!(help.contains("import ("), "{help}");
    // And the words `analyze --help` lists are the same.
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("import ("));
}
