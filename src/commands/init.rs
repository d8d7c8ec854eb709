//! `leakgate init [OPTIONS] -- CMD`: sets a project up in the current
//! directory, asking nothing (flags make the choices): a starter
//! configuration (`leakgate.toml`, or a `[tool.leakgate]` table appended to
//! `pyproject.toml`), a baseline of today's findings (CMD run once with
//! `--fail-on none --write-baseline`) and a GitHub Actions workflow that
//! runs CMD with leakgate's action. Nothing is overwritten: every file is
//! checked before anything is written, and a baseline run that does not
//! finish cleanly leaves the directory as it was.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::project;
use crate::cli::{ConfigIn, InitArgs, WorkflowChoice};
use crate::gate::policy::FailOn;

/// Where the workflow goes.
const WORKFLOW: &str = ".github/workflows/leakgate.yml";

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn toml_list(items: &[PathBuf]) -> String {
    let v: Vec<String> = items
        .iter()
        .map(|p| toml_str(&p.display().to_string()))
        .collect();
    format!("[{}]", v.join(", "))
}

/// The body of the starter configuration (the table's keys, commented).
fn config_body(a: &InitArgs) -> String {
    let mut b = String::new();
    let groups: Vec<&str> = crate::gate::policy::GROUPS.iter().map(|g| g.name).collect();
    b.push_str(&format!("# What fails the gate: {}\n", groups.join(", ")));
    b.push_str("# or Valgrind kinds such as InvalidRead (see docs/configuration.md).\n");
    b.push_str(&format!("fail-on = {}\n", toml_str(&a.fail_on)));
    if a.no_baseline {
        b.push_str("# Known findings: only new ones fail. Write one with\n");
        b.push_str(
            "#   leakgate run --fail-on none --write-baseline leakgate-baseline.json -- CMD\n",
        );
        b.push_str("# baseline = \"leakgate-baseline.json\"\n");
    } else {
        b.push_str(
            "# Known findings (written by `leakgate init`): only new ones fail. Refresh with\n",
        );
        b.push_str(&format!(
            "#   leakgate run --fail-on none --write-baseline {} -- CMD\n",
            a.baseline.display()
        ));
        b.push_str(&format!(
            "baseline = {}\n",
            toml_str(&a.baseline.display().to_string())
        ));
    }
    b.push_str("# Directories holding your sources (default: the directory leakgate runs in).\n");
    if a.src_roots.is_empty() {
        b.push_str("# src-roots = [\"src\"]\n");
    } else {
        b.push_str(&format!("src-roots = {}\n", toml_list(&a.src_roots)));
    }
    b.push_str(
        "# Your suppression files, after the bundled ones (leakgate suppress writes them).\n",
    );
    if a.suppressions.is_empty() {
        b.push_str("# suppressions = [\"leakgate.supp\"]\n");
    } else {
        b.push_str(&format!("suppressions = {}\n", toml_list(&a.suppressions)));
    }
    b.push_str("# Stop a run that hangs; the report is still written.\n");
    match &a.timeout {
        Some(t) => b.push_str(&format!("timeout = {}\n", toml_str(t))),
        None => b.push_str("# timeout = \"30m\"\n"),
    }
    b.push_str("# Per-test leak checkpoints under pytest (on by default), and repeats per test.\n");
    b.push_str("# per-test = true\n# repeat = 1\n");
    b
}

/// The text of a new `leakgate.toml`.
fn standalone_text(a: &InitArgs) -> String {
    format!(
        "# leakgate configuration, written by `leakgate init`. Every key is a long option\n\
         # of `leakgate run`; an option on the command line wins. Paths are relative to\n\
         # this file. Reference: docs/configuration.md of leakgate.\n\n{}",
        config_body(a)
    )
}

/// `pyproject.toml` with the `[tool.leakgate]` table appended.
fn pyproject_text(existing: &str, a: &InitArgs) -> String {
    let mut t = existing.to_string();
    if !t.is_empty() && !t.ends_with('\n') {
        t.push('\n');
    }
    t.push_str(
        "\n# leakgate configuration, written by `leakgate init`. Every key is a long option\n\
         # of `leakgate run`; an option on the command line wins. Paths are relative to\n\
         # this file. Reference: docs/configuration.md of leakgate.\n[tool.leakgate]\n",
    );
    t.push_str(&config_body(a));
    t
}

