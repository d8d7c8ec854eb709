//! Issue 42, class 1: an extension whose build deleted its generated source
//! (an out-of-tree PEP 517 build: `tests/programs/outoftree/`) is the
//! user's when pip installed it from the checkout leakgate runs in. Its
//! debug info names a `_leaky.c` in a temporary directory that is gone;
//! pip's `direct_url.json` and `RECORD` say where it came from.

use crate::common;
use crate::real_packages::{SETUPTOOLS, make_venv, pip};

use std::process::Command;

use serde_json::Value;

#[test]
fn an_extension_built_out_of_tree_is_yours_from_its_checkout() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let t = tmp.path();
    let bin = match make_venv(&py, &t.join("venv"), &[&SETUPTOOLS]) {
        Ok(b) => b,
        Err(e) => {
            common::require_or_skip(&format!("no setuptools wheel: {e}"));
            return;
        }
    };
    let checkout = t.join("ootleak");
    let out = Command::new("cp")
        .arg("-r")
        .arg(common::programs_dir().join("outoftree"))
        .arg(&checkout)
        .output()
        .expect("cp");
    common::check_success(&out, "cp -r outoftree");
    let out = common::run_capture(
        pip(&bin.join("python")).current_dir(&checkout).args([
            "install",
            "-q",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            ".",
        ]),
        "pip install",
    );
    common::check_success(&out, "pip install ootleak");
    assert!(
        !checkout.join("src/ootleak/_leaky.c").exists(),
        "the generated source must be gone"
    );
    let line = common::marker_line(&checkout.join("src/ootleak/_leaky.c.in"), "@oot_leak");
    let json = t.join("report.json");
    let out = Command::new(common::leakgate_bin())
        .current_dir(&checkout)
        .env_remove("PYTHONMALLOC")
        .env_remove("PYTHONPATH")
        .args(["run", "--quiet", "--format", "json", "-o"])
        .arg(&json)
        .arg("--")
        .arg(bin.join("python"))
        .args(["-c", "import ootleak._leaky as m; m.leak()"])
        .output()
        .expect("leakgate run");
    assert_eq!(common::code(&out), 1, "{}", common::show(&out));
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let user: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user")
        .collect();
    assert_eq!(user.len(), 1, "{r:#}");
    let f = user[0];
    assert_eq!(f["kind"], "Leak_DefinitelyLost", "{f:#}");
    assert_eq!(f["bytes"], 48, "{f:#}");
    let at = f["location"].to_string();
    assert!(
        at.contains("_leaky.c") && at.contains(&format!("{line}")),
        "expected _leaky.c:{line}: {f:#}"
    );
    // The finding says which evidence decided, and how to see the lines.
    let note = f["location_note"].as_str().unwrap_or_default();
    assert!(
        note.contains("pip installed") && note.contains("direct_url.json"),
        "{f:#}"
    );
}
