//! Unit tests of the space diagnosis: complete and cut files, the causes.

use super::*;

#[test]
fn complete_and_cut_files() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("a.xml");
    std::fs::write(&whole, "<valgrindoutput>\n</valgrindoutput>\n\n").unwrap();
    let cut = dir.path().join("b.xml");
    std::fs::write(&cut, "<valgrindoutput>\n<error>").unwrap();
    assert!(ends_complete(&whole));
    assert!(!ends_complete(&cut));
    // Plenty of room, no limit, no log: not a space problem.
    let none = diagnose(
        dir.path(),
        std::slice::from_ref(&whole),
        "",
        &HashMap::new(),
    );
    assert!(none.is_none());
    // Valgrind's own message names the disk.
    let (text, empty) = diagnose(
        dir.path(),
        &[whole, cut],
        "==1== error writing 48 bytes to shared mem /tmp/vgdb-pipe: No space left on device",
        &HashMap::new(),
    )
    .unwrap();
    assert!(text.contains("has no room"), "{text}");
    assert!(text.contains("TMPDIR="), "{text}");
    assert!(
        text.contains("1 of 2 XML reports cut short (b.xml at 24 bytes)"),
        "{text}"
    );
    assert!(empty.is_empty());
}

#[test]
fn killed_by_sigxfsz_is_the_file_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("c.xml");
    std::fs::write(&cut, "").unwrap();
    let exits = HashMap::from([(7, ExitStatus::Signal("signal 25".into()))]);
    let (text, empty) = diagnose(dir.path(), std::slice::from_ref(&cut), "", &exits).unwrap();
    assert!(text.starts_with("the file-size limit"), "{text}");
    assert!(text.contains("ulimit -f unlimited"), "{text}");
    assert_eq!(empty, vec![cut]);
}

#[test]
fn a_pre_exec_part_is_not_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("vg.42.2.xml");
    let after = dir.path().join("vg.42.1.xml");
    let fork = dir.path().join("vg.43.2.xml");
    for p in [&before, &fork] {
        std::fs::write(p, "<valgrindoutput>\n<preamble>").unwrap();
    }
    std::fs::write(&after, "<valgrindoutput>\n</valgrindoutput>\n").unwrap();
    let reports = vec![before.clone(), after, fork.clone()];
    assert!(is_pre_exec(&before, &reports));
    assert!(!is_pre_exec(&fork, &reports), "a fork child's file, cut");
    let log = "No space left on device";
    let (text, _) = diagnose(dir.path(), &reports, log, &HashMap::new()).unwrap();
    assert!(
        text.contains("1 of 3 XML reports cut short (vg.43.2.xml"),
        "{text}"
    );
}
