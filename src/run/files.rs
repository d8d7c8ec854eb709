//! The run's files: a private temporary directory (mode 0700: the XML holds
//! the target's command line, paths and stacks), the XML file name pattern
//! Valgrind writes into it, the XML files found there after the run, and
//! the probe's files naming the test each process is running.

use std::path::{Path, PathBuf};

use super::config::RunError;

/// Creates the private directory (removed when the handle drops).
pub(super) fn private_dir() -> Result<tempfile::TempDir, RunError> {
    let private = || {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o700)
    };
    let dir = tempfile::Builder::new()
        .prefix("leakgate-")
        .permissions(private())
        .tempdir()
        .map_err(RunError::TempDir)?;
    std::fs::set_permissions(dir.path(), private()).map_err(RunError::TempDir)?;
    Ok(dir)
}

/// The `--xml-file` pattern in `dir` for this Valgrind version.
///
/// %p: one file per process; %n: a fork child's file (and the part of a
/// process before a traced exec) gets a sequence number >= 2 while the
/// post-exec Valgrind restarts at 1, so an exec does not overwrite the
/// pre-exec part. Valgrind's text log goes to stderr (the watcher collects
/// it): with `--log-file=...%p` Valgrind 3.19 does not reopen the XML file
/// in a fork child, which then writes into its parent's.
pub(super) fn xml_pattern(dir: &Path, version: Option<&str>) -> PathBuf {
    dir.join(if supports_seq(version) {
        "vg.%p.%n.xml"
    } else {
        "vg.%p.xml"
    })
}

/// Whether this Valgrind expands `%n` in file names (3.19 does: checked).
pub(super) fn supports_seq(version: Option<&str>) -> bool {
    let Some(v) = version else { return false };
    let mut it = v.split('.').map(|x| x.parse::<u32>().unwrap_or(0));
    let (major, minor) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (major, minor) >= (3, 19)
}

/// The `*.xml` files in `dir`, sorted.
pub(super) fn xml_files(dir: &Path) -> Vec<PathBuf> {
    let mut xml_files = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".xml") {
                xml_files.push(p);
            }
        }
    }
    xml_files.sort();
    xml_files
}

/// Where the probe says which test each process is running
/// (`LEAKGATE_RUNNING_DIR`, one file per pid): `running` in the private
/// directory `dir`.
pub(super) fn running_dir(dir: &Path) -> PathBuf {
    dir.join("running")
}

/// The test each process was running when it ended, by pid: the files of
/// [`running_dir`] that the probe did not remove at a test's end.
pub(super) fn running_tests(dir: &Path) -> std::collections::BTreeMap<u64, String> {
    let Ok(entries) = std::fs::read_dir(running_dir(dir)) else {
        return Default::default();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let test = std::fs::read_to_string(e.path()).ok()?;
            (!test.is_empty()).then_some((pid, test))
        })
        .collect()
}
