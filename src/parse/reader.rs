//! The event-driven state machine over quick-xml that turns one Valgrind XML
//! document into [`Record`]s (delivered one at a time) and a [`FileSummary`].

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::BufRead;
use std::path::Path;

use quick_xml::Reader;
use quick_xml::events::Event;

use super::InputError;
use crate::model::{AuxInfo, Frame, GenSuppression, ProcessInfo, Record, Sym};

/// Shares one allocation between equal strings (object paths, function names,
/// file names repeat thousands of times in a large report).
#[derive(Default)]
pub struct Interner {
    set: HashSet<Sym>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(v) = self.set.get(s) {
            return v.clone();
        }
        let v: Sym = Sym::from(s);
        self.set.insert(v.clone());
        v
    }
}

/// What a whole file contributed besides its records.
#[derive(Debug, Default)]
pub struct FileSummary {
    pub process: ProcessInfo,
    /// `<errorcounts>`: (unique id, occurrences).
    pub error_counts: Vec<(u64, u64)>,
    /// `<suppcounts>`: (suppression name, count) as Valgrind reported them.
    pub supp_counts: Vec<(String, u64)>,
    /// Saw `</valgrindoutput>`.
    pub closed: bool,
    /// Saw the FINISHED status.
    pub saw_finished: bool,
    /// Why reading stopped early (malformed XML, end of input inside an element).
    pub problem: Option<String>,
    /// The input ended inside a record (which was not delivered).
    pub partial_record: bool,
}

