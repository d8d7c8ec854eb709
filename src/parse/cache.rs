//! The element cache of in-memory parses: a `<frame>` or `<sframe>` whose
//! bytes were parsed before is taken from the cache and skipped unread.

use rustc_hash::FxHashMap as HashMap;

use super::build::{Builder, Ctx};
use super::tags::Tag;
use crate::model::{Frame, Sym};

/// A `<frame>` or `<sframe>` whose parse is in progress and may be cached.
pub(super) struct Pending<'a> {
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
pub(super) struct ElementCache<'a> {
    frames: HashMap<&'a [u8], Frame>,
    sframes: HashMap<&'a [u8], (bool, Sym)>,
    frame_close: memchr::memmem::Finder<'static>,
    sframe_close: memchr::memmem::Finder<'static>,
    pub(super) pending: Option<Pending<'a>>,
}

/// Bounds the cache on hostile input (keys borrow the input; values are a
/// few reference-counted names).
const CACHE_MAX: usize = 1 << 16;

impl<'a> ElementCache<'a> {
    pub(super) fn new() -> Self {
        ElementCache {
            frames: HashMap::default(),
            sframes: HashMap::default(),
            frame_close: memchr::memmem::Finder::new(b"</frame>"),
            sframe_close: memchr::memmem::Finder::new(b"</sframe>"),
            pending: None,
        }
    }

    /// Called at every start tag, before it is handled.
    pub(super) fn on_start(&mut self, tag: Tag, plain: bool) {
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
    pub(super) fn lookup(
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
    pub(super) fn on_end(&mut self, tag: Tag, rest_len: Option<usize>, ctx: &Ctx) {
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
