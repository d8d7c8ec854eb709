//! `-n auto` for pytest-xdist under leakgate: every worker pays the start-up
//! of Python and pytest under Valgrind (15 s and more on this machine kind),
//! so xdist's own `auto` (one worker per core) loses to a serial run on a
//! small suite. leakgate collects the tests natively first (`--collect-only
//! -q` with the user's arguments and `-n 0`, not under Valgrind) and picks
//! the count itself: one worker per [`TESTS_PER_WORKER`] test runs, at most
//! one per idle core (available cores less those other processes keep
//! busy now), and no workers (`-n 0`) when that leaves fewer than two. The argv then carries the number (`-n auto` → `-n 2`, the form
//! the user wrote kept) and the report says what was chosen. `-n logical`
//! is the same. A collection that fails leaves `-n auto` to pytest-xdist,
//! and says so.
//!
//! That native collection runs for every pytest target under Valgrind
//! (once, shared with `-n auto`; [`plan`]): a usage error (a mistyped test
//! path, an unknown option: pytest's exit 4) or errors during collection
//! (exit 2) stop leakgate in seconds with pytest's own lines
//! ([`RunError::Collection`], exit 2) instead of after Valgrind's start-up.
//! `-n N` runs as workers forked after collection ([`fork_plan`]); when the
//! target's Python cannot import pytest-xdist every `-n` is dropped from
//! the argv (the workers are forked all the same), and what needs
//! pytest-xdist's own workers is refused before anything starts
//! ([`RunError::XdistMissing`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::config::RunError;
use crate::util::plural;

/// Test runs (tests × `--repeat`) that make one worker worth its start-up.
pub(super) const TESTS_PER_WORKER: u64 = 6;

/// How long the native collection may take before leakgate gives up on it.
const COLLECT_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the `-n` value that counts (the last one) sits in an argv.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// `-n auto` / `--numprocesses auto`: the value is its own argument.
    Next(usize),
    /// `-nauto`, `--numprocesses=auto`: the prefix before the value.
    Joined(usize, &'static str),
}

/// What `-n auto` became: the argv with the number, and the line for the
/// report's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Choice {
    pub(super) argv: Vec<String>,
    pub(super) note: String,
}

/// The slot of the last `-n`/`--numprocesses` and its value (pytest's last
/// one wins; `--` ends the options).
fn last_slot(argv: &[String]) -> Option<(Slot, &str)> {
    let mut last: Option<(Slot, &str)> = None;
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i].as_str();
        match a {
            "--" => break,
            "-n" | "--numprocesses" => {
                if let Some(v) = argv.get(i + 1) {
                    last = Some((Slot::Next(i + 1), v.as_str()));
                }
                i += 1;
            }
            s if s.starts_with("--numprocesses=") => {
                last = Some((
                    Slot::Joined(i, "--numprocesses="),
                    &s["--numprocesses=".len()..],
                ));
            }
            s if s.starts_with("-n") && s.len() > 2 && !s.starts_with("--") => {
                last = Some((Slot::Joined(i, "-n"), &s[2..]));
            }
            _ => {}
        }
        i += 1;
    }
    last
}

/// The slot of the last `-n`/`--numprocesses` when its value is `auto` or
/// `logical`.
fn auto_slot(argv: &[String]) -> Option<Slot> {
    let (slot, v) = last_slot(argv)?;
    matches!(v, "auto" | "logical").then_some(slot)
}

/// `argv` with the counting `-n` value replaced by `n`.
fn with_workers(argv: &[String], slot: &Slot, n: &str) -> Vec<String> {
    let mut v = argv.to_vec();
    match slot {
        Slot::Next(i) => v[*i] = n.to_string(),
        Slot::Joined(i, prefix) => v[*i] = format!("{prefix}{n}"),
    }
    v
}

/// Workers for `runs` test runs on `cores` cores: one per
/// [`TESTS_PER_WORKER`], at most `cores`, none when fewer than two.
pub(super) fn choose(runs: u64, cores: u64) -> u64 {
    let w = (runs / TESTS_PER_WORKER).min(cores);
    if w < 2 { 0 } else { w }
}

