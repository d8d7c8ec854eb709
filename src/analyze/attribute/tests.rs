//! Unit tests of attribution: which frame decides, and whose it is.

use super::*;

#[test]
fn classifies_objects() {
    let c = |s| classify_object(Some(s));
    assert_eq!(
        c("/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so"),
        ObjClass::Valgrind
    );
    assert_eq!(
        c("/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"),
        ObjClass::Interpreter
    );
    assert_eq!(c("/usr/bin/python3.11"), ObjClass::Interpreter);
    assert_eq!(
        c("/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
        ObjClass::Interpreter
    );
    assert_eq!(
        c("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"),
        ObjClass::Cuda
    );
    assert_eq!(
        c("/v/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"),
        ObjClass::Torch
    );
    assert_eq!(c("/usr/lib/x86_64-linux-gnu/libc.so.6"), ObjClass::System);
    assert_eq!(
        c("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
        ObjClass::System
    );
    assert_eq!(
        c("/v/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so"),
        ObjClass::ThirdParty
    );
    assert_eq!(
        c("/home/dev/project/ext.cpython-311-x86_64-linux-gnu.so"),
        ObjClass::Other
    );
    assert_eq!(c("???"), ObjClass::Unknown);
    assert_eq!(classify_object(None), ObjClass::Unknown);
}

const LIBPY: &str = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0";
const PRELOAD: &str = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so";

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

/// A checkout with `src/ext.c` and an attributor rooted there.
fn checkout() -> (tempfile::TempDir, Attributor) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/ext.c"), "int x;\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let att = Attributor::new(UserSpec {
        roots: vec![root],
        user_objects: vec![],
    });
    (dir, att)
}

fn leak(stack: Vec<Frame>) -> Record {
    Record {
        kind: "Leak_DefinitelyLost".into(),
        stack,
        ..Record::default()
    }
}

#[test]
fn extension_installed_into_site_packages_is_yours_when_its_source_is() {
    let (dir, mut att) = checkout();
    let so = "/venv/lib/python3.11/site-packages/ext.cpython-311-x86_64-linux-gnu.so";
    // pip built it in a temporary directory: trailing components match.
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(
            so,
            "Py_INCREF",
            Some(("/usr/local/include/python3.11", "object.h", 500)),
        ),
        fr(so, "leaky", Some(("/tmp/pip-req-build-x1/src", "ext.c", 7))),
        fr(
            LIBPY,
            "cfunction_call",
            Some(("Objects", "methodobject.c", 553)),
        ),
    ]);
    let a = att.attribute(&rec);
    assert!(a.is_user(), "{a:?}");
    assert_eq!(a.owner, Some(2));
    // The checkout's own path (pip install . builds in the tree).
    let d = dir.path().canonicalize().unwrap().join("src");
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(so, "leaky", Some((d.to_str().unwrap(), "ext.c", 7))),
    ]);
    assert!(att.attribute(&rec).is_user());
    // Another package in site-packages whose sources are not yours.
    let other = "/venv/lib/python3.11/site-packages/numpy/core/_umath.so";
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(
            other,
            "npy_alloc",
            Some(("/tmp/pip-build/numpy/core/src", "alloc.c", 9)),
        ),
    ]);
    assert_eq!(att.attribute(&rec).source, Some(Source::ThirdParty));
    // An inlined CPython header in the claimed extension does not
    // decide for it.
    let rec = Record {
        kind: "UninitValue".into(),
        stack: vec![
            fr(
                so,
                "Py_DECREF",
                Some(("/opt/py/include/python3.11", "object.h", 537)),
            ),
            fr(so, "parse", Some(("/tmp/pip-req-build-x1/src", "ext.c", 9))),
        ],
        ..Record::default()
    };
    let a = att.attribute(&rec);
    assert!(a.is_user(), "{a:?}");
    assert_eq!(a.owner, Some(1));
}

fn uninit(stack: Vec<Frame>, origin: Vec<Frame>) -> Record {
    Record {
        kind: "UninitCondition".into(),
        stack,
        aux: vec![crate::model::AuxInfo {
            text: "Uninitialised value was created by a heap allocation".into(),
            stack: origin,
        }],
        ..Record::default()
    }
}

