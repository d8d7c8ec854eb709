//! The source line at a user finding's location, read from the file on
//! disk (capped in size, cached per file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Source files larger than this are not read for their lines.
const SOURCE_MAX: u64 = 16 << 20;

/// A source file's bytes, if it is a regular file of a sane size: a path
/// from a hostile report (`/dev/zero`, a FIFO, `/proc/kcore`) must not make
/// leakgate read forever or block.
pub(super) fn read_source(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > SOURCE_MAX {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(SOURCE_MAX).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Reads source lines, caching each file's content once.
#[derive(Default)]
pub(super) struct SourceLines {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl SourceLines {
    pub(super) fn get(&mut self, path: &Path, line: u32) -> Option<String> {
        let content = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = read_source(path)?;
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
