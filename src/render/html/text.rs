//! Small text helpers of the HTML page: escaping, cutting long names,
//! human byte counts, a finding's amount and its kind's colour class.

use std::fmt::Write as _;

use crate::kind::Kind;
use crate::model::ExitStatus;
use crate::report::Finding;
use crate::util::plural;

/// Visible characters of a function name before it is cut (full name in a tooltip).
pub(super) const MAX_NAME_CHARS: usize = 240;

/// Escapes text for HTML element content and (double- or single-quoted)
/// attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters other than tab/newline are shown, not passed on.
            c if c.is_control() && c != '\t' && c != '\n' => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// Escaped text, cut to `max` characters (with `…`); the full text goes into a
/// `title` tooltip when it was cut.
pub(super) fn esc_cut(s: &str, max: usize, class: &str) -> String {
    if s.chars().count() <= max {
        format!("<span class=\"{class}\">{}</span>", esc(s))
    } else {
        let cut: String = s.chars().take(max).collect();
        format!(
            "<span class=\"{class}\" title=\"{}\">{}…</span>",
            esc(s),
            esc(&cut)
        )
    }
}

/// `1536` → `1.5 KiB`.
pub(super) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return plural(n, "byte", "bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

pub(super) fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

pub(super) fn exit_str(e: Option<&ExitStatus>) -> String {
    match e {
        Some(ExitStatus::Code(c)) => format!("exit code {c}"),
        Some(ExitStatus::Signal(s)) => format!("killed by {s}"),
        None => "unknown".into(),
    }
}

pub(super) fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max).collect();
        c.push('…');
        c
    }
}

pub(super) fn kind_class(kind: &Kind) -> &'static str {
    match kind {
        k if k.is_lost() => "k-leak",
        k if k.is_leak() => "k-soft",
        Kind::FatalSignal => "k-crash",
        _ => "k-error",
    }
}

pub(super) fn amount(f: &Finding) -> String {
    if f.is_leak() {
        let bytes = f.bytes.unwrap_or(0);
        format!(
            "{} in {}",
            crate::render::bytes_split(bytes, f.direct_bytes.unwrap_or(bytes)),
            plural(f.blocks.unwrap_or(0), "block", "blocks")
        )
    } else {
        plural(f.count, "occurrence", "occurrences")
    }
}
