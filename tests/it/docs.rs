//! The documentation is tested like code: README.md and every docs/*.md
//! page. Relative links must lead to a file (and an `#anchor` to a heading
//! of it, by GitHub's slug rule); every `leakgate ...` command line shown in
//! a shell, console, YAML or plain code block must parse with the real
//! command-line definition (`leakgate::cli::Cli`); the commands that need
//! no Valgrind, no target and no network are run with the built binary and
//! must exit as the page says. Every command shown must be in `RUNS` or in
//! `NOT_OFFLINE` (or be a synopsis in `SYNOPSES`), so a new command in the
//! docs cannot go untested. The README stays short and keeps the two
//! set-up commands CI relies on (`.ci/run` runs `cargo test --release`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use clap::error::ErrorKind;

use crate::common;

/// The README's set-up commands, verbatim, in one ```sh block.
const SETUP: [&str; 2] = [
    "cargo build --release && ./examples/leaky-ext/run.sh",
    "cargo test --release",
];

/// The README stays a newcomer's page: fewer lines than this.
const README_MAX_LINES: usize = 200;

/// Synopsis lines with placeholders (`[OPTIONS]`, `PATH...`), matched at
/// the start of a line (the rest is their description): neither parsed nor
/// run.
const SYNOPSES: &[&str] = &[
    "leakgate run [OPTIONS] -- CMD [ARGS...]",
    "leakgate analyze [OPTIONS] PATH...",
    "leakgate merge [OPTIONS] REPORT.json...",
    "leakgate report JSON [-o FILE.html]",
    "leakgate report report.json -o report.html [--src-root DIR]...",
];

/// Commands run offline, in this order, in one scratch directory holding
/// `fixtures/` (a link to the repository's) and `report-dir/` (a recorded
/// Valgrind report, the pages' example directory of XML), with the exit
/// code the page shows or implies. Redirections and pipes are dropped:
/// only the leakgate part runs, its output captured.
const RUNS: &[(&str, i32)] = &[
    // README "First run": a recorded report of a 40-byte leak fails.
    ("leakgate analyze fixtures/raw-3.26/leak40.xml", 1),
    // docs/valgrind-versions.md: a SIGILL at an instruction Valgrind cannot
    // decode, read from the XML alone, is a crash in your code.
    ("leakgate analyze fixtures/recorded/unhandled_insn.xml", 1),
    // docs/sanitizer-logs.md: a LeakSanitizer log with the user's leaks.
    (
        "leakgate analyze fixtures/sanitizers/lsan-preload-leak.txt",
        1,
    ),
    // docs/engines.md: LeakSanitizer rules for the noise of a log.
    (
        "leakgate suppress --format lsan fixtures/sanitizers/lsan-preload-leak.txt -o lsan.supp",
        0,
    ),
    // docs/install.md
    ("leakgate completions bash", 0),
    ("leakgate completions zsh", 0),
    ("leakgate man", 0),
    ("leakgate --version", 0),
    // docs/suppressions.md: write a file, then merge into it.
    ("leakgate suppress report-dir/ -o ours.supp", 0),
    ("leakgate suppress report-dir/ --merge-into ours.supp", 0),
    // docs/configuration.md: a starter configuration only (last: the
    // commands after it would read it).
    ("leakgate init --no-baseline --workflow none", 0),
];