/// Whether the directory looks like a Python project (the workflow then
/// sets Python up and installs the project).
fn is_python(dir: &Path) -> bool {
    ["pyproject.toml", "setup.py", "setup.cfg"]
        .iter()
        .any(|f| dir.join(f).is_file())
}

/// The `X.Y` version of the Python that `cmd` runs ([`target_python`]:
/// argv[0], or the interpreter of the script it names), asked of that
/// interpreter: the baseline is recorded with it, so the workflow sets up
/// the same one. `None` when the command runs no Python it can find.
///
/// [`target_python`]: crate::run::target_python
pub(super) fn python_version(cmd: &[String]) -> Option<String> {
    let py = crate::run::target_python(cmd.first()?)?;
    let out = std::process::Command::new(&py)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let ok = out.status.success()
        && v.split('.').count() == 2
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then_some(v)
}

/// The GitHub Actions workflow. `python`: the `X.Y` of the Python the
/// baseline was recorded with ([`python_version`]), or `"3.x"` (the newest)
/// when the command runs none that leakgate can find; `None`: not a Python
/// project. `shards` > 1: a matrix of that many jobs, each running its
/// part of the suite (`--shard K/N`) into a JSON report, and a job that
/// merges them into the verdict.
fn workflow_text(cmd: &[String], python: Option<&str>, shards: u32) -> String {
    let command = crate::util::shell_join(cmd);
    let build = if let Some(version) = python {
        format!(
            "      - uses: actions/setup-python@v5\n        \
             with:\n          python-version: \"{version}\"  # the Python of the baseline run\n      \
             - name: Build and install (with debug info, so that findings have file:line)\n        \
             env:\n          CFLAGS: -O0 -g\n          CXXFLAGS: -O0 -g\n        \
             run: python -m pip install . pytest\n"
        )
    } else {
        "      - name: Build (with debug info, -O0 -g, so that findings have file:line)\n        \
         run: make\n"
            .to_string()
    };
    if shards > 1 {
        return sharded_workflow_text(&command, &build, shards);
    }
    format!(
        "# leakgate: memory leaks and memory errors in native code, under Valgrind Memcheck.\n\
         # Written by `leakgate init`; the settings are in the project configuration\n\
         # (leakgate.toml or [tool.leakgate] in pyproject.toml), the baseline next to it.\n\
         name: leakgate\n\
         on:\n  push:\n  pull_request:\n\
         permissions:\n  contents: read\n  \
         security-events: write  # SARIF upload to code scanning\n\
         jobs:\n  leakgate:\n    runs-on: ubuntu-24.04\n    steps:\n      \
         - uses: actions/checkout@v4\n\
         {build}      \
         - uses: leakgate/leakgate@v{version}\n        \
         with:\n          command: {command}\n          \
         upload-sarif: true  # findings in the Security tab and on the pull request\n",
        version = env!("CARGO_PKG_VERSION"),
        command = yaml_scalar(&command),
    )
}

