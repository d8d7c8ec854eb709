//! Wires the command line to the pipeline: run → parse → attribute →
//! (suppress) → gate → render, and maps failures to exit codes.

pub mod manual;
pub mod outputs;

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Parser;

use crate::analyze::attribute::{Attributor, UserSpec};
use crate::analyze::{self, Analysis};
use crate::cli::{
    AnalyzeArgs, Cli, ColorChoice, Command, Format, LintArgs, ReportArgs, RunArgs,
    SuppressionsCommand,
};
use crate::commands::outputs::Ci;
use crate::gate::{self, Policy};
use crate::model::ExitStatus;
use crate::render;
use crate::report::{Report, SCHEMA_VERSION, ToolInfo, ValgrindInfo};
use crate::run::{self, RunConfig};
use crate::suppress::{self, Suppressor};
use std::sync::Arc;

/// Parses the command line, runs it, and returns the process exit code.
pub fn main_exit() -> i32 {
    let cli = parse_cli();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("leakgate: error: {e:#}");
            crate::exit::USAGE
        }
    }
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
    let Ok(path) = run::find_valgrind(None) else {
        return "valgrind on PATH: none (leakgate run needs it; --valgrind PATH picks another)"
            .into();
    };
    let version = run::valgrind_version(&path);
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
        Command::Run(a) => cmd_run(a),
        Command::Analyze(a) => cmd_analyze(a),
        Command::Lint(a) => cmd_lint(a),
        Command::Suppressions(c) => cmd_suppressions(c),
        Command::Suppress(a) => crate::suppress::generate::cmd_suppress(a),
        Command::Report(a) => cmd_report(a),
        Command::Completions { shell } => crate::commands::manual::completions(shell),
        Command::Man { command } => crate::commands::manual::man(command.as_deref()),
    }
}

fn load_suppressions(args: &ReportArgs) -> Result<Arc<Suppressor>> {
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
        Some(p) => Some(run::find_valgrind(Some(p))?),
        None => run::find_valgrind(None).ok(),
    };
    let Some(vg) = found else {
        return Ok((
            VgVersion::new(3, 19, 0),
            "no valgrind on PATH: the oldest supported".into(),
        ));
    };
    let v = run::valgrind_version(&vg)
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

fn cmd_lint(a: LintArgs) -> Result<i32> {
    let (target, from) = target_valgrind(a.valgrind.as_deref(), a.valgrind_version.as_deref())?;
    let mut bad = false;
    for f in &a.files {
        match suppress::load::parse_file(f) {
            Err(e) => {
                println!("{e}");
                bad = true;
            }
            Ok(p) => {
                for e in &p.errors {
                    println!("{e}");
                }
                let mut rejected = 0;
                for s in &p.suppressions {
                    for w in &s.warnings {
                        // The parser's version remark is replaced by the
                        // target-aware line below.
                        if w.starts_with("kind ") && w.contains("needs Valgrind") {
                            continue;
                        }
                        println!("{}:{}: warning: {}: {w}", s.file, s.line, s.name);
                    }
                    let Some(range) = s.kind.accepted_range() else {
                        continue;
                    };
                    if s.kind.accepted_by(target) {
                        println!(
                            "{}:{}: note: {}: kind {} is read by {range}; Valgrind {target} reads it",
                            s.file, s.line, s.name, s.kind_name
                        );
                    } else {
                        rejected += 1;
                        println!(
                            "{}:{}: {}: kind {} is read by {range}; Valgrind {target} rejects this file",
                            s.file, s.line, s.name, s.kind_name
                        );
                    }
                }
                for s in p.suppressions.iter().filter(|s| s.tool == "CoreError") {
                    println!(
                        "{}:{}: note: {}: CoreError:{} is read by Valgrind 3.23 and later, with --track-fds (older ones skip it){}",
                        s.file,
                        s.line,
                        s.name,
                        s.kind_name,
                        if target.at_least(3, 23) {
                            ""
                        } else {
                            "; the target skips it"
                        }
                    );
                }
                if p.errors.is_empty() && rejected == 0 {
                    println!(
                        "{}: ok for Valgrind {target} ({from}) ({} Memcheck suppressions, {} for other tools)",
                        f.display(),
                        p.suppressions.len(),
                        p.skipped.len()
                    );
                } else {
                    bad = true;
                }
            }
        }
    }
    Ok(if bad {
        crate::exit::USAGE
    } else {
        crate::exit::PASS
    })
}

fn cmd_suppressions(c: SuppressionsCommand) -> Result<i32> {
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

fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(r)
                .with_context(|| format!("--src-root {}: no such directory", r.display()))
        })
        .collect()
}

