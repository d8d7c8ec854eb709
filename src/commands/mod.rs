//! The command layer: one file per subcommand. Each turns its arguments
//! into a validated configuration and its list of outputs (checked before
//! Valgrind starts, [`outputs`]), drives the pipeline (run → parse →
//! analyze → gate → render) and returns the exit code ([`crate::exit`]).

mod analyze;
mod assemble;
mod config;
mod lint;
pub mod manual;
mod merge;
mod origins;
pub mod outputs;
mod report;
mod run;
mod suppress_cmd;
mod suppressions;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::cli::{Cli, Command};
use crate::run as runner;

pub use suppress_cmd::RunWriter;

/// Parses the command line, runs it, and returns the process exit code. An
/// error before the gate (bad flags, input, configuration) is one line on
/// standard error and exit 2.
pub fn main() -> ExitCode {
    let cli = parse_cli();
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("leakgate: error: {e:#}");
            crate::exit::USAGE
        }
    };
    crate::exit::to_exit_code(code)
}

/// `Cli::parse()`, except that `--version` also says which Valgrind is on
/// `PATH` (running `valgrind --version` only then).
fn parse_cli() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if !args.iter().skip(1).any(|a| a == "--version") {
        return Cli::parse();
    }
    let long = format!("{}\n{}", crate::cli::LONG_VERSION, valgrind_on_path());
    let cmd = Cli::command().long_version(&*Box::leak(long.into_boxed_str()));
    let m = cmd.get_matches_from(args);
    Cli::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
}

/// `valgrind on PATH: /usr/bin/valgrind (3.19.0, tested)`.
fn valgrind_on_path() -> String {
    let Ok(path) = runner::find_valgrind(None) else {
        return "valgrind on PATH: none (leakgate run needs it; --valgrind PATH picks another)"
            .into();
    };
    let version = runner::valgrind_version(&path);
    let tested = version
        .as_deref()
        .and_then(crate::versions::VgVersion::parse)
        .map(|v| {
            if crate::versions::is_tested(v) {
                "tested"
            } else {
                "not a tested version"
            }
        })
        .unwrap_or("version unknown");
    format!(
        "valgrind on PATH: {} ({}, {tested})",
        path.display(),
        version.as_deref().unwrap_or("?")
    )
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Analyze(a) => analyze::analyze(a),
        Command::Merge(a) => merge::merge(a),
        Command::Lint(a) => lint::lint(a),
        Command::Suppressions(c) => suppressions::suppressions(c),
        Command::Suppress(a) => suppress_cmd::suppress(a),
        Command::Report(a) => report::report(a),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { command } => manual::man(command.as_deref()),
    }
}
