//! The sections after the cards: noise by source and kind, suppressed
//! records by rule, the processes, and how the run was made.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::text::{basename, cut_chars, esc, esc_cut, exit_str, human_bytes, kind_class};
use crate::kind::Kind;
use crate::report::{Finding, ProcessOut, Report};
use crate::util::{plural, shell_join, thousands};

/// Rows of the "largest noise findings" list.
pub const MAX_NOISE_ROWS: usize = 100;

/// Rows of the suppression-rule table (and of the unused-rule list).
pub const MAX_RULE_ROWS: usize = 100;

/// Rule rows shown before the rest are folded.
pub(super) const RULES_SHOWN: usize = 10;

/// Rows of the process table.
pub const MAX_PROCESS_ROWS: usize = 200;

/// Noise: a table by source and kind, then the largest findings (capped).
pub(super) fn noise_section(o: &mut String, r: &Report) {
    let noise: Vec<&Finding> = r.findings.iter().filter(|f| !f.is_user()).collect();
    let ns = &r.summary.noise;
    let total_records: u64 = ns.by_source.values().sum();
    let total_bytes: u64 = ns.bytes_by_source.values().sum();
    let _ = writeln!(
        o,
        "<section id=\"noise\">\n<h2>Noise <span class=\"count\">{}</span></h2>\n<p class=\"lead\">Records whose fault lies outside your code (the interpreter, CUDA, torch, the system, third-party libraries): {} in {}, {} leaked.</p>",
        thousands(total_records),
        plural(total_records, "record", "records"),
        plural(ns.findings, "finding", "findings"),
        esc(&human_bytes(total_bytes))
    );
    if total_records == 0 && noise.is_empty() {
        o.push_str("<p class=\"empty\">No noise.</p>\n</section>\n");
        return;
    }
    // (source, kind) -> (findings, records, bytes)
    let mut table: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    for f in &noise {
        let e = table
            .entry((
                f.source.clone().unwrap_or_else(|| "?".into()),
                f.kind.to_string(),
            ))
            .or_default();
        e.0 += 1;
        e.1 += f.records;
        e.2 += f.bytes.unwrap_or(0);
    }
    if table.is_empty() {
        // A report without the noise findings listed: the summary only.
        for (src, n) in &ns.by_source {
            let b = ns.bytes_by_source.get(src).copied().unwrap_or(0);
            table.insert((src.clone(), "(all kinds)".into()), (0, *n, b));
        }
    }
    let mut by_src: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for ((s, _), (_, rec, b)) in &table {
        let e = by_src.entry(s.as_str()).or_default();
        e.0 += rec;
        e.1 += b;
    }
    let mut sources: Vec<(&str, (u64, u64))> = by_src.into_iter().collect();
    sources.sort_by(|a, b| (b.1.0, b.1.1).cmp(&(a.1.0, a.1.1)).then(a.0.cmp(b.0)));
    let max_records = sources.iter().map(|s| s.1.0).max().unwrap_or(1).max(1);
    o.push_str("<table class=\"data noise\">\n<thead><tr><th>Source</th><th>Kind</th><th class=\"r\">Findings</th><th class=\"r\">Records</th><th class=\"r\">Bytes</th><th class=\"barcol\"></th></tr></thead>\n");
    for (s, (srec, sbytes)) in &sources {
        let mut rows: Vec<(&String, &(u64, u64, u64))> = table
            .iter()
            .filter(|((ts, _), _)| ts == s)
            .map(|((_, k), v)| (k, v))
            .collect();
        rows.sort_by(|a, b| (b.1.1, b.1.2).cmp(&(a.1.1, a.1.2)).then(a.0.cmp(b.0)));
        let pct = (*srec as f64 / max_records as f64 * 100.0).clamp(0.0, 100.0);
        let _ = writeln!(
            o,
            "<tbody class=\"src\"><tr class=\"total\"><th scope=\"rowgroup\" rowspan=\"{}\"><span class=\"srcname\">{}</span></th><td class=\"muted\">all kinds</td><td class=\"r\"></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"barcol\"><span class=\"bar\" style=\"width:{pct:.1}%\"></span></td></tr>",
            rows.len() + 1,
            esc(s),
            thousands(*srec),
            thousands(*sbytes),
        );
        for (k, (nf, rec, b)) in rows {
            let _ = writeln!(
                o,
                "<tr><td><span class=\"badge {}\">{}</span></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"barcol\"></td></tr>",
                kind_class(&Kind::parse(k)),
                esc(k),
                if *nf > 0 {
                    thousands(*nf)
                } else {
                    String::new()
                },
                thousands(*rec),
                thousands(*b)
            );
        }
        o.push_str("</tbody>\n");
    }
    o.push_str("</table>\n");
    if !noise.is_empty() {
        let mut top: Vec<&Finding> = noise.clone();
        top.sort_by(|a, b| {
            (b.bytes.unwrap_or(0), b.records)
                .cmp(&(a.bytes.unwrap_or(0), a.records))
                .then(a.fingerprint.cmp(&b.fingerprint))
        });
        let shown = top.len().min(MAX_NOISE_ROWS);
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>Largest noise findings ({} of {})</summary>\n<table class=\"data\">\n<thead><tr><th>Source</th><th>Kind</th><th class=\"r\">Records</th><th class=\"r\">Bytes</th><th>Where</th></tr></thead>\n<tbody>",
            thousands(shown as u64),
            thousands(top.len() as u64)
        );
        for f in top.iter().take(MAX_NOISE_ROWS) {
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"r\">{}</td><td class=\"r\">{}</td><td class=\"wh\">{}</td></tr>",
                esc(f.source.as_deref().unwrap_or("?")),
                kind_class(&f.kind),
                esc(f.kind.as_str()),
                thousands(f.records),
                f.bytes.map(thousands).unwrap_or_default(),
                noise_where(f)
            );
        }
        o.push_str("</tbody></table>\n");
        if top.len() > MAX_NOISE_ROWS {
            let _ = writeln!(
                o,
                "<p class=\"more\">… and {} more noise findings (see the JSON report).</p>",
                thousands((top.len() - MAX_NOISE_ROWS) as u64)
            );
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

/// The frame a noise finding is blamed on: the first frame outside
/// Valgrind's preload objects with a function name.
pub(super) fn noise_where(f: &Finding) -> String {
    let fr = f
        .stack
        .iter()
        .find(|fr| {
            fr.function.is_some()
                && !fr
                    .object
                    .as_deref()
                    .is_some_and(|o| basename(o).starts_with("vgpreload"))
        })
        .or_else(|| f.stack.first());
    let Some(fr) = fr else {
        return String::new();
    };
    let mut s = esc_cut(fr.function.as_deref().unwrap_or("???"), 120, "fn");
    match (&fr.file, fr.line) {
        (Some(file), Some(l)) => {
            let _ = write!(s, " <span class=\"at\">{}:{l}</span>", esc(basename(file)));
        }
        _ => {
            if let Some(obj) = &fr.object {
                let _ = write!(s, " <span class=\"at\">in {}</span>", esc(basename(obj)));
            }
        }
    }
    s
}

pub(super) fn suppressed_section(o: &mut String, r: &Report) {
    let s = &r.summary.suppressed;
    let _ = writeln!(
        o,
        "<section id=\"suppressed\">\n<h2>Suppressed <span class=\"count\">{}</span></h2>",
        thousands(s.records)
    );
    if s.records == 0 {
        let _ = writeln!(
            o,
            "<p class=\"lead\">No record was suppressed ({} loaded).</p>",
            plural(s.loaded, "suppression", "suppressions")
        );
    } else {
        let _ = writeln!(
            o,
            "<p class=\"lead\">{} hidden by {} of the {} loaded (bundled and yours), applied after the run.</p>",
            plural(s.records, "record", "records"),
            plural(s.by_suppression.len() as u64, "rule", "rules"),
            plural(s.loaded, "suppression", "suppressions")
        );
    }
    if !s.by_suppression.is_empty() {
        rule_table(o, &s.by_suppression, "Rule", "Records");
    }
    if s.undecidable > 0 {
        let _ = writeln!(
            o,
            "<p class=\"note\">{} may match a suppression but the XML cannot decide it; they are kept.</p>",
            esc(&plural(s.undecidable, "record", "records"))
        );
        if !s.undecidable_by_suppression.is_empty() {
            let _ = writeln!(
                o,
                "<details class=\"list\"><summary>Undecidable, by rule ({})</summary>",
                thousands(s.undecidable_by_suppression.len() as u64)
            );
            rule_table(o, &s.undecidable_by_suppression, "Rule", "Records");
            o.push_str("</details>\n");
        }
    }
    if let Some(unused) = &s.unused {
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>Suppressions that matched nothing ({})</summary><ul class=\"plain\">",
            thousands(unused.len() as u64)
        );
        for u in unused.iter().take(MAX_RULE_ROWS) {
            let _ = writeln!(o, "<li><code>{}</code></li>", esc(u));
        }
        o.push_str("</ul>\n");
        if unused.len() > MAX_RULE_ROWS {
            let _ = writeln!(
                o,
                "<p class=\"more\">… and {} more.</p>",
                thousands((unused.len() - MAX_RULE_ROWS) as u64)
            );
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

pub(super) fn rule_table(o: &mut String, m: &BTreeMap<String, u64>, name: &str, count: &str) {
    let mut rows: Vec<(&String, &u64)> = m.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(
        o,
        "<table class=\"data rules\">\n<thead><tr><th>{}</th><th class=\"r\">{}</th></tr></thead>\n<tbody>",
        esc(name),
        esc(count)
    );
    let row = |o: &mut String, k: &str, v: u64| {
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td class=\"r\">{}</td></tr>",
            esc(k),
            thousands(v)
        );
    };
    for (k, v) in rows.iter().take(RULES_SHOWN) {
        row(o, k, **v);
    }
    o.push_str("</tbody></table>\n");
    if rows.len() > RULES_SHOWN {
        let _ = writeln!(
            o,
            "<details class=\"list\"><summary>{} more</summary>\n<table class=\"data rules\"><tbody>",
            plural((rows.len() - RULES_SHOWN) as u64, "rule", "rules")
        );
        for (k, v) in rows.iter().take(MAX_RULE_ROWS).skip(RULES_SHOWN) {
            row(o, k, **v);
        }
        o.push_str("</tbody></table>\n</details>\n");
    }
    if rows.len() > MAX_RULE_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more rules.</p>",
            thousands((rows.len() - MAX_RULE_ROWS) as u64)
        );
    }
}

