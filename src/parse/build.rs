//! Building records and the file summary from the reader's start and end
//! tags: [`Ctx`] holds the record in progress ([`Builder`]) and what the
//! file said about its process.

use super::summary::{FileSummary, Interner};
use super::tags::Tag;
use super::text::{parse_count, parse_num, parse_u32};
use crate::model::{AuxInfo, Frame, GenSuppression, Record};

#[derive(Default)]
pub(super) struct Builder {
    pub(super) rec: Record,
    pub(super) in_fatal: bool,
    /// Whether the primary stack has been read.
    pub(super) primary_done: bool,
    pub(super) supp: Option<GenSuppression>,
    pub(super) frame: Frame,
    /// Index into `rec.aux` that the next `<stack>` belongs to.
    pub(super) pending_aux: Option<usize>,
    pub(super) cur_stack: Vec<Frame>,
}

pub(super) struct Ctx<'a> {
    pub(super) interner: &'a mut Interner,
    pub(super) sum: FileSummary,
    pub(super) builder: Option<Builder>,
    pub(super) pair_count: Option<u64>,
    pub(super) pair_id: Option<u64>,
    pub(super) pair_name: Option<String>,
    pub(super) saw_root: bool,
    pub(super) saw_finished: bool,
    pub(super) closed: bool,
    pub(super) records: u64,
    /// A record finished by the last end tag, waiting for the sink.
    pub(super) done: Option<Record>,
}

impl Ctx<'_> {
    pub(super) fn start(&mut self, tag: Tag, stack: &[Tag]) {
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
                b.rec.kind = self
                    .interner
                    .intern(crate::kind::Kind::FatalSignal.as_str());
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

    pub(super) fn end(&mut self, tag: Tag, stack: &[Tag], text: &str) {
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
