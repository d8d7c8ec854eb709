//! Real runs under Valgrind with several processes and abnormal endings:
//! multiprocessing children (spawn and fork, the fork child's inherited
//! leak reported once), a crash in user code, a process killed with SIGKILL
//! mid-run, `--timeout`, Ctrl-C (SIGINT to leakgate), PyTorch's CUDA-IPC
//! producer warning printed by a child, and the progress line (under a
//! pseudo-terminal with `script`, absent when piped). Programs:
//! `tests/programs/real_runs/`.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `leakgate run --format json -o report.json [extra] -- cmd` in
/// `dir`; returns (exit code, report, stderr).
fn run_json(dir: &Path, extra: &[&str], cmd: &[&str]) -> (i32, Value, String) {
    let report = dir.join("report.json");
    let out = Command::new(common::leakgate_bin())
        .current_dir(dir)
        .args(["run", "--format", "json", "-o"])
        .arg(&report)
        .args(extra)
        .arg("--")
        .args(cmd)
        .stdin(Stdio::null())
        .output()
        .expect("run leakgate");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report ({e}); stderr:\n{stderr}"));
    let v: Value = serde_json::from_str(&text).expect("JSON report");
    (out.status.code().unwrap_or(-1), v, stderr)
}

fn user<'a>(r: &'a Value, kind: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["category"] == "user" && f["kind"] == kind)
        .collect()
}

fn function_of(f: &Value) -> &str {
    f["location"]["function"].as_str().unwrap_or("")
}

fn pids(v: &Value) -> Vec<u64> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// No process whose command line mentions `dir` is left (Valgrind runs the
/// target under its own name, so look at every process' cmdline).
fn assert_nothing_left(dir: &Path) {
    let needle = dir.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut left = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
                let c = String::from_utf8_lossy(&c).replace('\0', " ");
                if c.contains(&needle) && !c.contains("leakgate") {
                    left.push(format!("{name}: {c}"));
                }
            }
        }
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The JSON report's process entries that are not pre-exec parts.
fn real_processes(r: &Value) -> Vec<&Value> {
    r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pre_exec"] != true)
        .collect()
}

