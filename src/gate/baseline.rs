//! Baselines: the user findings a project already has, so that CI fails only
//! on new ones (`--write-baseline FILE`, `--baseline FILE`).
//!
//! A baseline file is JSON: `{"leakgate_baseline": 1, "findings": [...]}`,
//! one [`BaselineEntry`] per user finding, sorted by fingerprint. It holds
//! no line numbers, addresses, pids or byte counts, so recording it again
//! gives the same file after rebuilds and after edits that only move code.
//!
//! Matching: a finding's `fingerprint` (kind, callee, names of the user
//! frames) identifies it. Sites in one function share a fingerprint; among
//! those, an entry whose source text equals the finding's source line is
//! matched first, the rest in order of their lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::{BaselineEntry, BaselineOut, BaselineState, Finding, Report};

/// The baseline file format version.
pub const BASELINE_VERSION: u32 = 1;

/// A baseline file that cannot be used (exit 2). Each message is one line
/// that already holds the underlying error (`err`), which is therefore not
/// chained as a `source` too: printed with `{:#}`, it would appear twice.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline {}: cannot read: {err}", path.display())]
    Read { path: PathBuf, err: std::io::Error },
    #[error("baseline {}: not a leakgate baseline: {err}", path.display())]
    Parse {
        path: PathBuf,
        err: serde_json::Error,
    },
    #[error("baseline {}: format version {found} is not one this leakgate reads ({BASELINE_VERSION})", path.display())]
    Version { path: PathBuf, found: u32 },
    #[error("baseline {}: cannot write: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
}

/// The contents of a baseline file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version ([`BASELINE_VERSION`]).
    pub leakgate_baseline: u32,
    pub findings: Vec<BaselineEntry>,
}

impl Baseline {
    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|err| BaselineError::Read {
            path: path.to_path_buf(),
            err,
        })?;
        let b: Baseline = serde_json::from_str(&text).map_err(|err| BaselineError::Parse {
            path: path.to_path_buf(),
            err,
        })?;
        if b.leakgate_baseline != BASELINE_VERSION {
            return Err(BaselineError::Version {
                path: path.to_path_buf(),
                found: b.leakgate_baseline,
            });
        }
        Ok(b)
    }

    /// The baseline of a report: its user findings. Paths are made relative
    /// to `repo_root` where they lie inside it.
    pub fn from_report(report: &Report, repo_root: Option<&Path>) -> Baseline {
        let mut user: Vec<&Finding> = report.findings.iter().filter(|f| f.is_user()).collect();
        // Sites in one function keep the order of their lines.
        user.sort_by_key(|f| (f.fingerprint.clone(), line_of(f)));
        Baseline {
            leakgate_baseline: BASELINE_VERSION,
            findings: user.into_iter().map(|f| entry(f, repo_root)).collect(),
        }
    }

    /// The file's text: pretty JSON and a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("baseline serialises");
        s.push('\n');
        s
    }

    /// Writes the baseline file.
    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        std::fs::write(path, self.to_json()).map_err(|err| BaselineError::Write {
            path: path.to_path_buf(),
            err,
        })
    }

    /// Marks every user finding `"new"` or `"known"` and lists the entries
    /// no longer seen as fixed. `file` is the baseline's name for the report.
    pub fn apply(&self, findings: &mut [Finding], file: &str) -> BaselineOut {
        let mut by_fp: BTreeMap<&str, Vec<(usize, &BaselineEntry)>> = BTreeMap::new();
        for (i, e) in self.findings.iter().enumerate() {
            by_fp
                .entry(e.fingerprint.as_str())
                .or_default()
                .push((i, e));
        }
        let mut used = vec![false; self.findings.len()];
        let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, f) in findings.iter().enumerate() {
            if f.is_user() {
                groups.entry(f.fingerprint.clone()).or_default().push(i);
            }
        }
        let (mut new, mut known) = (0, 0);
        for (fp, mut idx) in groups {
            idx.sort_by_key(|&i| line_of(&findings[i]));
            let cands = by_fp.get(fp.as_str()).map(Vec::as_slice).unwrap_or(&[]);
            let mut matched = vec![false; idx.len()];
            // First the sites whose source line is unchanged ...
            for (k, &i) in idx.iter().enumerate() {
                let Some(src) = source_text(&findings[i]) else {
                    continue;
                };
                if let Some((j, _)) = cands
                    .iter()
                    .find(|(j, e)| !used[*j] && e.source.as_deref() == Some(src.as_str()))
                {
                    used[*j] = true;
                    matched[k] = true;
                }
            }
            // ... then the others, in order.
            for (k, _) in idx.iter().enumerate() {
                if matched[k] {
                    continue;
                }
                if let Some((j, _)) = cands.iter().find(|(j, _)| !used[*j]) {
                    used[*j] = true;
                    matched[k] = true;
                }
            }
            for (k, &i) in idx.iter().enumerate() {
                findings[i].baseline = Some(if matched[k] {
                    BaselineState::Known
                } else {
                    BaselineState::New
                });
                if matched[k] {
                    known += 1;
                } else {
                    new += 1;
                }
            }
        }
        BaselineOut {
            file: file.to_string(),
            entries: self.findings.len() as u64,
            new,
            known,
            fixed: self
                .findings
                .iter()
                .zip(&used)
                .filter(|(_, u)| !**u)
                .map(|(e, _)| e.clone())
                .collect(),
        }
    }
}

fn line_of(f: &Finding) -> u32 {
    f.location.as_ref().and_then(|l| l.line).unwrap_or(0)
}

