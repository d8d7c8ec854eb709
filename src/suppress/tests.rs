//! Unit tests of `suppress`.

use super::*;
use crate::model::{Frame, GenSuppression, Record};
use std::sync::Arc;

fn frame(ip: &str, obj: &str, func: Option<&str>, file: Option<(&str, u32)>) -> Frame {
    Frame {
        ip: Some(ip.into()),
        obj: Some(obj.into()),
        func: func.map(Into::into),
        file: file.map(|(f, _)| f.into()),
        line: file.map(|(_, l)| l),
        ..Default::default()
    }
}

const EXE: &str = "/home/dev/exp/st";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const PRELOAD: &str = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so";

/// alpha_cond -> beta -> main (the E5/E6/E15 program), default mode.
fn cond_rec() -> Record {
    Record {
        kind: "UninitCondition".into(),
        what: "Conditional jump or move depends on uninitialised value(s)".into(),
        stack: vec![
            frame("0x1", EXE, Some("alpha_cond"), Some(("st.c", 5))),
            frame("0x2", EXE, Some("beta"), Some(("st.c", 9))),
            frame("0x3", EXE, Some("main"), Some(("st.c", 20))),
        ],
        ..Default::default()
    }
}

fn value8_rec() -> Record {
    Record {
        kind: "UninitValue".into(),
        what: "Use of uninitialised value of size 8".into(),
        stack: vec![
            frame("0x1", EXE, Some("value8"), Some(("st.c", 30))),
            frame("0x3", EXE, Some("main"), Some(("st.c", 21))),
        ],
        ..Default::default()
    }
}

fn leak_rec(kind: &str) -> Record {
    Record {
        kind: kind.into(),
        what: "10 bytes in 1 blocks are definitely lost in loss record 1 of 1".into(),
        stack: vec![
            frame("0x10", PRELOAD, Some("malloc"), None),
            frame("0x11", EXE, Some("main"), Some(("st.c", 12))),
        ],
        ..Default::default()
    }
}

fn set_with(text: &str, opts: MatchOptions) -> SuppressionSet {
    let (s, e) = parse("t.supp", text, "Memcheck", 12);
    assert!(e.is_empty(), "{e:?}");
    SuppressionSet::new(s, opts)
}

fn set(text: &str) -> SuppressionSet {
    set_with(text, MatchOptions::default())
}

fn rule(kind: &str, locs: &[&str]) -> String {
    format!("{{\n r\n Memcheck:{kind}\n {}\n}}\n", locs.join("\n "))
}

fn outcome(kind: &str, locs: &[&str], rec: &Record) -> MatchOutcome {
    set(&rule(kind, locs)).first_match(rec)
}

use MatchOutcome::{NotSuppressed as No, Suppressed as Yes, Undecidable as Und};

/// The bundled python rule for tuples resized by the interpreter hides
/// them, and not a tuple an extension built with PySequence_Tuple.
#[test]
fn bundled_python_tuple_resize_rule() {
    const PY: &str = "/usr/lib/libpython3.11.so.1.0";
    let text = crate::suppress::bundled::BUNDLED
        .iter()
        .find(|(n, _)| *n == "python.supp")
        .unwrap()
        .1;
    let set = set(text);
    let rec = |caller: (&str, &str)| Record {
        kind: "Leak_IndirectlyLost".into(),
        what: "40 bytes in 1 blocks are indirectly lost in loss record 3 of 9".into(),
        stack: vec![
            frame("0x1", PRELOAD, Some("realloc"), None),
            frame("0x2", PY, Some("_PyObject_GC_Resize"), None),
            frame("0x3", PY, Some("_PyTuple_Resize"), None),
            frame("0x4", PY, Some("PySequence_Tuple"), None),
            frame("0x5", caller.0, Some(caller.1), None),
            frame("0x6", PY, Some("_PyEval_EvalFrameDefault"), None),
        ],
        ..Default::default()
    };
    let by_python = set.first_match(&rec((PY, "tuple_new_impl")));
    assert!(matches!(by_python, Yes(_)), "{by_python:?}");
    let by_ext = set.first_match(&rec(("/home/u/ext.so", "make_tuple")));
    assert!(matches!(by_ext, No), "{by_ext:?}");
}

