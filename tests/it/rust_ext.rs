//! Integration tests: Rust extensions and a nanobind extension under
//! `leakgate run` and real Valgrind. The PyO3 and raw pyo3-ffi crates of
//! `tests/programs/rust/` are built with cargo (offline, against the
//! registry `cargo fetch --manifest-path tests/programs/rust/Cargo.toml`
//! filled) with legacy and v0 symbol mangling; the nanobind extension of
//! `tests/programs/nanobind/` with setuptools, nanobind's sources compiled
//! in. Each planted leak is the user's at its marker line, with a readable
//! function name; nothing is attributed to std, pyo3 or nanobind; the
//! fixed twins pass; a leak in a local macro is at the macro body's line
//! with a note, or at the call site with `#[collapse_debuginfo(yes)]`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// The crates and their markers: (crate, [(marker, function)]).
const CRATES: [(&str, [(&str, &str); 5]); 2] = [
    (
        "pyo3ext",
        [
            ("@pyo3_box", "leak_box"),
            ("@pyo3_vec", "leak_vec"),
            ("@pyo3_ref", "leak_ref"),
            ("@pyo3_unwind", "leak_unwind"),
            ("@pyo3_macro_body", "leak_macro"),
        ],
    ),
    (
        "ffiext",
        [
            ("@ffi_box", "leak_box"),
            ("@ffi_vec", "leak_vec"),
            ("@ffi_ref", "leak_ref"),
            ("@ffi_unwind", "leak_unwind"),
            ("@ffi_macro_body", "leak_macro"),
        ],
    ),
];

/// One cargo build at a time: the crates' `.so` files are copied out of a
/// shared target directory (`target/tmp/rust-ext-<mangling>`), which keeps
/// pyo3 built between runs.
static BUILD: Mutex<()> = Mutex::new(());

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (p, name) = (e.path(), e.file_name());
        if name == "target" {
            continue;
        }
        if p.is_dir() {
            copy_tree(&p, &to.join(&name));
        } else {
            std::fs::copy(&p, to.join(&name)).unwrap();
        }
    }
}

/// Builds both crates of `tests/programs/rust/` (a copy in `tmp`) with
/// `mangling` (`legacy` or `v0`) and optionally the `collapse` feature;
/// returns the copy's directory, which then holds `pyo3ext.so`,
/// `ffiext.so` and `test_ext.py`. `None` (skipped) without cargo or the
/// fetched crates.
fn build_rust(py: &Path, mangling: &str, collapse: bool, tmp: &Path) -> Option<PathBuf> {
    let dir = tmp.join("rust");
    copy_tree(&common::programs_dir().join("rust"), &dir);
    let target = common::repo_root()
        .join("target/tmp")
        .join(format!("rust-ext-{mangling}"));
    let _one = BUILD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(&dir)
        .args(["build", "--offline", "--locked", "--target-dir"])
        .arg(&target)
        .env("PYO3_PYTHON", py)
        .env(
            "RUSTFLAGS",
            if mangling == "v0" {
                "-C symbol-mangling-version=v0"
            } else {
                ""
            },
        )
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR");
    if collapse {
        cmd.args(["--features", "pyo3ext/collapse,ffiext/collapse"]);
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            common::require_or_skip(&format!("cannot run cargo: {e}"));
            return None;
        }
    };
    let err = common::stderr(&out);
    if !out.status.success() && (err.contains("offline") || err.contains("download")) {
        common::require_or_skip(
            "the Rust test crates' dependencies are not fetched: cargo fetch --manifest-path tests/programs/rust/Cargo.toml",
        );
        return None;
    }
    common::check_success(
        &out,
        &format!("cargo build ({mangling}) in {}", dir.display()),
    );
    for c in ["pyo3ext", "ffiext"] {
        let so = target.join("debug").join(format!("lib{c}.so"));
        std::fs::copy(&so, dir.join(format!("{c}.so"))).unwrap();
    }
    Some(dir)
}

/// `leakgate run --format json -- python test_ext.py MODULE` in `dir`.
fn run(dir: &Path, py: &Path, module: &str, fixed: bool, extra: &[&str]) -> (i32, Value) {
    let json = dir.join(format!("report-{module}-{fixed}.json"));
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env("RUST_BACKTRACE", "0")
        .env("RUST_EXT_FIXED", if fixed { "1" } else { "0" })
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .args(extra)
        .arg("--")
        .arg(py)
        .args(["test_ext.py", module])
        .output()
        .expect("run leakgate");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {}", common::show(&out)));
    common::assert_conserved(&r);
    (common::code(&out), r)
}

