//! Every renderer agrees with the JSON report on which user findings are
//! gated and which fail (issue 18's acceptance test; no Valgrind needed).
//!
//! For recorded fixtures with user findings of every kind (all four leak
//! kinds, memory errors, descriptor errors, per-call growth, a pybind11
//! extension, two processes with a baseline) and for every `--fail-on`
//! group (plus `definite,possible` and `--max-leaked-bytes` small and
//! large), `leakgate analyze` writes every output at once
//! (`common::outputs`). The JSON is the reference: a finding is *gated* when
//! `findings[].gated` says so, and *fails* when it is gated and is not a
//! leak, or no `--max-leaked-bytes` was given, or the gated leaks' bytes
//! (a definite leak's with the indirect blocks it owns) exceed it
//! (docs/ci.md, `gate::verdict`); an indirect finding a gated definite
//! leak owns (`indirect_of`) is not gated and is shown under that leak,
//! not as a finding of its own, by every renderer; a `fails`
//! field in the JSON, when there is one, must say the same. Each renderer is
//! read back for what it shows of each finding:
//!
//! | renderer | gated | fails |
//! |---|---|---|
//! | text | no "(reported, not gated)" / "(known from the baseline, not gated)" after the headline | — (only the verdict) |
//! | HTML | no "reported, not gated" tag on the card | — (only the verdict) |
//! | JUnit | `failure`, or `skipped` "within --max-leaked-bytes" | `failure` (not `skipped`) |
//! | SARIF | `properties.gated` | `level` `error` (`note`: known, else `warning`) |
//! | Code Quality | no "not gated" reason in the body, or "within --max-leaked-bytes" | no reason in the body (the severity is the kind's) |
//! | Markdown | — | ❌ (➖: known, ⚠️: reported) |
//! | annotations | as Code Quality, in the message | `::error` (`::notice`: known, else `::warning`) |
//!
//! and the SARIF rule of a kind has level `error` exactly when a result of
//! that kind is gated. Findings are matched by kind and line, in report
//! order (renderers that show at most N findings are matched as far as they
//! go), and by fingerprint where the output carries it. Every disagreement of
//! a scenario is listed in one failure message.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::common::outputs::{self, Outputs};

/// One user finding as the JSON reports it.
#[derive(Debug, Clone)]
struct Expected {
    kind: String,
    line: Option<u64>,
    fingerprint: String,
    gated: bool,
    fails: bool,
    known: bool,
}

/// One finding as a renderer shows it.
#[derive(Debug, Clone, Default)]
struct Shown {
    kind: String,
    line: Option<u64>,
    fingerprint: Option<String>,
    gated: Option<bool>,
    fails: Option<bool>,
    known: Option<bool>,
}

/// A renderer's findings, and whether it shows all of them.
struct Rendered {
    name: &'static str,
    findings: Vec<Shown>,
    complete: bool,
}

fn is_leak(kind: &str) -> bool {
    kind.starts_with("Leak_")
}

/// The user findings of the JSON report, with "fails" derived from
/// "gated" and the policy.
fn expected(r: &Value, problems: &mut Vec<String>) -> Vec<Expected> {
    let gated = |f: &Value| f["gated"].as_bool().expect("findings[].gated");
    // Indirectly lost blocks a gated definite leak owns are shown under it,
    // not as findings of their own, and are not gated again.
    let all = r["findings"].as_array().expect("findings");
    for part in all.iter().filter(|f| f.get("indirect_of").is_some()) {
        let owner = all.iter().find(|o| {
            o["fingerprint"] == part["indirect_of"]
                && o["kind"] == "Leak_DefinitelyLost"
                && o["gated"] == true
        });
        if gated(part) || owner.is_none() {
            problems.push(format!(
                "json: indirect finding at line {:?}: gated={}, owner gated: {}",
                part["location"]["line"].as_u64(),
                gated(part),
                owner.is_some()
            ));
        }
    }
    let user: Vec<&Value> = all
        .iter()
        .filter(|f| f["category"] == "user" && f.get("indirect_of").is_none())
        .collect();
    let max = r["policy"]["max_leaked_bytes"].as_u64();
    let leaked: u64 = user
        .iter()
        .filter(|f| is_leak(f["kind"].as_str().unwrap()) && gated(f))
        .map(|f| {
            f["bytes"]
                .as_u64()
                .or(f["direct_bytes"].as_u64())
                .unwrap_or(0)
        })
        .fold(0, u64::saturating_add);
    let out: Vec<Expected> = user
        .iter()
        .map(|f| {
            let kind = f["kind"].as_str().unwrap().to_string();
            let g = gated(f);
            let fails = g && (!is_leak(&kind) || max.is_none_or(|m| leaked > m));
            if let Some(said) = f.get("fails").and_then(Value::as_bool)
                && said != fails
            {
                problems.push(format!(
                    "json: {kind} at line {:?}: fails={said}, but gated={g} and the policy give {fails}",
                    f["location"]["line"].as_u64()
                ));
            }
            Expected {
                line: f["location"]["line"].as_u64(),
                fingerprint: f["fingerprint"].as_str().unwrap().to_string(),
                gated: g,
                fails,
                known: f["baseline"] == "known",
                kind,
            }
        })
        .collect();
    let any_fails = out.iter().any(|e| e.fails);
    let exit = r["verdict"]["exit_code"].as_i64();
    if any_fails != (exit == Some(1)) {
        problems.push(format!(
            "json: verdict exit code {exit:?}, but {} finding(s) fail",
            out.iter().filter(|e| e.fails).count()
        ));
    }
    out
}

