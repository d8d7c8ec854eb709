//! The analysis: drives parse → attribute → suppress over a set of XML
//! files and folds the attributed records into findings (records with the
//! same fingerprint, and for user findings the same line, become one
//! finding). Only the findings are kept, never the records, so memory does
//! not grow with the report's size.
//!
//! [`schedule`] reads the files in parallel, [`aggregate`] folds records
//! into findings using [`attribute`] (whose code is it), [`fingerprint`]
//! and [`sources`], with `auxiliary` marking the user's frames of the
//! auxiliary stacks (where a block was freed or allocated), and [`cython`]
//! naming the user's findings in Cython's generated code at their `.pyx`
//! lines;
//! [`checkpoints`] ties mid-run leak snapshots to tests, [`processes`]
//! relates the processes of a run, [`import_time`] marks the user's leaks
//! made once at import, [`unhandled`] what an instruction
//! Valgrind cannot run leaves behind, [`summary`] counts the findings and
//! [`accounting`] checks that every record is accounted for; [`origins`]
//! carries the origins of a `--origins auto` re-run over; [`stacks`] the
//! exact stacks of a sanitizer engine's re-run of some tests; [`merge`] folds
//! the saved reports of shards into one.

pub mod accounting;
pub mod aggregate;
pub mod attribute;
mod auxiliary;
pub mod checkpoints;
pub mod cython;
pub mod fingerprint;
pub mod import_time;
pub mod inputs;
mod macros;
pub mod merge;
pub mod origins;
pub mod processes;
pub mod schedule;
pub mod sources;
pub mod stacks;
pub mod summary;
pub mod unhandled;

pub use accounting::{check_conservation, conservation_error};
pub use aggregate::{Aggregator, Analysis, Observer, Options, StageTimes};
pub use inputs::{collect_inputs, processes_out};
pub use schedule::{analyze_files, analyze_files_observed, analyze_files_with};
