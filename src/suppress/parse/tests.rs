//! Unit tests of `suppress::parse`.

use super::*;
use crate::suppress::kind::{FishyTarget, LeakKind};

fn mc(text: &str) -> (Vec<Suppression>, Vec<SyntaxError>) {
    parse("t.supp", text, "Memcheck", 12)
}

fn errs(text: &str) -> Vec<(u32, SyntaxErrorKind)> {
    mc(text).1.into_iter().map(|e| (e.line, e.kind)).collect()
}

#[test]
fn default_supp_parses_cleanly() {
    let path = "/usr/libexec/valgrind/default.supp";
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let p = parse_detailed(path, &text, "Memcheck", 12);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert!(p.suppressions.len() > 50);
    assert!(!p.skipped.is_empty(), "Helgrind/drd records are skipped");
    // Also as Helgrind and drd (their records are all valid too).
    for tool in ["Helgrind", "drd"] {
        let p = parse_detailed(path, &text, tool, 12);
        assert!(p.errors.is_empty(), "{tool}: {:?}", p.errors);
    }
}

#[test]
fn basic_record() {
    let (s, e) = mc(
        "{\n   n1\n   Memcheck:Addr4\n   fun:f\n   obj:/lib/x.so\n   src:a.c:12\n   src:b.c\n   ...\n}\n",
    );
    assert!(e.is_empty(), "{e:?}");
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!(s.name, "n1");
    assert_eq!(s.line, 1);
    assert_eq!(s.kind, SuppKind::Addr(4));
    assert_eq!(
        s.frames,
        vec![
            Loc::Fun("f".into()),
            Loc::Obj("/lib/x.so".into()),
            Loc::Src {
                file: "a.c".into(),
                line: Some(12)
            },
            Loc::Src {
                file: "b.c".into(),
                line: None
            },
            Loc::Ellipsis
        ]
    );
    let round = s.to_string();
    let (s2, e2) = mc(&round);
    assert!(e2.is_empty());
    assert_eq!(s2[0].frames, s.frames);
}

#[test]
fn src_line_numbers() {
    let (s, _) = mc("{\nn\nMemcheck:Cond\nsrc:f.c:abc\nsrc:g.c:0\nsrc:h.c:12x\nsrc:i.c:-1\n}\n");
    let lines: Vec<_> = s[0]
        .frames
        .iter()
        .map(|l| match l {
            Loc::Src { line, .. } => *line,
            _ => panic!(),
        })
        .collect();
    assert_eq!(lines, vec![None, None, Some(12), Some(u32::MAX)]);
}

#[test]
fn e13_comments_crlf_hash_in_name() {
    let t = "# c\r\n{\r\n  # inside\r\n   name with # hash\r\n#x\r\n Memcheck:Cond\r\n   fun:a\r\n\r\n}\r\n";
    let (s, e) = mc(t);
    assert!(e.is_empty(), "{e:?}");
    assert_eq!(s[0].name, "name with # hash");
    assert_eq!(s[0].frames, vec![Loc::Fun("a".into())]);
    // There are no end-of-line comments.
    assert_eq!(
        errs("{\nn\nMemcheck:Cond\nfun:a\n} # x\n"),
        vec![(5, SyntaxErrorKind::BadLocation)]
    );
    // Interior whitespace is kept; nothing is stripped after the prefix.
    let (s, _) = mc("{\nn\nMemcheck:Cond\nfun: foo\n}\n");
    assert_eq!(s[0].frames, vec![Loc::Fun(" foo".into())]);
}

#[test]
fn e13_missing_name() {
    // The kind line becomes the name, "fun:value8" the tool line (tool "fun"): skipped.
    let p = parse_detailed(
        "t",
        "{\n   Memcheck:Value8\n   fun:value8\n   fun:main\n}\n",
        "Memcheck",
        12,
    );
    assert!(p.errors.is_empty() && p.suppressions.is_empty());
    assert_eq!(p.skipped.len(), 1);
    assert_eq!(p.skipped[0].name, "Memcheck:Value8");
}

#[test]
fn e13_only_ellipsis_and_extra_lines() {
    assert_eq!(
        errs("{\nn\nMemcheck:Cond\n...\n...\n}\n"),
        vec![(6, SyntaxErrorKind::OnlyEllipsis)]
    );
    assert_eq!(
        errs("{\nn\nMemcheck:Cond\nmatch-leak-kinds: definite\nfun:a\n}\n"),
        vec![(4, SyntaxErrorKind::BadLocation)]
    );
    assert_eq!(
        errs("{\nn\nMemcheck:Leak\nmatch-leak-kinds: definite, possible\nfun:a\n}\n"),
        vec![(4, SyntaxErrorKind::BadExtraInfo)]
    );
    let (s, e) = mc(
        "{\nn\nMemcheck:Leak\nmatch-leak-kinds: none\nfun:a\n}\n{\nm\nMemcheck:Leak\nmatch-leak-kinds:definite,indirect\nfun:a\n}\n",
    );
    assert!(e.is_empty());
    assert_eq!(s[0].kind, SuppKind::Leak(LeakKindSet::NONE));
    let SuppKind::Leak(set) = s[1].kind else {
        panic!()
    };
    assert!(set.contains(LeakKind::Definite) && set.contains(LeakKind::Indirect));
    assert!(!set.contains(LeakKind::Possible));
    // No match-leak-kinds: all kinds; a location line is given back.
    let (s, _) = mc("{\nn\nMemcheck:Leak\nfun:malloc\n}\n");
    assert_eq!(s[0].kind, SuppKind::Leak(LeakKindSet::ALL));
    assert_eq!(s[0].frames, vec![Loc::Fun("malloc".into())]);
}

