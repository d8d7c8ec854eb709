//! The suppression-file reader, reproducing Valgrind 3.19's
//! `load_one_suppressions_file` / `get_nbnc_line` /
//! `MC_(read_extra_suppression_info)` exactly (spec §2), except that it does
//! not stop at the first error: it reports it, skips to the end of the record
//! and goes on, so that every problem of a file is listed.

use std::fmt;

use super::kind::{ExtraLine, LeakKindSet, SuppKind, parse_fishy_line, tool_kind};

/// Valgrind's hard limit on stack depth (`VG_DEEPEST_BACKTRACE`).
pub const DEEPEST_BACKTRACE: usize = 500;

/// The longest line (from its first non-blank byte, before trimming) that
/// Valgrind's line reader accepts: its buffer doubles from 200 bytes and an
/// assertion fires when it would reach 102400 (>= 100000), i.e. on the
/// 51200th byte.
pub const MAX_LINE_LEN: usize = 51_199;

/// One location line of a suppression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Loc {
    /// `fun:PATTERN`
    Fun(String),
    /// `obj:PATTERN`
    Obj(String),
    /// `src:FILEPATTERN[:LINE]`; `line` is `None` when absent, 0 or not a number.
    Src { file: String, line: Option<u32> },
    /// `...`
    Ellipsis,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Fun(p) => write!(f, "fun:{p}"),
            Loc::Obj(p) => write!(f, "obj:{p}"),
            Loc::Src { file, line: None } => write!(f, "src:{file}"),
            Loc::Src {
                file,
                line: Some(l),
            } => write!(f, "src:{file}:{l}"),
            Loc::Ellipsis => f.write_str("..."),
        }
    }
}

/// One suppression record that Valgrind would load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suppression {
    /// The name line, as-is (names need not be unique).
    pub name: String,
    /// The file it was read from.
    pub file: String,
    /// Physical line number of its `{`.
    pub line: u32,
    /// The tool this record was loaded for (the `tool` argument of [`parse`]).
    pub tool: String,
    /// The raw tool list before the `:` (`Memcheck`, `Memcheck,Helgrind`).
    pub tools: String,
    /// The raw kind text after the `:` (`Value0`, `Leak`, ...).
    pub kind_name: String,
    /// The kind with its extra line.
    pub kind: SuppKind,
    /// Location lines, after truncation to `num_callers`.
    pub frames: Vec<Loc>,
    /// Location lines that were dropped because of `num_callers` (§2.3).
    pub dropped_lines: usize,
    /// Non-fatal remarks Valgrind would print or that matter to a linter.
    pub warnings: Vec<String>,
}

impl fmt::Display for Suppression {
    /// The record in suppression-file syntax (after truncation).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{{")?;
        writeln!(f, "   {}", self.name)?;
        writeln!(f, "   {}:{}", self.tools, self.kind_name)?;
        match &self.kind {
            SuppKind::Param(p) => writeln!(f, "   {p}")?,
            SuppKind::Leak(set) if !set.is_all() => writeln!(f, "   match-leak-kinds: {set}")?,
            SuppKind::FishyValue(Some(t)) => writeln!(f, "   {}({})", t.func, t.arg)?,
            _ => {}
        }
        for l in &self.frames {
            writeln!(f, "   {l}")?;
        }
        write!(f, "}}")
    }
}

/// What went wrong (the message texts are Valgrind's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    ExpectedOpenBrace,
    UnexpectedCloseBrace,
    EofExpectingToolKind,
    MalformedToolLine,
    UnknownCoreType,
    UnknownToolType,
    EofWhenSkipping,
    BadExtraInfo,
    EofInStackTrace,
    MissingStackTrace,
    TooManyCallers,
    BadLocation,
    OnlyEllipsis,
    /// Not a syntax error proper: Valgrind aborts with an assertion.
    LineTooLong,
}