impl FileSummary {
    /// Decides `process.complete` and its reason from what was seen.
    pub fn finalize(&mut self) {
        let p = &mut self.process;
        p.complete = self.problem.is_none() && self.closed && self.saw_finished;
        p.incomplete_reason = None;
        if !p.complete {
            let mut reason = self.problem.as_ref().map_or_else(|| {
                if !self.closed {
                    "file is truncated (no closing </valgrindoutput>; Valgrind was killed or the process exec'd)".into()
                } else {
                    "Valgrind stopped before the client finished (no FINISHED status; see Valgrind's log)".into()
                }
            }, |problem| {
                // Counted here: a chunk only knows its own records.
                format!("{problem}; {} records before it were read", p.records)
            });
            if self.partial_record {
                reason.push_str("; the last, partial record was not read");
            }
            p.incomplete_reason = Some(reason);
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tag {
    Root,
    ProtocolVersion,
    ProtocolTool,
    Preamble,
    Line,
    Pid,
    Ppid,
    Args,
    Vargv,
    Argv,
    Exe,
    Arg,
    Status,
    State,
    Error,
    Unique,
    Tid,
    Kind,
    Fd,
    FdPath,
    What,
    Xwhat,
    Text,
    LeakedBytes,
    LeakedBlocks,
    Stack,
    Frame,
    Ip,
    Obj,
    Fn,
    Dir,
    File,
    AuxWhat,
    XauxWhat,
    Suppression,
    Skind,
    Skaux,
    Sframe,
    Fun,
    ClientMsg,
    FatalSignal,
    Signame,
    ErrorCounts,
    SuppCounts,
    Pair,
    Count,
    Name,
    /// Protocol 6 `<leak_summary>` and its `<still_reachable>` (see
    /// [`closes_unclosed_still_reachable`]).
    LeakSummary,
    StillReachable,
    Other,
}

fn tag_of(name: &[u8]) -> Tag {
    match name {
        b"valgrindoutput" => Tag::Root,
        b"protocolversion" => Tag::ProtocolVersion,
        b"protocoltool" => Tag::ProtocolTool,
        b"preamble" => Tag::Preamble,
        b"line" => Tag::Line,
        b"pid" => Tag::Pid,
        b"ppid" => Tag::Ppid,
        b"args" => Tag::Args,
        b"vargv" => Tag::Vargv,
        b"argv" => Tag::Argv,
        b"exe" => Tag::Exe,
        b"arg" => Tag::Arg,
        b"status" => Tag::Status,
        b"state" => Tag::State,
        b"error" => Tag::Error,
        b"unique" => Tag::Unique,
        b"tid" => Tag::Tid,
        b"kind" => Tag::Kind,
        b"fd" => Tag::Fd,
        b"path" => Tag::FdPath,
        b"what" => Tag::What,
        b"xwhat" => Tag::Xwhat,
        b"text" => Tag::Text,
        b"leakedbytes" => Tag::LeakedBytes,
        b"leakedblocks" => Tag::LeakedBlocks,
        b"stack" => Tag::Stack,
        b"frame" => Tag::Frame,
        b"ip" => Tag::Ip,
        b"obj" => Tag::Obj,
        b"fn" => Tag::Fn,
        b"dir" => Tag::Dir,
        b"file" => Tag::File,
        b"auxwhat" => Tag::AuxWhat,
        b"xauxwhat" => Tag::XauxWhat,
        b"suppression" => Tag::Suppression,
        b"skind" => Tag::Skind,
        b"skaux" => Tag::Skaux,
        b"sframe" => Tag::Sframe,
        b"fun" => Tag::Fun,
        b"clientmsg" => Tag::ClientMsg,
        b"fatal_signal" => Tag::FatalSignal,
        b"signame" => Tag::Signame,
        b"errorcounts" => Tag::ErrorCounts,
        b"suppcounts" => Tag::SuppCounts,
        b"pair" => Tag::Pair,
        b"count" => Tag::Count,
        b"name" => Tag::Name,
        b"leak_summary" => Tag::LeakSummary,
        b"still_reachable" => Tag::StillReachable,
        _ => Tag::Other,
    }
}

/// Leaf elements whose text the parser uses; the text of all others (the
/// `<rawtext>` of generated suppressions, `<sname>`, ...) is not collected.
fn wants_text(tag: Tag) -> bool {
    !matches!(
        tag,
        Tag::Root
            | Tag::Preamble
            | Tag::Args
            | Tag::Vargv
            | Tag::Argv
            | Tag::Status
            | Tag::Error
            | Tag::Xwhat
            | Tag::Stack
            | Tag::Frame
            | Tag::XauxWhat
            | Tag::Suppression
            | Tag::Sframe
            | Tag::ClientMsg
            | Tag::FatalSignal
            | Tag::ErrorCounts
            | Tag::SuppCounts
            | Tag::Pair
            | Tag::LeakSummary
            | Tag::StillReachable
            | Tag::Other
    )
}

/// One element's text is bounded: a hostile report (a 1 GB line) must not
/// make memory grow with it. Real texts are far below this; longer ones are
/// cut.
const MAX_TEXT: usize = 1 << 20;

/// The longest single XML token (a text run, a tag, a comment) read: a
/// stream reader buffers one token, so a longer one (a 1 GB line of text)
/// ends the document as malformed rather than filling memory. Valgrind's
/// tokens are a few KB at most.
pub const MAX_TOKEN: usize = 64 << 20;

/// Elements nested deeper than this end the document as malformed (Valgrind
/// nests 5 levels; the XML library keeps one entry per open element).
pub const MAX_DEPTH: usize = 1000;

/// After this many elements read past without the XML library seeing their
/// end tag (raw text, skipped blocks, cached frames; each leaves an entry on
/// the library's open-element stack), the library's state is renewed.
const RENEW_AFTER: u32 = 4096;

/// Appends bytes as UTF-8, replacing invalid sequences (Valgrind writes names
/// byte for byte); the common, valid case takes the fast path.
fn push_lossy(out: &mut String, bytes: &[u8]) {
    if out.len() >= MAX_TEXT {
        return;
    }
    let bytes = &bytes[..bytes.len().min(MAX_TEXT - out.len())];
    match std::str::from_utf8(bytes) {
        Ok(s) => out.push_str(s),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Elements whose text Valgrind writes without escaping: read them raw.
fn raw_text_kind(name: &[u8]) -> Option<&'static str> {
    match name {
        b"threadname" => Some("threadname"),
        b"usercomment" => Some("usercomment"),
        _ => None,
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
fn parse_u32(s: &str) -> Option<u32> {
    parse_num(s).and_then(|v| u32::try_from(v).ok())
}

#[derive(Default)]
struct Builder {
    rec: Record,
    in_fatal: bool,
    /// Whether the primary stack has been read.
    primary_done: bool,
    supp: Option<GenSuppression>,
    frame: Frame,
    /// Index into `rec.aux` that the next `<stack>` belongs to.
    pending_aux: Option<usize>,
    cur_stack: Vec<Frame>,
}

struct Ctx<'a> {
    interner: &'a mut Interner,
    sum: FileSummary,
    builder: Option<Builder>,
    pair_count: Option<u64>,
    pair_id: Option<u64>,
    pair_name: Option<String>,
    saw_root: bool,
    saw_finished: bool,
    closed: bool,
    records: u64,
    /// A record finished by the last end tag, waiting for the sink.
    done: Option<Record>,
}

/// Where quick-xml events come from: a buffered stream (copies into a
/// buffer) or a byte slice, e.g. a memory-mapped file (borrows, no copy).
trait EventSource<'a> {
    fn next_event<'s>(&'s mut self, buf: &'s mut Vec<u8>) -> quick_xml::Result<Event<'s>>;
    /// The unread input, when the whole input is in memory (for the
    /// element cache); `None` for streams.
    fn rest(&self) -> Option<&'a [u8]> {
        None
    }
    /// Whether the input read so far ends with `tag` (the last event was
    /// exactly that start tag: not `<frame/>`, no attributes). Only known
    /// when the whole input is in memory.
    fn read_ends_with(&self, _tag: &[u8]) -> bool {
        false
    }
    /// The bytes after the last event, for elements read raw.
    fn raw(&mut self) -> &mut dyn BufRead;
    fn error_position(&self) -> u64;
    /// Where a token longer than [`MAX_TOKEN`] started, when that is why
    /// the last `next_event` failed.
    fn token_too_long(&self) -> Option<u64>;
    /// Starts the XML library afresh at the current position (between
    /// events): drops its stack of open elements.
    fn renew(&mut self);
}

/// Counts the bytes consumed from a stream, by quick-xml or by the raw
/// readers, for error positions.
struct Counting<R> {
    inner: R,
    consumed: u64,
    /// `consumed` when the current event started.
    mark: u64,
    /// An event is being read (raw reads between events are not limited).
    armed: bool,
    /// The current event grew past [`MAX_TOKEN`]: where it started.
    too_long_at: Option<u64>,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        // quick-xml copies an event's bytes into one buffer: stop it there.
        if self.armed && self.consumed - self.mark > MAX_TOKEN as u64 {
            self.too_long_at = Some(self.mark);
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "XML token too long",
            ));
        }
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.consumed += n as u64;
        self.inner.consume(n);
    }
}

