//! Integration tests of the HTML report (`--html FILE`, `leakgate report
//! JSON -o FILE.html`): its structure for the pybind11 test program (every
//! user finding a card with its snippet and highlighted line, no card for
//! noise), escaping of a hostile report (no markup or script gets through),
//! a 60,000-record report stays small, and a real browser (headless
//! Chromium, via `tests/browser/screenshot.sh`) loads the page without
//! console messages and takes a screenshot.

use crate::common;
use crate::common::stderr;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn leakgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .expect("run leakgate")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn fixture(rel: &str) -> PathBuf {
    common::repo_root().join("fixtures").join(rel)
}

/// The page as the renderer escapes text (`esc` in src/render/html.rs).
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The finding cards of a page: each `<article class="card ...">...</article>`.
fn cards(html: &str) -> Vec<&str> {
    html.split("<article class=\"card ")
        .skip(1)
        .map(|c| &c[..c.find("</article>").expect("card closed")])
        .collect()
}

fn attr<'a>(card: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let at = card
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in card"))
        + key.len();
    &card[at..at + card[at..].find('"').unwrap()]
}

/// Tags the renderer emits, and the attributes it puts on them.
const TAGS: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "main",
    "footer",
    "section",
    "nav",
    "article",
    "figure",
    "figcaption",
    "div",
    "span",
    "p",
    "a",
    "h1",
    "h2",
    "h3",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "code",
    "details",
    "summary",
    "br",
];
const ATTRS: &[&str] = &[
    "lang",
    "charset",
    "http-equiv",
    "name",
    "content",
    "class",
    "id",
    "href",
    "title",
    "style",
    "data-kind",
    "data-fingerprint",
    "data-line",
    "rowspan",
    "scope",
];

/// Checks that every `<` of the page opens a known tag whose attributes are
/// known and double-quoted (so no text from the report became markup), and
/// returns the text of the `<style>` element.
fn check_markup(html: &str) {
    let body = html.strip_prefix("<!DOCTYPE html>\n").expect("doctype");
    let style_start = body.find("<style>").expect("style") + "<style>".len();
    let style_end = body.find("</style>").expect("/style");
    assert!(!body[style_start..style_end].contains('<'));
    let body = format!("{}{}", &body[..style_start], &body[style_end..]);
    let mut rest = body.as_str();
    while let Some(lt) = rest.find('<') {
        let tag = &rest[lt + 1..];
        let end = tag.find('>').expect("tag closed");
        let inner = &tag[..end];
        let inner = inner.strip_prefix('/').unwrap_or(inner);
        let name_len = inner
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(inner.len());
        let name = &inner[..name_len];
        assert!(
            TAGS.contains(&name),
            "unexpected tag <{}> in the page",
            &tag[..end.min(80)]
        );
        // Attributes: name="value" with no quote inside the value.
        let mut attrs = inner[name_len..].trim_start();
        while !attrs.is_empty() {
            let eq = attrs
                .find("=\"")
                .unwrap_or_else(|| panic!("bad attribute in <{inner}>"));
            let an = &attrs[..eq];
            assert!(
                ATTRS.contains(&an),
                "unexpected attribute {an:?} in <{name}>"
            );
            let val_end = attrs[eq + 2..].find('"').expect("value closed") + eq + 2;
            let val = &attrs[eq + 2..val_end];
            assert!(!val.contains('<'), "raw < in attribute {an}");
            if an == "style" {
                let pct = val
                    .strip_prefix("width:")
                    .and_then(|v| v.strip_suffix('%'))
                    .unwrap_or_else(|| panic!("unexpected style {val:?}"));
                pct.parse::<f64>().expect("numeric width");
            }
            attrs = attrs[val_end + 1..].trim_start();
        }
        rest = &tag[end + 1..];
    }
    let lower = html.to_ascii_lowercase();
    for bad in [
        "<script",
        "<img",
        "<svg",
        "<iframe",
        "javascript:",
        "http://",
        "https://",
    ] {
        assert!(!lower.contains(bad), "the page contains {bad:?}");
    }
}

