//! Unit tests of the auxiliary stacks: the user's frames are marked as in
//! the main stack, noise stacks are cut, and the fingerprint ignores them.

use super::*;
use crate::analyze::attribute::UserSpec;
use crate::analyze::fingerprint::fingerprint;
use crate::model::{AuxInfo, Frame};

const LIBPY: &str = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0";
const PRELOAD: &str = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so";
const EXT: &str = "/tmp/x/ext.cpython-311-x86_64-linux-gnu.so";

fn fr(obj: &str, func: &str, src: Option<(&str, &str, u32)>) -> Frame {
    Frame {
        obj: Some(obj.into()),
        func: Some(func.into()),
        dir: src.map(|(d, _, _)| d.into()),
        file: src.map(|(_, f, _)| f.into()),
        line: src.map(|(_, _, l)| l),
        ..Frame::default()
    }
}

/// A checkout with `src/ext.c`, an attributor rooted there, and a use
/// after free in it: read in `get` (line 30), freed in `drop_it` (line
/// 20), allocated in `make` (line 10), each called from the interpreter.
fn use_after_free() -> (tempfile::TempDir, Attributor, Record) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/ext.c"), "int x;\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let src = root.join("src");
    let src = src.to_str().unwrap();
    let att = Attributor::new(UserSpec {
        roots: vec![root.clone()],
        user_objects: vec![],
    });
    let py = |f: &str| fr(LIBPY, f, None);
    let rec = Record {
        kind: "InvalidRead".into(),
        what: "Invalid read of size 4".into(),
        stack: vec![
            fr(EXT, "get", Some((src, "ext.c", 30))),
            py("_PyEval_EvalFrameDefault"),
        ],
        aux: vec![
            AuxInfo {
                text: "Address 0x4a40320 is 0 bytes inside a block of size 4 free'd".into(),
                stack: vec![
                    fr(PRELOAD, "free", None),
                    fr(EXT, "drop_it", Some(("/tmp/pip-build-1/src", "ext.c", 20))),
                    py("_PyEval_EvalFrameDefault"),
                    py("PyEval_EvalCode"),
                ],
            },
            AuxInfo {
                text: "Block was alloc'd at".into(),
                stack: vec![
                    fr(PRELOAD, "malloc", None),
                    fr(EXT, "make", Some((src, "ext.c", 10))),
                    py("_PyEval_EvalFrameDefault"),
                ],
            },
            AuxInfo {
                text: "a description without a stack".into(),
                stack: vec![],
            },
        ],
        ..Record::default()
    };
    (dir, att, rec)
}

#[test]
fn user_frames_of_aux_stacks_are_marked_as_in_the_main_stack() {
    let (dir, mut att, rec) = use_after_free();
    let aux = aux_stacks(&mut att, &rec, None);
    assert_eq!(aux.len(), 2, "descriptions without a stack are left out");
    assert_eq!(aux[0].text, rec.aux[0].text);
    let users: Vec<bool> = aux[0].stack.iter().map(|f| f.user).collect();
    assert_eq!(users, [false, true, false, false]);
    // The pip build directory's file is found in the checkout, as for
    // the main stack.
    let local = dir.path().canonicalize().unwrap().join("src/ext.c");
    assert_eq!(
        aux[0].stack[1].path.as_deref(),
        Some(local.to_str().unwrap())
    );
    assert_eq!(aux[0].stack[1].line, Some(20));
    assert_eq!(aux[1].text, "Block was alloc'd at");
    let users: Vec<bool> = aux[1].stack.iter().map(|f| f.user).collect();
    assert_eq!(users, [false, true, false]);
}

#[test]
fn aux_stacks_are_cut_like_noise_stacks() {
    let (_dir, mut att, rec) = use_after_free();
    let aux = aux_stacks(&mut att, &rec, Some(2));
    assert_eq!(aux[0].stack.len(), 2);
    assert_eq!(aux[1].stack.len(), 2);
}

#[test]
fn aux_stacks_do_not_change_the_fingerprint() {
    let (_dir, mut att, rec) = use_after_free();
    let a = att.attribute(&rec);
    let mut bare = rec.clone();
    bare.aux.clear();
    let b = att.attribute(&bare);
    assert!(a.is_user() && b.is_user());
    assert_eq!(fingerprint(&rec, &a), fingerprint(&bare, &b));
    // Another free site: the same finding.
    let mut other = rec.clone();
    other.aux[0].stack[1].func = Some("elsewhere".into());
    other.aux[0].stack[1].line = Some(99);
    let c = att.attribute(&other);
    assert_eq!(fingerprint(&rec, &a), fingerprint(&other, &c));
}
