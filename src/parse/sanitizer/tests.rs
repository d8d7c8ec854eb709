//! Unit tests of the sanitizer log reader over the recorded fixtures
//! (`fixtures/sanitizers/`), whole and cut at several points in memory.

use std::path::Path;

use super::frames::parse_frame;
use super::symbolize::parse_output;
use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sanitizers")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn parse(input: &[u8]) -> (Vec<Record>, FileSummary) {
    let mut recs = Vec::new();
    let mut interner = Interner::default();
    let sum = parse_with(
        input,
        Path::new("log.txt"),
        0,
        &mut interner,
        &mut |r, _| recs.push(r),
        false,
    );
    (recs, sum)
}

fn funcs(stack: &[Frame]) -> Vec<&str> {
    stack
        .iter()
        .map(|f| f.func.as_deref().unwrap_or("?"))
        .collect()
}

fn at(f: &Frame) -> String {
    format!("{}:{}", f.path().unwrap_or_default(), f.line.unwrap_or(0))
}

#[test]
fn lsan_preload_leak() {
    let (recs, sum) = parse(&fixture("lsan-preload-leak.txt"));
    assert!(sum.process.complete, "{:?}", sum.process.incomplete_reason);
    assert_eq!(sum.process.pid, Some(9635));
    assert_eq!(sum.process.tool.as_deref(), Some("lsan"));
    assert_eq!(sum.process.records, 5);
    assert!(sum.process.command.is_empty() && sum.process.protocol.is_none());
    let kinds: Vec<&str> = recs.iter().map(|r| &*r.kind).collect();
    assert_eq!(
        kinds,
        [
            "Leak_DefinitelyLost",
            "Leak_DefinitelyLost",
            "Leak_IndirectlyLost",
            "Leak_IndirectlyLost",
            "Leak_IndirectlyLost"
        ]
    );
    let r = &recs[0];
    assert_eq!(r.leaked_bytes, Some(64));
    assert_eq!(r.leaked_blocks, Some(1));
    assert_eq!(r.unique, Some(0));
    assert_eq!(r.pid, Some(9635));
    assert_eq!(r.client_msgs, 0);
    assert_eq!(
        r.what,
        "64 bytes in 1 blocks are definitely lost in loss record 1 of 5"
    );
    assert_eq!(
        recs[4].what,
        "6 bytes in 1 blocks are indirectly lost in loss record 5 of 5"
    );
    // The interceptor becomes Valgrind's `malloc` frame (its object is not
    // printed in a symbolised log); the rest is as printed.
    assert_eq!(
        funcs(&r.stack),
        [
            "malloc",
            "main",
            "__libc_start_call_main",
            "__libc_start_main_impl",
            "_start"
        ]
    );
    assert_eq!(r.stack[0].ip.as_deref(), Some("0x7f591e613545"));
    assert_eq!(r.stack[0].obj, None);
    assert_eq!(r.stack[0].file, None);
    assert_eq!(at(&r.stack[1]), "/src/demo.c:18");
    assert_eq!(r.stack[1].dir.as_deref(), Some("/src"));
    assert_eq!(r.stack[1].file.as_deref(), Some("demo.c"));
    // The executable's object, from `_start (/src/demo+0x10b0)`.
    assert_eq!(r.stack[1].obj.as_deref(), Some("/src/demo"));
    assert_eq!(r.stack[4].obj.as_deref(), Some("/src/demo"));
    assert_eq!(at(&r.stack[2]), "../sysdeps/nptl/libc_start_call_main.h:58");
    assert_eq!(r.stack[2].obj, None, "libc's load address is not printed");
    // `malloc ← __GI___strdup` is one `strdup` frame, as under Memcheck.
    assert_eq!(funcs(&recs[3].stack)[..3], ["strdup", "make", "main"]);
    assert_eq!(at(&recs[3].stack[1]), "/src/demo.c:9");
    let uniques: Vec<_> = recs.iter().map(|r| r.unique.unwrap()).collect();
    assert_eq!(uniques, [0, 1, 2, 3, 4]);
}