#[test]
fn uninitialised_values_the_interpreter_made_are_python_noise() {
    let (_dir, mut att) = checkout();
    let ext = "/home/u/proj/ext.so";
    let user = |f: &str, l| fr(ext, f, Some(("/tmp/b/src", "ext.c", l)));
    let main = vec![fr(LIBPY, "maybe_small_long", None), user("parse_int", 12)];
    // CPython's _PyLong_New made it (the zero int's digit).
    let rec = uninit(
        main.clone(),
        vec![
            fr(PRELOAD, "malloc", None),
            fr(LIBPY, "_PyLong_New", None),
            fr(LIBPY, "PyLong_FromString", None),
            user("parse_int", 10),
        ],
    );
    let a = att.attribute(&rec);
    assert_eq!(a.source, Some(Source::Python));
    assert_eq!(
        a.reason,
        Some(NoiseReason::InterpreterOrigin("_PyLong_New".into()))
    );
    // The user asked CPython's allocator for memory and left it
    // uninitialised: still the user's.
    for api in ["PyMem_Malloc", "_PyObject_New", "PyBytes_FromStringAndSize"] {
        let rec = uninit(
            main.clone(),
            vec![
                fr(PRELOAD, "malloc", None),
                fr(LIBPY, "_PyMem_RawMalloc", None),
                fr(LIBPY, api, None),
                user("make", 3),
            ],
        );
        let a = att.attribute(&rec);
        assert!(a.is_user(), "{api}: {a:?}");
    }
    // The user's own malloc.
    let rec = uninit(
        main.clone(),
        vec![fr(PRELOAD, "malloc", None), user("make", 3)],
    );
    assert!(att.attribute(&rec).is_user());
}

/// Only a named rule (`CPYTHON_UNINIT`) makes an origin in the interpreter
/// the interpreter's: the user's code reading the bytes around a string
/// CPython made (a regex engine reading before and after its subject), or a
/// dead stack slot a CPython frame reused, is the user's.
#[test]
fn user_over_reads_of_bytes_cpython_made_stay_the_users() {
    let (_dir, mut att) = checkout();
    let ext = "/home/u/proj/ext.so";
    let user = |f: &str, l| fr(ext, f, Some(("/tmp/b/src", "ext.c", l)));
    // The read is in the user's code; the bytes are a str CPython decoded.
    let rec = uninit(
        vec![user("match_backwards", 5235), user("do_match", 3513)],
        vec![
            fr(PRELOAD, "malloc", None),
            fr(LIBPY, "_PyObject_Malloc", None),
            fr(LIBPY, "PyUnicode_New", None),
            fr(LIBPY, "unicode_decode_utf8", None),
            fr(LIBPY, "PyUnicode_DecodeUTF8Stateful", None),
        ],
    );
    let a = att.attribute(&rec);
    assert!(a.is_user(), "{a:?}");
    // A dead stack slot that a CPython frame's allocation reused.
    let rec = Record {
        kind: "UninitCondition".into(),
        stack: vec![user("capture_str", 21530)],
        aux: vec![crate::model::AuxInfo {
            text: "Uninitialised value was created by a stack allocation".into(),
            stack: vec![fr(LIBPY, "_PyEval_EvalFrameDefault", None)],
        }],
        ..Record::default()
    };
    let a = att.attribute(&rec);
    assert!(a.is_user(), "{a:?}");
    // The named rule still holds where the user's code only passed the
    // zero int on.
    let rec = uninit(
        vec![fr(LIBPY, "maybe_small_long", None), user("parse_int", 12)],
        vec![fr(PRELOAD, "malloc", None), fr(LIBPY, "_PyLong_New", None)],
    );
    assert_eq!(att.attribute(&rec).source, Some(Source::Python));
}

