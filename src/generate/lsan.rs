//! LeakSanitizer `leak:` rules for the noise (`leakgate suppress --format
//! lsan`), for users who run LeakSanitizer outside leakgate.
//!
//! A `leak:` rule is one pattern that LeakSanitizer matches against every
//! frame of a leak's stack: the function name, the source file and the
//! object (`*` matches anything, `^` anchors the start, `$` the end). There
//! are no stack sequences, so a rule is one function, anchored at both ends
//! (`leak:^_PyObject_GC_New$`): the noise's deciding frame (attribution's
//! owner) when no leak of the user's has that function anywhere in its
//! stack, else the next frame towards `main` that none has, else the
//! frames nearer the allocator. Each rule is checked against the user's
//! leaks with LeakSanitizer's own matching ([`template_match`]); a record
//! no safe function covers gets no rule, and the notes say how many.
//! Only leaks: LeakSanitizer's suppressions do not apply to memory errors.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use super::kinds::KindFilter;
use super::rules::is_alloc_name;
use crate::analyze::Observer;
use crate::analyze::attribute::{Attribution, ObjClass, classify_object};
use crate::model::{Frame, Record};
use crate::suppress::record_kind;

/// LeakSanitizer's `TemplateMatch` (sanitizer_common): `*` matches any run
/// of characters, a leading `^` anchors at the start, `$` at the end; the
/// rest must occur in `s` in order. An empty `s` never matches.
pub fn template_match(templ: &str, s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    let (mut start, mut t) = match templ.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, templ),
    };
    let mut rest = s;
    let mut asterisk = false;
    while !t.is_empty() {
        if let Some(r) = t.strip_prefix('*') {
            t = r;
            start = false;
            asterisk = true;
            continue;
        }
        if t.starts_with('$') {
            return rest.is_empty() || asterisk;
        }
        if rest.is_empty() {
            return false;
        }
        let cut = t.find(['*', '$']).unwrap_or(t.len());
        let piece = &t[..cut];
        let Some(at) = rest.find(piece) else {
            return false;
        };
        if start && at != 0 {
            return false;
        }
        rest = &rest[at + piece.len()..];
        t = &t[cut..];
        start = false;
        asterisk = false;
    }
    true
}

/// Whether LeakSanitizer's rule `pattern` suppresses a leak with `stack`:
/// some frame's function, source file or object matches.
pub fn rule_matches(pattern: &str, stack: &[Frame]) -> bool {
    stack.iter().any(|f| {
        [f.func.as_deref(), f.file.as_deref(), f.obj.as_deref()]
            .into_iter()
            .flatten()
            .any(|s| template_match(pattern, s))
    })
}

/// A function name as a pattern matching it alone: `^NAME$`, with `*`
/// (a pointer type in a C++ signature) kept (it matches itself too).
fn pattern_for(name: &str) -> String {
    format!("^{name}$")
}

/// One noise leak: its candidate functions, best first, and its size.
struct Noise {
    candidates: Vec<String>,
    source: &'static str,
    bytes: u64,
}

/// Collects noise and user leaks while an analysis runs.
#[derive(Default)]
pub struct LsanGenerator {
    kinds: KindFilter,
    noise: Vec<Noise>,
    users: Vec<Vec<Frame>>,
    errors: u64,
}

/// The written rules and what happened on the way.
#[derive(Debug, Default)]
pub struct LsanGenerated {
    /// `(pattern, records, bytes, sources)`, most records first.
    pub rules: Vec<(String, u64, u64, Vec<&'static str>)>,
    pub records: u64,
    pub notes: Vec<String>,
}

/// The candidate functions of a noise stack: the deciding frame, then
/// towards `main`, then towards the allocator; no allocator, no frame of
/// Valgrind's or a sanitizer's, no unknown function.
fn candidates(rec: &Record, owner: Option<usize>) -> Vec<String> {
    let ok = |f: &Frame| -> Option<String> {
        let n = f.func.as_deref()?;
        (n != "???"
            && !is_alloc_name(n)
            && classify_object(f.obj.as_deref()) != ObjClass::Valgrind
            && !n.contains('$'))
        .then(|| n.to_string())
    };
    let from = owner.unwrap_or(0).min(rec.stack.len());
    let mut v: Vec<String> = Vec::new();
    for f in rec.stack[from..]
        .iter()
        .chain(rec.stack[..from].iter().rev())
    {
        if let Some(n) = ok(f)
            && !v.contains(&n)
        {
            v.push(n);
        }
    }
    v
}

impl LsanGenerator {
    pub fn new(kinds: KindFilter) -> LsanGenerator {
        LsanGenerator {
            kinds,
            ..Default::default()
        }
    }

