//! Integration tests: bad input to `leakgate analyze` gets one clear line on
//! stderr and exit 2, never a panic or a silent pass.

use crate::common;

use std::process::Command;

fn analyze_err(path: &std::path::Path) -> (i32, String) {
    let out = Command::new(common::leakgate_bin())
        .arg("analyze")
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

fn assert_exit2(path: &std::path::Path, needle: &str) {
    let (code, err) = analyze_err(path);
    assert_eq!(code, 2, "{}: {err}", path.display());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{needle:?} in {err:?}");
    assert!(
        err.contains(&path.file_name().unwrap().to_string_lossy().to_string()),
        "names the file: {err}"
    );
}

#[test]
fn bad_inputs_are_exit_2_with_one_line() {
    let tmp = common::tempdir();
    let d = tmp.path();
    std::fs::write(d.join("empty.xml"), "").unwrap();
    assert_exit2(&d.join("empty.xml"), "not a Valgrind XML report");
    std::fs::write(d.join("text.xml"), "hello, this is not XML\n").unwrap();
    assert_exit2(&d.join("text.xml"), "not a Valgrind XML report");
    std::fs::write(
        d.join("other.xml"),
        "<?xml version=\"1.0\"?>\n<project><a/></project>\n",
    )
    .unwrap();
    assert_exit2(&d.join("other.xml"), "expected <valgrindoutput>");
    std::fs::write(d.join("binary.xml"), [0u8, 159, 146, 150, 255, 0, 1]).unwrap();
    assert_exit2(&d.join("binary.xml"), "not a Valgrind XML report");
    std::fs::write(
        d.join("laughs.xml"),
        "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\">]>\n<valgrindoutput></valgrindoutput>\n",
    )
    .unwrap();
    assert_exit2(&d.join("laughs.xml"), "not a Valgrind XML report");
    assert_exit2(&d.join("missing.xml"), "no such file");
    let empty_dir = d.join("nothing-here");
    std::fs::create_dir(&empty_dir).unwrap();
    std::fs::write(empty_dir.join("notes.txt"), "x").unwrap();
    assert_exit2(&empty_dir, "no *.xml files");
}

#[test]
fn report_cut_off_mid_element_keeps_complete_records() {
    // Real Valgrind output, cut at a byte offset inside the last record (as an
    // OOM kill would leave it).
    let src = std::fs::read(common::repo_root().join("fixtures/recorded/leak_kinds.xml")).unwrap();
    let text = String::from_utf8_lossy(&src).into_owned();
    let last = text.rfind("<error>").unwrap();
    let complete = text[..last].matches("<error>").count() as u64;
    let tmp = common::tempdir();
    let p = tmp.path().join("cut.xml");
    std::fs::write(&p, &src[..last + 40]).unwrap();
    let out = Command::new(common::leakgate_bin())
        .args(["analyze", "--format", "json"])
        .arg(&p)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["summary"]["records"].as_u64().unwrap(), complete);
    assert_eq!(r["processes"][0]["complete"], false);
    assert!(
        r["processes"][0]["incomplete_reason"]
            .as_str()
            .unwrap()
            .contains("partial record")
    );
}
