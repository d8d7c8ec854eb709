//! The data model shared by every pipeline stage: frames, stacks and the
//! records read from Valgrind's XML (errors, leak loss records, fatal signals),
//! plus the per-process facts (pid, command, completeness) found beside them.

use std::sync::Arc;

/// An interned string: repeated object paths and function names share storage.
pub type Sym = Arc<str>;

/// One `<frame>` of a `<stack>`, joined with its `<sframe>` when
/// `--gen-suppressions=all` was used (the mangled name the matcher needs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// `<ip>` as printed (`0x...`), kept verbatim.
    pub ip: Option<Sym>,
    /// `<obj>`: absolute object path.
    pub obj: Option<Sym>,
    /// `<fn>`: (usually demangled) function name.
    pub func: Option<Sym>,
    /// `<dir>`: directory of the source file, when known.
    pub dir: Option<Sym>,
    /// `<file>`: source file name as in the debug info.
    pub file: Option<Sym>,
    /// `<line>`: source line.
    pub line: Option<u32>,
    /// From the matching `<sframe>`: `fun:` name (mangled) or `None`.
    pub sfun: Option<Sym>,
    /// From the matching `<sframe>`: `obj:` path when no function was known.
    pub sobj: Option<Sym>,
}

impl Frame {
    /// `dir/file` when both are known, else `file`.
    pub fn path(&self) -> Option<String> {
        match (&self.dir, &self.file) {
            (Some(d), Some(f)) => Some(format!("{d}/{f}")),
            (None, Some(f)) => Some(f.to_string()),
            _ => None,
        }
    }
}

/// The suppression Valgrind generated for a record (`--gen-suppressions=all`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenSuppression {
    /// `<skind>`, e.g. `Memcheck:Leak`.
    pub kind: String,
    /// `<skaux>`, e.g. `match-leak-kinds: definite` or `write(buf)`.
    pub aux: Option<String>,
    /// `<sframe>` entries: `(is_fun, name)`.
    pub frames: Vec<(bool, Sym)>,
}

/// An `<auxwhat>` (or `<xauxwhat><text>`) with the stack that follows it, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuxInfo {
    pub text: String,
    pub stack: Vec<Frame>,
}

/// One record of the report: an `<error>` (leak or not) or a `<fatal_signal>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Index of the process (into the analysis' process list) it came from.
    pub process: usize,
    /// `<pid>` of the document it came from.
    pub pid: Option<u64>,
    /// `<unique>` parsed from hex; `None` for fatal signals.
    pub unique: Option<u64>,
    /// `<tid>`.
    pub tid: Option<u64>,
    /// `<threadname>` (read raw: Valgrind does not escape it).
    pub thread_name: Option<String>,
    /// `<kind>` verbatim (`Leak_DefinitelyLost`, `InvalidRead`, ...), or
    /// `FatalSignal` for a `<fatal_signal>`.
    pub kind: Sym,
    /// `<what>` or `<xwhat><text>`, trimmed.
    pub what: String,
    /// `<leakedbytes>` (leaks only).
    pub leaked_bytes: Option<u64>,
    /// `<leakedblocks>` (leaks only).
    pub leaked_blocks: Option<u64>,
    /// Protocol 5/6 core errors: `<fd>` and `<path>`.
    pub fd: Option<i64>,
    pub fd_path: Option<String>,
    /// The primary stack (allocation stack for leaks).
    pub stack: Vec<Frame>,
    /// Auxiliary descriptions with their stacks, in order.
    pub aux: Vec<AuxInfo>,
    /// Fatal signals: signal name (`SIGSEGV`).
    pub signame: Option<String>,
    /// The suppression generated for this record, if any.
    pub suppression: Option<GenSuppression>,
    /// How many `<clientmsg>` elements the parsed part of the document
    /// (the file, or the chunk) held before this record: ties a leak
    /// snapshot's records to the checkpoint marker printed before them.
    pub client_msgs: u32,
}

impl Record {
    /// Whether the record is a leak loss record.
    pub fn is_leak(&self) -> bool {
        self.kind.starts_with("Leak_")
    }

    /// The `--track-origins` stack ("Uninitialised value was created ..."), if any.
    pub fn origin(&self) -> Option<&AuxInfo> {
        self.aux
            .iter()
            .find(|a| a.text.starts_with("Uninitialised value was created") && !a.stack.is_empty())
    }
}

/// How a process ended, when leakgate knows (only for the process it started).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitStatus {
    Code(i32),
    Signal(String),
}

