//! The JUnit XML renderer (`--junit FILE`), for CI test-report tabs (GitHub
//! test reporters, GitLab `artifacts:reports:junit`, Jenkins).
//!
//! One `<testsuites>` with one `<testsuite name="leakgate">`. With per-test
//! checkpoints, one testcase per test in which user findings grew (named as
//! pytest names it, listing its findings); else, and for findings of no
//! test, one testcase per user finding. A testcase is a `<failure>` when
//! one of its findings fails the gate, `<skipped>` (with the reason) when
//! they are only reported (a kind not in `--fail-on`, known from the
//! baseline, within `--max-leaked-bytes`). Without user findings
//! there is one passing testcase, so a report is never empty. An incomplete
//! report is an `<error>` testcase, a failed target a `<failure>` one.
//! Noise, notes and fixed baseline entries are summarised in the suite's
//! `<system-out>`. Written with quick-xml's event writer (escaping), as
//! quick-junit does.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::model::ExitStatus;
use crate::render::ci::{self, CiContext};
use crate::report::{Growth, Report};
use crate::util::plural;

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

/// pytest's junitxml names for a node id: `tests/test_x.py::TestA::test_b[1]`
/// → (`tests.test_x.TestA`, `test_b[1]`), and the file.
pub fn pytest_names(nodeid: &str) -> (String, String, Option<String>) {
    let (path, params) = match nodeid.find('[') {
        Some(i) => (&nodeid[..i], &nodeid[i..]),
        None => (nodeid, ""),
    };
    let mut names: Vec<String> = path.split("::").map(str::to_string).collect();
    let file = names.first().filter(|f| f.ends_with(".py")).cloned();
    names[0] = names[0].replace('/', ".");
    if let Some(stripped) = names[0].strip_suffix(".py") {
        names[0] = stripped.to_string();
    }
    let last = names.pop().unwrap_or_default() + params;
    (names.join("."), last, file)
}

/// With checkpoints: one testcase per test in which user findings grew
/// (named as pytest names it); returns the findings it covered.
fn per_test_cases<'a>(
    r: &'a Report,
    ctx: &CiContext,
    user: &[&'a crate::report::Finding],
    cases: &mut Vec<Case>,
) -> Vec<&'a crate::report::Finding> {
    let mut covered: Vec<&crate::report::Finding> = Vec::new();
    if r.per_test.is_none() {
        return covered;
    }
    let mut tests: Vec<&str> = Vec::new();
    for f in user {
        for t in f.tests.iter().filter(|t| t.kind == "test") {
            if !tests.contains(&t.test.as_str()) {
                tests.push(&t.test);
            }
        }
    }
    for test in tests {
        let mut failing = Vec::new();
        let mut body = String::new();
        let mut passing = Vec::new();
        for f in user {
            let Some(t) = f.tests.iter().find(|t| t.kind == "test" && t.test == test) else {
                continue;
            };
            if !covered.iter().any(|c| std::ptr::eq(*c, *f)) {
                covered.push(*f);
            }
            let place = ci::place(ctx, f);
            if f.is_leak() {
                body.push_str(&format!(
                    "{} at {place}: +{} in {} in this test",
                    f.kind,
                    plural(t.bytes, "byte", "bytes"),
                    plural(t.blocks, "block", "blocks")
                ));
            } else {
                body.push_str(&format!(
                    "{} at {place}: first occurred in this test",
                    f.kind
                ));
            }
            match (t.growth.map(Growth::as_str), &f.per_call) {
                (Some("per_call"), Some(pc)) => body.push_str(&format!(
                    ", {} ({}) per call\n",
                    plural(pc.bytes, "byte", "bytes"),
                    plural(pc.blocks, "block", "blocks")
                )),
                (Some(g), _) => body.push_str(&format!(" ({g})\n")),
                _ => body.push('\n'),
            }
            if let Some(src) = ci::source(f) {
                body.push_str(&format!("    {src}\n"));
            }
            body.push_str(&ci::stack_text(f));
            body.push_str(&ci::indirect_parts_text(f));
            body.push_str(&ci::aux_stacks_text(f));
            body.push_str(&format!("fingerprint: {}\n\n", f.fingerprint));
            if f.fails {
                failing.push(*f);
            } else {
                passing.push(*f);
            }
        }
        let (classname, name, file) = pytest_names(test);
        let outcome = match failing.first() {
            Some(first) => Outcome::Failure {
                kind: first.kind.to_string(),
                message: format!(
                    "{test} leaked: {}",
                    failing
                        .iter()
                        .map(|f| format!("{} at {}", ci::headline(f), ci::place(ctx, f)))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                body: body.clone(),
            },
            None => Outcome::Skipped {
                message: ci::why_none_fails(r, &passing),
            },
        };
        let skipped = matches!(outcome, Outcome::Skipped { .. });
        cases.push(Case {
            name,
            classname,
            file,
            line: None,
            outcome,
            system_out: skipped.then_some(body),
        });
    }
    covered
}

