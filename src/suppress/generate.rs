//! Suppression-file generator (`leakgate suppress`, `run --write-suppressions`):
//! turns the noise records of a report into short, generalised,
//! deduplicated Valgrind suppressions that never hide a user finding of the
//! same input.
//!
//! Records arrive one at a time through the [`crate::analyze::Observer`]
//! hook. Each covered record (noise of a covered kind that no existing
//! suppression matches) is generalised at once and merged by rule text, so
//! memory grows with the number of distinct rules, not with the report; each
//! rule keeps a few example records. User records are kept (they are few):
//! at the end every rule is matched against them with the post-hoc matcher
//! and a rule that would hide one is narrowed, one example at a time, until
//! it does not (or is dropped, and said so). Rules whose examples are all
//! covered by other rules are then folded into those.
//!
//! Generalisation (from the mangled `<sframe>` names):
//! * allocator frames at the top (`malloc`, `_Znwm`, ...) are kept verbatim;
//! * then the innermost two frames, extended until one of them is a real
//!   (not inlined) frame: inlined header functions such as `Py_INCREF` can
//!   be inlined into your code too, so they alone never pin a rule;
//! * when the frame that owns the noise (attribution's deciding frame, a
//!   library outside the interpreter) lies deeper, the pass-through frames in
//!   between (interpreter internals) collapse into `...` and the owner plus
//!   one more frame are pinned;
//! * `fun:` names lose clone and version suffixes (`.constprop.0`,
//!   `@@GLIBC_2.34` become `*`); `*`/`?` inside a name become `?`, so the
//!   name is not a wider glob than needed; `obj:` paths become
//!   `obj:*/libNAME.so*` with no directory and no version numbers.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use crate::analyze::attribute::{Attributor, UserSpec};
use crate::cli::SuppressArgs;

use crate::analyze::Observer;
use crate::analyze::attribute::{Attribution, ObjClass, classify_object};
use crate::model::{Frame, ProcessInfo, Record};
use crate::suppress::{
    LeakKind, LeakKindSet, MatchOutcome, RecordKind, Suppressor, Verdict, parse, record_kind,
};
use crate::versions::{FD_ERRORS_IN_XML, VgVersion};

/// Valgrind's default `--num-callers`: a suppression with more location
/// lines is truncated there (and so becomes wider), so rules stay within it.
pub const MAX_LINES: usize = 12;
/// Example records kept per rule (for narrowing and folding).
const MAX_EXAMPLES: usize = 16;
/// Frames of an example record that are kept.
const EXAMPLE_FRAMES: usize = 40;

/// Which record kinds the generator covers (`--kinds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindFilter {
    pub leaks: LeakKindSet,
    pub errors: bool,
}

impl Default for KindFilter {
    /// The gated kinds: definite, indirect and every non-leak error.
    fn default() -> Self {
        let mut leaks = LeakKindSet::only(LeakKind::Definite);
        leaks.insert(LeakKind::Indirect);
        KindFilter {
            leaks,
            errors: true,
        }
    }
}

impl KindFilter {
    /// `definite,indirect,possible,reachable,errors` (any subset) or `all`.
    pub fn parse(s: &str) -> Result<KindFilter, String> {
        let mut k = KindFilter {
            leaks: LeakKindSet::NONE,
            errors: false,
        };
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "all" => {
                    k.leaks = LeakKindSet::ALL;
                    k.errors = true;
                }
                "errors" => k.errors = true,
                w => match LeakKind::from_token(w) {
                    Some(l) => k.leaks.insert(l),
                    None => {
                        return Err(format!(
                            "unknown kind {w:?} (definite, indirect, possible, reachable, errors or all)"
                        ));
                    }
                },
            }
        }
        if k.leaks.is_empty() && !k.errors {
            return Err("no kinds given".into());
        }
        Ok(k)
    }

    fn covers(&self, rk: &RecordKind) -> bool {
        match rk {
            RecordKind::Leak(l) => self.leaks.contains(*l),
            _ => self.errors,
        }
    }

    /// The filter as `--kinds` text.
    pub fn describe(&self) -> String {
        let mut v: Vec<&str> = Vec::new();
        for k in [
            LeakKind::Definite,
            LeakKind::Indirect,
            LeakKind::Possible,
            LeakKind::Reachable,
        ] {
            if self.leaks.contains(k) {
                v.push(k.token());
            }
        }
        if self.errors {
            v.push("errors");
        }
        v.join(",")
    }
}

/// What to generate.
#[derive(Debug, Clone, Default)]
pub struct GenOptions {
    pub kinds: KindFilter,
    /// Cover records attributed to the user's code too (no safety check then).
    pub include_user: bool,
    /// The Valgrind that will read the file: only kinds it reads are
    /// written. `None`: 3.19.0, the oldest supported.
    pub target: Option<VgVersion>,
}

impl GenOptions {
    /// [`GenOptions::target`], 3.19.0 when unset.
    pub fn target(&self) -> VgVersion {
        self.target.unwrap_or(VgVersion::new(3, 19, 0))
    }
}

/// The kind part of a rule: `Memcheck:KIND` plus its extra line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GKind {
    Leak(LeakKindSet),
    Other { name: String, extra: Option<String> },
}

