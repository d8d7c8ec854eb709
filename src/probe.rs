//! The probe: the Python package (`python/leakgate_probe/`) that `leakgate
//! run` puts on the target's `PYTHONPATH`. Its pytest plugin and
//! `checkpoint()` write markers (`<clientmsg>` texts starting with
//! [`MARKER_PREFIX`]) and ask Memcheck for a leak snapshot; the analysis
//! (`analyze::checkpoints`) reads them back. This module holds the embedded
//! files and the marker prefix both sides agree on.

/// What every marker's `<clientmsg>` text starts with.
pub const MARKER_PREFIX: &str = "leakgate-checkpoint ";

/// What ends a checkpoint's report in a sanitizer's log (the probe writes
/// it after `__lsan_do_recoverable_leak_check`).
pub const SANITIZER_END: &str = "leakgate-checkpoint-end";

/// What a process line in a sanitizer's log starts with (`{"pid", "ppid",
/// "argv", "forked"}` as JSON after it).
pub const PROCESS_PREFIX: &str = "leakgate-process ";

/// Where a checkpoint's report belongs in its process's log when a forked
/// checker wrote it into its own (`{"seq"}` as JSON after it): the run puts
/// the checker's report there.
pub const FORKED_PREFIX: &str = "leakgate-checkpoint-forked ";

/// What a checker's log (a forked copy of a process that ran one
/// checkpoint's leak check) starts with (`{"parent", "seq"}` as JSON after
/// it).
pub const CHECKER_PREFIX: &str = "leakgate-checker ";

/// A forked checker's line (`{"seq", "objects"}` as JSON after it) when a
/// full garbage collection would have freed objects at its checkpoint,
/// where the process had collected only the young generations, and the
/// checker could not collect fully in its own copy (no sandbox): leakgate
/// then runs the target again with `LEAKGATE_COLLECT=full`.
pub const GARBAGE_PREFIX: &str = "leakgate-garbage ";

/// A forked checker's line (`{"seq", "objects"}`) when it collected fully
/// in its own, sandboxed copy of the process before its check (what a full
/// collection at the checkpoint would have freed): nothing runs again.
pub const GARBAGE_COLLECTED_PREFIX: &str = "leakgate-garbage-collected ";

/// What the exit hook's `<clientmsg>` (`gcleaks.c`: how many objects the
/// garbage collector listed, how many it took out of its lists) starts with.
pub const GC_PREFIX: &str = "leakgate-gc ";

/// The probe's files, embedded: leakgate writes them into its private
/// directory and puts that on the target's `PYTHONPATH`.
pub const PROBE_FILES: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../python/leakgate_probe/__init__.py"),
    ),
    (
        "pytest_plugin.py",
        include_str!("../python/leakgate_probe/pytest_plugin.py"),
    ),
    (
        "forked_workers.py",
        include_str!("../python/leakgate_probe/forked_workers.py"),
    ),
    (
        "deadlines.py",
        include_str!("../python/leakgate_probe/deadlines.py"),
    ),
    (
        "autoload.py",
        include_str!("../python/leakgate_probe/autoload.py"),
    ),
    (
        "leakgate_probe.h",
        include_str!("../python/leakgate_probe/leakgate_probe.h"),
    ),
    (
        "freelists.c",
        include_str!("../python/leakgate_probe/freelists.c"),
    ),
    (
        "gcleaks.c",
        include_str!("../python/leakgate_probe/gcleaks.c"),
    ),
    ("arena.c", include_str!("../python/leakgate_probe/arena.c")),
];

/// The probe's `sitecustomize.py`, written beside the package (the
/// directory on `PYTHONPATH`): it arms the exit hook in every Python
/// process and then runs the `sitecustomize` it shadows.
pub const SITECUSTOMIZE: &str = include_str!("../python/leakgate_probe/sitecustomize.py");

/// Writes the probe package into `dir/leakgate_probe/`; returns `dir`.
pub fn write_probe(dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let pkg = dir.join("leakgate_probe");
    std::fs::create_dir_all(&pkg)?;
    for (name, text) in PROBE_FILES {
        std::fs::write(pkg.join(name), text)?;
    }
    std::fs::write(dir.join("sitecustomize.py"), SITECUSTOMIZE)?;
    Ok(dir.to_path_buf())
}
