//! Project configuration (`leakgate.toml`, `[tool.leakgate]` in
//! `pyproject.toml`, docs/configuration.md) and `leakgate init`, through the
//! built binary: discovery upwards, `-v` naming the file, the command line
//! winning, `file:line` errors (exit 2), and init writing a configuration,
//! a baseline from a real Valgrind run and a workflow whose `with:` keys are
//! inputs of the repository's `action.yml`, and refusing to overwrite.
//!
//! The policy checks use `leakgate analyze` of a recorded report (no
//! Valgrind); two runs are live: `run -v` in a subdirectory, and init's
//! baseline run followed by the gate run it sets up.

use crate::common;
use crate::common::{code, show, stderr};

use std::path::Path;
use std::process::{Command, Output};

fn leakgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::leakgate_bin())
        .current_dir(dir)
        .args(args)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .expect("run leakgate")
}

/// A project with a recorded report that fails the default gate (a
/// definite leak in the user's code): `DIR/leak_kinds.xml`.
fn project_with_report() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = common::tempdir();
    let dir = tmp.path().join("proj");
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    std::fs::copy(
        common::repo_root().join("fixtures/recorded/leak_kinds.xml"),
        dir.join("leak_kinds.xml"),
    )
    .unwrap();
    (tmp, dir)
}

