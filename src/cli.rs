//! Command-line interface (clap derive). Only argument definitions live here;
//! `commands/` turns them into a pipeline.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::run::Engine;

const EXIT_CODES: &str = "\
Exit codes:
  0  passed: no gated finding in your code, reports complete, target exited 0
  1  gate failed: a definitely/indirectly lost leak or a memory error in your code
  2  usage, configuration or input error (valgrind missing, bad flags, not a Valgrind XML file)
  3  incomplete: an XML report is truncated or missing, or Valgrind itself failed
  4  the target exited non-zero and nothing else failed (see --ignore-target-exit)
  5  internal error: leakgate's own record accounting does not add up (a bug)
When several apply: 2, then 5, then 1, then 3, then 4.
run: a crash (fatal signal) in your code is a finding (1); a process killed so
that its XML is cut off (SIGKILL, OOM) makes the report incomplete (3); a
--timeout or a Ctrl-C (forwarded to Valgrind, a second one kills) stops the
run and still reports: 3, or 1 when a gated finding was already found.";

/// What `leakgate --version` says besides the version: what it was tested
/// with (keep in step with .ci/run and tests/it/corpus.rs).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ntested with Valgrind 3.19.0 (Debian 12), 3.22.0 (Ubuntu 24.04), 3.26.0 and 3.27.1: live runs, x86-64",
    "\nreads Valgrind XML protocol 4, 5 and 6; Memcheck reports",
    "\nbundled suppressions: cuda, python, pybind11, torch, glibc (leakgate suppressions list)",
);

/// Find memory leaks and memory errors in native extensions with Valgrind Memcheck,
/// and tell yours from interpreter and runtime noise.
#[derive(Debug, Parser)]
#[command(
    name = "leakgate",
    version,
    long_version = LONG_VERSION,
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Read the project configuration from FILE (a leakgate.toml, or a pyproject.toml with [tool.leakgate]) instead of looking for one from the current directory upwards.
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Read no project configuration file: only the command line counts.
    #[arg(long, global = true)]
    pub no_config: bool,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run CMD under Valgrind Memcheck and report (leakgate run [OPTIONS] -- CMD [ARGS...]).
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Analyse Valgrind XML files produced elsewhere (files, or directories of *.xml).
    #[command(after_help = EXIT_CODES)]
    Analyze(AnalyzeArgs),
    /// Merge the JSON reports of shards (CI jobs that each ran part of a suite with `run --format json`) into one report and one verdict.
    #[command(after_help = EXIT_CODES)]
    Merge(MergeArgs),
    /// Check suppression files the way Valgrind reads them; list every problem (exit 0 fine, 2 errors).
    Lint(LintArgs),
    /// The suppression files bundled with leakgate.
    #[command(subcommand)]
    Suppressions(SuppressionsCommand),
    /// Write a suppression file for the noise in Valgrind XML (files or directories, like analyze).
    Suppress(SuppressArgs),
    /// Render a saved JSON report (from --format json) again: leakgate report JSON -o FILE.html.
    Report(ReportFileArgs),
    /// Set a project up: a starter configuration, a baseline of today's findings and a CI workflow (leakgate init [OPTIONS] -- CMD); overwrites nothing.
    #[command(after_help = INIT_HELP)]
    Init(InitArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard output.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) of leakgate or of one of its commands to standard output.
    #[command(
        after_help = "Example: leakgate man | man -l -    or    leakgate man run > leakgate-run.1"
    )]
    Man {
        /// A command (run, analyze, ...); the main page when omitted.
        command: Option<String>,
    },
}

const INIT_HELP: &str = "\
Example: leakgate init -- python -m pytest tests/
  writes leakgate.toml (or a [tool.leakgate] table at the end of ./pyproject.toml),
  runs the command once under Valgrind to write leakgate-baseline.json (the
  findings of today, which then no longer fail the gate; only new ones do),
  and writes .github/workflows/leakgate.yml, which runs the same command with
  leakgate's GitHub Action. It refuses (exit 2) when any of them exists.";

/// `init --config-in`: where the starter configuration goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigIn {
    /// pyproject.toml when the current directory has one, else leakgate.toml.
    Auto,
    /// A `[tool.leakgate]` table appended to ./pyproject.toml.
    Pyproject,
    /// ./leakgate.toml.
    Toml,
}

