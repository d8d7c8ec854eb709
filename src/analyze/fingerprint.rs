//! Fingerprints: the stable id of a finding, from its kind and the function
//! names (and objects) of the frames that decide it, so the same leak has
//! the same id across runs, builds and machines.

use super::attribute::Attribution;
use crate::model::{Frame, Record};

/// FNV-1a, 64 bit: stable across platforms and Rust versions.
fn frame_name(f: &Frame) -> String {
    if let Some(n) = &f.func {
        return n.to_string();
    }
    match &f.obj {
        Some(o) => format!("obj:{}", o.rsplit('/').next().unwrap_or(o)),
        None => "???".into(),
    }
}

/// Strips version numbers from an object's basename: `libfoo.so.1.2` → `libfoo.so`.
fn object_key(obj: Option<&str>) -> String {
    let Some(o) = obj else { return "???".into() };
    let base = o.rsplit('/').next().unwrap_or(o);
    match base.find(".so") {
        Some(i) => base[..i + 3].to_string(),
        None => base.to_string(),
    }
}

/// The finding's fingerprint and (for user findings) its line, which
/// separates distinct sites in one function.
pub(super) fn fingerprint(rec: &Record, att: &Attribution) -> (u64, Option<u32>) {
    let mut parts: Vec<String> = vec![rec.kind.to_string()];
    match (att.is_user(), att.owner) {
        (true, Some(owner)) => {
            // The callee of the innermost user frame (malloc, strdup, ...)
            // separates different kinds of allocation in one function.
            if owner > 0 {
                parts.push(frame_name(&rec.stack[owner - 1]));
            }
            for &i in &att.user_frames {
                parts.push(frame_name(&rec.stack[i]));
            }
            let line = rec.stack[owner].line;
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (crate::util::fnv1a_parts(&refs), line)
        }
        (_, Some(owner)) => {
            let f = &rec.stack[owner];
            parts.push(frame_name(f));
            parts.push(object_key(f.obj.as_deref()));
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (crate::util::fnv1a_parts(&refs), None)
        }
        (_, None) => {
            for f in rec.stack.iter().take(4) {
                parts.push(frame_name(f));
            }
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            (crate::util::fnv1a_parts(&refs), None)
        }
    }
}
