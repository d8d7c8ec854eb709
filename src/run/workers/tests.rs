//! Unit tests of `-n auto`: finding the value that counts, the choice, the
//! collection's summary line.

use super::*;

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn the_last_n_counts() {
    assert_eq!(
        auto_slot(&argv("python -m pytest -n auto tests/")),
        Some(Slot::Next(4))
    );
    assert_eq!(
        auto_slot(&argv("pytest -nauto")),
        Some(Slot::Joined(1, "-n"))
    );
    assert_eq!(
        auto_slot(&argv("pytest --numprocesses=logical")),
        Some(Slot::Joined(1, "--numprocesses="))
    );
    assert_eq!(
        auto_slot(&argv("pytest --numprocesses auto -x")),
        Some(Slot::Next(2))
    );
    // The --origins auto re-run appends `-n 0`: the last wins.
    assert_eq!(auto_slot(&argv("pytest -n auto t.py -n 0")), None);
    assert_eq!(auto_slot(&argv("pytest -n 2")), None);
    assert_eq!(auto_slot(&argv("pytest -- -n auto")), None);
    assert_eq!(auto_slot(&argv("pytest t.py")), None);
}

#[test]
fn the_number_replaces_the_value_in_its_form() {
    let a = argv("pytest -nauto --numprocesses=auto -n auto");
    assert_eq!(
        with_workers(&a, &Slot::Next(4), "2"),
        argv("pytest -nauto --numprocesses=auto -n 2")
    );
    assert_eq!(
        with_workers(&a, &Slot::Joined(2, "--numprocesses="), "0"),
        argv("pytest -nauto --numprocesses=0 -n auto")
    );
    assert_eq!(
        with_workers(&a, &Slot::Joined(1, "-n"), "3"),
        argv("pytest -n3 --numprocesses=auto -n auto")
    );
}

#[test]
fn workers_per_tests_and_cores() {
    assert_eq!(choose(0, 2), 0);
    assert_eq!(choose(7, 2), 0, "the 7-test suite: one worker is no gain");
    assert_eq!(choose(11, 8), 0);
    assert_eq!(choose(12, 2), 2);
    assert_eq!(choose(16, 2), 2);
    assert_eq!(choose(100, 2), 2, "capped by the cores");
    assert_eq!(choose(30, 16), 5);
    assert_eq!(choose(100, 1), 0, "one core: no workers");
}

#[test]
fn collected_counts() {
    assert_eq!(
        count_collected("a.py::t1\na.py::t2\n\n7 tests collected in 0.01s\n"),
        Some(7)
    );
    assert_eq!(
        count_collected("a.py::t\n\n1/7 tests collected (6 deselected) in 0.01s\n"),
        Some(1)
    );
    assert_eq!(
        count_collected("==== 1 test collected in 0.01s ====\n"),
        Some(1)
    );
    assert_eq!(count_collected("\nno tests collected in 0.00s\n"), Some(0));
    assert_eq!(
        count_collected("test_grow.py: 1\ntest_suite.py: 6\n\n"),
        Some(7)
    );
    assert_eq!(count_collected("garbage\n"), None);
}

#[test]
fn runnable_tasks() {
    assert_eq!(runnable("3.29 3.22 2.90 3/120 21111\n"), Some(3));
    assert_eq!(runnable("0.00 0.01 0.05 1/88 7"), Some(1));
    assert_eq!(runnable("garbage"), None);
}

#[test]
fn n_workers_are_forked_unless_xdist_must_keep_them() {
    let f = fork_plan(&argv("python -m pytest -n 2 tests/"), false).unwrap();
    assert_eq!(f.argv, argv("python -m pytest -n 0 tests/"));
    assert_eq!(f.workers, 2);
    assert!(f.note.contains("LEAKGATE_FORK_WORKERS=2"), "{}", f.note);
    let f = fork_plan(&argv("pytest --numprocesses=4 --dist load -x"), false).unwrap();
    assert_eq!(f.argv, argv("pytest --numprocesses=0 --dist load -x"));
    assert_eq!(f.workers, 4);
    let f = fork_plan(&argv("pytest -n1"), false).unwrap();
    assert_eq!((f.argv, f.workers), (argv("pytest -n0"), 1));
    // pytest-xdist keeps its workers: elsewhere, grouped, or asked for.
    for keep in [
        "pytest -n 2 --tx popen//python=python3",
        "pytest -n 2 --dist loadfile",
        "pytest -n 2 --dist=loadscope",
        "pytest --dist each -n 2",
        "pytest -n 2 -f",
        "pytest -n 2 --pdb",
    ] {
        let why = fork_plan(&argv(keep), false).unwrap_err();
        assert!(
            why.as_deref()
                .is_some_and(|w| w.starts_with("-n 2: pytest-xdist's workers")),
            "{keep}: {why:?}"
        );
    }
    let why = fork_plan(&argv("pytest -n 2"), true).unwrap_err();
    assert!(why.unwrap().contains("LEAKGATE_FORK_WORKERS=0"));
    // Nothing to fork: no number (a failed `-n auto`), none, or `-n 0`.
    for none in [
        "pytest -n auto",
        "pytest t.py",
        "pytest -n 0",
        "pytest -- -n 2",
    ] {
        assert_eq!(fork_plan(&argv(none), false), Err(None), "{none}");
    }
}

#[test]
fn without_xdist_every_n_and_forkable_dist_go() {
    assert_eq!(
        strip_xdist(&argv("python -m pytest -n 2 --dist load -x t.py -n0")),
        argv("python -m pytest -x t.py")
    );
    assert_eq!(
        strip_xdist(&argv(
            "pytest --numprocesses=4 --dist=worksteal --dist loadfile -- -n 2"
        )),
        argv("pytest --dist loadfile -- -n 2")
    );
}

#[test]
fn collection_errors_keep_pytest_s_lines() {
    // A usage error: standard error only (`-qq` prints no summary).
    assert_eq!(
        error_lines("\n", "ERROR: file or directory not found: t.py\n\n"),
        "ERROR: file or directory not found: t.py"
    );
    // Errors during collection: the sections, not the collected ids.
    let out = "t.py::test_a\n\n=== ERRORS ===\n___ ERROR collecting u.py ___\nE   ImportError: x\n!!! Interrupted: 1 error during collection !!!\n";
    assert_eq!(
        error_lines(out, ""),
        "=== ERRORS ===\n___ ERROR collecting u.py ___\nE   ImportError: x\n!!! Interrupted: 1 error during collection !!!"
    );
    let long: String = (0..100).map(|i| format!("=== {i}\n")).collect();
    let cut = error_lines(&long, "");
    assert_eq!(cut.lines().count(), 41, "{cut}");
    assert!(cut.contains("… (60 lines more)"), "{cut}");
}
