//! The HTML renderer: one self-contained page (inline CSS from `html.css`, no
//! JavaScript, no external assets; a Content-Security-Policy forbids scripts
//! and fetches) with the verdict, the user's findings as cards (source lines
//! around each location, the stack with the user's frames highlighted and
//! library frames folded), the noise summarised by source and kind, the
//! suppressed records per rule, the process table and how the run was made.
//!
//! Everything that comes from the XML, the report or a source file goes
//! through [`esc`]; long lists are capped with a count so a report with tens
//! of thousands of noise records stays small. Source files are read only when
//! they look like source code (by extension) and are not huge.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use crate::kind::Kind;
use crate::model::ExitStatus;
use crate::report::{Finding, FrameOut, Growth, ProcessOut, Report};
use crate::util::{plural, shell_join, thousands};

const CSS: &str = include_str!("html.css");

/// User findings shown as cards; the rest are counted.
pub const MAX_USER_CARDS: usize = 200;
/// Rows of the "largest noise findings" list.
pub const MAX_NOISE_ROWS: usize = 100;
/// Rows of the suppression-rule table (and of the unused-rule list).
pub const MAX_RULE_ROWS: usize = 100;
/// Rule rows shown before the rest are folded.
const RULES_SHOWN: usize = 10;
/// Rows of the process table.
pub const MAX_PROCESS_ROWS: usize = 200;
/// Source files larger than this are not read for snippets.
const MAX_SOURCE_BYTES: u64 = 16 << 20;
/// Visible characters of a function name before it is cut (full name in a tooltip).
const MAX_NAME_CHARS: usize = 240;

/// File extensions read for source snippets (a report names arbitrary paths;
/// only source code is ever quoted into the page).
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "c++", "cp", "h", "hh", "hpp", "hxx", "h++", "inl", "ipp", "tcc",
    "tpp", "cu", "cuh", "m", "mm", "f", "f90", "f95", "for", "rs", "go", "zig", "s", "pyx", "pxd",
    "pxi", "py", "d", "swift",
];

/// Rendering options.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// Directories to look for sources in, before the report's own `src_roots`.
    pub src_roots: Vec<PathBuf>,
    /// Lines shown on each side of a finding's line.
    pub context: u32,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            src_roots: Vec::new(),
            context: 3,
        }
    }
}

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
fn esc_cut(s: &str, max: usize, class: &str) -> String {
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
fn human_bytes(n: u64) -> String {
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

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn exit_str(e: Option<&ExitStatus>) -> String {
    match e {
        Some(ExitStatus::Code(c)) => format!("exit code {c}"),
        Some(ExitStatus::Signal(s)) => format!("killed by {s}"),
        None => "unknown".into(),
    }
}

/// Lines of source files, read once each.
#[derive(Default)]
struct Sources {
    roots: Vec<PathBuf>,
    cache: HashMap<PathBuf, Option<Vec<String>>>,
}

/// What could be shown for a finding's location.
enum Snippet {
    /// The file was found: (local path, first line number, lines, changed since the report).
    Found(PathBuf, u32, Vec<String>, bool),
    /// Not readable here: only the line the report recorded, if any.
    Missing(String, Option<String>),
}

fn is_source_file(p: &Path) -> bool {
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    SOURCE_EXTENSIONS.contains(&ext.as_str())
        && std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() <= MAX_SOURCE_BYTES)
}

impl Sources {
    fn new(r: &Report, opts: &HtmlOptions) -> Self {
        let mut roots: Vec<PathBuf> = opts.src_roots.clone();
        roots.extend(r.src_roots.iter().map(PathBuf::from));
        roots.dedup();
        Sources {
            roots,
            cache: HashMap::new(),
        }
    }

    /// The local file for a recorded path: the path itself, else the
    /// longest trailing part of it under a source root.
    fn locate(&self, recorded: &str) -> Option<PathBuf> {
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

    fn lines(&mut self, p: &Path) -> Option<&Vec<String>> {
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

    fn snippet(&mut self, f: &Finding, context: u32) -> Option<Snippet> {
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

/// Renders the whole report as one HTML page.
pub fn render(r: &Report, opts: &HtmlOptions) -> String {
    let mut src = Sources::new(r, opts);
    let mut o = String::with_capacity(64 * 1024);
    let status = r.verdict.status.as_str();
    let (label, class) = status_label(status);
    let title = format!("leakgate {label}: {}", shell_join(&r.command));
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<meta name=\"color-scheme\" content=\"light dark\">\n\
<meta name=\"generator\" content=\"{} {}\">\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&r.tool.name),
        esc(&r.tool.version),
        esc(&cut_chars(&title, 200)),
    );
    header(&mut o, r, label, class);
    o.push_str("<main>\n");
    user_section(&mut o, r, &mut src, opts.context);
    noise_section(&mut o, r);
    suppressed_section(&mut o, r);
    process_section(&mut o, r);
    run_section(&mut o, r);
    o.push_str("</main>\n");
    let _ = write!(
        o,
        "<footer>Generated by {} {} · report schema {} · the JSON report (<code>--format json</code>) holds every finding.</footer>\n</body>\n</html>\n",
        esc(&r.tool.name),
        esc(&r.tool.version),
        r.schema_version
    );
    o
}

fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max).collect();
        c.push('…');
        c
    }
}

fn status_label(status: &str) -> (&'static str, &'static str) {
    match status {
        "pass" => ("PASS", "pass"),
        "fail" => ("FAIL", "fail"),
        "incomplete" => ("INCOMPLETE", "warn"),
        "target_failed" => ("TARGET FAILED", "warn"),
        _ => ("ERROR", "fail"),
    }
}

fn verdict_sentence(r: &Report) -> String {
    let mut by_kind: Vec<(String, u64)> = Vec::new();
    for f in r.findings.iter().filter(|f| f.is_user()) {
        match by_kind.iter_mut().find(|(k, _)| f.kind == k.as_str()) {
            Some((_, n)) => *n += 1,
            None => by_kind.push((f.kind.to_string(), 1)),
        }
    }
    if by_kind.is_empty() {
        return "No leaks or memory errors in your code".into();
    }
    let parts: Vec<String> = by_kind
        .iter()
        .map(|(k, n)| {
            let (one, many) = crate::kind::Kind::parse(k).noun();
            plural(*n, &one, &many)
        })
        .collect();
    let mut s = parts.join(", ");
    s.push_str(" in your code");
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => s,
    }
}