#[test]
fn e8_leak_with_src_first() {
    assert_eq!(
        errs("{\nn\nMemcheck:Leak\nsrc:st.c:12\n}\n"),
        vec![(4, SyntaxErrorKind::BadExtraInfo)]
    );
    // After a match-leak-kinds line or a first fun: it is fine (E7).
    let (_, e) = mc(
        "{\nn\nMemcheck:Leak\nmatch-leak-kinds: all\nsrc:st.c:12\n}\n{\nn\nMemcheck:Leak\nfun:malloc\nsrc:st.c:12\n}\n",
    );
    assert!(e.is_empty(), "{e:?}");
}

#[test]
fn e9_e10_tool_line() {
    assert_eq!(
        errs("{\nn\nMemcheck: Cond\nfun:a\n}\n"),
        vec![(3, SyntaxErrorKind::UnknownToolType)]
    );
    let p = parse_detailed(
        "t",
        "{\nn\nMemcheck2,Memcheck:Value8\nfun:a\n}\n",
        "Memcheck",
        12,
    );
    assert!(p.errors.is_empty() && p.suppressions.is_empty());
    assert_eq!(p.skipped.len(), 1);
    let (s, e) = mc("{\nn\nHelgrind,Memcheck:Value8\nfun:a\n}\n");
    assert!(e.is_empty());
    assert_eq!(s[0].kind, SuppKind::Value(8));
    assert_eq!(
        errs("{\nn\nMemcheck Cond\nfun:a\n}\n"),
        vec![(3, SyntaxErrorKind::MalformedToolLine)]
    );
    assert_eq!(
        errs("{\nn\ncore:Thread\nfun:a\n}\n"),
        vec![(3, SyntaxErrorKind::UnknownCoreType)]
    );
    // Other tools' records are not validated.
    let p = parse_detailed(
        "t",
        "{\nn\nHelgrind:Race\ngarbage\n...\n}\n",
        "Memcheck",
        12,
    );
    assert!(p.errors.is_empty());
    assert_eq!(p.skipped.len(), 1);
    // Later kinds are accepted, with a warning.
    let (s, e) = mc("{\nn\nMemcheck:ReallocZero\nfun:a\n}\n");
    assert!(e.is_empty());
    assert_eq!(s[0].kind, SuppKind::ReallocZero);
    assert_eq!(s[0].warnings.len(), 1);
    assert!(tool_name_present("Memcheck", "Helgrind,Memcheck"));
    assert!(!tool_name_present("Memcheck", "xMemcheck,Memcheck"));
    assert!(!tool_name_present("Memcheck", "Memcheck "));
}

#[test]
fn param_and_fishy() {
    let (s, e) = mc("{\nn\nMemcheck:Param\nwrite(buf)\nfun:write\n}\n");
    assert!(e.is_empty());
    assert_eq!(s[0].kind, SuppKind::Param("write(buf)".into()));
    assert_eq!(
        errs("{\nn\nMemcheck:Param\nfun:write\n}\n"),
        vec![(4, SyntaxErrorKind::BadExtraInfo)]
    );
    // src: is not a location line for this check: it becomes the param.
    let (s, _) = mc("{\nn\nMemcheck:Param\nsrc:a.c\nfun:write\n}\n");
    assert_eq!(s[0].kind, SuppKind::Param("src:a.c".into()));
    let (s, _) = mc("{\nn\nMemcheck:Param\npreadv(vector[...])\nfun:w\n}\n");
    assert_eq!(s[0].warnings.len(), 1);
    let (s, e) = mc("{\nn\nMemcheck:FishyValue\nmalloc(size)x\nfun:malloc\n}\n");
    assert!(e.is_empty());
    assert_eq!(
        s[0].kind,
        SuppKind::FishyValue(Some(FishyTarget {
            func: "malloc".into(),
            arg: "size".into()
        }))
    );
    assert_eq!(
        errs("{\nn\nMemcheck:FishyValue\nmalloc(size\nfun:malloc\n}\n"),
        vec![(4, SyntaxErrorKind::BadExtraInfo)]
    );
    let (s, e) = mc("{\nn\nMemcheck:FishyValue\nfun:malloc\n}\n");
    assert!(e.is_empty());
    assert_eq!(s[0].kind, SuppKind::FishyValue(None));
    assert_eq!(s[0].frames.len(), 1);
}

