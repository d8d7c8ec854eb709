//! The report model: what every renderer (text, JSON, later JUnit/SARIF/HTML)
//! shows. Its serde form *is* the JSON contract (`schema_version` 1, see
//! docs/json.md); names and meanings of existing fields never
//! change, fields may be added.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::kind::Kind;
use crate::model::ExitStatus;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub valgrind: ValgrindInfo,
    /// "run" or "analyze".
    pub mode: String,
    /// The target's argv (run) or the analysed paths (analyze).
    pub command: Vec<String>,
    /// Environment changes leakgate made for the target, e.g. `PYTHONMALLOC=malloc`.
    pub environment: Vec<String>,
    /// How the target (the process leakgate started) ended; null in analyze mode.
    pub target_exit: Option<ExitStatus>,
    /// Run mode, pytest with checkpoints: the test the target was running
    /// when it ended (a crash inside a test); absent when it was in none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_running_test: Option<String>,
    pub processes: Vec<ProcessOut>,
    pub findings: Vec<Finding>,
    pub summary: Summary,
    pub verdict: Verdict,
    /// Things the user should know that are not findings (incomplete files,
    /// unknown protocol versions, Valgrind's log when it failed, ...).
    pub notes: Vec<String>,
    /// Roots used to decide what is user code.
    pub src_roots: Vec<String>,
    /// The Valgrind command line leakgate ran (run mode); empty otherwise
    /// (see `processes[].valgrind_args` for what the XML records).
    #[serde(default)]
    pub valgrind_command: Vec<String>,
    /// The gate policy the verdict was decided with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyOut>,
    /// With `--baseline`: the comparison with the baseline file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineOut>,
    /// Run mode: how the run ended when leakgate stopped it (`--timeout`,
    /// Ctrl-C); absent when the target ended by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StoppedOut>,
    /// Checkpoints (pytest plugin, `leakgate_probe.checkpoint`), when the
    /// run had any: see `findings[].tests` and `findings[].growth`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_test: Option<PerTestOut>,
    /// `run --origins auto`: whether a re-run with `--track-origins=yes`
    /// was needed, what it covered and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origins: Option<OriginsOut>,
    /// The engine that watched the target when it was not Valgrind
    /// (`--engine lsan|asan`, or sanitizer logs given to `analyze`);
    /// absent for Valgrind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineOut>,
    /// `run --shard K/N`: the part of the suite this report covers (absent
    /// for a whole run, and for a merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardOut>,
}

/// A sanitizer engine: which, and what it does not check that Valgrind
/// does.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EngineOut {
    /// `lsan` or `asan`.
    pub name: String,
    /// The runtime preloaded into the target (run mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// What this engine does not check, one phrase each.
    pub not_checked: Vec<String>,
    /// Whether leak stacks were unwound exactly: `fast` (frame pointers
    /// only), `exact` (`fast_unwind_on_malloc=0`, from the start or in the
    /// re-run of the whole target for stacks fast unwinding cut short), or
    /// `fast, exact for N re-run tests` (only the pytest tests concerned
    /// ran again, and their cut leaks have that run's stacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwind: Option<String>,
}

impl EngineOut {
    /// The engine's name and what it does not check, on one line.
    pub fn line(&self) -> String {
        let mut s = format!("engine: {}", self.name);
        if let Some(r) = &self.runtime {
            s.push_str(&format!(" ({r})"));
        }
        if let Some(u) = &self.unwind {
            // `fast, exact for 2 re-run tests`: `fast unwinding (exact ...)`.
            let (how, rest) = u
                .split_once(", ")
                .map_or((u.as_str(), None), |(a, b)| (a, Some(b)));
            s.push_str(&format!(", {how} unwinding"));
            if let Some(rest) = rest {
                s.push_str(&format!(" ({rest})"));
            }
        }
        if !self.not_checked.is_empty() {
            s.push_str(&format!("; not checked: {}", self.not_checked.join(", ")));
        }
        s
    }
}

/// `run --origins auto`: the run went without `--track-origins=yes`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OriginsOut {
    /// `auto`.
    pub mode: String,
    /// Uninitialised-value findings in the user's code without an origin
    /// after the first run (0: no re-run).
    pub wanted: u64,
    /// Of those, how many the re-run gave an origin.
    pub found: u64,
    /// The re-run, when one was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<RerunOut>,
}

