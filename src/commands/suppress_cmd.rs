//! `leakgate suppress` and `run --write-suppressions`: suppression files
//! for the noise, from the generator in [`crate::generate`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use crate::analyze::Observer;
use crate::analyze::attribute::{Attributor, UserSpec};
use crate::cli::SuppressArgs;
use crate::generate::{
    GenOptions, Generated, Generator, KindFilter, LsanGenerator, header, render, render_lsan,
    summary_line,
};
use crate::suppress::Suppressor;
use crate::versions::VgVersion;

/// The command line this process was started with, for file headers.
fn invocation() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("leakgate {}", crate::util::shell_join(&args))
}

/// Writes `text` to `path`, or standard output when `path` is `None`.
fn write_out(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            super::outputs::print_stdout(text.as_bytes()).context("cannot write the suppressions")
        }
    }
}

fn print_result(g: &Generated, dest: &str) {
    eprintln!("{}", summary_line(g, dest));
    for w in &g.warnings {
        eprintln!("leakgate: warning: {w}");
    }
    for n in &g.notes {
        eprintln!("leakgate: note: {n}");
    }
}

/// Analyses `files` for a generator's observer; the accounting problem, if
/// records were not conserved.
fn observe(
    files: &[PathBuf],
    spec: UserSpec,
    suppressor: Arc<Suppressor>,
    obs: crate::analyze::Observer,
) -> anyhow::Result<Option<String>> {
    let analysis = crate::analyze::analyze_files_observed(
        files,
        Attributor::new(spec),
        suppressor,
        &HashMap::new(),
        Some(obs),
    )?;
    Ok(crate::analyze::check_conservation(&analysis))
}

/// `leakgate suppress PATH... [-o FILE] [--merge-into FILE]`.
pub(super) fn suppress(a: SuppressArgs) -> anyhow::Result<i32> {
    let kinds = KindFilter::parse(&a.kinds).map_err(|e| anyhow::anyhow!("--kinds: {e}"))?;
    // What is the user's is decided exactly as `run` decides it from the
    // same directory: the current directory is the source root by default.
    let spec = super::config::user_spec_of(&a.src_roots, &a.user_objects)?;
    let mut existing = a.suppressions.clone();
    let merge_text = match &a.merge_into {
        Some(m) if m.exists() => Some(
            std::fs::read_to_string(m).with_context(|| format!("cannot read {}", m.display()))?,
        ),
        Some(_) => Some(String::new()),
        None => None,
    };
    if a.format == crate::cli::SuppFormat::Lsan {
        return suppress_lsan(&a, kinds, spec, merge_text);
    }
    // An existing `--merge-into` file's rules count as existing ones.
    if let Some(m) = a.merge_into.as_ref().filter(|m| m.exists()) {
        existing.push(m.clone());
    }
    let supps = crate::suppress::load::load(&existing, !a.no_bundled_suppressions)?;
    let taken: HashSet<String> = supps.iter().map(|s| s.name.clone()).collect();
    let suppressor = Arc::new(Suppressor::new(supps));
    let files = crate::analyze::collect_inputs(&a.paths)?;
    let (target, _) =
        super::config::target_valgrind(a.valgrind.as_deref(), a.valgrind_version.as_deref())?;
    let (g, obs) = Generator::shared(GenOptions {
        kinds,
        include_user: a.include_user,
        target: Some(target),
    });
    let accounting = observe(&files, spec, suppressor, obs)?;
    let generated = Generator::unshare(g).finish(&taken);
    let head = header(&generated, &invocation(), &kinds);
    let (text, dest) = match (&merge_text, &a.merge_into) {
        (Some(old), Some(m)) => {
            let mut t = old.clone();
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            if !generated.rules.is_empty() {
                if !t.is_empty() {
                    t.push('\n');
                }
                t.push_str(&render(&generated, &head));
            }
            (t, Some(a.output.clone().unwrap_or_else(|| m.clone())))
        }
        _ => (render(&generated, &head), a.output.clone()),
    };
    write_out(dest.as_deref(), &text)?;
    print_result(
        &generated,
        &dest.map_or("standard output".into(), |d| d.display().to_string()),
    );
    if let Some(what) = accounting {
        eprintln!("leakgate: internal error: {what}; please report this bug");
        return Ok(crate::exit::INTERNAL);
    }
    Ok(0)
}

