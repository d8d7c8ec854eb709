//! The command layer: one file per subcommand. Each turns its arguments
//! into a validated configuration and its list of outputs (checked before
//! Valgrind starts, [`outputs`]), drives the pipeline (run → parse →
//! analyze → gate → render) and returns the exit code ([`crate::exit`]).

mod analyze;
mod assemble;
mod config;
mod init;
mod lint;
pub mod manual;
mod merge;
mod origins;
pub mod outputs;
pub mod project;
mod report;
mod run;
mod suppress_cmd;
mod suppressions;
mod unwind;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::run as runner;

pub use suppress_cmd::RunWriter;

/// Parses the command line, runs it, and returns the process exit code. An
/// error before the gate (bad flags, input, configuration) is one line on
/// standard error and exit 2.
pub fn main() -> ExitCode {
    let (cli, matches) = parse_cli();
    let code = match dispatch(cli, &matches) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("leakgate: error: {e:#}");
            crate::exit::USAGE
        }
    };
    crate::exit::to_exit_code(code)
}

/// `Cli::parse()`, keeping the matches (which options the command line
/// gave, so that they win over the project configuration), except that
/// `--version` also says which Valgrind is on `PATH` (running
/// `valgrind --version` only then).
fn parse_cli() -> (Cli, ArgMatches) {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = Cli::command();
    if args.iter().skip(1).any(|a| a == "--version") {
        let long = format!("{}\n{}", crate::cli::LONG_VERSION, valgrind_on_path());
        cmd = cmd.long_version(&*Box::leak(long.into_boxed_str()));
    }
    let m = cmd.get_matches_from(args);
    let cli = Cli::from_arg_matches(&m).unwrap_or_else(|e| e.exit());
    (cli, m)
}

/// Parses `args` (the first is the program name) as the command line is
/// parsed, for `init`'s baseline run.
pub(crate) fn parse_args<I, T>(args: I) -> Result<(Cli, ArgMatches)>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let m = Cli::command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&m)?;
    Ok((cli, m))
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

/// The project configuration for a command that reads one: `--config`,
/// `--no-config`, or the first found from the current directory upwards.
/// With `-v`, says on standard error which file is used.
fn project_config(
    explicit: Option<&std::path::Path>,
    none: bool,
    verbose: bool,
) -> Result<Option<project::Settings>> {
    let cwd = std::env::current_dir()?;
    let found = project::resolve(explicit, none, &cwd)?;
    if verbose {
        match &found {
            Some(c) => eprintln!("leakgate: config: {}", c.describe()),
            None if none => eprintln!("leakgate: config: none (--no-config)"),
            None => eprintln!(
                "leakgate: config: none (no leakgate.toml, .leakgate.toml or pyproject.toml with [tool.leakgate] in {} or above)",
                cwd.display()
            ),
        }
    }
    Ok(found.map(|c| c.settings))
}

/// Runs a parsed command line; `m` are its matches (which options were
/// given, so that they win over the project configuration).
pub(crate) fn dispatch(cli: Cli, m: &ArgMatches) -> Result<i32> {
    let sm = m.subcommand().map(|(_, s)| s).unwrap_or(m);
    let Cli {
        command,
        config,
        no_config,
    } = cli;
    let settings = |verbose| project_config(config.as_deref(), no_config, verbose);
    match command {
        Command::Run(mut a) => {
            if let Some(s) = settings(a.report.verbose)? {
                project::apply_run(&s, sm, &mut a);
            }
            run::run(a)
        }
        Command::Analyze(mut a) => {
            if let Some(s) = settings(a.report.verbose)? {
                project::apply_analyze(&s, sm, &mut a);
            }
            analyze::analyze(a)
        }
        Command::Merge(mut a) => {
            if let Some(s) = settings(a.report.verbose)? {
                project::apply_merge(&s, sm, &mut a);
            }
            merge::merge(a)
        }
        Command::Suppress(mut a) => {
            if let Some(s) = settings(false)? {
                project::apply_suppress(&s, sm, &mut a);
            }
            suppress_cmd::suppress(a)
        }
        Command::Init(a) => init::init(a),
        Command::Lint(a) => lint::lint(a),
        Command::Suppressions(c) => suppressions::suppressions(c),
        Command::Report(a) => report::report(a),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { command } => manual::man(command.as_deref()),
    }
}
