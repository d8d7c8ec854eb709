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
use crate::probe::{GARBAGE_COLLECTED_PREFIX, GARBAGE_PREFIX};
use crate::report::EngineOut;
use crate::run::Engine;
use crate::run::{self, LSAN_EXIT_CODE, RunConfig, RunOutcome};

/// What the forked checkers of a sanitizer run found that only a full
/// garbage collection frees, from one read of each log: the
/// [`GARBAGE_PREFIX`] lines (spliced into the logs after their
/// checkpoint's marker) of checkers that could not collect in their own
/// copy, "the checkpoint after TEST found N objects …", and the note for
/// the [`GARBAGE_COLLECTED_PREFIX`] lines of those that did; None where
/// there were none.
pub(super) fn garbage_notes(logs: &[PathBuf]) -> (Option<String>, Option<String>) {
    let [young, copies] = garbage_lines(logs, [GARBAGE_PREFIX, GARBAGE_COLLECTED_PREFIX]);
    let young = young.map(|(label, objects, count)| {
        let found = if objects < 0 {
            "could not tell whether objects were left for the garbage collector".to_string()
        } else {
            format!(
                "found {} that only a full garbage collection frees",
                crate::util::plural(objects as u64, "object", "objects")
            )
        };
        format!(
            "the checkpoint after {label} {found}{}",
            if count > 1 {
                format!(" ({count} such checkpoints)")
            } else {
                String::new()
            }
        )
    });
    let copies = copies.map(|(label, objects, count)| {
        format!(
            "{} (the first after {label}, {}) had objects that only a full garbage collection frees: {} collected fully in {} own sandboxed copy of the process before checking, as a full collection at the checkpoint would have; nothing ran again",
            crate::util::plural(count, "checkpoint", "checkpoints"),
            crate::util::plural(objects.max(0) as u64, "object", "objects"),
            if count == 1 { "its checker" } else { "their checkers" },
            if count == 1 { "its" } else { "their" },
        )
    });
    (young, copies)
}