/// The re-run of `--origins auto`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RerunOut {
    /// `tests` (only the pytest tests in `tests`) or `command` (all of it).
    pub scope: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
    /// Wall time of the re-run, Valgrind included.
    pub seconds: f64,
    /// How the re-run's target exited.
    pub target_exit: ExitStatus,
}

/// Why and how leakgate stopped the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoppedOut {
    /// `"timeout"` or `"interrupted"`.
    pub reason: String,
    /// One sentence: `timed out after 90s: SIGTERM sent to Valgrind's process group`.
    pub detail: String,
    /// Signals leakgate sent to the process group, in order (`SIGTERM`, `SIGKILL`).
    pub signals_sent: Vec<String>,
}

/// The gate policy, as the verdict applied it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PolicyOut {
    /// `--fail-on` items, canonical (`definite`, `errors`, `InvalidRead`, ...).
    pub fail_on: Vec<String>,
    /// `--max-leaked-bytes`: gated leaks fail only above this many bytes.
    pub max_leaked_bytes: Option<u64>,
    pub fail_on_incomplete: bool,
    pub fail_on_target_exit: bool,
}

/// The comparison with a baseline file (`--baseline`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineOut {
    /// The baseline file.
    pub file: String,
    /// Entries in the baseline.
    pub entries: u64,
    /// User findings not in the baseline.
    pub new: u64,
    /// User findings in the baseline.
    pub known: u64,
    /// Baseline entries no longer seen.
    pub fixed: Vec<BaselineEntry>,
}