impl GKind {
    /// From the record's kind; `None` for kinds the target Valgrind cannot
    /// suppress (3.19 reads none of the 3.21/3.22 kinds; 3.26 renamed
    /// `BadSize` to `UnsafeZeroSize`, the name written for it from 3.26).
    fn of(rk: &RecordKind, target: VgVersion) -> Option<GKind> {
        let plain = |n: &str| {
            Some(GKind::Other {
                name: n.to_string(),
                extra: None,
            })
        };
        match rk {
            RecordKind::Leak(l) => Some(GKind::Leak(LeakKindSet::only(*l))),
            RecordKind::ReallocZero if target.at_least(3, 21) => plain("ReallocZero"),
            RecordKind::BadAlign if target.at_least(3, 22) => plain("BadAlign"),
            RecordKind::BadSize if target.at_least(3, 26) => plain("UnsafeZeroSize"),
            RecordKind::BadSize if target.at_least(3, 22) => plain("BadSize"),
            RecordKind::SizeMismatch if target.at_least(3, 22) => plain("SizeMismatch"),
            RecordKind::Other { tool, kind }
                if tool == "CoreError"
                    && crate::kind::is_fd_kind(kind)
                    && target.at_least(FD_ERRORS_IN_XML.0, FD_ERRORS_IN_XML.1) =>
            {
                plain(&format!("CoreError:{kind}"))
            }
            RecordKind::AlignMismatch if target.at_least(3, 22) => plain("AlignMismatch"),
            RecordKind::Addr(n) => plain(&format!("Addr{n}")),
            RecordKind::Value(n) => plain(&format!("Value{n}")),
            RecordKind::Cond => plain("Cond"),
            RecordKind::Free => plain("Free"),
            RecordKind::Jump => plain("Jump"),
            RecordKind::Overlap => plain("Overlap"),
            RecordKind::Mempool => plain("Mempool"),
            RecordKind::User => plain("User"),
            RecordKind::Param(p) if is_extra_safe(p) => Some(GKind::Other {
                name: "Param".into(),
                extra: Some(p.clone()),
            }),
            RecordKind::FishyValue { func, arg }
                if is_extra_safe(func) && is_extra_safe(arg) && !func.contains('(') =>
            {
                Some(GKind::Other {
                    name: "FishyValue".into(),
                    extra: Some(format!("{func}({arg})")),
                })
            }
            _ => None,
        }
    }

    /// Key for merging (leak kinds are unioned, so they are not part of it).
    fn key(&self) -> String {
        match self {
            GKind::Leak(_) => "Leak".into(),
            GKind::Other { name, extra } => format!("{name}\n{}", extra.as_deref().unwrap_or("")),
        }
    }

    fn tag(&self) -> String {
        match self {
            GKind::Leak(set) => {
                let mut v: Vec<&str> = set.iter().map(LeakKind::token).collect();
                v.reverse();
                v.join("+")
            }
            GKind::Other { name, .. } => {
                name.strip_prefix("CoreError:").unwrap_or(name).to_string()
            }
        }
    }
}

/// An extra line must be one line that Valgrind reads back verbatim.
fn is_extra_safe(s: &str) -> bool {
    !s.is_empty()
        && s.trim() == s
        && !s.contains(['\n', '\r'])
        && !s.starts_with('#')
        && !s.starts_with("fun:")
        && !s.starts_with("obj:")
        && s != "..."
        && s != "}"
}

/// A record kept as an example of a rule.
#[derive(Debug, Clone)]
struct Example {
    rec: Record,
    owner: Option<usize>,
    source: &'static str,
}

#[derive(Debug, Clone)]
struct GenRule {
    kind: GKind,
    lines: Vec<String>,
    records: u64,
    /// The generalisation level the rule was made at (0: most general).
    level: u32,
    source: &'static str,
    func: String,
    examples: Vec<Example>,
}

impl GenRule {
    fn key(&self) -> String {
        format!("{}\n{}", self.kind.key(), self.lines.join("\n"))
    }

    /// Every record it stands for is among its examples.
    fn complete(&self) -> bool {
        self.records as usize <= self.examples.len()
    }

    fn text(&self, name: &str) -> String {
        // Descriptor kinds are core errors: `CoreError:KIND`, no tool prefix.
        let core =
            matches!(&self.kind, GKind::Other { name, .. } if name.starts_with("CoreError:"));
        let tool = if core { "" } else { "Memcheck:" };
        let mut s = format!("{{\n   {name}\n   {tool}");
        match &self.kind {
            GKind::Leak(set) => {
                let _ = write!(s, "Leak\n   match-leak-kinds: {set}\n");
            }
            GKind::Other { name, extra } => {
                let _ = writeln!(s, "{name}");
                if let Some(e) = extra {
                    let _ = writeln!(s, "   {e}");
                }
            }
        }
        for l in &self.lines {
            let _ = writeln!(s, "   {l}");
        }
        s.push('}');
        s
    }
}

/// Collects covered records and user records while an analysis runs.
pub struct Generator {
    opts: GenOptions,
    rules: Vec<GenRule>,
    index: HashMap<String, usize>,
    users: Vec<Record>,
    raw: HashSet<u64>,
    covered: u64,
    skipped: u64,
    valgrind_args: Option<Vec<String>>,
    valgrind_version: Option<String>,
}

/// The result: rules ready to write, and what happened on the way.
#[derive(Debug, Default)]
pub struct Generated {
    /// `(name, comment, rule text)`, in output order.
    pub rules: Vec<(String, String, String)>,
    /// Records covered by the rules.
    pub records: u64,
    /// Distinct suppressions a raw `--gen-suppressions=all` dump of the same
    /// records would hold.
    pub raw_rules: usize,
    /// Remarks for the user (narrowed or dropped rules, skipped records).
    pub notes: Vec<String>,
    pub valgrind_version: Option<String>,
    /// The Valgrind the file is written for.
    pub target: String,
}

/// Facts about one frame that generalisation needs.
struct FInfo {
    loc: String,
    class: ObjClass,
    inlined: bool,
    alloc: bool,
}