#[test]
fn log_path_file_and_fast_unwind() {
    let (recs, sum) = parse(&fixture("lsan-log_path.9637"));
    assert!(sum.process.complete);
    assert_eq!(sum.process.pid, Some(9637));
    assert_eq!(recs.len(), 5);
    let (recs, sum) = parse(&fixture("lsan-preload-leak-fastunwind.txt"));
    assert!(sum.process.complete);
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[3].leaked_bytes, Some(13));
    assert_eq!(recs[3].leaked_blocks, Some(2));
    assert_eq!(funcs(&recs[3].stack), ["strdup"]);
}

#[test]
fn unsymbolized_frames_keep_object_and_offset() {
    let (recs, sum) = parse(&fixture("lsan-preload-leak-unsymbolized.txt"));
    assert!(sum.process.complete);
    assert_eq!(recs.len(), 5);
    let s = &recs[0].stack;
    // The runtime's frame stays first, nameless, in the runtime's object.
    assert_eq!(s[0].func, None);
    assert_eq!(
        s[0].obj.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/liblsan.so.0")
    );
    assert_eq!(s[1].obj.as_deref(), Some("/src/demo"));
    assert_eq!(s[1].ip.as_deref(), Some("0x55cd26026239"));
    assert_eq!(s[2].obj.as_deref(), Some("/lib/x86_64-linux-gnu/libc.so.6"));
    assert_eq!(s.len(), 5);
}

#[test]
fn asan_leak_report_is_read_as_lsan_s() {
    let (recs, sum) = parse(&fixture("asan-leak.txt"));
    assert!(sum.process.complete);
    assert_eq!(sum.process.tool.as_deref(), Some("asan"));
    assert_eq!(recs.len(), 5);
    assert_eq!(funcs(&recs[3].stack)[..2], ["strdup", "make"]);
    assert_eq!(at(&recs[1].stack[1]), "/src/demo.c:7");
}

#[test]
fn asan_use_after_free() {
    let (recs, sum) = parse(&fixture("asan-uaf.txt"));
    assert!(sum.process.complete, "{:?}", sum.process.incomplete_reason);
    assert_eq!(sum.process.tool.as_deref(), Some("asan"));
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(&*r.kind, "InvalidRead");
    assert_eq!(
        r.what,
        "Invalid read of size 1 (AddressSanitizer: heap-use-after-free on address 0x602000000013)"
    );
    assert_eq!(r.tid, Some(1));
    assert_eq!(r.leaked_bytes, None);
    assert_eq!(
        funcs(&r.stack),
        [
            "main",
            "__libc_start_call_main",
            "__libc_start_main_impl",
            "_start"
        ]
    );
    assert_eq!(at(&r.stack[0]), "/src/demo.c:23");
    assert_eq!(r.stack[0].obj.as_deref(), Some("/src/demo_asan"));
    let texts: Vec<&str> = r.aux.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Address 0x602000000013 is 3 bytes inside a block of size 16 free'd",
            "Block was alloc'd at"
        ]
    );
    assert_eq!(
        funcs(&r.aux[0].stack),
        ["free", "main", "__libc_start_call_main"]
    );
    assert_eq!(at(&r.aux[0].stack[1]), "/src/demo.c:22");
    assert_eq!(funcs(&r.aux[1].stack)[..2], ["malloc", "main"]);
    assert_eq!(at(&r.aux[1].stack[1]), "/src/demo.c:21");
}

#[test]
fn asan_overflow_and_double_free() {
    let (recs, sum) = parse(&fixture("asan-overflow.txt"));
    assert!(sum.process.complete);
    let r = &recs[0];
    assert_eq!(&*r.kind, "InvalidWrite");
    assert!(
        r.what
            .starts_with("Invalid write of size 4 (AddressSanitizer: heap-buffer-overflow")
    );
    assert_eq!(at(&r.stack[0]), "/src/demo.c:26");
    assert_eq!(
        r.aux[0].text,
        "Address 0x602000000020 is 0 bytes after a block of size 16 alloc'd"
    );
    assert_eq!(at(&r.aux[0].stack[1]), "/src/demo.c:25");
    assert_eq!(r.aux.len(), 1);

    let (recs, sum) = parse(&fixture("asan-double.txt"));
    assert!(sum.process.complete);
    let r = &recs[0];
    assert_eq!(&*r.kind, "InvalidFree");
    assert!(r.what.starts_with("Invalid free() / delete / delete[] / realloc() (AddressSanitizer: attempting double-free on 0x602000000010"));
    assert_eq!(funcs(&r.stack)[..2], ["free", "main"]);
    assert_eq!(at(&r.stack[1]), "/src/demo.c:31");
    let texts: Vec<&str> = r.aux.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Address 0x602000000010 is 0 bytes inside a block of size 8 free'd",
            "Block was alloc'd at"
        ]
    );
    assert_eq!(at(&r.aux[0].stack[1]), "/src/demo.c:30");
    assert_eq!(at(&r.aux[1].stack[1]), "/src/demo.c:29");
}