#[test]
fn pybind11_page_has_a_card_per_user_finding_with_its_source() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "pybind11", tmp.path());
    let src = dir.join("pbext.cpp");
    let out = leakgate(
        &dir,
        &[
            "run",
            "--format",
            "json",
            "-o",
            "report.json",
            "--html",
            "report.html",
            // Keep the interpreter's records as noise (the bundled
            // suppressions would hide them all).
            "--no-bundled-suppressions",
            "--",
            py.to_str().unwrap(),
            "test.py",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&read(&dir.join("report.json"))).unwrap();
    let html = read(&dir.join("report.html"));
    check_markup(&html);
    let findings = r["findings"].as_array().unwrap();
    let user: BTreeSet<&str> = findings
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| f["fingerprint"].as_str().unwrap())
        .collect();
    let noise: BTreeSet<&str> = findings
        .iter()
        .filter(|f| f["category"] == "noise")
        .map(|f| f["fingerprint"].as_str().unwrap())
        .collect();
    assert!(!noise.is_empty(), "the pybind11 run has interpreter noise");
    // Records with the user's PyInit_pbext in their stack (pybind11
    // registering its types; whether one is possibly lost depends on the
    // heap's layout) are noise all the same.
    assert!(
        !findings
            .iter()
            .filter(|f| f["category"] == "user")
            .any(|f| f["stack"].to_string().contains("PyInit_pbext")),
        "a PyInit_pbext record is the user's"
    );
    let cards = cards(&html);
    let shown: BTreeSet<&str> = cards.iter().map(|c| attr(c, "data-fingerprint")).collect();
    assert_eq!(shown, user, "one card per user finding, none for noise");
    assert_eq!(cards.len(), 4);
    let lines: Vec<String> = read(&src).lines().map(str::to_string).collect();
    for (marker, kind, func) in [
        ("@pb_new_array", "Leak_DefinitelyLost", "leak_new_array()"),
        ("@pb_dtor_member", "Leak_DefinitelyLost", "Holder::Holder()"),
        ("@pb_throw_path", "Leak_DefinitelyLost", "throw_path_leak()"),
        ("@pb_mismatched", "MismatchedFree", "mismatched_delete()"),
    ] {
        let line = common::marker_line(&src, marker);
        let at = format!("<code class=\"loc\">pbext.cpp:{line}</code>");
        let card = cards
            .iter()
            .find(|c| c.contains(&at))
            .unwrap_or_else(|| panic!("no card at pbext.cpp:{line} ({marker})"));
        assert_eq!(attr(card, "data-kind"), kind);
        assert!(card.contains(&esc(func)), "{marker}: function {func}");
        // The snippet: the marked line highlighted, its neighbours around it.
        let hl = format!(
            "<div class=\"sl hl\" data-line=\"{line}\"><span class=\"ln\">{line}</span><span class=\"sc\">{}</span></div>",
            esc(&lines[line as usize - 1])
        );
        assert!(card.contains(&hl), "{marker}: highlighted line\n{card}");
        for near in [line - 1, line + 1] {
            assert!(
                card.contains(&format!("<div class=\"sl\" data-line=\"{near}\">")),
                "{marker}: context line {near}"
            );
        }
        assert_eq!(card.matches("class=\"sl hl\"").count(), 1);
        // The stack: the user's frame highlighted, at the marked line.
        let user_frame = card
            .split("<li class=\"frame user\">")
            .nth(1)
            .unwrap_or_else(|| panic!("{marker}: no user frame"));
        assert!(user_frame.starts_with("<span class=\"fi\">"));
        assert!(card.contains(&format!(">pbext.cpp:{line}</span>")));
    }
    // Noise: summarised by source and kind, not as cards.
    let noise_sec = &html[html.find("<section id=\"noise\">").unwrap()..];
    let noise_sec = &noise_sec[..noise_sec.find("</section>").unwrap()];
    assert!(noise_sec.contains("<span class=\"srcname\">python</span>"));
    assert!(noise_sec.contains(">Leak_PossiblyLost</span>"));
    // How it was run: the command and Valgrind's version and flags.
    let run_sec = &html[html.find("<section id=\"run\">").unwrap()..];
    assert!(run_sec.contains("--leak-check=full"));
    assert!(run_sec.contains("test.py"));
    let version = r["valgrind"]["version"].as_str().unwrap();
    assert!(run_sec.contains(&esc(version)));
    assert!(html.contains("<div class=\"status\">FAIL</div>"));

    // A saved JSON report renders to the same cards.
    let out = leakgate(&dir, &["report", "report.json", "-o", "again.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = read(&dir.join("again.html"));
    let again_cards: BTreeSet<&str> = self::cards(&again)
        .iter()
        .map(|c| attr(c, "data-fingerprint"))
        .collect();
    assert_eq!(again_cards, user);
    assert!(again.contains("class=\"sl hl\""));
    keep_for_inspection(&dir.join("report.html"), "pybind11.html");
}

/// With `LEAKGATE_HTML_KEEP=DIR`, copies a page there (for looking at it).
fn keep_for_inspection(page: &Path, name: &str) {
    if let Some(dir) = std::env::var_os("LEAKGATE_HTML_KEEP") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(page, dir.join(name)).unwrap();
    }
}