fn header(o: &mut String, r: &Report, label: &str, class: &str) {
    let target = if r.mode == "run" {
        format!(
            "<code>{}</code> <span class=\"muted\">({})</span>",
            esc(&cut_chars(&shell_join(&r.command), 400)),
            esc(&exit_str(r.target_exit.as_ref()))
        )
    } else {
        format!(
            "analysed <code>{}</code>",
            esc(&cut_chars(&shell_join(&r.command), 400))
        )
    };
    let _ = write!(
        o,
        "<header class=\"top\">\n<div class=\"brand\">{} <span class=\"muted\">{}</span></div>\n\
<section class=\"verdict {class}\" id=\"verdict\">\n<div class=\"status\">{label}</div>\n\
<div class=\"vtext\"><h1>{}</h1>\n<p class=\"target\">{target}</p>\n",
        esc(&r.tool.name),
        esc(&r.tool.version),
        esc(&verdict_sentence(r)),
    );
    if !r.verdict.reasons.is_empty() {
        o.push_str("<ul class=\"reasons\">\n");
        for reason in &r.verdict.reasons {
            let _ = writeln!(o, "<li>{}</li>", esc(reason));
        }
        o.push_str("</ul>\n");
    }
    let _ = writeln!(
        o,
        "<p class=\"exit muted\">exit code {}</p>\n</div>\n</section>",
        r.verdict.exit_code
    );
    // Key numbers.
    let u = &r.summary.user;
    let noise_records: u64 = r.summary.noise.by_source.values().sum();
    let noise_bytes: u64 = r.summary.noise.bytes_by_source.values().sum();
    let tiles = [
        (
            "Your findings",
            thousands(u.findings),
            format!(
                "{} · {}",
                plural(u.findings.saturating_sub(u.errors), "leak", "leaks"),
                plural(u.errors, "error", "errors")
            ),
            if u.findings > 0 { "bad" } else { "good" },
        ),
        (
            "Definitely lost",
            human_bytes(u.definitely_lost.bytes),
            format!(
                "{} · indirectly {}",
                plural(u.definitely_lost.blocks, "block", "blocks"),
                human_bytes(u.indirectly_lost.bytes)
            ),
            if u.definitely_lost.bytes > 0 {
                "bad"
            } else {
                "good"
            },
        ),
        (
            "Possibly lost",
            human_bytes(u.possibly_lost.bytes),
            format!(
                "in your code · {}",
                plural(u.possibly_lost.blocks, "block", "blocks")
            ),
            "plain",
        ),
        (
            "Noise (not yours)",
            thousands(noise_records),
            format!("records · {}", human_bytes(noise_bytes)),
            "plain",
        ),
        (
            "Suppressed",
            thousands(r.summary.suppressed.records),
            format!(
                "records · {}",
                plural(
                    r.summary.suppressed.by_suppression.len() as u64,
                    "rule",
                    "rules"
                )
            ),
            "plain",
        ),
        (
            "Records read",
            thousands(r.summary.records),
            plural(r.process_count(), "process", "processes"),
            "plain",
        ),
    ];
    o.push_str("<div class=\"tiles\">\n");
    for (name, value, sub, cls) in tiles {
        let _ = writeln!(
            o,
            "<div class=\"tile {cls}\"><div class=\"tname\">{}</div><div class=\"tval\">{}</div><div class=\"tsub\">{}</div></div>",
            esc(name),
            esc(&value),
            esc(&sub)
        );
    }
    o.push_str("</div>\n");
    let _ = writeln!(
        o,
        "<nav class=\"toc\"><a href=\"#findings\">Your findings</a><a href=\"#noise\">Noise</a><a href=\"#suppressed\">Suppressed</a><a href=\"#processes\">Processes</a><a href=\"#run\">How it was run</a></nav>\n</header>"
    );
}

