//! The sanitizer engines (`--engine lsan|asan`): the target runs natively
//! with a sanitizer runtime preloaded (gcc's `liblsan`/`libasan`, clang's
//! `libclang_rt`), nothing rebuilt. Each process writes its reports into
//! leakgate's private directory (`log_path=DIR/lsan`: the runtime adds
//! `.PID`), children inherit the preload, and a user's own `LD_PRELOAD` and
//! `LSAN_OPTIONS`/`ASAN_OPTIONS` are kept (leakgate's `log_path` and
//! `exitcode` come last and win).
//!
//! Allocation stacks are unwound through frame pointers
//! (`fast_unwind_on_malloc=1`, close to native speed) unless
//! [`RunConfig::slow_unwind`] asks for the exact, slow unwinder: the re-run
//! leakgate makes when a leak's stack was cut short in code built without
//! frame pointers (`commands::unwind`). Python targets get
//! `PYTHONMALLOC=malloc` (LeakSanitizer neither sees objects in pymalloc's
//! arenas nor scans them) and the probe, whose checkpoints call
//! `__lsan_do_recoverable_leak_check` and write their markers into the same
//! log (`__sanitizer_report_error_summary`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Engine;
use super::config::{RunConfig, RunError, RunOutcome};
use super::target::{is_python_target, resolve_target};
use super::{command, files, launch};

/// The exit status leakgate asks the runtime to end a process with when it
/// reports leaks or an error (`exitcode=`): the target's own status is then
/// lost, which the report says.
pub const LSAN_EXIT_CODE: i32 = 23;

/// The runtime's file name (as the loader knows it), its name without a
/// version for the compiler's `-print-file-name`, and the Debian package.
fn runtime_names(engine: Engine) -> (&'static [&'static str], &'static str) {
    match engine {
        Engine::Asan => (
            &[
                "libasan.so.8",
                "libasan.so.6",
                "libasan.so.5",
                "libclang_rt.asan-x86_64.so",
                "libclang_rt.asan-aarch64.so",
                "libclang_rt.asan.so",
            ],
            "libasan8",
        ),
        _ => (
            &[
                "liblsan.so.0",
                "libclang_rt.lsan-x86_64.so",
                "libclang_rt.lsan-aarch64.so",
                "libclang_rt.lsan.so",
            ],
            "liblsan0",
        ),
    }
}