fn user_spec(args: &ReportArgs, default_root: Option<PathBuf>) -> Result<UserSpec> {
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

fn cmd_run(a: RunArgs) -> Result<i32> {
    let spec = user_spec(&a.report, Some(std::env::current_dir()?))?;
    let ci = Ci::prepare(
        &a.report,
        crate::commands::outputs::policy(&a.report, !a.ignore_target_exit),
    )?;
    let suppressor = load_suppressions(&a.report)?;
    let mut gen_supp = crate::suppress::generate::RunWriter::new(
        a.write_suppressions.as_deref(),
        &a.write_suppressions_kinds,
        &suppressor,
    )?;
    if let Some(dir) = &a.keep_xml {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--keep-xml {}: cannot create directory", dir.display()))?;
    }
    let per_test = if a.no_per_test {
        run::PerTest::Off
    } else if a.per_test {
        run::PerTest::On
    } else {
        run::PerTest::Auto
    };
    if a.repeat == 0 {
        bail!("--repeat 0: a test must run at least once");
    }
    let cfg = RunConfig {
        valgrind: a.valgrind.clone(),
        num_callers: a.num_callers,
        show_leak_kinds: a.show_leak_kinds.clone(),
        per_test,
        repeat: a.repeat,
        track_origins: !a.no_track_origins,
        track_fds: a.track_fds,
        extra_args: a.valgrind_args.clone(),
        cmd: a.cmd.clone(),
        trace_children: !a.no_trace_children,
        trace_children_skip: a.trace_children_skip.clone(),
        timeout: a.timeout,
        kill_after: a.kill_after,
        progress: if a.quiet {
            run::ProgressMode::Never
        } else if a.progress {
            run::ProgressMode::Always
        } else {
            run::ProgressMode::Auto
        },
        ..RunConfig::new(a.cmd.clone())
    };
    let mut out = run::run(&cfg)?;
    if let Some(g) = &mut gen_supp {
        g.set_target(out.valgrind_version.as_deref());
    }
    out.analysing();
    let mut notes = Vec::new();
    if let Some(dir) = &a.keep_xml {
        for f in &out.xml_files {
            let dest = dir.join(f.file_name().unwrap_or_default());
            std::fs::copy(f, &dest)
                .with_context(|| format!("cannot copy {} to {}", f.display(), dest.display()))?;
        }
        notes.push(format!("raw XML kept in {}", dir.display()));
    }
    if let Some(v) = out
        .valgrind_version
        .as_deref()
        .and_then(crate::versions::VgVersion::parse)
        .filter(|v| !crate::versions::is_tested(*v))
    {
        notes.push(format!(
            "Valgrind {v} is not a version leakgate is tested with ({}); its XML is read the same way, report anything that looks wrong",
            crate::versions::tested_list()
        ));
    }
    if out.added_reachable {
        notes.push(
            "per-test checkpoints: Valgrind ran with --show-leak-kinds=all to follow blocks that are reachable at one checkpoint and lost at a later one; still-reachable noise of the final leak check is left out".into(),
        );
    }
    let mut problems = Vec::new();
    if out.xml_files.is_empty() {
        problems
            .push("Valgrind wrote no XML report (it failed to start or was killed)".to_string());
    }
    let mut exits: HashMap<u64, ExitStatus> = out.exits.clone();
    exits.insert(u64::from(out.pid), out.exit.clone());
    let mut analysis = analyze::analyze_files_with(
        &out.xml_files,
        Attributor::new(spec.clone()),
        suppressor.clone(),
        &exits,
        gen_supp.as_ref().map(|g| g.observer()),
        analyze::Options {
            hide_noise_reachable: out.added_reachable,
        },
    )?;
    if let Some(g) = gen_supp {
        g.write()?;
    }
    crate::analyze::processes::after_run(
        &mut analysis,
        &crate::analyze::processes::RunFacts {
            stopped: out.stopped.as_ref(),
            stopped_children: out.stopped_children.as_deref(),
            cuda_ipc: &out.cuda_ipc,
        },
        &mut problems,
        &mut notes,
    );
    let valgrind_failed = !problems.is_empty() || analysis.processes.iter().any(|p| !p.complete);
    if valgrind_failed && !out.log.trim().is_empty() {
        if !out.log_shown {
            eprintln!(
                "leakgate: Valgrind's log ({}):",
                out.valgrind_path.display()
            );
            for line in out.log.lines() {
                eprintln!("  {line}");
            }
        }
        notes.push(format!("Valgrind's log: {}", summarize_log(&out.log)));
    }
    let policy = ci.policy().clone();
    let baseline = ci.classify(&mut analysis.findings);
    let mut report = build_report(
        "run",
        a.cmd.clone(),
        out.environment.clone(),
        Some(out.exit.clone()),
        out.valgrind_version.clone(),
        analysis,
        &spec,
        &policy,
        &problems,
        notes,
        &suppressor,
        a.report.show_unused_suppressions,
    );
    report.valgrind_command = out.valgrind_command.clone();
    report.stopped = out.stopped.clone();
    ci.finish(&mut report, baseline, &problems);
    out.end_progress();
    emit(&report, &a.report)?;
    ci.emit(&report, &a.report)?;
    drop(out);
    Ok(report.verdict.exit_code)
}

/// The last few meaningful lines of Valgrind's log, on one line.
fn summarize_log(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(|l| {
            l.trim_start_matches(|c: char| c == '=' || c.is_ascii_digit())
                .trim()
        })
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines.len().saturating_sub(3);
    lines[start..].join(" | ")
}

fn cmd_analyze(a: AnalyzeArgs) -> Result<i32> {
    let spec = user_spec(&a.report, None)?;
    let ci = Ci::prepare(&a.report, crate::commands::outputs::policy(&a.report, true))?;
    let suppressor = load_suppressions(&a.report)?;
    let files = analyze::collect_inputs(&a.paths)?;
    let analysis = analyze::analyze_files(
        &files,
        Attributor::new(spec.clone()),
        suppressor.clone(),
        &HashMap::new(),
    )?;
    let version = analysis
        .processes
        .iter()
        .find_map(|p| p.valgrind_version.clone());
    let command = a.paths.iter().map(|p| p.display().to_string()).collect();
    let mut analysis = analysis;
    let baseline = ci.classify(&mut analysis.findings);
    let mut report = build_report(
        "analyze",
        command,
        Vec::new(),
        None,
        version,
        analysis,
        &spec,
        ci.policy(),
        &[],
        Vec::new(),
        &suppressor,
        a.report.show_unused_suppressions,
    );
    ci.finish(&mut report, baseline, &[]);
    emit(&report, &a.report)?;
    ci.emit(&report, &a.report)?;
    Ok(report.verdict.exit_code)
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    mode: &str,
    command: Vec<String>,
    environment: Vec<String>,
    target_exit: Option<ExitStatus>,
    valgrind_version: Option<String>,
    analysis: Analysis,
    spec: &UserSpec,
    policy: &Policy,
    problems: &[String],
    mut notes: Vec<String>,
    suppressor: &Suppressor,
    show_unused: bool,
) -> Report {
    let mut analysis = analysis;
    let analysis_per_test = analysis.per_test.take();
    if let Some(pt) = &analysis_per_test {
        notes.extend(pt.notes.iter().cloned());
        if let Some(fl) = pt.free_lists.as_deref().filter(|fl| *fl != "off") {
            notes.push(format!("CPython free lists stayed on: {fl}; a leaked tuple, list, dict or float may carry the allocation stack of the code that first allocated its block (README: CPython free lists and refcount leaks)"));
        }
    }
    let free_lists_off = analysis_per_test
        .as_ref()
        .is_some_and(|pt| pt.free_lists.as_deref() == Some("off"));
    if !free_lists_off {
        notes.extend(crate::analyze::checkpoints::recycled_note(
            &analysis.findings,
        ));
    }
    analysis.summary.suppressed.loaded = suppressor.suppressions().len() as u64;
    if show_unused {
        analysis.summary.suppressed.unused = Some(
            suppressor
                .suppressions()
                .iter()
                .zip(&analysis.supp_used)
                .filter(|(_, n)| **n == 0)
                .map(|(s, _)| format!("{} ({}:{})", s.name, s.file, s.line))
                .collect(),
        );
    }
    for (name, n) in &analysis.supp_hid_user {
        notes.push(format!(
            "suppression {name:?} hid {n} leak or error record(s) that leakgate attributes to your code; if they are yours, narrow that rule (leakgate suppressions show, or your --suppressions file) or run with --no-bundled-suppressions to see them"
        ));
    }
    if analysis.summary.suppressed.undecidable > 0 {
        notes.push(format!(
            "{} record(s) may match a suppression but the XML cannot decide it (no <sframe> names, or frames hidden below main); they are kept",
            analysis.summary.suppressed.undecidable
        ));
    }
    // LEAKGATE_TEST_MISCOUNT (tests only) breaks the accounting on purpose,
    // to show that a mismatch is never silent.
    if std::env::var_os("LEAKGATE_TEST_MISCOUNT").is_some() {
        analysis.summary.records += 1;
    }
    let accounting = analyze::check_conservation(&analysis);
    let processes = analyze::processes_out(&analysis.processes);
    let protocol = analysis.processes.iter().filter_map(|p| p.protocol).max();
    for p in &analysis.processes {
        if let Some(v) = p.protocol
            && !(4..=6).contains(&v)
        {
            notes.push(format!(
                "{}: XML protocol {v} is not one leakgate knows (4-6); read as best it could",
                p.file
            ));
        }
        if let Some(t) = &p.tool
            && t != "memcheck"
        {
            notes.push(format!(
                "{}: produced by the {t} tool, not memcheck",
                p.file
            ));
        }
    }
    let mut verdict = gate::verdict(
        policy,
        &analysis.findings,
        &processes,
        target_exit.as_ref(),
        problems,
    );
    if let Some(what) = &accounting {
        eprintln!(
            "leakgate: internal error: {what}; the report cannot be trusted (exit {}), please report this bug",
            crate::exit::INTERNAL
        );
        notes.push(format!("internal error: {what}"));
        gate::internal_error(&mut verdict, what);
    }
    Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "leakgate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        valgrind: ValgrindInfo {
            version: valgrind_version,
            protocol,
        },
        mode: mode.into(),
        command,
        environment,
        target_exit,
        processes,
        findings: analysis.findings,
        summary: analysis.summary,
        verdict,
        notes,
        src_roots: spec.roots.iter().map(|r| r.display().to_string()).collect(),
        valgrind_command: Vec::new(),
        policy: None,
        baseline: None,
        stopped: None,
        per_test: analysis_per_test,
    }
}