impl fmt::Display for SyntaxErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SyntaxErrorKind::ExpectedOpenBrace => "expected '{' or end-of-file",
            SyntaxErrorKind::UnexpectedCloseBrace => "unexpected '}'",
            SyntaxErrorKind::EofExpectingToolKind => {
                "unexpected end-of-file (expecting tool:suppr)"
            }
            SyntaxErrorKind::MalformedToolLine => "malformed 'tool1,tool2,...:supp' line",
            SyntaxErrorKind::UnknownCoreType => "unknown core suppression type",
            SyntaxErrorKind::UnknownToolType => "unknown tool suppression type",
            SyntaxErrorKind::EofWhenSkipping => {
                "unexpected end-of-file (when skipping suppression)"
            }
            SyntaxErrorKind::BadExtraInfo => "bad or missing extra suppression info",
            SyntaxErrorKind::EofInStackTrace => "unexpected end-of-file (when reading stack trace)",
            SyntaxErrorKind::MissingStackTrace => "missing stack trace",
            SyntaxErrorKind::TooManyCallers => "too many callers in stack trace",
            SyntaxErrorKind::BadLocation => {
                "location should be \"...\", or should start with \"fun:\", \"obj:\", or \"src:\""
            }
            SyntaxErrorKind::OnlyEllipsis => {
                "suppression must contain at least one location line which is not \"...\""
            }
            SyntaxErrorKind::LineTooLong => {
                "line longer than 100000 chars, aborting (Valgrind's reader asserts on any \
                 line of 51200 or more bytes)"
            }
        })
    }
}

/// A problem that makes Valgrind reject the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub file: String,
    /// Physical line number (1-based) of the offending line; for an
    /// unexpected end of file, the last line.
    pub line: u32,
    pub kind: SyntaxErrorKind,
    /// `kind` as text (Valgrind's message).
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for SyntaxError {}

/// A record that was skipped because its tool list does not name the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    /// Line of its `{`.
    pub line: u32,
    /// The raw tool list.
    pub tools: String,
    pub kind_name: String,
}

/// Everything [`parse_detailed`] found in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedFile {
    pub suppressions: Vec<Suppression>,
    pub errors: Vec<SyntaxError>,
    /// Records for other tools (silently ignored by Valgrind).
    pub skipped: Vec<Skipped>,
}

/// C `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// One line as `get_nbnc_line` returns it.
#[derive(Debug, Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    /// Physical line number.
    no: u32,
    too_long: bool,
}

/// `get_nbnc_line`: skips blank lines, leading blanks and comment lines,
/// trims trailing blanks. A last line without `\n` is returned untrimmed and
/// is not checked for `#` (Valgrind returns early at end of file).
struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// Newlines consumed so far.
    newlines: u32,
    peeked: Option<Line<'a>>,
    /// Over-long comment lines seen since the last check.
    long_comment: Option<u32>,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        Reader {
            text,
            pos: 0,
            newlines: 0,
            peeked: None,
            long_comment: None,
        }
    }

    /// The number of the last physical line (for end-of-file errors).
    fn last_line(&self) -> u32 {
        let ends_nl = self.text.ends_with('\n');
        let n = self.text.bytes().filter(|&b| b == b'\n').count() as u32;
        if ends_nl || self.text.is_empty() {
            n.max(1)
        } else {
            n + 1
        }
    }

    fn unread(&mut self, l: Line<'a>) {
        self.peeked = Some(l);
    }

    fn next(&mut self) -> Option<Line<'a>> {
        if let Some(l) = self.peeked.take() {
            return Some(l);
        }
        let b = self.text.as_bytes();
        loop {
            while self.pos < b.len() && is_c_space(b[self.pos]) {
                if b[self.pos] == b'\n' {
                    self.newlines = self.newlines.saturating_add(1);
                }
                self.pos += 1;
            }
            if self.pos >= b.len() {
                return None;
            }
            let start = self.pos;
            let no = self.newlines.saturating_add(1);
            let (end, at_eof) = match b[start..].iter().position(|&c| c == b'\n') {
                Some(off) => (start + off, false),
                None => (b.len(), true),
            };
            self.pos = if at_eof { end } else { end + 1 };
            if !at_eof {
                self.newlines = self.newlines.saturating_add(1);
            }
            let too_long = end - start > MAX_LINE_LEN;
            let mut line = &b[start..end];
            if !at_eof {
                while line.len() > 1 && is_c_space(line[line.len() - 1]) {
                    line = &line[..line.len() - 1];
                }
            }
            // C strings end at the first NUL.
            if let Some(z) = line.iter().position(|&c| c == 0) {
                line = &line[..z];
            }
            if !at_eof && b[start] == b'#' {
                if too_long && self.long_comment.is_none() {
                    self.long_comment = Some(no);
                }
                continue;
            }
            // All cut points are ASCII bytes, so this never fails; be safe anyway.
            let text = std::str::from_utf8(line).unwrap_or("");
            return Some(Line { text, no, too_long });
        }
    }
}

