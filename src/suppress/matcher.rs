//! Post-hoc suppression matching against records read from Valgrind XML
//! (spec §3, m_errormgr.c `is_suppressible_error`, m_seqmatch.c), with a
//! three-valued answer: a match can be *undecidable* from the XML (frames cut
//! below `main`, demangled `<fn>` names without `<sframe>`s, §3.7).
//!
//! Speed: each distinct function name / object path is compared once with
//! every distinct pattern of the loaded suppressions and the result is kept as
//! a bit set (cached across records); rules are indexed by kind and by their
//! innermost location, and a rule is only run through the `...`-aware
//! sequence matcher when every location it needs occurs somewhere in the
//! stack.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

pub use super::kind::record_kind;
use super::kind::{KindKey, LeakKind, RecordKind};
use super::parse::{Loc, Suppression};
use crate::model::{Frame, Record, Sym};

// ---------------------------------------------------------------------------
// Three-valued logic

/// The answer to "does this suppression match this record?".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Yes,
    No,
    /// Cannot be decided from the XML.
    Unknown,
}

impl Verdict {
    fn and(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::No, _) | (_, Verdict::No) => Verdict::No,
            (Verdict::Yes, Verdict::Yes) => Verdict::Yes,
            _ => Verdict::Unknown,
        }
    }

    fn or(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::Yes, _) | (_, Verdict::Yes) => Verdict::Yes,
            (Verdict::No, Verdict::No) => Verdict::No,
            _ => Verdict::Unknown,
        }
    }
}

// ---------------------------------------------------------------------------
// Name globs

/// `VG_(string_match)`: `*` matches any byte sequence (including `/` and the
/// empty one), `?` exactly one byte, everything else is a literal,
/// case-sensitive byte; no escapes; the whole name must be covered.
/// Linear in practice, O(len(pattern)·len(name)) at worst (no exponential
/// backtracking).
pub fn string_match(pattern: &str, name: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut si) = (0usize, 0usize);
    // Position after the last '*' seen, and where its match currently ends.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            pi += 1;
            star = Some((pi, si));
        } else if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Whether `pattern` matches some name that starts with `prefix`.
fn can_match_prefix(pattern: &str, prefix: &str) -> bool {
    let (p, q) = (pattern.as_bytes(), prefix.as_bytes());
    for (i, &c) in q.iter().enumerate() {
        match p.get(i) {
            None => return false,
            Some(b'*') => return true,
            Some(b'?') => {}
            Some(&x) if x == c => {}
            Some(_) => return false,
        }
    }
    true
}

fn is_simple(p: &str) -> bool {
    !p.bytes().any(|c| c == b'*' || c == b'?')
}

// ---------------------------------------------------------------------------
// The input sequence

/// Which frames Valgrind may have matched below the last printed one, when
/// the XML was written without `--show-below-main=yes` (§3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HiddenFrames {
    /// Any frame at all: every pattern element that would need a hidden frame
    /// makes the match undecidable (the most cautious reading).
    Any,
    /// Only below-main frames: function names `(below main)`,
    /// `__libc_start_main@...` or `???`, objects in libc (typical install
    /// paths), the main executable or `???`. Elements that can match none of
    /// these make the match fail instead of undecidable.
    #[default]
    BelowMainLike,
}

/// How the XML was produced, as far as matching is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchOptions {
    /// The XML was written with `--show-below-main=yes`: below-main frames are
    /// all printed (nothing hidden), and the default-mode rename to
    /// `(below main)` is re-applied to emulate a default run.
    pub show_below_main: bool,
    /// The run's `--num-callers` (default 12): a stack that already has this
    /// many IPs cannot have hidden frames.
    pub num_callers: usize,
    /// What may hide below `main` when `show_below_main` is false.
    pub hidden: HiddenFrames,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            show_below_main: false,
            num_callers: 12,
            hidden: HiddenFrames::BelowMainLike,
        }
    }
}

/// How sure we are that a frame's function name is the one Valgrind matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FunCertainty {
    /// From `<sframe>`, an inlined frame, `???`, or a plain C name.
    Exact,
    /// A demangled `<fn>` (contains `(`, `::` or `<`): the real name is a
    /// `_Z`/`_R` mangled one that cannot be recovered.
    Demangled,
    /// Starts with `operator` but otherwise looks plain: maybe demangled.
    Doubtful,
}

