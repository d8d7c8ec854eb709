//! `leakgate suppressions`: the bundled suppression files.

use anyhow::{Result, bail};

use crate::cli::SuppressionsCommand;
use crate::suppress;

/// `leakgate suppressions list|show NAME`.
pub(super) fn suppressions(c: SuppressionsCommand) -> Result<i32> {
    match c {
        SuppressionsCommand::List => {
            for (name, text) in suppress::bundled::BUNDLED {
                let p = suppress::parse_detailed(name, text, "Memcheck", 500);
                println!("{name} ({} rules)", p.suppressions.len());
                for s in &p.suppressions {
                    println!("  {}  [{}:{}]", s.name, s.tools, s.kind_name);
                }
            }
            Ok(crate::exit::PASS)
        }
        SuppressionsCommand::Show { name } => match suppress::bundled::get(&name) {
            Some(text) => {
                print!("{text}");
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
