//! leakgate's integration tests, in one test binary (`cargo test --release
//! --test it`): one process runs them all, so the slow Valgrind tests of
//! different files run in parallel (on as many threads as there are CPUs,
//! `--test-threads N` to change).
//! Select a file's tests with a filter on its module name, e.g.
//! `cargo test --release --test it per_test::` or `... --test it snapshots`.
//!
//! Tests share the process: none may change its environment or working
//! directory (give them to the child `Command` instead), and each builds
//! and runs in its own temporary directory (`common::tempdir()`); what is
//! shared is guarded: `distribution`'s build directory (a lock),
//! `real_packages`' prepared venvs (`OnceLock`s; `real_packages_round2`'s, one
//! per release) and download cache (a lock),
//! the unpacking of the extra Valgrind builds (a lock in `common`).

mod common;
#[path = "../reference/mod.rs"]
mod reference;

mod action;
mod agreement;
mod arena;
mod bad_input;
mod c_programs;
mod ci_gate;
mod closed_stdout;
mod corpus;
mod crash_in_test;
mod cython;
mod distribution;
mod docs;
mod engines;
mod free_lists;
mod gc_leaks;
mod generate;
mod help;
mod hostile;
mod html;
mod import_time;
mod installs;
mod library_calls;
mod matcher_reference;
mod outputs_checked;
mod per_test;
mod project_config;
mod python_ext;
mod readme_run;
mod real_packages;
mod real_packages_round2;
mod real_runs;
mod release_names;
mod run_safety;
mod rust_ext;
mod sanitizer_logs;
mod shards;
mod slow_suites;
mod snapshots;
mod suppress_diff;
mod suppressions_cli;
mod trust;
mod unhandled;
mod versions;
mod workers;
mod xml_space;