/// One element of the sequence the matcher sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewFrame<'a> {
    /// The `fun:` name (mangled when known, `???` when unknown, renamed
    /// `(below main)` where the default mode would).
    pub fun: &'a str,
    pub certainty: FunCertainty,
    /// The `obj:` name (`???` when unknown).
    pub obj: &'a str,
    /// Index of its raw IP (inline group).
    pub group: usize,
    /// Not the last frame of its inline group.
    pub inlined: bool,
    /// The interned strings behind `fun`/`obj`, when they come from the
    /// record (used as cheap cache keys).
    pub fun_sym: Option<&'a Sym>,
    pub obj_sym: Option<&'a Sym>,
}

/// The record's primary stack as the matcher sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackView<'a> {
    pub frames: Vec<ViewFrame<'a>>,
    /// `(file, line)` of the first (innermost) frame of each raw IP; this is
    /// what Valgrind's `src:` lookup of `ips[k]` sees (the §3.4 index bug).
    pub group_src: Vec<(Option<&'a str>, Option<u32>)>,
    /// Frames below the last printed one may exist and took part in
    /// Valgrind's matching.
    pub maybe_cut: bool,
    /// Some `fun:` name is not certain (demangled `<fn>`, no `<sframe>`).
    pub uncertain: bool,
}

const UNKNOWN: &str = "???";
const BELOW_MAIN: &str = "(below main)";

/// Below-main function names (Linux), renamed `(below main)` by default.
pub fn is_below_main_name(s: &str) -> bool {
    matches!(
        s,
        "__libc_start_main" | "__libc_start_call_main" | "_start" | "generic_start_main"
    ) || s.starts_with("__libc_start_main.")
        || s.starts_with("generic_start_main.")
}

/// Whether a `<fn>` looks demangled (§3.7).
pub fn fun_certainty(name: &str) -> FunCertainty {
    if name.contains('(') || name.contains("::") || name.contains('<') {
        FunCertainty::Demangled
    } else if name.starts_with("operator") {
        FunCertainty::Doubtful
    } else {
        FunCertainty::Exact
    }
}

fn same_place(a: &Frame, b: &Frame) -> bool {
    a.func == b.func && a.file == b.file && a.line == b.line
}

/// Builds the sequence Valgrind's matcher would see for `rec` (§3.4, §3.7).
///
/// Inline groups are runs of consecutive frames with the same `<ip>`; a run is
/// split where a frame repeats the group's first frame (fn, file, line), which
/// is what recursion through one return address looks like.
pub fn stack_view<'a>(rec: &'a Record, opts: &MatchOptions) -> StackView<'a> {
    let stack = &rec.stack;
    // Group boundaries.
    let mut group_of = Vec::with_capacity(stack.len());
    let mut group_src = Vec::new();
    let mut group_start = 0usize;
    for (i, f) in stack.iter().enumerate() {
        let new_group = i == 0
            || f.ip.is_none()
            || f.ip != stack[i - 1].ip
            || same_place(f, &stack[group_start]);
        if new_group {
            group_start = i;
            group_src.push((f.file.as_deref(), f.line));
        }
        group_of.push(group_src.len() - 1);
    }
    // Names from <sframe>s when present.
    let has_sframes = stack.iter().any(|f| f.sfun.is_some() || f.sobj.is_some());
    let gen_frames = rec
        .suppression
        .as_ref()
        .map(|g| &g.frames)
        .filter(|g| !has_sframes && !g.is_empty() && g.len() == stack.len());
    let mut frames = Vec::with_capacity(stack.len());
    let mut uncertain = false;
    for (i, f) in stack.iter().enumerate() {
        let inlined = group_of.get(i + 1) == Some(&group_of[i]);
        let (mut fun_sym, mut certainty): (Option<&Sym>, FunCertainty) = if has_sframes {
            (f.sfun.as_ref(), FunCertainty::Exact)
        } else if let Some(g) = gen_frames {
            match g.get(i) {
                Some((true, name)) => (Some(name), FunCertainty::Exact),
                _ => (None, FunCertainty::Exact),
            }
        } else {
            match f.func.as_ref() {
                Some(name) if inlined => (Some(name), FunCertainty::Exact),
                Some(name) => (Some(name), fun_certainty(name)),
                None => (None, FunCertainty::Exact),
            }
        };
        let mut fun: &str = fun_sym.map_or(UNKNOWN, |s| &**s);
        if opts.show_below_main && !inlined && is_below_main_name(fun) {
            certainty = FunCertainty::Exact;
            fun = BELOW_MAIN;
            fun_sym = None;
        }
        uncertain |= certainty != FunCertainty::Exact;
        frames.push(ViewFrame {
            fun,
            certainty,
            obj: f.obj.as_deref().unwrap_or(UNKNOWN),
            group: group_of[i],
            inlined,
            fun_sym,
            obj_sym: f.obj.as_ref(),
        });
    }
    let maybe_cut = !opts.show_below_main
        && group_src.len() < opts.num_callers
        && frames.last().is_some_and(|f| {
            f.fun == "main"
                || f.fun == BELOW_MAIN
                || is_below_main_name(f.fun)
                || stack.last().and_then(|l| l.func.as_deref()) == Some("main")
        });
    StackView {
        frames,
        group_src,
        maybe_cut,
        uncertain,
    }
}

