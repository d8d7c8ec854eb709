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
//! a frame whose caller keeps no frame pointer).

use std::collections::HashMap;

use crate::model::{Frame, Record};

/// A cut stack ([`key`]) → the exact stack of the same leak.
pub type StackMap = HashMap<u64, Vec<Frame>>;

/// The record's kind and whole stack, hashed (`origins::frames_key`).
pub fn key(rec: &Record) -> u64 {
    super::origins::frames_key(&rec.kind, rec.stack.iter())
}

/// Gives a leak record the exact stack `map` holds for its cut one.
/// Returns whether it did.
pub fn fill(rec: &mut Record, map: &StackMap) -> bool {
    if !rec.is_leak() {
        return false;
    }
    match map.get(&key(rec)) {
        Some(exact) => {
            rec.stack = exact.clone();
            true
        }
        None => false,
    }
}

fn same_frame(a: &Frame, b: &Frame) -> bool {
    a.func == b.func && a.obj == b.obj && a.file == b.file && a.line == b.line
}

/// Whether every frame of `cut` is in `exact`, in the same order.
pub fn is_within(cut: &[Frame], exact: &[Frame]) -> bool {
    let mut rest = exact.iter();
    cut.iter().all(|c| rest.any(|e| same_frame(c, e)))
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
        assert!(!is_within(&[frame("other")], &exact));
    }

    #[test]
    fn the_map_gives_leaks_their_exact_stacks() {
        let mut rec = Record {
            kind: Sym::from("Leak_DefinitelyLost"),
            stack: vec![frame("malloc"), frame("_PyBytes_FromSize")],
            ..Record::default()
        };
        let exact = vec![
            frame("malloc"),
            frame("_PyBytes_FromSize"),
            frame("leak_bytes"),
        ];
        let map: StackMap = [(key(&rec), exact.clone())].into_iter().collect();
        assert!(fill(&mut rec, &map));
        assert_eq!(rec.stack, exact);
        assert!(!fill(&mut rec, &map), "the exact stack is not a cut one");
    }
}