/// `init --workflow`: which CI workflow file to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkflowChoice {
    /// .github/workflows/leakgate.yml, with leakgate's GitHub Action.
    Github,
    /// None.
    None,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where the configuration goes.
    #[arg(long, value_enum, value_name = "WHERE", default_value = "auto")]
    pub config_in: ConfigIn,
    /// The baseline file to write.
    #[arg(long, value_name = "FILE", default_value = "leakgate-baseline.json")]
    pub baseline: PathBuf,
    /// Write no baseline (and do not run the command).
    #[arg(long)]
    pub no_baseline: bool,
    /// The CI workflow file to write.
    #[arg(long, value_enum, value_name = "CI", default_value = "github")]
    pub workflow: WorkflowChoice,
    /// `fail-on` of the configuration.
    #[arg(long, value_name = "LIST", default_value = crate::gate::policy::DEFAULT_FAIL_ON)]
    pub fail_on: String,
    /// `src-roots` of the configuration (repeatable; default: none, so the directory leakgate runs in).
    #[arg(long = "src-root", value_name = "DIR")]
    pub src_roots: Vec<PathBuf>,
    /// `suppressions` of the configuration (repeatable).
    #[arg(long = "suppressions", value_name = "FILE")]
    pub suppressions: Vec<PathBuf>,
    /// `timeout` of the configuration (e.g. 30m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// The valgrind for the baseline run (default: `valgrind` on PATH).
    #[arg(long, value_name = "PATH")]
    pub valgrind: Option<PathBuf>,
    /// The workflow runs a pytest suite as N jobs of a matrix (`leakgate run --shard K/N`, each saving its JSON report) and a last job that merges them (`leakgate merge`) into the verdict. Default 1: one job.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub shards: u32,
    /// The command that runs your tests (after `--`): run once now for the baseline, and by the workflow.
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

const COMPLETIONS_HELP: &str = "\
Install:
  bash:  leakgate completions bash > ~/.local/share/bash-completion/completions/leakgate
  zsh:   leakgate completions zsh > \"${fpath[1]}/_leakgate\"
  fish:  leakgate completions fish > ~/.config/fish/completions/leakgate.fish";

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Suppression files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The valgrind that will read the file (default: `valgrind` on PATH); its version decides which suppression kinds it reads.
    #[arg(long, value_name = "PATH")]
    pub valgrind: Option<PathBuf>,
    /// Check for this Valgrind version instead (e.g. 3.22.0), without running valgrind.
    #[arg(long, value_name = "VERSION")]
    pub valgrind_version: Option<String>,
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

/// `suppress --format`: which tool reads the written rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SuppFormat {
    /// Valgrind suppressions (`{ ... }` blocks).
    Valgrind,
    /// LeakSanitizer `leak:` lines.
    Lsan,
}

/// `--origins`: when Valgrind tracks where uninitialised values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Origins {
    /// Always (`--track-origins=yes`).
    Yes,
    /// Never.
    No,
    /// Without, then a re-run with origins of what had uninitialised-value
    /// errors in your code.
    Auto,
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
    #[arg(help_heading = "Attribution", long = "src-root", value_name = "DIR")]
    pub src_roots: Vec<PathBuf>,
    /// Objects (executables, shared libraries) that are yours, as a glob on the path or file name (repeatable).
    #[arg(
        help_heading = "Attribution",
        long = "user-object",
        value_name = "GLOB"
    )]
    pub user_objects: Vec<String>,
    /// Output format.
    #[arg(help_heading = "Report", long, value_enum, default_value = "text")]
    pub format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(help_heading = "Report", long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page to FILE (alongside --format/-o).
    #[arg(help_heading = "Report", long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Full stacks and every noise finding in the text report.
    #[arg(help_heading = "Report", long, short = 'v')]
    pub verbose: bool,
    /// A Valgrind suppression file to apply after the run (repeatable; later files win, as in Valgrind).
    #[arg(
        help_heading = "Suppressions",
        long = "suppressions",
        value_name = "FILE"
    )]
    pub suppressions: Vec<PathBuf>,
    /// Do not apply the bundled suppressions (CUDA, CPython, pybind11, libtorch, glibc).
    #[arg(help_heading = "Suppressions", long)]
    pub no_bundled_suppressions: bool,
    /// List the suppressions that matched nothing.
    #[arg(help_heading = "Suppressions", long)]
    pub show_unused_suppressions: bool,
    /// Colour in the text report (auto: only on a terminal, and never with NO_COLOR set).
    #[arg(help_heading = "Report", long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub ci: CiArgs,
}