// ---------------------------------------------------------------------------
// Compiled patterns and per-name bit sets

#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(w) ^ rest.len() as u64);
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Debug)]
struct Pat {
    text: Box<str>,
    /// Matches every name (only `*`s).
    everything: bool,
    /// May match some `_Z…`/`_R…` (mangled) name.
    maybe_mangled: bool,
    /// May match a frame hidden below `main` (per [`HiddenFrames`]).
    hidden_ok: bool,
}

#[derive(Debug, Default)]
struct PatTable {
    pats: Vec<Pat>,
    literal: FxMap<Box<str>, u32>,
    globs: Vec<u32>,
}

/// Typical libc paths, to judge whether an `obj:` pattern can match a hidden
/// below-main frame.
const LIBC_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libc-2.31.so",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib64/libc.so.6",
    "/lib64/libc-2.17.so",
    "/usr/lib/libc.so.6",
    "/lib/libc.so.6",
];

impl PatTable {
    fn intern(&mut self, text: &str, is_fun: bool, hidden: HiddenFrames) -> u32 {
        if let Some(&id) = self.literal.get(text) {
            return id;
        }
        if let Some(&id) = self
            .globs
            .iter()
            .find(|&&g| &*self.pats[g as usize].text == text)
        {
            return id;
        }
        let id = self.pats.len() as u32;
        let hidden_ok = match hidden {
            HiddenFrames::Any => true,
            HiddenFrames::BelowMainLike if is_fun => {
                string_match(text, BELOW_MAIN)
                    || string_match(text, UNKNOWN)
                    || can_match_prefix(text, "__libc_start_main@")
            }
            HiddenFrames::BelowMainLike => {
                string_match(text, UNKNOWN) || LIBC_PATHS.iter().any(|p| string_match(text, p))
            }
        };
        self.pats.push(Pat {
            text: text.into(),
            everything: !text.is_empty() && text.bytes().all(|c| c == b'*'),
            maybe_mangled: can_match_prefix(text, "_Z") || can_match_prefix(text, "_R"),
            hidden_ok,
        });
        if is_simple(text) {
            self.literal.insert(text.into(), id);
        } else {
            self.globs.push(id);
        }
        id
    }

    fn words(&self) -> usize {
        self.pats.len().div_ceil(64).max(1)
    }
}

/// Per-name match results against every pattern of one table.
#[derive(Debug, Clone)]
struct Bits {
    yes: Box<[u64]>,
    maybe: Box<[u64]>,
}

fn bit(set: &[u64], i: u32) -> bool {
    set.get((i / 64) as usize)
        .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
}

fn set_bit(set: &mut [u64], i: u32) {
    if let Some(w) = set.get_mut((i / 64) as usize) {
        *w |= 1u64 << (i % 64);
    }
}

impl Bits {
    fn empty(words: usize) -> Self {
        Bits {
            yes: vec![0; words].into(),
            maybe: vec![0; words].into(),
        }
    }

    fn verdict(&self, pid: u32) -> Verdict {
        if bit(&self.yes, pid) {
            Verdict::Yes
        } else if bit(&self.maybe, pid) {
            Verdict::Unknown
        } else {
            Verdict::No
        }
    }
}