/// What the CI renderers append when a finding does not fail
/// (`why_not_failing`): `Some(gated)` when there is such a reason.
fn reason(text: &str) -> Option<bool> {
    if text.contains("within --max-leaked-bytes: reported, not gated") {
        Some(true)
    } else if text.contains("reported, not gated") {
        Some(false)
    } else {
        None
    }
}

/// The line number at the end of `place` (`file.c:12`).
fn line_of(place: &str) -> Option<u64> {
    place.rsplit_once(':').and_then(|(_, l)| l.parse().ok())
}

fn text(t: &str) -> Rendered {
    let head = regex::Regex::new(r"^\s*\d+\. (\S+) — (.*)$").unwrap();
    let at = regex::Regex::new(r"^\s+at (\S+) in ").unwrap();
    let mut findings: Vec<Shown> = Vec::new();
    let mut want_at = false;
    for l in t.lines() {
        if let Some(c) = head.captures(l) {
            let rest = &c[2];
            findings.push(Shown {
                kind: c[1].to_string(),
                gated: Some(!rest.ends_with("not gated)")),
                known: Some(rest.ends_with("(known from the baseline, not gated)")),
                ..Shown::default()
            });
            want_at = true;
        } else if want_at && let Some(c) = at.captures(l) {
            findings.last_mut().unwrap().line = line_of(&c[1]);
            want_at = false;
        }
    }
    Rendered {
        name: "text",
        findings,
        // A pass with many not-gated findings counts them instead.
        complete: collapsed_count(t).is_none(),
    }
}

/// The count of a passing text report's not-gated findings, when it gives
/// one instead of a card each (`not gated: 15 findings in your code
/// (details: ...)`).
fn collapsed_count(t: &str) -> Option<usize> {
    let re = regex::Regex::new(r"(?m)^not gated: (\d+) findings? in your code \(details:").unwrap();
    re.captures(t).and_then(|c| c[1].parse().ok())
}