fn is_alloc_name(n: &str) -> bool {
    let n = n.split('@').next().unwrap_or(n);
    crate::analyze::attribute::ALLOCATORS.contains(&n)
        || n.starts_with("_Znw")
        || n.starts_with("_Zna")
        || n.starts_with("_Zdl")
        || n.starts_with("_Zda")
        || n.starts_with("operator new")
        || n.starts_with("operator delete")
}

fn is_below_main(n: &str) -> bool {
    n == "(below main)"
        || n == "_start"
        || n.starts_with("__libc_start_main")
        || n.starts_with("__libc_start_call_main")
        || n.starts_with("generic_start_main")
}

/// `fun:` pattern for a (mangled) name: clone/version suffixes become `*`,
/// `*` and `?` inside the name become `?`.
pub fn fun_pattern(name: &str) -> String {
    let mut cut = name.len();
    let mut star = false;
    if let Some(i) = name.find('@') {
        cut = i;
        star = true;
    }
    for m in [
        ".constprop.",
        ".isra.",
        ".part.",
        ".cold",
        ".lto_priv.",
        ".llvm.",
    ] {
        if let Some(i) = name[..cut].find(m)
            && i > 0
        {
            cut = i;
            star = true;
        }
    }
    let mut s: String = name[..cut]
        .chars()
        .map(|c| if c == '*' { '?' } else { c })
        .collect();
    if star {
        s.push('*');
    }
    format!("fun:{s}")
}

/// `obj:` pattern for an object path: `obj:*/libNAME.so*`, no directory, no
/// version numbers, no Python ABI tag.
pub fn obj_pattern(path: &str) -> String {
    if path.is_empty() || path == "???" {
        return "obj:*".into();
    }
    let base = path.rsplit('/').next().unwrap_or(path);
    let so = base
        .match_indices(".so")
        .find(|(i, _)| {
            let rest = &base[i + 3..];
            rest.is_empty() || rest.starts_with('.')
        })
        .map(|(i, _)| i);
    let mut stem = match so {
        Some(i) => &base[..i],
        None => base,
    };
    let mut star = false;
    for tag in [".cpython-", ".cp3", ".abi3", ".pypy"] {
        if let Some(i) = stem.find(tag)
            && i > 0
        {
            stem = &stem[..i];
            star = true;
        }
    }
    // Trailing `.N.M` version groups (`libpython3.11`, `python3.11`).
    while let Some(dot) = stem.rfind('.') {
        let tail = &stem[dot + 1..];
        if dot > 0 && !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            stem = &stem[..dot];
            star = true;
        } else {
            break;
        }
    }
    // A wheel's hash suffix (`libgomp-a34b3233`).
    if let Some(dash) = stem.rfind('-') {
        let tail = &stem[dash + 1..];
        if tail.len() >= 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()) && dash > 0 {
            stem = &stem[..dash];
            star = true;
        }
    }
    let stem: String = stem
        .chars()
        .map(|c| if c == '*' { '?' } else { c })
        .collect();
    let star = if star { "*" } else { "" };
    match so {
        Some(_) => format!("obj:*/{stem}{star}.so*"),
        None => format!("obj:*/{stem}{star}"),
    }
}

/// The location lines Valgrind would see for each frame (mangled names).
fn frame_infos(rec: &Record) -> Vec<FInfo> {
    let stack = &rec.stack;
    let has_sframes = stack.iter().any(|f| f.sfun.is_some() || f.sobj.is_some());
    let gen_frames = rec
        .suppression
        .as_ref()
        .map(|g| &g.frames)
        .filter(|g| !has_sframes && g.len() == stack.len());
    let mut out = Vec::with_capacity(stack.len());
    for (i, f) in stack.iter().enumerate() {
        let inlined = f.ip.is_some() && stack.get(i + 1).is_some_and(|n| n.ip == f.ip);
        let name: Option<String> = if has_sframes {
            f.sfun.as_deref().map(str::to_string)
        } else if let Some(g) = gen_frames {
            g.get(i)
                .filter(|(is_fun, _)| *is_fun)
                .map(|(_, n)| n.to_string())
        } else {
            // No <sframe>: only plain C names are the names Valgrind matches.
            f.func
                .as_deref()
                .filter(|n| !(n.contains('(') || n.contains("::") || n.contains('<')))
                .filter(|n| !n.starts_with("operator"))
                .map(str::to_string)
        };
        if name.as_deref().is_some_and(is_below_main)
            || f.func.as_deref().is_some_and(is_below_main)
        {
            break;
        }
        let class = classify_object(f.obj.as_deref());
        let alloc = class == ObjClass::Valgrind
            || (name.as_deref().is_some_and(is_alloc_name)
                && matches!(class, ObjClass::System | ObjClass::Unknown));
        let loc = match name.as_deref() {
            Some(n) if !n.is_empty() && n != "???" && !n.contains(['\n', '\r']) => fun_pattern(n),
            _ => obj_pattern(f.sobj.as_deref().or(f.obj.as_deref()).unwrap_or_default()),
        };
        out.push(FInfo {
            loc,
            class,
            inlined,
            alloc,
        });
    }
    out
}