#[test]
fn pyproject_table_is_found_upwards_and_the_command_line_wins() {
    let (_tmp, dir) = project_with_report();
    let xml = dir.join("leak_kinds.xml");
    let xml = xml.to_str().unwrap();
    let deeper = dir.join("sub/deeper");

    // No configuration: the default gate fails on the definite leak.
    let out = leakgate(&deeper, &["analyze", "-v", xml]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(
        stderr(&out).contains("leakgate: config: none"),
        "{}",
        show(&out)
    );

    // A pyproject.toml without the table is passed over; one above it
    // with the table is used, from two directories down.
    std::fs::write(
        dir.join("sub/pyproject.toml"),
        "[project]\nname = \"inner\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[project]\nname = \"spam\"\nversion = \"1.0\"\n\n[tool.leakgate]\nfail-on = \"none\"\nsarif = \"out/leakgate.sarif\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let out = leakgate(&deeper, &["analyze", "-v", xml]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let named = format!(
        "leakgate: config: {} [tool.leakgate]",
        dir.join("pyproject.toml").display()
    );
    assert!(stderr(&out).contains(&named), "{}", show(&out));
    // Paths are relative to the file, not to the working directory.
    assert!(dir.join("out/leakgate.sarif").is_file());
    assert!(!deeper.join("out").exists());

    // The command line wins over the file.
    let out = leakgate(&deeper, &["analyze", "--fail-on", "definite", xml]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    // --no-config reads none; --config names another file.
    let out = leakgate(&deeper, &["analyze", "--no-config", xml]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    std::fs::write(dir.join("strict.toml"), "fail-on = \"all\"\n").unwrap();
    let strict = dir.join("strict.toml");
    let out = leakgate(
        &deeper,
        &["--config", strict.to_str().unwrap(), "analyze", "-v", xml],
    );
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(
        stderr(&out).contains(&format!("leakgate: config: {}", strict.display())),
        "{}",
        show(&out)
    );

    // A leakgate.toml in the same directory comes before pyproject.toml.
    std::fs::write(dir.join("leakgate.toml"), "fail-on = \"definite\"\n").unwrap();
    let out = leakgate(&deeper, &["analyze", "-v", xml]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(
        stderr(&out).contains(&format!(
            "leakgate: config: {}",
            dir.join("leakgate.toml").display()
        )),
        "{}",
        show(&out)
    );
}

#[test]
fn bad_configurations_are_exit_2_with_file_and_line() {
    let (_tmp, dir) = project_with_report();
    let xml = dir.join("leak_kinds.xml");
    let xml = xml.to_str().unwrap();
    let cases: &[(&str, usize, &[&str])] = &[
        (
            "# comment\nfail_on = \"none\"\n",
            2,
            &["unknown key `fail_on`", "did you mean `fail-on`?"],
        ),
        ("fail-on = \"none\"\nrepeat = \"three\"\n", 2, &["repeat"]),
        ("origins = \"sometimes\"\n", 1, &["origins", "\"yes\""]),
        ("fail-on = \"definitely\"\n", 1, &["fail-on"]),
        ("\n\ntimeout = \"soon\"\n", 3, &["timeout"]),
        ("repeat = 0\n", 1, &["repeat"]),
        ("suppressions = [\"missing.supp\"]\n", 1, &["missing.supp"]),
        ("fail-on = \n", 1, &[]),
    ];
    let file = dir.join("leakgate.toml");
    for (text, line, wanted) in cases {
        std::fs::write(&file, text).unwrap();
        let out = leakgate(&dir, &["analyze", xml]);
        assert_eq!(code(&out), 2, "{text:?}: {}", show(&out));
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{text:?}: one line: {err}");
        let prefix = format!("leakgate: error: {}:{line}: ", file.display());
        assert!(lines[0].starts_with(&prefix), "{text:?}: {err}");
        for w in *wanted {
            assert!(lines[0].contains(w), "{text:?}: {w:?} in {err}");
        }
    }
    // The same in pyproject.toml's table: the line is the file's.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[project]\nname = \"spam\"\n\n[tool.leakgate]\nfail-on = \"none\"\nmax-leaked-byte = 10\n",
    )
    .unwrap();
    let out = leakgate(&dir, &["analyze", xml]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    let prefix = format!(
        "leakgate: error: {}:6: unknown key `max-leaked-byte` (did you mean `max-leaked-bytes`?)",
        dir.join("pyproject.toml").display()
    );
    assert!(stderr(&out).starts_with(&prefix), "{}", show(&out));
    // --no-config gets past it; a missing --config file is exit 2.
    let out = leakgate(&dir, &["analyze", "--no-config", xml]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    let out = leakgate(&dir, &["--config", "nope.toml", "analyze", xml]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", show(&out));
}

#[test]
fn run_v_names_the_configuration() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let exe = common::build_c("c/leak_kinds.c", dir);
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(
        dir.join("pyproject.toml"),
        "[tool.leakgate]\nfail-on = \"none\"\nnum-callers = 30\nkeep-xml = \"kept-xml\"\n",
    )
    .unwrap();
    let out = leakgate(
        &dir.join("tests"),
        &["run", "-v", "--", exe.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", show(&out));
    let named = format!(
        "leakgate: config: {} [tool.leakgate]",
        dir.join("pyproject.toml").display()
    );
    assert!(stderr(&out).contains(&named), "{}", show(&out));
    // The file's valgrind options reach valgrind; its paths are relative
    // to the file, not to the working directory.
    let kept: Vec<_> = std::fs::read_dir(dir.join("kept-xml"))
        .expect("keep-xml = \"kept-xml\" relative to pyproject.toml")
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!kept.is_empty());
    let xml = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(
        xml.contains("<arg>--num-callers=30</arg>"),
        "the file's num-callers reaches valgrind: {}",
        &xml[..xml.len().min(3000)]
    );
}

/// The `with:` keys of the workflow's leakgate step.
fn workflow_with_keys(workflow: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut in_step = false;
    let mut in_with = false;
    let mut with_indent = 0;
    for line in workflow.lines() {
        let t = line.trim_start();
        if t.starts_with('#') {
            continue;
        }
        let indent = line.len() - t.len();
        if t.starts_with("- ") || (in_with && indent <= with_indent) {
            in_step = t.starts_with("- ") && t.contains("leakgate/leakgate@");
            in_with = false;
            continue;
        }
        if in_step && t == "with:" {
            in_with = true;
            with_indent = indent;
            continue;
        }
        if in_with && let Some((k, _)) = t.split_once(':') {
            keys.push(k.trim().to_string());
        }
    }
    keys
}

/// The inputs declared by the repository's `action.yml`.
fn action_inputs() -> Vec<String> {
    let text = std::fs::read_to_string(common::repo_root().join("action.yml"))
        .expect("action.yml at the repository root");
    let mut inputs = Vec::new();
    let mut in_inputs = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            in_inputs = line.starts_with("inputs:");
            continue;
        }
        if in_inputs
            && line.starts_with("  ")
            && !line.starts_with("   ")
            && let Some((k, _)) = line.trim().split_once(':')
        {
            inputs.push(k.to_string());
        }
    }
    inputs
}

#[test]
fn init_writes_config_baseline_and_workflow_and_refuses_to_overwrite() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let dir = tmp.path();
    let exe = common::build_c("c/leak_kinds.c", dir);
    let exe = exe.to_str().unwrap();

    // A target that cannot start: the baseline run fails, nothing is written.
    let out = leakgate(dir, &["init", "--", "./no-such-program"]);
    assert_ne!(code(&out), 0, "{}", show(&out));
    assert!(
        stderr(&out).contains("nothing was written") || code(&out) == 2,
        "{}",
        show(&out)
    );
    for f in [
        "leakgate.toml",
        "leakgate-baseline.json",
        ".github/workflows/leakgate.yml",
    ] {
        assert!(!dir.join(f).exists(), "{f} written by a failed init");
    }

    let out = leakgate(dir, &["init", "--timeout", "10m", "--", exe]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(
        stderr(&out).contains("init: wrote leakgate-baseline.json"),
        "{}",
        show(&out)
    );
    let config = std::fs::read_to_string(dir.join("leakgate.toml")).unwrap();
    assert!(config.contains("baseline = \"leakgate-baseline.json\""));
    assert!(config.contains("timeout = \"10m\""));
    let baseline: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("leakgate-baseline.json")).unwrap())
            .unwrap();
    assert!(
        !baseline["findings"].as_array().unwrap().is_empty(),
        "the leaks are in the baseline: {baseline}"
    );
    assert!(!dir.join("leakgate-baseline.json.init-tmp").exists());

    // The workflow runs the command with the repository's action, with
    // inputs the action declares.
    let workflow = std::fs::read_to_string(dir.join(".github/workflows/leakgate.yml")).unwrap();
    assert!(workflow.contains("uses: actions/checkout@v4"), "{workflow}");
    assert!(
        workflow.contains("run: make"),
        "not a Python project: {workflow}"
    );
    let keys = workflow_with_keys(&workflow);
    assert!(keys.contains(&"command".to_string()), "{workflow}");
    assert!(keys.contains(&"upload-sarif".to_string()), "{workflow}");
    let inputs = action_inputs();
    for k in &keys {
        assert!(
            inputs.contains(k),
            "with: {k} is not an input of action.yml ({inputs:?})"
        );
    }

    // The gate it set up passes: today's leaks are known.
    let out = leakgate(dir, &["run", "--", exe]);
    assert_eq!(code(&out), 0, "{}", show(&out));

    // A second init refuses before writing anything.
    let before = std::fs::read_to_string(dir.join("leakgate.toml")).unwrap();
    let out = leakgate(dir, &["init", "--", exe]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(stderr(&out).contains("already exists"), "{}", show(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("leakgate.toml")).unwrap(),
        before
    );
}

#[test]
fn init_appends_a_table_to_pyproject() {
    let (_tmp, dir) = project_with_report();
    let original = "[project]\nname = \"spam\"\nversion = \"1.0\"\n\n[tool.other]\nx = 1";
    std::fs::write(dir.join("pyproject.toml"), original).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let out = leakgate(
        &dir,
        &[
            "init",
            "--no-baseline",
            "--workflow",
            "none",
            "--fail-on",
            "none",
            "--src-root",
            "src",
        ],
    );
    assert_eq!(code(&out), 0, "{}", show(&out));
    let text = std::fs::read_to_string(dir.join("pyproject.toml")).unwrap();
    assert!(text.starts_with(original), "{text}");
    assert!(text.contains("\n[tool.leakgate]\n"), "{text}");
    assert!(!dir.join("leakgate.toml").exists());
    assert!(!dir.join(".github").exists());
    // It is read back: the gate is off.
    let out = leakgate(&dir, &["analyze", "-v", "leak_kinds.xml"]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(stderr(&out).contains("[tool.leakgate]"), "{}", show(&out));
    // Again: refused, the file unchanged.
    let out = leakgate(&dir, &["init", "--no-baseline", "--workflow", "none"]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(stderr(&out).contains("already has a [tool.leakgate] table"));
    assert_eq!(
        std::fs::read_to_string(dir.join("pyproject.toml")).unwrap(),
        text
    );
    // Without a command, the default (baseline and workflow) is refused.
    let tmp2 = common::tempdir();
    let out = leakgate(tmp2.path(), &["init"]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(stderr(&out).contains("after `--`"), "{}", show(&out));
    assert_eq!(std::fs::read_dir(tmp2.path()).unwrap().count(), 0);
}

/// `init`'s workflow sets up the Python the baseline was recorded with:
/// the version the command's interpreter reports (argv[0] named like
/// Python, or the shebang of the script it names), `3.x` without one.
#[test]
fn init_workflow_sets_up_the_python_of_the_command() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = common::tempdir();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // A stand-in interpreter named like Python that says it is 3.9, and a
    // pytest script that it runs.
    let fake = bin.join("python3.9");
    std::fs::write(&fake, "#!/bin/sh\necho 3.9\n").unwrap();
    let pytest = bin.join("pytest");
    std::fs::write(&pytest, format!("#!{}\nimport pytest\n", fake.display())).unwrap();
    for f in [&fake, &pytest] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let workflow_for = |name: &str, cmd: &[&str]| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        let mut args = vec!["init", "--no-baseline", "--"];
        args.extend_from_slice(cmd);
        let out = leakgate(&dir, &args);
        assert_eq!(code(&out), 0, "{}", show(&out));
        std::fs::read_to_string(dir.join(".github/workflows/leakgate.yml")).unwrap()
    };
    let fake = fake.to_str().unwrap();
    let w = workflow_for("interpreter", &[fake, "-m", "pytest", "tests/"]);
    assert!(w.contains("python-version: \"3.9\""), "{w}");
    let w = workflow_for("script", &[pytest.to_str().unwrap(), "tests/"]);
    assert!(w.contains("python-version: \"3.9\""), "{w}");
    let w = workflow_for("no-python", &["make", "check"]);
    assert!(w.contains("python-version: \"3.x\""), "{w}");
    // A real interpreter: its own version.
    if let Some(py) = common::python() {
        let out = Command::new(&py)
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .unwrap();
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let w = workflow_for("real", &[py.to_str().unwrap(), "-m", "pytest"]);
        assert!(w.contains(&format!("python-version: \"{v}\"")), "{v}: {w}");
    }
}

/// `init --shards 3`: a matrix of 3 jobs running `--shard K/3` into JSON
/// reports, and a job merging them (inputs the action declares; valid
/// YAML when the test Python has pyyaml); refused for a command that is
/// not pytest.
#[test]
fn init_writes_a_sharded_workflow() {
    let tmp = common::tempdir();
    let dir = tmp.path();
    let out = leakgate(
        dir,
        &[
            "init",
            "--no-baseline",
            "--shards",
            "3",
            "--",
            "python3",
            "-m",
            "pytest",
            "tests/",
        ],
    );
    assert_eq!(code(&out), 0, "{}", show(&out));
    let w = std::fs::read_to_string(dir.join(".github/workflows/leakgate.yml")).unwrap();
    for want in [
        "shard: [1, 2, 3]",
        "shard: ${{ matrix.shard }}/3",
        "json: shard-${{ matrix.shard }}.json",
        "fail-on: none",
        "artifact-name: leakgate-shard-${{ matrix.shard }}",
        "needs: leakgate-shard",
        "pattern: leakgate-shard-*",
        "merge: shard-*.json",
        "command: python3 -m pytest tests/",
    ] {
        assert!(w.contains(want), "{want}: {w}");
    }
    let inputs = action_inputs();
    let keys = workflow_with_keys(&w);
    assert!(keys.contains(&"merge".to_string()), "{keys:?}");
    for k in &keys {
        assert!(
            inputs.contains(k),
            "with: {k} is not an input of action.yml"
        );
    }
    if let Some(py) = common::python().filter(|p| common::python_can_import(p, "yaml")) {
        let parsed = Command::new(py)
            .args([
                "-c",
                "import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(sorted(d['jobs']), d['jobs']['leakgate-shard']['strategy']['matrix']['shard'])",
            ])
            .arg(dir.join(".github/workflows/leakgate.yml"))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&parsed.stdout).trim(),
            "['leakgate-shard', 'verdict'] [1, 2, 3]",
            "{}",
            show(&parsed)
        );
    }
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let out = leakgate(
        &other,
        &[
            "init",
            "--no-baseline",
            "--shards",
            "2",
            "--",
            "make",
            "check",
        ],
    );
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(stderr(&out).contains("is not pytest"), "{}", show(&out));
}
