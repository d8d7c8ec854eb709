//! The JUnit XML renderer (`--junit FILE`), for CI test-report tabs (GitHub
//! test reporters, GitLab `artifacts:reports:junit`, Jenkins).
//!
//! One `<testsuites>` with one `<testsuite name="leakgate">`; one testcase
//! per user finding: a `<failure>` when it fails the gate, `<skipped>` (with
//! the reason) when it is only reported (a kind not in `--fail-on`, known
//! from the baseline, within `--max-leaked-bytes`). Without user findings
//! there is one passing testcase, so a report is never empty. An incomplete
//! report is an `<error>` testcase, a failed target a `<failure>` one.
//! Noise, notes and fixed baseline entries are summarised in the suite's
//! `<system-out>`. Written with quick-xml's event writer (escaping), as
//! quick-junit does.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::model::ExitStatus;
use crate::render::ci::{self, CiContext};
use crate::report::Report;

/// One testcase before writing.
struct Case {
    name: String,
    classname: String,
    file: Option<String>,
    line: Option<u32>,
    outcome: Outcome,
    system_out: Option<String>,
}

enum Outcome {
    Pass,
    Failure {
        kind: String,
        message: String,
        body: String,
    },
    Error {
        message: String,
        body: String,
    },
    Skipped {
        message: String,
    },
}

/// Renders the report as JUnit XML.
pub fn render(r: &Report, ctx: &CiContext) -> String {
    let cases = cases(r, ctx);
    let count = |p: fn(&Outcome) -> bool| cases.iter().filter(|c| p(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failure { .. }));
    let errors = count(|o| matches!(o, Outcome::Error { .. }));
    let skipped = count(|o| matches!(o, Outcome::Skipped { .. }));
    let tests = cases.len();
    let nums = [
        ("tests", tests),
        ("failures", failures),
        ("errors", errors),
        ("skipped", skipped),
    ];

    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    let io = |e: std::io::Result<()>| e.expect("writing to a Vec cannot fail");
    io(w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None))));
    let mut suites = BytesStart::new("testsuites");
    suites.push_attribute(("name", "leakgate"));
    for (k, v) in nums {
        suites.push_attribute((k, v.to_string().as_str()));
    }
    io(w.write_event(Event::Start(suites)));
    let mut suite = BytesStart::new("testsuite");
    suite.push_attribute(("name", "leakgate"));
    for (k, v) in nums {
        suite.push_attribute((k, v.to_string().as_str()));
    }
    io(w.write_event(Event::Start(suite)));

    io(w.write_event(Event::Start(BytesStart::new("properties"))));
    for (name, value) in properties(r) {
        let mut p = BytesStart::new("property");
        p.push_attribute(("name", name.as_str()));
        p.push_attribute(("value", clean(&value).as_str()));
        io(w.write_event(Event::Empty(p)));
    }
    io(w.write_event(Event::End(BytesEnd::new("properties"))));

    for c in &cases {
        let mut tc = BytesStart::new("testcase");
        tc.push_attribute(("name", clean(&c.name).as_str()));
        tc.push_attribute(("classname", clean(&c.classname).as_str()));
        if let Some(f) = &c.file {
            tc.push_attribute(("file", clean(f).as_str()));
        }
        if let Some(l) = c.line {
            tc.push_attribute(("line", l.to_string().as_str()));
        }
        tc.push_attribute(("time", "0"));
        if matches!(c.outcome, Outcome::Pass) && c.system_out.is_none() {
            io(w.write_event(Event::Empty(tc)));
            continue;
        }
        io(w.write_event(Event::Start(tc)));
        match &c.outcome {
            Outcome::Pass => {}
            Outcome::Failure {
                kind,
                message,
                body,
            } => {
                let mut e = BytesStart::new("failure");
                e.push_attribute(("message", clean(message).as_str()));
                e.push_attribute(("type", kind.as_str()));
                io(w.write_event(Event::Start(e)));
                io(w.write_event(Event::Text(BytesText::new(&clean(body)))));
                io(w.write_event(Event::End(BytesEnd::new("failure"))));
            }
            Outcome::Error { message, body } => {
                let mut e = BytesStart::new("error");
                e.push_attribute(("message", clean(message).as_str()));
                e.push_attribute(("type", "incomplete"));
                io(w.write_event(Event::Start(e)));
                io(w.write_event(Event::Text(BytesText::new(&clean(body)))));
                io(w.write_event(Event::End(BytesEnd::new("error"))));
            }
            Outcome::Skipped { message } => {
                let mut e = BytesStart::new("skipped");
                e.push_attribute(("message", clean(message).as_str()));
                io(w.write_event(Event::Empty(e)));
            }
        }
        if let Some(out) = &c.system_out {
            io(w.write_event(Event::Start(BytesStart::new("system-out"))));
            io(w.write_event(Event::Text(BytesText::new(&clean(out)))));
            io(w.write_event(Event::End(BytesEnd::new("system-out"))));
        }
        io(w.write_event(Event::End(BytesEnd::new("testcase"))));
    }

    io(w.write_event(Event::Start(BytesStart::new("system-out"))));
    io(w.write_event(Event::Text(BytesText::new(&clean(&system_out(r))))));
    io(w.write_event(Event::End(BytesEnd::new("system-out"))));
    io(w.write_event(Event::End(BytesEnd::new("testsuite"))));
    io(w.write_event(Event::End(BytesEnd::new("testsuites"))));
    let mut s = String::from_utf8(w.into_inner()).expect("the writer writes UTF-8");
    s.push('\n');
    s
}

