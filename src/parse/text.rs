//! Element text into values: bounded, lossy UTF-8 ([`push_lossy`]) and
//! numbers the way Valgrind prints them (thousands separators, `0x` hex,
//! counts too large for 64 bits).

/// One element's text is bounded: a hostile report (a 1 GB line) must not
/// make memory grow with it. Real texts are far below this; longer ones are
/// cut.
pub(super) const MAX_TEXT: usize = 1 << 20;

/// Appends bytes as UTF-8, replacing invalid sequences (Valgrind writes names
/// byte for byte); the common, valid case takes the fast path.
pub(super) fn push_lossy(out: &mut String, bytes: &[u8]) {
    if out.len() >= MAX_TEXT {
        return;
    }
    let bytes = &bytes[..bytes.len().min(MAX_TEXT - out.len())];
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Parses an integer the way Valgrind prints them: decimal, possibly with
/// thousands separators, or `0x` hex.
pub fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.contains(',') {
        let t: String = s.chars().filter(|c| *c != ',').collect();
        return t.parse().ok();
    }
    s.parse().ok()
}

/// [`parse_num`] for byte and block counts: a decimal number too large for
/// 64 bits is read as `u64::MAX` (sums saturate there too) rather than lost.
pub fn parse_count(s: &str) -> Option<u64> {
    parse_num(s).or_else(|| {
        let t = s.trim();
        (!t.is_empty()
            && t.bytes().all(|c| c.is_ascii_digit() || c == b',')
            && t.bytes().any(|c| c.is_ascii_digit()))
        .then_some(u64::MAX)
    })
}

/// A number that must fit in 32 bits (protocol version, line): `None` when
/// it does not, never truncated.
pub(super) fn parse_u32(s: &str) -> Option<u32> {
    parse_num(s).and_then(|v| u32::try_from(v).ok())
}