/// A stream; `offset` is where it starts in its file. (The reader is only
/// taken out while it is renewed.)
struct Buffered<R: BufRead> {
    reader: Option<Reader<Counting<R>>>,
    offset: u64,
}

impl<R: BufRead> Buffered<R> {
    fn new(input: R, offset: u64) -> Self {
        let mut reader = Reader::from_reader(Counting {
            inner: input,
            consumed: 0,
            mark: 0,
            armed: false,
            too_long_at: None,
        });
        configure(&mut reader);
        Buffered {
            reader: Some(reader),
            offset,
        }
    }

    fn reader(&self) -> &Reader<Counting<R>> {
        self.reader.as_ref().expect("reader present between events")
    }

    fn reader_mut(&mut self) -> &mut Reader<Counting<R>> {
        self.reader.as_mut().expect("reader present between events")
    }
}

impl<R: BufRead> EventSource<'_> for Buffered<R> {
    fn next_event<'s>(&'s mut self, buf: &'s mut Vec<u8>) -> quick_xml::Result<Event<'s>> {
        buf.clear();
        let reader = self.reader.as_mut().expect("reader present between events");
        let c = reader.get_mut();
        c.mark = c.consumed;
        c.armed = true;
        let ev = reader.read_event_into(buf);
        reader.get_mut().armed = false;
        ev
    }
    fn raw(&mut self) -> &mut dyn BufRead {
        self.reader_mut().get_mut()
    }
    fn error_position(&self) -> u64 {
        // quick-xml's own counters miss what the raw readers consumed.
        let r = self.reader();
        let behind = r.buffer_position() - r.error_position();
        self.offset + r.get_ref().consumed.saturating_sub(behind)
    }
    fn token_too_long(&self) -> Option<u64> {
        self.reader().get_ref().too_long_at.map(|p| self.offset + p)
    }
    fn renew(&mut self) {
        if let Some(r) = self.reader.take() {
            let mut fresh = Reader::from_reader(r.into_inner());
            configure(&mut fresh);
            self.reader = Some(fresh);
        }
    }
}

