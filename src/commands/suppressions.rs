//! `leakgate suppressions`: the bundled suppression files.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};

use super::outputs::print_stdout;

use crate::cli::SuppressionsCommand;
use crate::suppress;

/// `leakgate suppressions list|show NAME`.
pub(super) fn suppressions(c: SuppressionsCommand) -> Result<i32> {
    match c {
        SuppressionsCommand::List => {
            let mut out = String::new();
            for (name, text) in suppress::bundled::BUNDLED {
                let p = suppress::parse_detailed(name, text, "Memcheck", 500);
                let _ = writeln!(out, "{name} ({} rules)", p.suppressions.len());
                for s in &p.suppressions {
                    let _ = writeln!(out, "  {}  [{}:{}]", s.name, s.tools, s.kind_name);
                }
            }
            print_stdout(out.as_bytes()).context("cannot write to standard output")?;
            Ok(crate::exit::PASS)
        }
        SuppressionsCommand::Show { name } => match suppress::bundled::get(&name) {
            Some(text) => {
                print_stdout(text.as_bytes()).context("cannot write to standard output")?;
                Ok(crate::exit::PASS)
            }
            None => {
                let names: Vec<&str> = suppress::bundled::BUNDLED.iter().map(|(n, _)| *n).collect();
                bail!(
                    "no bundled suppression file {name:?} (there are: {})",
                    names.join(", ")
                )
            }
        },
    }
}
