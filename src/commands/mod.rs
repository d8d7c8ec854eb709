//! The command layer: one file per subcommand. Each turns its arguments
//! into a validated configuration and its list of outputs (checked before
//! Valgrind starts, [`outputs`]), drives the pipeline (run → parse →
//! analyze → gate → render) and returns the exit code ([`crate::exit`]).

mod analyze;
mod assemble;
mod lint;
pub mod manual;
pub mod outputs;
mod report;
mod run;
mod suppress_cmd;
mod suppressions;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;

use crate::analyze::attribute::UserSpec;
use crate::cli::{Cli, Command, ReportArgs};
use crate::run as runner;
use crate::suppress::{self, Suppressor};

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
        Command::Lint(a) => lint::lint(a),
        Command::Suppressions(c) => suppressions::suppressions(c),
        Command::Suppress(a) => suppress_cmd::suppress(a),
        Command::Report(a) => report::report(a),
        Command::Completions { shell } => manual::completions(shell),
        Command::Man { command } => manual::man(command.as_deref()),
    }
}

pub(crate) fn load_suppressions(args: &ReportArgs) -> Result<Arc<Suppressor>> {
    let supps = suppress::load::load(&args.suppressions, !args.no_bundled_suppressions)?;
    Ok(Arc::new(Suppressor::new(supps)))
}

/// The Valgrind a suppression file is for: `--valgrind-version`, else the
/// version of `--valgrind PATH`, else of `valgrind` on PATH; 3.19.0 (the
/// oldest supported) when there is none. Also says where it came from.
pub fn target_valgrind(
    path: Option<&std::path::Path>,
    version: Option<&str>,
) -> Result<(crate::versions::VgVersion, String)> {
    use crate::versions::VgVersion;
    if let Some(v) = version {
        let parsed = VgVersion::parse(v).with_context(|| {
            format!("--valgrind-version {v:?}: expected a version such as 3.22.0")
        })?;
        return Ok((parsed, "--valgrind-version".into()));
    }
    let found = match path {
        Some(p) => Some(runner::find_valgrind(Some(p))?),
        None => runner::find_valgrind(None).ok(),
    };
    let Some(vg) = found else {
        return Ok((
            VgVersion::new(3, 19, 0),
            "no valgrind on PATH: the oldest supported".into(),
        ));
    };
    let v = runner::valgrind_version(&vg)
        .as_deref()
        .and_then(VgVersion::parse)
        .with_context(|| {
            format!(
                "{}: cannot tell its version (valgrind --version)",
                vg.display()
            )
        })?;
    Ok((v, vg.display().to_string()))
}

pub(crate) fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(r)
                .with_context(|| format!("--src-root {}: no such directory", r.display()))
        })
        .collect()
}

pub(crate) fn user_spec(args: &ReportArgs, default_root: Option<PathBuf>) -> Result<UserSpec> {
    let mut roots = canonical_roots(&args.src_roots)?;
    if roots.is_empty()
        && let Some(d) = default_root
    {
        roots = canonical_roots(&[d])?;
    }
    Ok(UserSpec {
        roots,
        user_objects: args.user_objects.clone(),
    })
}
