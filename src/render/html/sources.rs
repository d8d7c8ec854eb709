//! Source snippets for the cards: files under the source roots (and the
//! paths the report names), read once, capped in size.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::report::{Finding, Report};

/// Source files larger than this are not read for snippets.
pub(super) const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// File extensions read for source snippets (a report names arbitrary paths;
/// only source code is ever quoted into the page).
pub(super) const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "c++", "cp", "h", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
    "tpp", "cu", "cuh", "m", "mm", "f", "f90", "f95", "for", "rs", "go", "zig", "s", "pyx", "pxd",
    "pxi", "py", "d", "swift",
];

/// Lines of source files, read once each.
#[derive(Default)]
pub(super) struct Sources {
    roots: Vec<PathBuf>,
    cache: HashMap<PathBuf, Option<Vec<String>>>,
}

/// What could be shown for a finding's location.
pub(super) enum Snippet {
    /// The file was found: (local path, first line number, lines, changed since the report).
    Found(PathBuf, u32, Vec<String>, bool),
    /// Not readable here: only the line the report recorded, if any.
    Missing(String, Option<String>),
}

pub(super) fn is_source_file(p: &Path) -> bool {
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    SOURCE_EXTENSIONS.contains(&ext.as_str())
        && std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() <= MAX_SOURCE_BYTES)
}

impl Sources {
    /// `extra_roots` (`leakgate report --src-root`) first, then the report's.
    pub(super) fn new(r: &Report, extra_roots: &[PathBuf]) -> Self {
        let mut roots: Vec<PathBuf> = extra_roots.to_vec();
        roots.extend(r.src_roots.iter().map(PathBuf::from));
        roots.dedup();
        Sources {
            roots,
            cache: HashMap::new(),
        }
    }

    /// The local file for a recorded path: the path itself, else the
    /// longest trailing part of it under a source root.
    pub(super) fn locate(&self, recorded: &str) -> Option<PathBuf> {
        let p = Path::new(recorded);
        if p.is_absolute() && is_source_file(p) {
            return Some(p.to_path_buf());
        }
        let parts: Vec<&std::ffi::OsStr> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s),
                _ => None,
            })
            .collect();
        let first = parts.len().saturating_sub(12);
        for root in &self.roots {
            for start in first..parts.len() {
                let mut cand = root.clone();
                cand.extend(&parts[start..]);
                if is_source_file(&cand) {
                    return Some(cand);
                }
            }
        }
        if !p.is_absolute() && is_source_file(p) {
            return Some(p.to_path_buf());
        }
        None
    }

    pub(super) fn lines(&mut self, p: &Path) -> Option<&Vec<String>> {
        self.cache
            .entry(p.to_path_buf())
            .or_insert_with(|| {
                let bytes = std::fs::read(p).ok()?;
                Some(
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .map(str::to_string)
                        .collect(),
                )
            })
            .as_ref()
    }

    pub(super) fn snippet(&mut self, f: &Finding, context: u32) -> Option<Snippet> {
        let loc = f.location.as_ref()?;
        let line = loc.line?;
        let recorded = loc.path.clone().or_else(|| loc.file.clone())?;
        if let Some(local) = self.locate(&recorded)
            && let Some(lines) = self.lines(&local)
            && line >= 1
            && (line as usize) <= lines.len()
        {
            let first = line.saturating_sub(context).max(1);
            let last = (line + context).min(lines.len() as u32);
            let shown = lines[first as usize - 1..last as usize].to_vec();
            let changed = f
                .source_line
                .as_ref()
                .is_some_and(|s| s.trim_end() != lines[line as usize - 1].trim_end());
            return Some(Snippet::Found(local, first, shown, changed));
        }
        Some(Snippet::Missing(recorded, f.source_line.clone()))
    }
}
