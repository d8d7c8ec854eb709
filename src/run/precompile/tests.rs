//! Unit tests of the native byte-code compilation: which interpreter a
//! target runs, and the probe's `.pyc` files written beside it.

use super::*;

#[test]
fn interpreters_of_targets() {
    let dir = tempfile::tempdir().unwrap();
    let py = dir.path().join("python3.11");
    assert_eq!(interpreter("python3", &py), Some(py.clone()));
    let script = dir.path().join("pytest");
    std::fs::write(&script, format!("#!{} -u\nimport pytest\n", py.display())).unwrap();
    assert_eq!(interpreter("pytest", &script), Some(py));
    std::fs::write(&script, "#!/bin/sh\nexec true\n").unwrap();
    assert_eq!(interpreter("pytest", &script), None);
    let elf = dir.path().join("a.out");
    std::fs::write(&elf, b"\x7fELF").unwrap();
    assert_eq!(interpreter("./a.out", &elf), None);
}

#[test]
fn the_probe_is_compiled() {
    let Ok(py) = which::which("python3") else {
        eprintln!("SKIP: no python3");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let probe = crate::probe::write_probe(&dir.path().join("probe")).unwrap();
    assert!(compile_dir(&py, &probe));
    let cached = |d: &Path| {
        std::fs::read_dir(d.join("__pycache__"))
            .map(|rd| rd.flatten().count())
            .unwrap_or(0)
    };
    assert!(cached(&probe) >= 1, "sitecustomize's .pyc");
    assert!(
        cached(&probe.join("leakgate_probe")) >= 3,
        "the package's .pyc"
    );
}
