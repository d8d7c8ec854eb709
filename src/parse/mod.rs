//! Stage 2 of the pipeline: stream-parse Valgrind XML (protocol 4, 5 and 6).
//!
//! The reader walks quick-xml events once, keeps only the record being built,
//! and hands every finished record to a callback, so memory does not grow with
//! the size of the file. It tolerates what real Valgrind output contains (see
//! `../shared/docs/valgrind-xml-and-suppressions.md` §1.8): unknown elements,
//! the duplicated top-level `<suppression>`, unescaped `<threadname>` and
//! `<usercomment>` text, stray program output, thousands separators and files
//! cut off mid-way (which yield every complete record and are marked
//! incomplete).
//!
//! Files: `input` (opening plain and zstd files), `reader` (the entry points
//! and the event loop), `source` (where events come from), `build`
//! (records from tags), `cache` (repeated frames taken without parsing),
//! `raw` (unescaped and skipped elements), `tags`, `text` (numbers and
//! bounded text), `summary` (what a file contributed besides records), `marker` (the
//! probe's checkpoint markers); `sanitizer`
//! (LeakSanitizer and AddressSanitizer text reports into the same records).

mod build;
mod cache;
mod input;
mod marker;
mod raw;
mod reader;
mod sanitizer;
mod source;
mod summary;
mod tags;
mod text;

pub use input::{Input, InputError, looks_like_json, open_input};
pub use marker::{Marker, parse_marker};
pub use reader::{MAX_DEPTH, parse_chunk, parse_chunk_stream, parse_slice, parse_stream};
pub use sanitizer::{looks_like_sanitizer_log, mark_killed, parse_sanitizer_log, report_offsets};
pub use source::MAX_TOKEN;
pub use summary::{FileSummary, Interner};
pub use text::{parse_count, parse_num};
