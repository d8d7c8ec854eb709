//! Every output of one `leakgate analyze`, for the renderer tests
//! (`snapshots.rs`, `agreement.rs`): the text report, the JSON report, the
//! HTML page and the CI files (JUnit, SARIF, Code Quality, Markdown, GitHub
//! annotations), from recorded fixtures, no Valgrind needed.
//!
//! [`analyze_all`] runs the built binary twice in the repository root
//! (relative fixture paths, `--repo-root` the root): once with
//! `--format json` and every file output plus `--annotations always` (on
//! stdout, since the JSON goes to a file), once with `--format text`
//! (`NO_COLOR`, `--color never`). Variables that change the outputs
//! (`GITHUB_ACTIONS`, `GITHUB_STEP_SUMMARY`, `NO_COLOR`) are set for the
//! child only. [`normalise`] replaces what differs between machines and
//! clones: the checkout's path, the temporary directory, the tool version.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{leakgate_bin, repo_root};

/// The outputs of one analysis.
#[derive(Debug, Clone)]
pub(crate) struct Outputs {
    /// The exit code of the JSON run (the text run must give the same).
    pub exit: i32,
    pub text: String,
    pub json: String,
    pub html: String,
    pub junit: String,
    pub sarif: String,
    pub codequality: String,
    pub markdown: String,
    pub annotations: String,
}

impl Outputs {
    /// `(name, content)` of every output, in a fixed order.
    pub(crate) fn all(&self) -> [(&'static str, &str); 8] {
        [
            ("text", &self.text),
            ("json", &self.json),
            ("html", &self.html),
            ("junit", &self.junit),
            ("sarif", &self.sarif),
            ("codequality", &self.codequality),
            ("markdown", &self.markdown),
            ("annotations", &self.annotations),
        ]
    }

    /// The JSON report, parsed.
    pub(crate) fn report(&self) -> serde_json::Value {
        serde_json::from_str(&self.json).expect("the JSON report parses")
    }
}

fn leakgate() -> Command {
    let mut c = Command::new(leakgate_bin());
    c.current_dir(repo_root())
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1");
    c
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// `leakgate analyze ARGS` with every output; the files go into `work`
/// (which must exist and be private to the caller).
pub(crate) fn analyze_all(work: &Path, args: &[&str]) -> Outputs {
    analyze_all_in(work, args, &repo_root())
}

/// [`analyze_all`] with another `--repo-root` (for fixtures whose recorded
/// paths would otherwise fall inside or outside the checkout depending on
/// where it was cloned).
pub(crate) fn analyze_all_in(work: &Path, args: &[&str], root: &Path) -> Outputs {
    let file = |name: &str| work.join(name);
    let mut c = leakgate();
    c.arg("analyze")
        .args(args)
        .arg("--repo-root")
        .arg(root)
        .args(["--format", "json", "-o"])
        .arg(file("report.json"))
        .arg("--html")
        .arg(file("report.html"))
        .arg("--junit")
        .arg(file("junit.xml"))
        .arg("--sarif")
        .arg(file("report.sarif"))
        .arg("--codequality")
        .arg(file("codequality.json"))
        .arg("--markdown")
        .arg(file("summary.md"))
        .args(["--annotations", "always"]);
    let out = c.output().expect("run leakgate");
    let exit = out.status.code().expect("leakgate exited");
    assert!(
        matches!(exit, 0 | 1 | 3),
        "leakgate analyze {args:?} exited {exit}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let annotations = String::from_utf8(out.stdout).expect("annotations are UTF-8");

    let text = leakgate()
        .arg("analyze")
        .args(args)
        .arg("--repo-root")
        .arg(root)
        .args(["--format", "text", "--color", "never"])
        .output()
        .expect("run leakgate");
    assert_eq!(
        text.status.code(),
        Some(exit),
        "the text run of {args:?} exits as the JSON run: {}",
        String::from_utf8_lossy(&text.stderr)
    );
    Outputs {
        exit,
        text: String::from_utf8(text.stdout).expect("the text report is UTF-8"),
        json: read(&file("report.json")),
        html: read(&file("report.html")),
        junit: read(&file("junit.xml")),
        sarif: read(&file("report.sarif")),
        codequality: read(&file("codequality.json")),
        markdown: read(&file("summary.md")),
        annotations,
    }
}

/// A path as SARIF writes it into a `file:` URI (RFC 3986 unreserved
/// characters and `/` kept, the rest percent-encoded).
fn uri_path(p: &str) -> String {
    let mut out = String::new();
    for b in p.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Where the recorded fixtures' own paths point (the checkout they were
/// recorded in, see fixtures/README.md): replaced by `[RECORDED]` first, so
/// that a clone at that same path does not turn them into `[ROOT]`.
const RECORDED_VENV: &str = "/work/main/.venv";

/// Replaces what differs between machines: the recording venv's path by
/// `[RECORDED]/.venv`, the checkout's path (as given and canonical, plain
/// and URI-encoded) by `[ROOT]`, `work` by `[TMP]`, and the tool's version
/// by `[VERSION]`.
pub(crate) fn normalise(s: &str, work: &Path) -> String {
    let s = &s
        .replace(RECORDED_VENV, "[RECORDED]/.venv")
        .replace(&uri_path(RECORDED_VENV), "[RECORDED]/.venv");
    let mut pairs: Vec<(String, &str)> = Vec::new();
    for (dir, name) in [(work.to_path_buf(), "[TMP]"), (repo_root(), "[ROOT]")] {
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        for p in [dir, canonical] {
            let p = p.to_string_lossy().trim_end_matches('/').to_string();
            pairs.push((uri_path(&p), name));
            pairs.push((p, name));
        }
    }
    // Longest first, so that a path inside another is replaced whole.
    pairs.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    pairs.dedup();
    let mut out = s.to_string();
    for (p, name) in &pairs {
        if !p.is_empty() {
            out = out.replace(p.as_str(), name);
        }
    }
    let version = regex::Regex::new(&format!(
        r"\b{}\b",
        regex::escape(env!("CARGO_PKG_VERSION"))
    ))
    .expect("version pattern");
    version.replace_all(&out, "[VERSION]").into_owned()
}

/// The HTML page without its inline stylesheet (the same in every report;
/// `src/render/html.css` is reviewed as the source file it is).
pub(crate) fn html_without_css(html: &str) -> String {
    match (html.find("<style>"), html.find("</style>")) {
        (Some(a), Some(b)) if a < b => format!(
            "{}<style>/* src/render/html.css */</style>{}",
            &html[..a],
            &html[b + "</style>".len()..]
        ),
        _ => html.to_string(),
    }
}

/// A private temporary directory for one analysis' files.
pub(crate) fn workdir() -> (tempfile::TempDir, PathBuf) {
    let t = super::tempdir();
    let p = t.path().to_path_buf();
    (t, p)
}