pub(super) fn process_section(o: &mut String, r: &Report) {
    let _ = writeln!(
        o,
        "<section id=\"processes\">\n<h2>Processes <span class=\"count\">{}</span></h2>",
        thousands(r.processes.len() as u64)
    );
    if r.processes.is_empty() {
        o.push_str("<p class=\"empty\">No Valgrind report was read.</p>\n</section>\n");
        return;
    }
    o.push_str("<table class=\"data procs\">\n<thead><tr><th class=\"r\">PID</th><th class=\"r\">Parent</th><th>Command</th><th>Exit</th><th>Report</th><th class=\"r\">Records</th><th>XML file</th></tr></thead>\n<tbody>\n");
    for p in r.processes.iter().take(MAX_PROCESS_ROWS) {
        process_row(o, p);
    }
    o.push_str("</tbody></table>\n");
    if r.processes.len() > MAX_PROCESS_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"more\">… and {} more processes.</p>",
            thousands((r.processes.len() - MAX_PROCESS_ROWS) as u64)
        );
    }
    let msgs: Vec<&ProcessOut> = r
        .processes
        .iter()
        .filter(|p| !p.client_messages.is_empty())
        .collect();
    if !msgs.is_empty() {
        o.push_str("<details class=\"list\"><summary>Client messages (VALGRIND_PRINTF)</summary><ul class=\"plain\">\n");
        let mut shown = 0;
        'outer: for p in msgs {
            for m in &p.client_messages {
                if shown == MAX_RULE_ROWS {
                    o.push_str("<li class=\"more\">… more in the JSON report</li>\n");
                    break 'outer;
                }
                let _ = writeln!(
                    o,
                    "<li><span class=\"muted\">pid {}</span> <code>{}</code></li>",
                    p.pid.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
                    esc(m.trim())
                );
                shown += 1;
            }
        }
        o.push_str("</ul></details>\n");
    }
    o.push_str("</section>\n");
}