/// Commands only parsed, each with why it is not run here.
const NOT_OFFLINE: &[(&str, &str)] = &[
    (
        "leakgate run -- python3 test_spam.py",
        "Valgrind and the built example extension: examples/leaky-ext/run.sh runs it",
    ),
    (
        "leakgate run -- python -m pytest tests/",
        "Valgrind and the reader's own pytest suite",
    ),
    (
        "leakgate run --baseline leakgate-baseline.json --sarif leakgate.sarif --junit leakgate.xml -- python -m pytest tests/",
        "Valgrind and a pytest suite: ci_gate::readme_ci_examples_run runs it on the test extension",
    ),
    (
        "leakgate run --fail-on none --write-baseline leakgate-baseline.json -- python -m pytest tests/",
        "Valgrind and a pytest suite: ci_gate::readme_ci_examples_run runs it on the test extension",
    ),
    (
        "leakgate run --baseline leakgate-baseline.json --sarif leakgate.sarif --junit leakgate.xml --markdown leakgate.md -- python -m pytest tests/",
        "Valgrind and a pytest suite: ci_gate::readme_ci_examples_run runs it on the test extension",
    ),
    (
        "leakgate run --baseline leakgate-baseline.json --junit leakgate.xml --codequality gl-code-quality.json --markdown leakgate.md -- python -m pytest tests/",
        "Valgrind and a pytest suite: ci_gate::readme_ci_examples_run runs it on the test extension",
    ),
    (
        "leakgate run --track-fds -- python3 test_ext.py",
        "Valgrind 3.23 or later and an extension that leaks a descriptor (versions::)",
    ),
    (
        "leakgate run --repeat 3 -- python -m pytest tests/",
        "Valgrind and a pytest suite (per_test:: runs the same on its own suite)",
    ),
    (
        "leakgate run --write-suppressions ours.supp -- python3 -m pytest tests/",
        "Valgrind and a pytest suite (generate:: checks the round trip)",
    ),
    (
        "leakgate run --shard {matrix.shard}/2 --format json -o shard-{matrix.shard}.json --fail-on none -- python -m pytest tests/",
        "Valgrind and a CI matrix (shards:: runs --shard K/N on its own suite)",
    ),
    (
        "leakgate merge --baseline leakgate-baseline.json --sarif leaks.sarif --junit leaks.xml shard-*.json",
        "the shards' JSON reports of a CI run (shards:: merges its own shards)",
    ),
    (
        "leakgate --config ci/leakgate.toml analyze leakgate-xml/",
        "a project's own configuration and XML (project_config:: runs --config on a recorded report)",
    ),
    (
        "leakgate run --no-config -- ./test_leaky",
        "Valgrind and a program (project_config:: runs --no-config)",
    ),
    (
        "leakgate run -v -- ./test_leaky",
        "Valgrind and a program (project_config::run_v_names_the_configuration)",
    ),
    (
        "leakgate run -- ./test_leaky",
        "Valgrind, a program and a broken leakgate.toml (project_config:: checks each error)",
    ),
    (
        "leakgate run --engine lsan -- python -m pytest tests/",
        "liblsan and a pytest suite (engines:: runs its own suites under both engines)",
    ),
    (
        "leakgate run --engine asan -- python -m pytest tests/",
        "libasan and an extension built with it (engines::asan_extension_example)",
    ),
    (
        "leakgate run --engine lsan --junit leakgate.xml -- python -m pytest tests/",
        "liblsan and a pytest suite (engines:: runs its own suites under both engines)",
    ),
    (
        "leakgate run --baseline leakgate-baseline.json -- python -m pytest tests/",
        "Valgrind and a pytest suite: ci_gate::readme_ci_examples_run runs baselines",
    ),
    (
        "leakgate init -- python -m pytest tests/",
        "Valgrind and a pytest suite (project_config:: runs init on a C program)",
    ),
];

/// Fence languages whose lines may be commands ("" is a plain block).
const SHELL_LANGS: &[&str] = &["", "sh", "shell", "bash", "console", "yaml", "yml"];

// ------------------------------------------------------------ the pages

/// README.md and every docs/*.md, as (repository-relative path, text).
pub(crate) fn pages() -> Vec<(String, String)> {
    let root = common::repo_root();
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("a docs/ directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds no page");
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root.join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// A fenced code block: its language, the 1-based line of its first line,
/// and its lines.
struct Block {
    lang: String,
    line: usize,
    lines: Vec<String>,
}

/// The fenced (```) code blocks of a page.
fn code_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut cur: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("```") {
            match cur.take() {
                Some(b) => blocks.push(b),
                None => {
                    cur = Some(Block {
                        lang: rest.trim().to_string(),
                        line: i + 2,
                        lines: Vec::new(),
                    })
                }
            }
        } else if let Some(b) = cur.as_mut() {
            b.lines.push(line.to_string());
        }
    }
    assert!(cur.is_none(), "a code block is never closed");
    blocks
}

/// The page's prose lines (numbered from 1), fenced blocks left out and
/// inline code spans blanked, for links and headings.
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        let mut s = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                s.push(c);
            } else if !in_code {
                s.push(c);
            }
        }
        out.push((i + 1, s));
    }
    out
}

// ------------------------------------------------------ links, anchors

/// GitHub's anchor for a heading's text: inline markup dropped, lower
/// case, every character that is not a letter, digit, `-`, `_` or space
/// removed, spaces turned into `-`.
fn slug(heading: &str) -> String {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let text = link.replace_all(heading, "$1");
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (a repeated heading gets `-1`, `-2`).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let s = slug(title);
        let n = seen.entry(s.clone()).or_insert(0);
        out.insert(if *n == 0 {
            s.clone()
        } else {
            format!("{s}-{n}")
        });
        *n += 1;
    }
    out
}