/// One entry of a baseline file: a user finding, by fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// The finding's `fingerprint`.
    pub fingerprint: String,
    pub kind: Kind,
    /// The function of the finding's location.
    pub function: Option<String>,
    /// The file of the finding's location (relative to the repository root
    /// when it lies inside it).
    pub file: Option<String>,
    /// The source line's text (trimmed): tells sites in one function apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// For people: what the finding was.
    pub description: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValgrindInfo {
    /// e.g. "3.19.0"; null when unknown.
    pub version: Option<String>,
    /// XML protocol version of the report(s).
    pub protocol: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProcessOut {
    pub pid: Option<u64>,
    pub ppid: Option<u64>,
    pub command: Vec<String>,
    pub complete: bool,
    pub exit: Option<ExitStatus>,
    /// The XML file it was read from.
    pub xml: String,
    /// Why it is incomplete, if it is.
    pub incomplete_reason: Option<String>,
    /// Error records read from this process' XML.
    pub records: u64,
    /// `<clientmsg>` texts (VALGRIND_PRINTF), in order.
    pub client_messages: Vec<String>,
    /// Valgrind's own options as the XML records them (`<vargv>`).
    #[serde(default)]
    pub valgrind_args: Vec<String>,
    /// This XML is the part of the process before it exec'd another
    /// program (Valgrind stops writing it at the exec; nothing is missing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pre_exec: bool,
    /// Forked from its parent without exec (shares the parent's pre-fork heap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forked: bool,
    /// Run mode, pytest with checkpoints: the test this process was running
    /// when it ended (a crash inside a test); absent when it was in none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_test: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameOut {
    pub function: Option<String>,
    pub object: Option<String>,
    pub file: Option<String>,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub ip: Option<String>,
    /// Whether leakgate judged this frame to be user code.
    pub user: bool,
    /// A user frame in code a generator wrote (Cython): `function`, `file`,
    /// `path` and `line` name the source the user edits (the `.pyx`), and
    /// this the generated code Valgrind named. See docs/cython.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedCode>,
}

/// Where in generated code (Cython's C or C++) a location or frame lies,
/// when leakgate mapped it back to the source the code was generated from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GeneratedCode {
    /// What generated it: `cython`.
    pub generator: String,
    /// The generated file as the debug info names it (`leaky.c`).
    pub file: Option<String>,
    /// Its local path, when found.
    pub path: Option<String>,
    /// The line in the generated file.
    pub line: Option<u32>,
    /// The C function Valgrind named (`__pyx_pf_5leaky_leak_def`).
    pub function: Option<String>,
    /// Whether the source file (`path` of the location or frame) was
    /// found; when not, the source line shown is the copy Cython wrote
    /// into its comment in the generated file.
    pub source_found: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Finding {
    /// Stable hex id: kind + function names of the user/owner frames.
    pub fingerprint: String,
    /// Valgrind's kind string (`Leak_DefinitelyLost`, `InvalidRead`, ...).
    pub kind: Kind,
    /// "user" or "noise".
    pub category: Category,
    /// null for user findings, else the noise label.
    pub source: Option<String>,
    /// Valgrind's `<what>` of the first record.
    pub message: String,
    /// Leaks: Valgrind's leakedbytes (direct + indirect), summed over records.
    pub bytes: Option<u64>,
    /// Leaks: the direct part of `bytes` (Valgrind's "N (D direct, I indirect)"),
    /// summed over records; what Valgrind's leak summary counts.
    pub direct_bytes: Option<u64>,
    /// Leaks: leaked blocks, summed over records.
    pub blocks: Option<u64>,
    /// Occurrences (errors: from `<errorcounts>`; leaks: number of loss records).
    pub count: u64,
    pub location: Option<Location>,
    /// The source line at `location`, when the file is readable.
    pub source_line: Option<String>,
    pub stack: Vec<FrameOut>,
    /// The `--track-origins` stack, if any.
    pub origin: Option<Vec<FrameOut>>,
    pub pids: Vec<u64>,
    /// How many XML records this finding stands for.
    pub records: u64,
    /// Auxiliary descriptions Valgrind gave (address descriptions, origins).
    pub aux: Vec<String>,
    /// The auxiliary descriptions that come with a stack, in Valgrind's
    /// order: where a block was freed and allocated (a use after free, an
    /// invalid or mismatched free), the block an address lies near, an
    /// overlap's other block, the origin of an uninitialised value (also in
    /// `origin`). Their frames are marked `user` as the main stack's are.
    /// Not part of the fingerprint. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aux_stacks: Vec<AuxStack>,
    /// Whether the gate policy counts this finding (a user finding of a
    /// `--fail-on` kind that the baseline does not know). Absent in reports
    /// from before policies existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gated: Option<bool>,
    /// Whether this finding fails the gate: gated, and for leaks, the gated
    /// leaks' bytes exceed `--max-leaked-bytes`. Set by the gate with
    /// `gated`; not in the JSON (it follows from `gated` and the policy, and
    /// `gate::restore` sets it again for a saved report).
    #[serde(skip)]
    pub fails: bool,
    /// With `--baseline`: `"new"` or `"known"` (user findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineState>,
    /// Per process: how much of this finding each pid contributed (one
    /// entry per pid in `pids`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<FindingProcess>,
    /// Fork children (no exec) whose XML repeats this leak because they
    /// inherited the parent's heap: reported once, for the parent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherited_by: Vec<u64>,
    /// How to fix it, when leakgate knows (e.g. `CudaIpcProducerExited`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// Noise whose stack runs through your code: why it is not yours
    /// (an uninitialised value the interpreter made, interpreter
    /// bookkeeping such as tracemalloc's). A user finding whose block a
    /// library allocated for your direct call: which library and function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A caveat about the location's line: it lies in the body of a local
    /// Rust `macro_rules!` macro, whose expanded code carries the macro's
    /// lines, not the call site's (user findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_note: Option<String>,
    /// With checkpoints (the pytest plugin, `leakgate_probe.checkpoint`):
    /// the tests (checkpoints) it grew in, with the bytes and blocks added
    /// in each, in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<TestShare>,
    /// With checkpoints: `per_call` (grows at every repetition or call),
    /// `one_time` (grew once and not again), or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<Growth>,
    /// With `growth` `per_call`: what one call adds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_call: Option<BytesBlocks>,
    /// A user leak made once at import (under `PyInit_*` or a module exec
    /// slot, or before the first test with checkpoints): it leaks once per
    /// interpreter that imports the module, and is gated only when
    /// `--fail-on` names `import` (`analyze/import_time.rs`). Absent when
    /// false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_import: bool,
    /// A user `Leak_IndirectlyLost` finding whose blocks a gated definite
    /// leak owns: the owner's `fingerprint`. Set by the gate, with `gated`
    /// false (the owner's bytes hold it); renderers show it under its owner
    /// (`indirect_parts`), not as a finding of its own (`gate/indirect.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indirect_of: Option<String>,
    /// A gated definite leak: the indirect findings it owns, in report order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indirect_parts: Vec<IndirectPart>,
}

/// An indirectly lost finding shown under the definite leak that owns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndirectPart {
    /// The indirect finding's `fingerprint`.
    pub fingerprint: String,
    pub bytes: u64,
    pub blocks: u64,
    /// Where its blocks were allocated (the indirect finding's `location`).
    pub location: Option<Location>,
}