fn amount(f: &Finding) -> String {
    if f.is_leak() {
        let bytes = f.bytes.unwrap_or(0);
        let mut s = format!(
            "{} in {}",
            plural(bytes, "byte", "bytes"),
            plural(f.blocks.unwrap_or(0), "block", "blocks")
        );
        if let Some(d) = f.direct_bytes
            && d != bytes
        {
            let _ = write!(
                s,
                " ({} direct, {} indirect)",
                thousands(d),
                thousands(bytes.saturating_sub(d))
            );
        }
        s
    } else {
        plural(f.count, "occurrence", "occurrences")
    }
}

fn kind_class(kind: &Kind) -> &'static str {
    match kind.as_str() {
        "Leak_DefinitelyLost" | "Leak_IndirectlyLost" => "k-leak",
        k if k.starts_with("Leak_") => "k-soft",
        "FatalSignal" => "k-crash",
        _ => "k-error",
    }
}

fn user_section(o: &mut String, r: &Report, src: &mut Sources, context: u32) {
    let user: Vec<&Finding> = r.findings.iter().filter(|f| f.is_user()).collect();
    let _ = writeln!(
        o,
        "<section id=\"findings\">\n<h2>Your findings <span class=\"count\">{}</span></h2>",
        thousands(user.len() as u64)
    );
    if user.is_empty() {
        o.push_str(
            "<p class=\"empty\">Nothing in your code: every record leakgate read was noise or suppressed.</p>\n",
        );
    }
    for (i, f) in user.iter().take(MAX_USER_CARDS).enumerate() {
        card(o, i + 1, f, src, context);
    }
    if user.len() > MAX_USER_CARDS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more findings in your code, not shown here (see the JSON report).</p>",
            thousands((user.len() - MAX_USER_CARDS) as u64)
        );
    }
    o.push_str("</section>\n");
}

