//! Integration tests: no command panics when its standard output is a pipe
//! nobody reads any more (`leakgate suppressions list | head`): the output
//! stops, the command ends with its own exit code, and standard error says
//! nothing of the pipe.

use crate::common;

use std::process::{Command, Stdio};

/// Runs leakgate with `args` in the checkout, its standard output a pipe
/// whose read end is closed before it starts (so its first write fails with
/// EPIPE, however little it prints); the exit code and standard error.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(common::leakgate_bin())
        .args(args)
        .current_dir(common::repo_root())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_end_quietly_when_stdout_is_closed() {
    let cases: &[(&[&str], i32)] = &[
        (&["suppressions", "list"], 0),
        (&["suppressions", "show", "python"], 0),
        (&["man"], 0),
        (&["man", "run"], 0),
        (&["completions", "bash"], 0),
        (&["lint", "suppressions/python.supp"], 0),
        // The report goes to standard output; the verdict still stands.
        (&["analyze", "fixtures/raw-3.26/leak40.xml"], 1),
        (&["suppress", "fixtures/raw-3.26/leak40.xml"], 0),
        (&["run", "--help"], 0),
    ];
    for (args, want) in cases {
        let (code, err) = with_closed_stdout(args);
        let shown = format!("leakgate {}: exit {code:?}, stderr:\n{err}", args.join(" "));
        assert_ne!(code, Some(101), "{shown}");
        assert!(!err.contains("panicked"), "{shown}");
        assert!(!err.contains("Broken pipe"), "{shown}");
        assert_eq!(code, Some(*want), "{shown}");
    }
}