/// The workflow of [`workflow_text`] for `shards` jobs: each runs part K of
/// the suite (`--shard K/N`, `--fail-on none`: the verdict is the merge's)
/// and uploads its JSON report; the `verdict` job downloads them all and
/// runs `leakgate merge` with the project's policy and baseline.
fn sharded_workflow_text(command: &str, build: &str, shards: u32) -> String {
    let list: Vec<String> = (1..=shards).map(|k| k.to_string()).collect();
    format!(
        "# leakgate: memory leaks and memory errors in native code, under Valgrind Memcheck.\n\
         # Written by `leakgate init --shards {shards}`; the settings are in the project\n\
         # configuration (leakgate.toml or [tool.leakgate] in pyproject.toml), the baseline\n\
         # next to it. The suite runs as {shards} jobs (`leakgate run --shard K/{shards}`, each a\n\
         # contiguous part of the collected tests); the verdict job merges their reports.\n\
         name: leakgate\n\
         on:\n  push:\n  pull_request:\n\
         permissions:\n  contents: read\n\
         jobs:\n  leakgate-shard:\n    runs-on: ubuntu-24.04\n    \
         strategy:\n      fail-fast: false\n      matrix:\n        shard: [{list}]\n    \
         steps:\n      \
         - uses: actions/checkout@v4\n\
         {build}      \
         - uses: leakgate/leakgate@v{version}\n        \
         with:\n          command: {command}\n          \
         shard: ${{{{ matrix.shard }}}}/{shards}\n          \
         # shard-durations: leakgate-durations.json  # a merged report of an earlier run: parts of equal time\n          \
         fail-on: none  # the verdict is the merge's\n          \
         json: shard-${{{{ matrix.shard }}}}.json\n          \
         sarif: ''\n          html: ''\n          annotations: false\n          \
         artifact-name: leakgate-shard-${{{{ matrix.shard }}}}\n  \
         verdict:\n    needs: leakgate-shard\n    if: ${{{{ !cancelled() }}}}\n    runs-on: ubuntu-24.04\n    \
         permissions:\n      contents: read\n      \
         security-events: write  # SARIF upload to code scanning\n    \
         steps:\n      \
         - uses: actions/checkout@v4\n      \
         - uses: actions/download-artifact@v4\n        \
         with:\n          pattern: leakgate-shard-*\n          merge-multiple: true\n      \
         - uses: leakgate/leakgate@v{version}\n        \
         with:\n          merge: shard-*.json\n          install-valgrind: false\n          \
         upload-sarif: true  # findings in the Security tab and on the pull request\n",
        version = env!("CARGO_PKG_VERSION"),
        command = yaml_scalar(command),
        list = list.join(", "),
    )
}

/// `s` as a YAML scalar: plain when safe, else double-quoted (JSON's
/// escapes are YAML's).
fn yaml_scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c) || c == ' ')
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with([':', ' ']);
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("a string serialises")
    }
}

/// Refuses when `path` exists.
fn refuse_existing(path: &Path, what: &str) -> Result<()> {
    if path.exists() {
        bail!(
            "init: {} already exists ({what}); not overwriting it",
            path.display()
        );
    }
    Ok(())
}