/// A document in memory; `offset` is where the slice starts in its file.
struct Sliced<'a> {
    reader: Reader<&'a [u8]>,
    input: &'a [u8],
    offset: u64,
    too_long_at: Option<u64>,
}

impl<'a> Sliced<'a> {
    fn new(input: &'a [u8], offset: u64) -> Self {
        let mut reader = Reader::from_reader(input);
        configure(&mut reader);
        Sliced {
            reader,
            input,
            offset,
            too_long_at: None,
        }
    }

    /// Bytes of the slice read so far.
    fn consumed(&self) -> usize {
        self.input.len() - self.reader.get_ref().len()
    }
}

impl<'a> EventSource<'a> for Sliced<'a> {
    fn next_event<'s>(&'s mut self, _buf: &'s mut Vec<u8>) -> quick_xml::Result<Event<'s>> {
        let before = self.consumed();
        let ev = self.reader.read_event()?;
        // Nothing is copied here, but a token the stream reader would
        // refuse is refused here too: the same file gives the same report
        // plain or compressed.
        if self.consumed() - before > MAX_TOKEN {
            self.too_long_at = Some(self.offset + before as u64);
            return Err(quick_xml::Error::Io(std::sync::Arc::new(
                std::io::Error::new(std::io::ErrorKind::InvalidData, "XML token too long"),
            )));
        }
        Ok(ev)
    }
    fn rest(&self) -> Option<&'a [u8]> {
        Some(self.reader.get_ref())
    }
    fn read_ends_with(&self, tag: &[u8]) -> bool {
        self.input[..self.consumed()].ends_with(tag)
    }
    fn raw(&mut self) -> &mut dyn BufRead {
        self.reader.get_mut()
    }
    fn error_position(&self) -> u64 {
        let here = self.consumed() as u64;
        let behind = self.reader.buffer_position() - self.reader.error_position();
        self.offset + here.saturating_sub(behind)
    }
    fn token_too_long(&self) -> Option<u64> {
        self.too_long_at
    }
    fn renew(&mut self) {
        let rest: &'a [u8] = self.reader.get_ref();
        let mut fresh = Reader::from_reader(rest);
        configure(&mut fresh);
        self.reader = fresh;
    }
}

/// A `<frame>` or `<sframe>` whose parse is in progress and may be cached.
struct Pending<'a> {
    tag: Tag,
    key: &'a [u8],
    /// Unread input length right after its end tag.
    rest_after: usize,
    /// Entries in the list it adds to (the stack, the suppression's frames)
    /// before it: it is cached only when it added exactly one (an `<sframe>`
    /// with two `<fun>`s adds two).
    len_before: usize,
}

/// Frames repeat: the torch corpus has 2.4 million `<frame>` elements and
/// about 7,000 distinct ones (the `<sframe>`s of generated suppressions
/// likewise). When the input is in memory, an element's bytes up to its end
/// tag are the key; an element seen before is taken from the cache and
/// skipped unread. An element is cached only after a normal parse consumed
/// exactly those bytes and saw nothing but its plain leaf children, so a hit
/// yields what parsing the same bytes would.
struct ElementCache<'a> {
    frames: HashMap<&'a [u8], Frame>,
    sframes: HashMap<&'a [u8], (bool, Sym)>,
    frame_close: memchr::memmem::Finder<'static>,
    sframe_close: memchr::memmem::Finder<'static>,
    pending: Option<Pending<'a>>,
}

/// Bounds the cache on hostile input (keys borrow the input; values are a
/// few reference-counted names).
const CACHE_MAX: usize = 1 << 16;

impl<'a> ElementCache<'a> {
    fn new() -> Self {
        ElementCache {
            frames: HashMap::default(),
            sframes: HashMap::default(),
            frame_close: memchr::memmem::Finder::new(b"</frame>"),
            sframe_close: memchr::memmem::Finder::new(b"</sframe>"),
            pending: None,
        }
    }

    /// Called at every start tag, before it is handled.
    fn on_start(&mut self, tag: Tag, plain: bool) {
        if let Some(p) = &self.pending {
            let leaf = match p.tag {
                Tag::Frame => matches!(
                    tag,
                    Tag::Ip | Tag::Obj | Tag::Fn | Tag::Dir | Tag::File | Tag::Line
                ),
                _ => matches!(tag, Tag::Fun | Tag::Obj),
            };
            if !(plain && leaf) {
                self.pending = None;
            }
        }
    }