/// The generalised rule lines for a record at `level` (0 most general;
/// 1 without `...`; each further level pins one more frame). `None` when the
/// record gives nothing to pin or the rule would exceed [`MAX_LINES`].
fn rule_lines(rec: &Record, owner: Option<usize>, level: u32) -> Option<Vec<String>> {
    let infos = frame_infos(rec);
    let np = infos.iter().take_while(|f| f.alloc).count();
    let (prefix, body) = infos.split_at(np);
    let mut lines: Vec<String> = prefix.iter().map(|f| f.loc.clone()).collect();
    if body.is_empty() {
        return (!lines.is_empty() && lines.len() <= MAX_LINES).then_some(lines);
    }
    // The innermost frames: at least two (one more per level above 1), and
    // at least one of them a real (not inlined) frame.
    let need = 2 + level.saturating_sub(1) as usize;
    let mut real = 0;
    let mut anchor_end = body.len() - 1;
    for (i, f) in body.iter().enumerate() {
        if !f.inlined {
            real += 1;
        }
        if i + 1 >= need && real >= 1 {
            anchor_end = i;
            break;
        }
    }
    // The owning library frame, when it lies deeper and is not the interpreter.
    let owner_b = owner
        .filter(|&o| o >= np && o - np < body.len())
        .map(|o| o - np)
        .filter(|&o| !matches!(body[o].class, ObjClass::Interpreter | ObjClass::Valgrind))
        .filter(|&o| o > anchor_end);
    match owner_b {
        Some(o) => {
            let end = (o + 1).min(body.len() - 1);
            lines.extend(body[..=anchor_end].iter().map(|f| f.loc.clone()));
            if level == 0 && o > anchor_end + 1 {
                lines.push("...".into());
            } else {
                lines.extend(body[anchor_end + 1..o].iter().map(|f| f.loc.clone()));
            }
            lines.extend(body[o..=end].iter().map(|f| f.loc.clone()));
        }
        None => lines.extend(body[..=anchor_end].iter().map(|f| f.loc.clone())),
    }
    // A trailing `...` or `obj:*` adds nothing but width.
    while lines.last().is_some_and(|l| l == "..." || l == "obj:*") && lines.len() > 1 {
        lines.pop();
    }
    if lines
        .iter()
        .all(|l| l == "..." || l == "obj:*" || l == "fun:*")
    {
        return None;
    }
    (lines.len() <= MAX_LINES).then_some(lines)
}

/// A readable, name-safe version of a function name.
fn readable(f: &Frame) -> String {
    let raw = match (&f.func, &f.obj) {
        (Some(n), _) => n.to_string(),
        (None, Some(o)) => o.rsplit('/').next().unwrap_or(o).to_string(),
        _ => "unknown".into(),
    };
    let mut s = raw.as_str();
    if let Some(i) = s.find('(')
        && i > 0
    {
        s = &s[..i];
    }
    // Drop a leading return type (`long pybind11::...`).
    if let Some(i) = s.rfind(' ')
        && !s[..i].contains('<')
    {
        s = &s[i + 1..];
    }
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '~') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_string();
    let out: String = out.chars().take(60).collect();
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// One line describing an example stack.
fn example_line(rec: &Record) -> String {
    let mut parts = Vec::new();
    for f in rec.stack.iter().take(8) {
        let mut p = match (&f.func, &f.obj) {
            (Some(n), _) => n.to_string(),
            (None, Some(o)) => format!("[{}]", o.rsplit('/').next().unwrap_or(o)),
            _ => "???".into(),
        };
        if p.chars().count() > 60 {
            p = p.chars().take(57).collect::<String>() + "...";
        }
        if let (Some(file), Some(line)) = (&f.file, f.line) {
            let _ = write!(p, " ({file}:{line})");
        }
        parts.push(p);
    }
    let mut s = parts.join(" < ");
    if rec.stack.len() > 8 {
        let _ = write!(s, " < ... {} more", rec.stack.len() - 8);
    }
    s.replace(['\n', '\r'], " ")
}

/// What a record contributes, worked out outside the generator's lock.
enum Prepared {
    Ignore,
    User,
    /// Covered, but not expressible (with its raw-rule hash).
    Skipped(Option<u64>),
    Rule {
        kind: GKind,
        lines: Vec<String>,
        example: Box<Example>,
        raw: Option<u64>,
    },
}

fn prepare(opts: &GenOptions, rec: &Record, att: &Attribution, suppressed: bool) -> Prepared {
    if suppressed {
        return Prepared::Ignore;
    }
    if att.is_user() && !opts.include_user {
        return Prepared::User;
    }
    let Some(rk) = record_kind(rec) else {
        return Prepared::Ignore;
    };
    if !opts.kinds.covers(&rk) {
        return Prepared::Ignore;
    }
    let raw = rec.suppression.as_ref().map(|g| {
        let mut t = format!("{}\n{}", g.kind, g.aux.as_deref().unwrap_or(""));
        for (f, n) in &g.frames {
            let _ = write!(t, "\n{}{n}", if *f { "fun:" } else { "obj:" });
        }
        crate::util::fnv1a(t.as_bytes())
    });
    let Some(kind) = GKind::of(&rk, opts.target()) else {
        return Prepared::Skipped(raw);
    };
    let Some(lines) = rule_lines(rec, att.owner, 0) else {
        return Prepared::Skipped(raw);
    };
    let mut ex = rec.clone();
    ex.stack.truncate(EXAMPLE_FRAMES);
    Prepared::Rule {
        kind,
        lines,
        example: Box::new(Example {
            rec: ex,
            owner: att.owner,
            source: att.source.map_or("user", |s| s.label()),
        }),
        raw,
    }
}

impl Generator {
    pub fn new(opts: GenOptions) -> Generator {
        Generator {
            opts,
            rules: Vec::new(),
            index: HashMap::new(),
            users: Vec::new(),
            raw: HashSet::new(),
            covered: 0,
            skipped: 0,
            valgrind_args: None,
            valgrind_version: None,
        }
    }

    /// A generator shared with the analysis through an [`Observer`] (the
    /// analysis runs on several threads; records are generalised outside
    /// the lock).
    pub fn shared(opts: GenOptions) -> (Arc<Mutex<Generator>>, Observer) {
        let g = Arc::new(Mutex::new(Generator::new(opts.clone())));
        let h = g.clone();
        let obs: Observer = Arc::new(move |rec, att, p, suppressed| {
            let prepared = prepare(&opts, rec, att, suppressed);
            let mut g = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            g.take(rec, p, prepared);
        });
        (g, obs)
    }