/// An instruction Valgrind's decoder could not translate, as its standard
/// error said (`vex amd64->IR: unhandled instruction bytes: 0x62 0xF1 …`,
/// or `disInstr(arm64): unhandled instruction 0x…`): seen only by `run`,
/// the XML does not say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnhandledInstruction {
    /// The process (Valgrind's `==PID==` of the "Unrecognised instruction"
    /// line that follows, else the writer of the line).
    pub pid: u64,
    /// The guest architecture as Valgrind names it (`amd64`, `x86`, `arm64`).
    pub arch: String,
    /// The bytes as Valgrind printed them (`0x62 0xF1 0xFE 0x48 …`: the
    /// instruction and what follows it, up to 10 bytes on amd64).
    pub bytes: String,
    /// The instruction's address ("Unrecognised instruction at address …").
    pub address: Option<u64>,
}

/// Facts about one Valgrind XML document (one process).
#[derive(Debug, Clone, Default)]
pub struct ProcessInfo {
    /// The XML file it was read from.
    pub file: String,
    pub pid: Option<u64>,
    pub ppid: Option<u64>,
    /// `<protocolversion>`.
    pub protocol: Option<u32>,
    /// `<protocoltool>`.
    pub tool: Option<String>,
    /// Valgrind version from the preamble (`3.19.0`).
    pub valgrind_version: Option<String>,
    /// Client argv (`<argv><exe/><arg/>*`).
    pub command: Vec<String>,
    /// Valgrind's own options (`<vargv><arg/>*`).
    pub valgrind_args: Vec<String>,
    /// Saw `<status><state>FINISHED</state>` and `</valgrindoutput>`.
    pub complete: bool,
    /// Why the document is incomplete, when it is.
    pub incomplete_reason: Option<String>,
    /// How it ended (known for the top process of a `run`, or from a fatal signal).
    pub exit: Option<ExitStatus>,
    /// Fatal signal seen in the XML.
    pub fatal_signal: Option<String>,
    /// `<clientmsg>` texts.
    pub client_messages: Vec<String>,
    /// Count of `<error>` records read from this file.
    pub records: u64,
    /// The part of a process before it exec'd (see `processes::classify`).
    pub pre_exec: bool,
    /// Forked from a traced parent without exec.
    pub forked: bool,
}

/// What Valgrind itself renames `(below main)` (with the default
/// `--show-below-main=no`; its `VG_(get_fnname_kind)`): glibc's start-up
/// functions by their exact names or with a `.` clone suffix. A versioned
/// symbol such as `__libc_start_main@@GLIBC_2.34` is *not* renamed (see
/// `../shared/docs/valgrind-xml-and-suppressions.md` §3.4), which the
/// suppression matcher must mirror.
pub fn valgrind_renames_below_main(name: &str) -> bool {
    matches!(
        name,
        "__libc_start_main" | "__libc_start_call_main" | "_start" | "generic_start_main"
    ) || name.starts_with("__libc_start_main.")
        || name.starts_with("generic_start_main.")
}

/// Whether a frame lies below `main`: Valgrind's `(below main)`, a name
/// Valgrind renames so, or such a name with a version suffix
/// (`__libc_start_main@@GLIBC_2.34`) or glibc 2.34's `__libc_start_main_impl`.
/// Such frames never decide whose a record is and never pin a generated
/// suppression.
pub fn is_below_main(name: &str) -> bool {
    if name == "(below main)" || valgrind_renames_below_main(name) {
        return true;
    }
    let base = name.split('@').next().unwrap_or(name);
    (base != name && valgrind_renames_below_main(base)) || base == "__libc_start_main_impl"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_main_is_valgrind_s_rule_plus_what_it_leaves_unrenamed() {
        for n in [
            "(below main)",
            "__libc_start_main",
            "__libc_start_call_main",
            "_start",
            "generic_start_main.isra.0",
            "__libc_start_main@@GLIBC_2.34",
            "__libc_start_main_impl",
        ] {
            assert!(is_below_main(n), "{n}");
        }
        for n in ["main", "_start_thread", "__libc_start_mainly", "start"] {
            assert!(!is_below_main(n), "{n}");
        }
        // Valgrind does not rename the versioned symbol.
        assert!(!valgrind_renames_below_main(
            "__libc_start_main@@GLIBC_2.34"
        ));
        assert!(valgrind_renames_below_main("__libc_start_main.constprop.0"));
        assert!(!valgrind_renames_below_main("(below main)"));
    }
}
