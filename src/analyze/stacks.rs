//! Exact stacks on demand (`leakgate run --engine lsan|asan` on a pytest
//! suite): the first run unwinds allocation stacks through frame pointers,
//! which code built without them (CPython, glibc) cuts short. When every
//! leak whose stack was cut that way (with none of the user's frames left)
//! showed up under a test, only those tests are run again with exact
//! unwinding, and the exact stack of each such leak replaces its cut one
//! in the first run's records before attribution (see
//! `commands::unwind`). The rest of the report is the first run's.
//!
//! A leak's cut stack and its exact one are the same leak when they are of
//! the same kind, grew in the same test, and the cut stack's frames appear
//! in the exact one in the same order (fast unwinding stops early, or skips
//! a frame whose caller keeps no frame pointer). Fast unwinding may also
//! fold several leaks into one record (two objects an extension made
//! through the interpreter's allocator, both cut at `_PyObject_GC_New`):
//! when such a record grew in one test only and the exact records of that
//! test that hold its frames add up to its growth, it is split into them
//! ([`Exact::Split`]).

use std::collections::HashMap;

use crate::model::{Frame, Record};

/// What a cut stack stands for in the exact re-run.
#[derive(Debug, Clone, PartialEq)]
pub enum Exact {
    /// One leak: its exact stack.
    One(Vec<Frame>),
    /// Several leaks fast unwinding folded into one record (which grew in
    /// one test only): each one's exact stack, bytes and blocks.
    Split(Vec<Part>),
}

/// One of the leaks of an [`Exact::Split`] record.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub stack: Vec<Frame>,
    pub bytes: u64,
    pub blocks: u64,
}

/// A cut stack ([`key`]) → what it stands for.
pub type StackMap = HashMap<u64, Exact>;

/// The record's kind and whole stack, hashed (`origins::frames_key`).
pub fn key(rec: &Record) -> u64 {
    super::origins::frames_key(&rec.kind, rec.stack.iter())
}

/// The records a leak record with a cut stack stands for: itself with
/// its exact stack, or the leaks it folded together (each with its own
/// stack, bytes and blocks; the record's text says them, its change at a
/// checkpoint too). `None`: not a cut leak `map` knows, or a folded one
/// whose totals are not those of its parts (then it stays as it is).
pub fn expand(rec: &Record, map: &StackMap) -> Option<Vec<Record>> {
    if !rec.is_leak() {
        return None;
    }
    match map.get(&key(rec))? {
        Exact::One(exact) => {
            let mut r = rec.clone();
            r.stack = exact.clone();
            Some(vec![r])
        }
        Exact::Split(parts) => {
            let bytes: u64 = parts.iter().map(|p| p.bytes).sum();
            let blocks: u64 = parts.iter().map(|p| p.blocks).sum();
            if rec.leaked_bytes != Some(bytes) || rec.leaked_blocks != Some(blocks) {
                return None;
            }
            let delta = crate::analyze::checkpoints::parse_delta(&rec.what);
            if delta.is_some_and(|d| d != (bytes as i64, blocks as i64)) {
                return None;
            }
            let rest = rec.what.split_once(" blocks ").map_or("", |(_, r)| r);
            Some(
                parts
                    .iter()
                    .map(|p| {
                        let mut r = rec.clone();
                        r.stack = p.stack.clone();
                        r.leaked_bytes = Some(p.bytes);
                        r.leaked_blocks = Some(p.blocks);
                        r.what = if delta.is_some() {
                            format!(
                                "{b} (+{b}) bytes in {n} (+{n}) blocks {rest}",
                                b = p.bytes,
                                n = p.blocks
                            )
                        } else {
                            format!("{} bytes in {} blocks {rest}", p.bytes, p.blocks)
                        };
                        r
                    })
                    .collect(),
            )
        }
    }
}

/// Whether two frames are the same code (function, object, file, line).
pub fn same_frame(a: &Frame, b: &Frame) -> bool {
    a.func == b.func && a.obj == b.obj && a.file == b.file && a.line == b.line
}

/// Whether every frame of `cut` is in `exact`, in the same order.
pub fn is_within(cut: &[Frame], exact: &[Frame]) -> bool {
    in_order(cut, exact) == cut.len()
}