#[test]
fn tracemalloc_bookkeeping_under_a_user_call_is_the_interpreters() {
    let (_dir, mut att) = checkout();
    let ext = "/home/u/proj/ext.so";
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(LIBPY, "raw_malloc", None),
        fr(LIBPY, "traceback_new", None),
        fr(LIBPY, "tracemalloc_add_trace", None),
        fr(LIBPY, "tracemalloc_alloc", None),
        fr(LIBPY, "PyObject_Malloc", None),
        fr(ext, "make", Some(("/tmp/b/src", "ext.c", 3))),
    ]);
    let a = att.attribute(&rec);
    assert_eq!(a.source, Some(Source::Python));
    assert!(matches!(
        a.reason,
        Some(NoiseReason::InterpreterBookkeeping(_))
    ));
    // The user's allocation itself, through tracemalloc's hook, stays theirs.
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(LIBPY, "tracemalloc_alloc", None),
        fr(LIBPY, "tracemalloc_malloc_gil", None),
        fr(LIBPY, "PyMem_Malloc", None),
        fr(ext, "make", Some(("/tmp/b/src", "ext.c", 3))),
    ]);
    assert!(att.attribute(&rec).is_user());
}

#[test]
fn a_descriptor_the_interpreter_opened_is_python_noise() {
    let (_dir, mut att) = checkout();
    let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
    let rec = Record {
        kind: "FdNotClosed".into(),
        stack: vec![
            fr(libc, "open", None),
            fr(LIBPY, "os_open_impl", None),
            fr(LIBPY, "_PyEval_EvalFrameDefault", None),
        ],
        ..Record::default()
    };
    let a = att.attribute(&rec);
    assert_eq!(a.source, Some(Source::Python));
    assert_eq!(a.owner, Some(1));
    // Other kinds keep the innermost pass-through frame's label.
    let rec = Record {
        kind: "Leak_DefinitelyLost".into(),
        ..rec
    };
    assert_eq!(att.attribute(&rec).source, Some(Source::System));
}

#[test]
fn normalizes_paths() {
    assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
}

const NUMPY: &str =
    "/v/lib/python3.11/site-packages/numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so";
const LIBSTDCXX: &str = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30";

/// An array `PyArray_Ravel` made for the extension: NumPy's frames, called
/// directly by the user's.
fn ravel_stack(between: Option<Frame>, outer: Vec<Frame>) -> Vec<Frame> {
    let ext = "/home/u/proj/ext.so";
    let mut v = vec![
        fr(PRELOAD, "malloc", None),
        fr(LIBPY, "_PyObject_GC_New", None),
        fr(LIBPY, "PyType_GenericAlloc", None),
        fr(NUMPY, "PyArray_NewFromDescr_int", None),
        fr(NUMPY, "PyArray_Newshape", None),
        fr(NUMPY, "PyArray_Ravel", None),
    ];
    v.extend(between);
    v.push(fr(ext, "leaky_ravel", Some(("/tmp/b/src", "ext.c", 12))));
    v.extend(outer);
    v
}

#[test]
fn a_block_a_library_made_for_the_users_direct_call_is_the_users() {
    let (_dir, mut att) = checkout();
    let called = vec![fr(LIBPY, "cfunction_call", None)];
    let a = att.attribute(&leak(ravel_stack(None, called.clone())));
    assert!(a.is_user(), "{a:?}");
    assert_eq!(a.owner, Some(6));
    assert_eq!(
        a.made_by,
        Some(MadeBy {
            library: "numpy".into(),
            function: "PyArray_Ravel".into()
        })
    );
    assert!(
        a.made_by
            .unwrap()
            .describe()
            .starts_with("allocated by numpy (PyArray_Ravel) for your call")
    );
    // Possibly lost blocks too.
    let rec = Record {
        kind: "Leak_PossiblyLost".into(),
        ..leak(ravel_stack(None, called.clone()))
    };
    assert!(att.attribute(&rec).is_user());
    // An indirectly lost one is counted in the record of the lost block
    // that points to it: noise, saying why.
    let rec = Record {
        kind: "Leak_IndirectlyLost".into(),
        ..leak(ravel_stack(None, called.clone()))
    };
    let a = att.attribute(&rec);
    assert_eq!(a.source, Some(Source::ThirdParty));
    assert!(
        matches!(&a.reason, Some(NoiseReason::InsideLostBlock(m)) if m.function == "PyArray_Ravel"),
        "{:?}",
        a.reason
    );
    // Not a still-reachable block (glibc's caches made for a printf).
    let rec = Record {
        kind: "Leak_StillReachable".into(),
        ..leak(ravel_stack(None, called.clone()))
    };
    assert_eq!(att.attribute(&rec).source, Some(Source::ThirdParty));
    // The interpreter called the library, not the user.
    let a = att.attribute(&leak(ravel_stack(
        Some(fr(LIBPY, "PyObject_Call", None)),
        called,
    )));
    assert_eq!(a.source, Some(Source::ThirdParty));
    assert_eq!(a.made_by, None);
    // Under module initialisation: the library's, wherever the user's
    // frame is (the user's PyInit_ or a function it called).
    for init in ["_imp_create_dynamic", "PyModule_ExecDef"] {
        let a = att.attribute(&leak(ravel_stack(
            None,
            vec![
                fr("/home/u/proj/ext.so", "PyInit_ext", None),
                fr(LIBPY, init, None),
            ],
        )));
        assert_eq!(a.source, Some(Source::ThirdParty), "{init}");
    }
    // NumPy's own import: no user frame at all.
    let rec = leak(vec![
        fr(PRELOAD, "malloc", None),
        fr(NUMPY, "PyArray_NewFromDescr_int", None),
        fr(NUMPY, "PyInit__multiarray_umath", None),
        fr(LIBPY, "_imp_create_dynamic", None),
    ]);
    assert_eq!(att.attribute(&rec).source, Some(Source::ThirdParty));
}

