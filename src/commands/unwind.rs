//! `leakgate run --engine lsan|asan`: what the sanitizer engines add around
//! a run. The first run unwinds allocation stacks through frame pointers
//! (near native speed); code built without them (CPython, most system
//! libraries) cuts such a stack short, and a leak whose stack was cut with
//! none of the user's frames left in it may be the user's (an object leaked
//! through CPython's allocator: the extension's frame is the one skipped)
//! or the interpreter's. Such a leak is never judged on the cut stack: the
//! target is run again with exact unwinding (`fast_unwind_on_malloc=0`).
//! When every such leak grew under a pytest test (a per-test run), only
//! those tests run again, and the exact stacks of that run replace the cut
//! ones in the first run's records (`analyze::stacks`); otherwise the
//! whole target runs again and that run's reports are the ones analysed.
//! Also here: what each
//! engine does not check (the report's `engine`), the options that only
//! Valgrind has, and the target's exit status when the runtime replaced it.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};

use crate::analyze::attribute::Attributor;
use crate::analyze::checkpoints::parse_delta;
use crate::analyze::{Observer, stacks};
use crate::cli::RunArgs;
use crate::model::{ExitStatus, ProcessInfo, Record};
use crate::parse::parse_marker;
use crate::probe::GARBAGE_PREFIX;
use crate::report::EngineOut;
use crate::run::Engine;
use crate::run::{self, LSAN_EXIT_CODE, RunConfig, RunOutcome};

/// What the forked checkers of a sanitizer run found that only a full
/// garbage collection frees (the probe's [`GARBAGE_PREFIX`] lines, spliced
/// into the logs after their checkpoint's marker): "the checkpoint after
/// TEST found N objects …", None when none did.
pub(super) fn young_garbage(logs: &[PathBuf]) -> Option<String> {
    let mut count = 0u64;
    let mut first: Option<(String, i64)> = None;
    for path in logs {
        let Ok(text) = std::fs::read(path) else {
            continue;
        };
        if memchr::memmem::find(&text, GARBAGE_PREFIX.as_bytes()).is_none() {
            continue;
        }
        let mut label = String::new();
        for line in text.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            if let Some(m) = parse_marker(line) {
                label = m.label;
            } else if let Some(g) = line.strip_prefix(GARBAGE_PREFIX) {
                count += 1;
                if first.is_none() {
                    let objects = serde_json::from_str::<serde_json::Value>(g.trim_end())
                        .ok()
                        .and_then(|v| v["objects"].as_i64())
                        .unwrap_or(-1);
                    first = Some((label.clone(), objects));
                }
            }
        }
    }
    let (label, objects) = first?;
    let found = if objects < 0 {
        "could not tell whether objects were left for the garbage collector".to_string()
    } else {
        format!(
            "found {} that only a full garbage collection frees",
            crate::util::plural(objects as u64, "object", "objects")
        )
    };
    Some(format!(
        "the checkpoint after {label} {found}{}",
        if count > 1 {
            format!(" ({} such checkpoints)", count)
        } else {
            String::new()
        }
    ))
}

/// Refuses the options a sanitizer engine cannot honour.
pub(super) fn check_options(a: &RunArgs) -> Result<()> {
    if a.engine == Engine::Valgrind {
        return Ok(());
    }
    let e = a.engine.name();
    if a.track_fds {
        bail!(
            "--track-fds needs --engine valgrind (descriptors are Memcheck's); --engine {e} does not track them"
        );
    }
    if !a.valgrind_args.is_empty() {
        bail!(
            "--valgrind-arg is for --engine valgrind; with --engine {e} set the runtime's options in {}",
            if a.engine == Engine::Asan {
                "ASAN_OPTIONS"
            } else {
                "LSAN_OPTIONS"
            }
        );
    }
    Ok(())
}

/// What `engine` does not check that Valgrind does.
pub(super) fn not_checked(engine: Engine) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if engine == Engine::Lsan {
        v.push(
            "memory errors (invalid reads and writes, use after free, bad frees: --engine asan or valgrind)"
                .into(),
        );
    } else {
        v.push("memory errors in code not built with -fsanitize=address".into());
    }
    v.push("uninitialised values".into());
    v.push("possibly-lost and still-reachable blocks".into());
    v.push("file descriptors".into());
    v.push(
        "which test leaked objects the garbage collector lists, in a process with more than one thread (they are found at exit there)"
            .into(),
    );
    v.push("leaked frame-stack chunks of CPython 3.11+ (mapped, not heap blocks)".into());
    v
}