/// Cores other processes keep busy right now: the runnable tasks of
/// `/proc/loadavg` (its fourth field, `3/120`), less this one, the median
/// of 5 looks 20 ms apart (the load average itself lags by a minute, and
/// would count the run before this one).
fn busy_cores() -> Option<u64> {
    let mut seen = Vec::new();
    for i in 0..5 {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = std::fs::read_to_string("/proc/loadavg").ok()?;
        seen.push(runnable(&text)?.saturating_sub(1));
    }
    seen.sort_unstable();
    Some(seen[seen.len() / 2])
}

/// The runnable tasks of a `/proc/loadavg` line.
fn runnable(loadavg: &str) -> Option<u64> {
    loadavg
        .split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// The number of tests pytest's `--collect-only` output reports: its
/// summary line (`7 tests collected in 0.01s`, `1/7 tests collected (6
/// deselected)`, `no tests collected`), else the `FILE: N` lines of `-qq`.
pub(super) fn count_collected(out: &str) -> Option<u64> {
    for line in out.lines().rev() {
        let l = line.trim().trim_matches('=').trim();
        if l.starts_with("no tests collected") {
            return Some(0);
        }
        if let Some(head) = l
            .split_once(" collected")
            .map(|(h, _)| h)
            .filter(|h| h.ends_with(" test") || h.ends_with(" tests"))
        {
            let n = head.split([' ', '/']).next()?;
            return n.parse().ok();
        }
    }
    let mut sum = None;
    for line in out.lines() {
        if let Some((_, n)) = line.rsplit_once(": ")
            && let Ok(n) = n.trim().parse::<u64>()
        {
            *sum.get_or_insert(0) += n;
        }
    }
    sum
}

/// What a native `pytest --collect-only -q` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Collected {
    /// It collected this many tests.
    Tests(u64),
    /// pytest stopped at a usage error (exit 4: a file or directory not
    /// found, an unknown option) or at errors during collection (exit 2):
    /// its own lines, for the user. A run would stop the same way.
    Errors(String),
    /// It could not tell (could not start, timed out, another exit): why.
    Unknown(String),
}

/// pytest's lines worth showing from a collection that stopped: its
/// standard error, then its output from the first `===` section on (the
/// errors, the short summary), else the output's last line; at most
/// [`MAX_LINES`] of them.
fn error_lines(out: &str, err: &str) -> String {
    const MAX_LINES: usize = 40;
    let mut lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    let out_lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    match out_lines.iter().position(|l| l.starts_with("===")) {
        Some(i) => lines.extend(&out_lines[i..]),
        None => lines.extend(out_lines.last()),
    }
    if lines.len() > MAX_LINES {
        let cut = lines.len() - MAX_LINES;
        let mut kept: Vec<String> = lines[..MAX_LINES / 2]
            .iter()
            .map(|s| s.to_string())
            .collect();
        kept.push(format!("… ({cut} lines more)"));
        kept.extend(
            lines[lines.len() - MAX_LINES / 2..]
                .iter()
                .map(|s| s.to_string()),
        );
        return kept.join("\n");
    }
    lines.join("\n")
}

/// Runs `argv` (a pytest command, without workers) natively with
/// `--collect-only -q` in `cwd`.
pub(super) fn collect(argv: &[String], cwd: Option<&Path>) -> Collected {
    let mut args = argv.to_vec();
    // Before a `--`, which ends pytest's options.
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, ["--collect-only".to_string(), "-q".to_string()]);
    let mut cmd = Command::new(&args[0]);
    cmd.args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Collected::Unknown(format!("cannot start it: {e}")),
    };
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("piped stderr")));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if started.elapsed() > COLLECT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Collected::Unknown(format!("it took over {}s", COLLECT_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Collected::Unknown(e.to_string()),
        }
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    // pytest: 0 collected, 5 no tests, 1 collected with errors
    // (--continue-on-collection-errors), 2 interrupted by collection
    // errors, 4 a usage error.
    match (status.code(), count_collected(&out)) {
        (Some(0 | 1), Some(n)) => Collected::Tests(n),
        (Some(5), _) => Collected::Tests(0),
        (Some(2 | 4), _) => Collected::Errors(error_lines(&out, &err)),
        (code, _) => Collected::Unknown(format!(
            "pytest --collect-only exited {}",
            code.map_or_else(|| "on a signal".to_string(), |c| c.to_string())
        )),
    }
}