    /// At the start tag of a `<frame>` in a record's `<stack>` or an
    /// `<sframe>` in its `<suppression>`: when the element is cached, adds
    /// it (and the cached siblings that directly follow it) to the record and
    /// returns the number of bytes to skip.
    fn lookup(
        &mut self,
        tag: Tag,
        parent: Option<Tag>,
        rest: &'a [u8],
        ctx: &mut Ctx,
    ) -> Option<usize> {
        let b = ctx.builder.as_mut()?;
        let (is_frame, open, close_len): (bool, &[u8], usize) = match (tag, parent) {
            (Tag::Frame, Some(Tag::Stack)) => (true, b"<frame>", 8),
            (Tag::Sframe, Some(Tag::Suppression)) if b.supp.is_some() => (false, b"<sframe>", 9),
            _ => return None,
        };
        let finder = if is_frame {
            &self.frame_close
        } else {
            &self.sframe_close
        };
        let p = finder.find(rest)?;
        let key = &rest[..p];
        if !self.push_cached(is_frame, key, b) {
            let len_before = if is_frame {
                b.cur_stack.len()
            } else {
                b.supp.as_ref().map_or(0, |s| s.frames.len())
            };
            self.pending = Some(Pending {
                tag,
                key,
                rest_after: rest.len() - p - close_len,
                len_before,
            });
            return None;
        }
        if is_frame {
            // Parsing a frame leaves the frame being built empty; so does
            // a hit (it matters when a frame's end tag is missing and a
            // nested stack follows, as in a corrupted file).
            b.frame = Frame::default();
        }
        let mut n = p + close_len;
        // Runs of cached siblings are taken without the tokenizer (the
        // whitespace between them is text nobody reads).
        loop {
            let r = &rest[n..];
            let ws = r
                .iter()
                .position(|c| !c.is_ascii_whitespace())
                .unwrap_or(r.len());
            let Some(body) = r[ws..].strip_prefix(open) else {
                break;
            };
            let finder = if is_frame {
                &self.frame_close
            } else {
                &self.sframe_close
            };
            let Some(p) = finder.find(body) else { break };
            if !self.push_cached(is_frame, &body[..p], b) {
                break;
            }
            n += ws + open.len() + p + close_len;
        }
        Some(n)
    }

    /// Adds the cached element with these bytes to the record, if cached.
    fn push_cached(&self, is_frame: bool, key: &[u8], b: &mut Builder) -> bool {
        if is_frame {
            match self.frames.get(key) {
                Some(f) => {
                    b.cur_stack.push(f.clone());
                    true
                }
                None => false,
            }
        } else {
            match (self.sframes.get(key), b.supp.as_mut()) {
                (Some(f), Some(s)) => {
                    s.frames.push(f.clone());
                    true
                }
                _ => false,
            }
        }
    }

    /// Called after an end tag was handled, with the unread input length.
    fn on_end(&mut self, tag: Tag, rest_len: Option<usize>, ctx: &Ctx) {
        let Some(p) = self.pending.take_if(|p| p.tag == tag) else {
            return;
        };
        if rest_len != Some(p.rest_after) {
            return;
        }
        let Some(b) = ctx.builder.as_ref() else {
            return;
        };
        if tag == Tag::Frame {
            if b.cur_stack.len() == p.len_before + 1
                && let Some(f) = b.cur_stack.last()
                && self.frames.len() < CACHE_MAX
            {
                self.frames.insert(p.key, f.clone());
            }
        } else if let Some(s) = b.supp.as_ref()
            && s.frames.len() == p.len_before + 1
            && let Some(f) = s.frames.last()
            && self.sframes.len() < CACHE_MAX
        {
            self.sframes.insert(p.key, f.clone());
        }
    }
}

