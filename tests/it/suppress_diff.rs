//! Differential test of the post-hoc suppression matcher against Valgrind
//! itself. Each case runs a real target twice: once through `leakgate run`
//! without suppressions (leakgate then applies the file after the run), and
//! once under plain Valgrind with `--suppressions=FILE` (Valgrind's own
//! matcher). The surviving records must be the same, record for record.
//! Records the XML cannot decide are listed and fail the test: they are not
//! counted as agreement.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn differential(dir: &Path, cmd: &[&str], supp_text: &str, label: &str) -> u64 {
    let supp = dir.join(format!("{label}.supp"));
    std::fs::write(&supp, supp_text).unwrap();
    // Valgrind must accept the file (the same one leakgate reads).
    let lint = Command::new(common::leakgate_bin())
        .arg("lint")
        .arg(&supp)
        .output()
        .unwrap();
    assert_eq!(
        lint.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );

    // A: leakgate run, no suppressions; raw XML kept.
    let a_dir = dir.join(format!("{label}-a"));
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env("PYTHONHASHSEED", "0")
        .args(["run", "--no-bundled-suppressions", "--format", "json", "-o"])
        .arg(dir.join(format!("{label}-a.json")))
        .arg("--keep-xml")
        .arg(&a_dir)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{label}: run A failed"
    );

    // B: plain valgrind with the suppression file, as leakgate would run it
    // but in Valgrind's default (not --show-below-main) mode.
    let b_dir = dir.join(format!("{label}-b"));
    common::valgrind_with_suppressions(None, dir, &b_dir, &supp, cmd, &format!("{label} B"));

    let post_hoc = common::analyze_json(dir, &[&a_dir], Some(&supp));
    let valgrind = common::analyze_json(dir, &[&b_dir], None);
    let undecidable = post_hoc["summary"]["suppressed"]["undecidable"]
        .as_u64()
        .unwrap();
    assert_eq!(
        undecidable, 0,
        "{label}: records the XML cannot decide (not agreement): {}",
        post_hoc["summary"]["suppressed"]["undecidable_by_suppression"]
    );
    let (p, v) = (common::survivors(&post_hoc), common::survivors(&valgrind));
    if p != v {
        let only_p: Vec<_> = p.iter().filter(|(k, x)| v.get(*k) != Some(x)).collect();
        let only_v: Vec<_> = v.iter().filter(|(k, x)| p.get(*k) != Some(x)).collect();
        panic!(
            "{label}: surviving records differ\n leakgate post hoc only: {only_p:#?}\n valgrind only: {only_v:#?}"
        );
    }
    let suppressed = post_hoc["summary"]["suppressed"]["records"]
        .as_u64()
        .unwrap();
    eprintln!(
        "{label}: agreement on {} surviving records; {suppressed} suppressed post hoc by {}",
        p.values().map(|x| x.0).sum::<u64>(),
        post_hoc["summary"]["suppressed"]["by_suppression"]
    );
    suppressed
}

fn built(src: &str, dir: &Path, opt: &str) -> PathBuf {
    common::build_c_opt(src, dir, opt)
}

#[test]
fn c_leaks_globs_ellipsis_src_and_leak_kinds() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = built("c/leak_kinds.c", tmp.path(), "-O0");
    let src = tmp.path().join("leak_kinds.c");
    let inner = common::marker_line(&src, "@indirect_inner");
    let supp = format!(
        r#"# exact frames, one leak kind
{{
   c-definite-exact
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:leak_definite
}}
# globs over whole names
{{
   c-loop-glob
   Memcheck:Leak
   fun:mall?c
   fun:leak_l*p
}}
# leading ... and a frame deep in the stack
{{
   c-possible-ellipsis
   Memcheck:Leak
   match-leak-kinds: possible
   ...
   fun:run_all
}}
# src: with a line
{{
   c-indirect-src
   Memcheck:Leak
   match-leak-kinds: indirect
   fun:malloc
   src:leak_kinds.c:{inner}
}}
# the wrong leak kind: must not match
{{
   c-strdup-wrong-kind
   Memcheck:Leak
   match-leak-kinds: reachable
   ...
   fun:leak_strdup
}}
# obj-only first frame, then below main (the matcher sees those frames)
{{
   c-strdup-belowmain
   Memcheck:Leak
   obj:*/vgpreload_memcheck-*.so
   fun:strdup
   ...
   fun:(below main)
}}
"#
    );
    let n = differential(tmp.path(), &[exe.to_str().unwrap()], &supp, "c-leaks");
    assert!(n >= 4, "the rules do suppress something ({n})");
}

#[test]
fn c_errors_sizes_free_and_ellipsis() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = built("c/mem_errors.c", tmp.path(), "-O0");
    let supp = r#"{
   e-addr4
   Memcheck:Addr4
   fun:invalid_read
}
{
   e-addr8-wrong-size
   Memcheck:Addr8
   fun:invalid_write
}
{
   e-cond-ellipsis
   Memcheck:Cond
   ...
   fun:main
}
{
   e-free
   Memcheck:Free
   fun:free
   fun:invalid_free
}
"#;
    let n = differential(tmp.path(), &[exe.to_str().unwrap()], supp, "c-errors");
    assert!(n >= 3, "{n}");
}