/// For a pytest command whose last `-n` is `auto` (or `logical`), given
/// what its native collection found: the cores, and the argv with the
/// number chosen (of a `--shard K/N` run: from its share of the tests,
/// `shards` = N). `None` for any other command.
fn resolve_auto(
    argv: &[String],
    repeat: u32,
    shards: u32,
    collected: &Collected,
) -> Option<Choice> {
    let slot = auto_slot(argv)?;
    let given = given_text(argv, &slot);
    let all = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    // Cores other jobs keep busy now are no cores for workers.
    let busy = busy_cores().unwrap_or(0).min(all.saturating_sub(1));
    let cores = all - busy;
    let tests = match collected {
        Collected::Tests(n) => *n,
        Collected::Errors(_) => {
            return Some(Choice {
                argv: argv.to_vec(),
                note: format!(
                    "{given}: the native collection failed (pytest's errors); left to pytest-xdist (set by leakgate)"
                ),
            });
        }
        Collected::Unknown(why) => {
            return Some(Choice {
                argv: argv.to_vec(),
                note: format!(
                    "{given}: the native collection failed ({why}); left to pytest-xdist (set by leakgate)"
                ),
            });
        }
    };
    let collected_all = tests;
    let tests = tests.div_ceil(u64::from(shards.max(1)));
    let runs = tests.saturating_mul(u64::from(repeat.max(1)));
    let n = choose(runs, cores);
    let why = if n == 0 {
        format!(
            "fewer than {} test runs per worker for two workers, or fewer than two idle cores: each worker's start-up under Valgrind would cost more than it saves",
            TESTS_PER_WORKER
        )
    } else {
        format!("one worker per {TESTS_PER_WORKER} test runs, at most one per idle core")
    };
    Some(Choice {
        argv: with_workers(argv, &slot, &n.to_string()),
        note: format!(
            "{given}: {}{}{}, {}{} → -n {n} (set by leakgate: {why})",
            plural(tests, "test", "tests"),
            if shards > 1 {
                format!(" (a shard's: {collected_all} collected, --shard of {shards})")
            } else {
                String::new()
            },
            if repeat > 1 {
                format!(" × {repeat} (--repeat)")
            } else {
                String::new()
            },
            plural(all, "core", "cores"),
            if busy > 0 {
                format!(" ({busy} busy with other work)")
            } else {
                String::new()
            },
        ),
    })
}

/// `-n N` under the Valgrind engine: pytest itself runs under Valgrind with
/// `-n 0`, and the probe's plugin forks N workers once the session is
/// collected (`LEAKGATE_FORK_WORKERS=N`, `python/leakgate_probe/
/// forked_workers.py`): a fork child keeps Valgrind's translations, so no
/// worker starts Python and pytest under Valgrind again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fork {
    /// The argv with `-n 0` in place of `-n N`.
    pub(super) argv: Vec<String>,
    pub(super) workers: u64,
    /// The line for the report's environment.
    pub(super) note: String,
}

/// For a pytest-xdist command: the forked workers that replace
/// pytest-xdist's, or why pytest-xdist keeps them (`Err`: the note for the
/// report, `None` inside when nothing needs saying). pytest-xdist keeps its
/// workers for `--tx` (workers elsewhere), a `--dist` other than `load` or
/// `worksteal` (tests that must share a worker), `-f`/`--looponfail`,
/// `--pdb`/`--trace` (pytest-xdist refuses them: one terminal, N workers), a
/// value that is not a number (`-n auto` whose collection failed), and when
/// `LEAKGATE_FORK_WORKERS=0` is in leakgate's environment (`opt_out`).
pub(super) fn fork_plan(argv: &[String], opt_out: bool) -> Result<Fork, Option<String>> {
    let Some((slot, value)) = last_slot(argv) else {
        return Err(None);
    };
    let Ok(n) = value.parse::<u64>() else {
        return Err(None);
    };
    if n == 0 {
        return Err(None);
    }
    if let Some(why) = keep_reason(argv, opt_out) {
        return Err(Some(format!(
            "-n {n}: pytest-xdist's workers, each started under Valgrind ({why})"
        )));
    }
    let note = if n == 1 {
        "-n 1 → -n 0 (set by leakgate: one worker runs the tests as a serial run does)".to_string()
    } else {
        format!(
            "-n {n} → -n 0, LEAKGATE_FORK_WORKERS={n} (set by leakgate: pytest starts under Valgrind once and forks {n} workers after collection, which take the tests in turn; LEAKGATE_FORK_WORKERS=0 keeps pytest-xdist's workers)"
        )
    };
    Ok(Fork {
        argv: with_workers(argv, &slot, "0"),
        workers: n,
        note,
    })
}