fn configure<R>(reader: &mut Reader<R>) {
    let cfg = reader.config_mut();
    cfg.trim_text(false);
    cfg.check_end_names = false;
    cfg.allow_unmatched_ends = true;
    cfg.expand_empty_elements = true;
}

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
                    match r.as_ref() {
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

/// Reads raw bytes up to `</name>` (consumed, nothing beyond it), for
/// elements Valgrind does not escape. Returns `None` at end of input.
fn read_raw_until(r: &mut dyn BufRead, name: &[u8]) -> std::io::Result<Option<String>> {
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
fn skip_raw_until(r: &mut dyn BufRead, name: &[u8]) -> std::io::Result<bool> {
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

impl Ctx<'_> {
    fn start(&mut self, tag: Tag, stack: &[Tag]) {
        let parent = stack.last().copied();
        match tag {
            Tag::Error if parent == Some(Tag::Root) => {
                self.builder = Some(Builder::default());
            }
            Tag::FatalSignal if parent == Some(Tag::Root) => {
                let mut b = Builder {
                    in_fatal: true,
                    ..Builder::default()
                };
                b.rec.kind = self.interner.intern("FatalSignal");
                self.builder = Some(b);
            }
            Tag::Stack => {
                if let Some(b) = self.builder.as_mut() {
                    b.cur_stack.clear();
                }
            }
            Tag::Frame => {
                if let Some(b) = self.builder.as_mut() {
                    b.frame = Frame::default();
                }
            }
            Tag::Suppression if parent == Some(Tag::Error) => {
                if let Some(b) = self.builder.as_mut() {
                    b.supp = Some(GenSuppression::default());
                }
            }
            Tag::Pair => {
                self.pair_count = None;
                self.pair_id = None;
                self.pair_name = None;
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: Tag, stack: &[Tag], text: &str) {
        let parent = stack.last().copied();
        let in_record = self.builder.is_some();
        match (tag, parent) {
            (Tag::ProtocolVersion, Some(Tag::Root)) => {
                // A number too large is kept as "unknown to leakgate", never
                // truncated into a known one.
                self.sum.process.protocol =
                    parse_count(text).map(|v| u32::try_from(v).unwrap_or(u32::MAX));
            }
            (Tag::ProtocolTool, Some(Tag::Root)) => {
                self.sum.process.tool = Some(text.trim().to_string());
            }
            (Tag::Line, Some(Tag::Preamble)) => {
                if let Some(rest) = text.trim().strip_prefix("Using Valgrind-") {
                    let v = rest.split_whitespace().next().unwrap_or("");
                    self.sum.process.valgrind_version = Some(v.to_string());
                }
            }
            (Tag::Pid, Some(Tag::Root)) => self.sum.process.pid = parse_num(text),
            (Tag::Ppid, Some(Tag::Root)) => self.sum.process.ppid = parse_num(text),
            (Tag::Exe | Tag::Arg, Some(Tag::Argv)) => {
                self.sum.process.command.push(text.trim().to_string());
            }
            (Tag::Arg, Some(Tag::Vargv)) => {
                self.sum.process.valgrind_args.push(text.trim().to_string());
            }
            (Tag::State, Some(Tag::Status)) if !in_record && text.trim() == "FINISHED" => {
                self.saw_finished = true;
            }
            (Tag::Text, Some(Tag::ClientMsg)) => {
                self.sum
                    .process
                    .client_messages
                    .push(text.trim_end().to_string());
            }
            (Tag::Count, Some(Tag::Pair)) => self.pair_count = parse_count(text),
            (Tag::Unique, Some(Tag::Pair)) => self.pair_id = parse_num(text),
            (Tag::Name, Some(Tag::Pair)) => self.pair_name = Some(text.trim().to_string()),
            (Tag::Pair, Some(Tag::ErrorCounts)) => {
                if let (Some(c), Some(u)) = (self.pair_count, self.pair_id) {
                    self.sum.error_counts.push((u, c));
                }
            }
            (Tag::Pair, Some(Tag::SuppCounts)) => {
                if let (Some(c), Some(n)) = (self.pair_count, self.pair_name.take()) {
                    self.sum.supp_counts.push((n, c));
                }
            }
            (Tag::Error | Tag::FatalSignal, Some(Tag::Root)) => {
                if let Some(mut b) = self.builder.take() {
                    if b.in_fatal != (tag == Tag::FatalSignal) {
                        self.builder = Some(b);
                        return;
                    }
                    if let Some(s) = b.supp.take() {
                        for (f, (is_fun, name)) in b.rec.stack.iter_mut().zip(&s.frames) {
                            if *is_fun {
                                f.sfun = Some(name.clone());
                            } else {
                                f.sobj = Some(name.clone());
                            }
                        }
                        b.rec.suppression = Some(s);
                    }
                    if b.in_fatal {
                        let sig = b.rec.signame.clone().unwrap_or_default();
                        self.sum.process.fatal_signal = Some(sig.clone());
                        if b.rec.what.is_empty() {
                            b.rec.what =
                                format!("Process terminating with default action of signal {sig}");
                        }
                    }
                    b.rec.client_msgs = self.sum.process.client_messages.len() as u32;
                    self.records += 1;
                    self.done = Some(b.rec);
                }
            }
            _ if in_record => self.end_in_record(tag, parent, text),
            _ => {}
        }
    }

    fn end_in_record(&mut self, tag: Tag, parent: Option<Tag>, text: &str) {
        let interner = &mut *self.interner;
        let Some(b) = self.builder.as_mut() else {
            return;
        };
        match (tag, parent) {
            (Tag::Unique, Some(Tag::Error)) => b.rec.unique = parse_num(text),
            (Tag::Tid, Some(Tag::Error | Tag::FatalSignal)) => b.rec.tid = parse_num(text),
            (Tag::Kind, Some(Tag::Error)) => b.rec.kind = interner.intern(text.trim()),
            (Tag::Fd, Some(Tag::Error)) => b.rec.fd = text.trim().parse().ok(),
            (Tag::FdPath, Some(Tag::Error)) => b.rec.fd_path = Some(text.trim().to_string()),
            (Tag::What, Some(Tag::Error)) => b.rec.what = text.trim().to_string(),
            (Tag::Text, Some(Tag::Xwhat)) => b.rec.what = text.trim().to_string(),
            (Tag::LeakedBytes, Some(Tag::Xwhat)) => b.rec.leaked_bytes = parse_count(text),
            (Tag::LeakedBlocks, Some(Tag::Xwhat)) => b.rec.leaked_blocks = parse_count(text),
            (Tag::Signame, Some(Tag::FatalSignal)) => b.rec.signame = Some(text.trim().to_string()),
            (Tag::AuxWhat, Some(Tag::Error)) | (Tag::Text, Some(Tag::XauxWhat)) => {
                b.rec.aux.push(AuxInfo {
                    text: text.trim().to_string(),
                    stack: Vec::new(),
                });
                b.pending_aux = Some(b.rec.aux.len() - 1);
            }
            (Tag::Ip, Some(Tag::Frame)) => b.frame.ip = Some(interner.intern(text.trim())),
            (Tag::Obj, Some(Tag::Frame)) => b.frame.obj = Some(interner.intern(text.trim())),
            (Tag::Fn, Some(Tag::Frame)) => b.frame.func = Some(interner.intern(text.trim())),
            (Tag::Dir, Some(Tag::Frame)) => b.frame.dir = Some(interner.intern(text.trim())),
            (Tag::File, Some(Tag::Frame)) => b.frame.file = Some(interner.intern(text.trim())),
            (Tag::Line, Some(Tag::Frame)) => b.frame.line = parse_u32(text),
            (Tag::Frame, Some(Tag::Stack)) => {
                let f = std::mem::take(&mut b.frame);
                b.cur_stack.push(f);
            }
            (Tag::Stack, Some(Tag::Error | Tag::FatalSignal)) => {
                let st = std::mem::take(&mut b.cur_stack);
                if !b.primary_done {
                    b.rec.stack = st;
                    b.primary_done = true;
                } else if let Some(i) = b.pending_aux.take() {
                    b.rec.aux[i].stack = st;
                } else {
                    b.rec.aux.push(AuxInfo {
                        text: String::new(),
                        stack: st,
                    });
                }
            }
            (Tag::Skind, Some(Tag::Suppression)) => {
                if let Some(s) = b.supp.as_mut() {
                    s.kind = text.trim().to_string();
                }
            }
            (Tag::Skaux, Some(Tag::Suppression)) => {
                if let Some(s) = b.supp.as_mut() {
                    s.aux = Some(text.trim().to_string());
                }
            }
            (Tag::Fun | Tag::Obj, Some(Tag::Sframe)) => {
                if let Some(s) = b.supp.as_mut() {
                    s.frames
                        .push((tag == Tag::Fun, interner.intern(text.trim())));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
