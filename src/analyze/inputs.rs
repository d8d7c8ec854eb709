//! What the analysis reads and what the report lists about it: the XML
//! files named on the command line (directories expand to their `*.xml`
//! and sanitizer logs), and the processes they came from.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::model::ProcessInfo;
use crate::parse::InputError;
use crate::report::ProcessOut;

/// How much of a file in a directory is read to tell a sanitizer log.
const SNIFF: u64 = 1 << 20;

/// The first `limit` bytes of a file; `None` when it cannot be read.
fn head(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit).read_to_end(&mut head))
        .ok()?;
    Some(head)
}

/// Whether a file's first MiB holds a sanitizer report (a `log_path`
/// file `name.PID`, a saved CI log); unreadable files are not.
fn is_sanitizer_log(path: &Path) -> bool {
    head(path, SNIFF).is_some_and(|h| crate::parse::looks_like_sanitizer_log(&h))
}

/// Whether a named file is leakgate's own JSON report (`--format json`):
/// JSON whose first 64 KiB name leakgate's `schema_version` or `verdict`.
/// A compressed file or one that cannot be read is left to the parser.
fn is_leakgate_json(path: &Path) -> bool {
    head(path, 64 * 1024).is_some_and(|h| {
        crate::parse::looks_like_json(&h)
            && (memchr::memmem::find(&h, b"\"schema_version\"").is_some()
                || memchr::memmem::find(&h, b"\"verdict\"").is_some())
    })
}

/// Expands PATH arguments: files as given, directories to their `*.xml` and
/// `*.xml.zst` files and the other files that hold a sanitizer report
/// (sorted).
pub fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| InputError::Io {
                path: p.clone(),
                err: e,
            })?;
            let mut files: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    let n = f
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    f.is_file()
                        && (n.ends_with(".xml") || n.ends_with(".xml.zst") || is_sanitizer_log(f))
                })
                .collect();
            if files.is_empty() {
                return Err(InputError::EmptyDir(p.clone()));
            }
            files.sort();
            out.extend(files);
        } else if p.exists() {
            if is_leakgate_json(p) {
                return Err(InputError::LeakgateJson(p.clone()));
            }
            out.push(p.clone());
        } else {
            return Err(InputError::NotFound(p.clone()));
        }
    }
    Ok(out)
}

/// Converts process infos for the report.
pub fn processes_out(ps: &[ProcessInfo]) -> Vec<ProcessOut> {
    ps.iter()
        .map(|p| ProcessOut {
            pid: p.pid,
            ppid: p.ppid,
            command: p.command.clone(),
            complete: p.complete,
            exit: p.exit.clone(),
            xml: p.file.clone(),
            incomplete_reason: p.incomplete_reason.clone(),
            records: p.records,
            client_messages: p.client_messages.clone(),
            valgrind_args: p.valgrind_args.clone(),
            pre_exec: p.pre_exec,
            forked: p.forked,
            running_test: None,
        })
        .collect()
}
