//! Where the reader's quick-xml events come from: a buffered stream
//! ([`Buffered`], copies, counts bytes for error positions and refuses
//! over-long tokens) or a document in memory ([`Sliced`], borrows, no copy).

use std::io::BufRead;

use quick_xml::Reader;
use quick_xml::events::Event;

/// The longest single XML token (a text run, a tag, a comment) read: a
/// stream reader buffers one token, so a longer one (a 1 GB line of text)
/// ends the document as malformed rather than filling memory. Valgrind's
/// tokens are a few KB at most.
pub const MAX_TOKEN: usize = 64 << 20;

/// Where quick-xml events come from: a buffered stream (copies into a
/// buffer) or a byte slice, e.g. a memory-mapped file (borrows, no copy).
pub(super) trait EventSource<'a> {
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
pub(super) struct Buffered<R: BufRead> {
    reader: Option<Reader<Counting<R>>>,
    offset: u64,
}

impl<R: BufRead> Buffered<R> {
    pub(super) fn new(input: R, offset: u64) -> Self {
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
pub(super) struct Sliced<'a> {
    reader: Reader<&'a [u8]>,
    input: &'a [u8],
    offset: u64,
    too_long_at: Option<u64>,
}

impl<'a> Sliced<'a> {
    pub(super) fn new(input: &'a [u8], offset: u64) -> Self {
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

fn configure<R>(reader: &mut Reader<R>) {
    let cfg = reader.config_mut();
    cfg.trim_text(false);
    cfg.check_end_names = false;
    cfg.allow_unmatched_ends = true;
    cfg.expand_empty_elements = true;
}
