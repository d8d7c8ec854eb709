//! What the checkpoints and the findings say beyond the findings: lost
//! `python` blocks made as free-list types (a recycled block keeps its
//! first owner's stack), and tests whose lost blocks grew at every call only
//! in `python` noise.

use std::collections::HashMap;

use crate::report::{Finding, Growth, TestShare};

/// Allocator functions (libc's, as Memcheck replaces them, and CPython's
/// object allocators) skipped to find the function that made a block.
fn is_allocator_frame(name: &str) -> bool {
    matches!(name, "malloc" | "calloc" | "realloc" | "_PyObject_GC_Alloc")
        || crate::analyze::attribute::CPYTHON_ALLOCATORS.contains(&name)
}

/// Whether a block was made as a tuple, list, dict or float (the types
/// with free lists): the first function after the allocators names one
/// (`PyTuple_New`, `_PyTuple_Resize`, `PyList_New`, `dict_new`,
/// `PyFloat_FromDouble`, ...).
fn made_as_free_list_type(f: &Finding) -> bool {
    let Some(maker) = f
        .stack
        .iter()
        .filter_map(|fr| fr.function.as_deref())
        .find(|n| !is_allocator_frame(n))
    else {
        return false;
    };
    let m = maker.to_ascii_lowercase();
    ["tuple", "list", "dict", "float"]
        .iter()
        .any(|t| m.contains(t))
}

/// When CPython's free lists were on (no checkpoints, or kept): a note on
/// the lost `python` noise allocated by a free-list allocator, whose block
/// may have been recycled and so carry an earlier owner's stack.
pub fn recycled_note(findings: &[Finding]) -> Option<String> {
    let (mut blocks, mut bytes) = (0u64, 0u64);
    for f in findings.iter().filter(|f| {
        !f.is_user()
            && f.source.as_deref() == Some("python")
            && f.kind.is_lost()
            && made_as_free_list_type(f)
    }) {
        blocks = blocks.saturating_add(f.blocks.unwrap_or(0));
        bytes = bytes.saturating_add(f.direct_bytes.or(f.bytes).unwrap_or(0));
    }
    (blocks > 0).then(|| {
        format!(
            "{blocks} lost block{} ({bytes} bytes) in `python` noise were made as tuples, lists, dicts or floats, which CPython recycles through its free lists: a recycled block carries the allocation stack of its first owner, not of the code that leaked it; with checkpoints (pytest targets, or --per-test) leakgate turns the free lists off (docs/attribution.md: CPython free lists and refcount leaks)",
            if blocks == 1 { "" } else { "s" }
        )
    })
}

/// Tests whose lost blocks (definitely or indirectly lost) grew at every
/// call, but only in `python` noise: nothing of yours grew there. That is
/// how a missing `Py_DECREF` of an object made by Python code looks (the
/// allocation stack holds only the interpreter): leakgate cannot name the
/// line, so it says so, one note per test (not gated).
pub(super) fn python_only_growth<'a>(findings: impl Iterator<Item = &'a Finding>) -> Vec<String> {
    #[derive(Default)]
    struct Grew {
        user: bool,
        records: u64,
        bytes: u64,
        blocks: u64,
    }
    // Checkpoints of a service (kind `checkpoint`) are one sequence.
    let name = |t: &TestShare| {
        if t.kind == "checkpoint" {
            "the checkpoint() calls".to_string()
        } else {
            t.test.clone()
        }
    };
    let mut order: Vec<String> = Vec::new();
    let mut by: HashMap<String, Grew> = HashMap::new();
    for f in findings.filter(|f| f.is_leak()) {
        let lost = f.kind.is_lost();
        let python = !f.is_user() && f.source.as_deref() == Some("python");
        for t in f
            .tests
            .iter()
            .filter(|t| matches!(t.kind.as_str(), "test" | "checkpoint"))
        {
            let key = name(t);
            if !by.contains_key(&key) {
                order.push(key.clone());
            }
            let g = by.entry(key).or_default();
            if f.is_user() {
                g.user = true;
            } else if python && lost && t.growth == Some(Growth::PerCall) {
                let one = match t.repetitions.last() {
                    Some(r) if t.kind == "test" => r.clone(),
                    _ => f.per_call.clone().unwrap_or_default(),
                };
                g.records += 1;
                g.bytes = g.bytes.saturating_add(one.bytes);
                g.blocks = g.blocks.saturating_add(one.blocks);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|k| {
            let g = &by[&k];
            (!g.user && g.records > 0).then(|| {
                format!(
                    "{k}: {} byte{} in {} block{} lost at every call, all allocated by the interpreter (`python` noise, {} finding{}) and none in your code: an object made by Python code whose reference an extension never releases (a missing Py_DECREF) leaks like this, and its allocation stack cannot name the line (docs/attribution.md: CPython free lists and refcount leaks)",
                    g.bytes,
                    if g.bytes == 1 { "" } else { "s" },
                    g.blocks,
                    if g.blocks == 1 { "" } else { "s" },
                    g.records,
                    if g.records == 1 { "" } else { "s" },
                )
            })
        })
        .collect()
}
