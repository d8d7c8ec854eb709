//! Integration tests: `leakgate analyze` on recorded reports — the fixtures
//! in `fixtures/` (always present) and the shared corpora in `../shared`
//! (skipped with a message when absent, as in a user's clone).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(p: &str) -> PathBuf {
    common::repo_root().join("fixtures").join(p)
}

fn shared(p: &str) -> Option<PathBuf> {
    let dir = common::repo_root().join("..").join("shared").join(p);
    if dir.exists() {
        Some(dir)
    } else {
        eprintln!("SKIP: ../shared/{p} is absent (not a CI checkout)");
        None
    }
}

/// `leakgate analyze --format json ARGS`; (exit code, report or Null, stderr).
fn analyze(args: &[&str], paths: &[&Path]) -> (i32, Value, String) {
    let out = Command::new(common::leakgate_bin())
        .arg("analyze")
        .args(["--format", "json"])
        .args(args)
        .args(paths)
        .output()
        .expect("run leakgate");
    let code = out.status.code().expect("not killed by a signal");
    assert_ne!(
        code,
        101,
        "leakgate panicked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    // The conservation check runs on every analysis: it must hold here.
    assert_ne!(code, 5, "records not conserved: {err}");
    assert!(!err.contains("internal error"), "{err}");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code, v, err)
}

fn count_errors(path: &Path) -> u64 {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    (text.matches("<error>").count() + text.matches("<fatal_signal>").count()) as u64
}

#[test]
fn many_xml_reads_every_record_once_despite_quirks() {
    let p = fixture("raw-3.19/many.xml");
    let (code, r, _) = analyze(&[], &[&p]);
    assert_eq!(code, 1);
    common::assert_conserved(&r);
    // 16 <error>s; the 16 duplicated top-level <suppression>s are not records.
    assert_eq!(r["summary"]["records"], 16);
    assert_eq!(count_errors(&p), 16);
    // The unescaped <threadname>worker<&></threadname> loses nothing after it.
    let thr = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["location"]["function"] == "thr")
        .expect("the thread's error is read");
    assert_eq!(thr["kind"], "InvalidWrite");
    assert_eq!(r["processes"][0]["complete"], true);
    let msgs = r["processes"][0]["client_messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs[0].as_str().unwrap().contains("<tag>&"),
        "unescaped: {msgs:?}"
    );
    // <errorcounts> gives occurrences: cond_err's error is two contexts
    // (two call sites), seen 1 + 3 times.
    let cond = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["location"]["function"] == "cond_err")
        .unwrap();
    assert_eq!(cond["count"], 4);
    assert_eq!(cond["records"], 2);
}

#[test]
fn truncated_reports_keep_their_records_and_are_incomplete() {
    for name in ["kill_KILL.xml", "exec_notrace.xml"] {
        let p = fixture(&format!("raw-3.19/{name}"));
        let (code, r, _) = analyze(&[], &[&p]);
        // Their salvaged errors are in user code, so the gate (1) outranks
        // incompleteness (3); without user code to blame it is 3.
        assert_eq!(code, 1, "{name}");
        assert_eq!(r["processes"][0]["complete"], false, "{name}");
        assert_eq!(
            r["summary"]["records"].as_u64().unwrap(),
            count_errors(&p),
            "{name}"
        );
        let reasons = r["verdict"]["reasons"].to_string();
        assert!(
            reasons.contains("incomplete") && reasons.contains("truncated"),
            "{reasons}"
        );
        let (code, _, _) = analyze(&["--src-root", "/nonexistent-but-no"], &[&p]);
        assert_eq!(code, 2, "a missing --src-root is a usage error");
    }
    // A report whose records are all outside the user's code: exit 3.
    let tmp = common::tempdir();
    let p = fixture("raw-3.19/kill_KILL.xml");
    let (code, r, _) = analyze(
        &[
            "--src-root",
            tmp.path().to_str().unwrap(),
            "--user-object",
            "nothing-matches",
        ],
        &[&p],
    );
    let user = r["summary"]["user"]["findings"].as_u64().unwrap();
    if user == 0 {
        assert_eq!(code, 3);
        assert_eq!(r["verdict"]["status"], "incomplete");
    }
}

#[test]
fn valgrind_refusing_to_run_is_incomplete() {
    let p = fixture("raw-3.19/bad_suppression_file.xml");
    let (code, r, _) = analyze(&[], &[&p]);
    assert_eq!(code, 3);
    assert_eq!(r["processes"][0]["complete"], false);
}