fn html(h: &str) -> Rendered {
    let card = regex::Regex::new(
        r#"(?s)<article class="card [^"]*" id="finding-\d+" data-kind="([^"]*)" data-fingerprint="([^"]*)">(.*?)</article>"#,
    )
    .unwrap();
    let loc = regex::Regex::new(r#"<code class="loc">([^<]*)</code>"#).unwrap();
    let findings = card
        .captures_iter(h)
        .map(|c| Shown {
            kind: c[1].to_string(),
            fingerprint: Some(c[2].to_string()),
            line: loc.captures(&c[3]).and_then(|l| line_of(&l[1])),
            gated: Some(!c[3].contains("<span class=\"tag\">reported, not gated</span>")),
            ..Shown::default()
        })
        .collect();
    Rendered {
        name: "html",
        findings,
        complete: !h.contains("<p class=\"more\">"),
    }
}

/// JUnit testcases: one per finding (`leakgate.KIND`), or one per pytest
/// test covering several (each named in the body by its fingerprint).
fn junit(x: &str, exp: &[Expected], problems: &mut Vec<String>) -> Rendered {
    let case = regex::Regex::new(r#"(?s)<testcase ([^>]*?)(/>|>(.*?)</testcase>)"#).unwrap();
    let attr = |attrs: &str, name: &str| {
        regex::Regex::new(&format!(r#"\b{name}="([^"]*)""#))
            .unwrap()
            .captures(attrs)
            .map(|c| c[1].to_string())
    };
    let fp = regex::Regex::new(r"fingerprint: ([0-9a-f]+)").unwrap();
    let mut findings = Vec::new();
    for c in case.captures_iter(x) {
        let attrs = &c[1];
        let body = c.get(3).map_or("", |m| m.as_str());
        let classname = attr(attrs, "classname").unwrap_or_default();
        let failure = body.contains("<failure ");
        let skipped = attr(body, "message").filter(|_| body.contains("<skipped "));
        if classname == "leakgate" || classname == "leakgate.run" {
            continue;
        }
        let fps: Vec<String> = fp.captures_iter(body).map(|m| m[1].to_string()).collect();
        if let Some(kind) = classname.strip_prefix("leakgate.") {
            findings.push(Shown {
                kind: kind.to_string(),
                line: attr(attrs, "line").and_then(|l| l.parse().ok()),
                fingerprint: fps.first().cloned(),
                fails: Some(failure),
                gated: Some(failure || skipped.as_deref().and_then(reason) == Some(true)),
                ..Shown::default()
            });
        } else {
            // A pytest test: fails when one of its findings fails.
            let covered: Vec<&Expected> = exp
                .iter()
                .filter(|e| fps.contains(&e.fingerprint))
                .collect();
            let want = covered.iter().any(|e| e.fails);
            if want != failure {
                problems.push(format!(
                    "junit: testcase {:?} is {}, but of its findings {} fail",
                    attr(attrs, "name").unwrap_or_default(),
                    if failure {
                        "a failure"
                    } else {
                        "not a failure"
                    },
                    covered.iter().filter(|e| e.fails).count()
                ));
            }
        }
    }
    Rendered {
        name: "junit",
        findings,
        // findings covered by a pytest testcase have no testcase of their own
        complete: false,
    }
}

fn sarif(s: &str, exp: &[Expected], problems: &mut Vec<String>) -> Rendered {
    let doc: Value = serde_json::from_str(s).expect("SARIF parses");
    let run = &doc["runs"][0];
    let results = run["results"].as_array().cloned().unwrap_or_default();
    let findings: Vec<Shown> = results
        .iter()
        .map(|r| {
            let level = r["level"].as_str().unwrap_or("");
            Shown {
                kind: r["ruleId"].as_str().unwrap_or("").to_string(),
                line: r["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64(),
                fingerprint: r["properties"]["fingerprint"].as_str().map(str::to_string),
                gated: r["properties"]["gated"].as_bool(),
                fails: Some(level == "error"),
                known: (level != "error").then_some(level == "note"),
            }
        })
        .collect();
    // A rule's default level: `error` exactly when one of its results is gated.
    let mut gated_kinds: BTreeMap<&str, bool> = BTreeMap::new();
    for e in exp {
        *gated_kinds.entry(e.kind.as_str()).or_default() |= e.gated;
    }
    for rule in run["tool"]["driver"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let id = rule["id"].as_str().unwrap_or("");
        let level = rule["defaultConfiguration"]["level"].as_str().unwrap_or("");
        let want = if gated_kinds.get(id).copied().unwrap_or(false) {
            "error"
        } else {
            "warning"
        };
        if level != want {
            problems.push(format!(
                "sarif: rule {id} has level {level}, but {} of its findings gated in the JSON",
                if want == "error" {
                    "some are"
                } else {
                    "none is"
                }
            ));
        }
    }
    Rendered {
        name: "sarif",
        findings,
        complete: true,
    }
}

fn codequality(s: &str) -> Rendered {
    let issues: Vec<Value> = serde_json::from_str(s).expect("Code Quality parses");
    let findings = issues
        .iter()
        .map(|i| {
            let body = i["content"]["body"].as_str().unwrap_or("");
            let why = reason(body);
            Shown {
                kind: i["check_name"]
                    .as_str()
                    .unwrap_or("")
                    .trim_start_matches("leakgate/")
                    .to_string(),
                line: i["location"]["lines"]["begin"].as_u64(),
                fails: Some(why.is_none()),
                gated: Some(why.unwrap_or(true)),
                ..Shown::default()
            }
        })
        .collect();
    Rendered {
        name: "codequality",
        findings,
        complete: true,
    }
}

fn markdown(m: &str, exp: &[Expected], problems: &mut Vec<String>) -> Rendered {
    let row = regex::Regex::new(r"^\| (❌|➖|⚠️) \| `([^`]*)` \| `([^`]*)` \|").unwrap();
    let findings = m
        .lines()
        .filter_map(|l| row.captures(l))
        .map(|c| Shown {
            kind: c[2].to_string(),
            line: line_of(&c[3]),
            fails: Some(&c[1] == "❌"),
            known: (&c[1] != "❌").then_some(&c[1] == "➖"),
            ..Shown::default()
        })
        .collect();
    let failing = exp.iter().filter(|e| e.fails).count();
    if !m.contains(&format!(" {failing} failing the gate")) {
        problems.push(format!(
            "markdown: the heading does not say {failing} failing the gate: {:?}",
            m.lines().next().unwrap_or("")
        ));
    }
    Rendered {
        name: "markdown",
        findings,
        complete: !m.contains("… and "),
    }
}

fn annotations(a: &str) -> Rendered {
    let cmd = regex::Regex::new(r"^::(error|warning|notice) ([^:]*)::(.*)$").unwrap();
    let title = regex::Regex::new(r"title=leakgate%3A ([^,]+)").unwrap();
    let line = regex::Regex::new(r"(?:^|,)line=(\d+)").unwrap();
    let place = regex::Regex::new(r"^[^%]* \(([^()]*)\)(?:%0A|$)").unwrap();
    let findings = a
        .lines()
        .filter_map(|l| cmd.captures(l))
        .filter_map(|c| {
            let kind = title.captures(&c[2])?[1].to_string();
            let level = &c[1];
            let msg = c[3].replace("%0A", "\n").replace("%25", "%");
            let why = reason(&msg);
            Some(Shown {
                kind,
                line: line
                    .captures(&c[2])
                    .and_then(|m| m[1].parse().ok())
                    .or_else(|| place.captures(&c[3]).and_then(|m| line_of(&m[1]))),
                fails: Some(level == "error"),
                gated: Some(why.unwrap_or(true)),
                known: (level != "error").then_some(level == "notice"),
                ..Shown::default()
            })
        })
        .collect();
    Rendered {
        name: "annotations",
        findings,
        complete: !a.contains("more finding(s) not annotated"),
    }
}

/// Matches a renderer's findings to the JSON's in report order and lists
/// every disagreement.
fn compare(exp: &[Expected], r: &Rendered, problems: &mut Vec<String>) {
    let mut next = 0;
    for s in &r.findings {
        let same = |e: &Expected| {
            e.kind == s.kind
                && (s.line.is_none() || e.line.is_none() || s.line == e.line)
                && s.fingerprint.as_ref().is_none_or(|f| *f == e.fingerprint)
        };
        let Some(i) = (next..exp.len()).find(|&i| same(&exp[i])) else {
            problems.push(format!(
                "{}: shows {} at line {:?}, which the JSON does not have (in this order)",
                r.name, s.kind, s.line
            ));
            continue;
        };
        next = i + 1;
        let e = &exp[i];
        let mut say = |what: &str, json: bool, shown: Option<bool>| {
            if let Some(v) = shown
                && v != json
            {
                problems.push(format!(
                    "{}: {} at line {:?}: {what}={v}, the JSON says {json}",
                    r.name, e.kind, e.line
                ));
            }
        };
        say("gated", e.gated, s.gated);
        say("fails", e.fails, s.fails);
        say("known", e.known, s.known);
    }
    if r.complete && r.findings.len() != exp.len() {
        problems.push(format!(
            "{}: shows {} user findings, the JSON has {}",
            r.name,
            r.findings.len(),
            exp.len()
        ));
    }
}

/// All disagreements of one analysis.
fn disagreements(out: &Outputs) -> Vec<String> {
    let mut problems = Vec::new();
    let exp = expected(&out.report(), &mut problems);
    if let Some(n) = collapsed_count(&out.text)
        && (n != exp.len() || exp.iter().any(|e| e.gated))
    {
        problems.push(format!(
            "text: counts {n} not-gated findings, the JSON has {} user findings ({} gated)",
            exp.len(),
            exp.iter().filter(|e| e.gated).count()
        ));
    }
    let rendered = [
        text(&out.text),
        html(&out.html),
        junit(&out.junit, &exp, &mut problems),
        sarif(&out.sarif, &exp, &mut problems),
        codequality(&out.codequality),
        markdown(&out.markdown, &exp, &mut problems),
        annotations(&out.annotations),
    ];
    for r in &rendered {
        compare(&exp, r, &mut problems);
    }
    problems
}

/// The policies every scenario is rendered under.
fn policies() -> Vec<Vec<&'static str>> {
    let mut p: Vec<Vec<&'static str>> = vec![vec![]];
    for f in [
        "definite",
        "indirect",
        "possible",
        "reachable",
        "leaks",
        "errors",
        "memerrors",
        "fds",
        "all",
        "none",
        "definite,possible",
    ] {
        p.push(vec!["--fail-on", f]);
    }
    p.push(vec!["--fail-on", "all", "--max-leaked-bytes", "1"]);
    p.push(vec!["--fail-on", "all", "--max-leaked-bytes", "1000000"]);
    p
}

/// Renders `args` under every policy and fails with every disagreement.
fn check(scenario: &str, args: &[&str]) {
    let (_guard, work) = outputs::workdir();
    let mut report = String::new();
    let mut users = 0;
    for policy in policies() {
        let all: Vec<&str> = args.iter().chain(&policy).copied().collect();
        let out = outputs::analyze_all(&work, &all);
        users = users.max(expected(&out.report(), &mut Vec::new()).len());
        let problems = disagreements(&out);
        if !problems.is_empty() {
            let _ = writeln!(report, "{scenario} {}:", policy.join(" "));
            for p in problems {
                let _ = writeln!(report, "  {p}");
            }
        }
    }
    assert!(users > 0, "{scenario}: no user findings to compare");
    assert!(
        report.is_empty(),
        "renderers disagree with the JSON:\n{report}"
    );
}

#[test]
fn leak_kinds() {
    check(
        "leak_kinds.xml",
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
        ],
    );
}

#[test]
fn mem_errors() {
    check(
        "mem_errors.xml",
        &[
            "fixtures/recorded/mem_errors.xml",
            "--src-root",
            "tests/programs/c",
        ],
    );
}

#[test]
fn every_memcheck_kind() {
    check("many.xml", &["fixtures/raw-3.19/many.xml"]);
}

#[test]
fn descriptor_errors() {
    check("fds.xml", &["fixtures/raw-3.26/fds.xml"]);
}

#[test]
fn per_call_growth() {
    check(
        "checkpoints.xml",
        &[
            "fixtures/checkpoints/checkpoints.xml",
            "--src-root",
            "tests/programs/pytest",
        ],
    );
}

#[test]
fn pybind11_extension() {
    check(
        "pybind11.xml",
        &[
            "fixtures/recorded/pybind11.xml",
            "--src-root",
            "tests/programs/pybind11",
        ],
    );
}

/// Two processes; the leaks known from a baseline of the first, the memory
/// errors new.
#[test]
fn two_processes_with_a_baseline() {
    let (_guard, work) = outputs::workdir();
    let baseline = work.join("baseline.json");
    let base = baseline.to_str().unwrap();
    outputs::analyze_all(
        &work,
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
            "--fail-on",
            "none",
            "--write-baseline",
            base,
        ],
    );
    check(
        "leak_kinds.xml + mem_errors.xml --baseline",
        &[
            "fixtures/recorded/leak_kinds.xml",
            "fixtures/recorded/mem_errors.xml",
            "--src-root",
            "tests/programs/c",
            "--baseline",
            base,
        ],
    );
}

/// The readers above find what each renderer shows (so that agreement is
/// not reached by reading nothing): `leak_kinds.xml` under `--fail-on leaks
/// --max-leaked-bytes 1000`, where the seven leaks are gated and none
/// fails.
#[test]
fn every_renderer_is_read() {
    let (_guard, work) = outputs::workdir();
    let out = outputs::analyze_all(
        &work,
        &[
            "fixtures/recorded/leak_kinds.xml",
            "--src-root",
            "tests/programs/c",
            "--fail-on",
            "leaks",
            "--max-leaked-bytes",
            "1000",
        ],
    );
    let mut problems = Vec::new();
    let exp = expected(&out.report(), &mut problems);
    // Seven user leaks, the indirect one under its definite leak.
    assert_eq!(exp.len(), 6, "six user leaks to fix");
    assert!(exp.iter().all(|e| e.gated && !e.fails), "{exp:?}");
    let rendered = [
        text(&out.text),
        html(&out.html),
        junit(&out.junit, &exp, &mut problems),
        sarif(&out.sarif, &exp, &mut problems),
        codequality(&out.codequality),
        markdown(&out.markdown, &exp, &mut problems),
        annotations(&out.annotations),
    ];
    for r in &rendered {
        assert_eq!(r.findings.len(), 6, "{}: {:?}", r.name, r.findings);
        for s in &r.findings {
            assert!(s.line.is_some(), "{}: no line in {s:?}", r.name);
            let (gated, fails) = match r.name {
                "text" | "html" => (true, false),
                "markdown" => (false, true),
                _ => (true, true),
            };
            assert_eq!(s.gated.is_some(), gated, "{}: {s:?}", r.name);
            assert_eq!(s.fails.is_some(), fails, "{}: {s:?}", r.name);
        }
    }
}