fn card(o: &mut String, n: usize, f: &Finding, src: &mut Sources, context: u32) {
    let gated = f.is_gated();
    let _ = writeln!(
        o,
        "<article class=\"card {}\" id=\"finding-{n}\" data-kind=\"{}\" data-fingerprint=\"{}\">",
        kind_class(&f.kind),
        esc(f.kind.as_str()),
        esc(&f.fingerprint)
    );
    let _ = write!(
        o,
        "<div class=\"chead\"><span class=\"num\">{n}</span><span class=\"badge {}\">{}</span><span class=\"amount\">{}</span>",
        kind_class(&f.kind),
        esc(f.kind.as_str()),
        esc(&amount(f))
    );
    if !gated {
        o.push_str("<span class=\"tag\">reported, not gated</span>");
    }
    if f.records > 1 {
        let _ = write!(
            o,
            "<span class=\"tag\">{}</span>",
            esc(&plural(f.records, "record", "records"))
        );
    }
    o.push_str("</div>\n");
    if !f.is_leak() && !f.message.is_empty() {
        let _ = writeln!(o, "<p class=\"what\">{}</p>", esc(&f.message));
    }
    if let Some(loc) = &f.location {
        let place = match (&loc.file, loc.line) {
            (Some(file), Some(l)) => format!("{}:{l}", basename(file)),
            (Some(file), None) => basename(file).to_string(),
            _ => loc
                .object
                .as_deref()
                .map(basename)
                .unwrap_or("???")
                .to_string(),
        };
        let _ = writeln!(
            o,
            "<p class=\"where\">at <code class=\"loc\">{}</code> in <code>{}</code></p>",
            esc(&place),
            esc_cut(
                loc.function.as_deref().unwrap_or("???"),
                MAX_NAME_CHARS,
                "fn"
            )
        );
    }
    if !f.tests.is_empty() {
        let growth = match (f.growth.map(Growth::as_str), &f.per_call) {
            _ if !f.is_leak() => "first occurred in:".to_string(),
            (Some("per_call"), Some(pc)) => format!(
                "grows per call: +{} in +{} each time it ran",
                plural(pc.bytes, "byte", "bytes"),
                plural(pc.blocks, "block", "blocks")
            ),
            (Some("one_time"), _) => "one-time: grew once and not again".to_string(),
            _ => "growth unknown (--repeat 2 or more tells)".to_string(),
        };
        let _ = writeln!(
            o,
            "<p class=\"what\">{}</p>\n<ul class=\"tests\">",
            esc(&growth)
        );
        const TESTS: usize = 20;
        for t in f.tests.iter().take(TESTS) {
            let _ = writeln!(
                o,
                "<li><code>{}</code>: {}</li>",
                esc_cut(&t.test, MAX_NAME_CHARS, "test"),
                esc(&if f.is_leak() {
                    format!(
                        "+{} in {}",
                        plural(t.bytes, "byte", "bytes"),
                        plural(t.blocks, "block", "blocks")
                    )
                } else {
                    plural(t.errors, "error context", "error contexts")
                })
            );
        }
        if f.tests.len() > TESTS {
            let _ = writeln!(o, "<li>… {} more</li>", f.tests.len() - TESTS);
        }
        o.push_str("</ul>\n");
    }
    match src.snippet(f, context) {
        Some(Snippet::Found(path, first, lines, changed)) => {
            let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
            let _ = writeln!(
                o,
                "<figure class=\"snippet\"><figcaption>{}</figcaption>",
                esc(&path.display().to_string())
            );
            for (k, text) in lines.iter().enumerate() {
                let no = first + k as u32;
                let hl = if no == line { " hl" } else { "" };
                let _ = writeln!(
                    o,
                    "<div class=\"sl{hl}\" data-line=\"{no}\"><span class=\"ln\">{no}</span><span class=\"sc\">{}</span></div>",
                    esc(text)
                );
            }
            if changed {
                o.push_str("<p class=\"note\">This file has changed since the report was made: the highlighted line is not the one Valgrind saw.</p>\n");
            }
            o.push_str("</figure>\n");
        }
        Some(Snippet::Missing(path, recorded)) => {
            let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
            let _ = writeln!(
                o,
                "<figure class=\"snippet missing\"><figcaption>{}</figcaption>",
                esc(&path)
            );
            if let Some(text) = recorded {
                let _ = writeln!(
                    o,
                    "<div class=\"sl hl\" data-line=\"{line}\"><span class=\"ln\">{line}</span><span class=\"sc\">{}</span></div>",
                    esc(&text)
                );
            }
            o.push_str("<p class=\"note\">The source file is not readable here (use <code>--src-root</code>); only the line recorded in the report is shown.</p>\n</figure>\n");
        }
        None => {
            if f.location.as_ref().is_none_or(|l| l.line.is_none()) {
                o.push_str("<p class=\"note\">No source line: the object has no debug information for this location.</p>\n");
            }
        }
    }
    let stack_name = if f.is_leak() {
        "Allocation stack"
    } else {
        "Stack"
    };
    stack(o, stack_name, &f.stack);
    if let Some(origin) = &f.origin {
        stack(o, "Where the uninitialised value came from", origin);
    }
    let aux: Vec<&String> = f
        .aux
        .iter()
        .filter(|a| !a.starts_with("Uninitialised value was created") || f.origin.is_none())
        .collect();
    if !aux.is_empty() {
        o.push_str("<ul class=\"aux\">\n");
        for a in aux {
            let _ = writeln!(o, "<li>{}</li>", esc(a));
        }
        o.push_str("</ul>\n");
    }
    if f.pids.len() > 1 {
        let pids: Vec<String> = f.pids.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            o,
            "<p class=\"muted small\">in processes {}</p>",
            esc(&pids.join(", "))
        );
    }
    let _ = writeln!(
        o,
        "<p class=\"fp muted small\">fingerprint <code>{}</code></p>\n</article>",
        esc(&f.fingerprint)
    );
}

fn frame_html(i: usize, fr: &FrameOut) -> String {
    let mut s = format!(
        "<li class=\"frame{}\"><span class=\"fi\">#{i}</span> {}",
        if fr.user { " user" } else { "" },
        esc_cut(
            fr.function.as_deref().unwrap_or("???"),
            MAX_NAME_CHARS,
            "fn"
        )
    );
    match (&fr.file, fr.line) {
        (Some(file), Some(l)) => {
            let full = fr.path.as_deref().unwrap_or(file);
            let _ = write!(
                s,
                " <span class=\"at\" title=\"{}\">{}:{l}</span>",
                esc(full),
                esc(basename(file))
            );
        }
        _ => {
            if let Some(obj) = &fr.object {
                let _ = write!(
                    s,
                    " <span class=\"at\" title=\"{}\">in {}</span>",
                    esc(obj),
                    esc(basename(obj))
                );
            }
        }
    }
    if fr.user {
        s.push_str(" <span class=\"yours\">your code</span>");
    }
    s.push_str("</li>\n");
    s
}