fn source_text(f: &Finding) -> Option<String> {
    f.source_line
        .as_deref()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// A path relative to `repo_root` when it lies inside it.
pub fn relative_to(path: &str, repo_root: Option<&Path>) -> Option<String> {
    let root = repo_root?;
    let rel = Path::new(path).strip_prefix(root).ok()?;
    Some(rel.to_string_lossy().into_owned())
}

/// The file a finding points at: relative to the repository root when
/// inside it, else the file name Valgrind gave.
pub fn finding_file(f: &Finding, repo_root: Option<&Path>) -> Option<String> {
    let loc = f.location.as_ref()?;
    loc.path
        .as_deref()
        .and_then(|p| relative_to(p, repo_root))
        .or_else(|| loc.file.clone())
}

/// The baseline entry for a user finding.
pub fn entry(f: &Finding, repo_root: Option<&Path>) -> BaselineEntry {
    let function = f.location.as_ref().and_then(|l| l.function.clone());
    let file = finding_file(f, repo_root);
    let source = source_text(f);
    let (noun, _) = f.kind.noun();
    let mut description = noun;
    if let Some(func) = &function {
        description.push_str(&format!(" in {func}"));
    }
    if let Some(file) = &file {
        description.push_str(&format!(" ({file})"));
    }
    if let Some(callee) = callee(f) {
        description.push_str(&format!(", via {callee}"));
    }
    if f.at_import {
        description.push_str(", made once at import");
    }
    if let Some(src) = &source {
        description.push_str(&format!(": {src}"));
    }
    BaselineEntry {
        fingerprint: f.fingerprint.clone(),
        kind: f.kind.clone(),
        function,
        file,
        source,
        description,
    }
}

/// The function the innermost user frame called (malloc, strdup, ...).
fn callee(f: &Finding) -> Option<String> {
    let i = f.stack.iter().position(|fr| fr.user)?;
    if i == 0 {
        return None;
    }
    f.stack[i - 1].function.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FrameOut;
    use crate::report::Location;

    fn finding(fp: &str, func: &str, line: u32, src: &str) -> Finding {
        Finding {
            fingerprint: fp.into(),
            kind: "Leak_DefinitelyLost".into(),
            category: crate::report::Category::User,
            source: None,
            message: String::new(),
            bytes: Some(8),
            direct_bytes: Some(8),
            blocks: Some(1),
            count: 1,
            location: Some(Location {
                function: Some(func.into()),
                file: Some("a.c".into()),
                path: Some("/repo/src/a.c".into()),
                line: Some(line),
                object: None,
                generated: None,
            }),
            source_line: Some(format!("    {src}")),
            stack: vec![
                FrameOut {
                    function: Some("malloc".into()),
                    object: None,
                    file: None,
                    path: None,
                    line: None,
                    ip: None,
                    user: false,
                    generated: None,
                },
                FrameOut {
                    function: Some(func.into()),
                    object: None,
                    file: Some("a.c".into()),
                    path: None,
                    line: Some(line),
                    ip: None,
                    user: true,
                    generated: None,
                },
            ],
            pids: vec![1],
            records: 1,
            ..Finding::default()
        }
    }

    fn baseline_of(fs: &[Finding]) -> Baseline {
        let mut b = Baseline {
            leakgate_baseline: 1,
            findings: fs
                .iter()
                .map(|f| entry(f, Some(Path::new("/repo"))))
                .collect(),
        };
        b.findings.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        b
    }

    #[test]
    fn entry_is_readable_and_relative() {
        let e = entry(
            &finding("aa", "f", 3, "p = malloc(8);"),
            Some(Path::new("/repo")),
        );
        assert_eq!(e.file.as_deref(), Some("src/a.c"));
        assert_eq!(
            e.description,
            "definitely-lost leak in f (src/a.c), via malloc: p = malloc(8);"
        );
    }

    #[test]
    fn same_function_sites_match_by_source_then_order() {
        let old = vec![
            finding("aa", "f", 10, "p = malloc(8);"),
            finding("aa", "f", 20, "q = malloc(8);"),
        ];
        let b = baseline_of(&old);
        // A new site in the same function above the old ones; the old ones moved.
        let mut now = vec![
            finding("aa", "f", 5, "n = malloc(8);"),
            finding("aa", "f", 14, "p = malloc(8);"),
            finding("aa", "f", 24, "q = malloc(8);"),
        ];
        let out = b.apply(&mut now, "b.json");
        let states: Vec<_> = now.iter().map(|f| f.baseline.unwrap().as_str()).collect();
        assert_eq!(states, ["new", "known", "known"]);
        assert_eq!((out.new, out.known, out.fixed.len()), (1, 2, 0));
        // One removed: reported fixed.
        let mut later = vec![finding("aa", "f", 24, "q = malloc(8);")];
        let out = b.apply(&mut later, "b.json");
        assert_eq!(later[0].baseline, Some(BaselineState::Known));
        assert_eq!(out.fixed.len(), 1);
        assert_eq!(out.fixed[0].source.as_deref(), Some("p = malloc(8);"));
    }

    #[test]
    fn edited_source_lines_still_match_by_order() {
        let b = baseline_of(&[finding("aa", "f", 10, "p = malloc(8);")]);
        let mut now = vec![finding("aa", "f", 12, "p = malloc(16);")];
        let out = b.apply(&mut now, "b.json");
        assert_eq!(now[0].baseline, Some(BaselineState::Known));
        assert!(out.fixed.is_empty());
    }

    #[test]
    fn round_trips_through_json() {
        let b = baseline_of(&[finding("aa", "f", 10, "p = malloc(8);")]);
        let back: Baseline = serde_json::from_str(&b.to_json()).unwrap();
        assert_eq!(back, b);
    }
}
