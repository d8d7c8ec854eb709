//! The event loop over quick-xml that turns one Valgrind XML document into
//! [`Record`]s (delivered one at a time) and a [`FileSummary`]: the entry
//! points (whole documents and chunks, in memory or streamed), the loop
//! that dispatches start and end tags to the record builder, and the
//! completeness checks. Siblings: `source` (where events come from),
//! `build` (records from tags), `cache` (repeated frames), `raw`
//! (unescaped and skipped elements), `tags`, `text`, `summary`.

use std::io::BufRead;
use std::path::Path;

use quick_xml::events::Event;

use super::build::Ctx;
use super::cache::ElementCache;
use super::input::InputError;
use super::raw::{raw_text_kind, read_raw_until, skip_raw_until};
use super::source::{Buffered, EventSource, MAX_TOKEN, Sliced};
use super::summary::{FileSummary, Interner};
use super::tags::{Tag, tag_of, wants_text};
use super::text::{MAX_TEXT, push_lossy};
use crate::model::{ProcessInfo, Record};

/// Elements nested deeper than this end the document as malformed (Valgrind
/// nests 5 levels; the XML library keeps one entry per open element).
pub const MAX_DEPTH: usize = 1000;

/// After this many elements read past without the XML library seeing their
/// end tag (raw text, skipped blocks, cached frames; each leaves an entry on
/// the library's open-element stack), the library's state is renewed.
const RENEW_AFTER: u32 = 4096;

/// Parses one Valgrind XML document held in memory (a memory-mapped file):
/// see [`parse_stream`].
pub fn parse_slice(
    input: &[u8],
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    let mut sum = parse_events(
        &mut Sliced::new(input, 0),
        path,
        process_index,
        interner,
        sink,
        None,
    )?;
    sum.finalize();
    Ok(sum)
}

/// Parses a chunk of a document, which starts at byte `offset` of its file
/// (for error positions): the start of it (`header` None), or a piece
/// that starts at an `<error>` line inside `<valgrindoutput>`, whose header
/// (pid, options, ...) is `header`. The summary is not finalised: the caller
/// combines the chunks of one file.
pub fn parse_chunk(
    input: &[u8],
    offset: u64,
    header: Option<&ProcessInfo>,
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    parse_events(
        &mut Sliced::new(input, offset),
        path,
        process_index,
        interner,
        sink,
        header,
    )
}

/// Parses one Valgrind XML document from `input`, calling `sink` for each
/// record as soon as it is complete.
///
/// A document that is not Valgrind XML at all is an error; a document that
/// starts as Valgrind XML but is cut off or malformed later yields its
/// complete records and a summary marked incomplete.
pub fn parse_stream<R: BufRead>(
    input: R,
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    let mut sum = parse_events(
        &mut Buffered::new(input, 0),
        path,
        process_index,
        interner,
        sink,
        None,
    )?;
    sum.finalize();
    Ok(sum)
}

/// [`parse_chunk`] for a chunk read as a stream (one too large to hold in
/// memory: it has no `<error>` line to cut it at).
pub fn parse_chunk_stream<R: BufRead>(
    input: R,
    offset: u64,
    header: Option<&ProcessInfo>,
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
) -> Result<FileSummary, InputError> {
    parse_events(
        &mut Buffered::new(input, offset),
        path,
        process_index,
        interner,
        sink,
        header,
    )
}

