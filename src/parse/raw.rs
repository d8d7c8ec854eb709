//! Reading past the tokenizer: elements whose text Valgrind does not
//! escape (`<threadname>`, `<usercomment>`) are read raw up to their end
//! tag, and elements nobody reads (the duplicated top-level
//! `<suppression>`, `<rawtext>`) are skipped without tokenising them.

use std::io::BufRead;

/// Elements whose text Valgrind writes without escaping: read them raw.
pub(super) fn raw_text_kind(name: &[u8]) -> Option<&'static str> {
    match name {
        b"threadname" => Some("threadname"),
        b"usercomment" => Some("usercomment"),
        _ => None,
    }
}

/// Reads raw bytes up to `</name>` (consumed, nothing beyond it), for
/// elements Valgrind does not escape. Returns `None` at end of input.
pub(super) fn read_raw_until(r: &mut dyn BufRead, name: &[u8]) -> std::io::Result<Option<String>> {
    const MAX_KEEP: usize = 64 * 1024;
    let mut close = Vec::with_capacity(name.len() + 3);
    close.extend_from_slice(b"</");
    close.extend_from_slice(name);
    close.push(b'>');
    let mut acc: Vec<u8> = Vec::new();
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(None);
        }
        // A closing tag split across two buffers.
        let keep = acc.len().min(close.len() - 1);
        if keep > 0 {
            let mut probe = acc[acc.len() - keep..].to_vec();
            probe.extend_from_slice(&avail[..avail.len().min(close.len() - 1)]);
            if let Some(p) = find(&probe, &close) {
                let from_avail = p + close.len() - keep;
                acc.truncate(acc.len() - keep + p);
                r.consume(from_avail);
                return Ok(Some(String::from_utf8_lossy(&acc).into_owned()));
            }
        }
        if let Some(p) = find(avail, &close) {
            acc.extend_from_slice(&avail[..p]);
            r.consume(p + close.len());
            return Ok(Some(String::from_utf8_lossy(&acc).into_owned()));
        }
        let n = avail.len();
        acc.extend_from_slice(avail);
        r.consume(n);
        if acc.len() > MAX_KEEP {
            // A runaway element: bound memory, keep searching for its end.
            let cut = acc.len() - close.len();
            acc.drain(..cut);
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// Consumes input up to and including `</name>` without tokenising it.
/// Returns false at end of input.
pub(super) fn skip_raw_until(r: &mut dyn BufRead, name: &[u8]) -> std::io::Result<bool> {
    let mut close = Vec::with_capacity(name.len() + 3);
    close.extend_from_slice(b"</");
    close.extend_from_slice(name);
    close.push(b'>');
    let finder = memchr::memmem::Finder::new(&close);
    // The last bytes of the previous buffer, for a tag split across two.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(false);
        }
        if !carry.is_empty() {
            let mut probe = carry.clone();
            probe.extend_from_slice(&avail[..avail.len().min(close.len() - 1)]);
            if let Some(p) = finder.find(&probe) {
                let n = p + close.len() - carry.len();
                r.consume(n);
                return Ok(true);
            }
        }
        if let Some(p) = finder.find(avail) {
            r.consume(p + close.len());
            return Ok(true);
        }
        let n = avail.len();
        let keep = n.min(close.len() - 1);
        carry.clear();
        carry.extend_from_slice(&avail[n - keep..]);
        r.consume(n);
    }
}
