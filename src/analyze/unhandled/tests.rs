//! Unit tests of `analyze::unhandled`.

use super::*;

fn frame(func: &str, obj: &str, file: &str, line: u32, ip: &str) -> FrameOut {
    FrameOut {
        function: Some(func.into()),
        object: Some(obj.into()),
        file: Some(file.into()),
        path: None,
        line: Some(line),
        ip: Some(ip.into()),
        user: true,
        generated: None,
    }
}

fn crash(pid: u64) -> Finding {
    Finding {
        kind: Kind::FatalSignal,
        category: Category::User,
        message: "Process terminating with default action of signal SIGILL".into(),
        pids: vec![pid],
        stack: vec![
            frame(
                "_mm512_loadu_si512",
                "/t/avx",
                "avx512fintrin.h",
                6492,
                "0x109159",
            ),
            frame("add16", "/t/avx", "avx.c", 5, "0x109159"),
        ],
        ..Default::default()
    }
}

fn leak(pids: Vec<u64>, bytes: u64) -> Finding {
    Finding {
        kind: Kind::from("Leak_DefinitelyLost"),
        category: Category::User,
        bytes: Some(bytes),
        pids,
        ..Default::default()
    }
}

fn process(pid: u64, signal: Option<&str>) -> ProcessInfo {
    ProcessInfo {
        file: format!("vg.{pid}.1.xml"),
        pid: Some(pid),
        complete: true,
        fatal_signal: signal.map(String::from),
        ..Default::default()
    }
}

fn evex(pid: u64) -> UnhandledInstruction {
    UnhandledInstruction {
        pid,
        arch: "amd64".into(),
        bytes: "0x62 0xF1 0xFE 0x48 0x6F 0x7".into(),
        address: Some(0x109159),
    }
}

#[test]
fn the_process_is_incomplete_and_nothing_is_the_users() {
    let mut fs = vec![crash(7), leak(vec![7], 128), leak(vec![7, 8], 16)];
    let mut ps = vec![process(7, Some("SIGILL")), process(8, None)];
    let mut notes = Vec::new();
    let marked = apply(&mut fs, &mut ps, &[evex(7)], &mut notes);
    assert_eq!(marked, vec![7]);
    let reason = ps[0].incomplete_reason.as_deref().unwrap();
    assert!(!ps[0].complete && ps[1].complete);
    for want in [
        "/t/avx",
        "at 0x109159 in add16 (avx.c:5)",
        "0x62 0xF1 0xFE 0x48 0x6F 0x7",
        "AVX-512",
        "limitation of Valgrind",
        "leak check means nothing",
        "-march=x86-64-v3",
    ] {
        assert!(reason.contains(want), "{want:?} not in {reason:?}");
    }
    assert_eq!(fs[0].pids, vec![7, 8], "user findings first");
    assert_eq!(
        fs[0].category,
        Category::User,
        "also seen in pid 8, which finished"
    );
    let crash = fs.iter().find(|f| f.kind == Kind::FatalSignal).unwrap();
    assert_eq!(crash.category, Category::Noise);
    assert_eq!(crash.source.as_deref(), Some(SOURCE));
    assert!(
        crash
            .advice
            .as_deref()
            .unwrap()
            .contains("-march=x86-64-v3")
    );
    let own = fs.iter().find(|f| f.is_leak() && f.pids == [7]).unwrap();
    assert_eq!(own.category, Category::Noise, "its own leak check only");
    assert_eq!(own.source.as_deref(), Some(SOURCE));
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("1 leak finding of your code (128 bytes) that only this leak check found is listed as noise"), "{notes:?}");
}

#[test]
fn a_process_that_went_on_is_a_note() {
    let mut fs = vec![leak(vec![7], 10)];
    let mut ps = vec![process(7, None)];
    let mut notes = Vec::new();
    let u = UnhandledInstruction {
        arch: "amd64".into(),
        bytes: "0xF 0x38 0xCB 0xCA".into(),
        ..evex(7)
    };
    assert!(apply(&mut fs, &mut ps, &[u], &mut notes).is_empty());
    assert!(ps[0].complete);
    assert_eq!(fs[0].category, Category::User);
    assert!(notes[0].contains("went on"), "{notes:?}");
}

#[test]
fn not_evex_gets_the_general_advice() {
    let u = UnhandledInstruction {
        bytes: "0xF 0x38 0xCB 0xCA".into(),
        ..evex(1)
    };
    let a = rebuild_advice(&u, "x.so");
    assert!(
        a.contains("for an older CPU") && a.contains("-march=x86-64-v3"),
        "{a}"
    );
    let arm = UnhandledInstruction {
        arch: "arm64".into(),
        bytes: "0x04FC635A".into(),
        ..evex(1)
    };
    assert!(!rebuild_advice(&arm, "x.so").contains("x86-64"));
}

#[test]
fn analyze_advises_every_sigill_crash() {
    let mut fs = vec![crash(1), leak(vec![1], 1)];
    fs[0].message = "Process terminating with default action of signal SIGSEGV".into();
    advise_sigill(&mut fs);
    assert!(fs[0].advice.is_none());
    let mut fs = vec![crash(1)];
    advise_sigill(&mut fs);
    assert!(fs[0].advice.as_deref().unwrap().contains("leakgate run"));
}