fn user(r: &Value) -> Vec<&Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect()
}

fn func(f: &Value) -> &str {
    f["location"]["function"].as_str().unwrap_or("")
}

/// No user finding is decided by, or named after, Rust's standard library,
/// a Cargo dependency or nanobind; no function name is mangled or carries
/// a legacy hash.
fn nothing_is_std_or_a_dependency(r: &Value) {
    let hash = regex::Regex::new(r"::h[0-9a-f]{16}\b").unwrap();
    for f in user(r) {
        let (name, path) = (func(f), f["location"]["path"].as_str().unwrap_or(""));
        for bad in [
            "std::",
            "core::",
            "alloc::",
            "pyo3::",
            "pyo3_ffi::",
            "nanobind::",
        ] {
            assert!(!name.starts_with(bad), "{name} is not the user's: {f:#}");
        }
        assert!(
            !path.contains("/rustc/")
                && !path.contains("/registry/src/")
                && !path.contains("site-packages/nanobind/"),
            "{path}: {f:#}"
        );
    }
    for f in r["findings"].as_array().unwrap() {
        for fr in f["stack"].as_array().unwrap() {
            let name = fr["function"].as_str().unwrap_or("");
            assert!(
                !hash.is_match(name) && !name.starts_with("_ZN") && !name.starts_with("_R"),
                "not demangled: {name}"
            );
        }
    }
}

/// The leaky run of `module`: every planted leak is a definite leak of the
/// user's at its marker, in `<crate>::<function>`, in the crate's lib.rs;
/// the macro's has the note; any other user finding is the raw crate's
/// `PyInit_*` (its `PyModuleDef`, `Box::into_raw`'d): made once at import,
/// not gated.
fn check_leaky(dir: &Path, py: &Path, module: &str, markers: &[(&str, &str)]) {
    let (code, r) = run(dir, py, module, false, &[]);
    assert_eq!(code, 1, "{r:#}");
    nothing_is_std_or_a_dependency(&r);
    let src = dir.join(module).join("src/lib.rs");
    let found = user(&r);
    for (marker, function) in markers {
        let line = u64::from(common::marker_line(&src, marker));
        let f = found
            .iter()
            .find(|f| f["location"]["line"] == line)
            .unwrap_or_else(|| panic!("{module}: no finding at {marker} (line {line}): {r:#}"));
        assert_eq!(f["kind"], "Leak_DefinitelyLost", "{f:#}");
        assert_eq!(f["location"]["file"], "lib.rs", "{f:#}");
        assert!(
            f["location"]["path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("{module}/src/lib.rs")),
            "{f:#}"
        );
        let want = format!("{module}::{function}");
        if *function == "leak_unwind" {
            // The closure given to catch_unwind: `{{closure}}` (legacy), `{closure#0}` (v0).
            assert!(func(f).starts_with(&format!("{want}::{{")), "{f:#}");
            assert!(func(f).contains("closure"), "{f:#}");
        } else {
            assert_eq!(func(f), want, "{f:#}");
        }
        let note = f["location_note"].as_str();
        if *function == "leak_macro" {
            let note = note.unwrap_or_else(|| panic!("no macro note: {f:#}"));
            assert!(note.contains("macro `scratch!`"), "{note}");
            assert!(note.contains("#[collapse_debuginfo(yes)]"), "{note}");
        } else {
            assert!(note.is_none(), "{f:#}");
        }
        assert!(f["reason"].is_null(), "decided on the user's frame: {f:#}");
    }
    // Anything else of the user's: only the raw crate's PyInit (its
    // PyModuleDef), made once at import and not gated.
    for f in &found {
        let at_marker = markers
            .iter()
            .any(|(m, _)| f["location"]["line"] == u64::from(common::marker_line(&src, m)));
        if at_marker {
            assert!(f["at_import"].is_null(), "{f:#}");
            continue;
        }
        assert!(func(f).starts_with("PyInit_"), "unexpected: {f:#}");
        assert_eq!(f["at_import"], true, "{f:#}");
        assert_eq!(f["gated"], false, "{f:#}");
    }
}

/// The fixed run passes: no user finding at any marker and, but for the
/// raw crate's PyInit (made once at import), none of a gated kind.
fn check_fixed(dir: &Path, py: &Path, module: &str) {
    let (code, r) = run(dir, py, module, true, &[]);
    nothing_is_std_or_a_dependency(&r);
    let gated: Vec<_> = user(&r)
        .into_iter()
        .filter(|f| f["kind"] != "Leak_PossiblyLost" && f["kind"] != "Leak_StillReachable")
        .filter(|f| !func(f).starts_with("PyInit_"))
        .collect();
    assert!(gated.is_empty(), "{module} fixed: {gated:#?}");
    assert_eq!(code, 0, "{r:#}");
}

fn rust_ext(mangling: &str) {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let Some(dir) = build_rust(&py, mangling, false, tmp.path()) else {
        return;
    };
    for (module, markers) in &CRATES {
        check_leaky(&dir, &py, module, markers);
        check_fixed(&dir, &py, module);
    }
}

#[test]
fn rust_extension_leaks_are_the_users_legacy_mangling() {
    rust_ext("legacy");
}

#[test]
fn rust_extension_leaks_are_the_users_v0_mangling() {
    rust_ext("v0");
}

/// With `#[collapse_debuginfo(yes)]` on the macro, the leak is at the
/// macro's call site, with no note.
#[test]
fn collapse_debuginfo_puts_a_macro_leak_at_its_call_site() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let Some(dir) = build_rust(&py, "legacy", true, tmp.path()) else {
        return;
    };
    for (module, marker) in [
        ("pyo3ext", "@pyo3_macro_call"),
        ("ffiext", "@ffi_macro_call"),
    ] {
        let (code, r) = run(&dir, &py, module, false, &[]);
        assert_eq!(code, 1);
        let line = u64::from(common::marker_line(
            &dir.join(module).join("src/lib.rs"),
            marker,
        ));
        let f = user(&r)
            .into_iter()
            .find(|f| func(f) == format!("{module}::leak_macro"))
            .unwrap_or_else(|| panic!("{module}: no macro leak: {r:#}"));
        assert_eq!(f["location"]["line"], line, "{f:#}");
        assert!(f["location_note"].is_null(), "{f:#}");
    }
}

