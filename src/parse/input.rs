//! Opening report files: plain XML or zstd-compressed (`.zst`, detected by its
//! magic number), and the typed errors a caller branches on.
#![allow(unsafe_code)] // memmap2::Mmap::map is unsafe (a file changed while mapped)

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Why an input could not be read as a Valgrind report. All map to exit 2.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    #[error("{0}: directory contains no *.xml files")]
    EmptyDir(PathBuf),
    #[error("{path}: cannot read: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: not a Valgrind XML report: {reason}")]
    NotValgrind { path: PathBuf, reason: String },
    /// leakgate's own `--format json` report, given where XML or a
    /// sanitizer log is read: never read as an empty pass.
    #[error(
        "{0}: a leakgate JSON report, not a Valgrind XML report or sanitizer log: `leakgate report {0}` renders it with its own verdict, `leakgate merge` folds several"
    )]
    LeakgateJson(PathBuf),
}

/// Whether `head` (the start of a file) is JSON rather than XML or a
/// sanitizer log: its first character is `{` or `[`. A leakgate JSON
/// report holds the probe's words (`leakgate-checkpoint {`) and the
/// sanitizers' in its strings, so it is told apart before any sniffing.
pub fn looks_like_json(head: &[u8]) -> bool {
    let t = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    t.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[')
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// An opened report: memory-mapped (plain files) or a stream (compressed
/// input, pipes).
pub enum Input {
    Mapped(memmap2::Mmap),
    Stream(Box<dyn BufRead + Send>),
}

/// Opens `path`: plain regular files are memory-mapped (parsed without
/// copying), zstd input is decompressed on the fly.
pub fn open_input(path: &Path) -> Result<Input, InputError> {
    let io = |err| InputError::Io {
        path: path.to_path_buf(),
        err,
    };
    let mut file = File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            InputError::NotFound(path.to_path_buf())
        } else {
            io(e)
        }
    })?;
    let mut magic = [0u8; 4];
    let n = read_up_to(&mut file, &mut magic).map_err(io)?;
    let head = magic[..n].to_vec();
    let chained = std::io::Cursor::new(head).chain(file);
    if n == 4 && magic == ZSTD_MAGIC {
        let dec = zstd::stream::read::Decoder::new(chained).map_err(io)?;
        return Ok(Input::Stream(Box::new(BufReader::with_capacity(
            256 * 1024,
            dec,
        ))));
    }
    let file = chained.into_inner().1;
    let is_file = file
        .metadata()
        .map(|m| m.is_file() && m.len() > 0)
        .unwrap_or(false);
    if is_file {
        // SAFETY: the map is read-only; a report rewritten while we read it
        // can at worst give malformed XML, which the parser reports.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(Input::Mapped(map));
        }
    }
    let mut file = file;
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    Ok(Input::Stream(Box::new(BufReader::with_capacity(
        256 * 1024,
        file,
    ))))
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