fn cases(r: &Report, ctx: &CiContext) -> Vec<Case> {
    let mut cases = Vec::new();
    let user = ci::user_findings(r);
    for f in &user {
        let place = ci::place(ctx, f);
        let file = ctx.display_path(f);
        let mut body = format!("{}\nat {place}\n", ci::headline(f));
        if let Some(src) = ci::source(f) {
            body.push_str(&format!("    {src}\n"));
        }
        if !f.is_leak() && !f.message.is_empty() {
            body.push_str(&format!("{}\n", f.message));
        }
        for a in &f.aux {
            body.push_str(&format!("{a}\n"));
        }
        body.push_str("stack:\n");
        body.push_str(&ci::stack_text(f));
        if let Some(state) = &f.baseline {
            body.push_str(&format!("baseline: {state}\n"));
        }
        body.push_str(&format!("fingerprint: {}\n", f.fingerprint));
        let outcome = match ci::why_not_failing(r, f) {
            None => Outcome::Failure {
                kind: f.kind.clone(),
                message: format!("{} at {place}", ci::headline(f)),
                body: body.clone(),
            },
            Some(why) => Outcome::Skipped { message: why },
        };
        let skipped = matches!(outcome, Outcome::Skipped { .. });
        cases.push(Case {
            name: format!("{} in {} ({place})", f.kind, ci::function(f)),
            classname: format!("leakgate.{}", f.kind),
            file,
            line: f.location.as_ref().and_then(|l| l.line),
            outcome,
            system_out: skipped.then_some(body),
        });
    }
    let incomplete: Vec<&String> = r
        .verdict
        .reasons
        .iter()
        .filter(|x| x.starts_with("incomplete: "))
        .collect();
    if !incomplete.is_empty() {
        let body: Vec<&str> = incomplete.iter().map(|s| s.as_str()).collect();
        cases.push(Case {
            name: "Valgrind reports are complete".into(),
            classname: "leakgate.run".into(),
            file: None,
            line: None,
            outcome: Outcome::Error {
                message: incomplete[0].clone(),
                body: body.join("\n"),
            },
            system_out: None,
        });
    }
    let gates_exit = r.policy.as_ref().is_none_or(|p| p.fail_on_target_exit);
    if let Some(st) = &r.target_exit
        && gates_exit
        && !matches!(st, ExitStatus::Code(0))
    {
        let what = match st {
            ExitStatus::Code(c) => format!("the target exited with code {c}"),
            ExitStatus::Signal(s) => format!("the target was killed by {s}"),
        };
        cases.push(Case {
            name: "the target exits with code 0".into(),
            classname: "leakgate.run".into(),
            file: None,
            line: None,
            outcome: Outcome::Failure {
                kind: "target_exit".into(),
                message: what.clone(),
                body: format!("{what}: {}", r.command.join(" ")),
            },
            system_out: None,
        });
    }
    if user.is_empty() {
        cases.push(Case {
            name: "no leaks or memory errors in your code".into(),
            classname: "leakgate".into(),
            file: None,
            line: None,
            outcome: Outcome::Pass,
            system_out: None,
        });
    }
    cases
}

fn properties(r: &Report) -> Vec<(String, String)> {
    let mut p = vec![
        ("leakgate.version".to_string(), r.tool.version.clone()),
        ("mode".into(), r.mode.clone()),
        ("command".into(), r.command.join(" ")),
        ("verdict".into(), r.verdict.status.clone()),
        ("exit_code".into(), r.verdict.exit_code.to_string()),
    ];
    if let Some(v) = &r.valgrind.version {
        p.push(("valgrind.version".into(), v.clone()));
    }
    if let Some(pol) = &r.policy {
        p.push(("fail_on".into(), pol.fail_on.join(",")));
        if let Some(m) = pol.max_leaked_bytes {
            p.push(("max_leaked_bytes".into(), m.to_string()));
        }
    }
    if let Some(b) = &r.baseline {
        p.push(("baseline".into(), b.file.clone()));
    }
    p
}

fn system_out(r: &Report) -> String {
    let mut o = String::new();
    o.push_str(&format!("verdict: {}\n", r.verdict.status));
    for reason in &r.verdict.reasons {
        o.push_str(&format!("  - {reason}\n"));
    }
    o.push_str(&format!("noise (not yours): {}\n", ci::noise_line(r)));
    if r.summary.suppressed.records > 0 {
        o.push_str(&format!(
            "suppressed: {} records\n",
            r.summary.suppressed.records
        ));
    }
    if let Some(b) = &r.baseline {
        o.push_str(&format!(
            "baseline {}: {} new, {} known, {} fixed\n",
            b.file,
            b.new,
            b.known,
            b.fixed.len()
        ));
        for e in &b.fixed {
            o.push_str(&format!("  fixed: {}\n", e.description));
        }
    }
    for n in &r.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// Drops characters XML 1.0 cannot hold (controls other than tab, LF, CR).
fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_control_characters() {
        assert_eq!(clean("a\u{1}b\tc\n"), "ab\tc\n");
    }
}