/// A JSON report from the recorded leak_kinds run, for tests to change.
fn base_report(dir: &Path) -> Value {
    let xml = fixture("recorded/leak_kinds.xml");
    let out = leakgate(
        dir,
        &[
            "analyze",
            "--format",
            "json",
            "-o",
            "base.json",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    serde_json::from_str(&read(&dir.join("base.json"))).unwrap()
}

const HOSTILE_FN: &str = "<script>alert(\"fn\")</script>";
const TEMPLATE_FN: &str = "std::map<int, std::vector<char> >::operator<<(A&, B const&) [T = 'x']";
const HOSTILE_SRC_LINE: &str =
    "  char *p = malloc(8); /* </div><script>alert('src')</script> & \"q\" */";

fn hostile_report(dir: &Path) -> Value {
    let mut r = base_report(dir);
    // A source file whose name and content carry markup and quotes.
    let src_name = "ev\"il'<b>.c";
    let src_path = dir.join(src_name);
    std::fs::write(
        &src_path,
        format!("int a;\n/* <!-- */\n{HOSTILE_SRC_LINE}\nint b; /* --> */\n"),
    )
    .unwrap();
    let evil = "\"'><img src=x onerror=alert(1)><script>alert(2)</script>";
    r["command"] = json!(["python3", "</title><script>alert('cmd')</script>"]);
    r["environment"] = json!([format!("X={evil}")]);
    r["notes"] = json!([format!("note {evil}")]);
    r["src_roots"] = json!([format!("/nowhere/{evil}")]);
    r["valgrind"]["version"] = json!(format!("3.19<script>{evil}"));
    r["tool"]["version"] = json!(format!("0.1\"{evil}"));
    r["verdict"]["reasons"] = json!([format!("reason {evil}")]);
    r["valgrind_command"] = json!(["valgrind", format!("--log-file={evil}")]);
    for p in r["processes"].as_array_mut().unwrap() {
        p["command"] = json!([evil]);
        p["xml"] = json!(format!("{evil}.xml"));
        p["client_messages"] = json!([format!("msg {evil}")]);
        p["complete"] = json!(false);
        p["incomplete_reason"] = json!(format!("cut {evil}"));
        p["valgrind_args"] = json!([format!("--suppressions={evil}")]);
    }
    let mut first = true;
    for f in r["findings"].as_array_mut().unwrap() {
        f["fingerprint"] = json!(format!("{}\"{evil}", f["fingerprint"].as_str().unwrap()));
        f["message"] = json!(format!("Invalid <read> & {evil}"));
        f["aux"] = json!([format!("aux {evil}")]);
        if f["category"] == "user" {
            let func = if first { HOSTILE_FN } else { TEMPLATE_FN };
            f["location"]["function"] = json!(func);
            f["location"]["file"] = json!(src_name);
            f["location"]["path"] = json!(src_path.to_str().unwrap());
            f["location"]["line"] = json!(3);
            f["location"]["object"] = json!(evil);
            f["source_line"] = json!(HOSTILE_SRC_LINE);
            first = false;
        } else {
            f["source"] = json!(format!("<b>{evil}</b>"));
            f["kind"] = json!(format!("<i>Kind</i>{evil}"));
        }
        for fr in f["stack"].as_array_mut().unwrap() {
            fr["function"] = json!(format!("{TEMPLATE_FN}{evil}"));
            fr["object"] = json!(format!("/lib/{evil}.so"));
            if !fr["file"].is_null() {
                fr["file"] = json!(src_name);
                fr["path"] = json!(format!("/x/{evil}/{src_name}"));
            }
        }
    }
    let s = &mut r["summary"];
    s["noise"]["by_source"] = json!({ format!("<b>{evil}</b>"): 3 });
    s["noise"]["bytes_by_source"] = json!({ format!("<b>{evil}</b>"): 30 });
    s["records_by_kind"] = json!({ format!("<i>{evil}</i>"): 3 });
    s["suppressed"]["by_suppression"] = json!({ format!("rule {evil}"): 2 });
    s["suppressed"]["undecidable"] = json!(1);
    s["suppressed"]["undecidable_by_suppression"] = json!({ format!("undecided {evil}"): 1 });
    s["suppressed"]["unused"] = json!([format!("unused {evil}")]);
    r
}

#[test]
fn hostile_report_renders_as_text() {
    let tmp = common::tempdir();
    let r = hostile_report(tmp.path());
    std::fs::write(tmp.path().join("hostile.json"), r.to_string()).unwrap();
    let out = leakgate(
        tmp.path(),
        &["report", "hostile.json", "-o", "hostile.html"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = read(&tmp.path().join("hostile.html"));
    check_markup(&html);
    // The names are there, as text.
    assert!(html.contains(&esc(HOSTILE_FN)), "function name as text");
    assert!(
        html.contains(&esc(TEMPLATE_FN)),
        "C++ template name as text"
    );
    assert!(html.contains(&esc("ev\"il'<b>.c:3")), "file name as text");
    assert!(
        html.contains(&esc("</title><script>alert(")),
        "command as text"
    );
    // The snippet was read from the hostile source file and escaped.
    let hl = format!(
        "<div class=\"sl hl\" data-line=\"3\"><span class=\"ln\">3</span><span class=\"sc\">{}</span></div>",
        esc(HOSTILE_SRC_LINE)
    );
    assert!(html.contains(&hl), "escaped snippet");
    assert!(html.contains(&format!("<span class=\"sc\">{}</span>", esc("/* <!-- */"))));
    // No script can run even if something slipped through.
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    keep_for_inspection(&tmp.path().join("hostile.html"), "hostile.html");
}

#[test]
fn missing_sources_are_said_and_the_recorded_line_shown() {
    let tmp = common::tempdir();
    let mut r = base_report(tmp.path());
    // Recorded paths into a directory that does not exist here.
    for f in r["findings"].as_array_mut().unwrap() {
        if let Some(file) = f["location"]["file"].as_str() {
            f["location"]["path"] = json!(format!("/nonexistent-leakgate-test/{file}"));
        }
    }
    std::fs::write(tmp.path().join("r.json"), r.to_string()).unwrap();
    let out = leakgate(tmp.path(), &["report", "r.json", "--format", "html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    check_markup(&html);
    assert!(html.contains("The source file is not readable here"));
    // With --src-root the local copy is found by its trailing path.
    let src = common::programs_dir().join("c");
    let out = leakgate(
        tmp.path(),
        &[
            "report",
            "r.json",
            "--src-root",
            src.to_str().unwrap(),
            "-o",
            "r.html",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = read(&tmp.path().join("r.html"));
    let line = common::marker_line(&src.join("leak_kinds.c"), "@definite");
    let card = cards(&html)
        .into_iter()
        .find(|c| c.contains(&format!("leak_kinds.c:{line}</code>")))
        .expect("leak_definite card");
    assert!(card.contains(&format!("<div class=\"sl hl\" data-line=\"{line}\">")));
    assert!(card.contains("@definite"));
    assert!(!card.contains("not readable here"));
    // A text rendering of the same saved report works too.
    let out = leakgate(tmp.path(), &["report", "r.json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL:"));
    // Not a report: exit 2.
    std::fs::write(tmp.path().join("bad.json"), "{\"x\": 1}").unwrap();
    let out = leakgate(tmp.path(), &["report", "bad.json", "-o", "bad.html"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a leakgate JSON report"));
}

#[test]
fn sixty_thousand_noise_records_stay_a_small_page() {
    let dir = fixture("torch-ext");
    let tmp = common::tempdir();
    let out = leakgate(
        tmp.path(),
        &[
            "analyze",
            "--src-root",
            dir.to_str().unwrap(),
            "--html",
            "torch.html",
            "--format",
            "json",
            "-o",
            "torch.json",
            dir.join("valgrind.xml.zst").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r: Value = serde_json::from_str(&read(&tmp.path().join("torch.json"))).unwrap();
    assert!(r["summary"]["records"].as_u64().unwrap() > 60_000);
    let html = read(&tmp.path().join("torch.html"));
    check_markup(&html);
    assert!(html.len() < 1_000_000, "the page is {} bytes", html.len());
    assert_eq!(cards(&html).len(), 2);
    for line in [8, 16] {
        assert!(html.contains(&format!("<div class=\"sl hl\" data-line=\"{line}\">")));
    }
    let noise = r["summary"]["noise"]["findings"].as_u64().unwrap();
    assert!(noise > 100);
    assert!(html.contains(&format!(
        "Largest noise findings (100 of {})",
        thousands(noise)
    )));
    assert!(html.contains("more noise findings (see the JSON report)"));
    keep_for_inspection(&tmp.path().join("torch.html"), "torch.html");
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|c| common::find_on_path(c.as_ref()))
}

/// Runs tests/browser/screenshot.sh on `page`; returns the PNG's path.
fn browser_check(page: &Path, png: &Path) {
    let script = common::repo_root().join("tests/browser/screenshot.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(page)
        .arg(png)
        .output()
        .expect("run screenshot.sh");
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let bytes = std::fs::read(png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(bytes.len() > 10_000, "a screenshot with something on it");
}

#[test]
fn chromium_loads_the_pages_without_console_messages() {
    if chromium().is_none()
        && common::require_or_skip("chromium not found (apt-get install chromium)")
    {
        return;
    }
    let tmp = common::tempdir();
    let keep = std::env::var_os("LEAKGATE_HTML_KEEP").map(PathBuf::from);
    let shots = keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    // A real report (recorded leak_kinds run, sources from the repository).
    let xml = fixture("recorded/leak_kinds.xml");
    let src = common::programs_dir().join("c");
    let out = leakgate(
        tmp.path(),
        &[
            "analyze",
            "--src-root",
            src.to_str().unwrap(),
            "--html",
            "leak_kinds.html",
            xml.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    browser_check(
        &tmp.path().join("leak_kinds.html"),
        &shots.join("leak_kinds.png"),
    );
    // The hostile report: no console message means no script ran and the
    // Content-Security-Policy had nothing to block.
    let r = hostile_report(tmp.path());
    std::fs::write(tmp.path().join("hostile.json"), r.to_string()).unwrap();
    let out = leakgate(
        tmp.path(),
        &["report", "hostile.json", "-o", "hostile.html"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    browser_check(&tmp.path().join("hostile.html"), &shots.join("hostile.png"));
    if let Some(k) = keep {
        std::fs::copy(
            tmp.path().join("leak_kinds.html"),
            k.join("leak_kinds.html"),
        )
        .unwrap();
    }
}