#[test]
fn glob_cases() {
    assert!(string_match("alph?_co*", "alpha_cond"));
    assert!(string_match("*8", "value8"));
    assert!(string_match("m*n", "main"));
    assert!(!string_match("VALUE8", "value8"));
    assert!(string_match("*", ""));
    assert!(string_match("", ""));
    assert!(!string_match("", "a"));
    assert!(!string_match("?", ""));
    assert!(string_match("???", "???"));
    assert!(string_match("???", "abc"));
    assert!(!string_match("?????", "???"));
    assert!(!string_match("\\?\\?\\?", "???"));
    assert!(string_match("*/libc.so*", LIBC));
    assert!(!string_match("libc.so*", LIBC));
    assert!(string_match("[a]", "[a]"));
    assert!(!string_match("[a]", "a"));
    assert!(string_match("a*b*c", "aXbYbZc"));
    assert!(!string_match("a*b*c", "aXbYbZ"));
    assert!(string_match("*a*", "bab"));
    assert!(string_match("**", "x"));
    assert!(string_match("*?", "x"));
    assert!(!string_match("*??", "x"));
    // Pathological: no exponential blow-up.
    let name = "a".repeat(5000);
    let pat = format!("{}b", "*a".repeat(200));
    let t = std::time::Instant::now();
    assert!(!string_match(&pat, &name));
    assert!(t.elapsed().as_secs() < 2);
    // Byte-wise on non-ASCII.
    assert!(!string_match("?", "é"));
    assert!(string_match("??", "é"));
}

#[test]
fn e5_globs() {
    let r = cond_rec();
    assert_eq!(outcome("Cond", &["fun:alph?_co*"], &r), Yes(0));
    let r8 = value8_rec();
    assert_eq!(outcome("Value8", &["fun:*8", "fun:m*n"], &r8), Yes(0));
    assert_eq!(outcome("Value8", &["fun:VALUE8"], &r8), No);
    assert_eq!(outcome("Value4", &["fun:value8"], &r8), No);
    assert_eq!(outcome("Cond", &["fun:value8"], &r8), No);
}