/// The report's `engine` for a sanitizer run (`unwind`: `fast`, `exact`,
/// or `fast, exact for N re-run tests`).
pub(super) fn engine_out(out: &RunOutcome, unwind: &str) -> Option<EngineOut> {
    // Not the analysis's guess from the logs: the engine that ran.
    (out.engine != Engine::Valgrind).then(|| EngineOut {
        name: out.engine.name().to_string(),
        runtime: Some(out.valgrind_path.display().to_string()),
        not_checked: not_checked(out.engine),
        unwind: Some(unwind.to_string()),
    })
}

/// Frames a complete stack ends with: below `main`, or a thread's start.
fn is_root(name: &str) -> bool {
    crate::model::is_below_main(name)
        || matches!(
            name,
            "main" | "clone" | "clone3" | "start_thread" | "__clone" | "__clone3"
        )
}

/// Whether fast unwinding cut `rec`'s stack short: it holds fewer frames
/// than were asked for and does not end where a stack starts.
pub(super) fn cut_short(rec: &Record, max_frames: usize) -> bool {
    if rec.stack.len() >= max_frames {
        return false;
    }
    !rec.stack
        .last()
        .and_then(|f| f.func.as_deref())
        .is_some_and(is_root)
}

/// What the first run's analysis saw of the final leak records whose
/// stacks were cut short and hold none of the user's frames.
#[derive(Debug, Default, Clone)]
pub(super) struct Cut {
    /// How many there were.
    pub count: u64,
    /// The first one's function (for the note).
    pub first: Option<String>,
    /// Their stacks (`stacks::key`).
    pub keys: HashSet<u64>,
}

/// What [`cut_observer`] fills.
pub(super) type CutSeen = Arc<Mutex<Cut>>;

/// Whether a leak record's stack was cut short by fast unwinding with none
/// of the user's frames left (the attribution gave it a noise source).
fn judged_cut(rec: &Record, source_known: bool, max_frames: usize) -> bool {
    rec.is_leak() && source_known && cut_short(rec, max_frames)
}

/// An observer collecting the final leak records whose stacks were cut
/// short and hold none of the user's frames (those the first run cannot
/// judge).
pub(super) fn cut_observer(max_frames: usize) -> (Observer, CutSeen) {
    let seen: CutSeen = Arc::default();
    let s = seen.clone();
    let obs: Observer = Arc::new(move |rec, att, _p, _suppressed| {
        if parse_delta(&rec.what).is_some() || !judged_cut(rec, att.source.is_some(), max_frames) {
            return;
        }
        let mut g = s.lock().expect("cut observer");
        g.count += 1;
        g.keys.insert(stacks::key(rec));
        if g.first.is_none() {
            g.first = rec
                .stack
                .iter()
                .filter_map(|f| f.func.as_deref())
                .find(|f| !is_allocator(f))
                .map(str::to_string);
        }
    });
    (obs, seen)
}

/// A leak's growth at a checkpoint of a sanitizer run: the pytest test it
/// grew in (`None`: a checkpoint that is no test's, such as the start, the
/// end of the session or the exit check) and the record.
#[derive(Debug, Clone)]
struct Grown {
    test: Option<String>,
    rec: Record,
}

/// The leak growth records of the checkpoints in a run's logs.
fn grown(logs: &[PathBuf]) -> Vec<Grown> {
    let mut out = Vec::new();
    for (i, f) in logs.iter().enumerate() {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        let mut interner = crate::parse::Interner::default();
        let _ = crate::parse::parse_sanitizer_log(&bytes, f, i, &mut interner, &mut |r, p| {
            if !r.is_leak() || parse_delta(&r.what).is_none() {
                return;
            }
            let test = (r.client_msgs as usize)
                .checked_sub(1)
                .and_then(|m| p.client_messages.get(m))
                .and_then(|m| parse_marker(m))
                .filter(|m| m.kind == "test")
                .map(|m| m.label);
            out.push(Grown { test, rec: r });
        });
    }
    out
}

