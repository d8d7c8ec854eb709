//! The sanitizer's words in Valgrind's: an AddressSanitizer headline and
//! access line give a Memcheck kind and `what`, its `is located` line and
//! the `freed by` / `allocated by` lines give Valgrind's auxiliary texts
//! (the ones `analyze::auxiliary` and the renderers show).

/// What an error report is, in Valgrind's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ErrorKind {
    pub(super) kind: &'static str,
    /// Valgrind's wording, without the sanitizer's headline.
    pub(super) what: String,
    /// Fatal signals: `SIGSEGV`, ...
    pub(super) signame: Option<&'static str>,
}

/// The signal a `SEGV on unknown address` (or `BUS`, `FPE`, ...) headline names.
fn signal(bug: &str) -> Option<(&'static str, u32)> {
    Some(match bug {
        "SEGV" | "stack-overflow" => ("SIGSEGV", 11),
        "BUS" => ("SIGBUS", 7),
        "FPE" => ("SIGFPE", 8),
        "ILL" => ("SIGILL", 4),
        "ABRT" => ("SIGABRT", 6),
        "TRAP" => ("SIGTRAP", 5),
        _ => return None,
    })
}

/// The bug type of a headline (`heap-use-after-free on address 0x..` →
/// `heap-use-after-free`; `attempting double-free on ..` → `double-free`).
pub(super) fn bug_type(headline: &str) -> &str {
    if headline.starts_with("attempting double-free") {
        return "double-free";
    }
    if headline.starts_with("attempting free on address which was not malloc()-ed") {
        return "bad-free";
    }
    headline.split([' ', ':']).next().unwrap_or(headline)
}

/// Maps an AddressSanitizer report: its headline and, when it has one,
/// its access line (`READ`/`WRITE`, size).
pub(super) fn classify(headline: &str, access: Option<(bool, u64)>) -> ErrorKind {
    let bug = bug_type(headline);
    let plain = |kind: &'static str, what: &str| ErrorKind {
        kind,
        what: what.to_string(),
        signame: None,
    };
    if let Some((name, no)) = signal(bug) {
        return ErrorKind {
            kind: "FatalSignal",
            what: format!("Process terminating with default action of signal {no} ({name})"),
            signame: Some(name),
        };
    }
    match bug {
        "double-free" | "bad-free" => {
            return plain(
                "InvalidFree",
                "Invalid free() / delete / delete[] / realloc()",
            );
        }
        "alloc-dealloc-mismatch" | "new-delete-type-mismatch" => {
            return plain("MismatchedFree", "Mismatched free() / delete / delete []");
        }
        "memcpy-param-overlap" => {
            return plain("Overlap", "Source and destination overlap");
        }
        "allocation-size-too-big"
        | "calloc-overflow"
        | "reallocarray-overflow"
        | "pvalloc-overflow"
        | "negative-size-param" => {
            return plain(
                "FishyValue",
                "Argument of an allocation function has a fishy value",
            );
        }
        "invalid-allocation-alignment"
        | "invalid-aligned-alloc-alignment"
        | "invalid-posix-memalign-alignment" => {
            return plain("InvalidAlignment", "Invalid alignment value");
        }
        _ => {}
    }
    match access {
        Some((false, n)) => ErrorKind {
            kind: "InvalidRead",
            what: format!("Invalid read of size {n}"),
            signame: None,
        },
        Some((true, n)) => ErrorKind {
            kind: "InvalidWrite",
            what: format!("Invalid write of size {n}"),
            signame: None,
        },
        None => ErrorKind {
            kind: "InvalidRead",
            what: "Invalid memory access".to_string(),
            signame: None,
        },
    }
}

/// Reads an access line: `READ of size 1 at 0x602000000013 thread T0` →
/// (is write, size, thread number, thread name).
pub(super) fn access_line(line: &str) -> Option<(bool, u64, Option<u64>, Option<String>)> {
    let (write, rest) = if let Some(r) = line.strip_prefix("READ of size ") {
        (false, r)
    } else {
        (true, line.strip_prefix("WRITE of size ")?)
    };
    let size = rest.split(' ').next()?.parse().ok()?;
    let (tid, name) = thread_of(rest);
    Some((write, size, tid, name))
}

/// `... thread T3 (worker)` → (3, `worker`).
pub(super) fn thread_of(line: &str) -> (Option<u64>, Option<String>) {
    let Some(i) = line.find("thread T") else {
        return (None, None);
    };
    let rest = &line[i + "thread T".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let tid = digits.parse().ok();
    let after = rest[digits.len()..].trim_start();
    let name = after
        .strip_prefix('(')
        .and_then(|s| s.split_once(')'))
        .map(|(n, _)| n.to_string())
        .filter(|n| !n.is_empty());
    (tid, name)
}

/// A block description: `0x602000000013 is located 3 bytes inside of
/// 16-byte region [0x602000000010,0x602000000020)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Located {
    pub(super) line: String,
    /// (address, offset, Valgrind's relation word, block size) when the
    /// line describes a heap block.
    pub(super) block: Option<(String, u64, &'static str, u64)>,
}

pub(super) fn located(line: &str) -> Option<Located> {
    let (addr, rest) = line.split_once(" is located ")?;
    let addr = addr.trim_start_matches("Address ").to_string();
    if !addr.starts_with("0x") {
        return None;
    }
    let block = (|| {
        let (n, rest) = rest.split_once(" bytes ")?;
        let n: u64 = n.parse().ok()?;
        let (rel, rest) = if let Some(r) = rest.strip_prefix("inside of ") {
            ("inside", r)
        } else if let Some(r) = rest.strip_prefix("to the right of ") {
            ("after", r)
        } else if let Some(r) = rest.strip_prefix("to the left of ") {
            ("before", r)
        } else {
            return None;
        };
        let size: u64 = rest.split_once("-byte region")?.0.parse().ok()?;
        Some((addr.clone(), n, rel, size))
    })();
    Some(Located {
        line: line.to_string(),
        block,
    })
}

/// Valgrind's text for a stack introduced by `intro` (`freed by thread T0
/// here:`), given the block description before it (taken when used).
pub(super) fn aux_text(intro: &str, loc: &mut Option<Located>, saw_free: bool) -> String {
    let intro = intro.trim_end_matches(':').trim();
    let event = if intro.starts_with("freed by") {
        Some("free'd")
    } else if intro.starts_with("previously allocated by") || intro.starts_with("allocated by") {
        Some("alloc'd")
    } else {
        None
    };
    let Some(event) = event else {
        return intro.to_string();
    };
    if event == "alloc'd" && saw_free {
        return "Block was alloc'd at".to_string();
    }
    match loc.take() {
        Some(Located {
            block: Some((addr, n, rel, size)),
            ..
        }) => format!("Address {addr} is {n} bytes {rel} a block of size {size} {event}"),
        Some(l) => {
            *loc = Some(l);
            if event == "free'd" {
                "Block was free'd at"
            } else {
                "Block was alloc'd at"
            }
            .to_string()
        }
        None => if event == "free'd" {
            "Block was free'd at"
        } else {
            "Block was alloc'd at"
        }
        .to_string(),
    }
}
