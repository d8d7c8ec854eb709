//! Command-line interface (clap derive). Only argument definitions live here;
//! `app.rs` turns them into a pipeline.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "\
Exit codes:
  0  passed: no gated finding in your code, reports complete, target exited 0
  1  gate failed: a definitely/indirectly lost leak or a memory error in your code
  2  usage, configuration or input error (valgrind missing, bad flags, not a Valgrind XML file)
  3  incomplete: an XML report is truncated or missing, or Valgrind itself failed
  4  the target exited non-zero and nothing else failed (see --ignore-target-exit)
When several apply: 2, then 1, then 3, then 4.";

/// Find memory leaks and memory errors in native extensions with Valgrind Memcheck,
/// and tell yours from interpreter and runtime noise.
#[derive(Debug, Parser)]
#[command(name = "leakgate", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run CMD under Valgrind Memcheck and report (leakgate run [OPTIONS] -- CMD [ARGS...]).
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Analyse Valgrind XML files produced elsewhere (files, or directories of *.xml).
    #[command(after_help = EXIT_CODES)]
    Analyze(AnalyzeArgs),
    /// Check suppression files the way Valgrind reads them; list every problem (exit 0 fine, 2 errors).
    Lint(LintArgs),
    /// The suppression files bundled with leakgate.
    #[command(subcommand)]
    Suppressions(SuppressionsCommand),
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Suppression files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SuppressionsCommand {
    /// List the bundled suppression files and their rules.
    List,
    /// Print a bundled suppression file (e.g. `cuda` or `cuda.supp`).
    Show {
        /// File name.
        name: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Options shared by `run` and `analyze`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A directory holding your sources (repeatable). `run` defaults to the current directory.
    #[arg(long = "src-root", value_name = "DIR")]
    pub src_roots: Vec<PathBuf>,
    /// Objects (executables, shared libraries) that are yours, as a glob on the path or file name (repeatable).
    #[arg(long = "user-object", value_name = "GLOB")]
    pub user_objects: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Full stacks and every noise finding in the text report.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// A Valgrind suppression file to apply after the run (repeatable; later files win, as in Valgrind).
    #[arg(long = "suppressions", value_name = "FILE")]
    pub suppressions: Vec<PathBuf>,
    /// Do not apply the bundled suppressions (CUDA, CPython, pybind11, libtorch, glibc).
    #[arg(long)]
    pub no_bundled_suppressions: bool,
    /// List the suppressions that matched nothing.
    #[arg(long)]
    pub show_unused_suppressions: bool,
    /// Colour in the text report (auto: only on a terminal, and never with NO_COLOR set).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub report: ReportArgs,
    /// The valgrind executable to use (default: `valgrind` on PATH).
    #[arg(long, value_name = "PATH")]
    pub valgrind: Option<PathBuf>,
    /// Stack frames to record (valgrind --num-callers).
    #[arg(long, default_value_t = 40, value_name = "N")]
    pub num_callers: u32,
    /// Leak kinds Valgrind shows (valgrind --show-leak-kinds).
    #[arg(
        long,
        default_value = "definite,indirect,possible",
        value_name = "KINDS"
    )]
    pub show_leak_kinds: String,
    /// Do not pass --track-origins=yes (faster, but uninitialised-value errors lose their origin).
    #[arg(long)]
    pub no_track_origins: bool,
    /// An extra argument for valgrind, passed through (repeatable), e.g. --valgrind-arg=--trace-children=yes.
    #[arg(long = "valgrind-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub valgrind_args: Vec<String>,
    /// Copy the raw XML files Valgrind wrote into DIR.
    #[arg(long, value_name = "DIR")]
    pub keep_xml: Option<PathBuf>,
    /// Do not fail (exit 4) when the target exits non-zero.
    #[arg(long)]
    pub ignore_target_exit: bool,
    /// The program to run and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub report: ReportArgs,
    /// Valgrind XML files (plain or .zst), or directories whose *.xml files are read.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}
