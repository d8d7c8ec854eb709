//! Valgrind suppression files: an exact reader ([`parse`]) and a post-hoc
//! matcher ([`SuppressionSet`]) that decides, for records read from Memcheck
//! XML, which suppression Valgrind would have applied.
//!
//! * [`parse`] reproduces Valgrind 3.19's reader, error messages included, but
//!   lists every error of a file instead of stopping at the first.
//! * [`SuppressionSet::first_match`] emulates `is_suppressible_error`: kind
//!   test, then a prefix match of the locations (with `...`) against the
//!   stack, innermost frame first; the later-loaded suppression wins.
//! * Some questions cannot be answered from an XML report (frames hidden below
//!   `main`, demangled `<fn>` names without `<sframe>`): those give
//!   [`MatchOutcome::Undecidable`] rather than a guess.
//!
//! Not emulated: Valgrind's move-to-front reordering after each match (a
//! post-hoc tool cannot see the suppressed errors that caused it), so
//! attribution among several matching rules may differ; whether *some* rule
//! matches does not depend on it.

pub mod bundled;
pub mod kind;
pub mod load;
pub mod matcher;
pub mod parse;

pub use kind::{
    FishyTarget, LeakKind, LeakKindSet, LeakKindsError, RecordKind, SuppKind, record_kind,
};
pub use load::{SuppError, Suppressor};
pub use matcher::{
    FunCertainty, HiddenFrames, MatchOptions, MatchOutcome, StackView, SuppressionSet, Tally,
    Verdict, ViewFrame, stack_view, string_match,
};
pub use parse::{
    Loc, ParsedFile, Skipped, Suppression, SyntaxError, SyntaxErrorKind, parse, parse_detailed,
};

#[cfg(test)]
mod tests;