/// Relative link targets of a page, with their lines: inline links
/// `[text](target)` and reference definitions `[name]: target`.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let inline = regex::Regex::new(r#"\]\(([^)\s]+)(?:\s+"[^"]*")?\)"#).unwrap();
    let reference = regex::Regex::new(r"^\s*\[[^\]]+\]:\s+(\S+)").unwrap();
    let mut out = Vec::new();
    for (n, line) in prose(text) {
        let targets = inline
            .captures_iter(&line)
            .chain(reference.captures_iter(&line))
            .map(|c| c[1].to_string());
        for t in targets {
            let external = ["http://", "https://", "mailto:"]
                .iter()
                .any(|p| t.starts_with(p));
            if !external {
                out.push((n, t));
            }
        }
    }
    out
}

#[test]
fn links_resolve() {
    let root = common::repo_root();
    let mut bad = Vec::new();
    let mut count = 0;
    for (page, text) in pages() {
        let dir = Path::new(&page).parent().unwrap().to_path_buf();
        for (line, target) in relative_links(&text) {
            count += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path: PathBuf = if file.is_empty() {
                PathBuf::from(&page)
            } else {
                dir.join(file)
            };
            let full = root.join(&path);
            if !full.exists() {
                bad.push(format!(
                    "{page}:{line}: {target}: no file {}",
                    path.display()
                ));
                continue;
            }
            if let Some(a) = anchor {
                let ok = full.extension().is_some_and(|e| e == "md")
                    && anchors(&std::fs::read_to_string(&full).unwrap()).contains(a);
                if !ok {
                    bad.push(format!(
                        "{page}:{line}: {target}: no heading with anchor #{a} in {}",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
    assert!(
        count > 20,
        "only {count} relative links found: is the scan broken?"
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("File-descriptor leaks (`--track-fds`)"),
        "file-descriptor-leaks---track-fds"
    );
    assert_eq!(
        slug("CPython free lists and refcount leaks"),
        "cpython-free-lists-and-refcount-leaks"
    );
    assert_eq!(
        slug("Time to verdict (parallel workers, origins on demand, shards)"),
        "time-to-verdict-parallel-workers-origins-on-demand-shards"
    );
    let a = anchors("# A\n\n## Notes\n\n```\n# not a heading\n```\n\n## Notes\n");
    assert_eq!(
        a,
        ["a", "notes", "notes-1"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}

#[test]
fn pages_link_back_and_are_indexed() {
    let pages = pages();
    let readme = &pages[0].1;
    let index: String = readme
        .split("\n## Documentation\n")
        .nth(1)
        .expect("a \"## Documentation\" section in README.md")
        .split("\n## ")
        .next()
        .unwrap()
        .to_string();
    for (page, text) in &pages[1..] {
        assert!(
            text.starts_with("# "),
            "{page} does not start with a `# Title`"
        );
        assert!(
            text.contains("](../README.md)"),
            "{page} has no link back to the README"
        );
        assert!(
            index.contains(&format!("]({page})")),
            "README's \"## Documentation\" does not link {page}"
        );
    }
}

// ------------------------------------------------------------ commands

/// Splits a shell line the way `sh` would into commands (at `|`, `||`,
/// `&&`, `;`, `&`), each a list of words: quotes and backslashes removed,
/// a `#` starting a word ends the line, redirections (`> FILE`, `2>&1`,
/// `< FILE`) dropped. Enough for documentation; no expansion.
fn shell_split(line: &str) -> Result<Vec<Vec<String>>, String> {
    let mut cmds: Vec<Vec<String>> = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut redirect = false;
    let mut chars = line.chars().peekable();
    // Ends the current word: into the command, or dropped as a
    // redirection's target.
    let finish = |word: &mut String,
                  in_word: &mut bool,
                  redirect: &mut bool,
                  cmds: &mut Vec<Vec<String>>| {
        if *in_word {
            if *redirect {
                *redirect = false;
            } else {
                cmds.last_mut().unwrap().push(std::mem::take(word));
            }
        }
        word.clear();
        *in_word = false;
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => finish(&mut word, &mut in_word, &mut redirect, &mut cmds),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unterminated ' in {line:?}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("unterminated \" in {line:?}")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unterminated \" in {line:?}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            '>' | '<' => {
                // `2>`: the digits were the descriptor, not a word.
                if in_word && !word.is_empty() && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                finish(&mut word, &mut in_word, &mut redirect, &mut cmds);
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                if chars.peek() == Some(&'&') {
                    // `2>&1`: the target follows at once.
                    chars.next();
                }
                redirect = true;
            }
            '|' | '&' | ';' => {
                finish(&mut word, &mut in_word, &mut redirect, &mut cmds);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                cmds.push(Vec::new());
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut redirect, &mut cmds);
    cmds.retain(|c| !c.is_empty());
    Ok(cmds)
}

#[test]
fn shell_split_takes_the_leakgate_part() {
    let split = |s: &str| shell_split(s).unwrap();
    assert_eq!(
        split(
            r#"cd x && CFLAGS='-O0 -g' pip install . && leakgate run -- python -m pytest "a b"/ # c"#
        ),
        vec![
            vec!["cd", "x"],
            vec!["CFLAGS=-O0 -g", "pip", "install", "."],
            vec!["leakgate", "run", "--", "python", "-m", "pytest", "a b/"],
        ]
    );
    assert_eq!(
        split(r#"leakgate completions zsh > "${fpath[1]}/_leakgate"  # also fish"#),
        vec![vec!["leakgate", "completions", "zsh"]]
    );
    assert_eq!(
        split("leakgate man | man -l - 2>&1"),
        vec![vec!["leakgate", "man"], vec!["man", "-l", "-"]]
    );
    assert_eq!(split(r"a\ b 'c#d' e#f"), vec![vec!["a b", "c#d", "e#f"]]);
    assert!(shell_split("leakgate 'x").is_err());
}

/// A `leakgate` command shown on a page.
pub(crate) struct Shown {
    pub(crate) page: String,
    pub(crate) line: usize,
    /// The command's words joined by one space: its key in the lists.
    text: String,
    pub(crate) argv: Vec<String>,
}

/// The shell lines of a code block, with their lines: `\` continuations
/// joined; in a block with `$ ` prompts only the prompted lines (the rest
/// is output); in YAML, the value of a `key: value` line or list item.
fn shell_lines(b: &Block) -> Vec<(usize, String)> {
    let mut joined: Vec<(usize, String)> = Vec::new();
    let mut cont = false;
    for (i, l) in b.lines.iter().enumerate() {
        if cont {
            let last = &mut joined.last_mut().unwrap().1;
            last.push(' ');
            last.push_str(l.trim());
        } else {
            joined.push((b.line + i, l.trim().to_string()));
        }
        let last = &mut joined.last_mut().unwrap().1;
        cont = last.ends_with('\\');
        if cont {
            last.pop();
        }
    }
    let prompted = joined.iter().any(|(_, l)| l.starts_with("$ "));
    let yaml = b.lang == "yaml" || b.lang == "yml";
    let key = regex::Regex::new(r"^[A-Za-z_][A-Za-z0-9_-]*:\s+").unwrap();
    let expr = regex::Regex::new(r"\$\{\{\s*([^}]*?)\s*\}\}").unwrap();
    joined
        .into_iter()
        .filter_map(|(n, l)| {
            let l = if prompted {
                l.strip_prefix("$ ")?.to_string()
            } else {
                l
            };
            let l = if yaml {
                let l = l.strip_prefix("- ").unwrap_or(&l);
                let l = key.replace(l, "");
                // GitHub expressions: `${{ matrix.shard }}` as `{matrix.shard}`.
                expr.replace_all(&l, "{$1}").into_owned()
            } else {
                l
            };
            Some((n, l))
        })
        .collect()
}

/// Every `leakgate` command in the shell, console, YAML and plain code
/// blocks of the pages, in page order (also what `ci_gate::` runs).
pub(crate) fn shown_commands() -> Vec<Shown> {
    let mut out = Vec::new();
    for (page, text) in pages() {
        for b in code_blocks(&text) {
            if !SHELL_LANGS.contains(&b.lang.as_str()) {
                continue;
            }
            for (line, l) in shell_lines(&b) {
                if let Some(syn) = SYNOPSES.iter().find(|s| l.starts_with(**s)) {
                    out.push(Shown {
                        page: page.clone(),
                        line,
                        text: syn.to_string(),
                        argv: Vec::new(),
                    });
                    continue;
                }
                // Plain blocks also hold trees and output: only a line that
                // names leakgate has to split as shell.
                if !l.contains("leakgate") {
                    continue;
                }
                let cmds = shell_split(&l).unwrap_or_else(|e| panic!("{page}:{line}: {e}"));
                for words in cmds {
                    // Leading `NAME=value` assignments are the environment.
                    let start = words
                        .iter()
                        .position(|w| {
                            !w.split_once('=').is_some_and(|(k, _)| {
                                !k.is_empty()
                                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            })
                        })
                        .unwrap_or(words.len());
                    let argv = &words[start..];
                    // A lone `leakgate` is a name (`category: leakgate`).
                    if argv.len() > 1 && argv[0] == "leakgate" {
                        out.push(Shown {
                            page: page.clone(),
                            line,
                            text: argv.join(" "),
                            argv: argv.to_vec(),
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn commands_parse_and_are_listed() {
    let shown = shown_commands();
    let mut bad = Vec::new();
    for s in &shown {
        let listed =
            RUNS.iter().any(|(c, _)| *c == s.text) || NOT_OFFLINE.iter().any(|(c, _)| *c == s.text);
        if SYNOPSES.contains(&s.text.as_str()) {
            continue;
        }
        if !listed {
            bad.push(format!(
                "{}:{}: `{}` is in neither RUNS nor NOT_OFFLINE of tests/it/docs.rs",
                s.page, s.line, s.text
            ));
        }
        // A matrix value parses as the first job's (`--shard {matrix.shard}/2`).
        let argv: Vec<String> = s
            .argv
            .iter()
            .map(|a| a.replace("{matrix.shard}", "1"))
            .collect();
        match leakgate::cli::Cli::try_parse_from(&argv) {
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::DisplayVersion | ErrorKind::DisplayHelp) => {}
            Err(e) => bad.push(format!(
                "{}:{}: `{}` does not parse: {}",
                s.page,
                s.line,
                s.text,
                e.render()
            )),
        }
    }
    // No stale entries: each listed command is still shown somewhere.
    let texts: BTreeSet<&str> = shown.iter().map(|s| s.text.as_str()).collect();
    let listed = RUNS
        .iter()
        .map(|(c, _)| *c)
        .chain(NOT_OFFLINE.iter().map(|(c, _)| *c))
        .chain(SYNOPSES.iter().copied());
    for c in listed {
        if !texts.contains(c) {
            bad.push(format!(
                "`{c}` is listed in tests/it/docs.rs but no page shows it"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let runs = shown
        .iter()
        .filter(|s| RUNS.iter().any(|(c, _)| *c == s.text))
        .count();
    eprintln!(
        "{} leakgate commands shown: {runs} run offline, {} parse-only, {} synopses",
        shown.len(),
        shown.len()
            - runs
            - shown
                .iter()
                .filter(|s| SYNOPSES.contains(&s.text.as_str()))
                .count(),
        shown
            .iter()
            .filter(|s| SYNOPSES.contains(&s.text.as_str()))
            .count()
    );
}

#[test]
fn offline_commands_run() {
    let root = common::repo_root();
    let tmp = common::tempdir();
    let dir = tmp.path();
    std::os::unix::fs::symlink(root.join("fixtures"), dir.join("fixtures")).unwrap();
    std::fs::create_dir(dir.join("report-dir")).unwrap();
    std::fs::copy(
        root.join("fixtures/raw-3.19/many.xml"),
        dir.join("report-dir/many.xml"),
    )
    .unwrap();
    let mut bad = Vec::new();
    for (cmd, want) in RUNS {
        let argv = &shell_split(cmd).unwrap()[0];
        let out = Command::new(common::leakgate_bin())
            .args(&argv[1..])
            .current_dir(dir)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        if code != *want {
            bad.push(format!(
                "`{cmd}`: exit {code}, the docs say {want}\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        } else if out.stdout.is_empty()
            && !cmd.contains(" -o ")
            && !cmd.contains("--merge-into")
            && !cmd.starts_with("leakgate init")
        {
            bad.push(format!("`{cmd}` printed nothing"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
    assert!(
        dir.join("ours.supp").is_file(),
        "`leakgate suppress -o ours.supp` wrote no file"
    );
    assert!(
        dir.join("leakgate.toml").is_file(),
        "`leakgate init --no-baseline --workflow none` wrote no leakgate.toml"
    );
}

// ------------------------------------------------------------ README

#[test]
fn readme_is_short_and_keeps_the_setup_commands() {
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).unwrap();
    let n = readme.lines().count();
    assert!(
        n < README_MAX_LINES,
        "README.md has {n} lines: move reference text into docs/"
    );
    let sh: Vec<Block> = code_blocks(&readme)
        .into_iter()
        .filter(|b| b.lang == "sh")
        .collect();
    let ok = sh.iter().any(|b| {
        SETUP
            .iter()
            .all(|c| b.lines.iter().any(|l| l.trim_end() == *c))
    });
    assert!(
        ok,
        "README.md must keep the set-up commands verbatim in one ```sh block: {SETUP:?}"
    );
}
