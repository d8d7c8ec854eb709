//! Stage 6 of the pipeline: renderers. One file per output format; each takes
//! the finished [`Report`](crate::report::Report) and produces text.

pub mod annotations;
pub mod ci;
pub mod codequality;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod text;