#[test]
fn fatal_signal_is_a_finding_and_the_report_is_complete() {
    let p = fixture("raw-3.19/kill_TERM.xml");
    let (_, r, _) = analyze(&[], &[&p]);
    assert_eq!(r["processes"][0]["complete"], true);
    assert_eq!(r["processes"][0]["exit"]["signal"], "SIGTERM");
    assert!(
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "FatalSignal")
    );
    common::assert_conserved(&r);
}

#[test]
fn inlined_frames_and_mangled_names_are_read() {
    let p = fixture("raw-3.19/inl.xml");
    let (code, r, _) = analyze(&[], &[&p]);
    assert_eq!(code, 1);
    let kinds: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"MismatchedFree"), "{kinds:?}");
    let stripped = fixture("raw-3.19/stripped.xml");
    let (_, r, _) = analyze(&[], &[&stripped]);
    common::assert_conserved(&r);
}

#[test]
fn protocol_6_report_is_read() {
    let p = fixture("raw-3.27/fdleak.xml");
    let (_, r, _) = analyze(&[], &[&p]);
    assert_eq!(r["valgrind"]["protocol"], 6);
    assert_eq!(r["summary"]["records"].as_u64().unwrap(), count_errors(&p));
    let kinds = r["summary"]["records_by_kind"].to_string();
    assert!(
        kinds.contains("FdNotClosed"),
        "unknown kinds kept as strings: {kinds}"
    );
    common::assert_conserved(&r);
}

#[test]
fn recorded_runs_reanalyse_with_source_roots() {
    let p = fixture("recorded/leak_kinds.xml");
    let src = common::programs_dir().join("c");
    let (code, r, _) = analyze(&["--src-root", src.to_str().unwrap()], &[&p]);
    assert_eq!(code, 1);
    // The recorded paths point into a deleted temp dir; the trailing path
    // component names leak_kinds.c under the root, so the local line shows.
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["location"]["function"] == "leak_definite")
        .unwrap();
    assert!(f["source_line"].as_str().unwrap().contains("@definite"));
    assert!(
        f["location"]["path"]
            .as_str()
            .unwrap()
            .ends_with("tests/programs/c/leak_kinds.c")
    );
    assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], 181);
    // Several files at once: a directory.
    let (code, r, _) = analyze(&[], &[&fixture("recorded")]);
    assert_eq!(code, 1);
    let xml_files = std::fs::read_dir(fixture("recorded"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "xml")
        })
        .count();
    assert!(xml_files >= 3, "leak_kinds, mem_errors, pybind11");
    assert_eq!(r["processes"].as_array().unwrap().len(), xml_files);
    common::assert_conserved(&r);
}

#[test]
fn torch_extension_report_has_exactly_the_two_user_leaks() {
    let dir = fixture("torch-ext");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let (code, r, err) = analyze(
        &["--src-root", dir.to_str().unwrap()],
        &[&dir.join("valgrind.xml.zst")],
    );
    assert_eq!(code, 1, "{err}");
    common::assert_conserved(&r);
    let user: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect();
    let want = expected["user"].as_array().unwrap();
    assert_eq!(
        user.len(),
        want.len(),
        "{:#?}",
        user.iter().map(|f| &f["location"]).collect::<Vec<_>>()
    );
    for w in want {
        let hit = user.iter().find(|f| {
            f["kind"] == w["kind"]
                && f["location"]["file"] == w["file"]
                && f["location"]["line"] == w["line"]
                && f["location"]["function"] == w["function"]
        });
        let hit = hit.unwrap_or_else(|| panic!("missing {w}"));
        assert_eq!(hit["bytes"], w["bytes"]);
        assert_eq!(hit["blocks"], w["blocks"]);
        assert!(hit["source_line"].as_str().is_some(), "local source found");
    }
    let total: u64 = expected["records"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(r["summary"]["records"].as_u64().unwrap(), total);
    for (kind, n) in expected["records"].as_object().unwrap() {
        assert_eq!(&r["summary"]["records_by_kind"][kind], n, "{kind}");
    }
    // The bundled suppressions leave no noise of a gated kind.
    let gated_noise: Vec<_> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "noise")
        .filter(|f| f["kind"] != "Leak_PossiblyLost" && f["kind"] != "Leak_StillReachable")
        .map(|f| (f["kind"].clone(), f["stack"][0]["function"].clone()))
        .collect();
    assert!(gated_noise.is_empty(), "{gated_noise:?}");
    assert!(r["summary"]["suppressed"]["records"].as_u64().unwrap() > 60_000);
    // Without a source root (a foreign report) the same two are found.
    let (_, r2, _) = analyze(&[], &[&dir.join("valgrind.xml.zst")]);
    assert_eq!(r2["summary"]["user"]["findings"], 2);
}