#[test]
fn multiprocessing_children_are_traced_and_leaks_reported_once() {
    if !common::valgrind_or_skip() {
        return;
    }
    let Some(py) = common::python_or_skip() else {
        return;
    };
    let tmp = common::tempdir();
    let dir = common::build_python_ext_with(&py, "cpython", tmp.path());
    std::fs::copy(
        common::programs_dir().join("real_runs/mp_workers.py"),
        dir.join("mp_workers.py"),
    )
    .unwrap();
    let (code, r, stderr) = run_json(&dir, &[], &[py.to_str().unwrap(), "mp_workers.py"]);
    assert_eq!(code, 1, "gated leaks fail; stderr:\n{stderr}");
    let procs = real_processes(&r);
    assert_eq!(procs.len(), 4, "parent, tracker, spawn, fork: {procs:#?}");
    let cmd = |p: &Value| {
        p["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let parent = procs
        .iter()
        .find(|p| cmd(p).ends_with("mp_workers.py") && p["forked"] != true)
        .expect("the parent");
    let ppid = parent["pid"].as_u64().unwrap();
    let tracker = procs
        .iter()
        .find(|p| cmd(p).contains("resource_tracker"))
        .expect("the resource tracker");
    let spawn = procs
        .iter()
        .find(|p| cmd(p).contains("spawn_main"))
        .expect("the spawn worker");
    let fork = procs
        .iter()
        .find(|p| p["forked"] == true)
        .expect("the fork worker");
    for p in [tracker, spawn, fork] {
        assert_eq!(p["ppid"].as_u64(), Some(ppid), "child of the parent: {p}");
    }
    for p in &procs {
        assert_eq!(p["complete"], true, "{p}");
    }
    assert_eq!(parent["exit"]["code"], 0);
    let leaks = user(&r, "Leak_DefinitelyLost");
    let by_fn = |name: &str| {
        let v: Vec<&&Value> = leaks.iter().filter(|f| function_of(f) == name).collect();
        assert_eq!(v.len(), 1, "one {name} finding: {leaks:#?}");
        *v[0]
    };
    let pre_fork = by_fn("leak_malloc");
    assert_eq!(
        pids(&pre_fork["pids"]),
        vec![ppid],
        "reported for the parent"
    );
    assert_eq!(
        pids(&pre_fork["inherited_by"]),
        vec![fork["pid"].as_u64().unwrap()],
        "and said to be inherited by the fork child"
    );
    assert_eq!(pre_fork["bytes"], 48);
    assert_eq!(pre_fork["blocks"], 1);
    let spawned = by_fn("error_path_leak");
    assert_eq!(pids(&spawned["pids"]), vec![spawn["pid"].as_u64().unwrap()]);
    let forked = by_fn("leak_bytes");
    assert_eq!(pids(&forked["pids"]), vec![fork["pid"].as_u64().unwrap()]);
    // Every record is accounted for.
    let total: u64 = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["records"].as_u64().unwrap())
        .sum();
    assert_eq!(
        r["summary"]["records"].as_u64().unwrap(),
        total + r["summary"]["suppressed"]["records"].as_u64().unwrap()
    );
    assert_nothing_left(&dir);
}

#[test]
fn a_crash_in_user_code_is_a_gated_finding() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("real_runs/crash.c", tmp.path());
    let (code, r, _) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(r["target_exit"]["signal"], "SIGSEGV");
    let crashes = user(&r, "FatalSignal");
    assert_eq!(crashes.len(), 1, "{:#?}", r["findings"]);
    let line = common::marker_line(&common::programs_dir().join("real_runs/crash.c"), "@segv");
    assert_eq!(crashes[0]["location"]["line"], line);
    assert_eq!(function_of(crashes[0]), "crash");
    assert_eq!(crashes[0]["gated"], true);
    assert_eq!(
        user(&r, "Leak_DefinitelyLost").len(),
        1,
        "the leak before it"
    );
    assert_eq!(r["processes"][0]["complete"], true);
    assert_eq!(r["processes"][0]["exit"]["signal"], "SIGSEGV");
    // Not gated: the crash is still reported, the target's death gives 4.
    let (code, _, _) = run_json(tmp.path(), &["--fail-on", "none"], &[exe.to_str().unwrap()]);
    assert_eq!(code, 4);
}

#[test]
fn a_sigkilled_process_keeps_its_records_and_is_incomplete() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("real_runs/oom_kill.c", tmp.path());
    let (code, r, _) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1, "the invalid read before the kill is gated");
    assert_eq!(r["target_exit"]["signal"], "SIGKILL");
    let target = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["ppid"] != Value::Null && p["forked"] != true)
        .unwrap();
    assert_eq!(target["complete"], false);
    assert_eq!(target["exit"]["signal"], "SIGKILL");
    let reads = user(&r, "InvalidRead");
    assert_eq!(reads.len(), 1, "the record before the cut is kept");
    let reasons = r["verdict"]["reasons"].to_string();
    assert!(reasons.contains("incomplete"), "{reasons}");
    let (code, r, _) = run_json(tmp.path(), &["--fail-on", "none"], &[exe.to_str().unwrap()]);
    assert_eq!(code, 3, "incomplete: {}", r["verdict"]);
    assert_eq!(r["verdict"]["status"], "incomplete");
    assert_nothing_left(tmp.path());
}