/// The stack with the user's frames (and their neighbours) shown and the
/// runs of other frames folded into `<details>`.
fn stack(o: &mut String, title: &str, frames: &[FrameOut]) {
    if frames.is_empty() {
        return;
    }
    let n = frames.len();
    let keep = crate::render::shown_frames(frames);
    let _ = writeln!(
        o,
        "<div class=\"stack\"><div class=\"stitle\">{} <span class=\"muted\">({})</span></div>\n<ol class=\"frames\">",
        esc(title),
        esc(&plural(n as u64, "frame", "frames"))
    );
    let mut i = 0;
    while i < n {
        if keep[i] {
            o.push_str(&frame_html(i, &frames[i]));
            i += 1;
            continue;
        }
        let start = i;
        while i < n && !keep[i] {
            i += 1;
        }
        let run = &frames[start..i];
        if run.len() == 1 {
            o.push_str(&frame_html(start, &run[0]));
            continue;
        }
        let mut objs: Vec<&str> = Vec::new();
        for fr in run {
            let b = fr.object.as_deref().map(basename).unwrap_or("???");
            if !objs.contains(&b) {
                objs.push(b);
            }
        }
        let shown: Vec<&str> = objs.iter().take(3).copied().collect();
        let more = if objs.len() > 3 {
            format!(" +{}", objs.len() - 3)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<li class=\"fold\"><details><summary>{} in {}{more}</summary><ol class=\"frames\">",
            esc(&plural(run.len() as u64, "library frame", "library frames")),
            esc(&shown.join(", "))
        );
        for (k, fr) in run.iter().enumerate() {
            o.push_str(&frame_html(start + k, fr));
        }
        o.push_str("</ol></details></li>\n");
    }
    o.push_str("</ol></div>\n");
}

