//! `leakgate run --engine lsan|asan`: what the sanitizer engines add around
//! a run. The first run unwinds allocation stacks through frame pointers
//! (near native speed); code built without them (CPython, most system
//! libraries) cuts such a stack short, and a leak whose stack was cut with
//! none of the user's frames left in it may be the user's (an object leaked
//! through CPython's allocator: the extension's frame is the one skipped)
//! or the interpreter's. Such a leak is never judged on the cut stack: the
//! target is run again with exact unwinding (`fast_unwind_on_malloc=0`),
//! and that run's reports are the ones analysed. Also here: what each
//! engine does not check (the report's `engine`), the options that only
//! Valgrind has, and the target's exit status when the runtime replaced it.

use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};

use crate::analyze::{Observer, checkpoints::parse_delta};
use crate::cli::{Engine, RunArgs};
use crate::model::{ExitStatus, Record};
use crate::report::EngineOut;
use crate::run::{LSAN_EXIT_CODE, RunOutcome};

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
    v.push("which test leaked objects the garbage collector lists (they are found at exit)".into());
    v.push("leaked frame-stack chunks of CPython 3.11+ (mapped, not heap blocks)".into());
    v
}

/// The report's `engine` for a sanitizer run.
pub(super) fn engine_out(out: &RunOutcome, exact: bool) -> Option<EngineOut> {
    // Not the analysis's guess from the logs: the engine that ran.
    (out.engine != Engine::Valgrind).then(|| EngineOut {
        name: out.engine.name().to_string(),
        runtime: Some(out.valgrind_path.display().to_string()),
        not_checked: not_checked(out.engine),
        unwind: Some(if exact { "exact" } else { "fast" }.to_string()),
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

/// How many cut-short records were seen, and the first one's function.
pub(super) type CutSeen = Arc<Mutex<(u64, Option<String>)>>;

/// An observer counting the final leak records whose stacks were cut
/// short and hold none of the user's frames (those the first run cannot
/// judge), and the one such record it saw first (for the note).
pub(super) fn cut_observer(max_frames: usize) -> (Observer, CutSeen) {
    let seen = Arc::new(Mutex::new((0u64, None)));
    let s = seen.clone();
    let obs: Observer = Arc::new(move |rec, att, _p, _suppressed| {
        if !rec.is_leak() || parse_delta(&rec.what).is_some() || att.source.is_none() {
            return;
        }
        if cut_short(rec, max_frames) {
            let mut g = s.lock().expect("cut observer");
            g.0 += 1;
            if g.1.is_none() {
                g.1 = rec
                    .stack
                    .iter()
                    .filter_map(|f| f.func.as_deref())
                    .find(|f| !is_allocator(f))
                    .map(str::to_string);
            }
        }
    });
    (obs, seen)
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