#[test]
fn e6_ellipsis_and_param() {
    let r = cond_rec();
    assert_eq!(
        outcome("Cond", &["fun:alpha_cond", "...", "fun:main"], &r),
        Yes(0)
    );
    assert_eq!(outcome("Cond", &["...", "fun:beta"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["...", "fun:main"], &r), Yes(0));
    assert_eq!(
        outcome("Cond", &["...", "...", "fun:beta", "...", "..."], &r),
        Yes(0)
    );
    // Not a prefix.
    assert_eq!(outcome("Cond", &["fun:beta"], &r), No);
    let p = Record {
        kind: "SyscallParam".into(),
        what: "Syscall param write(buf) points to uninitialised byte(s)".into(),
        stack: vec![
            frame("0x20", LIBC, Some("write"), None),
            frame("0x21", EXE, Some("main"), Some(("st.c", 40))),
        ],
        ..Default::default()
    };
    let s = |param: &str, f: &str| {
        set(&format!("{{\n r\n Memcheck:Param\n {param}\n {f}\n}}\n")).first_match(&p)
    };
    assert_eq!(s("write(buf)", "fun:write"), Yes(0));
    assert_eq!(s("write(buf)", "fun:main"), No);
    assert_eq!(s("write(buff)", "fun:write"), No);
}

#[test]
fn ellipsis_backtracking() {
    let mk = |names: &[&str]| Record {
        kind: "UninitCondition".into(),
        what: String::new(),
        stack: names
            .iter()
            .enumerate()
            .map(|(i, n)| frame(&format!("0x{:x}", i + 1), EXE, Some(n), None))
            .collect(),
        ..Default::default()
    };
    let r = mk(&["a", "a", "b", "c", "x"]);
    assert_eq!(outcome("Cond", &["...", "fun:a", "fun:b"], &r), Yes(0));
    assert_eq!(
        outcome("Cond", &["fun:a", "...", "fun:a", "fun:b", "fun:c"], &r),
        Yes(0)
    );
    assert_eq!(
        outcome("Cond", &["fun:a", "...", "fun:c", "...", "fun:x"], &r),
        Yes(0)
    );
    assert_eq!(outcome("Cond", &["...", "fun:b", "fun:a"], &r), No);
    assert_eq!(outcome("Cond", &["fun:a", "fun:b"], &r), No);
    // Longer than the stack: fails unless the surplus is all "..." (the
    // stack does not end in main, so nothing is hidden).
    assert_eq!(
        outcome(
            "Cond",
            &["fun:a", "fun:a", "fun:b", "fun:c", "fun:x", "..."],
            &r
        ),
        Yes(0)
    );
    assert_eq!(
        outcome(
            "Cond",
            &["fun:a", "fun:a", "fun:b", "fun:c", "fun:x", "fun:y"],
            &r
        ),
        No
    );
    // obj:* is a one-frame wildcard.
    assert_eq!(outcome("Cond", &["obj:*", "obj:*", "fun:b"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["obj:*", "fun:b"], &r), No);
    // Pathological pattern over a deep stack stays fast.
    let deep: Vec<&str> = std::iter::repeat_n("a", 480).collect();
    let r = mk(&deep);
    let mut locs = Vec::new();
    for _ in 0..12 {
        locs.push("...");
        locs.push("fun:a");
    }
    locs.push("fun:b");
    let (supps, _) = parse("t", &rule("Cond", &locs), "Memcheck", 500);
    assert_eq!(supps[0].frames.len(), 25);
    let t = std::time::Instant::now();
    assert_eq!(
        SuppressionSet::new(supps, MatchOptions::default()).first_match(&r),
        No
    );
    assert!(t.elapsed().as_secs() < 2);
}

#[test]
fn e7_obj_and_src() {
    let r = cond_rec();
    assert_eq!(outcome("Cond", &[&format!("obj:{EXE}")], &r), Yes(0));
    assert_eq!(outcome("Cond", &["obj:st"], &r), No);
    assert_eq!(outcome("Cond", &["obj:*/st"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["src:st.c:5", "src:st.c"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["src:st.c:6"], &r), No);
    assert_eq!(outcome("Cond", &["src:*.c:5"], &r), Yes(0));
    // The glob applies to the file name without its directory.
    assert_eq!(outcome("Cond", &["src:*/st.c"], &r), No);
    // Leak with src: after fun:malloc.
    let l = leak_rec("Leak_DefinitelyLost");
    assert_eq!(outcome("Leak", &["fun:malloc", "src:st.c:12"], &l), Yes(0));
    // No line info: no match.
    let s = set("{\n r\n Memcheck:Leak\n match-leak-kinds: all\n src:*\n}\n");
    assert_eq!(s.first_match(&l), No);
    let s = set("{\n r\n Memcheck:Leak\n match-leak-kinds: all\n ...\n src:st.c\n}\n");
    assert_eq!(s.first_match(&l), Yes(0));
}

#[test]
fn match_leak_kinds_filtering() {
    let text = "{\n p\n Memcheck:Leak\n match-leak-kinds: possible,reachable\n fun:malloc\n}\n";
    let s = set(text);
    assert_eq!(s.first_match(&leak_rec("Leak_DefinitelyLost")), No);
    assert_eq!(s.first_match(&leak_rec("Leak_PossiblyLost")), Yes(0));
    assert_eq!(s.first_match(&leak_rec("Leak_StillReachable")), Yes(0));
    let none = set("{\n p\n Memcheck:Leak\n match-leak-kinds: none\n fun:malloc\n}\n");
    assert_eq!(none.first_match(&leak_rec("Leak_DefinitelyLost")), No);
    let all = set("{\n p\n Memcheck:Leak\n fun:malloc\n}\n");
    assert_eq!(all.first_match(&leak_rec("Leak_IndirectlyLost")), Yes(0));
}

#[test]
fn e11_later_wins() {
    let both = format!(
        "{}{}",
        rule("Cond", &["fun:alpha_cond"]),
        rule("Cond", &["...", "fun:main"])
    );
    let s = set(&both);
    assert_eq!(s.first_match(&cond_rec()), Yes(1));
    let ex = s.explain(&cond_rec());
    assert_eq!(ex, vec![(1, Verdict::Yes), (0, Verdict::Yes)]);
    // Across files: load order is file order, the later file wins.
    let (a, _) = parse("a.supp", &rule("Cond", &["fun:alpha_cond"]), "Memcheck", 12);
    let (b, _) = parse("b.supp", &rule("Cond", &["fun:alpha_cond"]), "Memcheck", 12);
    let s = SuppressionSet::new([a, b].concat(), MatchOptions::default());
    assert_eq!(s.first_match(&cond_rec()), Yes(1));
    assert_eq!(s.suppressions()[1].file, "b.supp");
    let t = s.tally([(&cond_rec(), 3), (&value8_rec(), 1)]);
    assert_eq!(t.suppressed, vec![0, 3]);
    assert_eq!(t.not_suppressed, 1);
    assert_eq!(t.unused(), vec![0]);
    assert_eq!(t.by_name(&s), vec![("r".to_string(), 3, 0)]);
}

/// The inl.cpp stack (E3/E12/E16): check and level2 inlined into level1.
fn inl_rec(with_sframes: bool) -> Record {
    let exe = "/home/dev/exp/inl";
    let mut stack = vec![
        frame("0x1091B6", exe, Some("check"), Some(("inl.cpp", 6))),
        frame("0x1091B6", exe, Some("level2"), Some(("inl.cpp", 9))),
        frame(
            "0x1091B6",
            exe,
            Some("level1(ns::Box<int>&)"),
            Some(("inl.cpp", 10)),
        ),
        frame("0x10909D", exe, Some("main"), Some(("inl.cpp", 15))),
    ];
    if with_sframes {
        for (f, s) in stack
            .iter_mut()
            .zip(["check", "level2", "_Z6level1RN2ns3BoxIiEE", "main"])
        {
            f.sfun = Some(s.into());
        }
    }
    Record {
        kind: "UninitCondition".into(),
        what: "Conditional jump or move depends on uninitialised value(s)".into(),
        stack,
        ..Default::default()
    }
}

#[test]
fn e12_mangled_vs_demangled() {
    let exact = inl_rec(true);
    let demangled = inl_rec(false);
    let mangled = [
        "fun:check",
        "fun:level2",
        "fun:_Z6level1RN2ns3BoxIiEE",
        "fun:main",
    ];
    assert_eq!(outcome("Cond", &mangled, &exact), Yes(0));
    // Demangled names never match.
    let dem = ["fun:check", "fun:level2", "fun:level1(ns::Box<int>&)"];
    assert_eq!(outcome("Cond", &dem, &exact), No);
    // Without sframes: the mangled name is unknown.
    assert!(stack_view(&demangled, &MatchOptions::default()).uncertain);
    assert!(!stack_view(&exact, &MatchOptions::default()).uncertain);
    assert_eq!(outcome("Cond", &mangled, &demangled), Und(0));
    // ... but a pattern that cannot match any mangled name is decidable.
    assert_eq!(outcome("Cond", &dem, &demangled), No);
    assert_eq!(
        outcome(
            "Cond",
            &["fun:check", "fun:level2", "fun:*", "fun:main"],
            &demangled
        ),
        Yes(0)
    );
    assert_eq!(
        outcome("Cond", &["fun:check", "fun:level2", "fun:_Z*"], &demangled),
        Und(0)
    );
    // Inlined frames are exact even without sframes.
    assert_eq!(
        outcome("Cond", &["fun:check", "fun:level2"], &demangled),
        Yes(0)
    );
    // --demangle=no: <fn> is the mangled name.
    let mut nodem = inl_rec(false);
    nodem.stack[2].func = Some("_Z6level1RN2ns3BoxIiEE".into());
    assert_eq!(outcome("Cond", &mangled, &nodem), Yes(0));
    // Names from <suppression><sframe> when the frames were not joined.
    let mut gen_rec = inl_rec(false);
    gen_rec.suppression = Some(GenSuppression {
        kind: "Memcheck:Cond".into(),
        aux: None,
        frames: ["check", "level2", "_Z6level1RN2ns3BoxIiEE", "main"]
            .iter()
            .map(|n| (true, Arc::<str>::from(*n)))
            .collect(),
    });
    assert_eq!(outcome("Cond", &mangled, &gen_rec), Yes(0));
}

#[test]
fn e12_versioned_and_below_main() {
    let r = Record {
        kind: "UninitCondition".into(),
        stack: vec![
            frame("0x1", LIBC, Some("clock_nanosleep@@GLIBC_2.17"), None),
            frame("0x2", EXE, Some("main"), Some(("st.c", 3))),
            frame("0x3", LIBC, Some("__libc_start_call_main"), None),
            frame("0x4", LIBC, Some("__libc_start_main@@GLIBC_2.34"), None),
            frame("0x5", EXE, Some("_start"), None),
        ],
        ..Default::default()
    };
    let bm = MatchOptions {
        show_below_main: true,
        ..Default::default()
    };
    let o = |locs: &[&str]| set_with(&rule("Cond", locs), bm).first_match(&r);
    assert_eq!(o(&["fun:clock_nanosleep"]), No);
    assert_eq!(o(&["fun:clock_nanosleep@@GLIBC_2.17"]), Yes(0));
    assert_eq!(o(&["fun:clock_nanosleep*"]), Yes(0));
    // The default-mode rename is re-applied; versioned names are kept.
    assert_eq!(
        o(&[
            "...",
            "fun:main",
            "fun:(below main)",
            "fun:__libc_start_main@@GLIBC_2.34",
            "fun:(below main)"
        ]),
        Yes(0)
    );
    assert_eq!(o(&["...", "fun:main", "fun:__libc_start_call_main"]), No);
    // E15: through below-main libc frames.
    assert_eq!(
        o(&["fun:clock_nanosleep*", "...", "obj:*/libc.so*"]),
        Yes(0)
    );
    assert_eq!(o(&["...", "fun:_start"]), No);
}

#[test]
fn e15_hidden_frames_are_undecidable() {
    let r = cond_rec();
    // Matching needs the frames Valgrind cut below main.
    assert_eq!(
        outcome("Cond", &["fun:alpha_cond", "...", "obj:*/libc.so*"], &r),
        Und(0)
    );
    assert_eq!(
        outcome("Cond", &["...", "fun:main", "fun:(below main)"], &r),
        Und(0)
    );
    // Hidden frames are below-main frames: this cannot be among them.
    assert_eq!(
        outcome("Cond", &["fun:alpha_cond", "...", "obj:*libcuda.so*"], &r),
        No
    );
    assert_eq!(outcome("Cond", &["...", "fun:main", "fun:foo"], &r), No);
    let any = MatchOptions {
        hidden: HiddenFrames::Any,
        ..Default::default()
    };
    let s = set_with(
        &rule("Cond", &["fun:alpha_cond", "...", "obj:*libcuda.so*"]),
        any,
    );
    assert_eq!(s.first_match(&r), Und(0));
    // A stack that does not end in main is complete.
    let mut r2 = cond_rec();
    r2.stack.pop();
    assert_eq!(
        outcome("Cond", &["fun:alpha_cond", "...", "obj:*/libc.so*"], &r2),
        No
    );
    // A stack with --num-callers IPs cannot hide anything.
    let opts = MatchOptions {
        num_callers: 3,
        ..Default::default()
    };
    let s = set_with(
        &rule("Cond", &["fun:alpha_cond", "...", "obj:*/libc.so*"]),
        opts,
    );
    assert_eq!(s.first_match(&r), No);
    // A definite match wins over an earlier undecidable one.
    let two = format!(
        "{}{}",
        rule("Cond", &["fun:alpha_cond"]),
        rule("Cond", &["...", "fun:main", "fun:(below main)"])
    );
    let s = set(&two);
    assert_eq!(s.first_match(&r), Yes(0));
    assert_eq!(
        s.explain(&r),
        vec![(1, Verdict::Unknown), (0, Verdict::Yes)]
    );
}

#[test]
fn e14_unknown_function() {
    let mut r = cond_rec();
    r.stack[0].func = None;
    r.stack[0].obj = None;
    assert_eq!(outcome("Cond", &["fun:???"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["fun:\\?\\?\\?"], &r), No);
    assert_eq!(outcome("Cond", &["fun:?????"], &r), No);
    // supp_unknown: obj:* matches unknown objects.
    assert_eq!(outcome("Cond", &["obj:*", "fun:beta"], &r), Yes(0));
    assert_eq!(outcome("Cond", &["obj:???"], &r), Yes(0));
}

#[test]
fn e16_src_inline_index_bug() {
    let r = inl_rec(true);
    assert_eq!(
        outcome("Cond", &["src:inl.cpp:6", "src:inl.cpp:15"], &r),
        Yes(0)
    );
    assert_eq!(
        outcome(
            "Cond",
            &[
                "fun:check",
                "src:inl.cpp:9",
                "src:inl.cpp:10",
                "src:inl.cpp:15"
            ],
            &r
        ),
        No
    );
    let v = stack_view(&r, &MatchOptions::default());
    assert_eq!(
        v.group_src,
        vec![(Some("inl.cpp"), Some(6)), (Some("inl.cpp"), Some(15))]
    );
    assert_eq!(
        v.frames.iter().map(|f| f.group).collect::<Vec<_>>(),
        vec![0, 0, 0, 1]
    );
    assert!(v.frames[0].inlined && !v.frames[2].inlined);
    // Recursion through one return address is not an inline group.
    let mut rec = cond_rec();
    rec.stack = vec![
        frame("0x1", EXE, Some("fact"), Some(("f.c", 3))),
        frame("0x2", EXE, Some("fact"), Some(("f.c", 4))),
        frame("0x2", EXE, Some("fact"), Some(("f.c", 4))),
        frame("0x3", EXE, Some("main"), Some(("f.c", 9))),
    ];
    let v = stack_view(&rec, &MatchOptions::default());
    assert_eq!(v.group_src.len(), 4);
    assert_eq!(
        outcome(
            "Cond",
            &["src:f.c:3", "src:f.c:4", "src:f.c:4", "src:f.c:9"],
            &rec
        ),
        Yes(0)
    );
}

#[test]
fn e12_truncated_rule_matches() {
    let t = "{\n r\n Memcheck:Cond\n fun:alpha_cond\n fun:beta\n fun:main\n fun:wrong\n}\n";
    let (s, e) = parse("t", t, "Memcheck", 3);
    assert!(e.is_empty());
    let set = SuppressionSet::new(s, MatchOptions::default());
    assert_eq!(set.first_match(&cond_rec()), Yes(0));
    let (s, _) = parse("t", t, "Memcheck", 12);
    let set = SuppressionSet::new(s, MatchOptions::default());
    assert_eq!(set.first_match(&cond_rec()), No);
}

#[test]
fn other_kinds_and_edge_records() {
    let fishy = Record {
        kind: "FishyValue".into(),
        what: "Argument 'size' of function malloc has a fishy (possibly negative) value: -5\n"
            .into(),
        stack: leak_rec("Leak_DefinitelyLost").stack,
        ..Default::default()
    };
    let s = set("{\n r\n Memcheck:FishyValue\n malloc(size)\n fun:malloc\n}\n");
    assert_eq!(s.first_match(&fishy), Yes(0));
    let s = set("{\n r\n Memcheck:FishyValue\n malloc(sz)\n fun:malloc\n}\n");
    assert_eq!(s.first_match(&fishy), No);
    // Empty stacks, fatal signals and unknown kinds never match.
    let mut empty = cond_rec();
    empty.stack.clear();
    assert_eq!(outcome("Cond", &["...", "fun:*"], &empty), No);
    let sig = Record {
        kind: "FatalSignal".into(),
        ..Default::default()
    };
    assert_eq!(outcome("Cond", &["fun:*"], &sig), No);
    assert_eq!(
        set(&rule("Cond", &["fun:*"])).check(0, &cond_rec()),
        Verdict::Yes
    );
    assert_eq!(
        set(&rule("Cond", &["fun:*"])).check(7, &cond_rec()),
        Verdict::No
    );
}

#[test]
fn mini_fuzz_never_panics() {
    let toks = [
        "{",
        "}",
        "n",
        "Memcheck:Cond",
        "Memcheck:Leak",
        "Memcheck:Param",
        "Memcheck:FishyValue",
        "match-leak-kinds: all",
        "match-leak-kinds:",
        "fun:*",
        "fun:a?",
        "obj:*",
        "src:f.c:1",
        "src::",
        "...",
        "#c",
        "f(a)",
        "core:x",
        ":",
        "Helgrind:Race",
        "\0",
        "\r",
        " ",
        "é",
    ];
    let mut rng = 0x9e37_79b9_u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let rec = inl_rec(false);
    for _ in 0..3000 {
        let mut t = String::new();
        for _ in 0..next(30) {
            t.push_str(toks[next(toks.len())]);
            if next(4) > 0 {
                t.push('\n');
            }
        }
        let (s, e) = parse("f", &t, "Memcheck", 1 + next(20));
        for err in &e {
            assert!(!err.to_string().is_empty());
        }
        let set = SuppressionSet::new(s, MatchOptions::default());
        let _ = set.first_match(&rec);
        let _ = set.explain(&cond_rec());
    }
}

mod corpus;
