//! A slow, obviously-correct model of Valgrind's suppression matching
//! (`../shared/docs/valgrind-xml-and-suppressions.md` §2-§3), and a generator
//! of random rules and stacks, shared by the property test
//! (`tests/it/matcher_reference.rs`) and the `matcher` fuzz target
//! (`fuzz/fuzz_targets/matcher.rs`).
//!
//! The model works on the generated structure directly: inline groups are
//! known (not guessed from `<ip>`s), names are matched by the recursive
//! definition of §3.3 (with memoisation, nothing else), the stack by the
//! prefix sequence matcher of §3.3 with `...` tried non-greedily with
//! backtracking, the kind by the table of §1.5.2/§3.2, and the later rule
//! wins (§2.4). leakgate's matcher, which is indexed, cached and runs a
//! dynamic programme, must give the same answer on every input.
//!
//! The records are what leakgate's reader builds from a report written with
//! `--gen-suppressions=all --show-below-main=yes` (every frame has its
//! `<sframe>` name, nothing is hidden below `main`): there the XML decides
//! every match.
#![allow(dead_code)]

use std::collections::HashMap;

use leakgate::model::{Frame, GenSuppression, Record, Sym};
use leakgate::suppress::{MatchOptions, MatchOutcome, SuppressionSet};

/// Where random choices come from.
pub(crate) trait Source {
    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize;

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// xorshift64*: a tiny deterministic PRNG for the property test.
pub(crate) struct Rng(pub u64);

impl Source for Rng {
    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// Choices read from a fuzzer's input (zeros once it is used up).
pub(crate) struct Bytes<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl Source for Bytes<'_> {
    fn below(&mut self, n: usize) -> usize {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        if n <= 256 {
            b as usize % n
        } else {
            let c = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
            (b as usize * 256 + c as usize) % n
        }
    }
}

// ---------------------------------------------------------------------------
// The generated model

/// One frame of an inline group: the innermost frames are inlined (named by
/// DWARF), the last one of the group is the real frame.
#[derive(Debug, Clone)]
pub(crate) struct GFrame {
    pub fun: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// The frames of one return address (one raw IP), innermost first, and its
/// object.
#[derive(Debug, Clone)]
pub(crate) struct GGroup {
    pub frames: Vec<GFrame>,
    pub obj: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GKind {
    /// 0 definite, 1 indirect, 2 possible, 3 reachable.
    Leak(usize),
    Addr {
        write: bool,
        size: u32,
    },
    Value(u32),
    Cond,
    Param(String),
    Free {
        mismatched: bool,
    },
    Fishy {
        func: String,
        arg: String,
    },
    Overlap,
    Jump,
}

#[derive(Debug, Clone)]
pub(crate) struct GRecord {
    pub kind: GKind,
    pub groups: Vec<GGroup>,
    /// The record carries its generated `<suppression>` (`<skind>`, ...).
    pub with_supp: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum GLoc {
    Fun(String),
    Obj(String),
    /// File pattern and line (0: any line).
    Src(String, u32),
    Dots,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GRuleKind {
    /// `match-leak-kinds:` value, or none (all kinds).
    Leak(Option<String>),
    Addr(u32),
    Value(u32),
    /// `Cond`, or its alias `Value0`.
    Cond {
        alias: bool,
    },
    Param(String),
    Free,
    Fishy {
        func: String,
        arg: String,
    },
    Overlap,
    Jump,
}

#[derive(Debug, Clone)]
pub(crate) struct GRule {
    pub kind: GRuleKind,
    pub locs: Vec<GLoc>,
}

const LEAK_WORDS: [&str; 4] = ["definite", "indirect", "possible", "reachable"];
const LEAK_XML: [&str; 4] = [
    "Leak_DefinitelyLost",
    "Leak_IndirectlyLost",
    "Leak_PossiblyLost",
    "Leak_StillReachable",
];
const SIZES: [u32; 4] = [1, 2, 4, 8];
const PARAMS: [&str; 2] = ["write(buf)", "read(buf)"];
const FISHY: [(&str, &str); 2] = [("malloc", "size"), ("calloc", "nmemb")];
const FUNS: [&str; 12] = [
    "malloc",
    "_Znwm",
    "foo",
    "bar",
    "main",
    "_start",
    "__libc_start_call_main",
    "__libc_start_main@@GLIBC_2.34",
    "__libc_start_main",
    "clock_nanosleep@@GLIBC_2.17",
    "operator()",
    "a*b?",
];
const OBJS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so",
    "/home/u/app",
    "/home/u/ab.so",
    "/x/a/b",
];
const FILES: [&str; 4] = ["a.c", "b.c", "ab.cpp", "x/a.c"];

/// A short name over a tiny alphabet (collisions and glob backtracking), or
/// one of the realistic names.
fn name(src: &mut impl Source) -> String {
    if src.chance(50) {
        return src.pick(&FUNS).to_string();
    }
    let len = 1 + src.below(5);
    (0..len).map(|_| *src.pick(&['a', 'b', '_'])).collect()
}

/// A glob that often matches `base`: `base` with characters turned into `?`
/// or `*`, stars added, or something unrelated.
fn glob_for(src: &mut impl Source, base: &str) -> String {
    match src.below(8) {
        0 => "*".into(),
        1 => random_glob(src),
        _ => {
            let mut out = String::new();
            if src.chance(20) {
                out.push('*');
            }
            for c in base.chars() {
                match src.below(10) {
                    0 => out.push('?'),
                    1 => out.push('*'),
                    2 => {
                        out.push('*');
                        out.push(c);
                    }
                    _ => out.push(c),
                }
            }
            if src.chance(20) {
                out.push('*');
            }
            out
        }
    }
}

fn random_glob(src: &mut impl Source) -> String {
    let len = 1 + src.below(6);
    (0..len)
        .map(|_| *src.pick(&['a', 'b', '_', '*', '?']))
        .collect()
}

pub(crate) fn gen_record(src: &mut impl Source) -> GRecord {
    let kind = match src.below(10) {
        0..=2 => GKind::Leak(src.below(4)),
        3 => GKind::Addr {
            write: src.chance(50),
            size: *src.pick(&SIZES),
        },
        4 => GKind::Value(*src.pick(&SIZES)),
        5 => GKind::Cond,
        6 => GKind::Param(src.pick(&PARAMS).to_string()),
        7 => GKind::Free {
            mismatched: src.chance(50),
        },
        8 => {
            let (f, a) = *src.pick(&FISHY);
            GKind::Fishy {
                func: f.into(),
                arg: a.into(),
            }
        }
        _ => src.pick(&[GKind::Overlap, GKind::Jump]).clone(),
    };
    let n = 1 + src.below(7);
    let mut groups = Vec::with_capacity(n);
    for _ in 0..n {
        let inl = if src.chance(25) { 1 + src.below(2) } else { 0 };
        let mut frames = Vec::new();
        for k in 0..=inl {
            let real = k == inl;
            let fun = if real && src.chance(15) {
                None
            } else {
                Some(name(src))
            };
            let file = if src.chance(80) {
                Some(src.pick(&FILES).to_string())
            } else {
                None
            };
            // Distinct lines inside a group: a repeat of the group's first
            // frame would read as recursion, not inlining.
            let line = if inl > 0 || src.chance(80) {
                Some(1 + src.below(3) as u32 + 10 * k as u32)
            } else {
                None
            };
            frames.push(GFrame { fun, file, line });
        }
        let obj = if src.chance(90) {
            Some(src.pick(&OBJS).to_string())
        } else {
            None
        };
        groups.push(GGroup { frames, obj });
    }
    GRecord {
        kind,
        groups,
        with_supp: src.chance(50),
    }
}

/// A rule that often fits `rec` (its kind, globs made from its frames).
pub(crate) fn gen_rule(src: &mut impl Source, rec: &GRecord) -> GRule {
    let kind = if src.chance(70) {
        match &rec.kind {
            GKind::Leak(_) => GRuleKind::Leak(match src.below(4) {
                0 => None,
                1 => Some(src.pick(&["all", "none"]).to_string()),
                _ => {
                    let mut words: Vec<&str> = LEAK_WORDS
                        .iter()
                        .copied()
                        .filter(|_| src.chance(50))
                        .collect();
                    if words.is_empty() {
                        words.push(LEAK_WORDS[src.below(4)]);
                    }
                    Some(words.join(","))
                }
            }),
            GKind::Addr { size, .. } => GRuleKind::Addr(if src.chance(80) {
                *size
            } else {
                *src.pick(&SIZES)
            }),
            GKind::Value(size) => GRuleKind::Value(if src.chance(80) {
                *size
            } else {
                *src.pick(&SIZES)
            }),
            GKind::Cond => GRuleKind::Cond {
                alias: src.chance(30),
            },
            GKind::Param(p) => GRuleKind::Param(if src.chance(80) {
                p.clone()
            } else {
                src.pick(&PARAMS).to_string()
            }),
            GKind::Free { .. } => GRuleKind::Free,
            GKind::Fishy { func, arg } => {
                if src.chance(80) {
                    GRuleKind::Fishy {
                        func: func.clone(),
                        arg: arg.clone(),
                    }
                } else {
                    let (f, a) = *src.pick(&FISHY);
                    GRuleKind::Fishy {
                        func: f.into(),
                        arg: a.into(),
                    }
                }
            }
            GKind::Overlap => GRuleKind::Overlap,
            GKind::Jump => GRuleKind::Jump,
        }
    } else {
        match src.below(6) {
            0 => GRuleKind::Leak(None),
            1 => GRuleKind::Addr(*src.pick(&SIZES)),
            2 => GRuleKind::Cond { alias: false },
            3 => GRuleKind::Free,
            4 => GRuleKind::Jump,
            _ => GRuleKind::Overlap,
        }
    };
    let flat: Vec<(&GFrame, &GGroup)> = rec
        .groups
        .iter()
        .flat_map(|g| g.frames.iter().map(move |f| (f, g)))
        .collect();
    let n = 1 + src.below(7);
    let mut locs = Vec::with_capacity(n);
    // Mostly follow the stack from some depth, so that matches happen.
    let mut at = if src.chance(70) {
        0
    } else {
        src.below(flat.len() + 1)
    };
    for _ in 0..n {
        let frame = flat.get(at).copied();
        let loc = match src.below(10) {
            0 | 1 => GLoc::Dots,
            2 => {
                let file = frame
                    .and_then(|(f, _)| f.file.clone())
                    .unwrap_or_else(|| src.pick(&FILES).to_string());
                let line = if src.chance(50) {
                    0
                } else {
                    1 + src.below(25) as u32
                };
                GLoc::Src(glob_for(src, &file), line)
            }
            3..=5 => {
                let o = frame
                    .and_then(|(_, g)| g.obj.clone())
                    .unwrap_or_else(|| "???".into());
                GLoc::Obj(glob_for(src, &o))
            }
            _ => {
                let f = frame
                    .and_then(|(f, _)| f.fun.clone())
                    .unwrap_or_else(|| "???".into());
                GLoc::Fun(glob_for(src, &f))
            }
        };
        if !matches!(loc, GLoc::Dots) || src.chance(50) {
            at += 1 + usize::from(src.chance(10));
        }
        locs.push(loc);
    }
    // Valgrind needs one location that is not `...` (§2.2.6), and a Leak
    // rule without `match-leak-kinds:` cannot start with `src:` (§2.2.4).
    if locs.iter().all(|l| matches!(l, GLoc::Dots)) {
        locs.push(GLoc::Fun("*".into()));
    }
    if matches!(kind, GRuleKind::Leak(None)) && matches!(locs[0], GLoc::Src(..)) {
        locs.insert(0, GLoc::Dots);
    }
    GRule { kind, locs }
}

/// The rules as a suppression file.
pub(crate) fn render_rules(rules: &[GRule]) -> String {
    let mut out = String::new();
    for (i, r) in rules.iter().enumerate() {
        out.push_str(&format!("{{\n   rule{i}\n   Memcheck:"));
        match &r.kind {
            GRuleKind::Leak(k) => {
                out.push_str("Leak\n");
                if let Some(k) = k {
                    out.push_str(&format!("   match-leak-kinds: {k}\n"));
                }
            }
            GRuleKind::Addr(n) => out.push_str(&format!("Addr{n}\n")),
            GRuleKind::Value(n) => out.push_str(&format!("Value{n}\n")),
            GRuleKind::Cond { alias: false } => out.push_str("Cond\n"),
            GRuleKind::Cond { alias: true } => out.push_str("Value0\n"),
            GRuleKind::Param(p) => out.push_str(&format!("Param\n   {p}\n")),
            GRuleKind::Free => out.push_str("Free\n"),
            GRuleKind::Fishy { func, arg } => {
                out.push_str(&format!("FishyValue\n   {func}({arg})\n"))
            }
            GRuleKind::Overlap => out.push_str("Overlap\n"),
            GRuleKind::Jump => out.push_str("Jump\n"),
        }
        for l in &r.locs {
            match l {
                GLoc::Fun(p) => out.push_str(&format!("   fun:{p}\n")),
                GLoc::Obj(p) => out.push_str(&format!("   obj:{p}\n")),
                GLoc::Src(p, 0) => out.push_str(&format!("   src:{p}\n")),
                GLoc::Src(p, l) => out.push_str(&format!("   src:{p}:{l}\n")),
                GLoc::Dots => out.push_str("   ...\n"),
            }
        }
        out.push_str("}\n");
    }
    out
}

fn skind(kind: &GKind) -> (String, Option<String>) {
    match kind {
        GKind::Leak(k) => (
            "Memcheck:Leak".into(),
            Some(format!("match-leak-kinds: {}", LEAK_WORDS[*k])),
        ),
        GKind::Addr { size, .. } => (format!("Memcheck:Addr{size}"), None),
        GKind::Value(size) => (format!("Memcheck:Value{size}"), None),
        GKind::Cond => ("Memcheck:Cond".into(), None),
        GKind::Param(p) => ("Memcheck:Param".into(), Some(p.clone())),
        GKind::Free { .. } => ("Memcheck:Free".into(), None),
        GKind::Fishy { func, arg } => {
            ("Memcheck:FishyValue".into(), Some(format!("{func}({arg})")))
        }
        GKind::Overlap => ("Memcheck:Overlap".into(), None),
        GKind::Jump => ("Memcheck:Jump".into(), None),
    }
}

/// The record leakgate's reader builds from this record's XML.
pub(crate) fn to_record(g: &GRecord) -> Record {
    let (kind, what) = match &g.kind {
        GKind::Leak(k) => (
            LEAK_XML[*k].to_string(),
            format!(
                "8 bytes in 1 blocks are {} lost in loss record 1 of 1",
                LEAK_WORDS[*k]
            ),
        ),
        GKind::Addr { write, size } => (
            if *write {
                "InvalidWrite"
            } else {
                "InvalidRead"
            }
            .into(),
            format!(
                "Invalid {} of size {size}",
                if *write { "write" } else { "read" }
            ),
        ),
        GKind::Value(size) => (
            "UninitValue".into(),
            format!("Use of uninitialised value of size {size}"),
        ),
        GKind::Cond => (
            "UninitCondition".into(),
            "Conditional jump or move depends on uninitialised value(s)".into(),
        ),
        GKind::Param(p) => (
            "SyscallParam".into(),
            format!("Syscall param {p} points to uninitialised byte(s)"),
        ),
        GKind::Free { mismatched } => {
            if *mismatched {
                (
                    "MismatchedFree".into(),
                    "Mismatched free() / delete / delete []".into(),
                )
            } else {
                (
                    "InvalidFree".into(),
                    "Invalid free() / delete / delete[] / realloc()".into(),
                )
            }
        }
        GKind::Fishy { func, arg } => (
            "FishyValue".into(),
            format!(
                "Argument '{arg}' of function {func} has a fishy (possibly negative) value: -1"
            ),
        ),
        GKind::Overlap => (
            "Overlap".into(),
            "Source and destination overlap in memcpy(0x1, 0x2, 8)".into(),
        ),
        GKind::Jump => (
            "InvalidJump".into(),
            "Jump to the invalid address stated on the next line".into(),
        ),
    };
    let sym = |s: &str| -> Sym { Sym::from(s) };
    let mut stack = Vec::new();
    let mut sframes = Vec::new();
    for (gi, grp) in g.groups.iter().enumerate() {
        for f in &grp.frames {
            let (sfun, sobj) = match &f.fun {
                Some(n) => (Some(sym(n)), None),
                None => (None, Some(sym(grp.obj.as_deref().unwrap_or("*")))),
            };
            sframes.push(match (&sfun, &sobj) {
                (Some(n), _) => (true, n.clone()),
                (_, Some(o)) => (false, o.clone()),
                _ => unreachable!(),
            });
            stack.push(Frame {
                ip: Some(sym(&format!("0x{:X}", 0x4000 + gi * 16))),
                obj: grp.obj.as_deref().map(sym),
                func: f.fun.as_deref().map(sym),
                dir: f.file.as_ref().map(|_| sym("/src")),
                file: f.file.as_deref().map(sym),
                line: f.line,
                sfun,
                sobj,
            });
        }
    }
    let suppression = g.with_supp.then(|| {
        let (kind, aux) = skind(&g.kind);
        GenSuppression {
            kind,
            aux,
            frames: sframes,
        }
    });
    Record {
        kind: sym(&kind),
        what,
        leaked_bytes: matches!(g.kind, GKind::Leak(_)).then_some(8),
        leaked_blocks: matches!(g.kind, GKind::Leak(_)).then_some(1),
        stack,
        suppression,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// The reference matcher

/// §3.3 for names: the whole name, `*` any bytes, `?` one byte, else equal.
pub(crate) fn glob(p: &[u8], s: &[u8]) -> bool {
    fn go(
        p: &[u8],
        s: &[u8],
        i: usize,
        j: usize,
        memo: &mut HashMap<(usize, usize), bool>,
    ) -> bool {
        if let Some(&v) = memo.get(&(i, j)) {
            return v;
        }
        let v = if i == p.len() {
            j == s.len()
        } else {
            match p[i] {
                b'*' => go(p, s, i + 1, j, memo) || (j < s.len() && go(p, s, i, j + 1, memo)),
                b'?' => j < s.len() && go(p, s, i + 1, j + 1, memo),
                c => j < s.len() && s[j] == c && go(p, s, i + 1, j + 1, memo),
            }
        };
        memo.insert((i, j), v);
        v
    }
    go(p, s, 0, 0, &mut HashMap::new())
}

const BELOW_MAIN: [&str; 4] = [
    "__libc_start_main",
    "__libc_start_call_main",
    "_start",
    "generic_start_main",
];

/// One element of the sequence Valgrind matches (§3.4).
struct Elem {
    fun: String,
    obj: String,
}

/// `(file, line)` of a raw IP's innermost location.
type IpSrc = (Option<String>, Option<u32>);

fn elements(g: &GRecord) -> (Vec<Elem>, Vec<IpSrc>) {
    let mut elems = Vec::new();
    let mut ips = Vec::new();
    for grp in &g.groups {
        // src: of raw IP k: the innermost location of that IP.
        ips.push((grp.frames[0].file.clone(), grp.frames[0].line));
        for (k, f) in grp.frames.iter().enumerate() {
            let real = k + 1 == grp.frames.len();
            let fun = match &f.fun {
                None => "???".to_string(),
                // Default mode renames real below-main frames (exact names,
                // or with a `.suffix`; a version suffix `@@` is not renamed).
                Some(n)
                    if real
                        && (BELOW_MAIN.contains(&n.as_str())
                            || n.starts_with("__libc_start_main.")
                            || n.starts_with("generic_start_main.")) =>
                {
                    "(below main)".to_string()
                }
                Some(n) => n.clone(),
            };
            elems.push(Elem {
                fun,
                obj: grp.obj.clone().unwrap_or_else(|| "???".into()),
            });
        }
    }
    (elems, ips)
}

fn kind_matches(rule: &GRuleKind, rec: &GKind) -> bool {
    match (rule, rec) {
        (GRuleKind::Leak(None), GKind::Leak(_)) => true,
        (GRuleKind::Leak(Some(set)), GKind::Leak(k)) => {
            let words: Vec<&str> = set.split(',').filter(|w| !w.is_empty()).collect();
            if words == ["all"] {
                true
            } else if words == ["none"] {
                false
            } else {
                words.contains(&LEAK_WORDS[*k])
            }
        }
        (GRuleKind::Addr(a), GKind::Addr { size, .. }) => a == size,
        (GRuleKind::Value(a), GKind::Value(b)) => a == b,
        (GRuleKind::Cond { .. }, GKind::Cond) => true,
        (GRuleKind::Param(a), GKind::Param(b)) => a == b,
        (GRuleKind::Free, GKind::Free { .. }) => true,
        (GRuleKind::Fishy { func, arg }, GKind::Fishy { func: f2, arg: a2 }) => {
            func == f2 && arg == a2
        }
        (GRuleKind::Overlap, GKind::Overlap) => true,
        (GRuleKind::Jump, GKind::Jump) => true,
        _ => false,
    }
}

/// §3.3 for stacks: a prefix of the input from the innermost frame; `...`
/// matches zero frames first, then one more, and so on (backtracking).
fn stack_matches(locs: &[GLoc], g: &GRecord) -> bool {
    let (elems, ips) = elements(g);
    let loc_ok = |l: &GLoc, k: usize| -> bool {
        let e = &elems[k];
        match l {
            GLoc::Fun(p) => glob(p.as_bytes(), e.fun.as_bytes()),
            GLoc::Obj(p) => glob(p.as_bytes(), e.obj.as_bytes()),
            // The k-th raw IP's location (Valgrind's index bug, §3.4); none
            // beyond the raw IPs, none without line info.
            GLoc::Src(p, line) => match ips.get(k) {
                Some((Some(file), l)) => {
                    glob(p.as_bytes(), file.as_bytes()) && (*line == 0 || *l == Some(*line))
                }
                _ => false,
            },
            GLoc::Dots => unreachable!(),
        }
    };
    fn go(
        locs: &[GLoc],
        n: usize,
        i: usize,
        k: usize,
        ok: &dyn Fn(&GLoc, usize) -> bool,
        memo: &mut HashMap<(usize, usize), bool>,
    ) -> bool {
        if i == locs.len() {
            return true;
        }
        if let Some(&v) = memo.get(&(i, k)) {
            return v;
        }
        let v = match &locs[i] {
            GLoc::Dots => {
                go(locs, n, i + 1, k, ok, memo) || (k < n && go(locs, n, i, k + 1, ok, memo))
            }
            l => k < n && ok(l, k) && go(locs, n, i + 1, k + 1, ok, memo),
        };
        memo.insert((i, k), v);
        v
    }
    go(locs, elems.len(), 0, 0, &loc_ok, &mut HashMap::new())
}

/// The index of the rule Valgrind applies (the last one defined that
/// matches), if any.
pub(crate) fn reference_match(rules: &[GRule], rec: &GRecord) -> Option<usize> {
    (0..rules.len())
        .rev()
        .find(|&i| kind_matches(&rules[i].kind, &rec.kind) && stack_matches(&rules[i].locs, rec))
}

/// leakgate's answer for the same rules (read from their text) and record.
pub(crate) fn leakgate_match(rules: &[GRule], rec: &GRecord) -> Result<MatchOutcome, String> {
    let text = render_rules(rules);
    let (supps, errors) = leakgate::suppress::parse("gen.supp", &text, "Memcheck", 500);
    if !errors.is_empty() {
        return Err(format!("{errors:?}\n{text}"));
    }
    if supps.len() != rules.len() {
        return Err(format!(
            "{} rules read of {}\n{text}",
            supps.len(),
            rules.len()
        ));
    }
    let set = SuppressionSet::new(
        supps,
        MatchOptions {
            show_below_main: true,
            num_callers: 500,
            ..MatchOptions::default()
        },
    );
    Ok(set.first_match(&to_record(rec)))
}

/// Generates one case from `src` and compares; `Ok` is the agreed answer,
/// `Err` describes a mismatch.
pub(crate) fn check_one(src: &mut impl Source) -> Result<MatchOutcome, String> {
    let rec = gen_record(src);
    let n = 1 + src.below(5);
    let rules: Vec<GRule> = (0..n).map(|_| gen_rule(src, &rec)).collect();
    let want = match reference_match(&rules, &rec) {
        Some(i) => MatchOutcome::Suppressed(i),
        None => MatchOutcome::NotSuppressed,
    };
    let got = leakgate_match(&rules, &rec)?;
    if got != want {
        return Err(format!(
            "leakgate {got:?}, reference {want:?}\nrules:\n{}record: {rec:#?}",
            render_rules(&rules)
        ));
    }
    Ok(got)
}

/// Whether Valgrind's default mode would cut or rename a frame so named.
fn below_main_like(n: &str) -> bool {
    BELOW_MAIN.contains(&n)
        || n.starts_with("__libc_start_main")
        || n.starts_with("generic_start_main")
        || n == "main"
}

/// The undecidable answers never lie: a report written without
/// `--show-below-main=yes` hides the frames below `main`, which still take
/// part in Valgrind's matching. The record's stack ends at `main`; the full
/// stack goes on with 0-3 below-main frames (libc's start functions, `???`,
/// in libc, the executable or unknown: what leakgate assumes may hide
/// there). For every rule, leakgate's `Yes` must be a match on the full
/// stack and its `No` a non-match; only `Unknown` may be either.
/// `Ok`: how many rules were undecidable.
pub(crate) fn check_hidden(src: &mut impl Source) -> Result<usize, String> {
    use leakgate::suppress::Verdict;
    let mut visible = gen_record(src);
    for g in &mut visible.groups {
        for f in &mut g.frames {
            if f.fun.as_deref().is_some_and(below_main_like) {
                f.fun = Some("x".into());
            }
        }
    }
    let exe = "/home/u/app";
    visible.groups.push(GGroup {
        frames: vec![GFrame {
            fun: Some("main".into()),
            file: Some("a.c".into()),
            line: Some(9),
        }],
        obj: Some(exe.into()),
    });
    let mut full = visible.clone();
    for _ in 0..src.below(4) {
        let fun = src
            .pick(&[
                Some("__libc_start_call_main"),
                Some("__libc_start_main@@GLIBC_2.34"),
                Some("_start"),
                None,
            ])
            .map(str::to_string);
        let obj = src
            .pick(&[Some(OBJS[0]), Some(exe), None])
            .map(str::to_string);
        full.groups.push(GGroup {
            frames: vec![GFrame {
                fun,
                file: None,
                line: None,
            }],
            obj,
        });
    }
    let num_callers = full.groups.len() + src.below(3);
    let n = 1 + src.below(4);
    let rules: Vec<GRule> = (0..n).map(|_| gen_rule(src, &full)).collect();
    let text = render_rules(&rules);
    let (supps, errors) = leakgate::suppress::parse("gen.supp", &text, "Memcheck", 500);
    if !errors.is_empty() || supps.len() != rules.len() {
        return Err(format!("{errors:?}\n{text}"));
    }
    let set = SuppressionSet::new(
        supps,
        MatchOptions {
            show_below_main: false,
            num_callers,
            ..MatchOptions::default()
        },
    );
    let rec = to_record(&visible);
    let mut unknown = 0;
    for (i, rule) in rules.iter().enumerate() {
        let truth = kind_matches(&rule.kind, &full.kind) && stack_matches(&rule.locs, &full);
        let got = set.check(i, &rec);
        let ok = match got {
            Verdict::Yes => truth,
            Verdict::No => !truth,
            Verdict::Unknown => {
                unknown += 1;
                true
            }
        };
        if !ok {
            return Err(format!(
                "rule {i}: leakgate {got:?}, full stack {truth} (num_callers {num_callers})\nrules:\n{text}record: {full:#?}"
            ));
        }
    }
    Ok(unknown)
}
