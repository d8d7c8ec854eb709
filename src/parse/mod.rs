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

mod input;
mod reader;

pub use input::{Input, InputError, open_input};
pub use reader::{
    FileSummary, Interner, MAX_DEPTH, MAX_TOKEN, parse_chunk, parse_chunk_stream, parse_count,
    parse_num, parse_slice, parse_stream,
};
