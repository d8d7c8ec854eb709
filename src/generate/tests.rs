//! Unit tests of the suppression generator.

use super::*;
use crate::model::Frame;

#[test]
fn object_patterns() {
    assert_eq!(
        obj_pattern("/usr/lib/libpython3.11.so.1.0"),
        "obj:*/libpython3*.so*"
    );
    assert_eq!(obj_pattern("/x/libcudart.so.12"), "obj:*/libcudart.so*");
    assert_eq!(obj_pattern("/x/libc10.so"), "obj:*/libc10.so*");
    assert_eq!(
        obj_pattern("/v/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"),
        "obj:*/_multiarray_umath*.so*"
    );
    assert_eq!(
        obj_pattern("/x/libgomp-a34b3233.so.1"),
        "obj:*/libgomp*.so*"
    );
    assert_eq!(obj_pattern("/usr/bin/python3.11"), "obj:*/python3*");
    assert_eq!(
        obj_pattern("/lib64/ld-linux-x86-64.so.2"),
        "obj:*/ld-linux-x86-64.so*"
    );
    assert_eq!(obj_pattern("???"), "obj:*");
}

#[test]
fn function_patterns() {
    assert_eq!(
        fun_pattern("posix_do_stat.constprop.0"),
        "fun:posix_do_stat*"
    );
    assert_eq!(fun_pattern("memcpy@@GLIBC_2.14"), "fun:memcpy*");
    assert_eq!(fun_pattern("operator*"), "fun:operator?");
    assert_eq!(fun_pattern("_ZN3foo3barEv"), "fun:_ZN3foo3barEv");
}

#[test]
fn kind_filter() {
    assert_eq!(
        KindFilter::parse("all").unwrap().describe(),
        "definite,indirect,possible,reachable,errors"
    );
    assert_eq!(KindFilter::default().describe(), "definite,indirect,errors");
    assert!(KindFilter::parse("definite,bogus").is_err());
}

fn frame(ip: &str, obj: &str, func: &str) -> Frame {
    Frame {
        ip: Some(ip.into()),
        obj: Some(obj.into()),
        func: Some(func.into()),
        ..Default::default()
    }
}

const PRE: &str = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so";
const PY: &str = "/opt/py/lib/libpython3.11.so.1.0";

fn leak(frames: Vec<Frame>) -> Record {
    Record {
        kind: "Leak_DefinitelyLost".into(),
        what: "8 bytes in 1 blocks are definitely lost".into(),
        stack: frames,
        ..Default::default()
    }
}

#[test]
fn narrowed_until_no_user_record_is_hidden() {
    let noise = leak(vec![
        frame("0x1", PRE, "malloc"),
        frame("0x2", PY, "gc_alloc"),
        frame("0x3", PY, "_PyObject_GC_NewVar"),
        frame("0x4", PY, "PyTuple_New"),
        frame("0x5", PY, "import_find_and_load"),
    ]);
    let user = leak(vec![
        frame("0x1", PRE, "malloc"),
        frame("0x2", PY, "gc_alloc"),
        frame("0x3", PY, "_PyObject_GC_NewVar"),
        frame("0x6", PY, "PyTuple_Pack"),
        frame("0x7", "/home/u/ext.so", "my_leak"),
    ]);
    let natt = Attribution {
        source: Some(crate::analyze::attribute::Source::Python),
        owner: Some(1),
        user_frames: vec![],
        local_paths: vec![],
        reason: None,
        made_by: None,
    };
    let uatt = Attribution {
        source: None,
        owner: Some(4),
        user_frames: vec![4],
        local_paths: vec![],
        reason: None,
        made_by: None,
    };
    let p = ProcessInfo::default();
    // Without the user record: the general rule.
    let mut g = Generator::new(GenOptions::default());
    g.observe(&noise, &natt, &p, false);
    let out = g.finish(&HashSet::new());
    assert_eq!(out.rules.len(), 1);
    assert!(
        out.rules[0].2.ends_with("fun:_PyObject_GC_NewVar\n}"),
        "{}",
        out.rules[0].2
    );
    // With it: narrowed by one frame, and the user record stays visible.
    let mut g = Generator::new(GenOptions::default());
    g.observe(&noise, &natt, &p, false);
    g.observe(&user, &uatt, &p, false);
    let out = g.finish(&HashSet::new());
    assert_eq!(out.rules.len(), 1);
    let text = &out.rules[0].2;
    assert!(text.ends_with("fun:PyTuple_New\n}"), "{text}");
    let (s, e) = parse("t", text, "Memcheck", 500);
    assert!(e.is_empty());
    let set = Suppressor::new(s).set_for(&[]);
    assert_eq!(set.first_match(&user), MatchOutcome::NotSuppressed);
    assert!(matches!(
        set.first_match(&noise),
        MatchOutcome::Suppressed(_)
    ));
    // Kinds merge into one match-leak-kinds line, without spaces.
    let mut g = Generator::new(GenOptions::default());
    g.observe(&noise, &natt, &p, false);
    let mut ind = noise.clone();
    ind.kind = "Leak_IndirectlyLost".into();
    g.observe(&ind, &natt, &p, false);
    let out = g.finish(&HashSet::new());
    assert_eq!(out.rules.len(), 1);
    assert!(
        out.rules[0]
            .2
            .contains("match-leak-kinds: indirect,definite\n")
    );
}
