//! Unit tests of the project configuration: discovery, errors with
//! `file:line`, and the command line winning over the file.

use super::*;
use crate::cli::{Cli, Command};
use clap::{CommandFactory, FromArgMatches};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn err(path: &Path) -> String {
    load_file(path).unwrap_err().to_string()
}

fn parse_run(args: &[&str]) -> (RunArgs, ArgMatches) {
    let m = Cli::command().try_get_matches_from(args).unwrap();
    let cli = Cli::from_arg_matches(&m).unwrap();
    let Command::Run(a) = cli.command else {
        panic!("run")
    };
    let sm = m.subcommand_matches("run").unwrap().clone();
    (a, sm)
}

#[test]
fn pyproject_table_is_read_and_paths_are_relative_to_it() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("src")).unwrap();
    write(d.path(), "my.supp", "");
    let p = write(
        d.path(),
        "pyproject.toml",
        "[project]\nname = \"x\"\n\n[tool.ruff]\nline-length = 100\n\n[tool.leakgate]\n\
         src-roots = [\"src\"]\nsuppressions = \"my.supp\"\nfail-on = [\"definite\", \"errors\"]\n\
         repeat = 3\ntimeout = \"10m\"\norigins = \"auto\"\nper-test = false\n\
         bundled-suppressions = false\nsarif = \"out/leakgate.sarif\"\nmax-leaked-bytes = 64\n",
    );
    let c = load_file(&p).unwrap().unwrap();
    assert!(c.pyproject);
    assert!(c.describe().ends_with("pyproject.toml [tool.leakgate]"));
    let s = &c.settings;
    assert_eq!(s.src_roots.as_deref(), Some(&[d.path().join("src")][..]));
    assert_eq!(s.suppressions.as_deref(), Some(&[d.path().join("my.supp")][..]));
    assert_eq!(s.repeat, Some(3));
    assert_eq!(s.timeout, Some(Duration::from_secs(600)));
    assert_eq!(s.origins, Some(Origins::Auto));
    assert_eq!(s.sarif, Some(d.path().join("out/leakgate.sarif")));
    assert_eq!(s.fail_on, Some(FailOn::parse("definite,errors").unwrap()));

    let (mut a, m) = parse_run(&["leakgate", "run", "--", "true"]);
    apply_run(s, &m, &mut a);
    assert_eq!(a.repeat, 3);
    assert!(a.no_per_test && !a.per_test);
    assert!(a.report.no_bundled_suppressions);
    assert_eq!(a.report.policy.max_leaked_bytes, Some(64));
    assert_eq!(a.origins, Origins::Auto);
    assert_eq!(a.timeout, Some(Duration::from_secs(600)));
}

#[test]
fn the_command_line_wins() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("src")).unwrap();
    let p = write(
        d.path(),
        "leakgate.toml",
        "src-roots = \"src\"\nrepeat = 3\nper-test = false\norigins = \"auto\"\n\
         fail-on = \"all\"\nfail-on-incomplete = false\nvalgrind-args = [\"--trace-children=no\"]\n",
    );
    let s = load_file(&p).unwrap().unwrap().settings;
    let (mut a, m) = parse_run(&[
        "leakgate",
        "run",
        "--src-root",
        "/tmp",
        "--repeat",
        "2",
        "--per-test",
        "--no-track-origins",
        "--fail-on",
        "definite",
        "--fail-on-incomplete",
        "--",
        "true",
    ]);
    apply_run(&s, &m, &mut a);
    assert_eq!(a.report.src_roots, vec![PathBuf::from("/tmp")]);
    assert_eq!(a.repeat, 2);
    assert!(a.per_test && !a.no_per_test);
    assert!(a.no_track_origins);
    assert_eq!(a.origins, Origins::Yes, "left to --no-track-origins");
    assert_eq!(a.report.policy.fail_on, FailOn::parse("definite").unwrap());
    assert!(a.report.policy.fail_on_incomplete && !a.report.policy.no_fail_on_incomplete);
    assert_eq!(a.valgrind_args, vec!["--trace-children=no".to_string()]);
}