/// How many frames of `cut` are in `exact` in the same order (a greedy
/// walk): a fast stack may hold a frame that is no caller at all (a stale
/// return address where code without frame pointers left another value in
/// the frame-pointer register), which the exact stack lacks.
pub fn in_order(cut: &[Frame], exact: &[Frame]) -> usize {
    let mut rest = exact.iter();
    let mut n = 0;
    for c in cut {
        let mut probe = rest.clone();
        if probe.any(|e| same_frame(c, e)) {
            rest = probe;
            n += 1;
        }
    }
    n
}

/// Whether `exact` starts with `cut`'s first two frames (the allocator and
/// its caller: fast unwinding gets those right, the allocator keeps a frame
/// pointer).
pub fn same_head(cut: &[Frame], exact: &[Frame]) -> bool {
    let h = cut.len().min(2);
    exact.len() >= h && cut[..h].iter().zip(exact).all(|(c, e)| same_frame(c, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sym;

    fn frame(func: &str) -> Frame {
        Frame {
            func: Some(Sym::from(func)),
            obj: Some(Sym::from("/lib/libpython3.11.so")),
            ..Frame::default()
        }
    }

    #[test]
    fn a_cut_stack_is_within_its_exact_one() {
        let exact: Vec<Frame> = [
            "malloc",
            "_PyBytes_FromSize",
            "leak_bytes",
            "cfunction_call",
            "main",
        ]
        .into_iter()
        .map(frame)
        .collect();
        let skipped = [
            frame("malloc"),
            frame("_PyBytes_FromSize"),
            frame("cfunction_call"),
        ];
        assert!(is_within(&skipped, &exact));
        assert!(is_within(&exact[..2], &exact));
        let reordered = [frame("cfunction_call"), frame("malloc")];
        assert!(!is_within(&reordered, &exact));
        // A stale frame: all but it are there.
        let stale = [
            frame("malloc"),
            frame("_PyBytes_FromSize"),
            frame("stale"),
            frame("main"),
        ];
        assert_eq!(in_order(&stale, &exact), 3);
        assert!(same_head(&stale, &exact));
        assert!(!same_head(&reordered, &exact));
        assert!(!is_within(&[frame("other")], &exact));
    }

    #[test]
    fn the_map_gives_leaks_their_exact_stacks() {
        let rec = Record {
            kind: Sym::from("Leak_DefinitelyLost"),
            stack: vec![frame("malloc"), frame("_PyBytes_FromSize")],
            ..Record::default()
        };
        let exact = vec![
            frame("malloc"),
            frame("_PyBytes_FromSize"),
            frame("leak_bytes"),
        ];
        let map: StackMap = [(key(&rec), Exact::One(exact.clone()))]
            .into_iter()
            .collect();
        let got = expand(&rec, &map).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].stack, exact);
        assert!(
            expand(&got[0], &map).is_none(),
            "the exact stack is not a cut one"
        );
    }

    #[test]
    fn a_folded_record_is_split_into_its_leaks() {
        let rec = |what: &str| Record {
            kind: Sym::from("Leak_DefinitelyLost"),
            what: what.into(),
            leaked_bytes: Some(112),
            leaked_blocks: Some(2),
            stack: vec![frame("malloc"), frame("gc_alloc")],
            ..Record::default()
        };
        let part = |f: &str| Part {
            stack: vec![frame("malloc"), frame("gc_alloc"), frame(f)],
            bytes: 56,
            blocks: 1,
        };
        let grew =
            rec("112 (+112) bytes in 2 (+2) blocks are definitely lost in loss record 1 of 3");
        let map: StackMap = [(
            key(&grew),
            Exact::Split(vec![part("make_list"), part("pack_pair")]),
        )]
        .into_iter()
        .collect();
        let got = expand(&grew, &map).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].what,
            "56 (+56) bytes in 1 (+1) blocks are definitely lost in loss record 1 of 3"
        );
        assert_eq!(got[1].stack[2], frame("pack_pair"));
        assert_eq!(got[1].leaked_bytes, Some(56));
        let last = rec("112 bytes in 2 blocks are definitely lost in loss record 1 of 3");
        let got = expand(&last, &map).unwrap();
        assert_eq!(
            got[1].what,
            "56 bytes in 1 blocks are definitely lost in loss record 1 of 3"
        );
        // Totals that are not the parts': left as they are.
        let mut more = last.clone();
        more.leaked_bytes = Some(200);
        assert!(expand(&more, &map).is_none());
    }
}