/// Cutting a log anywhere never panics, never invents a record, and
/// marks the log incomplete exactly when a report was left open.
#[test]
fn cut_logs_keep_the_complete_records() {
    for name in [
        "lsan-preload-leak.txt",
        "asan-uaf.txt",
        "asan-double.txt",
        "lsan-preload-leak-unsymbolized.txt",
    ] {
        let full = fixture(name);
        let (all, _) = parse(&full);
        let eol = |from: usize| from + memchr::memchr(b'\n', &full[from..]).unwrap();
        let summary_eol = eol(memchr::memmem::find(&full, b"SUMMARY:").unwrap());
        let error_at = memchr::memmem::find(&full, b"==ERROR:").unwrap();
        let header_eol = eol(error_at);
        // Where the header's `ERROR: XSanitizer:` is whole.
        let colon = memchr::memchr(b':', &full[error_at + "==ERROR: ".len()..]).unwrap();
        let mark_end = error_at + "==ERROR: ".len() + colon + 1;
        for cut in (0..=full.len()).step_by(7).chain([full.len() - 1]) {
            let (recs, sum) = parse(&full[..cut]);
            assert!(recs.len() <= all.len(), "{name} at {cut}");
            for (r, a) in recs.iter().zip(&all) {
                assert_eq!(r.kind, a.kind, "{name} at {cut}");
            }
            // Cut inside the header line once it names the sanitizer: its
            // words without a report, never an empty pass.
            if cut >= mark_end && cut <= header_eol {
                assert!(!sum.process.complete, "{name} at {cut}");
                let why = sum.process.incomplete_reason.unwrap();
                assert!(why.contains("no report leakgate could read"), "{why}");
                continue;
            }
            // Open from the header's whole line to the summary's whole line.
            let open = cut > header_eol && cut <= summary_eol;
            assert_eq!(sum.process.complete, !open, "{name} at {cut}");
            if open {
                let why = sum.process.incomplete_reason.unwrap();
                assert!(
                    why.starts_with("sanitizer report cut off mid-way; "),
                    "{why}"
                );
                assert!(why.contains("records before it were read"), "{why}");
            }
        }
    }
    // Cut inside the third entry's stack: the first two are delivered.
    let full = fixture("lsan-preload-leak.txt");
    let third = memchr::memmem::find_iter(&full, b"Indirect leak")
        .next()
        .unwrap();
    let (recs, sum) = parse(&full[..third + 120]);
    assert_eq!(recs.len(), 2);
    assert!(!sum.process.complete);
    assert!(sum.partial_record);
    assert_eq!(
        sum.process.incomplete_reason.as_deref(),
        Some(
            "sanitizer report cut off mid-way; 2 records before it were read; the last, partial record was not read"
        )
    );
}