/// An auxiliary description with its stack (`<auxwhat>` or `<xauxwhat>`
/// followed by a `<stack>`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AuxStack {
    /// Valgrind's text, e.g. `Address 0x4a40320 is 0 bytes inside a block
    /// of size 4 free'd` or `Block was alloc'd at`; empty when Valgrind gave
    /// a stack without one.
    pub text: String,
    pub stack: Vec<FrameOut>,
}

/// A test's (checkpoint's) share of a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestShare {
    /// The pytest node id (`tests/test_x.py::test_a[1]`), or the checkpoint's label.
    pub test: String,
    /// `test`, `start` (collection, before the first test), `finish` (end
    /// of the session), `checkpoint` (a `checkpoint()` call), `exit` (after
    /// the last checkpoint), `unmarked` (a leak check without a marker).
    pub kind: String,
    /// Bytes and blocks added there (all repetitions).
    pub bytes: u64,
    pub blocks: u64,
    /// With `--repeat N`: what each repetition added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repetitions: Vec<BytesBlocks>,
    /// This test's own growth: `per_call`, `one_time` or `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth: Option<Growth>,
    /// Memory errors (not leaks): how many of the finding's error contexts
    /// first occurred in this test.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errors: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The checkpoints of a run (present when the XML had any).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PerTestOut {
    /// Checkpoint markers read.
    pub checkpoints: u64,
    /// Loss records of the snapshots (not findings themselves).
    pub snapshot_records: u64,
    /// Still-reachable noise records of the final leak check left out
    /// because leakgate asked Valgrind for reachable blocks only to follow
    /// them across snapshots.
    pub hidden_reachable: u64,
    /// `--repeat`: how often each test ran.
    pub repeat: u32,
    /// The tests that ran (node ids), in order.
    pub tests: Vec<String>,
    /// CPython's free lists as the probe left them: `off` (every tuple,
    /// list, dict and float is a fresh malloc), or why they stayed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_lists: Option<String>,
    /// What the checkpoints say beyond the findings (also in `notes`): tests
    /// whose lost blocks grow at every call only in `python` noise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Run mode: each pytest test's seconds under the engine (its
    /// repetitions and checkpoints included), by node id; what `run
    /// --shard-durations` balances shards by. Absent when none was timed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub durations: std::collections::BTreeMap<String, f64>,
}

/// `run --shard K/N`: which part of the suite a report covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardOut {
    /// K (1-based).
    pub index: u32,
    /// N.
    pub count: u32,
    /// The report whose `per_test.durations` balanced the parts; absent
    /// when they were balanced by the number of tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durations_from: Option<String>,
}

/// One process' share of a finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingProcess {
    pub pid: u64,
    /// XML records from this process.
    pub records: u64,
    /// Occurrences in this process.
    pub count: u64,
    /// Leaks: bytes and blocks in this process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_bytes: Option<u64>,
    /// The XML part (`processes[].xml`) these records came from, when the
    /// pid has several parts (it exec'd another program): one entry per part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xml: Option<String>,
}

impl Report {
    /// How many processes ran: a pid with several XML parts (it exec'd
    /// another program) is one process; parts without a pid count alone.
    pub fn process_count(&self) -> u64 {
        let mut pids: Vec<u64> = self.processes.iter().filter_map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let unknown = self.processes.iter().filter(|p| p.pid.is_none()).count();
        (pids.len() + unknown) as u64
    }
}

