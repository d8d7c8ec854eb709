//! Every output of `run` and `analyze`, and the policy and baseline they are
//! judged with: the report itself (`-o FILE` or standard output, text or
//! JSON), `--html`, the CI files (`--junit`, `--sarif`, `--codequality`,
//! `--markdown`, `--write-baseline`), `$GITHUB_STEP_SUMMARY` and GitHub
//! annotations.
//!
//! [`Outputs::prepare`] runs before Valgrind does, so that a missing
//! baseline, an unknown `--repo-root` or an output file in a missing or
//! unwritable directory is a usage error (exit 2) and not a wasted run.
//! [`Outputs::write`] runs after the gate: a file that cannot be written
//! then is named on standard error, the other outputs are still written,
//! and the exit code stays the one the verdict earned.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cli::{AnnotationsChoice, ColorChoice, Format, ReportArgs};
use crate::gate::baseline::Baseline;
use crate::gate::{self, Policy};
use crate::render;
use crate::render::ci::CiContext;
use crate::report::{BaselineOut, Finding, Report};

/// The gate policy the command line asks for.
pub fn policy(args: &ReportArgs, fail_on_target_exit: bool) -> Policy {
    Policy {
        fail_on_target_exit,
        fail_on: args.policy.fail_on.clone(),
        max_leaked_bytes: args.policy.max_leaked_bytes,
        fail_on_incomplete: !args.policy.no_fail_on_incomplete,
    }
}

/// Every output the command line asks for, checked before the run.
#[derive(Debug)]
pub struct Outputs {
    policy: Policy,
    baseline: Option<(PathBuf, Baseline)>,
    repo_root: RepoRoot,
    write_baseline: Option<PathBuf>,
    outputs: Vec<(Output, PathBuf)>,
    annotations: bool,
    step_summary: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Junit,
    Sarif,
    CodeQuality,
    Markdown,
}

impl Outputs {
    /// Loads the baseline, resolves the repository root and checks that
    /// every output file can be created (`-o`, `--html` and the CI files).
    pub fn prepare(args: &ReportArgs, policy: Policy) -> Result<Outputs> {
        let c = &args.ci;
        let baseline = match &c.baseline {
            Some(p) => Some((p.clone(), Baseline::load(p)?)),
            None => None,
        };
        let repo_root = match &c.repo_root {
            Some(d) => RepoRoot::known(
                std::fs::canonicalize(d)
                    .with_context(|| format!("--repo-root {}: no such directory", d.display()))?,
            ),
            None => RepoRoot::from_git()?,
        };
        let mut outputs = Vec::new();
        for (kind, path) in [
            (Output::Junit, &c.junit),
            (Output::Sarif, &c.sarif),
            (Output::CodeQuality, &c.codequality),
            (Output::Markdown, &c.markdown),
        ] {
            if let Some(p) = path {
                check_writable(p)?;
                outputs.push((kind, p.clone()));
            }
        }
        if let Some(p) = &c.write_baseline {
            check_writable(p)?;
        }
        let annotations = match c.annotations {
            AnnotationsChoice::Always => true,
            AnnotationsChoice::Never => false,
            AnnotationsChoice::Auto => std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
        };
        let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(p) = &args.output {
            check_writable(p)?;
        }
        if let Some(p) = &args.html {
            check_writable(p)?;
        }
        Ok(Outputs {
            policy,
            baseline,
            repo_root,
            write_baseline: c.write_baseline.clone(),
            outputs,
            annotations,
            step_summary,
        })
    }

    /// The policy the verdict is decided with.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Marks the findings against the baseline (`new`/`known`) and the
    /// policy (`gated`). Call before the verdict.
    pub fn classify(&self, findings: &mut [Finding]) -> Option<BaselineOut> {
        let out = self
            .baseline
            .as_ref()
            .map(|(p, b)| b.apply(findings, &p.display().to_string()));
        gate::mark(&self.policy, findings);
        out
    }

    /// Adds the policy, the baseline comparison and the policy's notes to
    /// the report. `problems` are the incompleteness reasons found outside
    /// the XML (as given to the verdict).
    pub fn finish(&self, report: &mut Report, baseline: Option<BaselineOut>, problems: &[String]) {
        report.policy = Some(self.policy.describe());
        let notes = gate::notes(&self.policy, &report.findings, &report.processes, problems);
        report.notes.extend(notes);
        if let Some(b) = &baseline {
            for e in &b.fixed {
                report
                    .notes
                    .push(format!("fixed since the baseline: {}", e.description));
            }
            if report.processes.iter().any(|p| !p.complete) || !problems.is_empty() {
                report.notes.push(
                    "the report is incomplete: findings listed as fixed may only be missing".into(),
                );
            }
        }
        report.baseline = baseline;
    }