    /// Takes the generator out of its shared handle once the analysis is done.
    pub fn unshare(g: Arc<Mutex<Generator>>) -> Generator {
        match Arc::try_unwrap(g) {
            Ok(m) => m
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Err(a) => {
                let mut guard = a.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                std::mem::replace(&mut *guard, Generator::new(GenOptions::default()))
            }
        }
    }

    /// Sees one record after attribution and the existing suppressions.
    pub fn observe(
        &mut self,
        rec: &Record,
        att: &Attribution,
        process: &ProcessInfo,
        suppressed: bool,
    ) {
        let p = prepare(&self.opts, rec, att, suppressed);
        self.take(rec, process, p);
    }

    fn take(&mut self, rec: &Record, process: &ProcessInfo, p: Prepared) {
        if self.valgrind_args.is_none() {
            self.valgrind_args = Some(process.valgrind_args.clone());
        }
        if self.valgrind_version.is_none() {
            self.valgrind_version = process.valgrind_version.clone();
        }
        match p {
            Prepared::Ignore => {}
            Prepared::User => self.users.push(rec.clone()),
            Prepared::Skipped(raw) => {
                self.covered += 1;
                self.skipped += 1;
                self.raw.extend(raw);
            }
            Prepared::Rule {
                kind,
                lines,
                example,
                raw,
            } => {
                self.covered += 1;
                self.raw.extend(raw);
                self.insert(kind, lines, 0, *example, 1);
            }
        }
    }

    fn insert(&mut self, kind: GKind, lines: Vec<String>, level: u32, ex: Example, records: u64) {
        let func = {
            let np = ex
                .rec
                .stack
                .iter()
                .take_while(|f| {
                    classify_object(f.obj.as_deref()) == ObjClass::Valgrind
                        || f.func.as_deref().is_some_and(is_alloc_name)
                })
                .count();
            ex.rec
                .stack
                .get(np)
                .or(ex.rec.stack.first())
                .map(readable)
                .unwrap_or_else(|| "unknown".into())
        };
        let rule = GenRule {
            kind,
            lines,
            records,
            level,
            source: ex.source,
            func,
            examples: Vec::new(),
        };
        let key = rule.key();
        let i = match self.index.get(&key) {
            Some(&i) => {
                let r = &mut self.rules[i];
                r.records += records;
                if let (GKind::Leak(a), GKind::Leak(b)) = (&mut r.kind, &rule.kind) {
                    for k in b.iter() {
                        a.insert(k);
                    }
                }
                r.level = r.level.max(level);
                i
            }
            None => {
                self.rules.push(rule);
                self.index.insert(key, self.rules.len() - 1);
                self.rules.len() - 1
            }
        };
        let r = &mut self.rules[i];
        if r.examples.len() < MAX_EXAMPLES {
            r.examples.push(ex);
        }
    }

    /// The rules' texts as Valgrind reads them (names are placeholders).
    fn parsed(&self, rules: &[GenRule]) -> Suppressor {
        let text: String = rules
            .iter()
            .enumerate()
            .map(|(i, r)| r.text(&format!("r{i}")) + "\n")
            .collect();
        let (s, errs) = parse("generated", &text, "Memcheck", 500);
        debug_assert!(errs.is_empty(), "{errs:?}");
        Suppressor::new(s)
    }

    fn args(&self) -> Vec<String> {
        self.valgrind_args.clone().unwrap_or_default()
    }

    /// Whether a single rule would hide some user record.
    fn hides_user(&self, rule: &GenRule) -> bool {
        let sup = self.parsed(std::slice::from_ref(rule));
        let set = sup.set_for(&self.args());
        self.users
            .iter()
            .any(|u| set.first_match(u) != MatchOutcome::NotSuppressed)
    }

