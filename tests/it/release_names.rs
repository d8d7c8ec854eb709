//! Where leakgate comes from, said the same way everywhere: the PyPI
//! distribution is `pyproject.toml`'s `[project] name` (`pyleakgate`: the
//! name `leakgate` on PyPI is an unrelated project, which also installs a
//! `leakgate` command), and every git URL of leakgate is `Cargo.toml`'s
//! `repository` (docs/install.md, "Where a released leakgate comes from").
//! Checked in README.md, docs/*.md, the Action (action.yml, action/*.sh),
//! pyproject.toml, the Python package and `leakgate init`'s source.

use std::path::Path;

use regex::Regex;

use crate::common;

/// The distribution name the docs must use.
const DISTRIBUTION: &str = "pyleakgate";

/// The files checked besides the doc pages.
const OTHER_FILES: &[&str] = &[
    "action.yml",
    "action/install.sh",
    "action/run.sh",
    "action/lib.sh",
    "pyproject.toml",
    "python/leakgate/__init__.py",
    "python/leakgate/__main__.py",
    "src/commands/init.rs",
    "dist/build-wheels.sh",
];

/// The doc pages and [`OTHER_FILES`], as (path, text).
fn files() -> Vec<(String, String)> {
    let root = common::repo_root();
    let mut all = crate::docs::pages();
    for f in OTHER_FILES {
        let text = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        all.push((f.to_string(), text));
    }
    all
}

/// The value of `key = "..."` in the `[table]` of a TOML file.
fn toml_value(path: &Path, table: &str, key: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    let mut t = &v;
    for part in table.split('.') {
        t = t
            .get(part)
            .unwrap_or_else(|| panic!("{}: no [{table}]", path.display()));
    }
    t.get(key)
        .and_then(toml::Value::as_str)
        .unwrap_or_else(|| panic!("{}: no {key} in [{table}]", path.display()))
        .to_string()
}

#[test]
fn the_pypi_name_is_pyprojects_and_nothing_installs_the_other_leakgate() {
    let root = common::repo_root();
    assert_eq!(
        toml_value(&root.join("pyproject.toml"), "project", "name"),
        DISTRIBUTION
    );
    // `pip install leakgate`, `pip download ... leakgate==1.0`,
    // `pip install leakgate pytest`: the other project.
    let wrong = Regex::new(
        r"pip3? (?:install|download)\b[^\n`&;|#]*?[\s'\x22]leakgate(?:[\s'\x22`=<>~\[,;)]|$)|(?:^|[\s'\x22])leakgate==",
    )
    .unwrap();
    let mut bad = Vec::new();
    let mut says_right = false;
    for (path, text) in files() {
        for (i, line) in text.lines().enumerate() {
            if wrong.is_match(line) {
                bad.push(format!("{path}:{}: {line}", i + 1));
            }
        }
        if path == "docs/install.md" {
            says_right = text.contains(&format!("pip install {DISTRIBUTION}"));
        }
    }
    assert!(
        bad.is_empty(),
        "these install PyPI's `leakgate`, another project (the distribution is {DISTRIBUTION}):\n{}",
        bad.join("\n")
    );
    assert!(
        says_right,
        "docs/install.md says no `pip install {DISTRIBUTION}`"
    );
    // The wheel's file name follows the distribution name.
    let wheel_names = Regex::new(r"\bleakgate-(?:\*|<v>|\d+\.\d+\.\d+)[^\s`]*\.whl").unwrap();
    for (path, text) in files() {
        for (i, line) in text.lines().enumerate() {
            for m in wheel_names.find_iter(line) {
                let before = &line[..m.start()];
                assert!(
                    before.ends_with("py"),
                    "{path}:{}: a wheel named {} (it is {DISTRIBUTION}-...)",
                    i + 1,
                    m.as_str()
                );
            }
        }
    }
}

#[test]
fn every_git_url_of_leakgate_is_the_cargo_repository() {
    let root = common::repo_root();
    let repo = toml_value(&root.join("Cargo.toml"), "package", "repository");
    assert!(repo.starts_with("https://github.com/"), "{repo}");
    let owner_name = repo.trim_start_matches("https://github.com/");
    // Any URL of a repository called leakgate, on any host.
    let url =
        Regex::new(r"(?:https?://|git@)[A-Za-z0-9.-]+[/:][A-Za-z0-9_.-]+/leakgate\b").unwrap();
    // The Action: `uses: OWNER/leakgate@...`.
    let uses = Regex::new(r"uses: ([A-Za-z0-9_.-]+/leakgate)@").unwrap();
    let mut bad = Vec::new();
    let mut seen = 0;
    for (path, text) in files() {
        for (i, line) in text.lines().enumerate() {
            for m in url.find_iter(line) {
                seen += 1;
                if m.as_str() != repo {
                    bad.push(format!("{path}:{}: {}", i + 1, m.as_str()));
                }
            }
            for c in uses.captures_iter(line) {
                if &c[1] != owner_name {
                    bad.push(format!("{path}:{}: uses {}", i + 1, &c[1]));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "not the repository of Cargo.toml ({repo}):\n{}",
        bad.join("\n")
    );
    assert!(seen >= 3, "only {seen} git URLs of leakgate found");
    // The recipes that install with cargo from git name the URL, not a
    // placeholder.
    let ci = std::fs::read_to_string(root.join("docs/ci.md")).unwrap();
    assert!(!ci.contains("OWNER/"), "docs/ci.md has a placeholder URL");
    for line in ci.lines().filter(|l| l.contains("$LEAKGATE_GIT")) {
        assert!(
            ci.contains(&format!("LEAKGATE_GIT: {repo}")),
            "docs/ci.md uses $LEAKGATE_GIT ({line}) without setting it to {repo}"
        );
    }
}

/// A recipe that builds leakgate gets a Rust at least as new as
/// `Cargo.toml`'s `rust-version`: not a distribution's `cargo` package
/// (Debian 12's is 1.63), and a `rust:X.Y` image or a rustup toolchain no
/// older than it.
#[test]
fn recipes_build_with_a_new_enough_rust() {
    let root = common::repo_root();
    let need = toml_value(&root.join("Cargo.toml"), "package", "rust-version");
    let parse = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let need_v = parse(&need);
    let distro_cargo = Regex::new(r"(?:apt-get|apt|dnf|yum|apk) (?:-\S+ )*(?:install|add)\b[^\n&;|#]*\s(?:cargo|rustc)(?:\s|$)").unwrap();
    let pinned = Regex::new(r"(?:image: rust:|--default-toolchain )(\d+\.\d+)").unwrap();
    let mut bad = Vec::new();
    for (path, text) in files() {
        for (i, line) in text.lines().enumerate() {
            if distro_cargo.is_match(line) {
                bad.push(format!("{path}:{}: a distribution's cargo: {line}", i + 1));
            }
            for c in pinned.captures_iter(line) {
                if parse(&c[1]) < need_v {
                    bad.push(format!("{path}:{}: Rust {} < {need}: {line}", i + 1, &c[1]));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