#[test]
fn ci_log_with_timestamps_and_several_reports() {
    let mut log = String::from("Run pytest\n2024-01-01T00:00:00.0000001Z collected 3 items\n");
    let body = String::from_utf8(fixture("lsan-preload-leak.txt")).unwrap();
    for (n, l) in body.lines().chain(body.lines()).enumerate() {
        log.push_str(&format!(
            "2024-01-01T00:00:{:02}.{:07}Z {l}\n",
            n % 60,
            n * 13
        ));
        if n == 9 {
            log.push_str("unrelated line without the prefix\n");
        }
    }
    log.push_str("2024-01-01T00:01:00.0000000Z ##[error]Process completed with exit code 23.\n");
    assert!(looks_like_sanitizer_log(log.as_bytes()));
    let (recs, sum) = parse(log.as_bytes());
    assert!(sum.process.complete, "{:?}", sum.process.incomplete_reason);
    assert_eq!(recs.len(), 10);
    assert_eq!(at(&recs[0].stack[1]), "/src/demo.c:18");
    let reports: Vec<u32> = recs.iter().map(|r| r.client_msgs).collect();
    assert_eq!(reports, [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    assert_eq!(recs[9].unique, Some(9));
    let offs = report_offsets(log.as_bytes());
    assert_eq!(offs.len(), 2);
    for o in offs {
        assert!(log[o..].starts_with("2024-01-01T"));
        assert!(
            log[o..]
                .lines()
                .next()
                .unwrap()
                .contains("==9635==ERROR: LeakSanitizer")
        );
    }
}

#[test]
fn fatal_errors_make_the_log_incomplete() {
    let log = b"Tracer caught signal 11: addr=0x0 pc=0x7f0 sp=0x7f1\n==4242==LeakSanitizer has encountered a fatal error.\n==4242==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1\n==4242==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)\n";
    assert!(looks_like_sanitizer_log(log));
    let (recs, sum) = parse(log);
    assert!(recs.is_empty());
    assert!(!sum.process.complete);
    assert_eq!(sum.process.pid, Some(4242));
    assert_eq!(
        sum.process.incomplete_reason.as_deref(),
        Some(
            "Tracer caught signal 11: addr=0x0 pc=0x7f0 sp=0x7f1; LeakSanitizer has encountered a fatal error; LeakSanitizer does not work under ptrace (strace, gdb, etc); 0 records before it were read"
        )
    );
    let log = b"==77==ASan runtime does not come first in initial library list; you should either link runtime to your application or manually preload it with LD_PRELOAD.\n";
    let (_, sum) = parse(log);
    assert!(!sum.process.complete);
    assert!(
        sum.process
            .incomplete_reason
            .unwrap()
            .starts_with("ASan runtime does not come first")
    );
}

#[test]
fn no_report_is_complete_and_empty() {
    let (recs, sum) = parse(b"hello\nall tests passed\n");
    assert!(recs.is_empty());
    assert!(sum.process.complete);
    let (recs, sum) = parse(b"");
    assert!(recs.is_empty() && sum.process.complete);
}

/// A summary line with no report before it is not an empty pass.
#[test]
fn a_summary_without_its_report_is_incomplete() {
    let (recs, sum) = parse(b"SUMMARY: AddressSanitizer: 10 byte(s) leaked in 1 allocation(s).\n");
    assert!(recs.is_empty());
    assert!(!sum.process.complete);
    assert!(
        sum.process
            .incomplete_reason
            .as_deref()
            .is_some_and(|r| r.contains("no report leakgate could read")),
        "{:?}",
        sum.process.incomplete_reason
    );
}

/// leakgate's own JSON report holds the probe's and the sanitizers' words
/// in its strings: it is JSON, never a sanitizer log.
#[test]
fn a_json_report_is_not_a_sanitizer_log() {
    let json = br#"{
  "schema_version": 1,
  "notes": ["leakgate-checkpoint {\"t\": 1}", "==1==ERROR: LeakSanitizer: detected memory leaks"]
}"#;
    assert!(!looks_like_sanitizer_log(json));
    assert!(crate::parse::looks_like_json(json));
}

#[test]
fn detection() {
    for name in [
        "lsan-preload-leak.txt",
        "asan-uaf.txt",
        "lsan-log_path.9637",
    ] {
        assert!(looks_like_sanitizer_log(&fixture(name)), "{name}");
    }
    assert!(!looks_like_sanitizer_log(
        b"<?xml version=\"1.0\"?>\n<valgrindoutput>==1==ERROR: LeakSanitizer:"
    ));
    assert!(!looks_like_sanitizer_log(b"  <valgrindoutput>"));
    assert!(!looks_like_sanitizer_log(b"hello, this is not XML\n"));
    assert!(looks_like_sanitizer_log(
        b"SUMMARY: AddressSanitizer: 10 byte(s) leaked in 1 allocation(s).\n"
    ));
}

#[test]
fn frame_forms() {
    let f = parse_frame("#1 0x56272d4bf239 in main /src/demo.c:18:5").unwrap();
    assert_eq!(
        (f.func.as_deref(), f.path.as_deref(), f.line),
        (Some("main"), Some("/src/demo.c"), Some(18))
    );
    let f =
        parse_frame("#0 0x7f7681413545  (/usr/lib/x86_64-linux-gnu/liblsan.so.0+0x13545)").unwrap();
    assert_eq!(
        f.module.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/liblsan.so.0")
    );
    assert_eq!((f.offset, f.func.as_deref()), (Some(0x13545), None));
    let f = parse_frame("#2 0x7f00 in PyObject_Malloc+0x12 (/usr/lib/libpython3.11.so.1.0+0x1234) (BuildId: 0123abcd)").unwrap();
    assert_eq!(f.func.as_deref(), Some("PyObject_Malloc"));
    assert_eq!(f.module.as_deref(), Some("/usr/lib/libpython3.11.so.1.0"));
    assert_eq!(f.offset, Some(0x1234));
    let f = parse_frame("#0 0x7f00 in operator new(unsigned long) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:95").unwrap();
    assert_eq!(f.func.as_deref(), Some("operator new(unsigned long)"));
    assert_eq!(f.line, Some(95));
    let f = parse_frame("#0 0x7f00 in operator new[](unsigned long) (/usr/lib/x86_64-linux-gnu/libasan.so.8+0xdb818)").unwrap();
    assert_eq!(f.func.as_deref(), Some("operator new[](unsigned long)"));
    assert_eq!(
        f.module.as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libasan.so.8")
    );
    let f = parse_frame("#3 0x5555 in std::vector<int, std::allocator<int> >::push_back(int const&) /usr/include/c++/12/bits/stl_vector.h:1287").unwrap();
    assert_eq!(
        f.func.as_deref(),
        Some("std::vector<int, std::allocator<int> >::push_back(int const&)")
    );
    let f = parse_frame("#4 0x0  (<unknown module>)").unwrap();
    assert_eq!((f.module, f.func), (None, None));
    let f = parse_frame("#5 0x7f00 in <null> <null>").unwrap();
    assert_eq!((f.func, f.path), (None, None));
    assert!(parse_frame("#x nothing").is_none());
    assert!(
        parse_frame("    #0 0x1 in f a.c:1").is_none(),
        "trimmed by the caller"
    );
}

/// clang links its runtime into the executable: the interceptor is a
/// `malloc` frame of the program's own object, without a source line.
#[test]
fn a_static_runtime_s_malloc_is_the_runtime_s() {
    let mut stack: Vec<RawFrame> = [
        "#0 0x4c5a9d in malloc (/build/a.out+0x4c5a9d)",
        "#1 0x4f8e21 in main /build/a.c:4:15",
    ]
    .iter()
    .map(|l| parse_frame(l).unwrap())
    .collect();
    frames::trim_runtime(&mut stack, None);
    assert_eq!(stack[0].func.as_deref(), Some("malloc"));
    assert_eq!(stack[0].module, None, "not the program's object");
    assert_eq!(stack[1].func.as_deref(), Some("main"));
    assert_eq!(stack.len(), 2);
}

/// With `symbolize=0` (leakgate's default) addr2line names the runtime's
/// frames from its symbol table, where gcc's split-off parts keep their
/// suffix (`free.part.0`): the frame still stands for `free`, so a double
/// free is the caller's error.
#[test]
fn a_split_off_runtime_function_is_the_allocator() {
    let mut stack: Vec<RawFrame> = [
        "#0 0x7f81f0cb76a8 in free.part.0 (/usr/lib/x86_64-linux-gnu/libasan.so.8+0xb76a8)",
        "#1 0x56361ae68396 in invalid_free /tmp/mem_errors.c:47",
    ]
    .iter()
    .map(|l| parse_frame(l).unwrap())
    .collect();
    frames::trim_runtime(&mut stack, None);
    assert_eq!(stack[0].func.as_deref(), Some("free"));
    assert_eq!(stack[1].func.as_deref(), Some("invalid_free"));
}

#[test]
fn addr2line_output_with_inlined_calls() {
    let out = parse_output(
        "0x0000000000001239\ninlined_helper\n/src/demo.c:5\nmain\n/src/demo.c:18 (discriminator 1)\n0x00000000000010b0\n??\n??:0\n",
    );
    assert_eq!(
        out[&0x1239],
        vec![
            (
                Some("inlined_helper".to_string()),
                Some("/src/demo.c".to_string()),
                Some(5)
            ),
            (
                Some("main".to_string()),
                Some("/src/demo.c".to_string()),
                Some(18)
            ),
        ]
    );
    assert!(out[&0x10b0].is_empty());
}

#[test]
fn cxx_new_and_mismatched_delete() {
    let (recs, sum) = parse(&fixture("lsan-cxx-leak.txt"));
    assert!(sum.process.complete);
    assert_eq!(
        funcs(&recs[0].stack)[..3],
        [
            "operator new(unsigned long)",
            "shapes::make_box(int)",
            "main"
        ]
    );
    assert_eq!(
        funcs(&recs[1].stack)[..3],
        [
            "operator new[](unsigned long)",
            "shapes::Box::Box(int)",
            "shapes::make_box(int)"
        ]
    );
    assert_eq!(at(&recs[1].stack[1]), "/tmp/sanrec/cxx.cpp:8");
    assert_eq!(recs[1].stack[1].obj.as_deref(), Some("/tmp/sanrec/cxx"));

    let (recs, _) = parse(&fixture("asan-cxx-mismatch.txt"));
    let r = &recs[0];
    assert_eq!(&*r.kind, "MismatchedFree");
    assert!(r.what.starts_with("Mismatched free() / delete / delete [] (AddressSanitizer: alloc-dealloc-mismatch (operator new [] vs operator delete) on 0x602000000010"), "{}", r.what);
    assert_eq!(
        funcs(&r.stack)[..2],
        ["operator delete(void*, unsigned long)", "main"]
    );
    assert_eq!(
        r.aux[0].text,
        "Address 0x602000000010 is 0 bytes inside a block of size 16 alloc'd"
    );
    assert_eq!(
        funcs(&r.aux[0].stack)[..2],
        ["operator new[](unsigned long)", "main"]
    );
    let (recs, _) = parse(&fixture("asan-cxx-freenew.txt"));
    assert_eq!(&*recs[0].kind, "MismatchedFree");
    assert_eq!(funcs(&recs[0].stack)[..2], ["free", "main"]);
}

#[test]
fn thread_leak() {
    let (recs, sum) = parse(&fixture("lsan-thread-leak.txt"));
    assert!(sum.process.complete);
    assert_eq!(
        funcs(&recs[0].stack),
        ["malloc", "work", "start_thread", "clone3"]
    );
    assert_eq!(at(&recs[0].stack[1]), "/tmp/sanrec/threads.c:7");
}

/// Every recoverable check prints every leak found so far: the 24-byte
/// leak of the first check is in all three reports.
#[test]
fn recoverable_checks_are_snapshots() {
    let log = fixture("lsan-recoverable.txt");
    let (recs, sum) = parse(&log);
    assert!(sum.process.complete);
    let seen: Vec<(u32, u64)> = recs
        .iter()
        .map(|r| (r.client_msgs, r.leaked_bytes.unwrap()))
        .collect();
    assert_eq!(seen, [(0, 24), (1, 40), (1, 24), (2, 40), (2, 24)]);
    assert_eq!(
        recs[2].what,
        "24 bytes in 1 blocks are definitely lost in loss record 2 of 2"
    );
    let offs = report_offsets(&log);
    assert_eq!(offs.len(), 3);
    for o in &offs {
        assert!(log[*o..].starts_with(b"==21650==ERROR: LeakSanitizer"));
    }
}

#[test]
fn stack_global_and_segv() {
    let (recs, sum) = parse(&fixture("asan-stack-overflow.txt"));
    assert!(sum.process.complete);
    let r = &recs[0];
    assert_eq!((&*r.kind, r.tid), ("InvalidRead", Some(1)));
    assert_eq!(funcs(&r.stack)[..2], ["read_past", "main"]);
    assert_eq!(
        r.aux[0].text,
        "Address 0x7ffc9d713ed0 is located in stack of thread T0 at offset 112 in frame"
    );
    assert_eq!(at(&r.aux[0].stack[0]), "/tmp/sanrec/crash.c:7");
    assert_eq!(r.aux.len(), 1);

    let (recs, _) = parse(&fixture("asan-global-overflow.txt"));
    let r = &recs[0];
    assert_eq!(&*r.kind, "InvalidWrite");
    assert!(r.aux[0].text.contains("global variable 'table'"));
    assert!(r.aux[0].stack.is_empty());

    let (recs, sum) = parse(&fixture("asan-segv.txt"));
    assert!(sum.process.complete);
    let r = &recs[0];
    assert_eq!(&*r.kind, "FatalSignal");
    assert_eq!(r.signame.as_deref(), Some("SIGSEGV"));
    assert_eq!(r.unique, None);
    assert_eq!(
        r.what,
        "Process terminating with default action of signal 11 (SIGSEGV) (AddressSanitizer: SEGV on unknown address 0x000000000000)"
    );
    assert_eq!(at(&r.stack[0]), "/tmp/sanrec/crash.c:17");
    assert!(r.aux.is_empty());
    assert_eq!(sum.process.fatal_signal.as_deref(), Some("SIGSEGV"));
}

/// `addr2line` on a program built here: the frame gets its function and
/// line (skipped without gcc or addr2line).
#[test]
fn addr2line_symbolises_a_built_program() {
    let dir = std::env::temp_dir().join(format!("leakgate-a2l-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sanitizers/demo.c");
    let exe = dir.join("demo");
    let built = std::process::Command::new("gcc")
        .args(["-O0", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let nm = std::process::Command::new("nm").arg(&exe).output();
    if !built || which::which("addr2line").is_err() || nm.is_err() {
        eprintln!("SKIP: gcc, nm or addr2line missing");
        return;
    }
    let nm = String::from_utf8(nm.unwrap().stdout).unwrap();
    let main = nm
        .lines()
        .find(|l| l.ends_with(" T main"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .unwrap();
    let exe_s = exe.display().to_string();
    let mut stack = vec![RawFrame {
        ip_text: "0x1".into(),
        module: Some(exe_s.clone()),
        offset: Some(main),
        ..RawFrame::default()
    }];
    symbolize::symbolize(&mut [&mut stack]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(stack[0].func.as_deref(), Some("main"));
    assert!(stack[0].path.as_deref().unwrap().ends_with("demo.c"));
    assert_eq!(stack[0].line, Some(12));
    assert_eq!(stack[0].module.as_deref(), Some(exe_s.as_str()));
}

/// A checkpoint whose forked checker never wrote its report (its
/// placeholder is still in the log after the run put the others back)
/// makes the process incomplete: its leaks could not be tied to tests.
#[test]
fn a_lost_checker_report_makes_the_process_incomplete() {
    let log = format!(
        "{}{{\"pid\":7,\"ppid\":1,\"argv\":[\"python\"],\"forked\":false}}\n\
         {}{{\"v\":1,\"kind\":\"start\",\"label\":\"collection\",\"seq\":1}}\n\
         {}{{\"seq\": 1}}\n",
        crate::probe::PROCESS_PREFIX,
        crate::probe::MARKER_PREFIX,
        crate::probe::FORKED_PREFIX,
    );
    let mut interner = Interner::default();
    let sum = parse_sanitizer_log(
        log.as_bytes(),
        Path::new("lsan.7"),
        0,
        &mut interner,
        &mut |_, _| {},
    )
    .unwrap();
    assert!(!sum.process.complete);
    let why = sum.process.incomplete_reason.unwrap();
    assert!(why.contains("forked copy"), "{why}");
    assert!(why.contains("1 checkpoint "), "{why}");
}

/// LeakSanitizer's deadly-signal handler writes its crash under the name
/// `LeakSanitizer:` and exits with the leak exit code (23): a crash, never
/// an empty leak report.
#[test]
fn lsan_s_own_crash_report_is_a_fatal_signal() {
    let log = fixture("lsan-segv.txt");
    assert!(looks_like_sanitizer_log(&log));
    let (recs, sum) = parse(&log);
    assert!(sum.process.complete, "{:?}", sum.process.incomplete_reason);
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    assert_eq!(&*r.kind, "FatalSignal");
    assert_eq!(r.signame.as_deref(), Some("SIGSEGV"));
    assert_eq!(
        r.what,
        "Process terminating with default action of signal 11 (SIGSEGV) (LeakSanitizer: SEGV on unknown address 0x000000000010)"
    );
    assert_eq!(at(&r.stack[0]), "/tmp/sanrec/deadly.c:10");
    assert_eq!(sum.process.fatal_signal.as_deref(), Some("SIGSEGV"));
    assert_eq!(sum.process.tool.as_deref(), Some("lsan"));
}