/// Annotations for GitHub Actions (`--annotations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnnotationsChoice {
    /// Only when GITHUB_ACTIONS=true.
    Auto,
    Always,
    Never,
}

/// What fails the gate (shared by `run` and `analyze`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Gate policy")]
pub struct PolicyArgs {
    #[arg(
        long,
        help = crate::gate::policy::fail_on_help(),
        value_name = "LIST",
        default_value = crate::gate::policy::DEFAULT_FAIL_ON,
        value_parser = crate::gate::policy::parse_fail_on
    )]
    pub fail_on: crate::gate::policy::FailOn,
    /// Gated leaks fail only when their bytes in your code (direct bytes, new findings) exceed N.
    #[arg(long, value_name = "N")]
    pub max_leaked_bytes: Option<u64>,
    /// An incomplete report (truncated XML, Valgrind failed) gives exit 3 (the default).
    #[arg(long, overrides_with = "no_fail_on_incomplete")]
    pub fail_on_incomplete: bool,
    /// An incomplete report does not fail; it is noted.
    #[arg(long, overrides_with = "fail_on_incomplete")]
    pub no_fail_on_incomplete: bool,
}

/// Baselines and CI outputs (shared by `run` and `analyze`).
#[derive(Debug, Args)]
#[command(next_help_heading = "CI outputs")]
pub struct CiArgs {
    /// Fail only on user findings not in this baseline file; list the others as known, and missing ones as fixed.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write this run's user findings as a baseline file.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a SARIF 2.1.0 report to FILE (GitHub code scanning).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Write a GitLab Code Quality report to FILE.
    #[arg(long, value_name = "FILE")]
    pub codequality: Option<PathBuf>,
    /// Write a Markdown summary to FILE (also appended to $GITHUB_STEP_SUMMARY when set).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// GitHub Actions annotations (::error file=...::) on standard output (auto: when GITHUB_ACTIONS=true).
    #[arg(long, value_enum, default_value = "auto")]
    pub annotations: AnnotationsChoice,
    /// Paths in SARIF, Code Quality, annotations and baselines are relative to DIR (default: the git top level, else the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub report: ReportArgs,
    /// What watches the target: `valgrind` (Memcheck, the default and the exact reference), `lsan` (LeakSanitizer preloaded: leaks only, near native speed, nothing rebuilt) or `asan` (AddressSanitizer's runtime preloaded, for code built with -fsanitize=address: memory errors and leaks). See docs/engines.md.
    #[arg(help_heading = "Engine", long, value_enum, value_name = "ENGINE", default_value_t = Engine::Valgrind)]
    pub engine: Engine,
    /// (lsan, asan) The sanitizer runtime to preload (default: found through gcc, then clang, then the usual library directories).
    #[arg(help_heading = "Engine", long, value_name = "PATH")]
    pub sanitizer_runtime: Option<PathBuf>,
    /// The valgrind executable to use (default: `valgrind` on PATH).
    #[arg(help_heading = "Valgrind", long, value_name = "PATH")]
    pub valgrind: Option<PathBuf>,
    /// Stack frames to record (valgrind --num-callers).
    #[arg(
        help_heading = "Valgrind",
        long,
        default_value_t = 40,
        value_name = "N"
    )]
    pub num_callers: u32,
    /// Leak kinds Valgrind shows (valgrind --show-leak-kinds). Default: definite,indirect,possible; with per-test checkpoints all (still-reachable noise of the final check is then left out of the report).
    #[arg(help_heading = "Valgrind", long, value_name = "KINDS")]
    pub show_leak_kinds: Option<String>,
    /// Take a leak checkpoint after every test and report leaks per test (automatic when the target is pytest; this forces it for any target, which can then `import leakgate_probe`).
    #[arg(help_heading = "Per-test", long, overrides_with = "no_per_test")]
    pub per_test: bool,
    /// No per-test checkpoints (not even for pytest).
    #[arg(help_heading = "Per-test", long, overrides_with = "per_test")]
    pub no_per_test: bool,
    /// (pytest) Run every selected test N times in a row, a checkpoint after each, to tell per-call leaks from one-time allocations.
    #[arg(help_heading = "Per-test", long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// (pytest) Run only shard K of N (1 <= K <= N): pytest collects every test and runs the K-th of N contiguous parts, so that N CI jobs each run one and `leakgate merge` of their JSON reports gives the whole suite's verdict. See docs/time-to-verdict.md.
    #[arg(help_heading = "Per-test", long, value_name = "K/N", value_parser = crate::run::parse_shard)]
    pub shard: Option<crate::run::Shard>,
    /// (with --shard) Balance the parts by the per-test durations (`per_test.durations`) of an earlier leakgate JSON report of the same suite, e.g. the merged report of the last run; tests it does not list count as its mean.
    #[arg(
        help_heading = "Per-test",
        long,
        value_name = "REPORT.json",
        requires = "shard"
    )]
    pub shard_durations: Option<PathBuf>,
    /// Where uninitialised values come from (valgrind --track-origins=yes, about 40 % of Valgrind's time): `yes` always; `no` never (uninitialised-value errors have no origin); `auto` runs without, and when your code has uninitialised-value errors re-runs only what had them (for pytest: just those tests) with origins, and merges.
    #[arg(help_heading = "Valgrind", long, value_enum, value_name = "WHEN", default_value_t = Origins::Yes)]
    pub origins: Origins,
    /// The same as --origins no.
    #[arg(help_heading = "Valgrind", long, conflicts_with = "origins")]
    pub no_track_origins: bool,
    /// Report file descriptors left open at exit (FdNotClosed) and bad closes (FdBadClose, FdBadUse) with their stacks, attributed like leaks (valgrind --track-fds=yes; needs Valgrind 3.23 or later). Gated by `fds` (part of the default `errors`).
    #[arg(help_heading = "Valgrind", long)]
    pub track_fds: bool,
    /// An extra argument for valgrind, passed through (repeatable), e.g. --valgrind-arg=--trace-children=yes.
    #[arg(
        help_heading = "Valgrind",
        long = "valgrind-arg",
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub valgrind_args: Vec<String>,
    /// Copy the raw XML files Valgrind wrote into DIR.
    #[arg(help_heading = "Valgrind", long, value_name = "DIR")]
    pub keep_xml: Option<PathBuf>,
    /// Do not fail (exit 4) when the target exits non-zero.
    #[arg(help_heading = "Target", long)]
    pub ignore_target_exit: bool,
    /// Do not trace child processes (by default every child is run under Valgrind, one XML file per process).
    #[arg(help_heading = "Target", long)]
    pub no_trace_children: bool,
    /// Programs not to trace into (valgrind --trace-children-skip, comma-separated globs on the executable path; "" traces all). Default: compilers, linkers and build tools (gcc, cc, g++, c++, clang, cc1, cc1plus, collect2, as, ld, make, cmake, ninja, nvcc, ptxas, cicc, fatbinary, nvlink), git, uname, ldconfig, nvidia-smi, lsb_release. Shells and env are traced, so what they start is checked.
    #[arg(help_heading = "Target", long, value_name = "PATTERNS")]
    pub trace_children_skip: Option<String>,
    /// Stop the run after DURATION (90s, 10m, 1h30m): SIGTERM to Valgrind's process group, so the leak check still runs and the XML is closed; the report says it timed out (exit 3 unless a gated finding gives 1).
    #[arg(help_heading = "Target", long, value_name = "DURATION", value_parser = crate::run::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// After SIGTERM (timeout, Ctrl-C), send SIGKILL when Valgrind's processes are still running this much later.
    #[arg(help_heading = "Target", long, value_name = "DURATION", default_value = "10s", value_parser = crate::run::parse_duration)]
    pub kill_after: std::time::Duration,
    /// Show the progress line on stderr even when it is not a terminal.
    #[arg(help_heading = "Report", long, conflicts_with = "quiet")]
    pub progress: bool,
    /// No progress line.
    #[arg(help_heading = "Report", long, short = 'q')]
    pub quiet: bool,
    /// Also write a generalised suppression file for the run's noise to FILE (see `leakgate suppress`).
    #[arg(help_heading = "Suppressions", long, value_name = "FILE")]
    pub write_suppressions: Option<PathBuf>,
    /// With --write-suppressions: the kinds to cover (as `suppress --kinds`).
    #[arg(
        help_heading = "Suppressions",
        long,
        value_name = "KINDS",
        default_value = "definite,indirect,errors"
    )]
    pub write_suppressions_kinds: String,
    /// The program to run and its arguments (after `--`).
    #[arg(
        help_heading = "Arguments",
        required = true,
        last = true,
        value_name = "CMD"
    )]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub report: ReportArgs,
    /// Valgrind XML files (plain or .zst), or directories whose *.xml files are read.
    #[arg(help_heading = "Arguments", required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Where the shards were run: source roots, objects and suppressions do
    /// not apply again (each shard applied its own); the policy, baseline and
    /// outputs are the merge's.
    #[command(flatten)]
    pub report: ReportArgs,
    /// JSON reports written by `leakgate run --format json -o FILE` (two or more).
    #[arg(help_heading = "Arguments", required = true, value_name = "REPORT", num_args = 1..)]
    pub reports: Vec<PathBuf>,
}