/// Noise: a table by source and kind, then the largest findings (capped).
fn noise_section(o: &mut String, r: &Report) {
    let noise: Vec<&Finding> = r.findings.iter().filter(|f| !f.is_user()).collect();
    let ns = &r.summary.noise;
    let total_records: u64 = ns.by_source.values().sum();
    let total_bytes: u64 = ns.bytes_by_source.values().sum();
    let _ = writeln!(
        o,
        "<section id=\"noise\">\n<h2>Noise <span class=\"count\">{}</span></h2>\n<p class=\"lead\">Records whose fault lies outside your code (the interpreter, CUDA, torch, the system, third-party libraries): {} in {}, {} leaked.</p>",
        thousands(total_records),
        plural(total_records, "record", "records"),
        plural(ns.findings, "finding", "findings"),
        esc(&human_bytes(total_bytes))
    );
    if total_records == 0 && noise.is_empty() {
        o.push_str("<p class=\"empty\">No noise.</p>\n</section>\n");
        return;
    }
    // (source, kind) -> (findings, records, bytes)
    let mut table: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    for f in &noise {
        let e = table
            .entry((
                f.source.clone().unwrap_or_else(|| "?".into()),
                f.kind.to_string(),
            ))
            .or_default();
        e.0 += 1;
        e.1 += f.records;
        e.2 += f.bytes.unwrap_or(0);
    }
    if table.is_empty() {
        // A report without the noise findings listed: the summary only.
        for (src, n) in &ns.by_source {
            let b = ns.bytes_by_source.get(src).copied().unwrap_or(0);
            table.insert((src.clone(), "(all kinds)".into()), (0, *n, b));
        }
    }
    let mut by_src: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for ((s, _), (_, rec, b)) in &table {
        let e = by_src.entry(s.as_str()).or_default();
        e.0 += rec;
        e.1 += b;
    }
    let mut sources: Vec<(&str, (u64, u64))> = by_src.into_iter().collect();
    sources.sort_by(|a, b| (b.1.0, b.1.1).cmp(&(a.1.0, a.1.1)).then(a.0.cmp(b.0)));
    let max_records = sources.iter().map(|s| s.1.0).max().unwrap_or(1).max(1);
    o.push_str("<table class=\"data noise\">\n<thead><tr><th>Source</th><th>Kind</th><th class=\"r\">Findings</th><th class=\"r\">Records</th><th class=\"r\">Bytes</th><th class=\"barcol\"></th></tr></thead>\n");
    for (s, (srec, sbytes)) in &sources {
        let mut rows: Vec<(&String, &(u64, u64, u64))> = table
            .iter()
            .filter(|((ts, _), _)| ts == s)
            .map(|((_, k), v)| (k, v))
            .collect();
        rows.sort_by(|a, b| (b.1.1, b.1.2).cmp(&(a.1.1, a.1.2)).then(a.0.cmp(b.0)));
        let pct = (*srec as f64 / max_records as f64 * 100.0).clamp(0.0, 100.0);
        let _ = writeln!(
            o,
            "<tbody class=\"src\"><tr class=\"total\"><th scope=\"rowgroup\" rowspan=\"{}\"><span class=\"srcname\">{}</span></th><td class=\"muted\">all kinds</td><td class=\"r\"></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"barcol\"><span class=\"bar\" style=\"width:{pct:.1}%\"></span></td></tr>",
            rows.len() + 1,
            esc(s),
            thousands(*srec),
            thousands(*sbytes),
        );
        for (k, (nf, rec, b)) in rows {
            let _ = writeln!(
                o,
                "<tr><td><span class=\"badge {}\">{}</span></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"barcol\"></td></tr>",
                kind_class(&Kind::parse(k)),
                esc(k),
                if *nf > 0 {
                    thousands(*nf)
                } else {
                    String::new()
                },
                thousands(*rec),
                thousands(*b)
            );
        }
        o.push_str("</tbody>\n");
    }
    o.push_str("</table>\n");
    if !noise.is_empty() {
        let mut top: Vec<&Finding> = noise.clone();
        top.sort_by(|a, b| {
            (b.bytes.unwrap_or(0), b.records)
                .cmp(&(a.bytes.unwrap_or(0), a.records))
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        let shown = top.len().min(MAX_NOISE_ROWS);
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>Largest noise findings ({} of {})</summary>\n<table class=\"data\">\n<thead><tr><th>Source</th><th>Kind</th><th class=\"r\">Records</th><th class=\"r\">Bytes</th><th>Where</th></tr></thead>\n<tbody>",
            thousands(shown as u64),
            thousands(top.len() as u64)
        );
        for f in top.iter().take(MAX_NOISE_ROWS) {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"wh\">{}</td></tr>",
                esc(f.source.as_deref().unwrap_or("?")),
                kind_class(&f.kind),
                esc(f.kind.as_str()),
                thousands(f.records),
                f.bytes.map(thousands).unwrap_or_default(),
                noise_where(f)
            );
        }
        o.push_str("</tbody></table>\n");
        if top.len() > MAX_NOISE_ROWS {
            let _ = writeln!(
                o,
                "<p class=\"more\">… and {} more noise findings (see the JSON report).</p>",
                thousands((top.len() - MAX_NOISE_ROWS) as u64)
            );
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

/// The frame a noise finding is blamed on: the first frame outside
/// Valgrind's preload objects with a function name.
fn noise_where(f: &Finding) -> String {
    let fr = f
        .stack
        .iter()
        .find(|fr| {
            fr.function.is_some()
                && !fr
                    .object
                    .as_deref()
                    .is_some_and(|o| basename(o).starts_with("vgpreload"))
        })
        .or_else(|| f.stack.first());
    let Some(fr) = fr else {
        return String::new();
    };
    let mut s = esc_cut(fr.function.as_deref().unwrap_or("???"), 120, "fn");
    match (&fr.file, fr.line) {
        (Some(file), Some(l)) => {
            let _ = write!(s, " <span class=\"at\">{}:{l}</span>", esc(basename(file)));
        }
        _ => {
            if let Some(obj) = &fr.object {
                let _ = write!(s, " <span class=\"at\">in {}</span>", esc(basename(obj)));
            }
        }
    }
    s
}

fn suppressed_section(o: &mut String, r: &Report) {
    let s = &r.summary.suppressed;
    let _ = writeln!(
        o,
        "<section id=\"suppressed\">\n<h2>Suppressed <span class=\"count\">{}</span></h2>",
        thousands(s.records)
    );
    if s.records == 0 {
        let _ = writeln!(
            o,
            "<p class=\"lead\">No record was suppressed ({} loaded).</p>",
            plural(s.loaded, "suppression", "suppressions")
        );
    } else {
        let _ = writeln!(
            o,
            "<p class=\"lead\">{} hidden by {} of the {} loaded (bundled and yours), applied after the run.</p>",
            plural(s.records, "record", "records"),
            plural(s.by_suppression.len() as u64, "rule", "rules"),
            plural(s.loaded, "suppression", "suppressions")
        );
    }
    if !s.by_suppression.is_empty() {
        rule_table(o, &s.by_suppression, "Rule", "Records");
    }
    if s.undecidable > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} may match a suppression but the XML cannot decide it; they are kept.</p>",
            esc(&plural(s.undecidable, "record", "records"))
        );
        if !s.undecidable_by_suppression.is_empty() {
            let _ = writeln!(
                o,
                "<details class=\"list\"><summary>Undecidable, by rule ({})</summary>",
                thousands(s.undecidable_by_suppression.len() as u64)
            );
            rule_table(o, &s.undecidable_by_suppression, "Rule", "Records");
            o.push_str("</details>\n");
        }
    }
    if let Some(unused) = &s.unused {
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>Suppressions that matched nothing ({})</summary><ul class=\"plain\">",
            thousands(unused.len() as u64)
        );
        for u in unused.iter().take(MAX_RULE_ROWS) {
            let _ = writeln!(o, "<li><code>{}</code></li>", esc(u));
        }
        o.push_str("</ul>\n");
        if unused.len() > MAX_RULE_ROWS {
            let _ = writeln!(
                o,
                "<p class=\"more\">… and {} more.</p>",
                thousands((unused.len() - MAX_RULE_ROWS) as u64)
            );
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

fn rule_table(o: &mut String, m: &BTreeMap<String, u64>, name: &str, count: &str) {
    let mut rows: Vec<(&String, &u64)> = m.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(
        o,
        "<table class=\"data rules\">\n<thead><tr><th>{}</th><th class=\"r\">{}</th></tr></thead>\n<tbody>",
        esc(name),
        esc(count)
    );
    let row = |o: &mut String, k: &str, v: u64| {
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td class=\"r\">{}</td></tr>",
            esc(k),
            thousands(v)
        );
    };
    for (k, v) in rows.iter().take(RULES_SHOWN) {
        row(o, k, **v);
    }
    o.push_str("</tbody></table>\n");
    if rows.len() > RULES_SHOWN {
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>{} more</summary>\n<table class=\"data rules\"><tbody>",
            plural((rows.len() - RULES_SHOWN) as u64, "rule", "rules")
        );
        for (k, v) in rows.iter().take(MAX_RULE_ROWS).skip(RULES_SHOWN) {
            row(o, k, **v);
        }
        o.push_str("</tbody></table>\n</details>\n");
    }
    if rows.len() > MAX_RULE_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more rules.</p>",
            thousands((rows.len() - MAX_RULE_ROWS) as u64)
        );
    }
}

