//! leakgate: run native extensions under Valgrind Memcheck, stream-parse its
//! XML, tell the user's leaks and memory errors from interpreter and runtime
//! noise, gate CI on them and report.
//!
//! The pipeline is one-way, one module per stage:
//! [`run`] → [`parse`] → [`attribute`] → [`suppress`] → [`gate`] → [`render`],
//! with [`analysis`] folding records into findings, [`checkpoints`] tying
//! mid-run leak snapshots to the tests (checkpoints) they grew in, and
//! [`app`] wiring the command line to it.

pub mod analysis;
pub mod app;
pub mod attribute;
pub mod baseline;
pub mod checkpoints;
pub mod ci;
pub mod cli;
pub mod gate;
pub mod generate;
pub mod manual;
pub mod model;
pub mod parse;
pub mod policy;
pub mod processes;
pub mod render;
pub mod report;
pub mod run;
pub mod suppress;
pub mod versions;
