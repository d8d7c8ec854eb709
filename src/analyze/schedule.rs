//! Reads a set of XML files in parallel: large files are cut into ranges
//! at record boundaries and parsed by worker threads, each with its own
//! [`Aggregator`]; the partial aggregations merge in file order. A
//! sanitizer log (`parse::looks_like_sanitizer_log`) is read whole by
//! `parse::parse_sanitizer_log` instead.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::sync::Arc;

use super::aggregate::{Aggregator, Analysis, Observer, Options};
use super::attribute::Attributor;
use crate::model::{ExitStatus, ProcessInfo};
use crate::parse::{self, InputError, Interner};
use crate::suppress::Suppressor;

/// Files larger than this are read in chunks of about `CHUNK` bytes (cut at
/// `<error>` lines), parsed in parallel, each mapped on its own and unmapped
/// when done: memory stays flat whatever the file's size (one map of the
/// whole file would count all of it in the resident set).
const CHUNK_MIN: u64 = 32 << 20;

const CHUNK: u64 = 8 << 20;

/// This process's peak resident set (`VmHWM`), for LEAKGATE_TIMINGS.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Maps `len` bytes of `file` from `offset`, read ahead in one go. Cheaper
/// than copying them (`read_at`): the pages come straight from the page
/// cache, and unmapping at the end of the chunk returns them, so the
/// resident set stays at about one chunk per worker.
// Memory-maps part of a file (memmap2 needs `unsafe`: the file must not
// change while mapped; leakgate only reads finished XML files).
#[allow(unsafe_code)]
fn map_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the file is only read; as for every memory-mapped input, a
    // file truncated by another process while it is read is not supported.
    unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .populate()
            .map(file)
    }
}

/// Reads `len` bytes at `offset` (short at end of file).
fn read_at(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The offset of the first `<error>` line at or after `from` (or `len`).
fn next_error_line(file: &std::fs::File, from: u64, len: u64) -> std::io::Result<u64> {
    const WINDOW: usize = 256 << 10;
    let pat = b"\n<error>\n";
    let mut at = from.saturating_sub(1);
    while at < len {
        let buf = read_at(file, at, WINDOW)?;
        if let Some(p) = memchr::memmem::find(&buf, pat) {
            return Ok(at + p as u64 + 1);
        }
        if buf.len() < WINDOW {
            break;
        }
        at += (WINDOW - pat.len()) as u64;
    }
    Ok(len)
}

/// A piece of work: a whole file, or a byte range of a mapped file that
/// starts at an `<error>` line (or at the file's start).
struct Unit {
    file: usize,
    range: Option<(usize, usize)>,
    /// The range is too large to hold at once (no `<error>` line to cut it
    /// at, e.g. a file on one line): read it as a stream.
    stream: bool,
}

/// Reads a byte range of a file (positional reads: the ranges of one file
/// are read by several workers at once).
struct RangeReader<'f> {
    file: &'f std::fs::File,
    pos: u64,
    end: u64,
}

impl std::io::Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// An opened input shared by the units that read it.
enum Slot {
    Mapped(Arc<memmap2::Mmap>),
    /// A large regular file, read in chunks.
    Chunked(std::fs::File),
    Stream(std::sync::Mutex<Option<Box<dyn std::io::BufRead + Send>>>),
}

/// What a unit produced.
struct UnitOut {
    agg: Aggregator,
    sum: parse::FileSummary,
}

/// Combines the summaries of one file's chunks, in order.
fn combine(mut parts: Vec<parse::FileSummary>) -> parse::FileSummary {
    let mut first = parts.remove(0);
    for p in parts {
        first.process.records += p.process.records;
        first
            .process
            .client_messages
            .extend(p.process.client_messages);
        if p.process.fatal_signal.is_some() {
            first.process.fatal_signal = p.process.fatal_signal;
        }
        first.error_counts.extend(p.error_counts);
        first.supp_counts.extend(p.supp_counts);
        first.closed = p.closed;
        first.saw_finished |= p.saw_finished;
        first.problem = first.problem.or(p.problem);
        first.partial_record = p.partial_record;
    }
    first
}