fn process_section(o: &mut String, r: &Report) {
    let _ = writeln!(
        o,
        "<section id=\"processes\">\n<h2>Processes <span class=\"count\">{}</span></h2>",
        thousands(r.processes.len() as u64)
    );
    if r.processes.is_empty() {
        o.push_str("<p class=\"empty\">No Valgrind report was read.</p>\n</section>\n");
        return;
    }
    o.push_str("<table class=\"data procs\">\n<thead><tr><th class=\"r\">PID</th><th class=\"r\">Parent</th><th>Command</th><th>Exit</th><th>Report</th><th class=\"r\">Records</th><th>XML file</th></tr></thead>\n<tbody>\n");
    for p in r.processes.iter().take(MAX_PROCESS_ROWS) {
        process_row(o, p);
    }
    o.push_str("</tbody></table>\n");
    if r.processes.len() > MAX_PROCESS_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more processes.</p>",
            thousands((r.processes.len() - MAX_PROCESS_ROWS) as u64)
        );
    }
    let msgs: Vec<&ProcessOut> = r
        .processes
        .iter()
        .filter(|p| !p.client_messages.is_empty())
        .collect();
    if !msgs.is_empty() {
        o.push_str("<details class=\"list\"><summary>Client messages (VALGRIND_PRINTF)</summary><ul class=\"plain\">\n");
        let mut shown = 0;
        'outer: for p in msgs {
            for m in &p.client_messages {
                if shown == MAX_RULE_ROWS {
                    o.push_str("<li class=\"more\">… more in the JSON report</li>\n");
                    break 'outer;
                }
                let _ = writeln!(
                    o,
                    "<li><span class=\"muted\">pid {}</span> <code>{}</code></li>",
                    p.pid.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
                    esc(m.trim())
                );
                shown += 1;
            }
        }
        o.push_str("</ul></details>\n");
    }
    o.push_str("</section>\n");
}