fn every_file_parses(dir: &Path) {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".xml") || name.contains(".stderr.exp")) {
            continue;
        }
        n += 1;
        let (code, r, err) = analyze(&[], &[&p]);
        assert!(matches!(code, 0 | 1 | 3), "{name}: exit {code}: {err}");
        assert_eq!(
            r["summary"]["records"].as_u64().unwrap(),
            count_errors(&p),
            "{name}: every <error> is a record"
        );
        common::assert_conserved(&r);
    }
    assert!(n > 0);
}

#[test]
fn valgrind_own_test_expectations_parse() {
    if let Some(d) = shared("corpus/valgrind-tests") {
        every_file_parses(&d);
    }
}

#[test]
fn raw_corpora_parse() {
    for d in ["corpus/raw-3.19", "corpus/raw-3.27", "corpus/peers"] {
        if let Some(d) = shared(d) {
            every_file_parses(&d);
        }
    }
}

#[test]
fn chunked_parallel_parsing_gives_the_same_report() {
    // Large files are split at <error> lines and parsed in parallel;
    // LEAKGATE_CHUNK_BYTES forces that on small fixtures.
    let files = common::fixture_files(&["raw-3.19", "recorded", "raw-3.27", "raw-3.26"]);
    let run = |p: &Path, chunk: Option<&str>| {
        let mut c = Command::new(common::leakgate_bin());
        c.args(["analyze", "--format", "json"]).arg(p);
        if let Some(n) = chunk {
            c.env("LEAKGATE_CHUNK_BYTES", n)
                .env("LEAKGATE_THREADS", "2");
        }
        let out = c.output().unwrap();
        (out.status.code(), out.stdout)
    };
    for f in &files {
        let whole = run(f, None);
        for chunk in ["600", "3000"] {
            assert!(
                whole == run(f, Some(chunk)),
                "{} differs when chunked at {chunk}",
                f.display()
            );
        }
    }
    // Several files at once are parsed in parallel too: same as one by one.
    let (code, all, _) = analyze(&[], &files.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    assert!(matches!(code, 1 | 3));
    assert_eq!(all["processes"].as_array().unwrap().len(), files.len());
    common::assert_conserved(&all);
}

/// Peak RSS (KiB) from the LEAKGATE_TIMINGS line, and the record count.
fn analyze_peak(paths: &[&Path]) -> (u64, u64) {
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--format", "json"])
        .args(paths)
        .env("LEAKGATE_TIMINGS", "1")
        .env("LEAKGATE_THREADS", "2")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let peak = err
        .lines()
        .find_map(|l| l.split("peak RSS ").nth(1))
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in: {err}"));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (peak, v["summary"]["records"].as_u64().unwrap())
}

#[test]
fn memory_stays_flat_when_the_input_doubles() {
    // 256 MB of the real torch report (cut mid-record: incomplete, but every
    // complete record counts), analysed alone and as two processes' reports.
    // Records are streamed, so the peak must not grow with the input.
    use std::io::Read;
    let dir = common::tempdir();
    let part = dir.path().join("torch-part.xml");
    let zst = std::fs::File::open(fixture("torch-ext/valgrind.xml.zst")).unwrap();
    let mut dec = zstd::stream::read::Decoder::new(zst)
        .unwrap()
        .take(256 << 20);
    let mut out = std::fs::File::create(&part).unwrap();
    std::io::copy(&mut dec, &mut out).unwrap();
    drop(out);
    let (one, n1) = analyze_peak(&[&part]);
    let (two, n2) = analyze_peak(&[&part, &part]);
    assert!(n1 > 5_000, "{n1} records");
    assert_eq!(n2, 2 * n1);
    eprintln!("peak RSS: {one} KiB for 1x, {two} KiB for 2x");
    assert!(
        two <= one + one / 4 + 4096,
        "peak RSS grew with the input: {one} KiB for 1x, {two} KiB for 2x"
    );
    assert!(two < 64 * 1024, "peak RSS {two} KiB is above 64 MiB");
}
