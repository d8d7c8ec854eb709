//! The human-readable renderer: a verdict line, the user's findings with
//! location, source line, a short stack and the auxiliary stacks (where the
//! block was freed or allocated), one line per noise source, and a
//! summary. Colour only when asked for (a terminal without `NO_COLOR`).

use std::fmt::Write as _;

use crate::report::{Finding, FrameOut, Growth, Report, Status};
use crate::util::{plural, shell_join, thousands};

mod processes;
use processes::process_table;

/// Rendering options.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub color: bool,
    /// Full stacks and every noise finding.
    pub verbose: bool,
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn red(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    fn green(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.paint("1;33", s)
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

fn frame_str(f: &FrameOut) -> String {
    let name = f.function.as_deref().unwrap_or("???");
    let name = if name.chars().count() > 100 {
        let cut: String = name.chars().take(97).collect();
        format!("{cut}...")
    } else {
        name.to_string()
    };
    match (&f.file, f.line) {
        (Some(file), Some(l)) => match crate::render::ci::generated_text(f.generated.as_ref()) {
            Some(g) => format!("{name} ({file}:{l}, {g})"),
            None => format!("{name} ({file}:{l})"),
        },
        _ => match &f.object {
            Some(o) => format!("{name} (in {o})"),
            None => name,
        },
    }
}

/// Which frames of a finding's main stack to print: all with `-v` or when
/// there are few, else those [`shown_frames`](crate::render::shown_frames) picks.
fn main_keep(frames: &[FrameOut], verbose: bool) -> Vec<bool> {
    if verbose || frames.len() <= 6 {
        return vec![true; frames.len()];
    }
    crate::render::shown_frames(frames)
}

/// Which frames of an auxiliary stack (where the block was freed or
/// allocated) to print: all with `-v`; else only the user's frames and the
/// frame each side, up to the outermost user frame (the free site is the
/// point, not the interpreter or test harness that called it).
fn aux_keep(frames: &[FrameOut], verbose: bool) -> Vec<bool> {
    if verbose {
        return vec![true; frames.len()];
    }
    let mut keep = crate::render::shown_frames(frames);
    if let Some(last) = frames.iter().rposition(|f| f.user) {
        keep[last + 1..].fill(false);
    }
    keep
}

/// Writes the frames `keep` marks, one a line (the user's marked `>`), the
/// others as `... N frames` between them and `... N more frames` after.
fn write_frames(o: &mut String, frames: &[FrameOut], keep: &[bool], st: &Style) {
    let mut last: Option<usize> = None;
    for (idx, fr) in frames.iter().enumerate().filter(|(i, _)| keep[*i]) {
        let gap = last.map_or(idx, |l| idx - l - 1);
        if gap > 0 {
            let _ = writeln!(o, "         {}", st.dim(&format!("... {gap} frames")));
        }
        last = Some(idx);
        let mark = if fr.user { ">" } else { " " };
        let line = format!("       {mark} {}", frame_str(fr));
        let _ = writeln!(o, "{}", if fr.user { st.bold(&line) } else { line });
    }
    if let Some(l) = last
        && l + 1 < frames.len()
    {
        let _ = writeln!(
            o,
            "         {}",
            st.dim(&format!("... {} more frames", frames.len() - l - 1))
        );
    }
}

fn verdict_line(r: &Report, st: &Style) -> String {
    let what = crate::render::user_findings_phrase(r);
    match r.verdict.status.as_str() {
        "pass" => format!("{} {what}", st.green("PASS:")),
        "fail" => format!("{} {what}", st.red("FAIL:")),
        "incomplete" => format!(
            "{} {what} (the report is incomplete)",
            st.yellow("INCOMPLETE:")
        ),
        "target_failed" => format!(
            "{} {what}, but the target failed",
            st.yellow("TARGET FAILED:")
        ),
        _ => format!("{} {what}", st.red("ERROR:")),
    }
}

/// `1 process`, or `1 process (2 XML parts)` when a process exec'd.
fn processes_str(r: &Report) -> String {
    let n = r.process_count();
    let parts = r.processes.len() as u64;
    let s = plural(n, "process", "processes");
    if parts > n {
        format!("{s} ({parts} XML parts)")
    } else {
        s
    }
}

/// `func (file:line)`, or `func (in object)`, for a finding's location.
fn location_str(l: &crate::report::Location) -> String {
    let func = l.function.as_deref().unwrap_or("???");
    match (&l.file, l.line, &l.object) {
        (Some(file), Some(n), _) => format!("{func} ({file}:{n})"),
        (_, _, Some(obj)) => format!("{func} (in {obj})"),
        _ => func.to_string(),
    }
}

/// Renders the whole report.
/// How many not-gated findings a passing report shows one by one.
pub const PASS_CARDS: usize = 10;

/// The not-gated findings of a pass, one line per kind and reason, with
/// where their details are.
fn not_gated_counts(o: &mut String, user: &[&Finding]) {
    /// (kind, reason) → (findings, bytes).
    type Group<'a> = ((&'a str, &'a str), (u64, u64));
    let mut groups: Vec<Group> = Vec::new();
    for f in user {
        let why = if f.is_known() {
            "known from the baseline"
        } else if f.at_import {
            "made once at import"
        } else {
            "not in --fail-on"
        };
        let key = (f.kind.as_str(), why);
        let bytes = if f.is_leak() { f.bytes.unwrap_or(0) } else { 0 };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => {
                v.0 += 1;
                v.1 = v.1.saturating_add(bytes);
            }
            None => groups.push((key, (1, bytes))),
        }
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "not gated: {} in your code (details: --verbose, --format json or --html):",
        plural(user.len() as u64, "finding", "findings")
    );
    for ((kind, why), (n, bytes)) in groups {
        let amount = if bytes > 0 {
            format!(", {}", plural(bytes, "byte", "bytes"))
        } else {
            String::new()
        };
        let _ = writeln!(o, "  {kind}: {n}{amount} ({why})");
    }
}

pub fn render(r: &Report, opts: TextOptions) -> String {
    let st = Style { on: opts.color };
    let mut o = String::new();
    let vg = match (&r.valgrind.version, r.valgrind.protocol) {
        (Some(v), Some(p)) => format!("valgrind {v} (XML protocol {p})"),
        (Some(v), None) => format!("valgrind {v}"),
        (None, Some(p)) => format!("valgrind (XML protocol {p})"),
        (None, None) => "valgrind (version unknown)".into(),
    };
    let vg = match &r.engine {
        Some(e) => e.name.clone(),
        None => vg,
    };
    let _ = writeln!(
        o,
        "{} {} · {} · {}",
        r.tool.name,
        r.tool.version,
        vg,
        processes_str(r)
    );
    if r.mode == "run" {
        let mut exit = match &r.target_exit {
            Some(crate::model::ExitStatus::Code(c)) => format!("exit code {c}"),
            Some(crate::model::ExitStatus::Signal(s)) => format!("killed by {s}"),
            None => "exit unknown".into(),
        };
        if let Some(t) = &r.target_running_test {
            exit.push_str(&format!(" in test {t}"));
        }
        let _ = writeln!(o, "target: {} ({exit})", shell_join(&r.command));
    } else {
        let _ = writeln!(o, "analysed: {}", shell_join(&r.command));
    }
    if let Some(e) = &r.engine {
        let _ = writeln!(o, "{}", e.line());
    }
    for e in &r.environment {
        let _ = writeln!(o, "environment: {e}");
    }
    if let Some(stopped) = &r.stopped {
        let _ = writeln!(o, "{} {}", st.yellow("stopped:"), stopped.detail);
    }
    process_table(&mut o, r);
    let _ = writeln!(o);
    let _ = writeln!(o, "{}", verdict_line(r, &st));
    for reason in &r.verdict.reasons {
        let _ = writeln!(o, "  - {reason}");
    }
    let mut user: Vec<&Finding> = r.findings.iter().filter(|f| f.is_user_shown()).collect();
    by_test(&mut o, r, &user, &st);
    // A pass is a few lines: past `PASS_CARDS` not-gated findings, they
    // are counted by kind and reason instead of shown one by one.
    if !opts.verbose && r.verdict.status == Status::Pass && user.len() > PASS_CARDS {
        not_gated_counts(&mut o, &user);
        user.clear();
    }
    for (i, f) in user.iter().enumerate() {
        let _ = writeln!(o);
        // Leaks made once at import come last, under their own heading.
        if f.at_import && (i == 0 || !user[i - 1].at_import) {
            let _ = writeln!(
                o,
                "{}",
                st.bold(&format!("{}:", crate::analyze::import_time::GROUP))
            );
        }
        let amount = if f.is_leak() {
            let bytes = f.bytes.unwrap_or(0);
            // How the total splits, in the summary line's words.
            format!(
                "{} in {}",
                crate::render::bytes_split(bytes, f.direct_bytes.unwrap_or(bytes)),
                plural(f.blocks.unwrap_or(0), "block", "blocks")
            )
        } else {
            plural(f.count, "occurrence", "occurrences")
        };
        let gated = if f.is_known() {
            " (known from the baseline, not gated)"
        } else if f.is_gated() {
            if f.baseline.is_some() { " (new)" } else { "" }
        } else if f.at_import {
            " (made once at import, not gated)"
        } else {
            " (reported, not gated)"
        };
        let _ = writeln!(
            o,
            "{:>3}. {} — {amount}{gated}",
            i + 1,
            st.bold(f.kind.as_str())
        );
        if !f.is_leak() && !f.message.is_empty() {
            let _ = writeln!(o, "     {}", f.message);
        }
        if let Some(loc) = &f.location {
            let func = loc.function.as_deref().unwrap_or("???");
            let place = match (&loc.file, loc.line) {
                (Some(file), Some(l)) => format!("{file}:{l}"),
                _ => loc.object.clone().unwrap_or_else(|| "???".into()),
            };
            // Cython: `leaky.pyx:12 (generated leaky.c:2977) in leaky.leak_def`.
            let generated = crate::render::ci::generated_text(loc.generated.as_ref())
                .map(|g| format!(" ({g})"))
                .unwrap_or_default();
            let _ = writeln!(o, "     at {}{generated} in {}", st.bold(&place), func);
            if let Some(p) = &loc.path
                && loc.file.as_deref() != Some(p.as_str())
            {
                let _ = writeln!(o, "     {}", st.dim(p));
            }
            if let Some(g) = loc.generated.as_ref().filter(|g| !g.source_found) {
                let file = loc.file.as_deref().unwrap_or("the source");
                let from = g.file.as_deref().unwrap_or("the generated file");
                let _ =
                    writeln!(
                    o,
                    "     {}",
                    st.dim(&format!(
                        "({file} not found here: the line shown is the copy {} wrote into {from})",
                        if g.generator == "cython" { "Cython" } else { g.generator.as_str() }
                    ))
                );
            }
            match (&f.source_line, loc.line) {
                (Some(src), Some(l)) => {
                    let _ = writeln!(o, "     {:>5} | {}", l, src.trim_end());
                }
                (None, Some(_)) => {
                    let _ = writeln!(o, "     {}", st.dim("(source file not readable here)"));
                }
                _ => {}
            }
        }
        for p in &f.indirect_parts {
            let _ = writeln!(
                o,
                "     with it, indirectly lost: {}",
                crate::render::indirect_part_text(p)
            );
        }
        if let Some(n) = &f.location_note {
            let _ = writeln!(o, "     note: {n}");
        }
        if let Some(a) = &f.advice {
            let _ = writeln!(o, "     fix: {a}");
        }
        // A block another library made for your call: which one.
        if let Some(why) = &f.reason {
            let _ = writeln!(o, "     {}", st.dim(why));
        }
        if !f.tests.is_empty() {
            if f.is_leak() {
                let _ = writeln!(o, "     {}", growth_text(f));
            } else {
                let _ = writeln!(o, "     first occurred in:");
            }
            const SHARES: usize = 10;
            for t in f.tests.iter().take(SHARES) {
                let _ = writeln!(o, "       {}", share_text(t));
            }
            if f.tests.len() > SHARES && !opts.verbose {
                let _ = writeln!(o, "       ... {} more", f.tests.len() - SHARES);
            } else {
                for t in f.tests.iter().skip(SHARES) {
                    let _ = writeln!(o, "       {}", share_text(t));
                }
            }
        }
        if f.stack.is_empty() {
            if !f.pids.is_empty() {
                let pids: Vec<String> = f.pids.iter().map(|p| p.to_string()).collect();
                let _ = writeln!(o, "     in process {}", pids.join(", "));
            }
            continue;
        }
        let _ = writeln!(o, "     stack:");
        write_frames(&mut o, &f.stack, &main_keep(&f.stack, opts.verbose), &st);
        for a in &f.aux_stacks {
            let text = if a.text.is_empty() {
                "another stack"
            } else {
                a.text.as_str()
            };
            let _ = writeln!(o, "     {text}:");
            write_frames(&mut o, &a.stack, &aux_keep(&a.stack, opts.verbose), &st);
        }
        if f.pids.len() > 1 {
            let pids: Vec<String> = f.pids.iter().map(|p| p.to_string()).collect();
            let _ = writeln!(o, "     in processes {}", pids.join(", "));
        } else if r.processes.len() > 1
            && let Some(p) = f.pids.first()
        {
            let _ = writeln!(o, "     in process {p}");
        }
        if !f.inherited_by.is_empty() {
            let pids: Vec<String> = f.inherited_by.iter().map(|p| p.to_string()).collect();
            let _ = writeln!(
                o,
                "     also inherited by fork child{} {} (the same blocks, not a second leak)",
                if pids.len() == 1 { "" } else { "ren" },
                pids.join(", ")
            );
        }
    }
    let _ = writeln!(o);
    let noise = &r.summary.noise;
    if noise.by_source.is_empty() {
        let _ = writeln!(o, "noise: none");
    } else {
        let parts: Vec<String> = noise
            .by_source
            .iter()
            .map(|(k, n)| {
                let bytes = noise.bytes_by_source.get(k).copied().unwrap_or(0);
                if bytes > 0 {
                    format!(
                        "{k}: {} ({})",
                        plural(*n, "record", "records"),
                        plural(bytes, "byte", "bytes")
                    )
                } else {
                    format!("{k}: {}", plural(*n, "record", "records"))
                }
            })
            .collect();
        let _ = writeln!(o, "noise (not yours): {}", parts.join(", "));
        if opts.verbose {
            for f in r.findings.iter().filter(|f| !f.is_user()) {
                // The deciding frame (whose library labels the noise), not
                // the allocator it called.
                let top = match &f.location {
                    Some(l) => location_str(l),
                    None => f
                        .stack
                        .iter()
                        .find(|fr| fr.function.is_some())
                        .map(frame_str)
                        .unwrap_or_default(),
                };
                let _ = writeln!(
                    o,
                    "  {} {} ×{} {}",
                    f.source.as_deref().unwrap_or("?"),
                    f.kind,
                    f.records,
                    top
                );
                if let Some(why) = &f.reason {
                    let _ = writeln!(o, "      {}", st.dim(&format!("why not yours: {why}")));
                }
            }
        }
    }
    if r.summary.suppressed.records > 0 {
        let _ = writeln!(
            o,
            "suppressed: {} by {}",
            plural(r.summary.suppressed.records, "record", "records"),
            plural(
                r.summary.suppressed.by_suppression.len() as u64,
                "rule",
                "rules"
            )
        );
    }
    for p in r.processes.iter().filter(|p| !p.client_messages.is_empty()) {
        let marker = crate::probe::MARKER_PREFIX.trim_end();
        // The probe's own lines (checkpoint markers, the exit hook's
        // `leakgate-gc` summary, kept in the JSON) are not the target's.
        let ours = |m: &str| m.starts_with(marker) || m.starts_with(crate::probe::GC_PREFIX);
        for m in p.client_messages.iter().filter(|m| !ours(m)) {
            let _ = writeln!(
                o,
                "client message (pid {}): {}",
                p.pid.unwrap_or(0),
                m.trim()
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let u = &r.summary.user;
    // The findings' own words: a definite leak's bytes with the indirect
    // blocks it owns, and the indirect findings it owns not counted again.
    let (lost, direct, _) = crate::render::definitely_lost(r);
    let _ = writeln!(
        o,
        "summary: {} read; yours: {} ({} definitely lost, {}); noise: {}; suppressed: {}",
        plural(r.summary.records, "record", "records"),
        plural(user.len() as u64, "finding", "findings"),
        crate::render::bytes_split(lost, direct),
        plural(u.errors, "error", "errors"),
        plural(noise.findings, "finding", "findings"),
        thousands(r.summary.suppressed.records)
    );
    o
}

/// `per call: +16 bytes in 1 block each time it ran`, `one-time`, ...
fn growth_text(f: &Finding) -> String {
    match (f.growth.map(Growth::as_str), &f.per_call) {
        (Some("per_call"), Some(pc)) => format!(
            "grows per call: +{} in +{} each time it ran",
            plural(pc.bytes, "byte", "bytes"),
            plural(pc.blocks, "block", "blocks")
        ),
        (Some("one_time"), _) => "one-time: grew once and not again".into(),
        // Why it is unknown is said once, under the per-test heading.
        _ => "grew in:".into(),
    }
}

/// `tests/t.py::test_a: +48 bytes in 3 blocks (16, 16, 16 per repetition)`.
fn share_text(t: &crate::report::TestShare) -> String {
    if t.errors > 0 && t.bytes == 0 && t.blocks == 0 {
        return format!(
            "{}: {}",
            t.test,
            plural(t.errors, "error context", "error contexts")
        );
    }
    let mut s = format!(
        "{}: +{} in {}",
        t.test,
        plural(t.bytes, "byte", "bytes"),
        plural(t.blocks, "block", "blocks")
    );
    if !t.repetitions.is_empty() {
        let reps: Vec<String> = t.repetitions.iter().map(|r| thousands(r.bytes)).collect();
        s.push_str(&format!(" ({} bytes per repetition)", reps.join(", ")));
    }
    s
}

/// The user findings grouped by the test (checkpoint) they grew in.
/// The run order of the checkpoints the findings name: each finding lists
/// its shares in run order, so the lists are merged (a topological order of
/// "came before" pairs; ties by first appearance). Test, `checkpoint()` and
/// `finish` rows alike.
fn run_order(
    keys: &[(String, String)],
    user: &[&Finding],
) -> std::collections::HashMap<(String, String), usize> {
    use std::collections::HashMap;
    let idx: HashMap<&(String, String), usize> =
        keys.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let n = keys.len();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut preds = vec![0usize; n];
    for f in user {
        let seq: Vec<usize> = f
            .tests
            .iter()
            .filter_map(|t| idx.get(&(t.kind.clone(), t.test.clone())).copied())
            .collect();
        for w in seq.windows(2) {
            if w[0] != w[1] && !after[w[0]].contains(&w[1]) {
                after[w[0]].push(w[1]);
                preds[w[1]] += 1;
            }
        }
    }
    let mut out = HashMap::new();
    let mut done = vec![false; n];
    while out.len() < n {
        // The first key (by appearance) with nothing left before it; on a
        // cycle (inconsistent input), the first key left.
        let next = (0..n)
            .find(|&i| !done[i] && preds[i] == 0)
            .or_else(|| (0..n).find(|&i| !done[i]))
            .expect("a key is left");
        done[next] = true;
        for &j in &after[next] {
            preds[j] = preds[j].saturating_sub(1);
        }
        out.insert(keys[next].clone(), out.len());
    }
    out
}

fn by_test(o: &mut String, r: &Report, user: &[&Finding], st: &Style) {
    let Some(pt) = &r.per_test else { return };
    let mut order: Vec<(String, String)> = Vec::new();
    for f in user {
        for t in &f.tests {
            let k = (t.kind.clone(), t.test.clone());
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    let rank = |k: &(String, String)| {
        pt.tests
            .iter()
            .position(|t| k.0 == "test" && *t == k.1)
            .unwrap_or(usize::MAX)
    };
    let place = |k: &(String, String)| (k.0 != "start", matches!(k.0.as_str(), "exit" | "outside"));
    // Tests by the run's own list first; then `checkpoint()` and `finish`
    // rows slot in where the findings' run-ordered shares put them.
    order.sort_by_key(|k| (place(k), rank(k)));
    let run_order = run_order(&order, user);
    order.sort_by_key(|k| (place(k), run_order.get(k).copied().unwrap_or(usize::MAX)));
    let _ = writeln!(o);
    let repeat = if pt.repeat > 1 {
        format!(", each run {} times", pt.repeat)
    } else {
        String::new()
    };
    if pt.tests.is_empty() {
        let _ = writeln!(
            o,
            "{} ({}):",
            st.bold("per checkpoint"),
            plural(pt.checkpoints, "checkpoint", "checkpoints")
        );
    } else {
        let _ = writeln!(
            o,
            "{} ({}, {}{repeat}):",
            st.bold("per test"),
            plural(pt.tests.len() as u64, "test", "tests"),
            plural(pt.checkpoints, "checkpoint", "checkpoints")
        );
    }
    if order.is_empty() {
        let _ = writeln!(o, "  no test leaked in your code");
        return;
    }
    let unknown = crate::render::unknown_growth_leaks(r);
    if unknown > 0 {
        let _ = writeln!(
            o,
            "  (growth unknown for {}: {})",
            plural(unknown, "leak", "leaks"),
            crate::render::GROWTH_HINT
        );
    }
    const GROUPS: usize = 20;
    if order.len() > GROUPS {
        let _ = writeln!(
            o,
            "  ({} more below the first {GROUPS}: see each finding, or the JSON report)",
            order.len() - GROUPS
        );
    }
    for (kind, label) in order.iter().take(GROUPS) {
        let _ = writeln!(o, "  {}", st.bold(label));
        for (i, f) in user.iter().enumerate() {
            let Some(t) = f.tests.iter().find(|t| &t.kind == kind && &t.test == label) else {
                continue;
            };
            let place = f
                .location
                .as_ref()
                .map(|l| {
                    let at = match (&l.file, l.line) {
                        (Some(file), Some(n)) => format!("{file}:{n}"),
                        _ => l.object.clone().unwrap_or_else(|| "???".into()),
                    };
                    format!("{at} in {}", l.function.as_deref().unwrap_or("???"))
                })
                .unwrap_or_else(|| "???".into());
            let what = match (t.growth.map(Growth::as_str), &f.per_call) {
                _ if !f.is_leak() => format!(
                    "{} ({})",
                    f.kind.noun().0,
                    plural(t.errors, "error context", "error contexts")
                ),
                (Some("per_call"), Some(pc)) => format!(
                    "leaks {} per call ({}, +{} each time it ran)",
                    plural(pc.bytes, "byte", "bytes"),
                    f.kind.noun().0,
                    plural(pc.blocks, "block", "blocks")
                ),
                (Some("one_time"), _) => format!(
                    "one-time: {} in {} ({})",
                    plural(t.bytes, "byte", "bytes"),
                    plural(t.blocks, "block", "blocks"),
                    f.kind.noun().0
                ),
                _ => format!(
                    "{} in {} ({})",
                    plural(t.bytes, "byte", "bytes"),
                    plural(t.blocks, "block", "blocks"),
                    f.kind.noun().0
                ),
            };
            let _ = writeln!(o, "    #{} {what} at {place}", i + 1);
        }
    }
}

#[cfg(test)]
mod tests;
