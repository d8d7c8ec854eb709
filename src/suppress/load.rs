//! Loading suppression files for a run or an analysis: the bundled set
//! (embedded in the binary) first, then the user's `--suppressions` files in
//! command-line order, so that, as in Valgrind, the later definition wins.
//! Every syntax error is reported as `FILE:LINE: message`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::bundled::BUNDLED;
use super::matcher::{MatchOptions, SuppressionSet};
use super::parse::{ParsedFile, Suppression, SyntaxError, parse_detailed};

/// Suppression files are parsed without truncation; each run's
/// `--num-callers` truncates them when a set is built (§2.3).
const PARSE_NUM_CALLERS: usize = 500;

/// Why the suppressions could not be loaded (exit 2, before any run).
#[derive(Debug, thiserror::Error)]
pub enum SuppError {
    #[error("{path}: cannot read suppression file: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: is a directory, not a suppression file")]
    Directory { path: PathBuf },
    #[error("{}{}", .0[0], if .0.len() > 1 { format!(" (and {} more; see `leakgate lint`)", .0.len() - 1) } else { String::new() })]
    Syntax(Vec<SyntaxError>),
}

/// Suppression files larger than this are refused (Valgrind's own are a
/// few hundred KB); a path like `/dev/zero` must not exhaust memory.
const MAX_FILE: u64 = 64 << 20;

/// Reads a whole file (a pipe too, e.g. `<(...)`), up to [`MAX_FILE`].
fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB",
            MAX_FILE >> 20
        )));
    }
    Ok(bytes)
}

/// Parses one file from disk: (suppressions, errors, warnings).
pub fn parse_file(path: &Path) -> Result<ParsedFile, SuppError> {
    if path.is_dir() {
        return Err(SuppError::Directory {
            path: path.to_path_buf(),
        });
    }
    let bytes = read_capped(path).map_err(|e| SuppError::Io {
        path: path.to_path_buf(),
        err: e,
    })?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(parse_detailed(
        &path.display().to_string(),
        &text,
        "Memcheck",
        PARSE_NUM_CALLERS,
    ))
}

/// Loads the bundled set (unless `bundled` is false) and `files`.
pub fn load(files: &[PathBuf], bundled: bool) -> Result<Vec<Suppression>, SuppError> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    if bundled {
        for (name, text) in BUNDLED {
            let p = parse_detailed(
                &format!("bundled:{name}"),
                text,
                "Memcheck",
                PARSE_NUM_CALLERS,
            );
            errors.extend(p.errors);
            out.extend(p.suppressions);
        }
    }
    for f in files {
        let p = parse_file(f)?;
        errors.extend(p.errors);
        out.extend(p.suppressions);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(SuppError::Syntax(errors))
    }
}

/// The suppressions, with one matcher per way the XML was produced (whether
/// below-main frames were shown, and `--num-callers`).
pub struct Suppressor {
    supps: Vec<Suppression>,
    sets: Mutex<HashMap<(bool, usize), std::sync::Arc<SuppressionSet>>>,
}

impl Suppressor {
    pub fn new(supps: Vec<Suppression>) -> Suppressor {
        Suppressor {
            supps,
            sets: Mutex::new(HashMap::new()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.supps.is_empty()
    }

    pub fn suppressions(&self) -> &[Suppression] {
        &self.supps
    }

    /// The matcher for XML written with these Valgrind options.
    pub fn set_for(&self, valgrind_args: &[String]) -> std::sync::Arc<SuppressionSet> {
        let mut show_below_main = false;
        let mut num_callers = 12usize;
        for a in valgrind_args {
            if let Some(v) = a.strip_prefix("--show-below-main=") {
                show_below_main = v == "yes";
            } else if let Some(v) = a.strip_prefix("--num-callers=") {
                num_callers = v.parse().unwrap_or(12);
            }
        }
        let key = (show_below_main, num_callers);
        let mut sets = self.sets.lock().expect("suppression sets lock");
        sets.entry(key)
            .or_insert_with(|| {
                let supps = self
                    .supps
                    .iter()
                    .cloned()
                    .map(|mut s| {
                        s.frames.truncate(num_callers.max(1));
                        s
                    })
                    .collect();
                let opts = MatchOptions {
                    show_below_main,
                    num_callers,
                    ..MatchOptions::default()
                };
                std::sync::Arc::new(SuppressionSet::new(supps, opts))
            })
            .clone()
    }
}