/// Why pytest-xdist must keep its own workers for `argv` (see
/// [`fork_plan`]), or `None` when leakgate may fork its own.
fn keep_reason(argv: &[String], opt_out: bool) -> Option<String> {
    if opt_out {
        return Some("LEAKGATE_FORK_WORKERS=0".to_string());
    }
    let mut it = argv[1..].iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        let dist = match a.as_str() {
            "--tx" => return Some("--tx".to_string()),
            s if s.starts_with("--tx=") => return Some("--tx".to_string()),
            "-f" | "--looponfail" | "--pdb" | "--trace" => return Some(a.clone()),
            "--dist" => it.next().map(String::as_str),
            s if s.starts_with("--dist=") => Some(&s["--dist=".len()..]),
            _ => None,
        };
        if let Some(d) = dist
            && !matches!(d, "load" | "worksteal" | "no")
        {
            return Some(format!("--dist {d}"));
        }
    }
    None
}

/// `argv` without pytest-xdist's options that forked workers do without:
/// every `-n`/`--numprocesses` and `--dist load|worksteal|no` (before a
/// `--`), for a pytest that has no pytest-xdist to read them.
fn strip_xdist(argv: &[String]) -> Vec<String> {
    let mut v = Vec::with_capacity(argv.len());
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].as_str();
        if i == 0 {
            v.push(argv[i].clone());
            i += 1;
            continue;
        }
        if a == "--" {
            v.extend(argv[i..].iter().cloned());
            break;
        }
        let forkable = |d: &str| matches!(d, "load" | "worksteal" | "no");
        match a {
            "-n" | "--numprocesses" => i += 2,
            "--dist" if argv.get(i + 1).is_some_and(|d| forkable(d)) => i += 2,
            s if s.starts_with("--dist=") && forkable(&s["--dist=".len()..]) => i += 1,
            s if s.starts_with("--numprocesses=") => i += 1,
            s if s.starts_with("-n") && s.len() > 2 && !s.starts_with("--") => i += 1,
            _ => {
                v.push(argv[i].clone());
                i += 1;
            }
        }
    }
    v
}

/// How the user wrote the `-n` in `slot`: `-n 2`, `-nauto`, `--numprocesses=2`.
fn given_text(argv: &[String], slot: &Slot) -> String {
    match slot {
        Slot::Next(i) => format!("{} {}", argv[i - 1], argv[*i]),
        Slot::Joined(i, _) => argv[*i].clone(),
    }
}