/// For each prefix, the lines starting with it in the logs (each log read
/// once): the label of the first one's checkpoint, its objects, and how
/// many there were.
fn garbage_lines<const N: usize>(
    logs: &[PathBuf],
    prefixes: [&str; N],
) -> [Option<(String, i64, u64)>; N] {
    let mut found: [Option<(String, i64, u64)>; N] = std::array::from_fn(|_| None);
    for path in logs {
        let Ok(text) = std::fs::read(path) else {
            continue;
        };
        let wanted: Vec<usize> = (0..N)
            .filter(|&i| memchr::memmem::find(&text, prefixes[i].as_bytes()).is_some())
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let mut label = String::new();
        for line in text.split(|&b| b == b'\n') {
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            if let Some(m) = parse_marker(line) {
                label = m.label;
                continue;
            }
            for &i in &wanted {
                let Some(g) = line.strip_prefix(prefixes[i]) else {
                    continue;
                };
                match &mut found[i] {
                    Some((_, _, count)) => *count += 1,
                    None => {
                        let objects = serde_json::from_str::<serde_json::Value>(g.trim_end())
                            .ok()
                            .and_then(|v| v["objects"].as_i64())
                            .unwrap_or(-1);
                        found[i] = Some((label.clone(), objects, 1));
                    }
                }
            }
        }
    }
    found
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
/// stacks were cut short and hold none of the user's frames, and of the
/// user's leaks whose stacks may have skipped a frame.
#[derive(Debug, Default, Clone)]
pub(super) struct Cut {
    /// How many there were.
    pub count: u64,
    /// The first one's function (for the note).
    pub first: Option<String>,
    /// Their stacks (`stacks::key`).
    pub keys: HashSet<u64>,
    /// The user's leaks whose first user frame called code that may keep
    /// no frame pointer (not the allocator itself: `PyFloat_FromDouble`,
    /// `strdup`): fast unwinding skips the frame that called such code, so
    /// the user frame shown may be its caller (`make_list`'s line lost to
    /// `pack_pair`'s). Their stacks (`stacks::key`); they never make the
    /// whole target run again, but the tests they grew in run again with
    /// exact unwinding and their exact stacks replace these.
    pub skipped: HashSet<u64>,
}

/// What [`cut_observer`] fills.
pub(super) type CutSeen = Arc<Mutex<Cut>>;

/// Whether a leak record's stack was cut short by fast unwinding with none
/// of the user's frames left (the attribution gave it a noise source).
fn judged_cut(rec: &Record, source_known: bool, max_frames: usize) -> bool {
    rec.is_leak() && source_known && cut_short(rec, max_frames)
}

/// Whether a user leak's fast stack may have skipped a frame: its first
/// user frame called code other than the allocator (or the runtime), which
/// may keep no frame pointer.
fn may_skip(rec: &Record, user_frames: &[usize]) -> bool {
    let Some(&first) = user_frames.first() else {
        return false;
    };
    let Some(callee) = first.checked_sub(1).and_then(|i| rec.stack.get(i)) else {
        return false;
    };
    let runtime = callee
        .obj
        .as_deref()
        .is_some_and(|o| o.contains("liblsan") || o.contains("libasan") || o.contains("clang_rt"));
    rec.is_leak() && !runtime && !callee.func.as_deref().is_some_and(is_allocator)
}

/// An observer collecting the final leak records whose stacks were cut
/// short and hold none of the user's frames (those the first run cannot
/// judge), and the user's leaks whose stacks may have skipped a frame.
pub(super) fn cut_observer(max_frames: usize) -> (Observer, CutSeen) {
    let seen: CutSeen = Arc::default();
    let s = seen.clone();
    let obs: Observer = Arc::new(move |rec, att, _p, _suppressed| {
        if parse_delta(&rec.what).is_some() {
            return;
        }
        if att.is_user() && may_skip(rec, &att.user_frames) {
            s.lock()
                .expect("cut observer")
                .skipped
                .insert(stacks::key(rec));
            return;
        }
        if !judged_cut(rec, att.source.is_some(), max_frames) {
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
    /// The kind of checkpoint: `test`, `start` (what collection imported),
    /// `finish`, or `exit` (no marker before it).
    at: String,
    rec: Record,
}

/// The leak growth records of the checkpoints in a run's logs. In a run
/// with checkpoints, what a final leak record holds beyond its growth at
/// the checkpoints was there at the `start` one (what collection imported:
/// that checkpoint only sets the baseline, `parse::sanitizer::run_log`),
/// and is listed as its growth there.
fn grown(logs: &[PathBuf]) -> Vec<Grown> {
    let mut out = Vec::new();
    for (i, f) in logs.iter().enumerate() {
        let Ok(bytes) = std::fs::read(f) else {
            continue;
        };
        let mut interner = crate::parse::Interner::default();
        let mut finals: Vec<Record> = Vec::new();
        let mut per_test = false;
        let first = out.len();
        let _ = crate::parse::parse_sanitizer_log(&bytes, f, i, &mut interner, &mut |r, p| {
            if !r.is_leak() {
                return;
            }
            per_test = per_test
                || p.client_messages
                    .iter()
                    .any(|m| parse_marker(m).is_some_and(|m| m.kind == "start"));
            if parse_delta(&r.what).is_none() {
                finals.push(r);
                return;
            }
            let marker = (r.client_msgs as usize)
                .checked_sub(1)
                .and_then(|m| p.client_messages.get(m))
                .and_then(|m| parse_marker(m));
            let at = marker
                .as_ref()
                .map_or("exit", |m| m.kind.as_str())
                .to_string();
            let test = marker.filter(|m| m.kind == "test").map(|m| m.label);
            out.push(Grown { test, at, rec: r });
        });
        if !per_test {
            continue;
        }
        let mut since: std::collections::HashMap<u64, (i64, i64)> = Default::default();
        for g in &out[first..] {
            let (b, n) = parse_delta(&g.rec.what).unwrap_or_default();
            let e = since.entry(stacks::key(&g.rec)).or_default();
            *e = (e.0 + b, e.1 + n);
        }
        for mut r in finals {
            let (b, n) = since.get(&stacks::key(&r)).copied().unwrap_or_default();
            let sb = r.leaked_bytes.unwrap_or(0) as i64 - b;
            let sn = r.leaked_blocks.unwrap_or(0) as i64 - n;
            if sb <= 0 && sn <= 0 {
                continue;
            }
            let rest = r
                .what
                .split_once(" blocks ")
                .map_or("", |(_, t)| t)
                .to_string();
            r.what = format!("{sb} (+{sb}) bytes in {sn} (+{sn}) blocks {rest}");
            out.push(Grown {
                test: None,
                at: "start".into(),
                rec: r,
            });
        }
    }
    out
}

/// What runs again with exact unwinding: the tests, the cut leaks' growth
/// and the growth of the user's leaks that may have skipped a frame.
type Plan = (Vec<String>, Vec<Grown>, Vec<Grown>);

/// The tests to run again with exact unwinding: those whose checkpoints
/// saw the cut leaks grow, or the user's leaks that may have skipped a
/// frame, with those growth records (cut, skipped). A cut leak that grew
/// outside any test (what collection imported, the end of the session,
/// the exit check) is looked for at the same checkpoint of the re-run,
/// which collects the whole session and ends as the first run did. Why
/// not, when a cut leak grew at no checkpoint at all (not a per-test run):
/// then the whole target runs again (when there are cut leaks).
fn tests_to_rerun(
    cut: &Cut,
    first: &[Grown],
    attributor: &mut Attributor,
    max_frames: usize,
) -> Result<Plan, String> {
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
    let unseen = cut.keys.iter().filter(|k| !keys.contains(k)).count();
    if unseen > 0 {
        return Err(format!(
            "{} grew at no checkpoint",
            crate::util::plural(unseen as u64, "cut leak", "cut leaks")
        ));
    }
    // The user's leaks that may have skipped a frame, where they grew in a
    // test (elsewhere their fast stacks stay).
    let skipped: Vec<Grown> = first
        .iter()
        .filter(|g| {
            g.test.is_some()
                && cut.skipped.contains(&stacks::key(&g.rec))
                && parse_delta(&g.rec.what).is_some_and(|(b, n)| b > 0 || n > 0)
        })
        .cloned()
        .collect();
    if cut_grown.is_empty() && skipped.is_empty() {
        return Err("no leak grew at a checkpoint".into());
    }
    let tests: BTreeSet<String> = cut_grown
        .iter()
        .chain(&skipped)
        .filter_map(|g| g.test.clone())
        .collect();
    Ok((tests.into_iter().collect(), cut_grown, skipped))
}

/// The exact stack of each cut leak, from the re-run's growth records: one
/// of the same kind in the same test whose stack holds the cut one's
/// frames in order (the same growth preferred), or, for a cut record that
/// grew in one test only and whose stack several exact ones hold that add
/// up to its growth, those (fast unwinding folded them into one record:
/// [`stacks::Exact::Split`]). Why not, when a cut leak has neither.
fn match_stacks(
    cut: &[Grown],
    exact: &[Grown],
    first: &[Grown],
    attributor: &mut Attributor,
) -> Result<stacks::StackMap, String> {
    let mut map = stacks::StackMap::new();
    let shared = assign(cut, exact);
    for (k, grown) in group(cut) {
        let found = one_stack(&grown, exact)
            .map(stacks::Exact::One)
            .or_else(|| split(&grown, exact).map(stacks::Exact::Split))
            .or_else(|| shared.get(&k).cloned())
            .or_else(|| one_judgement(&grown, exact, attributor).map(stacks::Exact::One));
        if found.is_none() && held_by_a_definite_leak(&grown, first) {
            // Reported with the definite leak that holds it, which is
            // judged on its own (exact) stack: this one keeps its fast one.
            continue;
        }
        let found = found.ok_or_else(|| {
            let g = grown[0];
            let fits = fitting(g, exact).len();
            format!(
                "the re-run showed {} for the {} leak cut at {} ({} at {})",
                if fits == 0 {
                    "no exact stack".to_string()
                } else {
                    format!("{fits} exact stacks that do not add up")
                },
                g.rec.kind,
                g.rec
                    .stack
                    .iter()
                    .filter_map(|f| f.func.as_deref())
                    .find(|f| !is_allocator(f))
                    .unwrap_or("?"),
                g.test.as_deref().unwrap_or("no test"),
                g.at
            )
        })?;
        map.insert(k, found);
    }
    Ok(map)
}

/// Whether a cut leak is an indirect one while the first run lost definite
/// ones: an indirect block is lost because a definite one that holds it
/// is, and that one is judged on its own stack (exact, or whole from the
/// start), so the indirect one decides nothing the definite one does not
/// (a block the user's code made that the interpreter's leaked object
/// holds is not the user's leak; one the user's leaked object holds fails
/// the run through that object). The re-run of a few tests may also not
/// make the same indirect blocks (a dict's keys shared or not, depending on
/// what ran before), so such a leak keeps its fast stack.
fn held_by_a_definite_leak(grown: &[&Grown], first: &[Grown]) -> bool {
    let definite = first.iter().any(|d| {
        *d.rec.kind == *"Leak_DefinitelyLost"
            && parse_delta(&d.rec.what).is_some_and(|(b, _)| b > 0)
    });
    definite && grown.iter().all(|g| *g.rec.kind == *"Leak_IndirectlyLost")
}

/// Growth records by their stack (`stacks::key`), in their order.
fn group(grown: &[Grown]) -> Vec<(u64, Vec<&Grown>)> {
    let mut by_key: Vec<(u64, Vec<&Grown>)> = Vec::new();
    for g in grown {
        let k = stacks::key(&g.rec);
        match by_key.iter_mut().find(|(key, _)| *key == k) {
            Some((_, v)) => v.push(g),
            None => by_key.push((k, vec![g])),
        }
    }
    by_key
}

/// The exact records of `g`'s checkpoint that may be its leak: same kind,
/// the same allocator and caller (fast unwinding gets those two right).
fn fitting<'a>(g: &Grown, exact: &'a [Grown]) -> Vec<&'a Grown> {
    exact
        .iter()
        .filter(|e| {
            e.test == g.test
                && e.at == g.at
                && e.rec.kind == g.rec.kind
                && stacks::same_head(&g.rec.stack, &e.rec.stack)
        })
        .collect()
}

/// The one exact stack every growth of a cut record fits best (most of
/// the cut stack's frames in order, then the same growth), if there is one.
fn one_stack(grown: &[&Grown], exact: &[Grown]) -> Option<Vec<crate::model::Frame>> {
    let mut found: Option<&Vec<crate::model::Frame>> = None;
    for g in grown {
        let fits = fitting(g, exact);
        let best = fits
            .iter()
            .map(|e| stacks::in_order(&g.rec.stack, &e.rec.stack))
            .max()?;
        let fits: Vec<&Grown> = fits
            .into_iter()
            .filter(|e| stacks::in_order(&g.rec.stack, &e.rec.stack) == best)
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
        if found.is_some_and(|f| f != stack) {
            return None;
        }
        found = Some(stack);
    }
    found.cloned()
}

/// When the re-run's leaks do not add up to the cut record's growth (a
/// test leaks a block more or less when it runs after others: a cache
/// filled or not), but every exact record of its checkpoint that holds its
/// allocator and caller is judged the same way (user or noise, at the same
/// deciding frame): the best-fitting one's stack, which judges it as any
/// of them would (its bytes and blocks stay the first run's).
fn one_judgement(
    grown: &[&Grown],
    exact: &[Grown],
    attributor: &mut Attributor,
) -> Option<Vec<crate::model::Frame>> {
    let mut found: Option<(Option<String>, Vec<crate::model::Frame>)> = None;
    for g in grown {
        let fits = fitting(g, exact);
        let mut judged: HashSet<Option<String>> = HashSet::new();
        for e in &fits {
            let att = attributor.attribute(&e.rec);
            let at = att.owner.and_then(|i| e.rec.stack.get(i)).map(|f| {
                format!(
                    "{:?} {} {}:{}",
                    att.source,
                    f.func.as_deref().unwrap_or("?"),
                    f.file.as_deref().unwrap_or("?"),
                    f.line.unwrap_or(0)
                )
            });
            judged.insert(at);
        }
        if judged.len() != 1 {
            return None;
        }
        let only = judged.into_iter().next()?;
        let best = fits
            .iter()
            .max_by_key(|e| stacks::in_order(&g.rec.stack, &e.rec.stack))?;
        match &found {
            Some((j, _)) if *j != only => return None,
            Some(_) => {}
            None => found = Some((only, best.rec.stack.clone())),
        }
    }
    found.map(|(_, s)| s)
}

/// Several cut records of one checkpoint that share their allocator and its
/// caller (`_PyObject_GC_New` called from `gc_alloc`, one with a stale
/// frame beyond) and the exact records of the same checkpoint with that
/// head: each exact record goes to the cut one whose frames it holds most
/// of (a tie: none), and a cut record whose share adds up to its growth
/// gets those records (one: its stack; more: a split). Only cut records
/// that grew at one checkpoint.
fn assign(cut: &[Grown], exact: &[Grown]) -> std::collections::HashMap<u64, stacks::Exact> {
    let mut out = std::collections::HashMap::new();
    let groups = group(cut);
    let once: Vec<&Grown> = groups
        .iter()
        .filter(|(_, g)| g.len() == 1)
        .map(|(_, g)| g[0])
        .collect();
    let mut shares: Vec<Vec<&Grown>> = vec![Vec::new(); once.len()];
    for e in exact {
        let scores: Vec<(usize, usize)> = once
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                g.test == e.test
                    && g.at == e.at
                    && g.rec.kind == e.rec.kind
                    && stacks::same_head(&g.rec.stack, &e.rec.stack)
            })
            .map(|(i, g)| (i, stacks::in_order(&g.rec.stack, &e.rec.stack)))
            .collect();
        let Some(best) = scores.iter().map(|(_, s)| *s).max() else {
            continue;
        };
        let top: Vec<usize> = scores
            .iter()
            .filter(|(_, s)| *s == best)
            .map(|(i, _)| *i)
            .collect();
        if let [i] = top[..] {
            shares[i].push(e);
        }
    }
    for (g, share) in once.iter().zip(shares) {
        let Some(want) = parse_delta(&g.rec.what) else {
            continue;
        };
        let mut parts: Vec<stacks::Part> = Vec::new();
        let mut sum = (0i64, 0i64);
        for e in share {
            let Some((b, n)) = parse_delta(&e.rec.what).filter(|&(b, n)| b > 0 && n > 0) else {
                continue;
            };
            sum = (sum.0 + b, sum.1 + n);
            parts.push(stacks::Part {
                stack: e.rec.stack.clone(),
                bytes: b as u64,
                blocks: n as u64,
            });
        }
        if parts.is_empty() || sum != want {
            continue;
        }
        let found = if parts.len() == 1 {
            stacks::Exact::One(parts.remove(0).stack)
        } else {
            stacks::Exact::Split(parts)
        };
        out.insert(stacks::key(&g.rec), found);
    }
    out
}