    /// Writes every output: the report (`-o` or standard output), `--html`,
    /// the baseline, the CI files, the step summary and the annotations.
    /// A failure is said on standard error, naming the file, and the rest
    /// are still written; returns how many failed.
    pub fn write(&self, report: &Report, args: &ReportArgs) -> usize {
        let mut failed = 0;
        let mut fail = |what: String| {
            eprintln!("leakgate: error: {what}");
            failed += 1;
        };
        if let Some(path) = &args.html {
            let page = render::html::render(report, &render::html::HtmlOptions::default());
            if let Err(e) = std::fs::write(path, page) {
                fail(format!("cannot write {}: {e}", path.display()));
            }
        }
        let text = match args.format {
            Format::Text => render::text::render(
                report,
                render::text::TextOptions {
                    color: use_color(args.color, args.output.is_none()),
                    verbose: args.verbose,
                },
            ),
            Format::Json => render::json::render(report),
        };
        if let Err(e) = write_or_print(args.output.as_deref(), &text) {
            fail(e);
        }
        let repo_root = self.repo_root.get();
        let ctx = CiContext::new(Some(repo_root));
        if let Some(p) = &self.write_baseline
            && let Err(e) = Baseline::from_report(report, Some(repo_root)).write(p)
        {
            fail(format!("{e:#}"));
        }
        for (kind, path) in &self.outputs {
            let text = match kind {
                Output::Junit => render::junit::render(report, &ctx),
                Output::Sarif => render::sarif::render(report, &ctx),
                Output::CodeQuality => render::codequality::render(report, &ctx),
                Output::Markdown => render::markdown::render(report, &ctx),
            };
            if let Err(e) = std::fs::write(path, text) {
                fail(format!("cannot write {}: {e}", path.display()));
            }
        }
        if let Some(p) = &self.step_summary {
            let md = render::markdown::render(report, &ctx);
            let res = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .and_then(|mut f| f.write_all(md.as_bytes()));
            if let Err(e) = res {
                eprintln!(
                    "leakgate: warning: cannot append to GITHUB_STEP_SUMMARY {}: {e}",
                    p.display()
                );
            }
        }
        if self.annotations {
            let text = render::annotations::render(report, &ctx);
            // Keep a JSON report on standard output parseable.
            if args.format == Format::Json && args.output.is_none() {
                eprint!("{text}");
            } else {
                let _ = print_stdout(text.as_bytes());
            }
        }
        failed
    }
}

/// Whether text output gets colours: `--color`, else when standard output
/// is a terminal (and the report goes there) and `NO_COLOR` is unset.
pub fn use_color(choice: ColorChoice, to_stdout: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            to_stdout
                && std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

/// Writes `text` to `path`, or to standard output when there is none (a
/// closed pipe is not an error: `leakgate ... | head`).
pub fn write_or_print(path: Option<&Path>, text: &str) -> std::result::Result<(), String> {
    match path {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
        }
        None => print_stdout(text.as_bytes()).map_err(|e| format!("cannot write the report: {e}")),
    }
}

/// Writes `bytes` to standard output and flushes it. A closed pipe
/// (`leakgate suppressions list | head`: EPIPE, since Rust ignores SIGPIPE)
/// is not an error: the rest of the output is dropped and the command ends
/// with its own exit code, as ripgrep does. Every command's standard output
/// goes through here: `print!`/`println!` panic on a closed pipe, and the
/// `clippy::print_stdout` lint (denied in `lib.rs`) keeps them out.
pub fn print_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// The repository root the CI outputs name paths from: `--repo-root`, or
/// the git top level of the current directory, else that directory.
/// `git rev-parse` (about 20 ms) runs on a thread of its own, beside the
/// run, and is waited for where the outputs are written.
#[derive(Debug)]
struct RepoRoot {
    path: std::sync::OnceLock<PathBuf>,
    git: std::sync::Mutex<Option<std::thread::JoinHandle<Option<PathBuf>>>>,
    cwd: PathBuf,
}

impl RepoRoot {
    fn known(p: PathBuf) -> RepoRoot {
        RepoRoot {
            path: p.clone().into(),
            git: std::sync::Mutex::new(None),
            cwd: p,
        }
    }

    fn from_git() -> Result<RepoRoot> {
        let cwd = std::env::current_dir().context("no current directory")?;
        let git = std::thread::spawn(git_toplevel);
        Ok(RepoRoot {
            path: std::sync::OnceLock::new(),
            git: std::sync::Mutex::new(Some(git)),
            cwd: std::fs::canonicalize(&cwd).unwrap_or(cwd),
        })
    }

    fn get(&self) -> &Path {
        self.path.get_or_init(|| {
            let git = self.git.lock().ok().and_then(|mut g| g.take());
            git.and_then(|h| h.join().ok().flatten())
                .unwrap_or_else(|| self.cwd.clone())
        })
    }
}

/// `git rev-parse --show-toplevel` in the current directory, canonical.
fn git_toplevel() -> Option<PathBuf> {
    let out = Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let top = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if top.is_empty() {
        return None;
    }
    std::fs::canonicalize(&top).ok()
}

/// An output file's directory must exist and take a new file (checked by
/// creating and removing a temporary file there), and the file must not be
/// a directory.
pub fn check_writable(p: &Path) -> Result<()> {
    if p.is_dir() {
        bail!("{}: is a directory", p.display());
    }
    let dir = match p.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) if !d.is_dir() => bail!("{}: no such directory {}", p.display(), d.display()),
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    if let Err(e) = tempfile::Builder::new()
        .prefix(".leakgate-check")
        .tempfile_in(&dir)
    {
        bail!("{}: cannot write in {}: {e}", p.display(), dir.display());
    }
    Ok(())
}