/// The tests to run again with exact unwinding: those whose checkpoints
/// saw the cut leaks grow, with those growth records. `None` when a cut
/// leak grew anywhere else (before the first test, at the end of the
/// session, in the exit check) or at no checkpoint at all (not a per-test
/// run): then the whole target runs again.
fn tests_to_rerun(
    cut: &Cut,
    first: &[Grown],
    attributor: &mut Attributor,
    max_frames: usize,
) -> Option<(Vec<String>, Vec<Grown>)> {
    // The growth of the cut leaks the final check still holds (what shrank,
    // or was lost for a while only, judges nothing).
    let cut_grown: Vec<Grown> = first
        .iter()
        .filter(|g| {
            cut.keys.contains(&stacks::key(&g.rec))
                && parse_delta(&g.rec.what).is_some_and(|(b, n)| b > 0 || n > 0)
                && judged_cut(
                    &g.rec,
                    attributor.attribute(&g.rec).source.is_some(),
                    max_frames,
                )
        })
        .cloned()
        .collect();
    let keys: HashSet<u64> = cut_grown.iter().map(|g| stacks::key(&g.rec)).collect();
    if cut_grown.is_empty()
        || cut_grown.iter().any(|g| g.test.is_none())
        || cut.keys.iter().any(|k| !keys.contains(k))
    {
        return None;
    }
    let tests: BTreeSet<String> = cut_grown.iter().filter_map(|g| g.test.clone()).collect();
    Some((tests.into_iter().collect(), cut_grown))
}

/// The exact stack of each cut leak, from the re-run's growth records: one
/// of the same kind in the same test whose stack holds the cut one's
/// frames in order (the same growth preferred). `None` when a cut leak
/// has none, or several different ones, or one cut stack would get two.
fn match_stacks(cut: &[Grown], exact: &[Grown]) -> Option<stacks::StackMap> {
    let mut map = stacks::StackMap::new();
    for g in cut {
        let fits: Vec<&Grown> = exact
            .iter()
            .filter(|e| {
                e.test == g.test
                    && e.rec.kind == g.rec.kind
                    && stacks::is_within(&g.rec.stack, &e.rec.stack)
            })
            .collect();
        let same: Vec<&Grown> = fits
            .iter()
            .copied()
            .filter(|e| parse_delta(&e.rec.what) == parse_delta(&g.rec.what))
            .collect();
        let pick = if same.is_empty() { fits } else { same };
        let distinct: HashSet<u64> = pick.iter().map(|e| stacks::key(&e.rec)).collect();
        if distinct.len() != 1 {
            return None;
        }
        let stack = &pick[0].rec.stack;
        match map.entry(stacks::key(&g.rec)) {
            Entry::Occupied(s) if s.get() != stack => return None,
            Entry::Occupied(_) => {}
            Entry::Vacant(v) => {
                v.insert(stack.clone());
            }
        }
    }
    Some(map)
}

/// What the exact-unwinding re-run gave.
pub(super) struct Exact {
    /// The run whose reports are analysed: the first one when only some
    /// tests ran again, else the whole re-run.
    pub out: RunOutcome,
    /// The exact stacks for the first run's cut leaks (some tests re-run).
    pub stacks: Option<Arc<stacks::StackMap>>,
    /// The report's note.
    pub note: String,
    /// The report's `engine.unwind`.
    pub unwind: String,
}