/// A cut record that grew in one test, split into the exact records of
/// that test that hold its frames, when their growth adds up to its own.
fn split(grown: &[&Grown], exact: &[Grown]) -> Option<Vec<stacks::Part>> {
    let [g] = grown else {
        return None;
    };
    let (bytes, blocks) = parse_delta(&g.rec.what)?;
    let mut parts: Vec<stacks::Part> = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    for e in fitting(g, exact) {
        let (b, n) = parse_delta(&e.rec.what)?;
        if b <= 0 || n <= 0 || !seen.insert(stacks::key(&e.rec)) {
            return None;
        }
        parts.push(stacks::Part {
            stack: e.rec.stack.clone(),
            bytes: b as u64,
            blocks: n as u64,
        });
    }
    let sum = parts.iter().fold((0i64, 0i64), |(b, n), p| {
        (b + p.bytes as i64, n + p.blocks as i64)
    });
    (parts.len() > 1 && sum == (bytes, blocks)).then_some(parts)
}

/// A pytest node id no test has: `LEAKGATE_ONLY_TESTS` of a re-run that
/// wants the collection and none of the tests.
const NO_TEST: &str = "leakgate::no-test";

/// What the exact-unwinding re-run gave.
pub(super) struct Exact {
    /// The run whose reports are analysed: the first one when only some
    /// tests ran again (or none), else the whole re-run.
    pub out: RunOutcome,
    /// The exact stacks for the first run's cut leaks (some tests re-run).
    pub stacks: Option<Arc<stacks::StackMap>>,
    /// The report's note; `None` when nothing ran again.
    pub note: Option<String>,
    /// The report's `engine.unwind`.
    pub unwind: String,
}

