//! The GitHub Action (`action.yml`, `action/*.sh`) run here the way a runner
//! runs it: the scripts with `INPUT_*` variables (the action's defaults from
//! `action.yml`, then the test's inputs) and `GITHUB_OUTPUT`,
//! `GITHUB_STEP_SUMMARY`, `GITHUB_WORKSPACE`, `RUNNER_TEMP` pointing into a
//! temporary directory.
//!
//! `action.yml` is checked against the scripts (every input is used, every
//! `INPUT_*` the scripts read is declared and passed, every output is
//! written, no input is expanded inside a script). The command line
//! `run.sh` builds is checked with a stand-in `leakgate` that records its
//! arguments; three live runs of a leaky C program under Valgrind check the
//! verdict, the outputs, the SARIF, the summary, `fail-job: false` and a
//! baseline. `install.sh` is checked with `install: none` and with a wheel
//! file (made here, holding the built binary); what needs a network
//! (`pip download`, `cargo install`, `apt-get`) is not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use crate::common::show;

fn action_yml() -> String {
    std::fs::read_to_string(common::repo_root().join("action.yml")).expect("read action.yml")
}

fn script(name: &str) -> PathBuf {
    common::repo_root().join("action").join(name)
}

/// The text of every script of the action.
fn scripts_text() -> String {
    ["lib.sh", "install.sh", "run.sh"]
        .iter()
        .map(|s| std::fs::read_to_string(script(s)).expect("read script"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The environment variable a runner would name for input `name`, as the
/// action's steps pass it (`working-directory` -> `INPUT_WORKING_DIRECTORY`).
fn input_var(name: &str) -> String {
    format!("INPUT_{}", name.to_uppercase().replace('-', "_"))
}

/// A top-level block of `action.yml` (`inputs`, `outputs`): each key at
/// two spaces of indentation, with its `default:` (unquoted) when it has one.
fn yaml_block(yml: &str, block: &str) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    let mut current: Option<String> = None;
    for line in yml.lines() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            inside = line.trim_end() == format!("{block}:");
            current = None;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(key) = line.strip_prefix("  ")
            && !key.starts_with(' ')
        {
            let key = key.trim_end().trim_end_matches(':').to_string();
            out.insert(key.clone(), None);
            current = Some(key);
        } else if let Some(v) = line.trim_start().strip_prefix("default:")
            && let Some(k) = &current
        {
            let v = v.trim();
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or(v);
            out.insert(k.clone(), Some(v.to_string()));
        }
    }
    out
}

/// The inputs of `action.yml` and their defaults ("" when none).
fn defaults() -> BTreeMap<String, String> {
    yaml_block(&action_yml(), "inputs")
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect()
}

/// A runner's directories: the workspace, `RUNNER_TEMP`, the output and
/// summary files.
struct Gh {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    tmp: PathBuf,
    output: PathBuf,
    summary: PathBuf,
    path: PathBuf,
}

impl Gh {
    fn new() -> Gh {
        let dir = common::tempdir();
        let ws = dir.path().join("workspace");
        let tmp = dir.path().join("runner-temp");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let output = dir.path().join("github-output");
        let summary = dir.path().join("step-summary");
        let path = dir.path().join("github-path");
        for f in [&output, &summary, &path] {
            std::fs::write(f, "").unwrap();
        }
        Gh {
            ws,
            tmp,
            output,
            summary,
            path,
            _dir: dir,
        }
    }

    /// `bash action/SCRIPT` in the workspace with the action's defaults
    /// overlaid by `inputs`, `bin_dir` first on PATH.
    fn run(&self, script_name: &str, inputs: &[(&str, &str)], bin_dir: &Path) -> Output {
        let mut values = defaults();
        for (k, v) in inputs {
            assert!(values.contains_key(*k), "{k} is not an input of action.yml");
            values.insert(k.to_string(), v.to_string());
        }
        let mut cmd = Command::new("bash");
        cmd.arg(script(script_name)).current_dir(&self.ws);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().into_owned();
            if k.starts_with("INPUT_")
                || k.starts_with("GITHUB_")
                || k.starts_with("RUNNER_")
                || k == "LEAKGATE"
            {
                cmd.env_remove(k);
            }
        }
        let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .unwrap();
        cmd.env("PATH", path)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &self.output)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_PATH", &self.path)
            .env("GITHUB_WORKSPACE", &self.ws)
            .env("RUNNER_TEMP", &self.tmp)
            .env("ACTION_PATH", common::repo_root());
        for (k, v) in &values {
            cmd.env(input_var(k), v);
        }
        // The outputs of this run only.
        std::fs::write(&self.output, "").unwrap();
        cmd.output().expect("run bash")
    }

    /// The step outputs (`key=value` and `key<<DELIM` ... `DELIM`).
    fn outputs(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(&self.output).unwrap();
        let mut out = BTreeMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some((k, delim)) = line.split_once("<<") {
                let mut v = Vec::new();
                for l in lines.by_ref() {
                    if l == delim {
                        break;
                    }
                    v.push(l);
                }
                out.insert(k.to_string(), v.join("\n"));
            } else if let Some((k, v)) = line.split_once('=') {
                out.insert(k.to_string(), v.to_string());
            }
        }
        out
    }
}

