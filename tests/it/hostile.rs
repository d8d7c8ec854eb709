//! Integration tests: hostile input to `leakgate analyze`. Each case is a
//! clear one-line error or a handled case, with bounded memory (the peak
//! resident set that `LEAKGATE_TIMINGS` reports) and never a panic:
//! entity expansion, a 1 GB line, one-line reports, invalid UTF-8, NUL bytes,
//! deep nesting, unescaped `<threadname>` text, an unknown protocol, numbers
//! beyond 64 bits, source paths naming devices; and the conservation check
//! (records read = records in findings + suppressed) that turns any
//! accounting bug into exit 5.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// `leakgate analyze --format json ARGS PATHS` with `env`: (exit code,
/// report or Null, stderr, peak RSS in KiB).
fn analyze_env(args: &[&str], paths: &[&Path], env: &[(&str, &str)]) -> (i32, Value, String, u64) {
    let mut c = Command::new(common::leakgate_bin());
    c.arg("analyze")
        .args(["--format", "json"])
        .args(args)
        .args(paths)
        .env("LEAKGATE_TIMINGS", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run leakgate");
    let code = out.status.code().expect("leakgate killed by a signal");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(code, 101, "leakgate panicked: {err}");
    assert!(!err.contains("panicked"), "leakgate panicked: {err}");
    let peak = err
        .lines()
        .find_map(|l| l.split("peak RSS ").nth(1))
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    if v != Value::Null {
        common::assert_conserved(&v);
    }
    (code, v, err, peak)
}

fn analyze(paths: &[&Path]) -> (i32, Value, String, u64) {
    analyze_env(&[], paths, &[])
}

const HEAD: &str = "<?xml version=\"1.0\"?>\n<valgrindoutput>\n<protocolversion>4</protocolversion>\n\
<protocoltool>memcheck</protocoltool>\n<preamble>\n  <line>Memcheck, a memory error detector</line>\n\
  <line>Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info</line>\n</preamble>\n\
<pid>4242</pid>\n<ppid>1</ppid>\n<tool>memcheck</tool>\n\
<status>\n  <state>RUNNING</state>\n  <time>00:00:00:00.050 </time>\n</status>\n";

const TAIL: &str = "<status>\n  <state>FINISHED</state>\n  <time>00:00:00:01.000 </time>\n</status>\n\
<errorcounts>\n</errorcounts>\n<suppcounts>\n</suppcounts>\n</valgrindoutput>\n";

/// A definite leak of `bytes` through malloc in `func` (a user function of
/// `/home/u/app`, at `dir/file:line`).
fn leak(unique: u32, bytes: &str, func: &str, dir: &str, file: &str, line: &str) -> String {
    format!(
        "<error>\n  <unique>0x{unique:x}</unique>\n  <tid>1</tid>\n  <kind>Leak_DefinitelyLost</kind>\n  \
<xwhat>\n    <text>{bytes} bytes in 1 blocks are definitely lost in loss record {unique} of 9</text>\n    \
<leakedbytes>{bytes}</leakedbytes>\n    <leakedblocks>1</leakedblocks>\n  </xwhat>\n  <stack>\n    \
<frame>\n      <ip>0x483877F</ip>\n      <obj>/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so</obj>\n      \
<fn>malloc</fn>\n    </frame>\n    <frame>\n      <ip>0x10915E</ip>\n      <obj>/home/u/app</obj>\n      \
<fn>{func}</fn>\n      <dir>{dir}</dir>\n      <file>{file}</file>\n      <line>{line}</line>\n    </frame>\n    \
<frame>\n      <ip>0x1091A0</ip>\n      <obj>/home/u/app</obj>\n      <fn>main</fn>\n      <dir>/home/u</dir>\n      \
<file>app.c</file>\n      <line>20</line>\n    </frame>\n  </stack>\n</error>\n"
    )
}

fn simple_leak(unique: u32, func: &str) -> String {
    leak(unique, "16", func, "/home/u", "app.c", "7")
}

fn report(records: &[String]) -> String {
    format!("{HEAD}{}{TAIL}", records.concat())
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn findings(r: &Value) -> &Vec<Value> {
    r["findings"].as_array().unwrap()
}

fn fixture(p: &str) -> PathBuf {
    common::repo_root().join("fixtures").join(p)
}

#[test]
fn entity_expansion_is_refused() {
    let tmp = common::tempdir();
    let mut lol = String::from("<!ENTITY lol \"lol\">");
    for i in 1..10 {
        let prev = if i == 1 {
            "lol".to_string()
        } else {
            format!("lol{}", i - 1)
        };
        lol.push_str(&format!(
            "<!ENTITY lol{i} \"{}\">",
            format!("&{prev};").repeat(10)
        ));
    }
    // The classic: a DTD before the root.
    let p = write(
        tmp.path(),
        "laughs.xml",
        format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [{lol}]>\n{}",
            &report(&[simple_leak(1, "&lol9;")])[22..]
        ),
    );
    let (code, _, err, _) = analyze(&[&p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("document type declarations"), "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| !l.starts_with("leakgate timings"))
            .count(),
        1
    );
    // A DTD inside the document is refused too.
    let inner =
        report(&[simple_leak(1, "f")]).replace("<pid>", &format!("<!DOCTYPE x [{lol}]><pid>"));
    let p = write(tmp.path(), "inner.xml", inner);
    let (code, _, err, _) = analyze(&[&p]);
    assert_eq!(code, 2, "{err}");
    // Without a DTD an entity reference is never expanded: kept as text.
    let p = write(tmp.path(), "ref.xml", report(&[simple_leak(1, "a&lol9;b")]));
    let (code, r, err, _) = analyze(&[&p]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(findings(&r)[0]["location"]["function"], "a&lol9;b");
}

/// Writes HEAD, one normal record, then a record whose function name is
/// `len` bytes of one line, then TAIL.
fn write_long_line(w: &mut impl Write, len: usize) {
    w.write_all(HEAD.as_bytes()).unwrap();
    w.write_all(simple_leak(1, "before").as_bytes()).unwrap();
    let rec = simple_leak(2, "@");
    let (a, b) = rec.split_once('@').unwrap();
    w.write_all(a.as_bytes()).unwrap();
    let block = vec![b'A'; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(block.len());
        w.write_all(&block[..n]).unwrap();
        left -= n;
    }
    w.write_all(b.as_bytes()).unwrap();
    w.write_all(simple_leak(3, "after").as_bytes()).unwrap();
    w.write_all(TAIL.as_bytes()).unwrap();
}

#[test]
fn a_one_gigabyte_line_is_a_clear_error_in_bounded_memory() {
    let tmp = common::tempdir();
    let p = tmp.path().join("line.xml");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    write_long_line(&mut f, 1 << 30);
    f.into_inner().unwrap().sync_all().ok();
    // (`--fail-on none`: the user leaks around the line do not hide exit 3.)
    let (code, r, err, peak) = analyze_env(&["--fail-on", "none"], &[&p], &[]);
    std::fs::remove_file(&p).unwrap();
    assert_eq!(code, 3, "{err}");
    // The record before the line is kept; a large file is read in pieces,
    // so the one after it is too.
    assert_eq!(r["summary"]["records"], 2);
    let reason = r["processes"][0]["incomplete_reason"].as_str().unwrap();
    assert!(reason.contains("longer than 64 MiB"), "{reason}");
    eprintln!("1 GiB line: peak RSS {peak} KiB");
    assert!(peak > 0 && peak < 256 * 1024, "peak RSS {peak} KiB");

    // Compressed, it is read as a stream: the same answer, memory bounded.
    let z = tmp.path().join("line.xml.zst");
    let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(&z).unwrap(), 1).unwrap();
    write_long_line(&mut enc, 100 << 20);
    enc.finish().unwrap();
    let (code, r, err, peak) = analyze_env(&["--fail-on", "none"], &[&z], &[]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(r["summary"]["records"], 1);
    let reason = r["processes"][0]["incomplete_reason"].as_str().unwrap();
    assert!(reason.contains("longer than 64 MiB"), "{reason}");
    eprintln!("100 MiB line, zstd: peak RSS {peak} KiB");
    assert!(peak > 0 && peak < 256 * 1024, "peak RSS {peak} KiB");
}

/// (kind, function, line, bytes) of each finding, in order.
fn shape(r: &Value) -> Vec<(String, String, String, String)> {
    findings(r)
        .iter()
        .map(|f| {
            (
                f["kind"].to_string(),
                f["location"]["function"].to_string(),
                f["location"]["line"].to_string(),
                f["bytes"].to_string(),
            )
        })
        .collect()
}

#[test]
fn reports_on_one_line_read_every_record() {
    let tmp = common::tempdir();
    for name in [
        "recorded/leak_kinds.xml",
        "recorded/mem_errors.xml",
        "raw-3.19/many.xml",
    ] {
        let src = std::fs::read_to_string(fixture(name)).unwrap();
        let (code, want, _, _) = analyze(&[&fixture(name)]);
        // The whole report on one line (cannot be cut at `<error>` lines).
        let one = write(tmp.path(), "one.xml", src.replace('\n', " "));
        // Records from the third on one line: one piece too large to map.
        let third = src.match_indices("\n<error>\n").nth(2).unwrap().0;
        let joined = format!(
            "{}{}",
            &src[..third + 1],
            src[third + 1..].replace('\n', " ")
        );
        let part = write(tmp.path(), "part.xml", joined);
        for p in [&one, &part] {
            for chunk in [None, Some("600")] {
                let env: Vec<(&str, &str)> = chunk
                    .map(|c| vec![("LEAKGATE_CHUNK_BYTES", c), ("LEAKGATE_THREADS", "2")])
                    .unwrap_or_default();
                let (c, got, err, _) = analyze_env(&[], &[p], &env);
                let what = format!("{name} as {} chunked {chunk:?}", p.display());
                assert_eq!(c, code, "{what}: {err}");
                assert_eq!(
                    got["summary"]["records"], want["summary"]["records"],
                    "{what}"
                );
                assert_eq!(shape(&got), shape(&want), "{what}");
            }
        }
    }
}

#[test]
fn invalid_utf8_in_names_and_paths() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = common::tempdir();
    let mut xml = report(&[
        simple_leak(1, "bad_\u{1}_name"),
        leak(2, "8", "ok", "/home/\u{2}", "f\u{3}.c", "3"),
    ])
    .into_bytes();
    // Replace the markers with bytes that are not UTF-8.
    for b in xml.iter_mut() {
        if (1..=3).contains(b) {
            *b = 0xff;
        }
    }
    let xml = [&xml[..60], b"<!-- \xfe\xfe -->", &xml[60..]].concat();
    let dir = tmp.path().join(std::ffi::OsStr::from_bytes(b"d\xffir"));
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join(std::ffi::OsStr::from_bytes(b"vg\xfe.xml"));
    std::fs::write(&file, &xml).unwrap();
    for p in [&file, &dir] {
        let (code, r, err, _) = analyze(&[p]);
        assert_eq!(code, 1, "{err}");
        let fs = findings(&r);
        assert_eq!(fs.len(), 2);
        assert_eq!(fs[0]["location"]["function"], "bad_\u{fffd}_name");
        assert_eq!(fs[1]["location"]["file"], "f\u{fffd}.c");
        assert!(
            r["processes"][0]["xml"]
                .as_str()
                .unwrap()
                .contains('\u{fffd}')
        );
    }
    // The text report and --src-root with such a path work too.
    let out = Command::new(common::leakgate_bin())
        .arg("analyze")
        .arg("--src-root")
        .arg(&dir)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bad_\u{fffd}_name"));
}

#[test]
fn nul_bytes_are_text_or_malformed_never_a_crash() {
    let tmp = common::tempdir();
    let good = report(&[simple_leak(1, "a\0b"), simple_leak(2, "c")]);
    let p = write(tmp.path(), "nul.xml", &good);
    let (code, r, err, _) = analyze(&[&p]);
    assert_eq!(code, 1, "{err}");
    assert!(
        findings(&r)
            .iter()
            .any(|f| f["location"]["function"] == "a\u{0}b")
    );
    // NULs between and inside tags, and a file that is only NULs.
    let cases: Vec<Vec<u8>> = vec![
        good.replace("<stack>", "<st\0ack>").into_bytes(),
        good.replace("</error>", "</error>\0\0\0").into_bytes(),
        good.replace("<valgrindoutput>", "<valgrind\0output>")
            .into_bytes(),
        vec![0u8; 10_000],
    ];
    for (i, c) in cases.iter().enumerate() {
        let p = write(tmp.path(), &format!("nul{i}.xml"), c);
        let (code, _, err, _) = analyze(&[&p]);
        assert!((0..=3).contains(&code), "case {i}: exit {code}: {err}");
        if code == 2 {
            assert!(err.contains("not a Valgrind XML report"), "case {i}: {err}");
        }
    }
}

#[test]
fn deep_nesting_stops_at_a_limit() {
    let tmp = common::tempdir();
    for (name, depth) in [("deep.xml", 5_000usize), ("deeper.xml", 5_000_000)] {
        let mut xml = String::with_capacity(depth * 3 + 4000);
        xml.push_str(HEAD);
        xml.push_str(&simple_leak(1, "f"));
        xml.push_str("<error>");
        for _ in 0..depth {
            xml.push_str("<a>");
        }
        xml.push_str(TAIL);
        let p = write(tmp.path(), name, xml);
        let (code, r, err, peak) = analyze_env(&["--fail-on", "none"], &[&p], &[]);
        assert_eq!(code, 3, "{err}");
        assert_eq!(r["summary"]["records"], 1);
        let reason = r["processes"][0]["incomplete_reason"].as_str().unwrap();
        assert!(
            reason.contains("nested deeper than 1000 levels"),
            "{reason}"
        );
        assert!(peak < 256 * 1024, "peak RSS {peak} KiB");
    }
}

#[test]
fn threadnames_with_markup_are_read_raw() {
    let tmp = common::tempdir();
    let with_name = simple_leak(1, "f").replace(
        "<tid>1</tid>",
        "<tid>1</tid>\n  <threadname>w<&>k</error></threadname>",
    );
    let p = write(
        tmp.path(),
        "thr.xml",
        report(&[with_name, simple_leak(2, "after_it")]),
    );
    let (code, r, err, _) = analyze(&[&p]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(r["summary"]["records"], 2);
    assert!(
        findings(&r)
            .iter()
            .any(|f| f["location"]["function"] == "after_it")
    );
    // Cut off inside the name: incomplete, the record before it kept.
    let cut = format!(
        "{HEAD}{}<error><unique>0x2</unique><tid>1</tid><threadname>x<&",
        simple_leak(1, "f")
    );
    let p = write(tmp.path(), "thrcut.xml", cut);
    let (code, r, _, _) = analyze(&[&p]);
    assert_eq!(code, 1);
    assert_eq!(r["summary"]["records"], 1);
    assert_eq!(r["processes"][0]["complete"], false);
}

#[test]
fn many_raw_elements_keep_memory_flat() {
    // Elements read raw (thread names, skipped suppressions) are never
    // closed for the XML library; a compressed stream of millions of them
    // must not grow its state.
    let tmp = common::tempdir();
    let z = tmp.path().join("names.xml.zst");
    let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(&z).unwrap(), 1).unwrap();
    enc.write_all(HEAD.as_bytes()).unwrap();
    let block = "<threadname>t<&></threadname><suppression><x/></suppression>".repeat(1000);
    for _ in 0..3000 {
        enc.write_all(block.as_bytes()).unwrap();
    }
    enc.write_all(simple_leak(1, "f").as_bytes()).unwrap();
    enc.write_all(TAIL.as_bytes()).unwrap();
    enc.finish().unwrap();
    let (code, r, err, peak) = analyze(&[&z]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(r["summary"]["records"], 1);
    eprintln!("6 million raw elements: peak RSS {peak} KiB");
    assert!(peak > 0 && peak < 48 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn an_unknown_protocol_is_read_and_noted() {
    let tmp = common::tempdir();
    for (v, shown) in [
        ("99", "99"),
        ("4294967300", "4294967295"),
        ("99999999999999999999999", "4294967295"),
    ] {
        let xml = report(&[simple_leak(1, "f")]).replace(
            "<protocolversion>4</protocolversion>",
            &format!("<protocolversion>{v}</protocolversion>"),
        );
        let p = write(tmp.path(), "p99.xml", xml);
        let (code, r, err, _) = analyze(&[&p]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(r["summary"]["records"], 1);
        let notes = r["notes"].to_string();
        assert!(
            notes.contains(&format!("XML protocol {shown} is not one leakgate knows")),
            "{v}: {notes}"
        );
    }
}

#[test]
fn numbers_beyond_64_bits_saturate_or_are_dropped() {
    let tmp = common::tempdir();
    let huge = "999999999999999999999999999";
    let recs = [
        leak(1, huge, "f", "/home/u", "app.c", "7"),
        leak(2, huge, "f", "/home/u", "app.c", "7"),
        leak(
            3,
            "18,446,744,073,709,551,615",
            "g",
            "/home/u",
            "app.c",
            huge,
        ),
        simple_leak(4, "h")
            .replace(
                "<unique>0x4</unique>",
                &format!("<unique>0x{huge}</unique>"),
            )
            .replace("<tid>1</tid>", &format!("<tid>{huge}</tid>")),
    ];
    let xml = report(&recs)
        .replace("<pid>4242</pid>", &format!("<pid>{huge}</pid>"))
        .replace(
            "<errorcounts>\n",
            &format!("<errorcounts>\n<pair><count>{huge}</count><unique>0x4</unique></pair>\n"),
        );
    let p = write(tmp.path(), "big.xml", xml);
    for args in [&[][..], &["--max-leaked-bytes", "100"][..]] {
        let (code, r, err, _) = analyze_env(args, &[&p], &[]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(r["summary"]["records"], 4);
        let fs = findings(&r);
        let f = fs
            .iter()
            .find(|f| f["location"]["function"] == "f")
            .unwrap();
        assert_eq!(f["bytes"], u64::MAX, "saturated, not wrapped");
        assert_eq!(f["records"], 2);
        let g = fs
            .iter()
            .find(|f| f["location"]["function"] == "g")
            .unwrap();
        assert_eq!(g["bytes"], u64::MAX);
        assert_eq!(
            g["location"]["line"],
            Value::Null,
            "a line beyond 32 bits is unknown"
        );
        assert_eq!(r["summary"]["user"]["definitely_lost"]["bytes"], u64::MAX);
    }
}

#[test]
fn source_paths_naming_devices_are_not_read() {
    let tmp = common::tempdir();
    let p = write(
        tmp.path(),
        "dev.xml",
        report(&[
            leak(1, "8", "z", "/dev", "zero", "1"),
            leak(2, "8", "u", "/dev", "urandom", "1"),
            leak(3, "8", "s", "/proc/self", "fd", "1"),
        ]),
    );
    let (code, r, err, peak) = analyze(&[&p]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(findings(&r).len(), 3);
    assert!(findings(&r).iter().all(|f| f["source_line"].is_null()));
    assert!(peak < 256 * 1024);
}

#[test]
fn records_are_conserved_on_every_fixture() {
    let files = common::fixture_files(&["recorded", "raw-3.19", "raw-3.27", "raw-3.26"]);
    for f in &files {
        for env in [&[][..], &[("LEAKGATE_CHUNK_BYTES", "600")][..]] {
            let (code, r, err, _) = analyze_env(&[], &[f], env);
            assert!(!err.contains("internal error"), "{}: {err}", f.display());
            assert_ne!(code, 5, "{}", f.display());
            if code != 2 {
                common::assert_conserved(&r);
            }
        }
    }
}

#[test]
fn a_conservation_failure_is_loud() {
    // LEAKGATE_TEST_MISCOUNT makes the accounting wrong on purpose.
    let p = fixture("recorded/leak_kinds.xml");
    let (code, r, err, _) = {
        let out = Command::new(common::leakgate_bin())
            .args(["analyze", "--format", "json"])
            .arg(&p)
            .env("LEAKGATE_TEST_MISCOUNT", "1")
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (
            out.status.code().unwrap(),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
            0,
        )
    };
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("leakgate: internal error: records are not conserved"),
        "{err}"
    );
    assert_eq!(r["verdict"]["exit_code"], 5);
    assert_eq!(r["verdict"]["status"], "error");
    assert!(
        r["verdict"]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("internal error")
    );
    assert!(r["notes"].to_string().contains("records are not conserved"));
    // The text report says it too.
    let out = Command::new(common::leakgate_bin())
        .arg("analyze")
        .arg(&p)
        .env("LEAKGATE_TEST_MISCOUNT", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stdout).contains("internal error"));
}

#[test]
fn endless_inputs_end_with_a_clear_error() {
    // Not a regular file: read as a stream, which stops at the token limit
    // instead of filling memory (under a 2 GB address-space limit; before
    // the limit, /dev/zero took all the memory there was).
    for dev in ["/dev/zero", "/dev/urandom"] {
        let out = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 2097152 && exec \"$0\" analyze \"$1\"")
            .arg(common::leakgate_bin())
            .arg(dev)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{dev}: {err}");
        assert!(err.contains("not a Valgrind XML report"), "{dev}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn an_endless_suppression_file_is_refused() {
    let out = Command::new(common::leakgate_bin())
        .args(["lint", "/dev/zero"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("larger than 64 MiB"), "{text}");
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--suppressions", "/dev/zero"])
        .arg(fixture("recorded/leak_kinds.xml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("larger than 64 MiB"), "{err}");
}