fn parse_events<'a, S: EventSource<'a>>(
    reader: &mut S,
    path: &Path,
    process_index: usize,
    interner: &mut Interner,
    sink: &mut dyn FnMut(Record, &ProcessInfo),
    resume: Option<&ProcessInfo>,
) -> Result<FileSummary, InputError> {
    let mut ctx = Ctx {
        interner,
        sum: FileSummary::default(),
        builder: None,
        pair_count: None,
        pair_id: None,
        pair_name: None,
        saw_root: false,
        saw_finished: false,
        closed: false,
        records: 0,
        done: None,
    };
    ctx.sum.process.file = path.display().to_string();
    let mut stack: Vec<Tag> = Vec::with_capacity(16);
    if let Some(h) = resume {
        ctx.sum.process = h.clone();
        ctx.sum.process.client_messages.clear();
        ctx.sum.process.records = 0;
        ctx.saw_root = true;
        stack.push(Tag::Root);
    }
    let mut text = String::new();
    let mut buf = Vec::with_capacity(4096);
    let not_valgrind = |reason: String| InputError::NotValgrind {
        path: path.to_path_buf(),
        reason,
    };
    let mut incomplete: Option<String> = None;
    let mut want_text = false;
    let mut cache = ElementCache::new();
    // Elements the XML library saw start but will not see end (see RENEW_AFTER).
    let mut unclosed = 0u32;
    loop {
        let ev = match reader.next_event(&mut buf) {
            Ok(ev) => ev,
            Err(e) => {
                if let Some(at) = reader.token_too_long() {
                    let why = format!(
                        "malformed XML at byte {at}: a text or tag longer than {} MiB",
                        MAX_TOKEN >> 20
                    );
                    if !ctx.saw_root {
                        return Err(not_valgrind(why));
                    }
                    incomplete = Some(why);
                    break;
                }
                let pos = reader.error_position();
                if !ctx.saw_root {
                    return Err(not_valgrind(format!("malformed XML at byte {pos}: {e}")));
                }
                if let quick_xml::Error::Io(io) = &e {
                    return Err(InputError::Io {
                        path: path.to_path_buf(),
                        err: std::io::Error::new(io.kind(), io.to_string()),
                    });
                }
                incomplete = Some(format!("malformed XML at byte {pos}: {e}"));
                break;
            }
        };
        if cache.pending.is_some()
            && !matches!(
                ev,
                Event::Start(_) | Event::End(_) | Event::Text(_) | Event::GeneralRef(_)
            )
        {
            cache.pending = None;
        }
        match ev {
            Event::Start(s) => {
                let name = s.name();
                let name = name.as_ref();
                if !ctx.saw_root {
                    if name != b"valgrindoutput" {
                        return Err(not_valgrind(format!(
                            "root element is <{}>, expected <valgrindoutput>",
                            String::from_utf8_lossy(name)
                        )));
                    }
                    ctx.saw_root = true;
                }
                let raw = raw_text_kind(name);
                let name_is_rawtext = name == b"rawtext";
                let tag = tag_of(name);
                drop(s);
                cache.on_start(tag, raw.is_none());
                // Only a plain `<frame>`/`<sframe>` start tag is looked up:
                // an empty element (`<frame/>`) has no body to skip.
                let plain = match tag {
                    Tag::Frame => reader.read_ends_with(b"<frame>"),
                    Tag::Sframe => reader.read_ends_with(b"<sframe>"),
                    _ => false,
                };
                if plain
                    && let Some(rest) = reader.rest()
                    && let Some(n) = cache.lookup(tag, stack.last().copied(), rest, &mut ctx)
                {
                    reader.raw().consume(n);
                    renew_if_due(reader, &mut unclosed);
                    continue;
                }
                // Skipped unread: the duplicate of the record's generated
                // suppression that Valgrind prints after each `</error>`
                // (§1.5.7), and the suppression's `<rawtext>` (its frames
                // are read from `<sframe>`). A fifth to a third of a report.
                let skip: Option<&[u8]> = match (tag, stack.last()) {
                    (Tag::Suppression, Some(Tag::Root)) => Some(b"suppression"),
                    (Tag::Other, Some(Tag::Suppression)) if name_is_rawtext => Some(b"rawtext"),
                    _ => None,
                };
                if let Some(el) = skip {
                    let found = skip_raw_until(reader.raw(), el).map_err(|e| InputError::Io {
                        path: path.to_path_buf(),
                        err: e,
                    })?;
                    if !found {
                        incomplete = Some(format!(
                            "file ends inside <{}>",
                            String::from_utf8_lossy(el)
                        ));
                        break;
                    }
                    renew_if_due(reader, &mut unclosed);
                    continue;
                }
                if let Some(raw) = raw {
                    let text = read_raw_until(reader.raw(), raw.as_bytes()).map_err(|e| {
                        InputError::Io {
                            path: path.to_path_buf(),
                            err: e,
                        }
                    })?;
                    match text {
                        Some(t) => {
                            if raw == "threadname"
                                && let Some(b) = ctx.builder.as_mut()
                            {
                                b.rec.thread_name = Some(t);
                            }
                        }
                        None => {
                            incomplete = Some(format!("file ends inside <{raw}>"));
                            break;
                        }
                    }
                    renew_if_due(reader, &mut unclosed);
                    continue;
                }
                ctx.start(tag, &stack);
                stack.push(tag);
                if stack.len() > MAX_DEPTH {
                    incomplete = Some(format!(
                        "malformed XML at byte {}: elements nested deeper than {MAX_DEPTH} levels",
                        reader.error_position()
                    ));
                    break;
                }
                text.clear();
                want_text = wants_text(tag);
            }
            Event::End(e) => {
                if closes_unclosed_still_reachable(&stack, e.name().as_ref()) {
                    // Valgrind 3.26.0's defect: close the element it left open.
                    stack.pop();
                }
                let Some(tag) = stack.pop() else { continue };
                ctx.end(tag, &stack, &text);
                if cache.pending.is_some() {
                    cache.on_end(tag, reader.rest().map(<[u8]>::len), &ctx);
                }
                text.clear();
                want_text = false;
                if let Some(mut rec) = ctx.done.take() {
                    rec.process = process_index;
                    rec.pid = ctx.sum.process.pid;
                    sink(rec, &ctx.sum.process);
                }
                if tag == Tag::Root && stack.is_empty() {
                    ctx.closed = true;
                }
            }
            Event::Text(t) => {
                if !ctx.saw_root {
                    if t.iter().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    return Err(not_valgrind("text before the root element".into()));
                }
                if want_text {
                    push_lossy(&mut text, &t);
                }
            }
            Event::CData(t) if want_text => push_lossy(&mut text, &t),
            Event::GeneralRef(_) if !want_text || text.len() >= MAX_TEXT => {}
            Event::GeneralRef(r) => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    text.push(c);
                } else {
                    match &r[..] {
                        b"amp" => text.push('&'),
                        b"lt" => text.push('<'),
                        b"gt" => text.push('>'),
                        b"quot" => text.push('"'),
                        b"apos" => text.push('\''),
                        other => {
                            text.push('&');
                            push_lossy(&mut text, other);
                            text.push(';');
                        }
                    }
                }
            }
            Event::DocType(_) => {
                return Err(not_valgrind(
                    "document type declarations are not part of Valgrind XML".into(),
                ));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if resume.is_none() && !ctx.saw_root {
        return Err(not_valgrind(if ctx.records == 0 {
            "no <valgrindoutput> element (empty or not XML)".into()
        } else {
            "no <valgrindoutput> element".into()
        }));
    }
    if resume.is_none() && ctx.sum.process.protocol.is_none() && ctx.sum.process.pid.is_none() {
        return Err(not_valgrind(
            "<valgrindoutput> without <protocolversion> or <pid>".into(),
        ));
    }
    ctx.sum.partial_record = ctx.builder.is_some();
    ctx.sum.process.records = ctx.records;
    ctx.sum.closed = ctx.closed;
    ctx.sum.saw_finished = ctx.saw_finished;
    ctx.sum.problem = incomplete;
    Ok(ctx.sum)
}

/// Valgrind 3.26.0 (upstream bug 514613, fixed in 3.27.0) leaves
/// `<still_reachable>` inside the protocol-6 `<leak_summary>` unclosed when
/// the still-reachable byte count is 0: `</leak_summary>` then arrives with
/// `<still_reachable>` still open. Closing both there reads the document as
/// Valgrind meant it (the end tags after it then match, `</valgrindoutput>`
/// closes the root, and records after a checkpoint's summary stay top-level),
/// while a file really cut off anywhere still lacks its closing root tag.
fn closes_unclosed_still_reachable(stack: &[Tag], end_name: &[u8]) -> bool {
    matches!(stack, [.., Tag::LeakSummary, Tag::StillReachable]) && end_name == b"leak_summary"
}

/// Counts an element the XML library saw start but will not see end (it
/// was read past), and starts the library afresh after [`RENEW_AFTER`] of
/// them, so its stack of open elements stays small. Called right after such
/// an element, where no event of the library is pending.
fn renew_if_due<'a, S: EventSource<'a>>(reader: &mut S, unclosed: &mut u32) {
    *unclosed += 1;
    if *unclosed >= RENEW_AFTER {
        reader.renew();
        *unclosed = 0;
    }
}

#[cfg(test)]
mod tests;
