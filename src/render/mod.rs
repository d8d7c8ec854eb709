//! Stage 6 of the pipeline: renderers. One file per output format; each takes
//! the finished [`Report`](crate::report::Report) and produces text.

pub mod json;
pub mod text;
