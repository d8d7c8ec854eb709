//! Integration tests of leaks of objects the garbage collector tracks
//! (`tests/programs/gcleaks/`): an extension that leaks lists by reference
//! (`PyTuple_Pack` takes its own references; the caller never releases its
//! own). CPython's collector still links the lists, so Memcheck calls them
//! still reachable; the probe's exit hook (`python/leakgate_probe/gcleaks.c`,
//! armed in every Python process by leakgate's `sitecustomize`) takes them
//! out of its lists at the end of finalization, and the leak is found at
//! its line from a plain script and per test. Objects held on purpose (a C
//! static cache, a list in a malloc'd C struct, module state) never become
//! findings, and `LEAKGATE_GC=keep` shows what the hook is for.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn ext_or_skip(tmp: &Path) -> Option<(PathBuf, PathBuf)> {
    if !common::valgrind_or_skip() {
        return None;
    }
    let py = common::python_or_skip()?;
    let dir = common::build_python_ext_with(&py, "gcleaks", tmp);
    Some((py, dir))
}

/// `leakgate run --format json -- python ARGS` in `dir`.
fn run(py: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let json = dir.join("report.json");
    let _ = std::fs::remove_file(&json);
    let mut cmd = Command::new(common::leakgate_bin());
    cmd.current_dir(dir)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTEST_PLUGINS")
        .env_remove("PYTHONPATH")
        .env_remove("LEAKGATE_GC")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args(["run", "--format", "json", "--output"])
        .arg(&json)
        .arg("--")
        .arg(py)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run_capture(&mut cmd, "leakgate run");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{}", common::show(&out)));
    common::assert_conserved(&r);
    (common::code(&out), r, common::show(&out))
}

/// The user's findings as (kind, line, blocks, tests).
fn user(r: &Value) -> Vec<(String, u64, u64, Vec<String>)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .map(|f| {
            let tests = f["tests"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|t| t["test"].as_str().unwrap_or("").to_string())
                        .collect()
                })
                .unwrap_or_default();
            (
                f["kind"].as_str().unwrap_or("").to_string(),
                f["location"]["line"].as_u64().unwrap_or(0),
                f["blocks"].as_u64().unwrap_or(0),
                tests,
            )
        })
        .collect()
}