fn is_location_line(s: &str) -> bool {
    s.starts_with("fun:") || s.starts_with("obj:") || s == "..."
}

/// `tool_name_present`: `strstr`, then comma boundaries of the first hit only.
pub fn tool_name_present(name: &str, names: &str) -> bool {
    match names.find(name) {
        Some(i) => {
            let before_ok = i == 0 || names.as_bytes()[i - 1] == b',';
            let after = names.as_bytes().get(i + name.len());
            before_ok && matches!(after, None | Some(b','))
        }
        None => false,
    }
}

/// `VG_(strtoll10)` then the cast to `UInt`.
fn strtoll10_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut n: i64 = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        n = n.wrapping_mul(10).wrapping_add(i64::from(b[i] - b'0'));
        i += 1;
    }
    if neg {
        n = n.wrapping_neg();
    }
    n as u32
}

/// `setLocationTy`.
fn parse_location(s: &str) -> Option<Loc> {
    if let Some(p) = s.strip_prefix("fun:") {
        Some(Loc::Fun(p.to_string()))
    } else if let Some(p) = s.strip_prefix("obj:") {
        Some(Loc::Obj(p.to_string()))
    } else if let Some(p) = s.strip_prefix("src:") {
        let (file, line) = match p.split_once(':') {
            Some((f, l)) => (f, strtoll10_u32(l)),
            None => (p, 0),
        };
        Some(Loc::Src {
            file: file.to_string(),
            line: (line != 0).then_some(line),
        })
    } else if s == "..." {
        Some(Loc::Ellipsis)
    } else {
        None
    }
}

/// How to resynchronise after an error.
enum Recover {
    /// The offending line was the record's `}`: nothing to skip.
    Closed,
    /// Skip to the next `}` (or stop before a `{`).
    SkipToClose,
    /// The offending line was a `{`: it probably starts the next record.
    Reopen,
    /// End of file reached.
    Eof,
}

struct Fail {
    kind: SyntaxErrorKind,
    line: u32,
    recover: Recover,
}

enum RecordOutcome {
    Loaded(Suppression),
    Skipped(Skipped),
}

struct Parser<'a> {
    rd: Reader<'a>,
    file: &'a str,
    tool: &'a str,
    num_callers: usize,
}