/// Runs again with exact unwinding what the first run (`out`, whose cut
/// leaks are `cut`) could not judge: only the pytest tests concerned when
/// every cut leak grew under a test and each one's exact stack is found
/// in the re-run, else the whole target.
pub(super) fn rerun_exact(
    cfg: &RunConfig,
    mut out: RunOutcome,
    cut: &Cut,
    attributor: &mut Attributor,
) -> Result<Exact> {
    let started = std::time::Instant::now();
    out.end_progress();
    let max = cfg.num_callers as usize;
    let what = format!(
        "{} leak stack{} cut short by fast unwinding in code without frame pointers{}, with none of your frames left",
        cut.count,
        if cut.count == 1 { " was" } else { "s were" },
        cut.first
            .as_ref()
            .map_or_else(String::new, |f| format!(" (the first in {f})")),
    );
    if let Some((tests, cut_grown)) = tests_to_rerun(cut, &grown(&out.reports), attributor, max) {
        let mut again = RunConfig {
            slow_unwind: true,
            only_tests: tests.clone(),
            only_tests_checkpoints: true,
            repeat: 1,
            ..cfg.clone()
        };
        if run::is_xdist_target(&cfg.cmd) {
            // A few tests: in one process (the last -n wins).
            again.cmd.extend(["-n".to_string(), "0".to_string()]);
        }
        let mut rerun = run::run(&again)?;
        rerun.end_progress();
        if let Some(map) = match_stacks(&cut_grown, &grown(&rerun.reports)) {
            let n = tests.len() as u64;
            return Ok(Exact {
                out,
                stacks: Some(Arc::new(map)),
                note: format!(
                    "{what}: re-ran {} ({}) with exact unwinding (fast_unwind_on_malloc=0, {:.1}s); those leaks have that run's stacks, the rest of this report is the first run's",
                    crate::util::plural(n, "test", "tests"),
                    tests.join(", "),
                    started.elapsed().as_secs_f64()
                ),
                unwind: format!(
                    "fast, exact for {}",
                    crate::util::plural(n, "re-run test", "re-run tests")
                ),
            });
        }
    }
    drop(out);
    let exact_cfg = RunConfig {
        slow_unwind: true,
        full_collect: true,
        ..cfg.clone()
    };
    let out = run::run(&exact_cfg)?;
    Ok(Exact {
        out,
        stacks: None,
        note: format!(
            "{what}: re-ran with exact unwinding (fast_unwind_on_malloc=0, {:.1}s); this report is that run's",
            started.elapsed().as_secs_f64()
        ),
        unwind: "exact".into(),
    })
}

fn is_allocator(f: &str) -> bool {
    matches!(
        f,
        "malloc" | "calloc" | "realloc" | "aligned_alloc" | "posix_memalign" | "memalign"
    ) || f.starts_with("operator new")
        || f.starts_with("__interceptor_")
}

/// The target's exit status, when the runtime ended it with its own code
/// after a leak report: the status the target would have had is lost.
/// Returns the note to add, and whether the status is the runtime's.
pub(super) fn runtime_exit(out: &RunOutcome) -> Option<String> {
    if out.engine == Engine::Valgrind || out.exit != ExitStatus::Code(LSAN_EXIT_CODE) {
        return None;
    }
    let log = out
        .dir
        .path()
        .join(format!("{}.{}", out.engine.name(), out.pid));
    let text = std::fs::read_to_string(log).ok()?;
    let tail = text
        .rsplit_once(crate::probe::SANITIZER_END)
        .map_or(text.as_str(), |(_, t)| t);
    tail.contains("Sanitizer: ").then(|| {
        format!(
            "the target's exit code {LSAN_EXIT_CODE} is the {} runtime's (exitcode={LSAN_EXIT_CODE}): it ends a process that way after reporting leaks or an error, and the status the target would have had is not known",
            out.engine.name()
        )
    })
}

/// Adds the processes a sanitizer engine ran without writing a log: the
/// target, and when no process wrote one (a program without the probe,
/// whose reaped processes are all its own, not the probe's checkers)
/// every reaped child. The runtime writes only when it finds something,
/// so a process that exited is a clean one; one killed by a signal never
/// ran the leak check at exit (incomplete). The Valgrind engine writes a
/// report for every process: nothing to add.
pub(super) fn silent_processes(ps: &mut Vec<ProcessInfo>, out: &RunOutcome, cmd: &[String]) {
    if out.engine == Engine::Valgrind {
        return;
    }
    let children = ps.is_empty();
    let mut pids: Vec<(u64, ExitStatus)> = out
        .exits
        .iter()
        .map(|(p, e)| (*p, e.clone()))
        .filter(|(p, _)| children && *p != u64::from(out.pid))
        .collect();
    pids.sort_by_key(|(p, _)| *p);
    pids.insert(0, (u64::from(out.pid), out.exit.clone()));
    for (pid, exit) in pids {
        if ps.iter().any(|p| p.pid == Some(pid)) {
            continue;
        }
        let mut p = ProcessInfo {
            pid: Some(pid),
            tool: Some(out.engine.name().to_string()),
            command: if pid == u64::from(out.pid) {
                cmd.to_vec()
            } else {
                Vec::new()
            },
            complete: true,
            exit: Some(exit),
            ..ProcessInfo::default()
        };
        crate::parse::mark_killed(&mut p);
        ps.push(p);
    }
}

