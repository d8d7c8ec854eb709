//! `leakgate run --origins auto`: the re-run that finds the origins of the
//! uninitialised-value errors in the user's code. The first run went
//! without `--track-origins=yes`; this re-runs only what had such errors
//! (the pytest tests they first occurred in, known from the checkpoints,
//! or else the whole command) with it, and returns the origins found, for
//! the first run's XML to be analysed again with them
//! (`analyze::origins`).

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use crate::analyze::{self, Analysis, Observer, attribute::Attributor, origins};
use crate::parse::InputError;
use crate::report::{Finding, OriginsOut, RerunOut};
use crate::run::{self, RunConfig};
use crate::suppress::Suppressor;

/// `--origins auto` after the first run: analyses its XML (`analyse`), and
/// when the user's code has uninitialised-value findings without an origin,
/// re-runs what had them and analyses the XML again with the origins found.
/// The analysis returned is the last one, the only one `observer` (the
/// suppression writer) sees.
pub(super) fn analyse_auto(
    cfg: &RunConfig,
    attributor: impl Fn() -> Attributor,
    suppressor: &Arc<Suppressor>,
    observer: Option<Observer>,
    options: analyze::Options,
    analyse: &dyn Fn(Option<Observer>, analyze::Options) -> Result<Analysis, InputError>,
) -> Result<(Analysis, OriginsOut)> {
    let first = analyse(None, options.clone())?;
    let wanting = origins::wanting(&first.findings);
    if wanting.is_empty() {
        let o = OriginsOut {
            mode: "auto".into(),
            ..Default::default()
        };
        let analysis = match observer {
            Some(obs) => analyse(Some(obs), options)?,
            None => first,
        };
        return Ok((analysis, o));
    }
    let found = rerun(cfg, &wanting, attributor(), suppressor.clone())?;
    let wanted = wanting.len();
    let again = analyse(
        observer,
        analyze::Options {
            origins: Some(found.map),
            ..options
        },
    )?;
    let mut o = found.out;
    // Found: no longer a user finding without an origin (an origin may
    // also have made it the interpreter's).
    let still = origins::wanting(&again.findings).len();
    o.found = wanted.saturating_sub(still) as u64;
    Ok((again, o))
}

/// What the re-run found: the origins, and what the report says about it.
struct Found {
    map: Arc<origins::OriginMap>,
    out: OriginsOut,
}

/// Re-runs `cfg` with `--track-origins=yes`, restricted to the pytest
/// tests of `wanting` when all of them are tied to tests.
fn rerun(
    cfg: &RunConfig,
    wanting: &[&Finding],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
) -> Result<Found> {
    let tests = origins::tests_to_rerun(wanting);
    let mut again = cfg.clone();
    again.track_origins = true;
    again.repeat = 1;
    again.only_tests = tests.clone().unwrap_or_default();
    // Origins only: no leak check at exit (nor checkpoints, see
    // `RunConfig::only_tests`; a whole-command re-run takes none either).
    again.extra_args.push("--leak-check=no".into());
    if tests.is_none() {
        again.per_test = run::PerTest::Off;
    } else if run::is_xdist_target(&cfg.cmd) {
        // A few tests: in one process (the last -n wins), not N workers
        // that each pay Valgrind's start-up.
        again.cmd.extend(["-n".to_string(), "0".to_string()]);
    }
    let what = match &tests {
        Some(t) => crate::util::plural(t.len() as u64, "test", "tests"),
        None => "the whole command".to_string(),
    };
    if !matches!(cfg.progress, run::ProgressMode::Never) {
        eprintln!(
            "leakgate: {} in your code without an origin: re-running {what} with --track-origins=yes",
            crate::util::plural(
                wanting.len() as u64,
                "uninitialised-value finding",
                "uninitialised-value findings"
            )
        );
    }
    let started = Instant::now();
    let mut out = run::run(&again)?;
    out.analysing();
    let (observer, map) = origins::collector();
    // The re-run's own findings are not reported: the first run has them
    // all; only its origins are kept.
    let mut exits = out.exits.clone();
    exits.insert(u64::from(out.pid), out.exit.clone());
    let _ = analyze::analyze_files_with(
        &out.reports,
        attributor,
        suppressor,
        &exits,
        Some(observer),
        analyze::Options::default(),
    )?;
    out.end_progress();
    if out.reports.is_empty() {
        // The first run's findings stand; they keep no origin (the note
        // says how many).
        eprintln!(
            "leakgate: warning: the --origins auto re-run wrote no Valgrind XML (its target: {:?}); the findings keep no origin",
            out.exit
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    let map = Arc::new(std::mem::take(
        &mut *map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    ));
    Ok(Found {
        map,
        out: OriginsOut {
            mode: "auto".into(),
            wanted: wanting.len() as u64,
            found: 0,
            rerun: Some(RerunOut {
                scope: if tests.is_some() { "tests" } else { "command" }.into(),
                tests: tests.unwrap_or_default(),
                seconds: (seconds * 10.0).round() / 10.0,
                target_exit: out.exit.clone(),
            }),
        },
    })
}

/// The report's note on the re-run.
pub(super) fn note(o: &OriginsOut) -> Option<String> {
    let r = o.rerun.as_ref()?;
    let what = match r.scope.as_str() {
        "tests" => format!(
            "{} ({})",
            crate::util::plural(r.tests.len() as u64, "test", "tests"),
            r.tests.join(", ")
        ),
        _ => "the whole command".into(),
    };
    Some(
        format!(
            "--origins auto: {} in your code had no origin; re-ran {what} with --track-origins=yes ({:.1} s): {} of {} got {}",
            crate::util::plural(
                o.wanted,
                "uninitialised-value finding",
                "uninitialised-value findings"
            ),
            r.seconds,
            o.found,
            o.wanted,
            if o.found == 1 {
                "its origin"
            } else {
                "their origins"
            }
        ) + if o.found < o.wanted {
            "; the others did not occur again in the re-run (--origins yes gives them theirs)"
        } else {
            ""
        },
    )
}
