//! The source line at a user finding's location, read from the file on
//! disk (capped in size, cached per file), after Cython's generated code is
//! mapped to its `.pyx` (`cython.rs`), with a note where the line lies in a
//! local `macro_rules!` body (`macros.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Reads source lines, caching each file's content once.
#[derive(Default)]
pub(super) struct SourceLines {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceLines {
    pub(super) fn get(&mut self, path: &Path, line: u32) -> Option<String> {
        let content = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = crate::util::read_source(path)?;
            Some(
                String::from_utf8_lossy(&bytes)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let lines = content.as_ref()?;
        lines
            .get(line.checked_sub(1)? as usize)
            .map(|s| s.trim_end().to_string())
    }
}

/// Fills the user findings' locations: Cython's generated places mapped to
/// the `.pyx`, the source line (Cython's copy of it when the `.pyx` is not
/// here), and the note on a line inside a `macro_rules!` body.
pub(super) fn fill_user_locations(findings: &mut [crate::report::Finding]) {
    let mut lines = SourceLines::default();
    let mut cython = super::cython::CythonMapper::default();
    let mut macros = super::macros::MacroBodies::default();
    for f in findings.iter_mut().filter(|f| f.is_user()) {
        // Cython's copy of the line, when its .pyx is not here.
        let copy = cython.map_finding(f);
        if let Some(loc) = &f.location
            && let (Some(p), Some(l)) = (&loc.path, loc.line)
        {
            f.source_line = lines.get(Path::new(p), l).or(copy);
            f.location_note = macros.at(Path::new(p), l).map(|m| {
                let file = loc.file.as_deref().unwrap_or(p);
                super::macros::note(m, file.rsplit('/').next().unwrap_or(file))
            });
            if f.location_note.is_none() && f.source_line.is_none() && !Path::new(p).exists() {
                f.location_note = gone_note(f, p);
            }
        }
    }
}

/// Why a finding whose source file is gone is still the user's, when pip's
/// records decided it: the object installed from the checkout, and how to
/// keep the generated file for its lines.
fn gone_note(f: &crate::report::Finding, path: &str) -> Option<String> {
    let frame = f
        .stack
        .iter()
        .find(|s| s.user && s.path.as_deref() == Some(path))?;
    let obj = frame.object.as_deref()?;
    let from = super::attribute::installed_from(obj)?;
    Some(format!(
        "yours: pip installed {} from {} (its direct_url.json and RECORD); {path} was compiled in a build directory that is gone, so its lines cannot be shown: build in place (`python setup.py build_ext --inplace`) or keep the build directory (`pip install -Cbuild-dir=build .` for scikit-build-core and meson-python) to see them",
        obj.rsplit('/').next().unwrap_or(obj),
        from.display()
    ))
}