impl<'a> Parser<'a> {
    /// Next line; an over-long line (or comment before it) is an error.
    fn line(&mut self) -> Result<Option<Line<'a>>, Fail> {
        let l = self.rd.next();
        if let Some(no) = self.rd.long_comment.take() {
            if let Some(l) = l {
                self.rd.unread(l);
            }
            return Err(Fail {
                kind: SyntaxErrorKind::LineTooLong,
                line: no,
                recover: Recover::SkipToClose,
            });
        }
        match l {
            Some(l) if l.too_long => Err(Fail {
                kind: SyntaxErrorKind::LineTooLong,
                line: l.no,
                recover: recover_at(l.text),
            }),
            other => Ok(other),
        }
    }

    fn eof(&self, kind: SyntaxErrorKind) -> Fail {
        Fail {
            kind,
            line: self.rd.last_line(),
            recover: Recover::Eof,
        }
    }

    fn record(&mut self, open_line: u32) -> Result<RecordOutcome, Fail> {
        // Name line.
        let name_l = match self.line()? {
            None => return Err(self.eof(SyntaxErrorKind::UnexpectedCloseBrace)),
            Some(l) if l.text == "}" => return Err(fail(SyntaxErrorKind::UnexpectedCloseBrace, l)),
            Some(l) => l,
        };
        // Tool:kind line.
        let Some(tk) = self.line()? else {
            return Err(self.eof(SyntaxErrorKind::EofExpectingToolKind));
        };
        let Some((tools, kind_name)) = tk.text.split_once(':') else {
            return Err(fail(SyntaxErrorKind::MalformedToolLine, tk));
        };
        if tool_name_present("core", tools) {
            return Err(fail(SyntaxErrorKind::UnknownCoreType, tk));
        }
        // Valgrind 3.23+ core errors (descriptors, `--track-fds`): a
        // `CoreError:FdNotClosed` rule applies whatever the tool. Older
        // readers skip it (as another tool's), and their reports hold no
        // such records, so reading it here changes nothing for them.
        let core_fd = tool_name_present("CoreError", tools) && crate::kind::is_fd_kind(kind_name);
        if !core_fd && !tool_name_present(self.tool, tools) {
            loop {
                match self.line()? {
                    None => return Err(self.eof(SyntaxErrorKind::EofWhenSkipping)),
                    Some(l) if l.text == "}" => break,
                    Some(_) => {}
                }
            }
            return Ok(RecordOutcome::Skipped(Skipped {
                name: name_l.text.to_string(),
                line: open_line,
                tools: tools.to_string(),
                kind_name: kind_name.to_string(),
            }));
        }
        let core = core_fd.then(|| (SuppKind::Other(kind_name.to_string()), ExtraLine::None));
        let Some((mut kind, extra)) = core.or_else(|| tool_kind(self.tool, kind_name)) else {
            return Err(fail(SyntaxErrorKind::UnknownToolType, tk));
        };
        let mut warnings = Vec::new();
        if let Some(v) = kind.introduced_in().filter(|_| !kind.known_to_3_19()) {
            warnings.push(format!(
                "kind {kind_name} needs Valgrind {v} or later; Valgrind 3.19 rejects this file"
            ));
        }
        // Extra line (MC_(read_extra_suppression_info)).
        let mut pending: Option<Line<'a>> = None;
        match extra {
            ExtraLine::None => {}
            ExtraLine::Param => match self.line()? {
                None => return Err(self.eof(SyntaxErrorKind::BadExtraInfo)),
                Some(l) if is_location_line(l.text) => {
                    return Err(fail(SyntaxErrorKind::BadExtraInfo, l));
                }
                Some(l) => {
                    if l.text == "preadv(vector[...])" || l.text == "pwritev(vector[...])" {
                        warnings.push(format!(
                            "{} is an obsolete suppression line not supported in valgrind 3.15 \
                             or later",
                            l.text
                        ));
                    }
                    kind = SuppKind::Param(l.text.to_string());
                }
            },
            ExtraLine::Leak => match self.line()? {
                None => {}
                Some(l) if is_location_line(l.text) => pending = Some(l),
                Some(l) => match l.text.strip_prefix("match-leak-kinds:") {
                    Some(v) => {
                        let v = v.trim_start_matches(|c: char| c.is_ascii() && is_c_space(c as u8));
                        match LeakKindSet::parse(v) {
                            Ok(set) => kind = SuppKind::Leak(set),
                            Err(_) => return Err(fail(SyntaxErrorKind::BadExtraInfo, l)),
                        }
                    }
                    None => return Err(fail(SyntaxErrorKind::BadExtraInfo, l)),
                },
            },
            ExtraLine::FishyValue => match self.line()? {
                None => {}
                Some(l) if is_location_line(l.text) => {
                    warnings.push(
                        "FishyValue suppression without a FUNC(ARG) line: Valgrind crashes \
                         when it tests this suppression"
                            .to_string(),
                    );
                    pending = Some(l);
                }
                Some(l) => match parse_fishy_line(l.text) {
                    Some(t) => kind = SuppKind::FishyValue(Some(t)),
                    None => return Err(fail(SyntaxErrorKind::BadExtraInfo, l)),
                },
            },
        }
        // Location lines.
        let mut frames = Vec::new();
        let mut dropped_lines = 0usize;
        let close_line;
        loop {
            let l = match pending.take() {
                Some(l) => l,
                None => match self.line()? {
                    Some(l) => l,
                    None => return Err(self.eof(SyntaxErrorKind::EofInStackTrace)),
                },
            };
            if l.text == "}" {
                if frames.is_empty() {
                    return Err(fail(SyntaxErrorKind::MissingStackTrace, l));
                }
                close_line = l.no;
                break;
            }
            if frames.len() == DEEPEST_BACKTRACE {
                return Err(fail(SyntaxErrorKind::TooManyCallers, l));
            }
            if !frames.is_empty() && frames.len() >= self.num_callers {
                // Remaining lines are ignored up to '}' (or end of file).
                dropped_lines = 1;
                let mut last = l.no;
                loop {
                    match self.line()? {
                        None => break,
                        Some(x) if x.text == "}" => {
                            last = x.no;
                            break;
                        }
                        Some(x) => {
                            last = x.no;
                            dropped_lines += 1;
                        }
                    }
                }
                close_line = last;
                break;
            }
            match parse_location(l.text) {
                Some(loc) => frames.push(loc),
                None => return Err(fail(SyntaxErrorKind::BadLocation, l)),
            }
        }
        if frames.iter().all(|f| *f == Loc::Ellipsis) {
            return Err(Fail {
                kind: SyntaxErrorKind::OnlyEllipsis,
                line: close_line,
                recover: Recover::Closed,
            });
        }
        if dropped_lines > 0 {
            warnings.push(format!(
                "{dropped_lines} line(s) after the first {} location lines are ignored \
                 (--num-callers={})",
                frames.len(),
                self.num_callers
            ));
        }
        Ok(RecordOutcome::Loaded(Suppression {
            name: name_l.text.to_string(),
            file: self.file.to_string(),
            line: open_line,
            tool: if core_fd { "CoreError" } else { self.tool }.to_string(),
            tools: tools.to_string(),
            kind_name: kind_name.to_string(),
            kind,
            frames,
            dropped_lines,
            warnings,
        }))
    }

    /// Skips to the line after the next `}`; stops before a `{`.
    fn skip_to_close(&mut self) {
        while let Some(l) = self.rd.next() {
            if l.text == "}" {
                return;
            }
            if l.text == "{" {
                self.rd.unread(l);
                return;
            }
        }
    }
}