fn process_row(o: &mut String, p: &ProcessOut) {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let state = if p.complete {
        "<span class=\"ok\">complete</span>".to_string()
    } else {
        format!(
            "<span class=\"warnc\">incomplete</span>{}",
            p.incomplete_reason
                .as_deref()
                .map(|r| format!("<br><span class=\"small\">{}</span>", esc(r)))
                .unwrap_or_default()
        )
    };
    let _ = writeln!(
        o,
        "<tr><td class=\"r\">{}</td><td class=\"r\">{}</td><td><code>{}</code></td><td>{}</td><td>{state}</td><td class=\"r\">{}</td><td class=\"path\">{}</td></tr>",
        opt(p.pid),
        opt(p.ppid),
        esc(&cut_chars(&shell_join(&p.command), 300)),
        esc(&p
            .exit
            .as_ref()
            .map(|e| exit_str(Some(e)))
            .unwrap_or_default()),
        thousands(p.records),
        esc(&p.xml)
    );
}

fn run_section(o: &mut String, r: &Report) {
    o.push_str("<section id=\"run\">\n<h2>How it was run</h2>\n<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: String| {
        let _ = writeln!(o, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    fact(
        "Mode",
        esc(if r.mode == "run" {
            "run: leakgate started the target under Valgrind"
        } else {
            "analyze: XML produced elsewhere"
        }),
    );
    fact(
        if r.mode == "run" {
            "Target"
        } else {
            "Analysed"
        },
        format!(
            "<code class=\"cmd\">{}</code>",
            esc(&shell_join(&r.command))
        ),
    );
    if r.mode == "run" {
        fact("Target exit", esc(&exit_str(r.target_exit.as_ref())));
    }
    if !r.environment.is_empty() {
        fact(
            "Environment",
            r.environment
                .iter()
                .map(|e| format!("<code>{}</code>", esc(e)))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    let vg = match (&r.valgrind.version, r.valgrind.protocol) {
        (Some(v), Some(p)) => format!("{v} (XML protocol {p})"),
        (Some(v), None) => v.clone(),
        (None, Some(p)) => format!("version unknown (XML protocol {p})"),
        (None, None) => "version unknown".into(),
    };
    fact("Valgrind", esc(&vg));
    if !r.valgrind_command.is_empty() {
        fact(
            "Valgrind command",
            format!(
                "<code class=\"cmd\">{}</code>",
                esc(&shell_join(&r.valgrind_command))
            ),
        );
    }
    // The options each process' XML records, once per distinct set.
    // (In run mode only when they differ from the command above.)
    let mut sets: Vec<&Vec<String>> = Vec::new();
    for p in &r.processes {
        if !r.valgrind_command.is_empty()
            && r.valgrind_command
                .windows(p.valgrind_args.len().max(1))
                .any(|w| w == p.valgrind_args.as_slice())
        {
            continue;
        }
        if !p.valgrind_args.is_empty() && !sets.contains(&&p.valgrind_args) {
            sets.push(&p.valgrind_args);
        }
    }
    for (i, s) in sets.iter().take(5).enumerate() {
        let name = if sets.len() == 1 {
            "Valgrind options (XML)".to_string()
        } else {
            format!("Valgrind options (XML, set {})", i + 1)
        };
        fact(
            &name,
            format!("<code class=\"cmd\">{}</code>", esc(&shell_join(s))),
        );
    }
    if !r.src_roots.is_empty() {
        fact(
            "Your sources",
            r.src_roots
                .iter()
                .map(|e| format!("<code>{}</code>", esc(e)))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    fact(
        "leakgate",
        esc(&format!("{} {}", r.tool.name, r.tool.version)),
    );
    let kinds: Vec<String> = r
        .summary
        .records_by_kind
        .iter()
        .map(|(k, n)| format!("{} {}", esc(k), thousands(*n)))
        .collect();
    if !kinds.is_empty() {
        fact("Records by kind", kinds.join(" · "));
    }
    o.push_str("</dl>\n");
    if !r.notes.is_empty() {
        o.push_str("<h3>Notes</h3>\n<ul class=\"notes\">\n");
        for n in r.notes.iter().take(MAX_RULE_ROWS) {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        if r.notes.len() > MAX_RULE_ROWS {
            let _ = writeln!(
                o,
                "<li class=\"more\">… and {} more notes.</li>",
                thousands((r.notes.len() - MAX_RULE_ROWS) as u64)
            );
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<script>a&b\"c'd</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;d&lt;/script&gt;"
        );
        assert_eq!(esc("a\u{1b}b"), "a\\u{1b}b");
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(1), "1 byte");
        assert_eq!(human_bytes(1023), "1,023 bytes");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(300 << 20), "300 MiB");
    }

    #[test]
    fn shell_quoting() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(shell_join(&v(&["python3", "t.py"])), "python3 t.py");
        assert_eq!(shell_join(&v(&["a b", "it's"])), "'a b' 'it'\\''s'");
    }
}
