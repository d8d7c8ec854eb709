//! The user's findings as cards: kind, amount, where, the source snippet,
//! the stacks (the main one, then where the block was freed or allocated)
//! with library frames folded, the tests it grew in.

use std::fmt::Write as _;

use super::sources::{Snippet, Sources};
use super::text::{MAX_NAME_CHARS, amount, basename, esc, esc_cut, kind_class};
use crate::report::{Finding, FrameOut, Growth, Report};
use crate::util::{plural, thousands};

/// User findings shown as cards; the rest are counted.
pub const MAX_USER_CARDS: usize = 200;

pub(super) fn user_section(o: &mut String, r: &Report, src: &mut Sources, context: u32) {
    let user: Vec<&Finding> = r.findings.iter().filter(|f| f.is_user_shown()).collect();
    let _ = writeln!(
        o,
        "<section id=\"findings\">\n<h2>Your findings <span class=\"count\">{}</span></h2>",
        thousands(user.len() as u64)
    );
    if user.is_empty() {
        o.push_str(
            "<p class=\"empty\">Nothing in your code: every record leakgate read was noise or suppressed.</p>\n",
        );
    }
    let unknown = crate::render::unknown_growth_leaks(r);
    if unknown > 0 {
        let _ = writeln!(
            o,
            "<p class=\"muted\">Growth unknown for {}: {}.</p>",
            plural(unknown, "leak", "leaks"),
            esc(crate::render::GROWTH_HINT)
        );
    }
    for (i, f) in user.iter().take(MAX_USER_CARDS).enumerate() {
        card(o, i + 1, f, src, context);
    }
    if user.len() > MAX_USER_CARDS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more findings in your code, not shown here (see the JSON report).</p>",
            thousands((user.len() - MAX_USER_CARDS) as u64)
        );
    }
    o.push_str("</section>\n");
}