fn recover_at(text: &str) -> Recover {
    match text {
        "}" => Recover::Closed,
        "{" => Recover::Reopen,
        _ => Recover::SkipToClose,
    }
}

fn fail(kind: SyntaxErrorKind, l: Line<'_>) -> Fail {
    Fail {
        kind,
        line: l.no,
        recover: recover_at(l.text),
    }
}

/// Parses one suppression file as Valgrind `tool` (its details name, e.g.
/// `Memcheck`) run with `--num-callers=num_callers` would, listing every
/// error instead of stopping at the first. Records with errors are left out.
pub fn parse_detailed(file_name: &str, text: &str, tool: &str, num_callers: usize) -> ParsedFile {
    let mut p = Parser {
        rd: Reader::new(text),
        file: file_name,
        tool,
        num_callers: num_callers.clamp(1, DEEPEST_BACKTRACE),
    };
    let mut out = ParsedFile::default();
    let push_err = |out: &mut ParsedFile, kind: SyntaxErrorKind, line: u32| {
        out.errors.push(SyntaxError {
            file: file_name.to_string(),
            line,
            message: kind.to_string(),
            kind,
        })
    };
    loop {
        let l = match p.line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(f) => {
                push_err(&mut out, f.kind, f.line);
                continue;
            }
        };
        if l.text != "{" {
            push_err(&mut out, SyntaxErrorKind::ExpectedOpenBrace, l.no);
            // Resynchronise on the next '{'.
            while let Some(x) = p.rd.next() {
                if x.text == "{" {
                    p.rd.unread(x);
                    break;
                }
            }
            continue;
        }
        match p.record(l.no) {
            Ok(RecordOutcome::Loaded(s)) => out.suppressions.push(s),
            Ok(RecordOutcome::Skipped(s)) => out.skipped.push(s),
            Err(f) => {
                push_err(&mut out, f.kind, f.line);
                match f.recover {
                    Recover::Closed => {}
                    Recover::SkipToClose => p.skip_to_close(),
                    Recover::Reopen => p.rd.unread(Line {
                        text: "{",
                        no: f.line,
                        too_long: false,
                    }),
                    Recover::Eof => break,
                }
            }
        }
    }
    out
}

/// Parses one suppression file; see [`parse_detailed`].
pub fn parse(
    file_name: &str,
    text: &str,
    tool: &str,
    num_callers: usize,
) -> (Vec<Suppression>, Vec<SyntaxError>) {
    let p = parse_detailed(file_name, text, tool, num_callers);
    (p.suppressions, p.errors)
}

#[cfg(test)]
mod tests;