/// A nanobind extension: its two leaks are the user's at their lines, the
/// fixed twins pass, and nanobind's own blocks (made while the module is
/// imported, in nanobind's sources compiled into the extension) are
/// third-party noise.
#[test]
fn nanobind_extension_leaks_are_the_users_and_nanobind_is_not() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    if !common::python_can_import(&py, "nanobind")
        && common::require_or_skip(&format!("{} cannot import nanobind", py.display()))
    {
        return;
    }
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "nanobind", tmp.path());
    std::fs::copy(
        common::programs_dir().join("rust/test_ext.py"),
        dir.join("test_ext.py"),
    )
    .unwrap();
    let src = dir.join("nbext.cpp");
    // All leak kinds: nanobind's internals are still reachable at exit.
    let (code, r) = run(&dir, &py, "nbext", false, &["--show-leak-kinds", "all"]);
    assert_eq!(code, 1, "{r:#}");
    nothing_is_std_or_a_dependency(&r);
    let mut found: Vec<(String, u64, String)> = user(&r)
        .into_iter()
        .filter(|f| f["kind"] != "Leak_StillReachable" && f["kind"] != "Leak_PossiblyLost")
        .map(|f| {
            let l = f["location"]["line"].as_u64().unwrap_or(0);
            (
                f["kind"].as_str().unwrap().to_string(),
                l,
                func(f).to_string(),
            )
        })
        .collect();
    found.sort();
    let line = |m| u64::from(common::marker_line(&src, m));
    let d = "Leak_DefinitelyLost".to_string();
    let mut want = vec![
        (d.clone(), line("@nb_new"), "leak_new(bool)".to_string()),
        (d, line("@nb_widget"), "leak_widget(bool)".to_string()),
    ];
    want.sort();
    assert_eq!(found, want, "{r:#}");
    let nanobind: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["location"]["path"]
                .as_str()
                .is_some_and(|p| p.contains("site-packages/nanobind/"))
        })
        .collect();
    assert!(
        !nanobind.is_empty(),
        "nanobind's own blocks were expected: {r:#}"
    );
    for f in nanobind {
        assert_eq!(f["category"], "noise", "{f:#}");
        assert_eq!(f["source"], "third_party", "{f:#}");
    }
    let (code, r) = run(&dir, &py, "nbext", true, &[]);
    assert_eq!(code, 0, "{r:#}");
}