#[test]
fn cpp_mangled_names_match_and_demangled_do_not() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = built("cpp/mismatch.cpp", tmp.path(), "-O0");
    let demangled = r#"{
   cpp-demangled-never-matches
   Memcheck:Free
   fun:operator delete(void*, unsigned long)
   fun:mismatched_free()
}
"#;
    let n = differential(
        tmp.path(),
        &[exe.to_str().unwrap()],
        demangled,
        "cpp-demangled",
    );
    assert_eq!(n, 0);
    let mangled = r#"{
   cpp-mangled
   Memcheck:Free
   fun:_ZdlPv*
   fun:_Z15mismatched_freev
}
"#;
    let n = differential(tmp.path(), &[exe.to_str().unwrap()], mangled, "cpp-mangled");
    assert_eq!(n, 1);
}

#[test]
fn inlined_frames_and_the_src_index_quirk() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = built("cpp/inl.cpp", tmp.path(), "-O2");
    let src = tmp.path().join("inl.cpp");
    let main_line = common::marker_line(&src, "@inl_main");
    let alloc_line = common::marker_line(&src, "@inl_alloc");
    let cmd = [exe.to_str().unwrap()];
    let by_name = r#"{
   inl-dwarf-names
   Memcheck:Leak
   fun:malloc
   fun:inner_alloc
   fun:middle
   fun:_Z10outer_leakv
}
"#;
    assert_eq!(differential(tmp.path(), &cmd, by_name, "inl-names"), 1);
    // The k-th src: line looks at the k-th raw IP: after malloc and
    // inner_alloc, position 2 is main's IP (Valgrind 3.19's behaviour).
    let quirk = format!(
        "{{\n   inl-src-quirk\n   Memcheck:Leak\n   fun:malloc\n   fun:inner_alloc\n   src:inl.cpp:{main_line}\n}}\n"
    );
    differential(tmp.path(), &cmd, &quirk, "inl-src-quirk");
    let plain = format!(
        "{{\n   inl-src-first\n   Memcheck:Leak\n   fun:malloc\n   src:inl.cpp:{alloc_line}\n}}\n"
    );
    assert_eq!(differential(tmp.path(), &cmd, &plain, "inl-src-first"), 1);
}

#[test]
fn cpython_extension_rules() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    let supp = r#"{
   py-malloc
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:leak_malloc
}
{
   py-small-long
   Memcheck:Cond
   fun:maybe_small_long
   obj:*/libpython3*.so*
}
{
   py-cond-anywhere-in-libpython
   Memcheck:Value8
   ...
   obj:*/libpython3*
}
"#;
    // The real interpreter, as leakgate would resolve a wrapper.
    let real = Command::new(&py)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    let n = differential(&dir, &[&real, "test.py"], supp, "py");
    assert!(n >= 1, "{n}");
}

#[test]
fn pybind11_extension_mangled_rules() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "pybind11", tmp.path());
    let supp = r#"{
   pb-new-array
   Memcheck:Leak
   fun:_Znam
   fun:_Z14leak_new_arrayv
}
{
   pb-holder-ctor
   Memcheck:Leak
   match-leak-kinds: definite
   fun:_Znam
   fun:_ZN6HolderC*
}
"#;
    let real = Command::new(&py)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    let n = differential(&dir, &[&real, "test.py"], supp, "pb");
    assert!(n >= 1, "{n}");
}

fn bundled_text() -> String {
    ["glibc", "python", "pybind11", "torch", "cuda"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(common::repo_root().join(format!("suppressions/{f}.supp")))
                .unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn bundled_set_agrees_with_valgrind_on_python_extensions() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::pybind11_python_or_skip() else {
        return;
    };
    let real = Command::new(&py)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    let tmp = common::tempdir();
    for kind in ["cpython", "pybind11"] {
        let dir = common::build_python_ext_with(&py, kind, tmp.path());
        let n = differential(
            &dir,
            &[&real, "test.py"],
            &bundled_text(),
            &format!("bundled-{kind}"),
        );
        assert!(
            n >= 1,
            "{kind}: the bundled set absorbs the interpreter noise ({n})"
        );
    }
}

#[test]
fn bundled_set_agrees_with_valgrind_on_c_programs() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    for src in ["c/leak_kinds.c", "c/mem_errors.c", "cpp/mismatch.cpp"] {
        let exe = built(src, tmp.path(), "-O0");
        let label = format!("bundled-{}", exe.file_name().unwrap().to_string_lossy());
        differential(
            tmp.path(),
            &[exe.to_str().unwrap()],
            &bundled_text(),
            &label,
        );
    }
}
