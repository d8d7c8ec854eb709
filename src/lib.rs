//! leakgate: run native extensions under Valgrind Memcheck, stream-parse its
//! XML, tell the user's leaks and memory errors from interpreter and runtime
//! noise, gate CI on them and report.
//!
//! The pipeline is one-way, one module per stage:
//! [`run`] → [`parse`] → [`analyze`] (attribution, aggregation, processes,
//! checkpoints; [`suppress`] is applied there) → [`gate`] → [`render`], with
//! [`commands`] building each subcommand's configuration and outputs.

pub mod analyze;
pub mod cli;
pub mod commands;
pub mod exit;
pub mod gate;
pub mod generate;
pub mod kind;
pub mod model;
pub mod parse;
pub mod probe;
pub mod render;
pub mod report;
pub mod run;
pub mod suppress;
pub mod util;
pub mod versions;