/// Bit sets per distinct name, shared across records.
#[derive(Debug, Default)]
struct Cache {
    fun_exact: FxMap<Box<str>, u32>,
    fun_doubtful: FxMap<Box<str>, u32>,
    obj: FxMap<Box<str>, u32>,
    /// Front caches keyed by the address of an interned string; each entry
    /// keeps its `Arc` alive, so the address cannot be reused meanwhile.
    fun_ptr: FxMap<(usize, FunCertainty), (Sym, u32)>,
    obj_ptr: FxMap<usize, (Sym, u32)>,
    /// Id of the shared bit set for demangled names.
    demangled: Option<u32>,
    bits: Vec<Bits>,
}

const CACHE_LIMIT: usize = 1 << 20;

impl Cache {
    fn push(&mut self, b: Bits) -> u32 {
        self.bits.push(b);
        (self.bits.len() - 1) as u32
    }

    fn fun_id(&mut self, t: &PatTable, name: &str, c: FunCertainty) -> u32 {
        match c {
            FunCertainty::Exact => {
                if let Some(&id) = self.fun_exact.get(name) {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                if let Some(&id) = t.literal.get(name) {
                    set_bit(&mut b.yes, id);
                }
                for &g in &t.globs {
                    if string_match(&t.pats[g as usize].text, name) {
                        set_bit(&mut b.yes, g);
                    }
                }
                let id = self.push(b);
                self.fun_exact.insert(name.into(), id);
                id
            }
            FunCertainty::Demangled => {
                if let Some(id) = self.demangled {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                for (i, p) in t.pats.iter().enumerate() {
                    if p.everything {
                        set_bit(&mut b.yes, i as u32);
                    } else if p.maybe_mangled {
                        set_bit(&mut b.maybe, i as u32);
                    }
                }
                let id = self.push(b);
                self.demangled = Some(id);
                id
            }
            FunCertainty::Doubtful => {
                if let Some(&id) = self.fun_doubtful.get(name) {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                for (i, p) in t.pats.iter().enumerate() {
                    if p.everything {
                        set_bit(&mut b.yes, i as u32);
                    } else if p.maybe_mangled || string_match(&p.text, name) {
                        set_bit(&mut b.maybe, i as u32);
                    }
                }
                let id = self.push(b);
                self.fun_doubtful.insert(name.into(), id);
                id
            }
        }
    }

    fn fun_id_sym(&mut self, t: &PatTable, f: &ViewFrame<'_>) -> u32 {
        let Some(sym) = f.fun_sym else {
            return self.fun_id(t, f.fun, f.certainty);
        };
        let key = (Arc::as_ptr(sym) as *const u8 as usize, f.certainty);
        if let Some((_, id)) = self.fun_ptr.get(&key) {
            return *id;
        }
        let id = self.fun_id(t, sym, f.certainty);
        self.fun_ptr.insert(key, (sym.clone(), id));
        id
    }

    fn obj_id_sym(&mut self, t: &PatTable, f: &ViewFrame<'_>) -> u32 {
        let Some(sym) = f.obj_sym else {
            return self.obj_id(t, f.obj);
        };
        let key = Arc::as_ptr(sym) as *const u8 as usize;
        if let Some((_, id)) = self.obj_ptr.get(&key) {
            return *id;
        }
        let id = self.obj_id(t, sym);
        self.obj_ptr.insert(key, (sym.clone(), id));
        id
    }

    fn obj_id(&mut self, t: &PatTable, name: &str) -> u32 {
        if let Some(&id) = self.obj.get(name) {
            return id;
        }
        let mut b = Bits::empty(t.words());
        if let Some(&id) = t.literal.get(name) {
            set_bit(&mut b.yes, id);
        }
        for &g in &t.globs {
            if string_match(&t.pats[g as usize].text, name) {
                set_bit(&mut b.yes, g);
            }
        }
        let id = self.push(b);
        self.obj.insert(name.into(), id);
        id
    }
}

// ---------------------------------------------------------------------------
// Compiled rules

#[derive(Debug, Clone)]
enum Elem {
    Star,
    Fun(u32),
    Obj(u32),
    Src { file: Box<str>, line: Option<u32> },
}

#[derive(Debug)]
struct Rule {
    elems: Vec<Elem>,
    has_star: bool,
}

#[derive(Debug, Default)]
struct Bucket {
    /// Rules whose first location is `fun:P`, by pattern id.
    by_fun: FxMap<u32, Vec<usize>>,
    /// Rules whose first location is `obj:P`, by pattern id.
    by_obj: FxMap<u32, Vec<usize>>,
    /// Rules starting with `...` or `src:`, as a bit set over rule indices.
    other: Vec<u64>,
}

/// The result of matching one record against a [`SuppressionSet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchOutcome {
    /// Some suppression certainly matches; the index (into
    /// [`SuppressionSet::suppressions`]) is the first such one in precedence
    /// order. (A higher-precedence undecidable rule, if any, may be the one
    /// Valgrind would have credited; see [`SuppressionSet::explain`].)
    Suppressed(usize),
    NotSuppressed,
    /// No suppression certainly matches, but this one (the first in
    /// precedence order) may.
    Undecidable(usize),
}

/// Suppressions loaded in Valgrind's order, ready for matching.
#[derive(Debug)]
pub struct SuppressionSet {
    supps: Vec<Suppression>,
    opts: MatchOptions,
    rules: Vec<Rule>,
    fun_pats: PatTable,
    obj_pats: PatTable,
    buckets: FxMap<KindKey, Bucket>,
    /// Words in a bit set over rule indices.
    rule_words: usize,
    /// Per leak kind (Valgrind's enum order): the rules whose kind admits
    /// it, so `match-leak-kinds:` filters candidates without a test each.
    leak_ok: [Vec<u64>; 4],
    cache: Mutex<Cache>,
}

/// Per-record state while matching.
struct Ctx<'v, 'a> {
    view: &'v StackView<'a>,
    fun_ids: Vec<u32>,
    obj_ids: Vec<u32>,
    union_fun: Option<Vec<u64>>,
    union_obj: Option<Vec<u64>>,
    rows: (Vec<Verdict>, Vec<Verdict>),
}

impl SuppressionSet {
    /// Builds a set from suppressions in *load order*: the files in
    /// command-line order with `default.supp` last, each file's records in
    /// file order. Later ones take precedence (Valgrind pushes each record
    /// onto the front of its list, §2.4).
    pub fn new(supps: Vec<Suppression>, opts: MatchOptions) -> Self {
        let mut fun_pats = PatTable::default();
        let mut obj_pats = PatTable::default();
        let mut rules = Vec::with_capacity(supps.len());
        let mut buckets: FxMap<KindKey, Bucket> = FxMap::default();
        let rule_words = supps.len().div_ceil(64);
        let mut leak_ok: [Vec<u64>; 4] = std::array::from_fn(|_| vec![0; rule_words]);
        for (i, s) in supps.iter().enumerate() {
            for (k, kind) in LeakKind::ALL.into_iter().enumerate() {
                if s.kind.matches(&RecordKind::Leak(kind)) {
                    set_bit(&mut leak_ok[k], i as u32);
                }
            }
            let elems: Vec<Elem> = s
                .frames
                .iter()
                .map(|l| match l {
                    Loc::Fun(p) => Elem::Fun(fun_pats.intern(p, true, opts.hidden)),
                    Loc::Obj(p) => Elem::Obj(obj_pats.intern(p, false, opts.hidden)),
                    Loc::Src { file, line } => Elem::Src {
                        file: file.as_str().into(),
                        line: *line,
                    },
                    Loc::Ellipsis => Elem::Star,
                })
                .collect();
            let bucket = buckets.entry(s.kind.key(&s.tool)).or_default();
            match elems.first() {
                Some(Elem::Fun(p)) => bucket.by_fun.entry(*p).or_default().push(i),
                Some(Elem::Obj(p)) => bucket.by_obj.entry(*p).or_default().push(i),
                _ => {
                    bucket.other.resize(rule_words, 0);
                    set_bit(&mut bucket.other, i as u32);
                }
            }
            let has_star = elems.iter().any(|e| matches!(e, Elem::Star));
            rules.push(Rule { elems, has_star });
        }
        SuppressionSet {
            supps,
            opts,
            rules,
            fun_pats,
            obj_pats,
            buckets,
            rule_words,
            leak_ok,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The suppressions, in load order (the indices used everywhere).
    pub fn suppressions(&self) -> &[Suppression] {
        &self.supps
    }

    pub fn options(&self) -> &MatchOptions {
        &self.opts
    }

    pub fn len(&self) -> usize {
        self.supps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.supps.is_empty()
    }

    /// The first suppression (in precedence order) that matches `rec`.
    pub fn first_match(&self, rec: &Record) -> MatchOutcome {
        let mut first_unknown = None;
        let mut result = MatchOutcome::NotSuppressed;
        self.scan(rec, |i, v| match v {
            Verdict::Yes => {
                result = MatchOutcome::Suppressed(i);
                false
            }
            Verdict::Unknown => {
                first_unknown.get_or_insert(i);
                true
            }
            Verdict::No => true,
        });
        match (result, first_unknown) {
            (MatchOutcome::NotSuppressed, Some(i)) => MatchOutcome::Undecidable(i),
            (r, _) => r,
        }
    }

    /// Every suppression that matches or may match `rec`, in precedence order.
    pub fn explain(&self, rec: &Record) -> Vec<(usize, Verdict)> {
        let mut out = Vec::new();
        self.scan(rec, |i, v| {
            if v != Verdict::No {
                out.push((i, v));
            }
            true
        });
        out
    }

    /// Whether suppression `index` matches `rec` (kind and stack).
    pub fn check(&self, index: usize, rec: &Record) -> Verdict {
        let (Some(s), Some(rk)) = (self.supps.get(index), record_kind(rec)) else {
            return Verdict::No;
        };
        if !s.kind.matches(&rk) {
            return Verdict::No;
        }
        let view = stack_view(rec, &self.opts);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ctx = self.ctx(&view, &mut cache);
        self.eval(index, &mut ctx, &cache)
    }

    fn ctx<'v, 'a>(&self, view: &'v StackView<'a>, cache: &mut Cache) -> Ctx<'v, 'a> {
        if cache.bits.len() > CACHE_LIMIT || cache.fun_ptr.len() + cache.obj_ptr.len() > CACHE_LIMIT
        {
            *cache = Cache::default();
        }
        let fun_ids = view
            .frames
            .iter()
            .map(|f| cache.fun_id_sym(&self.fun_pats, f))
            .collect();
        let obj_ids = view
            .frames
            .iter()
            .map(|f| cache.obj_id_sym(&self.obj_pats, f))
            .collect();
        Ctx {
            view,
            fun_ids,
            obj_ids,
            union_fun: None,
            union_obj: None,
            rows: (Vec::new(), Vec::new()),
        }
    }

    /// Runs `f(index, verdict)` over the candidate rules in precedence
    /// order until it returns false.
    fn scan(&self, rec: &Record, mut f: impl FnMut(usize, Verdict) -> bool) {
        let Some(rk) = record_kind(rec) else {
            return;
        };
        let Some(bucket) = self.buckets.get(&rk.key()) else {
            return;
        };
        let view = stack_view(rec, &self.opts);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ctx = self.ctx(&view, &mut cache);
        // Candidates, as a bit set over rule indices: the rules indexed by
        // the innermost frame's name or object, plus those starting with
        // `...`/`src:`; for a leak, only rules admitting its leak kind.
        let mut cands = vec![0u64; self.rule_words];
        for (w, o) in cands.iter_mut().zip(&bucket.other) {
            *w = *o;
        }
        if let (Some(&fid), Some(&oid)) = (ctx.fun_ids.first(), ctx.obj_ids.first()) {
            for (bits, map) in [
                (&cache.bits[fid as usize], &bucket.by_fun),
                (&cache.bits[oid as usize], &bucket.by_obj),
            ] {
                if map.is_empty() {
                    continue;
                }
                for (w, (y, m)) in bits.yes.iter().zip(bits.maybe.iter()).enumerate() {
                    let mut word = y | m;
                    while word != 0 {
                        let b = word.trailing_zeros();
                        word &= word - 1;
                        if let Some(rs) = map.get(&((w as u32) * 64 + b)) {
                            for &r in rs {
                                set_bit(&mut cands, r as u32);
                            }
                        }
                    }
                }
            }
        }
        if let RecordKind::Leak(k) = rk {
            for (w, ok) in cands.iter_mut().zip(&self.leak_ok[k as usize]) {
                *w &= ok;
            }
        }
        // Later rules take precedence: highest index first.
        for w in (0..cands.len()).rev() {
            let mut word = cands[w];
            while word != 0 {
                let b = 63 - word.leading_zeros();
                word &= !(1u64 << b);
                let i = w * 64 + b as usize;
                if !self.supps[i].kind.matches(&rk) {
                    continue;
                }
                let v = self.eval(i, &mut ctx, &cache);
                if !f(i, v) {
                    return;
                }
            }
        }
    }

    fn hidden_ok(&self, e: &Elem, ctx: &Ctx<'_, '_>, cache: &Cache) -> bool {
        match e {
            Elem::Star => true,
            Elem::Src { .. } => true,
            Elem::Fun(p) => self.fun_pats.pats[*p as usize].hidden_ok,
            Elem::Obj(p) => {
                self.obj_pats.pats[*p as usize].hidden_ok
                    // `_start` lives in the executable, like `main`.
                    || ctx
                        .obj_ids
                        .last()
                        .is_some_and(|&o| bit(&cache.bits[o as usize].yes, *p))
            }
        }
    }

    fn union<'c>(
        ids: &[u32],
        cache: &Cache,
        words: usize,
        slot: &'c mut Option<Vec<u64>>,
    ) -> &'c [u64] {
        slot.get_or_insert_with(|| {
            let mut u = vec![0u64; words];
            for &id in ids {
                let b = &cache.bits[id as usize];
                for (k, w) in u.iter_mut().enumerate() {
                    *w |= b.yes.get(k).copied().unwrap_or(0) | b.maybe.get(k).copied().unwrap_or(0);
                }
            }
            u
        })
    }

    fn elem_eq(&self, e: &Elem, ii: usize, ctx: &Ctx<'_, '_>, cache: &Cache) -> Verdict {
        match e {
            Elem::Star => Verdict::Yes,
            Elem::Fun(p) => cache.bits[ctx.fun_ids[ii] as usize].verdict(*p),
            Elem::Obj(p) => cache.bits[ctx.obj_ids[ii] as usize].verdict(*p),
            Elem::Src { file, line } => match ctx.view.group_src.get(ii) {
                // The lookup uses raw IP number `ii`, not the frame at `ii`.
                Some((Some(f), l)) => {
                    let ok = string_match(file, f) && line.is_none_or(|want| *l == Some(want));
                    if ok { Verdict::Yes } else { Verdict::No }
                }
                Some((None, _)) => Verdict::No,
                None if ctx.view.maybe_cut => Verdict::Unknown,
                None => Verdict::No,
            },
        }
    }

    fn eval(&self, idx: usize, ctx: &mut Ctx<'_, '_>, cache: &Cache) -> Verdict {
        let rule = &self.rules[idx];
        let elems = &rule.elems;
        let n = ctx.view.frames.len();
        let cut = ctx.view.maybe_cut;
        // Quick reject: every fun:/obj: element must be able to match some frame.
        let fw = self.fun_pats.words();
        let ow = self.obj_pats.words();
        for e in elems {
            let present = match e {
                Elem::Fun(p) => bit(Self::union(&ctx.fun_ids, cache, fw, &mut ctx.union_fun), *p),
                Elem::Obj(p) => bit(Self::union(&ctx.obj_ids, cache, ow, &mut ctx.union_obj), *p),
                _ => true,
            };
            if !(present || (cut && self.hidden_ok(e, ctx, cache))) {
                return Verdict::No;
            }
        }
        // tail[ip]: the value of pattern elems[ip..] once the printed input is used up.
        let capacity = self
            .opts
            .num_callers
            .saturating_sub(ctx.view.group_src.len());
        let p = elems.len();
        let mut tail = vec![Verdict::Yes; p + 1];
        let mut needed = 0usize;
        for ip in (0..p).rev() {
            tail[ip] = match &elems[ip] {
                Elem::Star => tail[ip + 1],
                e => {
                    needed += 1;
                    if cut && needed <= capacity && self.hidden_ok(e, ctx, cache) {
                        Verdict::Unknown.and(tail[ip + 1])
                    } else {
                        Verdict::No
                    }
                }
            };
        }
        if !rule.has_star {
            let mut v = Verdict::Yes;
            for (ip, e) in elems.iter().enumerate() {
                if ip >= n {
                    return v.and(tail[ip]);
                }
                v = v.and(self.elem_eq(e, ip, ctx, cache));
                if v == Verdict::No {
                    return v;
                }
            }
            return v;
        }
        // Generic matcher with `...` (non-greedy with backtracking in Valgrind;
        // here the equivalent dynamic programme, O(p·n)).
        let (mut next, mut cur) = std::mem::take(&mut ctx.rows);
        next.clear();
        next.resize(n + 1, Verdict::Yes);
        cur.clear();
        cur.resize(n + 1, Verdict::No);
        for ip in (0..p).rev() {
            cur[n] = tail[ip];
            match &elems[ip] {
                Elem::Star => {
                    for ii in (0..n).rev() {
                        cur[ii] = next[ii].or(cur[ii + 1]);
                    }
                }
                e => {
                    for ii in (0..n).rev() {
                        let after = next[ii + 1];
                        cur[ii] = if after == Verdict::No {
                            Verdict::No
                        } else {
                            self.elem_eq(e, ii, ctx, cache).and(after)
                        };
                    }
                }
            }
            std::mem::swap(&mut next, &mut cur);
        }
        let v = next[0];
        ctx.rows = (next, cur);
        v
    }

    /// Matches every record and counts, per suppression, the weighted number
    /// of records it (certainly or possibly) suppresses. Weight non-leak
    /// errors by their `<errorcounts>` count and leak records by 1 (§3.7).
    pub fn tally<'r>(&self, records: impl IntoIterator<Item = (&'r Record, u64)>) -> Tally {
        let mut t = Tally::new(self);
        for (rec, w) in records {
            t.add(self.first_match(rec), w);
        }
        t
    }
}