/// Runs again with exact unwinding what the first run (`out`, whose cut
/// leaks and user leaks that may have skipped a frame are `cut`) could not
/// judge: only the pytest tests concerned when every cut leak grew under a
/// test and each one's exact stack is found in the re-run, else (when
/// there are cut leaks) the whole target. The user's leaks that may have
/// skipped a frame take their exact stacks where the re-run of their tests
/// shows them; they alone never make the whole target run again.
pub(super) fn rerun_exact(
    cfg: &RunConfig,
    mut out: RunOutcome,
    cut: &Cut,
    attributor: &mut Attributor,
) -> Result<Exact> {
    let started = std::time::Instant::now();
    let max = cfg.num_callers as usize;
    let cut_what = (cut.count > 0).then(|| {
        format!(
            "{} leak stack{} cut short by fast unwinding in code without frame pointers{}, with none of your frames left",
            cut.count,
            if cut.count == 1 { " was" } else { "s were" },
            cut.first
                .as_ref()
                .map_or_else(String::new, |f| format!(" (the first in {f})")),
        )
    });
    let first = grown(&out.reports);
    let plan = tests_to_rerun(cut, &first, attributor, max);
    if plan.is_err() && cut.count == 0 {
        return Ok(Exact {
            out,
            stacks: None,
            note: None,
            unwind: "fast".into(),
        });
    }
    out.end_progress();
    let why = match plan {
        Err(why) => why,
        Ok((tests, cut_grown, skipped)) => {
            let mut again = RunConfig {
                slow_unwind: true,
                // No test at all (cut leaks of the collection only): an id no
                // test has deselects every one.
                only_tests: if tests.is_empty() {
                    vec![NO_TEST.to_string()]
                } else {
                    tests.clone()
                },
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
            let exact = grown(&rerun.reports);
            match match_stacks(&cut_grown, &exact, &first, attributor) {
                Err(why) => format!(
                    "{why} (after re-running {})",
                    if tests.is_empty() {
                        "the collection".to_string()
                    } else {
                        crate::util::plural(tests.len() as u64, "test", "tests")
                    }
                ),
                Ok(mut map) => {
                    // The skipped ones: where the re-run shows them.
                    let mut fixed = 0u64;
                    for (k, g) in group(&skipped) {
                        if let Some(e) = one_stack(&g, &exact)
                            .map(stacks::Exact::One)
                            .or_else(|| split(&g, &exact).map(stacks::Exact::Split))
                        {
                            fixed += 1;
                            map.insert(k, e);
                        }
                    }
                    let skipped_keys: HashSet<u64> =
                        skipped.iter().map(|g| stacks::key(&g.rec)).collect();
                    let skip_what = (!skipped_keys.is_empty()).then(|| {
                format!(
                    "{} of your leaks came through code without frame pointers, where fast unwinding may skip the frame that called it ({fixed} found again)",
                    skipped_keys.len()
                )
            });
                    let what: Vec<String> = cut_what.into_iter().chain(skip_what).collect();
                    let n = tests.len() as u64;
                    let which = if tests.is_empty() {
                        "the collection only (no test)".to_string()
                    } else {
                        format!(
                            "{} ({})",
                            crate::util::plural(n, "test", "tests"),
                            tests.join(", ")
                        )
                    };
                    return Ok(Exact {
                        out,
                        stacks: Some(Arc::new(map)),
                        note: Some(format!(
                            "{}: re-ran {which} with exact unwinding (fast_unwind_on_malloc=0, {:.1}s); those leaks have that run's stacks, the rest of this report is the first run's",
                            what.join("; "),
                            started.elapsed().as_secs_f64()
                        )),
                        unwind: if tests.is_empty() {
                            "fast, exact for the collection".to_string()
                        } else {
                            format!(
                                "fast, exact for {}",
                                crate::util::plural(n, "re-run test", "re-run tests")
                            )
                        },
                    });
                }
            }
        }
    };
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
        note: Some(format!(
            "{} ({why}): re-ran with exact unwinding (fast_unwind_on_malloc=0, {:.1}s); this report is that run's",
            cut_what.unwrap_or_default(),
            started.elapsed().as_secs_f64()
        )),
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
            at: if test.is_some() { "test" } else { "start" }.to_string(),
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
            skipped: HashSet::new(),
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
        let (tests, cut, _) =
            tests_to_rerun(&cut_of(&g), &[g.clone(), shrank], &mut attributor(), 40)
                .expect("tied to a test");
        assert_eq!(tests, ["t.py::test_bytes"]);
        assert_eq!(cut.len(), 1);
        // Grown outside a test (before the first one): the collection
        // alone runs again.
        let at_start = grown(None, GREW, CUT);
        let (tests, cut, _) =
            tests_to_rerun(&cut_of(&at_start), &[at_start], &mut attributor(), 40)
                .expect("the collection");
        assert!(tests.is_empty());
        assert_eq!(cut.len(), 1);
        // Seen only by the final check: the whole target.
        assert!(tests_to_rerun(&cut_of(&g), &[], &mut attributor(), 40).is_err());
    }

    #[test]
    fn a_cut_leak_gets_the_one_exact_stack_that_holds_it() {
        let g = grown(Some("t.py::test_bytes"), GREW, CUT);
        let e = grown(Some("t.py::test_bytes"), GREW, EXACT);
        let map = match_stacks(
            std::slice::from_ref(&g),
            std::slice::from_ref(&e),
            &[],
            &mut attributor(),
        )
        .unwrap();
        assert_eq!(
            map[&stacks::key(&g.rec)],
            stacks::Exact::One(e.rec.stack.clone())
        );
        // Another test's leak is not this one's.
        let elsewhere = grown(Some("t.py::test_other"), GREW, EXACT);
        assert!(
            match_stacks(
                std::slice::from_ref(&g),
                &[elsewhere],
                &[],
                &mut attributor()
            )
            .is_err()
        );
        // Two different exact stacks with the same growth: ambiguous.
        let mut other = EXACT.to_vec();
        other[2] = ("/x/ext.so", "leak_bytes_too");
        let e2 = grown(Some("t.py::test_bytes"), GREW, &other);
        assert!(
            match_stacks(
                std::slice::from_ref(&g),
                &[e.clone(), e2.clone()],
                &[],
                &mut attributor()
            )
            .is_err()
        );
        // Unless fast unwinding folded both into one record: split.
        let both = grown(
            Some("t.py::test_bytes"),
            "266 (+266) bytes in 2 (+2) blocks are definitely lost in loss record 1 of 1",
            CUT,
        );
        let map = match_stacks(
            std::slice::from_ref(&both),
            &[e.clone(), e2.clone()],
            &[],
            &mut attributor(),
        )
        .unwrap();
        let stacks::Exact::Split(parts) = &map[&stacks::key(&both.rec)] else {
            panic!("not split: {map:?}");
        };
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[1].bytes, parts[1].blocks), (133, 1));
        // Parts that do not add up to the folded growth: no split.
        let three = grown(
            Some("t.py::test_bytes"),
            "399 (+399) bytes in 3 (+3) blocks are definitely lost in loss record 1 of 1",
            CUT,
        );
        assert!(match_stacks(&[three], &[e.clone(), e2.clone()], &[], &mut attributor()).is_err());
        // Two cut records with the same head, one with a stale frame: each
        // exact record goes to the cut one whose frames it holds most of.
        let mut stale = CUT.to_vec();
        stale.push((PY, "stale"));
        let other_cut = grown(Some("t.py::test_bytes"), GREW, &stale);
        let mut plain = CUT.to_vec();
        plain.push(("/x/ext.so", "leak_bytes"));
        let first_cut = grown(Some("t.py::test_bytes"), GREW, &plain);
        let map = match_stacks(
            &[first_cut.clone(), other_cut.clone()],
            &[e.clone(), e2.clone()],
            &[],
            &mut attributor(),
        );
        // e holds leak_bytes (first_cut's frame), e2 holds none of them:
        // a tie for e2 between both cut records, so other_cut has no share.
        assert!(map.is_err());
        let map = assign(&[first_cut.clone(), other_cut], std::slice::from_ref(&e));
        assert_eq!(
            map.get(&stacks::key(&first_cut.rec)),
            Some(&stacks::Exact::One(e.rec.stack.clone()))
        );
        // An indirect leak the re-run did not make again, in a test where a
        // definite one grew: kept with its fast stack.
        let mut ind = grown(Some("t.py::test_bytes"), GREW, CUT);
        ind.rec.kind = "Leak_IndirectlyLost".into();
        assert!(match_stacks(std::slice::from_ref(&ind), &[], &[], &mut attributor()).is_err());
        let map = match_stacks(
            std::slice::from_ref(&ind),
            &[],
            std::slice::from_ref(&g),
            &mut attributor(),
        )
        .unwrap();
        assert!(map.is_empty());
    }
}
