//! leakgate: run native extensions under Valgrind Memcheck, stream-parse its
//! XML, tell the user's leaks and memory errors from interpreter and runtime
//! noise, gate CI on them and report.
//!
//! The pipeline is one-way, one module per stage:
//! [`run`] → [`parse`] → [`analyze`] (attribution, aggregation, processes,
//! checkpoints; [`suppress`] is applied there) → [`gate`] → [`render`].
//! [`commands`] builds each subcommand's validated configuration and its
//! outputs and drives the stages; [`generate`] writes suppression files for
//! the noise. The vocabulary every stage shares sits below them: [`model`]
//! (parsed records), [`report`] and [`kind`] (the report and its typed
//! kinds), [`exit`] (exit codes), [`versions`], [`probe`] and [`util`].
//!
//! As a library, the common path is: [`analyze_files`] over Valgrind XML,
//! [`gate::mark`] and [`gate::verdict`] with a [`Policy`], then a renderer
//! from [`render`] over a [`Report`].

#![deny(clippy::print_stdout)] // standard output goes through `commands::outputs::print_stdout`

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

pub use analyze::attribute::{Attributor, UserSpec};
pub use analyze::{Analysis, analyze_files, collect_inputs};
pub use gate::Policy;
pub use gate::policy::FailOn;
pub use kind::Kind;
pub use report::{Finding, Report, Status, Verdict};
pub use run::{RunConfig, RunError, RunOutcome};
pub use suppress::Suppressor;
