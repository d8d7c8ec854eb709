//! Small helpers every stage shares: the FNV-1a hash behind fingerprints
//! and site keys, number formatting for people, shell quoting, and reading
//! a source file named by a (possibly hostile) report.

/// 64-bit FNV-1a, fed in pieces.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        self
    }

    /// Adds `part` and a 0x1f separator, so that `["ab", "c"]` and
    /// `["a", "bc"]` hash differently.
    pub fn part(&mut self, part: &str) -> &mut Self {
        self.write(part.as_bytes()).write(&[0x1f])
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    Fnv::default().write(bytes).finish()
}

/// FNV-1a of `parts`, each followed by a 0x1f separator (fingerprints).
pub fn fnv1a_parts<S: AsRef<str>>(parts: &[S]) -> u64 {
    let mut h = Fnv::default();
    for p in parts {
        h.part(p.as_ref());
    }
    h.finish()
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 byte`, `1,024 bytes`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// An argv as a person would type it: words of letters, digits and
/// `-_./=:,+@%` as they are, every other word in single quotes (a `'`
/// inside written `'\''`), so the text pasted into a POSIX shell runs the
/// same argv.
pub fn shell_join<S: AsRef<str>>(args: &[S]) -> String {
    args.iter()
        .map(|a| {
            let a = a.as_ref();
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a.to_string()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Source files larger than this are not read (`read_source`).
const SOURCE_MAX: u64 = 16 << 20;

/// A source file's bytes, if it is a regular file of a sane size: a path
/// from a hostile report (`/dev/zero`, a FIFO, `/proc/kcore`) must not make
/// leakgate read forever or block.
pub fn read_source(path: &std::path::Path) -> Option<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_values() {
        // FNV-1a 64 test vectors (draft-eastlake-fnv).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_parts(&["a"]), fnv1a(b"a\x1f"));
        assert_ne!(fnv1a_parts(&["ab", "c"]), fnv1a_parts(&["a", "bc"]));
    }

    #[test]
    fn numbers_and_quoting() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(plural(1, "byte", "bytes"), "1 byte");
        assert_eq!(plural(2048, "byte", "bytes"), "2,048 bytes");
        assert_eq!(
            shell_join(&["python", "-c", "print('x')"]),
            "python -c 'print('\\''x'\\'')'"
        );
        assert_eq!(shell_join(&[""]), "''");
    }

    #[test]
    fn shell_join_quotes_what_a_shell_would_split() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shell_join(&v(&["python3", "-m", "pytest", "t.py::x"])),
            "python3 -m pytest t.py::x"
        );
        assert_eq!(
            shell_join(&v(&["a b", "it's", "", "$HOME", "^x"])),
            "'a b' 'it'\\''s' '' '$HOME' '^x'"
        );
    }
}