/// The exit hook's `<clientmsg>` of the target's process, as JSON.
fn gc_message(r: &Value) -> Value {
    let msgs: Vec<String> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["client_messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| Some(m.as_str()?.trim().strip_prefix("leakgate-gc ")?.to_string()))
        .collect();
    assert_eq!(msgs.len(), 1, "one leakgate-gc message: {msgs:?}");
    serde_json::from_str(&msgs[0]).expect("the hook's message is JSON")
}

fn lines(src: &Path) -> (u64, u64, u64) {
    let l = |m| u64::from(common::marker_line(src, m));
    (l("@gc_list"), l("@gc_empty"), l("@gc_float"))
}

#[test]
fn leaked_lists_are_lost_at_their_lines_from_a_plain_script() {
    let tmp = common::tempdir();
    let Some((py, dir)) = ext_or_skip(tmp.path()) else {
        return;
    };
    let (list, empty, float) = lines(&dir.join("gcext.c"));

    let (code, r, shown) = run(&py, &dir, &["leaky.py"], &[]);
    assert_eq!(code, 1, "the leaky build fails:\n{shown}");
    let u = user(&r);
    let lost = |kind: &str, line: u64| {
        u.iter()
            .filter(|f| f.0 == kind && f.1 == line)
            .map(|f| f.2)
            .sum::<u64>()
    };
    // Five calls; the first list of the run may come from CPython's free
    // list (a plain script keeps it: see docs/attribution.md) and is then
    // the interpreter's, so four or five.
    assert!(
        (4..=5).contains(&lost("Leak_DefinitelyLost", list)),
        "{u:?}"
    );
    assert!(
        (4..=5).contains(&lost("Leak_DefinitelyLost", empty)),
        "{u:?}"
    );
    assert!(lost("Leak_IndirectlyLost", float) >= 12, "{u:?}");
    assert!(
        u.iter().all(|f| [list, empty, float].contains(&f.1)),
        "nothing else is the user's: {u:?}"
    );
    let m = gc_message(&r);
    assert!(m["out"].as_u64().unwrap() >= 10, "{m}");
    assert_eq!(m["complete"], true, "{m}");

    // The fixed function, and the keepers: nothing of the user's.
    let (code, r, shown) = run(&py, &dir, &["leaky.py", "--fixed"], &[]);
    assert_eq!(code, 0, "the fixed build passes:\n{shown}");
    assert!(user(&r).is_empty(), "{:?}", user(&r));
    assert_eq!(gc_message(&r)["out"], 0);

    // Without the hook the leak is still reachable and passes.
    let (code, r, shown) = run(&py, &dir, &["leaky.py"], &[("LEAKGATE_GC", "keep")]);
    assert_eq!(code, 0, "LEAKGATE_GC=keep hides the leak:\n{shown}");
    assert!(
        !user(&r)
            .iter()
            .any(|f| f.0 == "Leak_DefinitelyLost" || f.0 == "Leak_IndirectlyLost"),
        "{:?}",
        user(&r)
    );
}

#[test]
fn leaked_lists_are_tied_to_the_test_that_leaked_them() {
    let tmp = common::tempdir();
    let Some((py, dir)) = ext_or_skip(tmp.path()) else {
        return;
    };
    let has_pytest = Command::new(&py)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest {
        common::require_or_skip(&format!("{} cannot import pytest", py.display()));
        return;
    }
    let (list, empty, float) = lines(&dir.join("gcext.c"));
    let args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_gc.py"];
    let (code, r, shown) = run(&py, &dir, &args, &[]);
    assert_eq!(code, 1, "{shown}");
    let u = user(&r);
    let leaky = "test_gc.py::test_pack_leaky".to_string();
    // With checkpoints the free lists are off: all three calls are found.
    for (kind, line, blocks) in [
        ("Leak_DefinitelyLost", list, 3),
        ("Leak_DefinitelyLost", empty, 3),
        ("Leak_IndirectlyLost", float, 9),
    ] {
        let f = u
            .iter()
            .find(|f| f.0 == kind && f.1 == line)
            .unwrap_or_else(|| panic!("{kind} at line {line}: {u:?}"));
        assert_eq!(f.2, blocks, "{f:?}");
        assert_eq!(f.3, vec![leaky.clone()], "{f:?}");
    }
    // The correct tests give no gated finding (objects a C struct holds
    // through an interior pointer may be possibly lost, as without the
    // hook: not gated), and the fixed test nothing at all.
    assert!(
        u.iter()
            .filter(|f| f.0 == "Leak_DefinitelyLost" || f.0 == "Leak_IndirectlyLost")
            .all(|f| [list, empty, float].contains(&f.1) && f.3 == vec![leaky.clone()]),
        "{u:?}"
    );
    assert!(
        !u.iter()
            .any(|f| f.3.iter().any(|t| t.ends_with("test_pack_fixed"))),
        "{u:?}"
    );
    let gated: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["gated"] == true)
        .collect();
    // Two bugs, two gated leaks: each list's item array and floats are
    // indirectly lost under it, its parts (`indirect_of`), not gated again.
    assert_eq!(gated.len(), 2, "{gated:?}");
    assert!(
        gated.iter().all(|f| f["kind"] == "Leak_DefinitelyLost"),
        "{gated:?}"
    );
    let parts: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["kind"] == "Leak_IndirectlyLost")
        .collect();
    assert!(
        !parts.is_empty() && parts.iter().all(|f| f.get("indirect_of").is_some()),
        "{parts:?}"
    );
}