impl Finding {
    pub fn is_user(&self) -> bool {
        self.category == Category::User
    }
    pub fn is_leak(&self) -> bool {
        self.kind.is_leak()
    }
    /// Whether the gate counts this finding (`gated`; set by the gate).
    pub fn is_gated(&self) -> bool {
        self.gated == Some(true)
    }
    /// Known from the baseline.
    pub fn is_known(&self) -> bool {
        self.baseline == Some(BaselineState::Known)
    }
    /// A user finding a person must fix, shown as one: the user's, and not
    /// indirectly lost blocks that a gated definite leak owns
    /// (`indirect_of`: shown under that leak).
    pub fn is_user_shown(&self) -> bool {
        self.is_user() && self.indirect_of.is_none()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesBlocks {
    pub bytes: u64,
    pub blocks: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UserSummary {
    pub findings: u64,
    pub definitely_lost: BytesBlocks,
    pub indirectly_lost: BytesBlocks,
    pub possibly_lost: BytesBlocks,
    pub still_reachable: BytesBlocks,
    /// User findings that are not leaks (memory errors, fatal signals).
    pub errors: u64,
    /// User leaks made once at import (`findings[].at_import`), counted in
    /// the leak kinds above too. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub at_import: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NoiseSummary {
    pub findings: u64,
    /// Records per noise label.
    pub by_source: BTreeMap<String, u64>,
    /// Leaked bytes per noise label.
    pub bytes_by_source: BTreeMap<String, u64>,
    /// Records per Valgrind kind.
    pub by_kind: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SuppressedSummary {
    /// Records suppressed (leakgate applies suppressions after the run).
    pub records: u64,
    /// Records per suppression name.
    pub by_suppression: BTreeMap<String, u64>,
    /// Records that some suppression may match but the XML cannot decide
    /// (e.g. a demangled `<fn>` without `<sframe>` names): not suppressed.
    pub undecidable: u64,
    pub undecidable_by_suppression: BTreeMap<String, u64>,
    /// Suppressions that matched nothing (only with --show-unused-suppressions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unused: Option<Vec<String>>,
    /// How many suppressions were loaded (bundled + yours).
    pub loaded: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Error records read (`<error>` and `<fatal_signal>`), all processes.
    /// Always equals Σ findings[].records + suppressed.records.
    pub records: u64,
    /// Records per Valgrind kind, as read.
    pub records_by_kind: BTreeMap<String, u64>,
    pub user: UserSummary,
    pub noise: NoiseSummary,
    pub suppressed: SuppressedSummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// "pass", "fail", "incomplete", "target_failed" or "error".
    pub status: Status,
    pub exit_code: i32,
    /// Why, one sentence each (empty on a pass).
    pub reasons: Vec<String>,
}

/// Where a finding points: the frame that decided it (for noise, the
/// library frame that made it noise).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Location {
    pub function: Option<String>,
    pub file: Option<String>,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub object: Option<String>,
    /// Code a generator wrote (Cython): the fields above name the source
    /// (`.pyx` file, line, Python-level function) and this the generated
    /// C/C++ code Valgrind named. Absent for other code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated: Option<GeneratedCode>,
}

/// Whose a finding is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The user's code: what the gate is about.
    User,
    /// Interpreter, runtime, library or leakgate noise (`source` says which).
    #[default]
    Noise,
}

/// A user finding compared with the baseline (`--baseline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineState {
    /// Not in the baseline: gated as usual.
    New,
    /// In the baseline: reported, not gated.
    Known,
}

/// How a leak grew across checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Growth {
    /// Grows at every repetition or call.
    PerCall,
    /// Grew once and not again.
    OneTime,
    /// The checkpoints cannot tell.
    Unknown,
}

impl Growth {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Growth::PerCall => "per_call",
            Growth::OneTime => "one_time",
            Growth::Unknown => "unknown",
        }
    }
}

/// The verdict, as `verdict.status` says it; each has one exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Incomplete,
    TargetFailed,
    Error,
}

impl Status {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Incomplete => "incomplete",
            Status::TargetFailed => "target_failed",
            Status::Error => "error",
        }
    }

    /// The exit code of this verdict (docs/exit-codes.md, `crate::exit`).
    pub fn exit_code(self) -> i32 {
        use crate::exit;
        match self {
            Status::Pass => exit::PASS,
            Status::Fail => exit::FAIL,
            Status::Incomplete => exit::INCOMPLETE,
            Status::TargetFailed => exit::TARGET,
            Status::Error => exit::INTERNAL,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Growth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl BaselineState {
    /// The JSON string.
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineState::New => "new",
            BaselineState::Known => "known",
        }
    }
}

impl std::fmt::Display for BaselineState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
