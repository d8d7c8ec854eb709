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

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Collects `argv` (a pytest command) natively with `-n 0`: the number of
/// tests, or why not.
fn collect(argv: &[String], slot: &Slot, cwd: Option<&Path>) -> Result<u64, String> {
    let mut args = with_workers(argv, slot, "0");
    // Before a `--`, which ends pytest's options.
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.splice(at..at, ["--collect-only".to_string(), "-q".to_string()]);
    let mut cmd = Command::new(&args[0]);
    cmd.args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot start it: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if started.elapsed() > COLLECT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it took over {}s", COLLECT_TIMEOUT.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let out = reader.join().unwrap_or_default();
    // pytest: 0 collected, 5 no tests; anything else is an error.
    match (status.code(), count_collected(&out)) {
        (Some(0), Some(n)) => Ok(n),
        (Some(5), _) => Ok(0),
        (code, _) => Err(format!(
            "pytest --collect-only exited {}",
            code.map_or_else(|| "on a signal".to_string(), |c| c.to_string())
        )),
    }
}

/// For a pytest command whose last `-n` is `auto` (or `logical`): the
/// tests collected natively, the cores, and the argv with the number
/// chosen. `None` for any other command.
pub(super) fn resolve_auto(argv: &[String], repeat: u32) -> Option<Choice> {
    if !super::target::is_pytest_target(argv) {
        return None;
    }
    let slot = auto_slot(argv)?;
    let given = match &slot {
        Slot::Next(i) => format!("{} {}", argv[i - 1], argv[*i]),
        Slot::Joined(i, _) => argv[*i].clone(),
    };
    let all = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    // Cores other jobs keep busy now are no cores for workers.
    let busy = busy_cores().unwrap_or(0).min(all.saturating_sub(1));
    let cores = all - busy;
    let tests = match collect(argv, &slot, None) {
        Ok(n) => n,
        Err(why) => {
            return Some(Choice {
                argv: argv.to_vec(),
                note: format!(
                    "{given}: the native collection failed ({why}); left to pytest-xdist (set by leakgate)"
                ),
            });
        }
    };
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
            "{given}: {}{}, {}{} → -n {n} (set by leakgate: {why})",
            plural(tests, "test", "tests"),
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
    let keep = |why: &str| {
        Err(Some(format!(
            "-n {n}: pytest-xdist's workers, each started under Valgrind ({why})"
        )))
    };
    if opt_out {
        return keep("LEAKGATE_FORK_WORKERS=0");
    }
    let mut it = argv[1..].iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        let dist = match a.as_str() {
            "--tx" => return keep("--tx"),
            s if s.starts_with("--tx=") => return keep("--tx"),
            "-f" | "--looponfail" | "--pdb" | "--trace" => return keep(a),
            "--dist" => it.next().map(String::as_str),
            s if s.starts_with("--dist=") => Some(&s["--dist=".len()..]),
            _ => None,
        };
        if let Some(d) = dist
            && !matches!(d, "load" | "worksteal" | "no")
        {
            return keep(&format!("--dist {d}"));
        }
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

#[cfg(test)]
mod tests;
