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

mod kinds;
mod lsan;
mod output;
mod rules;

use kinds::GKind;
pub use kinds::KindFilter;
pub use lsan::{LsanGenerator, render_lsan, rule_matches, template_match};
pub use output::{Generated, header, render, summary_line};
pub use rules::MAX_LINES;
use rules::*;
pub use rules::{fun_pattern, obj_pattern};

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crate::analyze::Observer;
use crate::analyze::attribute::{Attribution, ObjClass, classify_object};
use crate::model::{ProcessInfo, Record};
use crate::suppress::{MatchOutcome, Suppressor, Verdict, parse, record_kind};
use crate::versions::VgVersion;

/// Example records kept per rule (for narrowing and folding).
const MAX_EXAMPLES: usize = 16;
/// Frames of an example record that are kept.
const EXAMPLE_FRAMES: usize = 40;

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

/// Takes a generator out of the handle it shared with an analysis (left
/// with `empty()` if the observer is somehow still held).
fn unshare<T>(g: Arc<Mutex<T>>, empty: impl FnOnce() -> T) -> T {
    match Arc::try_unwrap(g) {
        Ok(m) => m
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
        Err(a) => {
            let mut guard = a.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            std::mem::replace(&mut *guard, empty())
        }
    }
}

/// Collects covered records and user records while an analysis runs.
pub struct Generator {
    opts: GenOptions,
    rules: Vec<GenRule>,
    index: HashMap<String, usize>,
    users: Vec<Record>,
    /// Records the analysis calls the user's that `--include-user` covered.
    user_covered: u64,
    raw: HashSet<u64>,
    covered: u64,
    skipped: u64,
    valgrind_args: Option<Vec<String>>,
    valgrind_version: Option<String>,
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
            user_covered: 0,
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
            g.take(rec, p, prepared, att.is_user());
        });
        (g, obs)
    }

    /// Takes the generator out of its shared handle once the analysis is done.
    pub fn unshare(g: Arc<Mutex<Generator>>) -> Generator {
        unshare(g, || Generator::new(GenOptions::default()))
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
        self.take(rec, process, p, att.is_user());
    }

    fn take(&mut self, rec: &Record, process: &ProcessInfo, p: Prepared, yours: bool) {
        if yours && matches!(p, Prepared::Rule { .. } | Prepared::Skipped(_)) {
            self.user_covered += 1;
        }
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
        let mut warnings = Vec::new();
        if self.opts.include_user && self.user_covered > 0 {
            warnings.push(format!(
                "--include-user: this file suppresses {} record(s) that the same analysis calls yours (your own leaks or errors); a run with it will not fail on them",
                self.user_covered
            ));
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
            warnings,
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

#[cfg(test)]
mod tests;