    /// Safety check, narrowing, folding; names and comments.
    pub fn finish(mut self, taken_names: &HashSet<String>) -> Generated {
        let mut notes = Vec::new();
        if self.opts.include_user {
            notes.push(
                "--include-user: records in your code are covered too; no safety check".into(),
            );
        }
        // 1. Safety: narrow rules that would hide a user record.
        if !self.users.is_empty() && !self.opts.include_user {
            let sup = self.parsed(&self.rules);
            let set = sup.set_for(&self.args());
            let mut bad = BTreeSet::new();
            for u in &self.users {
                for (i, v) in set.explain(u) {
                    if v != Verdict::No {
                        bad.insert(i);
                    }
                }
            }
            if !bad.is_empty() {
                let old = std::mem::take(&mut self.rules);
                self.index.clear();
                let mut redo = Vec::new();
                for (i, r) in old.into_iter().enumerate() {
                    if bad.contains(&i) {
                        redo.push(r);
                    } else {
                        let key = r.key();
                        self.rules.push(r);
                        self.index.insert(key, self.rules.len() - 1);
                    }
                }
                for r in redo {
                    let name = format!("{}-{}-{}", r.source, r.kind.tag(), r.func);
                    if !r.complete() {
                        notes.push(format!(
                            "rule {name} would hide a finding in your code and was narrowed; \
                             {} of its {} records are not represented by an example and may \
                             show up again (run `leakgate suppress` once more)",
                            r.records - r.examples.len() as u64,
                            r.records
                        ));
                    }
                    for ex in r.examples {
                        self.narrow(&r.kind, ex, r.level, &name, &mut notes);
                    }
                }
            }
        }
        // 2. Folding: a rule whose records are all examples, each matched by
        // another rule, is folded into that rule.
        let sup = self.parsed(&self.rules);
        let set = sup.set_for(&self.args());
        let mut order: Vec<usize> = (0..self.rules.len()).collect();
        order.sort_by_key(|&i| {
            (
                self.rules[i].records,
                std::cmp::Reverse(self.rules[i].level),
            )
        });
        let covers: Vec<Vec<Vec<usize>>> = self
            .rules
            .iter()
            .map(|r| {
                r.examples
                    .iter()
                    .map(|e| {
                        set.explain(&e.rec)
                            .into_iter()
                            .filter(|(_, v)| *v == Verdict::Yes)
                            .map(|(i, _)| i)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let mut dropped = vec![false; self.rules.len()];
        for &r in &order {
            if !self.rules[r].complete() {
                continue;
            }
            let ok = (0..self.rules.len())
                .filter(|&o| o == r || dropped[o])
                .all(|o| {
                    covers[o]
                        .iter()
                        .all(|c| c.iter().any(|&x| x != r && !dropped[x]))
                });
            if ok {
                dropped[r] = true;
                let to = covers[r]
                    .first()
                    .and_then(|c| c.iter().copied().find(|&x| x != r && !dropped[x]));
                if let Some(to) = to {
                    let n = self.rules[r].records;
                    self.rules[to].records += n;
                }
            }
        }
        // Self-check: every example is still matched.
        let kept: Vec<GenRule> = self
            .rules
            .iter()
            .zip(&dropped)
            .filter(|(_, d)| !**d)
            .map(|(r, _)| r.clone())
            .collect();
        let sup = self.parsed(&kept);
        let set = sup.set_for(&self.args());
        let missed = self
            .rules
            .iter()
            .flat_map(|r| r.examples.iter())
            .filter(|e| !matches!(set.first_match(&e.rec), MatchOutcome::Suppressed(_)))
            .count();
        if missed > 0 {
            notes.push(format!(
                "{missed} example record(s) are not matched by the generated rules (a bug: please report)"
            ));
        }
        if self.skipped > 0 {
            notes.push(format!(
                "{} record(s) could not be expressed as a suppression Valgrind {} reads and are not covered",
                self.skipped,
                self.opts.target()
            ));
        }
        // 3. Names and output order (most records first).
        let mut kept = kept;
        kept.sort_by(|a, b| {
            b.records
                .cmp(&a.records)
                .then_with(|| a.source.cmp(b.source))
                .then_with(|| a.lines.cmp(&b.lines))
        });
        let mut names: HashSet<String> = taken_names.clone();
        let mut out = Vec::new();
        let mut records = 0;
        for r in &kept {
            let base = format!("leakgate-{}-{}-{}", r.source, r.kind.tag(), r.func);
            let mut name = base.clone();
            let mut n = 2;
            while names.contains(&name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            names.insert(name.clone());
            records += r.records;
            let comment = format!(
                "# {} record{} ({}), e.g. {}",
                r.records,
                if r.records == 1 { "" } else { "s" },
                match &r.kind {
                    GKind::Leak(s) => s.to_string(),
                    GKind::Other { name, .. } => name.clone(),
                },
                r.examples
                    .first()
                    .map(|e| example_line(&e.rec))
                    .unwrap_or_default()
            );
            out.push((name.clone(), comment, r.text(&name)));
        }
        Generated {
            rules: out,
            records,
            raw_rules: self.raw.len(),
            notes,
            valgrind_version: self.valgrind_version.clone(),
            target: self.opts.target().to_string(),
        }
    }

    /// Re-generalises one example at narrower levels until its rule hides no
    /// user record; drops it (with a note) when no level does.
    fn narrow(
        &mut self,
        kind: &GKind,
        ex: Example,
        from: u32,
        name: &str,
        notes: &mut Vec<String>,
    ) {
        let target = self.opts.target();
        let kind = match (
            kind,
            record_kind(&ex.rec)
                .as_ref()
                .and_then(|rk| GKind::of(rk, target)),
        ) {
            (GKind::Leak(_), Some(k @ GKind::Leak(_))) => k,
            _ => kind.clone(),
        };
        let mut prev: Option<Vec<String>> = None;
        for level in from + 1..from + 64 {
            let Some(lines) = rule_lines(&ex.rec, ex.owner, level) else {
                break;
            };
            if prev.as_ref() == Some(&lines) {
                break;
            }
            let cand = GenRule {
                kind: kind.clone(),
                lines: lines.clone(),
                records: 1,
                level,
                source: ex.source,
                func: String::new(),
                examples: Vec::new(),
            };
            if !self.hides_user(&cand) {
                self.insert(kind, lines, level, ex, 1);
                return;
            }
            prev = Some(lines);
        }
        notes.push(format!(
            "dropped a rule for one record of {name}: every form of it would also hide a finding in your code ({})",
            example_line(&ex.rec)
        ));
    }
}

/// Renders a complete suppression file: a header, then each rule with its
/// comment.
pub fn render(g: &Generated, header: &[String]) -> String {
    let mut s = String::new();
    for h in header {
        for l in h.lines() {
            let _ = writeln!(s, "# {l}");
        }
    }
    for (_, comment, text) in &g.rules {
        s.push('\n');
        s.push_str(comment);
        s.push('\n');
        s.push_str(text);
        s.push('\n');
    }
    s
}

/// The header lines for a generated file.
pub fn header(g: &Generated, from: &str, kinds: &KindFilter) -> Vec<String> {
    let per = if g.rules.is_empty() {
        0.0
    } else {
        g.records as f64 / g.rules.len() as f64
    };
    vec![
        format!(
            "Generated by leakgate {} from: {from}",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "Valgrind {}; covers the noise records of kinds {} that no existing suppression matched.",
            g.valgrind_version.as_deref().unwrap_or("(version unknown)"),
            kinds.describe()
        ),
        format!(
            "Written for Valgrind {}: only suppression kinds it reads (leakgate lint --valgrind-version {} checks it).",
            g.target, g.target
        ),
        format!(
            "{} rules for {} records ({per:.1} records per rule; a raw --gen-suppressions=all dump would need {} distinct rules).",
            g.rules.len(),
            g.records,
            g.raw_rules
        ),
    ]
}

/// One line for the terminal: what was written.
pub fn summary_line(g: &Generated, path: &str) -> String {
    let per = if g.rules.is_empty() {
        0.0
    } else {
        g.records as f64 / g.rules.len() as f64
    };
    format!(
        "leakgate: wrote {} suppression rule(s) for {} record(s) to {path} ({per:.1} records per rule; raw --gen-suppressions=all: {} distinct rules)",
        g.rules.len(),
        g.records,
        g.raw_rules
    )
}

/// The command line this process was started with, for file headers.
fn invocation() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("leakgate {}", crate::util::shell_join(&args))
}

/// Writes `text` to `path`, or standard output when `path` is `None`.
fn write_out(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .context("cannot write the suppressions")
        }
    }
}

fn print_result(g: &Generated, dest: &str) {
    eprintln!("{}", summary_line(g, dest));
    for n in &g.notes {
        eprintln!("leakgate: note: {n}");
    }
}

/// `leakgate suppress PATH... [-o FILE] [--merge-into FILE]`.
pub fn cmd_suppress(a: SuppressArgs) -> anyhow::Result<i32> {
    let kinds = KindFilter::parse(&a.kinds).map_err(|e| anyhow::anyhow!("--kinds: {e}"))?;
    let roots = a
        .src_roots
        .iter()
        .map(|r| {
            std::fs::canonicalize(r)
                .with_context(|| format!("--src-root {}: no such directory", r.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let spec = UserSpec {
        roots,
        user_objects: a.user_objects.clone(),
    };
    let mut existing = a.suppressions.clone();
    let merge_text = match &a.merge_into {
        Some(m) if m.exists() => {
            existing.push(m.clone());
            Some(
                std::fs::read_to_string(m)
                    .with_context(|| format!("cannot read {}", m.display()))?,
            )
        }
        Some(_) => Some(String::new()),
        None => None,
    };
    let supps = crate::suppress::load::load(&existing, !a.no_bundled_suppressions)?;
    let taken: HashSet<String> = supps.iter().map(|s| s.name.clone()).collect();
    let suppressor = Arc::new(Suppressor::new(supps));
    let files = crate::analyze::collect_inputs(&a.paths)?;
    let (target, _) =
        crate::commands::target_valgrind(a.valgrind.as_deref(), a.valgrind_version.as_deref())?;
    let (g, obs) = Generator::shared(GenOptions {
        kinds,
        include_user: a.include_user,
        target: Some(target),
    });
    let analysis = crate::analyze::analyze_files_observed(
        &files,
        Attributor::new(spec),
        suppressor,
        &HashMap::new(),
        Some(obs),
    )?;
    let accounting = crate::analyze::check_conservation(&analysis);
    drop(analysis);
    let generated = Generator::unshare(g).finish(&taken);
    let head = header(&generated, &invocation(), &kinds);
    let (text, dest) = match (&merge_text, &a.merge_into) {
        (Some(old), Some(m)) => {
            let mut t = old.clone();
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            if !generated.rules.is_empty() {
                if !t.is_empty() {
                    t.push('\n');
                }
                t.push_str(&render(&generated, &head));
            }
            (t, Some(a.output.clone().unwrap_or_else(|| m.clone())))
        }
        _ => (render(&generated, &head), a.output.clone()),
    };
    write_out(dest.as_deref(), &text)?;
    print_result(
        &generated,
        &dest.map_or("standard output".into(), |d| d.display().to_string()),
    );
    if let Some(what) = accounting {
        eprintln!("leakgate: internal error: {what}; please report this bug");
        return Ok(crate::exit::INTERNAL);
    }
    Ok(0)
}

/// `run --write-suppressions FILE`: the generator that watches the run's
/// analysis, and the file it writes afterwards.
pub struct RunWriter {
    generator: Arc<Mutex<Generator>>,
    observer: Observer,
    path: PathBuf,
    kinds: KindFilter,
    taken: HashSet<String>,
}

impl RunWriter {
    /// `None` when no file was asked for; an error for bad `kinds`.
    pub fn new(
        path: Option<&Path>,
        kinds: &str,
        suppressor: &Suppressor,
    ) -> anyhow::Result<Option<RunWriter>> {
        let Some(path) = path else { return Ok(None) };
        let kinds = KindFilter::parse(kinds)
            .map_err(|e| anyhow::anyhow!("--write-suppressions-kinds: {e}"))?;
        let (generator, observer) = Generator::shared(GenOptions {
            kinds,
            include_user: false,
            target: None,
        });
        Ok(Some(RunWriter {
            generator,
            observer,
            path: path.to_path_buf(),
            kinds,
            taken: suppressor
                .suppressions()
                .iter()
                .map(|s| s.name.clone())
                .collect(),
        }))
    }

    /// Writes for the Valgrind that ran (its `--version`): called before
    /// the analysis starts, it makes the generator (and the observer, which
    /// holds its own copy of the options) afresh for that version.
    pub fn set_target(&mut self, version: Option<&str>) {
        if let Some(v) = version.and_then(VgVersion::parse) {
            let (generator, observer) = Generator::shared(GenOptions {
                kinds: self.kinds,
                include_user: false,
                target: Some(v),
            });
            self.generator = generator;
            self.observer = observer;
        }
    }

    /// The hook to give the analysis.
    pub fn observer(&self) -> Observer {
        self.observer.clone()
    }

    /// Writes the file (after the analysis).
    pub fn write(self) -> anyhow::Result<()> {
        drop(self.observer);
        let generated = Generator::unshare(self.generator).finish(&self.taken);
        let head = header(&generated, &invocation(), &self.kinds);
        write_out(Some(&self.path), &render(&generated, &head))?;
        print_result(&generated, &self.path.display().to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_patterns() {
        assert_eq!(
            obj_pattern("/usr/lib/libpython3.11.so.1.0"),
            "obj:*/libpython3*.so*"
        );
        assert_eq!(obj_pattern("/x/libcudart.so.12"), "obj:*/libcudart.so*");
        assert_eq!(obj_pattern("/x/libc10.so"), "obj:*/libc10.so*");
        assert_eq!(
            obj_pattern("/v/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"),
            "obj:*/_multiarray_umath*.so*"
        );
        assert_eq!(
            obj_pattern("/x/libgomp-a34b3233.so.1"),
            "obj:*/libgomp*.so*"
        );
        assert_eq!(obj_pattern("/usr/bin/python3.11"), "obj:*/python3*");
        assert_eq!(
            obj_pattern("/lib64/ld-linux-x86-64.so.2"),
            "obj:*/ld-linux-x86-64.so*"
        );
        assert_eq!(obj_pattern("???"), "obj:*");
    }

    #[test]
    fn function_patterns() {
        assert_eq!(
            fun_pattern("posix_do_stat.constprop.0"),
            "fun:posix_do_stat*"
        );
        assert_eq!(fun_pattern("memcpy@@GLIBC_2.14"), "fun:memcpy*");
        assert_eq!(fun_pattern("operator*"), "fun:operator?");
        assert_eq!(fun_pattern("_ZN3foo3barEv"), "fun:_ZN3foo3barEv");
    }

    #[test]
    fn kind_filter() {
        assert_eq!(
            KindFilter::parse("all").unwrap().describe(),
            "definite,indirect,possible,reachable,errors"
        );
        assert_eq!(KindFilter::default().describe(), "definite,indirect,errors");
        assert!(KindFilter::parse("definite,bogus").is_err());
    }

    fn frame(ip: &str, obj: &str, func: &str) -> Frame {
        Frame {
            ip: Some(ip.into()),
            obj: Some(obj.into()),
            func: Some(func.into()),
            ..Default::default()
        }
    }

    const PRE: &str = "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so";
    const PY: &str = "/opt/py/lib/libpython3.11.so.1.0";

    fn leak(frames: Vec<Frame>) -> Record {
        Record {
            kind: "Leak_DefinitelyLost".into(),
            what: "8 bytes in 1 blocks are definitely lost".into(),
            stack: frames,
            ..Default::default()
        }
    }

    #[test]
    fn narrowed_until_no_user_record_is_hidden() {
        let noise = leak(vec![
            frame("0x1", PRE, "malloc"),
            frame("0x2", PY, "gc_alloc"),
            frame("0x3", PY, "_PyObject_GC_NewVar"),
            frame("0x4", PY, "PyTuple_New"),
            frame("0x5", PY, "import_find_and_load"),
        ]);
        let user = leak(vec![
            frame("0x1", PRE, "malloc"),
            frame("0x2", PY, "gc_alloc"),
            frame("0x3", PY, "_PyObject_GC_NewVar"),
            frame("0x6", PY, "PyTuple_Pack"),
            frame("0x7", "/home/u/ext.so", "my_leak"),
        ]);
        let natt = Attribution {
            source: Some(crate::analyze::attribute::Source::Python),
            owner: Some(1),
            user_frames: vec![],
            local_paths: vec![],
            reason: None,
        };
        let uatt = Attribution {
            source: None,
            owner: Some(4),
            user_frames: vec![4],
            local_paths: vec![],
            reason: None,
        };
        let p = ProcessInfo::default();
        // Without the user record: the general rule.
        let mut g = Generator::new(GenOptions::default());
        g.observe(&noise, &natt, &p, false);
        let out = g.finish(&HashSet::new());
        assert_eq!(out.rules.len(), 1);
        assert!(
            out.rules[0].2.ends_with("fun:_PyObject_GC_NewVar\n}"),
            "{}",
            out.rules[0].2
        );
        // With it: narrowed by one frame, and the user record stays visible.
        let mut g = Generator::new(GenOptions::default());
        g.observe(&noise, &natt, &p, false);
        g.observe(&user, &uatt, &p, false);
        let out = g.finish(&HashSet::new());
        assert_eq!(out.rules.len(), 1);
        let text = &out.rules[0].2;
        assert!(text.ends_with("fun:PyTuple_New\n}"), "{text}");
        let (s, e) = parse("t", text, "Memcheck", 500);
        assert!(e.is_empty());
        let set = Suppressor::new(s).set_for(&[]);
        assert_eq!(set.first_match(&user), MatchOutcome::NotSuppressed);
        assert!(matches!(
            set.first_match(&noise),
            MatchOutcome::Suppressed(_)
        ));
        // Kinds merge into one match-leak-kinds line, without spaces.
        let mut g = Generator::new(GenOptions::default());
        g.observe(&noise, &natt, &p, false);
        let mut ind = noise.clone();
        ind.kind = "Leak_IndirectlyLost".into();
        g.observe(&ind, &natt, &p, false);
        let out = g.finish(&HashSet::new());
        assert_eq!(out.rules.len(), 1);
        assert!(
            out.rules[0]
                .2
                .contains("match-leak-kinds: indirect,definite\n")
        );
    }
}
