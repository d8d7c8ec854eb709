//! The matcher's building blocks for names: three-valued [`Verdict`]s and
//! Valgrind's name globs (`VG_(string_match)`: `*` and `?`).

/// The answer to "does this suppression match this record?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Yes,
    No,
    /// Cannot be decided from the XML.
    Unknown,
}

impl Verdict {
    pub(super) fn and(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::No, _) | (_, Verdict::No) => Verdict::No,
            (Verdict::Yes, Verdict::Yes) => Verdict::Yes,
            _ => Verdict::Unknown,
        }
    }

    pub(super) fn or(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::Yes, _) | (_, Verdict::Yes) => Verdict::Yes,
            (Verdict::No, Verdict::No) => Verdict::No,
            _ => Verdict::Unknown,
        }
    }
}

/// `VG_(string_match)`: `*` matches any byte sequence (including `/` and the
/// empty one), `?` exactly one byte, everything else is a literal,
/// case-sensitive byte; no escapes; the whole name must be covered.
/// Linear in practice, O(len(pattern)·len(name)) at worst (no exponential
/// backtracking).
pub fn string_match(pattern: &str, name: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut si) = (0usize, 0usize);
    // Position after the last '*' seen, and where its match currently ends.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            pi += 1;
            star = Some((pi, si));
        } else if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether `pattern` matches some name that starts with `prefix`.
pub(super) fn can_match_prefix(pattern: &str, prefix: &str) -> bool {
    let (p, q) = (pattern.as_bytes(), prefix.as_bytes());
    for (i, &c) in q.iter().enumerate() {
        match p.get(i) {
            None => return false,
            Some(b'*') => return true,
            Some(b'?') => {}
            Some(&x) if x == c => {}
            Some(_) => return false,
        }
    }
    true
}

pub(super) fn is_simple(p: &str) -> bool {
    !p.bytes().any(|c| c == b'*' || c == b'?')
}
