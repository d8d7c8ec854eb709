//! The configuration every command validates before it starts: source
//! roots and user objects, the suppression files, the Valgrind a
//! suppression file is for.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::analyze::attribute::UserSpec;
use crate::cli::ReportArgs;
use crate::run as runner;
use crate::suppress::{self, Suppressor};

pub(super) fn load_suppressions(args: &ReportArgs) -> Result<Arc<Suppressor>> {
    let supps = suppress::load::load(&args.suppressions, !args.no_bundled_suppressions)?;
    Ok(Arc::new(Suppressor::new(supps)))
}

/// The Valgrind a suppression file is for: `--valgrind-version`, else the
/// version of `--valgrind PATH`, else of `valgrind` on PATH; 3.19.0 (the
/// oldest supported) when there is none. Also says where it came from.
pub(super) fn target_valgrind(
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

pub(super) fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(r)
                .with_context(|| format!("--src-root {}: no such directory", r.display()))
        })
        .collect()
}

pub(super) fn user_spec(args: &ReportArgs, default_root: Option<PathBuf>) -> Result<UserSpec> {
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
