//! Rust `macro_rules!` bodies in a user's source file: code expanded from a
//! local macro carries the line of the macro body in the debug info, not
//! the line of the call site (unless the macro is
//! `#[collapse_debuginfo(yes)]`). A user finding whose line lies in such a
//! body gets a note saying so (`location_note`; docs/rust-and-nanobind.md).
//! The file is scanned once (comments, strings and character literals
//! skipped; braces matched) and cached.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One `macro_rules!` definition: its name and the 1-based lines its body
/// spans (from the line of its opening delimiter to that of the closing one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MacroBody {
    pub(crate) name: String,
    pub(crate) first: u32,
    pub(crate) last: u32,
}

/// The `macro_rules!` definitions of a file's text.
pub(crate) fn macro_bodies(text: &str) -> Vec<MacroBody> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' | b'"' | b'\'' | b'r' | b'b' => {
                let (next, lines) = skip_non_code(b, i);
                if next == i {
                    i += 1;
                } else {
                    line += lines;
                    i = next;
                }
            }
            b'm' if b[i..].starts_with(b"macro_rules!") && (i == 0 || !is_ident(b[i - 1])) => {
                i += "macro_rules!".len();
                let (name, after, lines) = macro_name(b, i);
                line += lines;
                i = after;
                let Some(name) = name else { continue };
                if i < b.len() && matches!(b[i], b'{' | b'(' | b'[') {
                    let first = line;
                    let (end, lines) = matching(b, i);
                    line += lines;
                    out.push(MacroBody {
                        name,
                        first,
                        last: line,
                    });
                    i = end;
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// After `macro_rules!`: the macro's name, the index of the next
/// non-blank byte after it, and the newlines skipped.
fn macro_name(b: &[u8], mut i: usize) -> (Option<String>, usize, u32) {
    let mut lines = 0;
    let blank = |i: &mut usize, lines: &mut u32| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            if b[*i] == b'\n' {
                *lines += 1;
            }
            *i += 1;
        }
    };
    blank(&mut i, &mut lines);
    let start = i;
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    let name = (i > start).then(|| String::from_utf8_lossy(&b[start..i]).into_owned());
    blank(&mut i, &mut lines);
    (name, i, lines)
}

/// From an opening delimiter at `i`: the index after its matching closing
/// one (or the end of the text), and the newlines in between.
fn matching(b: &[u8], mut i: usize) -> (usize, u32) {
    let mut depth = 0usize;
    let mut lines = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                lines += 1;
                i += 1;
            }
            b'{' | b'(' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b')' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
                if depth == 0 {
                    return (i, lines);
                }
            }
            _ => {
                let (next, l) = skip_non_code(b, i);
                lines += l;
                i = if next == i { i + 1 } else { next };
            }
        }
    }
    (i, lines)
}

/// At `i`: when a comment, string or character literal starts there, the
/// index after it and its newlines; else `(i, 0)`.
fn skip_non_code(b: &[u8], i: usize) -> (usize, u32) {
    let count = |from: usize, to: usize| {
        u32::try_from(b[from..to].iter().filter(|c| **c == b'\n').count()).unwrap_or(u32::MAX)
    };
    let prev_ident = i > 0 && is_ident(b[i - 1]);
    match b[i] {
        b'/' if b.get(i + 1) == Some(&b'/') => {
            let end = b[i..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(b.len(), |p| i + p);
            (end, 0)
        }
        b'/' if b.get(i + 1) == Some(&b'*') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            (j, count(i, j))
        }
        b'"' => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            (end, count(i, end))
        }
        b'r' | b'b' if !prev_ident => {
            // b'x', b"..", r"..", r#".."#, br"..".
            let mut j = i;
            if b[i] == b'b' {
                j += 1;
                if matches!(b.get(j), Some(b'\'' | b'"')) {
                    return skip_non_code(b, j);
                }
            }
            if b.get(j) != Some(&b'r') {
                return (i, 0);
            }
            j += 1;
            let hashes = b[j..].iter().take_while(|c| **c == b'#').count();
            if b.get(j + hashes) != Some(&b'"') {
                return (i, 0);
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = j + hashes + 1;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            (end, count(i, end))
        }
        b'\'' => {
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime /
            // label ('a), which is code.
            if b.get(i + 1) == Some(&b'\\') {
                let end = b[i + 2..]
                    .iter()
                    .position(|c| *c == b'\'')
                    .map_or(b.len(), |p| i + 2 + p + 1);
                return (end, 0);
            }
            // One UTF-8 character, then the closing quote.
            let len = match b.get(i + 1) {
                Some(c) if *c >= 0xF0 => 4,
                Some(c) if *c >= 0xE0 => 3,
                Some(c) if *c >= 0xC0 => 2,
                _ => 1,
            };
            if b.get(i + 1 + len) == Some(&b'\'') {
                (i + 2 + len, 0)
            } else {
                (i, 0)
            }
        }
        _ => (i, 0),
    }
}

/// The note for a user finding at `line` of a Rust source file that lies
/// in a `macro_rules!` body.
pub(crate) fn note(m: &MacroBody, file: &str) -> String {
    format!(
        "this line is in the body of macro `{}!` ({file}:{}-{}): the call site is not in the debug info; add #[collapse_debuginfo(yes)] to the macro (Rust 1.79+) to get it",
        m.name, m.first, m.last
    )
}

/// Macro bodies per Rust source file, read once.
#[derive(Default)]
pub(crate) struct MacroBodies {
    files: HashMap<PathBuf, Vec<MacroBody>>,
}

impl MacroBodies {
    /// The `macro_rules!` whose body holds `line` of `path` (a `.rs` file).
    pub(crate) fn at(&mut self, path: &Path, line: u32) -> Option<&MacroBody> {
        if path.extension().is_none_or(|e| e != "rs") {
            return None;
        }
        let bodies = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            crate::util::read_source(path)
                .map(|b| macro_bodies(&String::from_utf8_lossy(&b)))
                .unwrap_or_default()
        });
        // The innermost (last-starting) body holding the line.
        bodies
            .iter()
            .filter(|m| m.first <= line && line <= m.last)
            .max_by_key(|m| m.first)
    }
}