pub(super) fn card(o: &mut String, n: usize, f: &Finding, src: &mut Sources, context: u32) {
    let gated = f.is_gated();
    let _ = writeln!(
        o,
        "<article class=\"card {}\" id=\"finding-{n}\" data-kind=\"{}\" data-fingerprint=\"{}\">",
        kind_class(&f.kind),
        esc(f.kind.as_str()),
        esc(&f.fingerprint)
    );
    let _ = write!(
        o,
        "<div class=\"chead\"><span class=\"num\">{n}</span><span class=\"badge {}\">{}</span><span class=\"amount\">{}</span>",
        kind_class(&f.kind),
        esc(f.kind.as_str()),
        esc(&amount(f))
    );
    if f.at_import {
        let _ = write!(
            o,
            "<span class=\"tag\" title=\"{}\">made once at import</span>",
            esc(crate::analyze::import_time::GROUP)
        );
    }
    if !gated {
        o.push_str("<span class=\"tag\">reported, not gated</span>");
    }
    if f.records > 1 {
        let _ = write!(
            o,
            "<span class=\"tag\">{}</span>",
            esc(&plural(f.records, "record", "records"))
        );
    }
    o.push_str("</div>\n");
    if !f.is_leak() && !f.message.is_empty() {
        let _ = writeln!(o, "<p class=\"what\">{}</p>", esc(&f.message));
    }
    if let Some(loc) = &f.location {
        let place = match (&loc.file, loc.line) {
            (Some(file), Some(l)) => format!("{}:{l}", basename(file)),
            (Some(file), None) => basename(file).to_string(),
            _ => loc
                .object
                .as_deref()
                .map(basename)
                .unwrap_or("???")
                .to_string(),
        };
        let place = match crate::render::ci::generated_text(loc.generated.as_ref()) {
            Some(g) => format!("{place} ({g})"),
            None => place,
        };
        let _ = writeln!(
            o,
            "<p class=\"where\">at <code class=\"loc\">{}</code> in <code>{}</code></p>",
            esc(&place),
            esc_cut(
                loc.function.as_deref().unwrap_or("???"),
                MAX_NAME_CHARS,
                "fn"
            )
        );
    }
    for p in &f.indirect_parts {
        let _ = writeln!(
            o,
            "<p class=\"what\">with it, indirectly lost: {}</p>",
            esc(&crate::render::indirect_part_text(p))
        );
    }
    if !f.tests.is_empty() {
        let growth = match (f.growth.map(Growth::as_str), &f.per_call) {
            _ if !f.is_leak() => "first occurred in:".to_string(),
            (Some("per_call"), Some(pc)) => format!(
                "grows per call: +{} in +{} each time it ran",
                plural(pc.bytes, "byte", "bytes"),
                plural(pc.blocks, "block", "blocks")
            ),
            (Some("one_time"), _) => "one-time: grew once and not again".to_string(),
            // Why it is unknown is said once, above the cards.
            _ => "grew in:".to_string(),
        };
        let _ = writeln!(
            o,
            "<p class=\"what\">{}</p>\n<ul class=\"tests\">",
            esc(&growth)
        );
        const TESTS: usize = 20;
        for t in f.tests.iter().take(TESTS) {
            let _ = writeln!(
                o,
                "<li><code>{}</code>: {}</li>",
                esc_cut(&t.test, MAX_NAME_CHARS, "test"),
                esc(&if f.is_leak() {
                    format!(
                        "+{} in {}",
                        plural(t.bytes, "byte", "bytes"),
                        plural(t.blocks, "block", "blocks")
                    )
                } else {
                    plural(t.errors, "error context", "error contexts")
                })
            );
        }
        if f.tests.len() > TESTS {
            let _ = writeln!(o, "<li>… {} more</li>", f.tests.len() - TESTS);
        }
        o.push_str("</ul>\n");
    }
    match src.snippet(f, context) {
        Some(Snippet::Found(path, first, lines, changed)) => {
            let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
            let _ = writeln!(
                o,
                "<figure class=\"snippet\"><figcaption>{}</figcaption>",
                esc(&path.display().to_string())
            );
            for (k, text) in lines.iter().enumerate() {
                let no = first + k as u32;
                let hl = if no == line { " hl" } else { "" };
                let _ = writeln!(
                    o,
                    "<div class=\"sl{hl}\" data-line=\"{no}\"><span class=\"ln\">{no}</span><span class=\"sc\">{}</span></div>",
                    esc(text)
                );
            }
            if changed {
                o.push_str("<p class=\"note\">This file has changed since the report was made: the highlighted line is not the one Valgrind saw.</p>\n");
            }
            o.push_str("</figure>\n");
        }
        Some(Snippet::Missing(path, recorded)) => {
            let line = f.location.as_ref().and_then(|l| l.line).unwrap_or(0);
            let _ = writeln!(
                o,
                "<figure class=\"snippet missing\"><figcaption>{}</figcaption>",
                esc(&path)
            );
            if let Some(text) = recorded {
                let _ = writeln!(
                    o,
                    "<div class=\"sl hl\" data-line=\"{line}\"><span class=\"ln\">{line}</span><span class=\"sc\">{}</span></div>",
                    esc(&text)
                );
            }
            o.push_str("<p class=\"note\">The source file is not readable here (use <code>--src-root</code>); only the line recorded in the report is shown.</p>\n</figure>\n");
        }
        None => {
            if f.location.as_ref().is_none_or(|l| l.line.is_none()) {
                o.push_str("<p class=\"note\">No source line: the object has no debug information for this location.</p>\n");
            }
        }
    }
    let stack_name = if f.is_leak() {
        "Allocation stack"
    } else {
        "Stack"
    };
    stack(o, stack_name, &f.stack);
    // The auxiliary stacks (where the block was freed and allocated, the
    // origin), titled by Valgrind's text; a report saved before they were
    // kept has only the origin.
    for a in &f.aux_stacks {
        let title = if a.text.is_empty() {
            "Another stack"
        } else {
            a.text.as_str()
        };
        stack(o, title, &a.stack);
    }
    if f.aux_stacks.is_empty()
        && let Some(origin) = &f.origin
    {
        stack(o, "Where the uninitialised value came from", origin);
    }
    let aux: Vec<&String> = f
        .aux
        .iter()
        .filter(|a| !f.aux_stacks.iter().any(|s| s.text == **a))
        .filter(|a| !a.starts_with("Uninitialised value was created") || f.origin.is_none())
        .collect();
    if !aux.is_empty() {
        o.push_str("<ul class=\"aux\">\n");
        for a in aux {
            let _ = writeln!(o, "<li>{}</li>", esc(a));
        }
        o.push_str("</ul>\n");
    }
    if f.pids.len() > 1 {
        let pids: Vec<String> = f.pids.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            o,
            "<p class=\"muted small\">in processes {}</p>",
            esc(&pids.join(", "))
        );
    }
    let _ = writeln!(
        o,
        "<p class=\"fp muted small\">fingerprint <code>{}</code></p>\n</article>",
        esc(&f.fingerprint)
    );
}