/// Parses and analyses `files` (several files, and large files in chunks,
/// in parallel). `exits` gives the known exit status of processes by pid
/// (the target leakgate started).
pub fn analyze_files(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
) -> Result<Analysis, InputError> {
    analyze_files_observed(files, attributor, suppressor, exits, None)
}

/// [`analyze_files`] with an [`Observer`] that sees every record.
pub fn analyze_files_observed(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
    observer: Option<Observer>,
) -> Result<Analysis, InputError> {
    analyze_files_with(
        files,
        attributor,
        suppressor,
        exits,
        observer,
        Options::default(),
    )
}

/// [`analyze_files_observed`] with [`Options`].
pub fn analyze_files_with(
    files: &[PathBuf],
    attributor: Attributor,
    suppressor: Arc<Suppressor>,
    exits: &HashMap<u64, ExitStatus>,
    observer: Option<Observer>,
    options: Options,
) -> Result<Analysis, InputError> {
    let started = std::time::Instant::now();
    let spec = attributor.spec().clone();
    let threads = std::env::var("LEAKGATE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
        .max(1);
    // LEAKGATE_CHUNK_BYTES (tests, benchmarks) forces chunking of smaller files.
    let forced: Option<u64> = std::env::var("LEAKGATE_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok());
    let (chunk_min, chunk) = forced.map_or((CHUNK_MIN, CHUNK), |c| (c, c));
    let mut inputs = Vec::with_capacity(files.len());
    for f in files {
        inputs.push(match parse::open_input(f)? {
            // A sanitizer log is read whole, never cut into chunks.
            parse::Input::Mapped(m)
                if m.len() as u64 > chunk_min && !parse::looks_like_sanitizer_log(&m) =>
            {
                drop(m);
                let file = std::fs::File::open(f).map_err(|e| InputError::Io {
                    path: f.clone(),
                    err: e,
                })?;
                Slot::Chunked(file)
            }
            parse::Input::Mapped(m) => Slot::Mapped(Arc::new(m)),
            parse::Input::Stream(r) => Slot::Stream(std::sync::Mutex::new(Some(r))),
        });
    }
    // Plan the units; chunked files get their header read first.
    // A piece larger than this has no `<error>` line to cut it at (a file
    // on one line, a 1 GB line): it is read as a stream, never held whole.
    let too_big = chunk.saturating_mul(8);
    let mut units = Vec::new();
    let mut headers: Vec<Option<ProcessInfo>> = vec![None; files.len()];
    for i in 0..inputs.len() {
        let Slot::Chunked(file) = &inputs[i] else {
            units.push(Unit {
                file: i,
                range: None,
                stream: false,
            });
            continue;
        };
        let io = |e| InputError::Io {
            path: files[i].clone(),
            err: e,
        };
        let len = file.metadata().map_err(io)?.len();
        let first = next_error_line(file, 0, len.min(too_big + 1)).map_err(io)?;
        if first > too_big {
            // No `<error>` line near the start: not cut into chunks.
            let mut f = file.try_clone().map_err(io)?;
            std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).map_err(io)?;
            inputs[i] = Slot::Stream(std::sync::Mutex::new(Some(Box::new(
                std::io::BufReader::with_capacity(256 * 1024, f),
            ))));
            units.push(Unit {
                file: i,
                range: None,
                stream: false,
            });
            continue;
        }
        let head_bytes = std::io::BufReader::new(RangeReader {
            file,
            pos: 0,
            end: first,
        });
        let mut scratch = Interner::default();
        let mut head = parse::parse_chunk_stream(
            head_bytes,
            0,
            None,
            &files[i],
            i,
            &mut scratch,
            &mut |_, _| {},
        )?;
        head.finalize();
        headers[i] = Some(head.process);
        let mut start = 0u64;
        while start < len {
            let end = if len - start <= chunk {
                len
            } else {
                next_error_line(file, start.max(first) + chunk, len).map_err(io)?
            };
            let end = end.max(start + 1).min(len);
            units.push(Unit {
                file: i,
                range: Some((start as usize, end as usize)),
                stream: end - start > too_big,
            });
            start = end;
        }
    }
    let supps = suppressor.suppressions().to_vec();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = threads.min(units.len()).max(1);
    let mut master = Aggregator::new(Attributor::new(spec.clone()), suppressor.clone());
    let mut processes = Vec::with_capacity(files.len());
    let mut pending: Vec<parse::FileSummary> = Vec::new();
    // Results are merged in unit order as they arrive, so at most about
    // `workers` unit results are held at once.
    let mut fold = |u: usize, mut out: UnitOut| {
        let unit = &units[u];
        // Snapshot records count the messages of their own chunk only.
        let before: usize = pending
            .iter()
            .map(|p| p.process.client_messages.len())
            .sum();
        if before > 0 {
            for s in &mut out.agg.snaps {
                s.msgs += before as u32;
            }
            for e in &mut out.agg.err_marks {
                e.1 += before as u32;
            }
        }
        master.merge(out.agg);
        pending.push(out.sum);
        let last_of_file = units.get(u + 1).is_none_or(|n| n.file != unit.file);
        if last_of_file {
            let mut sum = combine(std::mem::take(&mut pending));
            sum.finalize();
            master.apply_error_counts(unit.file, &sum.error_counts);
            let mut info = sum.process;
            if let Some(pid) = info.pid
                && let Some(e) = exits.get(&pid)
            {
                info.exit = Some(e.clone());
            }
            if info.exit.is_none()
                && let Some(sig) = &info.fatal_signal
            {
                info.exit = Some(ExitStatus::Signal(sig.clone()));
            }
            if matches!(info.tool.as_deref(), Some("lsan" | "asan")) {
                parse::mark_killed(&mut info);
            }
            processes.push(info);
        }
    };
    let mut first_error: Option<InputError> = None;
    {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<UnitOut, InputError>)>();
        let (units_ref, inputs_ref, headers_ref, spec_ref, supps_ref) =
            (&units, &inputs, &headers, &spec, &supps);
        let next_ref = &next;
        let observer_ref = &observer;
        let options_ref = &options;
        std::thread::scope(|sc| {
            for _ in 0..workers {
                let tx = tx.clone();
                sc.spawn(move || {
                    // Per worker, kept across its units: the matcher's
                    // per-name caches and the interned names stay warm.
                    let suppressor = Arc::new(Suppressor::new(supps_ref.to_vec()));
                    let mut interner = Interner::default();
                    loop {
                        let u = next_ref.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(unit) = units_ref.get(u) else { break };
                        let shared = Shared {
                            inputs: inputs_ref,
                            headers: headers_ref,
                            files,
                            spec: spec_ref,
                            observer: observer_ref,
                            options: options_ref,
                        };
                        let out = run_unit(unit, &shared, &suppressor, &mut interner);
                        if tx.send((u, out)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut waiting: std::collections::BTreeMap<usize, Result<UnitOut, InputError>> =
                Default::default();
            let mut want = 0usize;
            for (u, out) in rx {
                waiting.insert(u, out);
                while let Some(out) = waiting.remove(&want) {
                    match out {
                        Ok(o) if first_error.is_none() => fold(want, o),
                        Ok(_) => {}
                        Err(e) => {
                            if first_error.is_none() {
                                first_error = Some(e);
                                // Stop handing out work.
                                next_ref
                                    .store(usize::MAX / 2, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    }
                    want += 1;
                }
            }
        });
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let analysis = master.finish(processes);
    if std::env::var_os("LEAKGATE_TIMINGS").is_some() {
        let t = analysis.timings;
        eprintln!(
            "leakgate timings: total {:.3}s, attribute {:.3}s, suppress {:.3}s (summed over {} units on {} threads) ({} records, {} rules), peak RSS {} KiB",
            started.elapsed().as_secs_f64(),
            t.attribute.as_secs_f64(),
            t.suppress.as_secs_f64(),
            units.len(),
            workers,
            analysis.summary.records,
            analysis.supp_used.len(),
            peak_rss_kib().map_or_else(|| "?".to_string(), |k| k.to_string())
        );
    }
    Ok(analysis)
}

/// What every unit of one analysis reads.
struct Shared<'s> {
    inputs: &'s [Slot],
    headers: &'s [Option<ProcessInfo>],
    files: &'s [PathBuf],
    spec: &'s crate::analyze::attribute::UserSpec,
    observer: &'s Option<Observer>,
    options: &'s Options,
}

/// A whole file that is not Valgrind XML was not a sanitizer log either:
/// the error says both.
fn nor_sanitizer(e: InputError) -> InputError {
    match e {
        InputError::NotValgrind { path, reason } => InputError::NotValgrind {
            path,
            reason: format!("{reason} (nor a LeakSanitizer/AddressSanitizer log)"),
        },
        other => other,
    }
}

/// Parses and aggregates one unit with its own attributor, and the worker's
/// matcher and interner.
fn run_unit(
    unit: &Unit,
    shared: &Shared<'_>,
    suppressor: &Arc<Suppressor>,
    interner: &mut Interner,
) -> Result<UnitOut, InputError> {
    let Shared {
        inputs,
        headers,
        files,
        spec,
        observer,
        options,
    } = *shared;
    let mut agg = Aggregator::new(Attributor::new(spec.clone()), suppressor.clone());
    agg.observer = observer.clone();
    agg.options = options.clone();
    let file = &files[unit.file];
    let pidx = unit.file;
    let mut sink = |rec, p: &ProcessInfo| agg.add(rec, p);
    let sum = match (&inputs[unit.file], unit.range) {
        (Slot::Chunked(f), Some((start, end))) => {
            let header = if start == 0 {
                None
            } else {
                headers[unit.file].as_ref()
            };
            if unit.stream {
                let r = RangeReader {
                    file: f,
                    pos: start as u64,
                    end: end as u64,
                };
                let r = std::io::BufReader::with_capacity(256 * 1024, r);
                let sum = parse::parse_chunk_stream(
                    r,
                    start as u64,
                    header,
                    file,
                    pidx,
                    interner,
                    &mut sink,
                )?;
                agg.processes = unit.file + 1;
                return Ok(UnitOut { agg, sum });
            }
            let buf = map_at(f, start as u64, end - start).map_err(|e| InputError::Io {
                path: file.clone(),
                err: e,
            })?;
            parse::parse_chunk(&buf, start as u64, header, file, pidx, interner, &mut sink)?
        }
        (Slot::Mapped(map), _) if parse::looks_like_sanitizer_log(map) => {
            parse::parse_sanitizer_log(map, file, pidx, interner, &mut sink)?
        }
        (Slot::Mapped(map), _) => {
            parse::parse_slice(map, file, pidx, interner, &mut sink).map_err(nor_sanitizer)?
        }
        (Slot::Stream(r), _) => {
            let mut r = r
                .lock()
                .expect("input lock")
                .take()
                .expect("a stream is read by one unit");
            let io = |e| InputError::Io {
                path: file.clone(),
                err: e,
            };
            // A sanitizer log (compressed, or from a pipe) is known by its
            // first buffer, then read whole; anything else streams as XML.
            if parse::looks_like_sanitizer_log(r.fill_buf().map_err(io)?) {
                let mut all = Vec::new();
                r.read_to_end(&mut all).map_err(io)?;
                parse::parse_sanitizer_log(&all, file, pidx, interner, &mut sink)?
            } else {
                parse::parse_stream(r, file, pidx, interner, &mut sink).map_err(nor_sanitizer)?
            }
        }
        (Slot::Chunked(_), None) => unreachable!("chunked files are planned in ranges"),
    };
    agg.processes = unit.file + 1;
    Ok(UnitOut { agg, sum })
}
