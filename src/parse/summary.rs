//! What parsing a document hands back besides its records: the
//! [`FileSummary`] (process, counts, completeness) and the [`Interner`] that
//! shares repeated names between records.

use rustc_hash::FxHashSet as HashSet;

use crate::model::{ProcessInfo, Sym};

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