/// The directory of the `leakgate` binary under test.
fn leakgate_dir() -> PathBuf {
    common::leakgate_bin().parent().unwrap().to_path_buf()
}

// ------------------------------------------------------------ action.yml

#[test]
fn every_input_is_used_and_every_input_variable_declared() {
    let yml = action_yml();
    let inputs = yaml_block(&yml, "inputs");
    let outputs = yaml_block(&yml, "outputs");
    let scripts = scripts_text();
    assert!(
        inputs.contains_key("command") && inputs.len() > 20,
        "{inputs:?}"
    );
    assert!(
        yml.contains("\n  using: composite\n") && yml.contains("\nbranding:\n"),
        "a composite action with branding"
    );

    // What the steps pass: `INPUT_X: ${{ inputs.x }}`, consistently named.
    let re = regex::Regex::new(r"(?m)^\s+(INPUT_[A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}$").unwrap();
    let mut passed = BTreeMap::new();
    for c in re.captures_iter(&yml) {
        assert_eq!(c[1], input_var(&c[2]), "env name for input {}", &c[2]);
        assert!(inputs.contains_key(&c[2]), "{} is not declared", &c[2]);
        passed.insert(c[2].to_string(), c[1].to_string());
    }
    let read: std::collections::BTreeSet<String> = regex::Regex::new(r"INPUT_[A-Z_]+")
        .unwrap()
        .find_iter(&scripts)
        .map(|m| m.as_str().to_string())
        .collect();
    for var in &read {
        assert!(
            passed.values().any(|v| v == var),
            "the scripts read {var}, which no step of action.yml sets"
        );
    }
    // Every input: passed to a script that reads it, or used by the YAML
    // itself (the upload steps).
    let yaml_uses = |name: &str| {
        yml.lines()
            .filter(|l| !l.trim_start().starts_with("INPUT_"))
            .any(|l| {
                l.contains(&format!("inputs.{name} ")) || l.contains(&format!("inputs.{name}}}"))
            })
    };
    for name in inputs.keys() {
        match passed.get(name) {
            Some(var) => assert!(read.contains(var), "{var} is passed but no script reads it"),
            None => assert!(yaml_uses(name), "input {name} is used nowhere"),
        }
    }
    // No input is expanded inside a script (script injection): only in env.
    for line in yml.lines().filter(|l| l.trim_start().starts_with("run:")) {
        assert!(!line.contains("${{"), "expression in a run line: {line}");
    }
    // Every output of the action comes from a step output a script writes.
    let written: std::collections::BTreeSet<String> = regex::Regex::new(r"set_output ([a-z-]+) ")
        .unwrap()
        .captures_iter(&scripts)
        .map(|c| c[1].to_string())
        .collect();
    let value = regex::Regex::new(r"steps\.(run|install)\.outputs\.([a-z-]+)").unwrap();
    for c in value.captures_iter(&yml) {
        assert!(written.contains(&c[2]), "output {} is never written", &c[2]);
    }
    for o in [
        "exit-code",
        "verdict",
        "user-findings",
        "sarif",
        "html",
        "junit",
        "json",
    ] {
        assert!(outputs.contains_key(o), "action.yml has no output {o}");
    }
    // The line parser agrees with a real YAML parser (PyYAML; CI installs
    // it into the test venv, elsewhere the check skips).
    let d = defaults();
    let with_yaml = [common::python(), common::find_on_path("python3".as_ref())]
        .into_iter()
        .flatten()
        .find(|py| {
            Command::new(py)
                .args(["-c", "import yaml"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    match with_yaml {
        Some(py) => {
            let out = Command::new(py)
                .args([
                    "-c",
                    "import json, sys, yaml\n\
                     d = yaml.safe_load(open(sys.argv[1]))\n\
                     print(json.dumps({k: v.get('default', '') for k, v in d['inputs'].items()}))",
                ])
                .arg(common::repo_root().join("action.yml"))
                .output()
                .unwrap();
            common::check_success(&out, "PyYAML reads action.yml");
            let parsed: BTreeMap<String, serde_json::Value> =
                serde_json::from_slice(&out.stdout).unwrap();
            let parsed: BTreeMap<String, String> = parsed
                .into_iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                .collect();
            assert_eq!(parsed, d, "PyYAML and the line parser");
        }
        None => {
            common::require_or_skip(
                "PyYAML in the test Python (action.yml checked by the line parser only)",
            );
        }
    }
    // The defaults the scripts assume for an unset variable are the action's.
    assert_eq!(d["sarif"], "leakgate.sarif");
    assert_eq!(d["html"], "leakgate-report.html");
    for (name, default) in [
        ("summary", "true"),
        ("fail-job", "true"),
        ("install", "auto"),
        ("install-valgrind", "true"),
        ("annotations", "auto"),
    ] {
        assert_eq!(d[name], default, "default of {name}");
        assert!(
            scripts.contains(&format!("${{{}:-{default}}}", input_var(name)))
                || scripts.contains(&format!("\"${{{}:-}}\" {default}", input_var(name))),
            "the scripts' default for {name} is not {default}"
        );
    }
}

/// The action's scripts and dist/'s pass shellcheck (CI installs it;
/// elsewhere the test skips).
#[test]
fn scripts_pass_shellcheck() {
    let Some(sc) = common::find_on_path("shellcheck".as_ref()) else {
        common::require_or_skip("shellcheck on PATH (apt-get install shellcheck)");
        return;
    };
    let out = Command::new(sc)
        .current_dir(common::repo_root())
        .args([
            "-x",
            "action/lib.sh",
            "action/install.sh",
            "action/run.sh",
            "dist/build-wheels.sh",
            "dist/debian-aarch64-std.sh",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

// ------------------------------------------------- run.sh's command line

/// A stand-in `leakgate` that writes its arguments (one a line, after the
/// `GITHUB_STEP_SUMMARY` it sees) to `args` in its directory and exits with
/// the code in the file `exit` there; `leakgate report` exits 0.
fn fake_leakgate(dir: &Path, exit: i32) -> PathBuf {
    let bin = dir.join("fake-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("leakgate");
    std::fs::write(
        &exe,
        format!(
            "#!/usr/bin/env bash\n\
             [ \"$1\" = report ] && exit 0\n\
             {{ echo \"GITHUB_STEP_SUMMARY=${{GITHUB_STEP_SUMMARY-unset}}\"; printf '%s\\n' \"$@\"; }} > '{}'\n\
             echo 'leakgate: error: stand-in' >&2\n\
             exit {exit}\n",
            bin.join("args").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn fake_args(bin: &Path) -> Vec<String> {
    std::fs::read_to_string(bin.join("args"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn run_passes_an_option_only_for_an_input_that_is_set() {
    let gh = Gh::new();
    let bin = fake_leakgate(&gh.tmp, 3);
    let ws = gh.ws.display().to_string();
    let tmp = gh.tmp.display().to_string();

    // The defaults: the report files, nothing that the configuration could set.
    let out = gh.run(
        "run.sh",
        &[("command", "\n python -m pytest 'tests/t.py::x[a b]'\n")],
        &bin,
    );
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let summary = gh.summary.display().to_string();
    assert_eq!(
        fake_args(&bin),
        [
            format!("GITHUB_STEP_SUMMARY={summary}"),
            "run".into(),
            format!("--sarif={ws}/leakgate.sarif"),
            format!("--html={ws}/leakgate-report.html"),
            "--format=json".into(),
            format!("--output={tmp}/leakgate-report.json"),
            "--".into(),
            "python".into(),
            "-m".into(),
            "pytest".into(),
            "tests/t.py::x[a b]".into(),
        ]
    );
    let o = gh.outputs();
    assert_eq!(o["exit-code"], "3");
    assert_eq!(o["verdict"], "incomplete");
    assert_eq!(o["sarif"], "", "no file was written");
    assert_eq!(o["files"], "");
    let s = std::fs::read_to_string(&gh.summary).unwrap();
    assert!(
        s.contains("leakgate: exit 3") && s.contains("stand-in"),
        "{s}"
    );

    // Every input set.
    std::fs::create_dir_all(gh.ws.join("sub")).unwrap();
    let out = gh.run(
        "run.sh",
        &[
            ("command", "make check && ./t | tee log"),
            ("working-directory", "sub"),
            ("fail-on", "definite,errors"),
            ("max-leaked-bytes", "100"),
            ("baseline", "base.json"),
            ("src-roots", "src\n'my lib'"),
            ("user-objects", "*.so libx*"),
            ("suppressions", "a.supp"),
            ("per-test", "false"),
            ("repeat", "3"),
            ("origins", "auto"),
            ("track-fds", "true"),
            ("timeout", "30m"),
            ("valgrind-args", "--trace-children-skip=*/git,*/sh"),
            ("config", "none"),
            ("extra-args", "--write-baseline new.json -v"),
            ("sarif", ""),
            ("html", "/abs/r.html"),
            ("junit", "j.xml"),
            ("json", "r.json"),
            ("annotations", "false"),
            ("summary", "false"),
            ("fail-job", "false"),
        ],
        &bin,
    );
    assert_eq!(out.status.code(), Some(0), "fail-job false: {}", show(&out));
    assert_eq!(
        fake_args(&bin),
        [
            "GITHUB_STEP_SUMMARY=unset",
            "run",
            "--no-config",
            "--fail-on=definite,errors",
            "--max-leaked-bytes=100",
            "--baseline=base.json",
            "--repeat=3",
            "--timeout=30m",
            "--origins=auto",
            "--no-per-test",
            "--track-fds",
            "--src-root=src",
            "--src-root=my lib",
            "--user-object=*.so",
            "--user-object=libx*",
            "--suppressions=a.supp",
            "--valgrind-arg=--trace-children-skip=*/git,*/sh",
            "--annotations=never",
            "--html=/abs/r.html",
            &format!("--junit={ws}/sub/j.xml"),
            "--format=json",
            &format!("--output={ws}/sub/r.json"),
            "--write-baseline",
            "new.json",
            "-v",
            "--",
            "bash",
            "--noprofile",
            "--norc",
            "-eo",
            "pipefail",
            "-c",
            "make check && ./t | tee log",
        ]
    );
    assert_eq!(gh.outputs()["exit-code"], "3");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("::warning"),
        "{}",
        show(&out)
    );

    // An input that makes no sense: exit 2 before leakgate runs, outputs written.
    std::fs::remove_file(bin.join("args")).unwrap();
    for (input, value) in [
        ("per-test", "sometimes"),
        ("command", "  "),
        ("command", "python -c 'unterminated"),
        ("working-directory", "no/such/dir"),
        ("annotations", "loud"),
    ] {
        let out = gh.run("run.sh", &[("command", "true"), (input, value)], &bin);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{input}={value:?}: {}",
            show(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .contains(&format!("::error title=leakgate action::input {input}")),
            "{}",
            show(&out)
        );
        assert_eq!(gh.outputs()["exit-code"], "2");
        assert!(
            !bin.join("args").exists(),
            "leakgate ran for {input}={value:?}"
        );
    }
}

/// A shard job passes `--shard` (and `--shard-durations`); the merge job
/// runs `leakgate merge` of the reports its globs match, with the gate and
/// report inputs; a run-only input, a command beside merge, or a glob that
/// matches nothing is an input error.
#[test]
fn shard_jobs_and_the_merge_job() {
    let gh = Gh::new();
    let bin = fake_leakgate(&gh.tmp, 1);
    let ws = gh.ws.display().to_string();
    let tmp = gh.tmp.display().to_string();
    let out = gh.run(
        "run.sh",
        &[
            ("command", "python -m pytest tests"),
            ("shard", "2/3"),
            ("shard-durations", "last.json"),
            ("json", "shard-2.json"),
        ],
        &bin,
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let args = fake_args(&bin);
    let at = |a: &str| args.iter().position(|x| x == a);
    assert!(at("--shard=2/3").is_some(), "{args:?}");
    assert!(at("--shard-durations=last.json").is_some(), "{args:?}");
    assert!(at("--shard=2/3") < at("--"), "{args:?}");
    assert_eq!(args[1], "run");

    for f in ["shard-2.json", "shard-1.json", "other.json"] {
        std::fs::write(gh.ws.join(f), "{}").unwrap();
    }
    let out = gh.run(
        "run.sh",
        &[
            ("merge", "shard-*.json\n other.json"),
            ("baseline", "base.json"),
            ("junit", "j.xml"),
        ],
        &bin,
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(
        fake_args(&bin)[1..],
        [
            "merge".to_string(),
            "--baseline=base.json".into(),
            format!("--sarif={ws}/leakgate.sarif"),
            format!("--html={ws}/leakgate-report.html"),
            format!("--junit={ws}/j.xml"),
            "--format=json".into(),
            format!("--output={tmp}/leakgate-report.json"),
            "shard-1.json".into(),
            "shard-2.json".into(),
            "other.json".into(),
        ]
    );

    std::fs::remove_file(bin.join("args")).unwrap();
    for (inputs, bad) in [
        (
            &[("merge", "shard-*.json"), ("command", "pytest")][..],
            "merge",
        ),
        (&[("merge", "shard-*.json"), ("repeat", "3")][..], "repeat"),
        (&[("merge", "shard-*.json"), ("shard", "1/2")][..], "shard"),
        (&[("merge", "nothing-*.json")][..], "merge"),
    ] {
        let mut all = vec![("command", "")];
        all.extend_from_slice(inputs);
        let out = gh.run("run.sh", &all, &bin);
        assert_eq!(out.status.code(), Some(2), "{inputs:?}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .contains(&format!("::error title=leakgate action::input {bad}")),
            "{inputs:?}: {}",
            show(&out)
        );
        assert!(!bin.join("args").exists(), "leakgate ran for {inputs:?}");
    }
}

// ------------------------------------------------------------ live runs

/// leak40 built in the workspace.
fn leaky_workspace(gh: &Gh) {
    common::build_c("c/leak40.c", &gh.ws);
}

#[test]
fn a_leak_fails_the_step_with_every_output() {
    if !common::valgrind_or_skip() {
        return;
    }
    let gh = Gh::new();
    leaky_workspace(&gh);
    let out = gh.run(
        "run.sh",
        &[("command", "./leak40"), ("junit", "leakgate.xml")],
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("::error file=leak40.c,line="), "{stdout}");
    assert!(
        stdout.contains("FAIL: 1 definitely-lost leak in your code"),
        "{stdout}"
    );

    let o = gh.outputs();
    let ws = gh.ws.display().to_string();
    assert_eq!(o["exit-code"], "1");
    assert_eq!(o["verdict"], "fail");
    assert_eq!(o["user-findings"], "1");
    assert_eq!(o["sarif"], format!("{ws}/leakgate.sarif"));
    assert_eq!(o["html"], format!("{ws}/leakgate-report.html"));
    assert_eq!(o["junit"], format!("{ws}/leakgate.xml"));
    assert!(o["json"].ends_with("/leakgate-report.json"), "{o:?}");
    assert_eq!(
        o["files"],
        format!("{ws}/leakgate.sarif\n{ws}/leakgate-report.html\n{ws}/leakgate.xml"),
        "the JSON in RUNNER_TEMP is not uploaded"
    );
    let sarif: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&o["sarif"]).unwrap()).expect("SARIF is JSON");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    let html = std::fs::read_to_string(&o["html"]).unwrap();
    assert!(html.contains("<html"), "HTML report");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&o["json"]).unwrap()).unwrap();
    assert_eq!(json["verdict"]["exit_code"], 1);
    let summary = std::fs::read_to_string(&gh.summary).unwrap();
    assert!(
        summary.contains("leakgate: failed")
            && summary.contains("| `Leak_DefinitelyLost` | `leak40.c:14`"),
        "{summary}"
    );
}

#[test]
fn fail_job_false_and_a_baseline() {
    if !common::valgrind_or_skip() {
        return;
    }
    let gh = Gh::new();
    leaky_workspace(&gh);
    // fail-job: false: the step passes, the outputs say 1; the baseline of
    // today's findings is written (leakgate run --write-baseline).
    let out = gh.run(
        "run.sh",
        &[
            ("command", "./leak40"),
            ("fail-job", "false"),
            ("extra-args", "--write-baseline=leakgate-baseline.json"),
            ("summary", "false"),
        ],
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let o = gh.outputs();
    assert_eq!(
        (o["exit-code"].as_str(), o["verdict"].as_str()),
        ("1", "fail")
    );
    assert_eq!(
        std::fs::read_to_string(&gh.summary).unwrap(),
        "",
        "summary: false"
    );
    assert!(gh.ws.join("leakgate-baseline.json").is_file());

    // With that baseline the leak is known: pass.
    let out = gh.run(
        "run.sh",
        &[
            ("command", "./leak40"),
            ("baseline", "leakgate-baseline.json"),
        ],
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let o = gh.outputs();
    assert_eq!(o["exit-code"], "0");
    assert_eq!(o["verdict"], "pass");
    assert_eq!(o["user-findings"], "1", "still reported, as known");
    let summary = std::fs::read_to_string(&gh.summary).unwrap();
    assert!(summary.contains("leakgate: passed"), "{summary}");
}

#[test]
fn a_missing_baseline_is_one_clear_error() {
    let gh = Gh::new();
    let out = gh.run(
        "run.sh",
        &[
            ("command", "./leak40"),
            ("baseline", "no-such-baseline.json"),
        ],
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = "leakgate: error: baseline no-such-baseline.json: cannot read: No such file or directory (os error 2)\n";
    assert!(stderr.starts_with(line), "{stderr}");
    assert_eq!(
        stderr.matches("os error 2").count(),
        2,
        "leakgate's line and the action's: {stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "::error title=leakgate action::leakgate exited 2 without a report: leakgate: error: baseline no-such-baseline.json: cannot read: No such file or directory (os error 2)\n"
        ),
        "{}",
        show(&out)
    );
    let o = gh.outputs();
    assert_eq!(o["exit-code"], "2");
    assert_eq!(o["verdict"], "error");
    assert_eq!(
        (o["sarif"].as_str(), o["json"].as_str(), o["files"].as_str()),
        ("", "", "")
    );
    let summary = std::fs::read_to_string(&gh.summary).unwrap();
    assert!(
        summary.contains("## leakgate: exit 2 (error)") && summary.contains("cannot read"),
        "{summary}"
    );
}

// ------------------------------------------------------------ install.sh

#[test]
fn install_uses_the_leakgate_on_path_or_unpacks_a_wheel() {
    let gh = Gh::new();
    let version = env!("CARGO_PKG_VERSION");
    let no_valgrind = [("install-valgrind", "false")];

    // install: none takes the one on PATH.
    let out = gh.run(
        "install.sh",
        &[&no_valgrind[..], &[("install", "none")]].concat(),
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let o = gh.outputs();
    assert_eq!(Path::new(&o["path"]), leakgate_dir().join("leakgate"));
    assert_eq!(o["version"], version);

    // auto: the one on PATH has the action's version.
    let out = gh.run("install.sh", &no_valgrind, &leakgate_dir());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        Path::new(&gh.outputs()["path"]),
        leakgate_dir().join("leakgate")
    );

    let out = gh.run(
        "install.sh",
        &[&no_valgrind[..], &[("install", "brew")]].concat(),
        &leakgate_dir(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));

    // A wheel file: its executable is unpacked into RUNNER_TEMP.
    let Some(py) = common::find_on_path("python3".as_ref()) else {
        common::require_or_skip("python3 (to make and unpack a wheel)");
        return;
    };
    let whl = gh
        .tmp
        .join(format!("pyleakgate-{version}-py3-none-linux_x86_64.whl"));
    let made = Command::new(py)
        .args([
            "-c",
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w') as z:\n    \
             z.write(sys.argv[2], f'pyleakgate-{sys.argv[3]}.data/scripts/leakgate')\n    \
             z.writestr('leakgate/__init__.py', '')",
        ])
        .arg(&whl)
        .arg(common::leakgate_bin())
        .arg(version)
        .output()
        .unwrap();
    common::check_success(&made, "make a wheel");
    let out = gh.run(
        "install.sh",
        &[
            ("install", "pip"),
            ("install-valgrind", "false"),
            ("leakgate-version", whl.to_str().unwrap()),
        ],
        Path::new("/nonexistent"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let o = gh.outputs();
    let bin_dir = gh.tmp.join("leakgate").join("bin");
    assert_eq!(Path::new(&o["path"]), bin_dir.join("leakgate"));
    assert_eq!(o["version"], version);
    assert_eq!(
        std::fs::read_to_string(&gh.path).unwrap(),
        format!("{}\n", bin_dir.display()),
        "GITHUB_PATH"
    );
}