fn emit(report: &Report, args: &ReportArgs) -> Result<()> {
    if let Some(path) = &args.html {
        write_html(report, path, &[])?;
    }
    let to_terminal = args.output.is_none() && std::io::stdout().is_terminal();
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            to_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    };
    let text = match args.format {
        Format::Text => render::text::render(
            report,
            render::text::TextOptions {
                color,
                verbose: args.verbose,
            },
        ),
        Format::Json => render::json::render(report),
    };
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                bail!("cannot write the report: {e}");
            }
        }
    }
    Ok(())
}

/// Writes `report` as a self-contained HTML page (`--html FILE`).
fn write_html(report: &Report, path: &std::path::Path, src_roots: &[PathBuf]) -> Result<()> {
    let opts = render::html::HtmlOptions {
        src_roots: src_roots.to_vec(),
        ..Default::default()
    };
    std::fs::write(path, render::html::render(report, &opts))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `leakgate report JSON`: renders a saved JSON report again (HTML, text or
/// JSON). Exits 0 when it could; the report's own verdict is in the output.
fn cmd_report(a: crate::cli::ReportFileArgs) -> Result<i32> {
    // A saved report is a few MB; an endless input (/dev/zero) is refused.
    const MAX_REPORT: u64 = 1 << 30;
    use std::io::Read;
    let mut bytes = Vec::new();
    if a.input.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_REPORT + 1)
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
    } else {
        std::fs::File::open(&a.input)
            .and_then(|f| f.take(MAX_REPORT + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {}", a.input.display()))?;
    }
    if bytes.len() as u64 > MAX_REPORT {
        bail!(
            "{}: larger than 1 GiB, not a leakgate JSON report",
            a.input.display()
        );
    }
    let mut report: Report = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a leakgate JSON report", a.input.display()))?;
    gate::restore(&mut report);
    if report.schema_version > SCHEMA_VERSION {
        bail!(
            "{}: schema_version {} is newer than this leakgate reads ({SCHEMA_VERSION})",
            a.input.display(),
            report.schema_version
        );
    }
    let roots = canonical_roots(&a.src_roots)?;
    if let Some(path) = &a.html {
        write_html(&report, path, &roots)?;
    }
    let html_name = a.output.as_ref().is_some_and(|p| {
        p.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
    });
    use crate::cli::ReportFormat;
    let text = match a.format {
        ReportFormat::Html => None,
        ReportFormat::Auto if html_name => None,
        ReportFormat::Json => Some(render::json::render(&report)),
        ReportFormat::Text | ReportFormat::Auto => {
            let to_terminal = a.output.is_none() && std::io::stdout().is_terminal();
            let color = match a.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    to_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            Some(render::text::render(
                &report,
                render::text::TextOptions {
                    color,
                    verbose: a.verbose,
                },
            ))
        }
    };
    let text = text.unwrap_or_else(|| {
        render::html::render(
            &report,
            &render::html::HtmlOptions {
                src_roots: roots.clone(),
                ..Default::default()
            },
        )
    });
    match &a.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush())
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                bail!("cannot write the report: {e}");
            }
        }
    }
    Ok(crate::exit::PASS)
}