    /// A generator shared with the analysis through an [`Observer`].
    pub fn shared(kinds: KindFilter) -> (Arc<Mutex<LsanGenerator>>, Observer) {
        let g = Arc::new(Mutex::new(LsanGenerator::new(kinds)));
        let h = g.clone();
        let obs: Observer = Arc::new(move |rec, att, _p, suppressed| {
            let mut g = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            g.observe(rec, att, suppressed);
        });
        (g, obs)
    }

    /// Takes the generator out of its shared handle once the analysis is done.
    pub fn unshare(g: Arc<Mutex<LsanGenerator>>) -> LsanGenerator {
        super::unshare(g, LsanGenerator::default)
    }

    /// Sees one record after attribution and the existing suppressions.
    pub fn observe(&mut self, rec: &Record, att: &Attribution, suppressed: bool) {
        if suppressed {
            return;
        }
        if att.is_user() {
            if rec.is_leak() {
                self.users.push(rec.stack.clone());
            }
            return;
        }
        let Some(rk) = record_kind(rec) else { return };
        if !self.kinds.covers(&rk) {
            return;
        }
        if !rec.is_leak() {
            self.errors += 1;
            return;
        }
        self.noise.push(Noise {
            candidates: candidates(rec, att.owner),
            source: att.source.map_or("user", |s| s.label()),
            bytes: rec.leaked_bytes.unwrap_or(0),
        });
    }

    /// One rule per distinct safe function; what could not be covered, said.
    pub fn finish(self) -> LsanGenerated {
        let mut out = LsanGenerated::default();
        let mut rules: BTreeMap<String, (u64, u64, Vec<&'static str>)> = BTreeMap::new();
        let mut unsafe_fns: HashSet<String> = HashSet::new();
        let mut uncovered = 0u64;
        for n in &self.noise {
            let pick = n.candidates.iter().find(|c| {
                let p = pattern_for(c);
                if rules.contains_key(&p) {
                    return true;
                }
                if unsafe_fns.contains(c.as_str()) {
                    return false;
                }
                let hides = self.users.iter().any(|u| rule_matches(&p, u));
                if hides {
                    unsafe_fns.insert((*c).clone());
                }
                !hides
            });
            match pick {
                Some(c) => {
                    let e = rules.entry(pattern_for(c)).or_default();
                    e.0 += 1;
                    e.1 += n.bytes;
                    if !e.2.contains(&n.source) {
                        e.2.push(n.source);
                    }
                    out.records += 1;
                }
                None => uncovered += 1,
            }
        }
        out.rules = rules
            .into_iter()
            .map(|(p, (r, b, s))| (p, r, b, s))
            .collect();
        out.rules
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        if uncovered > 0 {
            out.notes.push(format!(
                "{uncovered} noise leak record(s) have no rule: every function in their stacks is also in a stack of one of your leaks, and a leak: rule matches any frame"
            ));
        }
        if self.errors > 0 {
            out.notes.push(format!(
                "{} noise error record(s) are not covered: LeakSanitizer's suppressions apply to leaks only",
                self.errors
            ));
        }
        out
    }
}

/// The file: a header, then each rule with a comment.
pub fn render_lsan(g: &LsanGenerated, from: &str) -> String {
    let mut s = format!(
        "# LeakSanitizer suppressions generated by leakgate {} from: {from}\n\
         # {} rules for {} noise leak records; each matches one function anywhere in a leak's stack.\n\
         # Use: LSAN_OPTIONS=suppressions=$PWD/THIS_FILE (ASAN_OPTIONS for an ASan build reads LSAN_OPTIONS too).\n",
        env!("CARGO_PKG_VERSION"),
        g.rules.len(),
        g.records
    );
    for (p, records, bytes, sources) in &g.rules {
        s.push_str(&format!(
            "# {}: {records} record(s), {bytes} bytes\nleak:{p}\n",
            sources.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_match_is_lsans() {
        assert!(template_match("foo", "xfooy"));
        assert!(template_match("^foo$", "foo"));
        assert!(!template_match("^foo$", "foox"));
        assert!(!template_match("^foo", "xfoo"));
        assert!(template_match("a*c", "abbbc"));
        assert!(template_match("^a*c$", "abc"));
        assert!(!template_match("^a*c$", "abcd"));
        assert!(template_match("x*", "xyz"));
        assert!(!template_match("foo", ""));
        // A pointer type's `*` is a wildcard that matches itself too.
        assert!(template_match("^f(_object*, int)$", "f(_object*, int)"));
    }

    fn frame(func: &str, obj: &str) -> Frame {
        Frame {
            func: Some(func.into()),
            obj: Some(obj.into()),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_function_file_or_object() {
        let stack = vec![
            frame("malloc", "/usr/lib/liblsan.so.0"),
            frame("leaky", "/x/ext.so"),
        ];
        assert!(rule_matches("^leaky$", &stack));
        assert!(rule_matches("ext.so", &stack));
        assert!(!rule_matches("^leak$", &stack));
    }
}