/// Use counts per suppression (by index, and by name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Weighted count of records certainly suppressed, per suppression index.
    pub suppressed: Vec<u64>,
    /// Weighted count of records this suppression may suppress (first
    /// undecidable rule of a record with no certain match).
    pub undecidable: Vec<u64>,
    pub not_suppressed: u64,
}

impl Tally {
    pub fn new(set: &SuppressionSet) -> Self {
        Tally {
            suppressed: vec![0; set.len()],
            undecidable: vec![0; set.len()],
            not_suppressed: 0,
        }
    }

    pub fn add(&mut self, outcome: MatchOutcome, weight: u64) {
        match outcome {
            MatchOutcome::Suppressed(i) => {
                if let Some(c) = self.suppressed.get_mut(i) {
                    *c = c.saturating_add(weight);
                }
            }
            MatchOutcome::Undecidable(i) => {
                if let Some(c) = self.undecidable.get_mut(i) {
                    *c = c.saturating_add(weight);
                }
            }
            MatchOutcome::NotSuppressed => {
                self.not_suppressed = self.not_suppressed.saturating_add(weight)
            }
        }
    }

    /// `(name, suppressed, undecidable)` summed over suppressions sharing a
    /// name, in order of first appearance.
    pub fn by_name(&self, set: &SuppressionSet) -> Vec<(String, u64, u64)> {
        let mut out: Vec<(String, u64, u64)> = Vec::new();
        let mut pos: HashMap<&str, usize> = HashMap::new();
        for (i, s) in set.suppressions().iter().enumerate() {
            let k = *pos.entry(s.name.as_str()).or_insert_with(|| {
                out.push((s.name.clone(), 0, 0));
                out.len() - 1
            });
            out[k].1 += self.suppressed.get(i).copied().unwrap_or(0);
            out[k].2 += self.undecidable.get(i).copied().unwrap_or(0);
        }
        out
    }

    /// Suppressions that matched nothing, not even undecidably.
    pub fn unused(&self) -> Vec<usize> {
        (0..self.suppressed.len())
            .filter(|&i| {
                self.suppressed[i] == 0 && self.undecidable.get(i).copied().unwrap_or(0) == 0
            })
            .collect()
    }

    /// Suppressions that certainly matched nothing (may include rules with
    /// undecidable matches).
    pub fn unused_certain(&self) -> Vec<usize> {
        (0..self.suppressed.len())
            .filter(|&i| self.suppressed[i] == 0)
            .collect()
    }
}