/// Creates `path` with `text`, failing if it exists.
fn create_new(path: &Path, text: &str) -> Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("init: cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `leakgate init`.
pub(super) fn init(a: InitArgs) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    FailOn::parse(&a.fail_on).map_err(|e| anyhow::anyhow!("--fail-on: {e}"))?;
    if let Some(t) = &a.timeout {
        crate::run::parse_duration(t).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    }
    let needs_cmd = !a.no_baseline || a.workflow == WorkflowChoice::Github;
    if needs_cmd && a.cmd.is_empty() {
        bail!(
            "init: give the command that runs your tests after `--`, e.g. `leakgate init -- python -m pytest tests/` (or --no-baseline --workflow none)"
        );
    }

    if a.shards > 1 {
        if a.workflow != WorkflowChoice::Github {
            bail!(
                "init: --shards {} splits the workflow's job: not with --workflow none",
                a.shards
            );
        }
        if !crate::run::is_pytest_target(&a.cmd) {
            bail!(
                "init: --shards {} runs parts of a pytest suite (leakgate run --shard K/N), and `{}` is not pytest",
                a.shards,
                crate::util::shell_join(&a.cmd)
            );
        }
    }
    // Every file is checked before anything is written.
    let pyproject = cwd.join("pyproject.toml");
    let in_pyproject = match a.config_in {
        ConfigIn::Auto => pyproject.is_file(),
        ConfigIn::Pyproject => true,
        ConfigIn::Toml => false,
    };
    for name in project::STANDALONE {
        refuse_existing(&cwd.join(name), "a leakgate configuration")?;
    }
    let existing = if pyproject.is_file() {
        let text = std::fs::read_to_string(&pyproject)
            .with_context(|| format!("cannot read {}", pyproject.display()))?;
        if project::parse(&pyproject, &text)?.is_some() {
            bail!(
                "init: {} already has a [tool.leakgate] table; not overwriting it",
                pyproject.display()
            );
        }
        Some(text)
    } else {
        None
    };
    let (config_path, config_text) = if in_pyproject {
        let Some(existing) = &existing else {
            bail!("init: --config-in pyproject: there is no pyproject.toml here");
        };
        (pyproject.clone(), pyproject_text(existing, &a))
    } else {
        (cwd.join("leakgate.toml"), standalone_text(&a))
    };
    let baseline = cwd.join(&a.baseline);
    if !a.no_baseline {
        refuse_existing(&baseline, "the baseline")?;
    }
    let workflow = cwd.join(WORKFLOW);
    if a.workflow == WorkflowChoice::Github {
        refuse_existing(&workflow, "the workflow")?;
    }
    // The configuration as it will be read (paths checked, values valid).
    let config = project::parse(&config_path, &config_text)?
        .context("init: the starter configuration has no [tool.leakgate] table (a bug)")?;

    let mut written = Vec::new();
    if !a.no_baseline {
        let findings = baseline_run(&a, &config.settings, &baseline)?;
        match findings {
            Ok(n) => written.push(format!("{} ({n} known findings)", a.baseline.display())),
            Err(code) => return Ok(code),
        }
    }
    if in_pyproject {
        std::fs::write(&config_path, &config_text)
            .with_context(|| format!("cannot write {}", config_path.display()))?;
        written.push("pyproject.toml [tool.leakgate]".into());
    } else {
        create_new(&config_path, &config_text)?;
        written.push("leakgate.toml".into());
    }
    if a.workflow == WorkflowChoice::Github {
        let python =
            is_python(&cwd).then(|| python_version(&a.cmd).unwrap_or_else(|| "3.x".to_string()));
        create_new(
            &workflow,
            &workflow_text(&a.cmd, python.as_deref(), a.shards),
        )?;
        written.push(WORKFLOW.into());
    }
    eprintln!("leakgate: init: wrote {}", written.join(", "));
    Ok(crate::exit::PASS)
}

/// Runs the command once with the new configuration (less its baseline),
/// `--fail-on none --write-baseline`, into a temporary file that becomes
/// the baseline only when the run passed. `Ok(Err(code))`: the run did not
/// pass; nothing was written.
fn baseline_run(
    a: &InitArgs,
    settings: &project::Settings,
    baseline: &Path,
) -> Result<std::result::Result<usize, i32>> {
    let tmp = baseline.with_extension("json.init-tmp");
    let mut argv: Vec<std::ffi::OsString> = vec![
        "leakgate".into(),
        "run".into(),
        "--fail-on".into(),
        "none".into(),
        "--write-baseline".into(),
        tmp.clone().into(),
    ];
    if let Some(v) = &a.valgrind {
        argv.extend(["--valgrind".into(), v.clone().into()]);
    }
    argv.push("--".into());
    argv.extend(a.cmd.iter().map(Into::into));
    let (cli, m) = super::parse_args(argv)?;
    let crate::cli::Command::Run(mut run_args) = cli.command else {
        unreachable!("parsed as run")
    };
    let sm = m.subcommand().map(|(_, s)| s).unwrap_or(&m);
    let mut settings = settings.clone();
    settings.baseline = None;
    project::apply_run(&settings, sm, &mut run_args);
    let code = super::run::run(run_args);
    let code = match code {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    if code != crate::exit::PASS {
        let _ = std::fs::remove_file(&tmp);
        eprintln!(
            "leakgate: error: init: the baseline run ended with exit {code} ({}); nothing was written",
            crate::exit::describe(code)
        );
        return Ok(Err(code));
    }
    let n = std::fs::read_to_string(&tmp)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("findings").and_then(|f| f.as_array()).map(Vec::len))
        .unwrap_or(0);
    std::fs::rename(&tmp, baseline)
        .with_context(|| format!("cannot write {}", baseline.display()))?;
    Ok(Ok(n))
}