/// Output format of `leakgate report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// html when -o names a .html/.htm file, else text.
    Auto,
    Text,
    Json,
    Html,
}

#[derive(Debug, Args)]
pub struct ReportFileArgs {
    /// A JSON report written by `--format json` (`-` for standard input).
    #[arg(value_name = "JSON")]
    pub input: PathBuf,
    /// Write the rendered report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: ReportFormat,
    /// Also write the report as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where to look for the sources the report names (repeatable), before
    /// the recorded paths and the report's own source roots.
    #[arg(long = "src-root", value_name = "DIR")]
    pub src_roots: Vec<PathBuf>,
    /// Full stacks and every noise finding in the text report.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Colour in the text report (auto: only on a terminal, and never with NO_COLOR set).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
}

/// `leakgate suppress`: generate a suppression file for the noise of a report.
#[derive(Debug, Args)]
pub struct SuppressArgs {
    /// Valgrind XML files (plain or .zst), or directories whose *.xml files are read.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Write the suppressions to FILE (default: standard output; with --merge-into, that file).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The rules' format: Valgrind suppressions, or LeakSanitizer `leak:` lines (one function each, for LSAN_OPTIONS=suppressions=FILE; leaks only).
    #[arg(long, value_enum, default_value = "valgrind")]
    pub format: SuppFormat,
    /// Record kinds to cover: definite,indirect,possible,reachable,errors (any of them) or all.
    #[arg(long, default_value = "definite,indirect,errors", value_name = "KINDS")]
    pub kinds: String,
    /// Also cover records leakgate attributes to your code (off: your findings are never suppressed).
    #[arg(long)]
    pub include_user: bool,
    /// Append to FILE only the rules for records FILE does not already suppress, keeping its content.
    #[arg(long, value_name = "FILE")]
    pub merge_into: Option<PathBuf>,
    /// A directory holding your sources (repeatable).
    #[arg(long = "src-root", value_name = "DIR")]
    pub src_roots: Vec<PathBuf>,
    /// Objects that are yours, as a glob on the path or file name (repeatable).
    #[arg(long = "user-object", value_name = "GLOB")]
    pub user_objects: Vec<String>,
    /// Existing suppression files: records they match are not covered again (repeatable).
    #[arg(long = "suppressions", value_name = "FILE")]
    pub suppressions: Vec<PathBuf>,
    /// Do not count the bundled suppressions as existing ones.
    #[arg(long)]
    pub no_bundled_suppressions: bool,
    /// The valgrind that will read the file (default: `valgrind` on PATH); its version decides which suppression kinds it reads.
    #[arg(long, value_name = "PATH")]
    pub valgrind: Option<PathBuf>,
    /// Write for this Valgrind version instead (e.g. 3.22.0), without running valgrind.
    #[arg(long, value_name = "VERSION")]
    pub valgrind_version: Option<String>,
}
