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

//!
//! Files: this one (the compiled rules, [`SuppressionSet`], [`Tally`]),
//! `matcher/glob` (verdicts, name globs), `matcher/view` (the stack as the
//! matcher sees it), `matcher/patterns` (pattern ids, per-name bit sets).

mod glob;
mod patterns;
mod view;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

pub use super::kind::record_kind;
use super::kind::{KindKey, LeakKind, RecordKind};
use super::parse::{Loc, Suppression};
use crate::model::Record;
pub use glob::{Verdict, string_match};
use patterns::{CACHE_LIMIT, Cache, FxMap, PatTable, bit, set_bit};
pub use view::{
    FunCertainty, HiddenFrames, MatchOptions, StackView, ViewFrame, fun_certainty,
    is_below_main_name, stack_view,
};

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