#[test]
fn timeout_stops_the_run_and_still_reports() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("real_runs/sleeper.c", tmp.path());
    let started = Instant::now();
    let (code, r, stderr) = run_json(
        tmp.path(),
        &["--timeout", "3s", "--fail-on", "none"],
        &[exe.to_str().unwrap()],
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(code, 3, "timed out: incomplete; stderr:\n{stderr}");
    assert_eq!(r["stopped"]["reason"], "timeout");
    assert!(
        r["stopped"]["detail"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );
    // SIGTERM let Valgrind run its leak check and close the XML.
    assert_eq!(r["processes"][0]["complete"], true);
    let leaks = user(&r, "Leak_DefinitelyLost");
    assert_eq!(leaks.len(), 1);
    // The SIGTERM leakgate sent is not the user's crash.
    assert!(user(&r, "FatalSignal").is_empty());
    // With the default gate the leak found fails it: 1 beats 3.
    let (code, r, _) = run_json(tmp.path(), &["--timeout", "2s"], &[exe.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(r["verdict"]["reasons"].to_string().contains("timed out"));
    assert_nothing_left(tmp.path());
}

#[test]
fn ctrl_c_is_forwarded_and_a_report_is_still_written() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("real_runs/sleeper.c", tmp.path());
    let report = tmp.path().join("report.json");
    let mut child = Command::new(common::leakgate_bin())
        .current_dir(tmp.path())
        .args(["run", "--format", "json", "--fail-on", "none", "-o"])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the target runs (it says so on stderr).
    let mut err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
            if all.windows(14).any(|w| w == b"sleeper: ready") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the target started");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill on our own child's pid.
    #[allow(unsafe_code)] // std's Child::kill sends SIGKILL only
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(3), "interrupted: incomplete");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["stopped"]["reason"], "interrupted");
    assert_eq!(r["stopped"]["signals_sent"][0], "SIGINT");
    assert_eq!(r["target_exit"]["signal"], "SIGINT");
    assert_eq!(user(&r, "Leak_DefinitelyLost").len(), 1, "leak check ran");
    assert_nothing_left(tmp.path());
}

#[test]
fn cuda_ipc_producer_warning_is_a_finding_for_its_process() {
    if !common::valgrind_or_skip() {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("real_runs/cuda_ipc_warning.c", tmp.path());
    let (code, r, stderr) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    let line = "[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]";
    assert!(stderr.contains(line), "passed through: {stderr}");
    assert_eq!(code, 0, "not gated by default: {}", r["verdict"]);
    let f = user(&r, "CudaIpcProducerExited");
    assert_eq!(f.len(), 1, "{:#?}", r["findings"]);
    let child = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["forked"] == true)
        .expect("the child");
    assert_eq!(pids(&f[0]["pids"]), vec![child["pid"].as_u64().unwrap()]);
    assert_eq!(f[0]["message"], line);
    let advice = f[0]["advice"].as_str().unwrap();
    assert!(advice.contains("torch.cuda.ipc_collect()"), "{advice}");
    assert!(advice.contains("CPU tensors"), "{advice}");
    let (code, _, _) = run_json(
        tmp.path(),
        &["--fail-on", "definite,cuda-ipc"],
        &[exe.to_str().unwrap()],
    );
    assert_eq!(code, 1, "--fail-on cuda-ipc gates it");
}

#[test]
fn progress_line_on_a_terminal_only() {
    if !common::valgrind_or_skip() {
        return;
    }
    if common::find_on_path(std::ffi::OsStr::new("script")).is_none()
        && common::require_or_skip("script (util-linux) for a pseudo-terminal")
    {
        return;
    }
    let tmp = common::tempdir();
    let exe = common::build_c("c/clean.c", tmp.path());
    let report = tmp.path().join("r.json");
    let inner = format!(
        "{} run --format json -o {} -- {}",
        common::leakgate_bin().display(),
        report.display(),
        exe.display()
    );
    let typescript = tmp.path().join("typescript");
    let out = Command::new("script")
        .args(["-qefc", &inner])
        .arg(&typescript)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tty = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    let at = tty
        .find("leakgate: running")
        .unwrap_or_else(|| panic!("{tty:?}"));
    assert!(tty[at..].contains(" process"), "{tty:?}");
    assert!(
        tty[at..].contains("\r\x1b[K"),
        "the line is cleared: {tty:?}"
    );
    assert!(!tty.contains("leakgate: running ·\n"), "{tty:?}");
    // Piped: nothing; --progress forces it; --quiet wins over a terminal.
    let (_, _, stderr) = run_json(tmp.path(), &[], &[exe.to_str().unwrap()]);
    assert!(!stderr.contains("leakgate: running"), "{stderr:?}");
    let (_, _, stderr) = run_json(tmp.path(), &["--progress"], &[exe.to_str().unwrap()]);
    assert!(stderr.contains("leakgate: running"), "{stderr:?}");
    let quiet = inner.replacen(" run ", " run --quiet ", 1);
    let out = Command::new("script")
        .args(["-qefc", &quiet])
        .arg(&typescript)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let tty = String::from_utf8_lossy(&std::fs::read(&typescript).unwrap()).into_owned();
    assert!(!tty.contains("leakgate: running"), "{tty:?}");
}