#[test]
fn structural_errors_and_recovery() {
    let t = "junk\n{\nok1\nMemcheck:Cond\nfun:a\n}\n{\n}\n{\nn\nMemcheck:Cond\n}\n{\nn\nMemcheck:Cond\n..\nfun:b\n}\n{\nok2\nMemcheck:Cond\nfun:c\n}\n{\nn\nMemcheck:Cond\nfun:d\n";
    let (s, e) = mc(t);
    let got: Vec<_> = e.iter().map(|e| (e.line, e.kind.clone())).collect();
    assert_eq!(
        got,
        vec![
            (1, SyntaxErrorKind::ExpectedOpenBrace),
            (8, SyntaxErrorKind::UnexpectedCloseBrace),
            (12, SyntaxErrorKind::MissingStackTrace),
            (16, SyntaxErrorKind::BadLocation),
            (27, SyntaxErrorKind::EofInStackTrace),
        ]
    );
    let names: Vec<_> = s.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["ok1", "ok2"]);
    assert_eq!(e[0].to_string(), "t.supp:1: expected '{' or end-of-file");
    // A missing '}' is caught at the next '{', which then starts a record.
    let (s, e) = mc("{\na\nMemcheck:Cond\nfun:a\n{\nb\nMemcheck:Cond\nfun:b\n}\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].line, 5);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "b");
    assert_eq!(
        errs("{\nn\n"),
        vec![(2, SyntaxErrorKind::EofExpectingToolKind)]
    );
    assert_eq!(
        errs("{\n"),
        vec![(1, SyntaxErrorKind::UnexpectedCloseBrace)]
    );
    assert_eq!(
        errs("{\nn\nfoo:bar\nfun:x\n"),
        vec![(4, SyntaxErrorKind::EofWhenSkipping)]
    );
    assert!(mc("").1.is_empty());
    assert!(mc("\n\n  # only comments\n").1.is_empty());
}

#[test]
fn last_line_without_newline() {
    // "}" at EOF without newline is fine.
    let (s, e) = mc("{\nn\nMemcheck:Cond\nfun:a\n}");
    assert!(e.is_empty() && s.len() == 1);
    // ... but it is not trimmed, and not treated as a comment.
    assert_eq!(
        errs("{\nn\nMemcheck:Cond\nfun:a\n}  "),
        vec![(5, SyntaxErrorKind::BadLocation)]
    );
    assert_eq!(
        errs("{\nn\nMemcheck:Cond\nfun:a\n}\n# end"),
        vec![(6, SyntaxErrorKind::ExpectedOpenBrace)]
    );
}

#[test]
fn e12_truncation_at_num_callers() {
    let t = "{\nn\nMemcheck:Cond\nfun:a\nfun:b\nfun:c\nfun:d\nthis is wrong\n}\n";
    let (s, e) = parse("t", t, "Memcheck", 4);
    assert!(e.is_empty(), "{e:?}");
    assert_eq!(s[0].frames.len(), 4);
    assert_eq!(s[0].dropped_lines, 1);
    let (_, e) = parse("t", t, "Memcheck", 12);
    assert_eq!(e.len(), 1);
    // Truncated record at end of file is accepted silently.
    let (s, e) = parse("t", "{\nn\nMemcheck:Cond\nfun:a\nfun:b\n", "Memcheck", 1);
    assert!(e.is_empty());
    assert_eq!(s.len(), 1);
    // 501 lines with --num-callers=500.
    let mut big = String::from("{\nn\nMemcheck:Cond\n");
    for _ in 0..501 {
        big.push_str("fun:x\n");
    }
    big.push_str("}\n");
    let (_, e) = parse("t", &big, "Memcheck", 500);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].kind, SyntaxErrorKind::TooManyCallers);
    assert_eq!(e[0].line, 504);
    let (s, e) = parse("t", &big, "Memcheck", 499);
    assert!(e.is_empty());
    assert_eq!(s[0].frames.len(), 499);
}

#[test]
fn long_lines_and_odd_bytes() {
    let long = "x".repeat(MAX_LINE_LEN - 4);
    let (s, e) = mc(&format!("{{\nn\nMemcheck:Cond\nfun:{long}\n}}\n"));
    assert!(e.is_empty() && s.len() == 1);
    let long = "x".repeat(MAX_LINE_LEN);
    let (s, e) = mc(&format!(
        "{{\nn\nMemcheck:Cond\nfun:{long}\n}}\n{{\nm\nMemcheck:Cond\nfun:a\n}}\n"
    ));
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].kind, SyntaxErrorKind::LineTooLong);
    assert_eq!(s.len(), 1);
    // NUL ends a C string; \v and \f are blanks.
    let (s, e) = mc("{\nn\nMemcheck:Cond\nfun:a\0junk\n\x0b\x0c}\x0b\n");
    assert!(e.is_empty());
    assert_eq!(s[0].frames, vec![Loc::Fun("a".into())]);
    // Non-ASCII text survives.
    let (s, _) = mc("{\nnäme\nMemcheck:Cond\nfun:é*\n}\n");
    assert_eq!(s[0].name, "näme");
}