/// Whether `python` can import pytest-xdist (`python -c "import xdist"`,
/// natively); `None` when it could not be asked.
fn imports_xdist(python: &Path) -> Option<bool> {
    let status = Command::new(python)
        .args(["-c", "import xdist"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    Some(status.success())
}

/// For a pytest command with a `-n` whose Python cannot import
/// pytest-xdist: that Python, and how the `-n` was written. `None` when
/// there is no `-n`, xdist is there, or the Python cannot be told.
pub(super) fn xdist_missing(argv: &[String]) -> Option<(PathBuf, String)> {
    if !super::target::is_pytest_target(argv) {
        return None;
    }
    let (slot, _) = last_slot(argv)?;
    let python = super::target::target_python(argv.first()?)?;
    match imports_xdist(&python) {
        Some(false) => Some((python, given_text(argv, &slot))),
        _ => None,
    }
}

/// What leakgate runs for a pytest command under the Valgrind engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    /// The argv that runs (`-n auto` resolved, `-n N` rewritten).
    pub(super) argv: Vec<String>,
    /// Lines for the report's environment.
    pub(super) notes: Vec<String>,
    /// Workers the probe forks after collection (`LEAKGATE_FORK_WORKERS`).
    pub(super) workers: u64,
}

/// A pytest command under the Valgrind engine, before anything starts: one
/// native `--collect-only` (when `check`, to stop at pytest's own usage
/// and collection errors in seconds, or for `-n auto`, whose count it
/// gives), then `-n auto` resolved and `-n N` as forked workers (with
/// `per_test`). Without pytest-xdist in the target's Python every `-n` is
/// dropped and the workers are forked all the same; what needs
/// pytest-xdist's own workers then is refused. Any other command: as it is.
/// `shards`: N of `--shard K/N` (1 without): `-n auto` counts a shard's
/// share of the collected tests.
pub(super) fn plan(
    argv: &[String],
    repeat: u32,
    shards: u32,
    per_test: bool,
    check: bool,
    opt_out: bool,
) -> Result<Plan, RunError> {
    let mut plan = Plan {
        argv: argv.to_vec(),
        notes: Vec::new(),
        workers: 0,
    };
    if !super::target::is_pytest_target(argv) {
        return Ok(plan);
    }
    let missing = xdist_missing(argv);
    if let Some((python, given)) = &missing {
        let value = last_slot(argv).map_or("", |(_, v)| v);
        let why = if matches!(value, "0" | "1") {
            None
        } else if !per_test {
            Some(
                "without per-test checkpoints (--no-per-test) leakgate forks no workers of its own"
                    .to_string(),
            )
        } else {
            keep_reason(argv, opt_out).map(|r| format!("{r} keeps pytest-xdist's workers"))
        };
        if let Some(why) = why {
            return Err(RunError::XdistMissing {
                given: given.clone(),
                python: python.clone(),
                why,
            });
        }
    }
    let auto = auto_slot(argv).is_some();
    let collected = (check || auto).then(|| {
        let args = match (&missing, last_slot(argv)) {
            (Some(_), _) => strip_xdist(argv),
            (None, Some((slot, _))) => with_workers(argv, &slot, "0"),
            (None, None) => argv.to_vec(),
        };
        let started = Instant::now();
        (collect(&args, None), started.elapsed())
    });
    if check && let Some((Collected::Errors(lines), took)) = &collected {
        return Err(RunError::Collection {
            lines: lines.clone(),
            secs: took.as_secs_f64(),
        });
    }
    if let Some((c, _)) = &collected
        && let Some(choice) = resolve_auto(&plan.argv, repeat, shards, c)
    {
        plan.argv = choice.argv;
        plan.notes.push(choice.note);
    }
    if per_test && super::target::is_xdist_target(&plan.argv) {
        match fork_plan(&plan.argv, opt_out) {
            Ok(f) if missing.is_some() => {
                plan.argv = strip_xdist(&f.argv);
                plan.workers = f.workers;
                let given = missing.as_ref().map_or("", |(_, g)| g.as_str());
                plan.notes.push(if f.workers == 1 {
                    format!("{given}: dropped (set by leakgate: pytest-xdist is not installed; one worker runs the tests as a serial run does)")
                } else {
                    format!(
                        "{given} → LEAKGATE_FORK_WORKERS={n}, -n dropped (set by leakgate: pytest-xdist is not installed; pytest starts under Valgrind once and forks {n} workers after collection, which take the tests in turn)",
                        n = f.workers
                    )
                });
            }
            Ok(f) => {
                plan.argv = f.argv;
                plan.notes.push(f.note);
                plan.workers = f.workers;
            }
            Err(Some(note)) => plan.notes.push(note),
            Err(None) => {}
        }
    }
    if let Some((_, given)) = &missing
        && last_slot(&plan.argv).is_some()
    {
        // `-n 0`, or a `-n auto` left as it was: no workers, and no
        // pytest-xdist to read the option.
        plan.argv = strip_xdist(&plan.argv);
        plan.notes.push(format!(
            "{given}: dropped (set by leakgate: pytest-xdist is not installed; the tests run in one process)"
        ));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests;