/// `leakgate suppress --format lsan`: LeakSanitizer `leak:` rules; with
/// `--merge-into FILE`, only the lines FILE does not have yet are appended.
fn suppress_lsan(
    a: &SuppressArgs,
    kinds: KindFilter,
    spec: UserSpec,
    merge_text: Option<String>,
) -> anyhow::Result<i32> {
    // A `--merge-into` file is LeakSanitizer's, not Valgrind's: not loaded.
    let supps = crate::suppress::load::load(&a.suppressions, !a.no_bundled_suppressions)?;
    let suppressor = Arc::new(Suppressor::new(supps));
    let files = crate::analyze::collect_inputs(&a.paths)?;
    let (g, obs) = LsanGenerator::shared(kinds);
    let accounting = observe(&files, spec, suppressor, obs)?;
    let mut generated = LsanGenerator::unshare(g).finish();
    let (text, dest) = match (&merge_text, &a.merge_into) {
        (Some(old), Some(m)) => {
            let have: HashSet<&str> = old.lines().map(str::trim).collect();
            generated
                .rules
                .retain(|r| !have.contains(format!("leak:{}", r.0).as_str()));
            let mut t = old.clone();
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            if !generated.rules.is_empty() {
                t.push_str(&render_lsan(&generated, &invocation()));
            }
            (t, Some(a.output.clone().unwrap_or_else(|| m.clone())))
        }
        _ => (render_lsan(&generated, &invocation()), a.output.clone()),
    };
    write_out(dest.as_deref(), &text)?;
    eprintln!(
        "leakgate: wrote {} LeakSanitizer rules for {} noise leak records to {}",
        generated.rules.len(),
        generated.records,
        dest.map_or("standard output".into(), |d| d.display().to_string())
    );
    for n in &generated.notes {
        eprintln!("leakgate: note: {n}");
    }
    if let Some(what) = accounting {
        eprintln!("leakgate: internal error: {what}; please report this bug");
        return Ok(crate::exit::INTERNAL);
    }
    Ok(0)
}

/// `run --write-suppressions FILE`: the generator that watches the run's
/// analysis, and the file it writes afterwards. The generator is made once,
/// for the Valgrind that ran ([`RunWriter::set_target`]).
pub struct RunWriter {
    shared: Option<(Arc<Mutex<Generator>>, Observer)>,
    path: PathBuf,
    kinds: KindFilter,
    taken: HashSet<String>,
}

impl RunWriter {
    /// `None` when no file was asked for; an error for bad `kinds` or a
    /// file that cannot be written (checked before the run).
    pub fn new(
        path: Option<&Path>,
        kinds: &str,
        suppressor: &Suppressor,
    ) -> anyhow::Result<Option<RunWriter>> {
        let Some(path) = path else { return Ok(None) };
        let kinds = KindFilter::parse(kinds)
            .map_err(|e| anyhow::anyhow!("--write-suppressions-kinds: {e}"))?;
        super::outputs::check_writable(path)?;
        Ok(Some(RunWriter {
            shared: None,
            path: path.to_path_buf(),
            kinds,
            taken: suppressor
                .suppressions()
                .iter()
                .map(|s| s.name.clone())
                .collect(),
        }))
    }

    /// Writes for the Valgrind that ran (its `--version`; the oldest rules
    /// when unknown). Call before the analysis starts.
    pub fn set_target(&mut self, version: Option<&str>) {
        self.shared = Some(Generator::shared(GenOptions {
            kinds: self.kinds,
            include_user: false,
            target: version.and_then(VgVersion::parse),
        }));
    }

    /// The hook to give the analysis.
    pub fn observer(&mut self) -> Observer {
        if self.shared.is_none() {
            self.set_target(None);
        }
        self.shared
            .as_ref()
            .map(|(_, o)| o.clone())
            .expect("set above")
    }

    /// Writes the file (after the analysis).
    pub fn write(self) -> anyhow::Result<()> {
        let generated = match self.shared {
            Some((generator, observer)) => {
                drop(observer);
                Generator::unshare(generator).finish(&self.taken)
            }
            None => Default::default(),
        };
        let head = header(&generated, &invocation(), &self.kinds);
        write_out(Some(&self.path), &render(&generated, &head))?;
        print_result(&generated, &self.path.display().to_string());
        Ok(())
    }
}