#[test]
fn the_string_of_a_leaked_runtime_error_is_counted_in_the_users_leak() {
    let (_dir, mut att) = checkout();
    let ext = "/home/u/proj/ext.so";
    let mut rec = Record {
        kind: "Leak_DefinitelyLost".into(),
        ..leak(vec![
            fr(PRELOAD, "operator new(unsigned long)", None),
            fr(
                LIBSTDCXX,
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)",
                None,
            ),
            fr(
                LIBSTDCXX,
                "std::runtime_error::runtime_error(char const*)",
                None,
            ),
            fr(ext, "fail", Some(("/tmp/b/src", "ext.c", 20))),
            fr(LIBPY, "cfunction_call", None),
        ])
    };
    let a = att.attribute(&rec);
    assert!(a.is_user(), "{a:?}");
    assert_eq!(a.owner, Some(3));
    let m = a.made_by.unwrap();
    assert_eq!(m.library, "libstdc++");
    assert_eq!(m.function, "std::runtime_error::runtime_error(char const*)");
    // Indirectly lost (the exception object is the lost block): noise,
    // counted in the exception's record.
    rec.kind = "Leak_IndirectlyLost".into();
    let a = att.attribute(&rec);
    assert_eq!(a.source, Some(Source::System), "{a:?}");
    assert!(
        matches!(&a.reason, Some(NoiseReason::InsideLostBlock(m)) if m.library == "libstdc++"),
        "{a:?}"
    );
}

#[test]
fn library_names() {
    assert_eq!(library_name(Some(NUMPY), None), "numpy");
    assert_eq!(library_name(Some(LIBSTDCXX), None), "libstdc++");
    assert_eq!(
        library_name(
            Some("/v/lib/python3.11/site-packages/_cffi_backend.cpython-311-x86_64-linux-gnu.so"),
            None
        ),
        "_cffi_backend"
    );
    // A library's header compiled into the user's object.
    assert_eq!(
        library_name(
            Some("/home/u/proj/ext.so"),
            Some("/v/lib/python3.11/site-packages/pybind11/include/pybind11/cast.h")
        ),
        "pybind11"
    );
}