/// Finds the sanitizer runtime: `explicit` (`--sanitizer-runtime`), else
/// what gcc and clang name (`-print-file-name`), else the usual library
/// directories.
pub fn find_runtime(engine: Engine, explicit: Option<&Path>) -> Result<PathBuf, RunError> {
    if let Some(p) = explicit {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(RunError::RuntimePathMissing(p.to_path_buf()))
        };
    }
    let (names, package) = runtime_names(engine);
    for compiler in ["gcc", "cc", "clang"] {
        for name in names {
            let Ok(out) = Command::new(compiler)
                .arg(format!("-print-file-name={name}"))
                .output()
            else {
                continue;
            };
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if out.status.success() && path.is_absolute() && path.is_file() {
                return Ok(path);
            }
        }
    }
    let triplet = format!("{}-linux-gnu", std::env::consts::ARCH);
    for dir in [
        format!("/usr/lib/{triplet}"),
        "/usr/lib64".into(),
        "/usr/lib".into(),
        "/lib64".into(),
    ] {
        for name in names {
            let p = Path::new(&dir).join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(RunError::RuntimeMissing {
        engine: engine.name(),
        what: format!(
            "looked for {} through gcc, cc, clang and /usr/lib",
            names[0]
        ),
        package,
    })
}

/// Refuses a target the loader will not preload into: a statically linked
/// executable (no `PT_INTERP`) or a set-user-ID one.
fn check_preloadable(target: &Path, engine: Engine) -> Result<(), RunError> {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(target)
        && meta.permissions().mode() & 0o6000 != 0
    {
        return Err(RunError::SetuidTarget {
            path: target.to_path_buf(),
            engine: engine.name(),
        });
    }
    if is_static_elf(target) == Some(true) {
        return Err(RunError::StaticTarget {
            path: target.to_path_buf(),
            engine: engine.name(),
        });
    }
    Ok(())
}

/// The bytes of `path` when it is a little-endian ELF file (64 bytes of
/// header read first: a script is not read further) of at most `cap` bytes.
fn read_elf(path: &Path, cap: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    if f.metadata().ok()?.len() > cap {
        return None;
    }
    let mut all = vec![0u8; 64];
    f.read_exact(&mut all).ok()?;
    if &all[..4] != b"\x7fELF" || all[5] != 1 {
        return None; // not ELF, or big-endian (not a target here)
    }
    f.read_to_end(&mut all).ok()?;
    Some(all)
}

/// Whether `path` is an ELF executable without a program interpreter;
/// `None` when it is not ELF (a script) or cannot be read.
pub(super) fn is_static_elf(path: &Path) -> Option<bool> {
    let all = read_elf(path, u64::MAX)?;
    let wide = all[4] == 2;
    let u16at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let (phoff, phentsize, phnum) = if wide {
        (
            u64::from_le_bytes(all[0x20..0x28].try_into().ok()?),
            u16at(&all, 0x36),
            u16at(&all, 0x38),
        )
    } else {
        (
            u64::from(u32::from_le_bytes(all[0x1C..0x20].try_into().ok()?)),
            u16at(&all, 0x2A),
            u16at(&all, 0x2C),
        )
    };
    // ET_EXEC or ET_DYN; a shared library given as a target is not ours to judge.
    for i in 0..phnum.min(512) {
        let at = usize::try_from(phoff + i * phentsize).ok()?;
        let p_type = u32::from_le_bytes(all.get(at..at + 4)?.try_into().ok()?);
        if p_type == 3 {
            return Some(false); // PT_INTERP
        }
    }
    Some(true)
}

/// Whether `path` is an ELF executable (of at most 512 MiB) linked with
/// AddressSanitizer (its runtime's entry point `__asan_init` among its
/// symbols): under Valgrind it aborts before `main`, its shadow memory
/// overlapping Valgrind's.
pub(super) fn is_asan_elf(path: &Path) -> bool {
    read_elf(path, 512 << 20).is_some_and(|all| all.windows(12).any(|w| w == b"__asan_init\0"))
}

/// The runtime's options: ours first (a user's own come after and may
/// change them), then what leakgate needs (`log_path`, `exitcode`).
fn options(engine: Engine, cfg: &RunConfig, log: &Path) -> (String, String) {
    let var = match engine {
        Engine::Asan => "ASAN_OPTIONS",
        _ => "LSAN_OPTIONS",
    };
    let mut opts = vec![
        "detect_leaks=1".to_string(),
        format!("fast_unwind_on_malloc={}", u8::from(!cfg.slow_unwind)),
        format!("malloc_context_size={}", cfg.num_callers.clamp(1, 255)),
        "report_objects=0".into(),
        // Every frame with its object, as Valgrind's: whose code it is
        // follows from the object as much as from the source file.
        "stack_trace_format=\"    #%n %p in %f %S (%m+%o)\"".into(),
        "print_suppressions=0".into(),
    ];
    let user = std::env::var(var).unwrap_or_default();
    // leakgate symbolises (parse::sanitizer::symbolize: addr2line, once
    // per object after the run): the runtime's own symboliser would start
    // again in every process and forked checker, and read libpython's debug
    // information each time. Not with the user's own `suppressions=`:
    // their `leak:` rules name functions, which only a symbolising runtime
    // sees. Nor without addr2line (binutils), which leakgate's own
    // symbolisation uses.
    if !user
        .split(':')
        .any(|o| o.trim().starts_with("suppressions="))
        && which::which("addr2line").is_ok()
    {
        opts.push("symbolize=0".into());
    }
    if engine == Engine::Asan {
        // The leak check's options are LeakSanitizer's.
        opts.push("detect_stack_use_after_return=0".into());
        // A build with -fsanitize-recover=address goes on after an error,
        // as a Valgrind'ed process does (without it every error is fatal).
        opts.push("halt_on_error=0".into());
    }
    if !user.trim().is_empty() {
        opts.push(user.trim().trim_matches(':').to_string());
    }
    opts.push(format!("log_path={}", log.display()));
    opts.push(format!("exitcode={LSAN_EXIT_CODE}"));
    (var.to_string(), opts.join(":"))
}

/// The report files the runtime wrote: `DIR/<engine>.PID`, sorted by pid.
fn log_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix(prefix)?.strip_prefix('.')?.parse().ok()?;
            Some((pid, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Runs the target with the sanitizer runtime preloaded and waits for it.
pub(super) fn run(cfg: &RunConfig) -> Result<RunOutcome, RunError> {
    let engine = cfg.engine;
    // `-n` is pytest-xdist's here (its workers run the tests, each with
    // the runtime preloaded): without it pytest would stop at its usage.
    if let Some((python, given)) = super::workers::xdist_missing(&cfg.cmd) {
        return Err(RunError::XdistMissing {
            given,
            python,
            why: format!("under --engine {} its workers run the tests", engine.name()),
        });
    }
    let runtime = find_runtime(engine, cfg.sanitizer_runtime.as_deref())?;
    let target = resolve_target(&cfg.cmd[0])?;
    let mut target_argv = cfg.cmd.clone();
    let mut environment = Vec::new();
    let exe = super::unwrap_shim(cfg, &target, &mut target_argv, &mut environment)
        .unwrap_or_else(|| target.clone());
    check_preloadable(&exe, engine)?;
    let dir = files::private_dir()?;
    let prefix = engine.name();
    let log = dir.path().join(prefix);
    let (pytest, per_test) = super::per_test_mode(cfg)?;
    let mut cmd = Command::new(&target_argv[0]);
    cmd.args(&target_argv[1..]);
    let mut preload = OsString::from(runtime.as_os_str());
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
        environment.push(format!(
            "LD_PRELOAD={}:… (set by leakgate: the {prefix} runtime first, yours after it)",
            runtime.display()
        ));
    } else {
        environment.push(format!(
            "LD_PRELOAD={} (set by leakgate: the {prefix} runtime)",
            runtime.display()
        ));
    }
    cmd.env("LD_PRELOAD", &preload);
    let (var, opts) = options(engine, cfg, &log);
    cmd.env(&var, &opts);
    environment.push(format!(
        "{var}={opts} (set by leakgate{})",
        if cfg.slow_unwind {
            ": exact stacks"
        } else {
            ""
        }
    ));
    cmd.env("LEAKGATE_ENGINE", prefix);
    if cfg.full_collect {
        cmd.env("LEAKGATE_COLLECT", "full");
        environment.push(
            "LEAKGATE_COLLECT=full (set by leakgate: a full garbage collection at every checkpoint)"
                .into(),
        );
    }
    // The subreaper the target's checkers may be siblings of (the probe's
    // `_sibling_fork`): only a process whose parent this is makes them so.
    cmd.env("LEAKGATE_REAPER", std::process::id().to_string());
    let python = is_python_target(&cfg.cmd[0], &target);
    if python {
        command::set_python_malloc(&mut cmd, &mut environment);
    }
    if per_test || python {
        let probe =
            crate::probe::write_probe(&dir.path().join("probe")).map_err(RunError::TempDir)?;
        command::set_probe(&mut cmd, &mut environment, &probe, pytest, per_test, cfg);
    }
    let mut command_text = vec![
        format!("LD_PRELOAD={}", preload.to_string_lossy()),
        format!("{var}={opts}"),
    ];
    command_text.extend(target_argv.iter().cloned());
    // Checkers wait for their turn (`turns`): only the checks that tell
    // where a report changes run. LEAKGATE_CHECKER_TURNS=0 checks every one.
    // Only the probe forks checkers.
    let turns_on =
        (per_test || python) && std::env::var_os("LEAKGATE_CHECKER_TURNS").is_none_or(|v| v != "0");
    cmd.env("LEAKGATE_CHECKER_TURNS", if turns_on { "1" } else { "0" });
    let turns = turns_on.then(|| super::turns::Turns::start(dir.path(), prefix));
    let launched = launch(cmd, &exe, dir.path(), cfg);
    let given = turns.map(super::turns::Turns::finish).unwrap_or_default();
    let launched = launched?;
    if !given.same.is_empty() {
        environment.push(format!(
            "checker turns: {} checkpoint checks ran, {} did not (each found what the checks before and after it found: it takes their report; LEAKGATE_CHECKER_TURNS=0 runs every one)",
            given.checked,
            given.same.len()
        ));
    }
    let super::Launched {
        pid,
        exit,
        sup,
        seen,
        progress,
    } = launched;
    let reports = super::checkers::put_back(log_files(dir.path(), prefix), &given.same);
    let log_text = super::log_text(&seen);
    // Code built with -fsanitize=address was loaded into a process whose
    // first library is not the ASan runtime (`--engine lsan` on an ASan
    // build): it stops before anything is checked.
    const NOT_FIRST: &str = "ASan runtime does not come first";
    let not_first = log_text.contains(NOT_FIRST)
        || reports
            .iter()
            .filter_map(|r| std::fs::read_to_string(r).ok())
            .any(|t| t.contains(NOT_FIRST));
    if not_first {
        return Err(RunError::AsanNotFirst(engine.name()));
    }
    let mut cuda_ipc: Vec<(u64, String, u64)> = seen
        .cuda_ipc
        .into_iter()
        .map(|(p, (l, n))| (p, l, n))
        .collect();
    cuda_ipc.sort();
    let running_tests = files::running_tests(dir.path());
    let durations = super::shard::read_durations(dir.path());
    Ok(RunOutcome {
        dir,
        reports,
        engine,
        log: log_text,
        exit,
        pid,
        valgrind_version: None,
        valgrind_path: runtime,
        environment,
        valgrind_command: command_text,
        exits: sup.exits,
        stopped: sup.stopped,
        stopped_children: sup.stopped_children,
        cuda_ipc,
        unhandled: seen.unhandled,
        log_shown: false,
        progress,
        per_test,
        added_reachable: false,
        running_tests,
        durations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_executable_has_an_interpreter_and_a_script_is_not_elf() {
        assert_eq!(is_static_elf(Path::new("/bin/sh")), Some(false));
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        assert_eq!(is_static_elf(&script), None);
    }

    #[test]
    fn leakgate_s_log_path_and_exit_code_come_after_the_user_s_options() {
        let cfg = RunConfig::new(vec!["x".into()]);
        let (var, opts) = options(Engine::Lsan, &cfg, Path::new("/tmp/d/lsan"));
        assert_eq!(var, "LSAN_OPTIONS");
        assert!(opts.starts_with("detect_leaks=1:fast_unwind_on_malloc=1:"));
        assert!(
            opts.ends_with(":log_path=/tmp/d/lsan:exitcode=23"),
            "{opts}"
        );
        let slow = RunConfig {
            slow_unwind: true,
            ..cfg
        };
        assert!(
            options(Engine::Asan, &slow, Path::new("/l"))
                .1
                .contains("fast_unwind_on_malloc=0")
        );
    }
}