fn cases(r: &Report, ctx: &CiContext) -> Vec<Case> {
    let mut cases = Vec::new();
    let user = ci::user_findings(r);
    let covered = per_test_cases(r, ctx, &user, &mut cases);
    for f in user
        .iter()
        .filter(|f| !covered.iter().any(|c| std::ptr::eq(*c, **f)))
    {
        let place = ci::place(ctx, f);
        let file = ctx.display_path(f);
        let mut body = format!("{}\nat {place}\n", ci::headline(f));
        if let Some(src) = ci::source(f) {
            body.push_str(&format!("    {src}\n"));
        }
        if !f.is_leak() && !f.message.is_empty() {
            body.push_str(&format!("{}\n", f.message));
        }
        // Descriptions with a stack follow the main stack, with theirs.
        for a in f
            .aux
            .iter()
            .filter(|a| !f.aux_stacks.iter().any(|s| s.text == **a))
        {
            body.push_str(&format!("{a}\n"));
        }
        body.push_str("stack:\n");
        body.push_str(&ci::stack_text(f));
        body.push_str(&ci::indirect_parts_text(f));
        body.push_str(&ci::aux_stacks_text(f));
        if let Some(state) = &f.baseline {
            body.push_str(&format!("baseline: {state}\n"));
        }
        body.push_str(&format!("fingerprint: {}\n", f.fingerprint));
        let outcome = match ci::why_not_failing(r, f) {
            None => Outcome::Failure {
                kind: f.kind.to_string(),
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
        let mut what = match st {
            ExitStatus::Code(c) => format!("the target exited with code {c}"),
            ExitStatus::Signal(s) => format!("the target was killed by {s}"),
        };
        if let Some(t) = &r.target_running_test {
            what.push_str(&format!(" in test {t}"));
        }
        cases.push(Case {
            name: "the target exits with code 0".into(),
            classname: "leakgate.run".into(),
            file: None,
            line: None,
            outcome: Outcome::Failure {
                kind: "target_exit".into(),
                message: what.clone(),
                body: format!("{what}: {}", crate::util::shell_join(&r.command)),
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
        ("command".into(), crate::util::shell_join(&r.command)),
        ("verdict".into(), r.verdict.status.to_string()),
        ("exit_code".into(), r.verdict.exit_code.to_string()),
    ];
    if let Some(v) = &r.valgrind.version {
        p.push(("valgrind.version".into(), v.clone()));
    }
    if let Some(e) = &r.engine {
        p.push(("engine".into(), e.name.clone()));
        p.push(("engine.not_checked".into(), e.not_checked.join(", ")));
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
            "suppressed: {}\n",
            plural(r.summary.suppressed.records, "record", "records")
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
    fn pytest_junit_names() {
        assert_eq!(
            pytest_names("tests/test_x.py::TestA::test_b[1-a::b]"),
            (
                "tests.test_x.TestA".to_string(),
                "test_b[1-a::b]".to_string(),
                Some("tests/test_x.py".to_string())
            )
        );
        assert_eq!(pytest_names("test_y.py::test_c").1, "test_c".to_string());
    }

    #[test]
    fn a_skipped_test_says_each_reason_once_in_plural_words() {
        use crate::report::{Category, Finding, Kind, PerTestOut, TestShare};
        let leak = |kind: &str, line: u32| Finding {
            fingerprint: format!("f{line}"),
            kind: Kind::parse(kind),
            category: Category::User,
            bytes: Some(8),
            direct_bytes: Some(8),
            blocks: Some(1),
            gated: Some(false),
            location: Some(crate::report::Location {
                function: Some("f".into()),
                file: Some("m.c".into()),
                path: None,
                line: Some(line),
                object: None,
                generated: None,
            }),
            tests: vec![TestShare {
                test: "t.py::test_a".into(),
                kind: "test".into(),
                bytes: 8,
                blocks: 1,
                repetitions: Vec::new(),
                growth: None,
                errors: 0,
            }],
            ..Finding::default()
        };
        let findings = vec![
            leak("Leak_PossiblyLost", 1),
            leak("Leak_PossiblyLost", 2),
            leak("Leak_StillReachable", 3),
        ];
        let mut r = crate::render::test_report(&["pytest"], serde_json::json!([]), findings);
        r.per_test = Some(PerTestOut {
            tests: vec!["t.py::test_a".into()],
            ..PerTestOut::default()
        });
        let x = render(&r, &CiContext::default());
        let skipped = x
            .lines()
            .find(|l| l.contains("<skipped "))
            .expect("a skipped testcase");
        assert_eq!(skipped.matches("not gated").count(), 1, "{skipped}");
        assert!(
            skipped.contains(
                "reported, not gated: Leak_PossiblyLost and Leak_StillReachable are not in --fail-on definite,indirect,errors"
            ),
            "{skipped}"
        );
        assert!(x.contains("+8 bytes in 1 block in this test"), "{x}");
        assert!(!x.contains("1 blocks"), "{x}");
    }

    #[test]
    fn strips_control_characters() {
        assert_eq!(clean("a\u{1}b\tc\n"), "ab\tc\n");
    }
}