/// Every key of a full file applies to each command without panicking
/// (clap checks the argument ids in debug builds).
#[test]
fn every_key_applies_to_every_command() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "leakgate.toml",
        "src-roots = \".\"\nuser-objects = [\"*.so\"]\nsuppressions = []\nbundled-suppressions = true\n\
         show-unused-suppressions = true\nformat = \"json\"\noutput = \"r.json\"\nhtml = \"r.html\"\n\
         color = \"never\"\nfail-on = \"leaks\"\nmax-leaked-bytes = 1\nfail-on-incomplete = true\n\
         baseline = \"b.json\"\njunit = \"j.xml\"\nsarif = \"s.sarif\"\ncodequality = \"c.json\"\n\
         markdown = \"m.md\"\nannotations = \"never\"\nrepo-root = \".\"\nvalgrind = \"valgrind\"\n\
         num-callers = 12\nshow-leak-kinds = [\"definite\", \"possible\"]\nper-test = true\nrepeat = 2\n\
         origins = \"no\"\ntrack-fds = true\nvalgrind-args = \"--x=y\"\nkeep-xml = \"xml\"\n\
         ignore-target-exit = true\ntrace-children = false\ntrace-children-skip = \"*/make\"\n\
         timeout = \"1m\"\nkill-after = \"5s\"\n",
    );
    let s = load_file(&p).unwrap().unwrap().settings;
    let (mut a, m) = parse_run(&["leakgate", "run", "--", "true"]);
    apply_run(&s, &m, &mut a);
    assert_eq!(a.num_callers, 12);
    assert_eq!(a.show_leak_kinds.as_deref(), Some("definite,possible"));
    assert!(a.no_trace_children && a.track_fds && a.ignore_target_exit);
    assert_eq!(a.report.format, Format::Json);
    assert_eq!(a.report.ci.junit, Some(d.path().join("j.xml")));
    assert_eq!(a.valgrind, Some(PathBuf::from("valgrind")));
    assert_eq!(a.kill_after, Duration::from_secs(5));

    for args in [
        &["leakgate", "analyze", "x.xml"][..],
        &["leakgate", "merge", "a.json", "b.json"][..],
        &["leakgate", "suppress", "x.xml"][..],
    ] {
        let m = Cli::command().try_get_matches_from(args).unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        let sm = m.subcommand().unwrap().1;
        match cli.command {
            Command::Analyze(mut a) => {
                apply_analyze(&s, sm, &mut a);
                assert_eq!(a.report.user_objects, vec!["*.so".to_string()]);
            }
            Command::Merge(mut a) => {
                apply_merge(&s, sm, &mut a);
                assert!(a.report.src_roots.is_empty(), "merge takes no sources");
                assert_eq!(a.report.ci.sarif, Some(d.path().join("s.sarif")));
            }
            Command::Suppress(mut a) => {
                apply_suppress(&s, sm, &mut a);
                assert_eq!(a.src_roots, vec![d.path().join(".")]);
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn errors_name_the_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "leakgate.toml", "repeat = 2\n\nfail_on = \"definite\"\n");
    let e = err(&p);
    assert!(e.starts_with(&format!("{}:3: ", p.display())), "{e}");
    assert!(e.contains("fail_on"), "{e}");
    assert!(!e.contains('\n'), "{e}");

    let p = write(d.path(), "leakgate.toml", "# c\nrepeat = \"three\"\n");
    let e = err(&p);
    assert!(e.starts_with(&format!("{}:2: ", p.display())), "{e}");
    assert!(!e.contains('\n'), "{e}");

    let p = write(d.path(), "leakgate.toml", "fail-on = \"definite,lost\"\n");
    let e = err(&p);
    assert!(e.starts_with(&format!("{}:1: fail-on: ", p.display())), "{e}");

    let p = write(d.path(), "leakgate.toml", "\n\norigins = \"sometimes\"\n");
    let e = err(&p);
    assert!(e.contains(":3: origins: invalid value \"sometimes\""), "{e}");
    assert!(e.contains("\"auto\""), "{e}");

    let p = write(d.path(), "leakgate.toml", "timeout = \"soon\"\n");
    assert!(err(&p).contains(":1: timeout: invalid duration"), "{}", err(&p));

    let p = write(d.path(), "leakgate.toml", "suppressions = [\"nope.supp\"]\n");
    assert!(err(&p).contains(":1: suppressions: nope.supp: no such file"), "{}", err(&p));

    let p = write(d.path(), "leakgate.toml", "repeat = 0\n");
    assert!(err(&p).contains(":1: repeat:"), "{}", err(&p));

    let p = write(d.path(), "leakgate.toml", "repeat = [\n");
    let e = err(&p);
    assert!(e.starts_with(&format!("{}:", p.display())), "{e}");
    assert!(!e.contains('\n'), "{e}");

    let p = write(
        d.path(),
        "pyproject.toml",
        "[project]\nname = \"x\"\n[tool.leakgate]\nrepeat = 1\nper_test = true\n",
    );
    let e = err(&p);
    assert!(e.starts_with(&format!("{}:5: ", p.display())), "{e}");
    assert!(e.contains("per_test"), "{e}");
}

#[test]
fn discovery_walks_up_and_skips_pyprojects_without_a_table() {
    let d = tempfile::tempdir().unwrap();
    let deep = d.path().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    assert!(discover(&deep).unwrap().is_none());
    write(&d.path().join("a"), "pyproject.toml", "[tool.leakgate]\nrepeat = 2\n");
    // mentions leakgate, but has no table: passed over.
    write(
        &d.path().join("a/b"),
        "pyproject.toml",
        "[project]\nname = \"leakgate-user\"\n",
    );
    // broken, but never mentions it: not even parsed.
    write(&deep, "pyproject.toml", "[project\n");
    let c = discover(&deep).unwrap().unwrap();
    assert_eq!(c.path, d.path().join("a/pyproject.toml"));
    // A standalone file in the same directory comes first.
    write(&d.path().join("a"), ".leakgate.toml", "repeat = 4\n");
    assert_eq!(discover(&deep).unwrap().unwrap().settings.repeat, Some(4));
    write(&d.path().join("a/b"), "leakgate.toml", "repeat = 5\n");
    assert_eq!(discover(&deep).unwrap().unwrap().settings.repeat, Some(5));
    // --no-config, --config.
    assert!(resolve(None, true, &deep).unwrap().is_none());
    let e = resolve(Some(&d.path().join("a/b/pyproject.toml")), false, &deep).unwrap_err();
    assert!(e.to_string().contains("no [tool.leakgate] table"), "{e}");
}