/// The signal the sanitizer runtime caught in the target (its own crash
/// report, `LeakSanitizer: SEGV on unknown address`), when it then ended
/// the target with its exit code: that signal, and the note saying so.
pub(super) fn runtime_crash(ps: &[ProcessInfo], out: &RunOutcome) -> Option<(String, String)> {
    if out.engine == Engine::Valgrind || out.exit != ExitStatus::Code(LSAN_EXIT_CODE) {
        return None;
    }
    let sig = ps
        .iter()
        .find(|p| p.pid == Some(u64::from(out.pid)))?
        .fatal_signal
        .clone()?;
    let note = format!(
        "the {} runtime caught {sig} in the target, wrote its crash report and ended it with exit code {LSAN_EXIT_CODE}: the target crashed",
        out.engine.name()
    );
    Some((sig, note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::attribute::UserSpec;
    use crate::model::Frame;

    const PY: &str = "/usr/lib/libpython3.11.so.1.0";

    fn fr(obj: &str, func: &str) -> Frame {
        Frame {
            obj: Some(obj.into()),
            func: Some(func.into()),
            ..Frame::default()
        }
    }

    fn grown(test: Option<&str>, what: &str, funcs: &[(&str, &str)]) -> Grown {
        Grown {
            test: test.map(str::to_string),
            rec: Record {
                kind: "Leak_DefinitelyLost".into(),
                what: what.into(),
                stack: funcs.iter().map(|(o, f)| fr(o, f)).collect(),
                ..Record::default()
            },
        }
    }

    const GREW: &str =
        "133 (+133) bytes in 1 (+1) blocks are definitely lost in loss record 1 of 1";
    const CUT: &[(&str, &str)] = &[(PY, "malloc"), (PY, "_PyBytes_FromSize")];
    const EXACT: &[(&str, &str)] = &[
        (PY, "malloc"),
        (PY, "_PyBytes_FromSize"),
        ("/x/ext.so", "leak_bytes"),
        (PY, "cfunction_call"),
    ];

    fn attributor() -> Attributor {
        Attributor::new(UserSpec {
            roots: vec![],
            user_objects: vec![],
        })
    }

    fn cut_of(g: &Grown) -> Cut {
        Cut {
            count: 1,
            first: None,
            keys: [stacks::key(&g.rec)].into_iter().collect(),
        }
    }

    #[test]
    fn only_the_tests_where_cut_leaks_grew_run_again() {
        let g = grown(Some("t.py::test_bytes"), GREW, CUT);
        let shrank = grown(
            Some("t.py::test_other"),
            "0 (-133) bytes in 0 (-1) blocks are definitely lost in loss record 1 of 1",
            CUT,
        );
        let (tests, cut) = tests_to_rerun(&cut_of(&g), &[g.clone(), shrank], &mut attributor(), 40)
            .expect("tied to a test");
        assert_eq!(tests, ["t.py::test_bytes"]);
        assert_eq!(cut.len(), 1);
        // Grown outside a test (before the first one): the whole target.
        let at_start = grown(None, GREW, CUT);
        assert!(tests_to_rerun(&cut_of(&at_start), &[at_start], &mut attributor(), 40).is_none());
        // Seen only by the final check: the whole target.
        assert!(tests_to_rerun(&cut_of(&g), &[], &mut attributor(), 40).is_none());
    }

    #[test]
    fn a_cut_leak_gets_the_one_exact_stack_that_holds_it() {
        let g = grown(Some("t.py::test_bytes"), GREW, CUT);
        let e = grown(Some("t.py::test_bytes"), GREW, EXACT);
        let map = match_stacks(std::slice::from_ref(&g), std::slice::from_ref(&e)).unwrap();
        assert_eq!(map[&stacks::key(&g.rec)], e.rec.stack);
        // Another test's leak is not this one's.
        let elsewhere = grown(Some("t.py::test_other"), GREW, EXACT);
        assert!(match_stacks(std::slice::from_ref(&g), &[elsewhere]).is_none());
        // Two different exact stacks with the same growth: ambiguous.
        let mut other = EXACT.to_vec();
        other[2] = ("/x/ext.so", "leak_bytes_too");
        let e2 = grown(Some("t.py::test_bytes"), GREW, &other);
        assert!(match_stacks(std::slice::from_ref(&g), &[e, e2]).is_none());
    }
}
