//! `leakgate completions SHELL` and `leakgate man [COMMAND]`: shell completion
//! scripts and roff manual pages, generated from the clap definitions in
//! `cli.rs`, so they cannot drift from the real options.

use anyhow::{Context, Result, bail};
use clap::CommandFactory;

use super::outputs::print_stdout;
use crate::cli::Cli;

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) -> Result<i32> {
    let mut cmd = Cli::command();
    // Into memory first: clap_complete panics when its writer fails.
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "leakgate", &mut buf);
    print_stdout(&buf).context("cannot write to standard output")?;
    Ok(0)
}

/// Writes the manual page of leakgate, or of one of its commands
/// (`leakgate-run(1)`, ...), to standard output.
pub fn man(command: Option<&str>) -> Result<i32> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = match command {
        None => cmd,
        Some(name) => {
            let Some(sub) = cmd.find_subcommand(name) else {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|s| s.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                bail!("no command '{name}' (commands: {})", names.join(", "));
            };
            // The process ends right after: leaking the name is fine.
            let full: &'static str = format!("leakgate-{}", sub.get_name()).leak();
            sub.clone().name(full).bin_name(full)
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .context("cannot render the manual page")?;
    print_stdout(&buf).context("cannot write to standard output")?;
    Ok(0)
}