pub(super) fn process_row(o: &mut String, p: &ProcessOut) {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let state = if p.complete {
        "<span class=\"ok\">complete</span>".to_string()
    } else {
        format!(
            "<span class=\"warnc\">incomplete</span>{}",
            p.incomplete_reason
                .as_deref()
                .map(|r| format!("<br><span class=\"small\">{}</span>", esc(r)))
                .unwrap_or_default()
        )
    };
    let _ = writeln!(
        o,
        "<tr><td class=\"r\">{}</td><td class=\"r\">{}</td><td><code>{}</code></td><td>{}</td><td>{state}</td><td class=\"r\">{}</td><td class=\"path\">{}</td></tr>",
        opt(p.pid),
        opt(p.ppid),
        esc(&cut_chars(&shell_join(&p.command), 300)),
        esc(&p
            .exit
            .as_ref()
            .map(|e| exit_str(Some(e)))
            .unwrap_or_default()),
        thousands(p.records),
        esc(&p.xml)
    );
}

pub(super) fn run_section(o: &mut String, r: &Report) {
    o.push_str("<section id=\"run\">\n<h2>How it was run</h2>\n<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: String| {
        let _ = writeln!(o, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    fact(
        "Mode",
        esc(if r.mode == "run" {
            "run: leakgate started the target under Valgrind"
        } else {
            "analyze: XML produced elsewhere"
        }),
    );
    fact(
        if r.mode == "run" {
            "Target"
        } else {
            "Analysed"
        },
        format!(
            "<code class=\"cmd\">{}</code>",
            esc(&shell_join(&r.command))
        ),
    );
    if r.mode == "run" {
        fact("Target exit", esc(&exit_str(r.target_exit.as_ref())));
    }
    if !r.environment.is_empty() {
        fact(
            "Environment",
            r.environment
                .iter()
                .map(|e| format!("<code>{}</code>", esc(e)))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    let vg = match (&r.valgrind.version, r.valgrind.protocol) {
        (Some(v), Some(p)) => format!("{v} (XML protocol {p})"),
        (Some(v), None) => v.clone(),
        (None, Some(p)) => format!("version unknown (XML protocol {p})"),
        (None, None) => "version unknown".into(),
    };
    match &r.engine {
        Some(e) => fact("Engine", esc(e.line().trim_start_matches("engine: "))),
        None => fact("Valgrind", esc(&vg)),
    }
    if !r.valgrind_command.is_empty() {
        fact(
            "Valgrind command",
            format!(
                "<code class=\"cmd\">{}</code>",
                esc(&shell_join(&r.valgrind_command))
            ),
        );
    }
    // The options each process' XML records, once per distinct set.
    // (In run mode only when they differ from the command above.)
    let mut sets: Vec<&Vec<String>> = Vec::new();
    for p in &r.processes {
        if !r.valgrind_command.is_empty()
            && r.valgrind_command
                .windows(p.valgrind_args.len().max(1))
                .any(|w| w == p.valgrind_args.as_slice())
        {
            continue;
        }
        if !p.valgrind_args.is_empty() && !sets.contains(&&p.valgrind_args) {
            sets.push(&p.valgrind_args);
        }
    }
    for (i, s) in sets.iter().take(5).enumerate() {
        let name = if sets.len() == 1 {
            "Valgrind options (XML)".to_string()
        } else {
            format!("Valgrind options (XML, set {})", i + 1)
        };
        fact(
            &name,
            format!("<code class=\"cmd\">{}</code>", esc(&shell_join(s))),
        );
    }
    if !r.src_roots.is_empty() {
        fact(
            "Your sources",
            r.src_roots
                .iter()
                .map(|e| format!("<code>{}</code>", esc(e)))
                .collect::<Vec<_>>()
                .join("<br>"),
        );
    }
    fact(
        "leakgate",
        esc(&format!("{} {}", r.tool.name, r.tool.version)),
    );
    let kinds: Vec<String> = r
        .summary
        .records_by_kind
        .iter()
        .map(|(k, n)| format!("{} {}", esc(k), thousands(*n)))
        .collect();
    if !kinds.is_empty() {
        fact("Records by kind", kinds.join(" · "));
    }
    o.push_str("</dl>\n");
    if !r.notes.is_empty() {
        o.push_str("<h3>Notes</h3>\n<ul class=\"notes\">\n");
        for n in r.notes.iter().take(MAX_RULE_ROWS) {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        if r.notes.len() > MAX_RULE_ROWS {
            let _ = writeln!(
                o,
                "<li class=\"more\">… and {} more notes.</li>",
                thousands((r.notes.len() - MAX_RULE_ROWS) as u64)
            );
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}