/// A Rust extension (`checkout()/ext.so`, sources `src/lib.rs`): Rust's
/// standard library compiled into it passes through, with or without line
/// information; a Cargo dependency's code (pyo3) owns what it allocates.
#[test]
fn rust_std_passes_through_and_cargo_dependencies_decide() {
    let (dir, mut att) = checkout();
    std::fs::write(dir.path().join("src/lib.rs"), "fn f() {}\n").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let so = root.join("ext.so");
    let so = so.to_str().unwrap();
    let src = root.join("src");
    let src = src.to_str().unwrap();
    const RUSTC: &str = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src";
    const PYO3: &str = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pyo3-0.30.1/src";
    let user = fr(so, "ext::leak_vec", Some((src, "lib.rs", 43)));
    let stack = vec![
        fr(PRELOAD, "malloc", None),
        fr(so, "<alloc::raw_vec::RawVecInner>::try_allocate_in", None),
        fr(
            so,
            "alloc::vec::from_elem",
            Some((RUSTC, "vec/mod.rs", 3651)),
        ),
        user.clone(),
        fr(
            so,
            "pyo3::impl_::trampoline::trampoline",
            Some((PYO3, "impl_/trampoline.rs", 315)),
        ),
        fr(LIBPY, "_PyEval_EvalFrameDefault", None),
    ];
    let a = att.attribute(&leak(stack));
    assert!(a.is_user(), "{a:?}");
    assert_eq!(a.owner, Some(3));
    assert!(a.made_by.is_none(), "{a:?}");
    // pyo3's own block, made under the interpreter's call: third-party.
    let stack = vec![
        fr(PRELOAD, "malloc", None),
        fr(so, "__rust_alloc", None),
        fr(
            so,
            "pyo3::types::list::PyList::empty",
            Some((PYO3, "types/list.rs", 80)),
        ),
        fr(LIBPY, "_PyEval_EvalFrameDefault", None),
    ];
    let a = att.attribute(&leak(stack));
    assert_eq!(a.source, Some(Source::ThirdParty), "{a:?}");
    assert_eq!(a.owner, Some(2));
    // A pyo3 object the user's code asked for directly is the user's to release.
    let stack = vec![
        fr(PRELOAD, "malloc", None),
        fr(
            so,
            "pyo3::types::list::PyList::empty",
            Some((PYO3, "types/list.rs", 80)),
        ),
        user,
        fr(LIBPY, "_PyEval_EvalFrameDefault", None),
    ];
    let a = att.attribute(&leak(stack));
    assert!(a.is_user());
    assert_eq!(a.made_by.as_ref().map(|m| m.library.as_str()), Some("pyo3"));
}

#[test]
fn cargo_dependencies_and_rust_names() {
    assert_eq!(
        cargo_dependency(
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pyo3-ffi-0.30.1/src/object.rs"
        ),
        Some("pyo3-ffi")
    );
    assert_eq!(
        cargo_dependency(
            "/usr/local/cargo/registry/src/github.com-1ecc6299db9ec823/serde-1.0.0-rc.1/src/lib.rs"
        ),
        Some("serde")
    );
    assert_eq!(
        cargo_dependency("/home/u/.cargo/git/checkouts/pyo3-0a1b2c3d4e5f6789/abc1234/src/lib.rs"),
        Some("pyo3")
    );
    assert_eq!(cargo_dependency("/home/u/project/src/registry.rs"), None);
    assert!(is_library_header(
        "/root/.cargo/registry/src/x/pyo3-0.30.1/src/lib.rs"
    ));
    assert!(is_rust_library_source(
        "/rustc/abc/library/core/src/ptr/mod.rs"
    ));
    for rust in [
        "alloc::vec::from_elem",
        "<alloc::raw_vec::RawVecInner>::try_allocate_in",
        "<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
        "std::panicking::catch_unwind::do_call::<ext::f::{closure#0}, usize>",
        "__rust_alloc",
        "__rdl_alloc",
    ] {
        assert!(names::is_rust_runtime_name(rust), "{rust}");
    }
    for not in [
        "ext::leak_box",
        "<ext::Holder as core::ops::Drop>::drop",
        "alloc_buffer",
    ] {
        assert!(!names::is_rust_runtime_name(not), "{not}");
    }
}

/// A library's header code inlined into another package's object is named
/// after the header's package (NumPy's `PyArray_GETITEM` in pyBigWig).
#[test]
fn a_library_s_inlined_header_names_that_library() {
    let site = "/venv/lib/python3.11/site-packages";
    let obj = format!("{site}/pyBigWig.cpython-311-x86_64-linux-gnu.so");
    let hdr = format!("{site}/numpy/core/include/numpy/ndarraytypes.h");
    assert_eq!(library_name(Some(&obj), Some(&hdr)), "numpy");
    // Its own sources, or none: the object's package.
    let own = "/tmp/build/pyBigWig.c".to_string();
    assert_eq!(library_name(Some(&obj), Some(&own)), "pyBigWig");
    assert_eq!(library_name(Some(&obj), None), "pyBigWig");
    let np = format!("{site}/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so");
    let src = format!("{site}/numpy/core/src/multiarray/shape.c");
    assert_eq!(library_name(Some(&np), Some(&src)), "numpy");
}