pub(super) fn frame_html(i: usize, fr: &FrameOut) -> String {
    let mut s = format!(
        "<li class=\"frame{}\"><span class=\"fi\">#{i}</span> {}",
        if fr.user { " user" } else { "" },
        esc_cut(
            fr.function.as_deref().unwrap_or("???"),
            MAX_NAME_CHARS,
            "fn"
        )
    );
    match (&fr.file, fr.line) {
        (Some(file), Some(l)) => {
            let full = fr.path.as_deref().unwrap_or(file);
            let full = match crate::render::ci::generated_text(fr.generated.as_ref()) {
                Some(g) => format!("{full} ({g})"),
                None => full.to_string(),
            };
            let _ = write!(
                s,
                " <span class=\"at\" title=\"{}\">{}:{l}</span>",
                esc(&full),
                esc(basename(file))
            );
        }
        _ => {
            if let Some(obj) = &fr.object {
                let _ = write!(
                    s,
                    " <span class=\"at\" title=\"{}\">in {}</span>",
                    esc(obj),
                    esc(basename(obj))
                );
            }
        }
    }
    if fr.user {
        s.push_str(" <span class=\"yours\">your code</span>");
    }
    s.push_str("</li>\n");
    s
}

/// The stack with the user's frames (and their neighbours) shown and the
/// runs of other frames folded into `<details>`.
pub(super) fn stack(o: &mut String, title: &str, frames: &[FrameOut]) {
    if frames.is_empty() {
        return;
    }
    let n = frames.len();
    let keep = crate::render::shown_frames(frames);
    let _ = writeln!(
        o,
        "<div class=\"stack\"><div class=\"stitle\">{} <span class=\"muted\">({})</span></div>\n<ol class=\"frames\">",
        esc(title),
        esc(&plural(n as u64, "frame", "frames"))
    );
    let mut i = 0;
    while i < n {
        if keep[i] {
            o.push_str(&frame_html(i, &frames[i]));
            i += 1;
            continue;
        }
        let start = i;
        while i < n && !keep[i] {
            i += 1;
        }
        let run = &frames[start..i];
        if run.len() == 1 {
            o.push_str(&frame_html(start, &run[0]));
            continue;
        }
        let mut objs: Vec<&str> = Vec::new();
        for fr in run {
            let b = fr.object.as_deref().map(basename).unwrap_or("???");
            if !objs.contains(&b) {
                objs.push(b);
            }
        }
        let shown: Vec<&str> = objs.iter().take(3).copied().collect();
        let more = if objs.len() > 3 {
            format!(" +{}", objs.len() - 3)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<li class=\"fold\"><details><summary>{} in {}{more}</summary><ol class=\"frames\">",
            esc(&plural(run.len() as u64, "library frame", "library frames")),
            esc(&shown.join(", "))
        );
        for (k, fr) in run.iter().enumerate() {
            o.push_str(&frame_html(start + k, fr));
        }
        o.push_str("</ol></details></li>\n");
    }
    o.push_str("</ol></div>\n");
}
