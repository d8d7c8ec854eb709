//! Helpers shared by the CI renderers (JUnit, SARIF, Code Quality,
//! Markdown, GitHub annotations): which findings fail, repository-relative
//! paths, one-line descriptions, stable per-site keys.

use std::path::Path;

use crate::kind::Kind;
use crate::report::{Finding, FrameOut, Report};
use crate::util::{fnv1a, plural};

/// Where the repository is, for relative paths (`--repo-root`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CiContext<'a> {
    pub repo_root: Option<&'a Path>,
}

impl<'a> CiContext<'a> {
    /// A context relative to `repo_root`.
    pub fn new(repo_root: Option<&'a Path>) -> Self {
        CiContext { repo_root }
    }

    /// `path` relative to the repository root, when it lies inside it.
    pub fn relative(&self, path: &str) -> Option<String> {
        crate::gate::baseline::relative_to(path, self.repo_root)
    }

    /// A file of the run (the baseline) for people: relative to the
    /// repository root, else to the current directory, when inside it; else
    /// as given.
    pub fn file_shown(&self, path: &str) -> String {
        let cwd = std::env::current_dir().ok();
        shown_path(path, self.repo_root, cwd.as_deref())
    }

    /// The repository-relative path of a finding's location, if inside.
    pub fn finding_path(&self, f: &Finding) -> Option<String> {
        let loc = f.location.as_ref()?;
        loc.path.as_deref().and_then(|p| self.relative(p))
    }

    /// The best path to show for a finding: repository-relative, else the
    /// local path, else the file Valgrind named, else the object.
    pub fn display_path(&self, f: &Finding) -> Option<String> {
        let loc = f.location.as_ref()?;
        self.finding_path(f)
            .or_else(|| loc.path.clone())
            .or_else(|| loc.file.clone())
            .or_else(|| loc.object.clone())
    }

    /// The repository-relative path of a stack frame, if inside.
    pub fn frame_path(&self, fr: &FrameOut) -> Option<String> {
        fr.path.as_deref().and_then(|p| self.relative(p))
    }
}

/// `path` relative to `repo_root`, else to `cwd`, when inside one of
/// them (`.` for the directory itself); else `path`.
fn shown_path(path: &str, repo_root: Option<&Path>, cwd: Option<&Path>) -> String {
    [repo_root, cwd]
        .into_iter()
        .flatten()
        .find_map(|dir| Path::new(path).strip_prefix(dir).ok())
        .map(|rel| match rel.to_string_lossy() {
            r if r.is_empty() => ".".to_string(),
            r => r.into_owned(),
        })
        .unwrap_or_else(|| path.to_string())
}

/// The user findings to fix, in report order (indirectly lost blocks a
/// gated definite leak owns are that leak's: `indirect_parts`).
pub fn user_findings(r: &Report) -> Vec<&Finding> {
    r.findings.iter().filter(|f| f.is_user_shown()).collect()
}

/// Why a user finding does not fail, one of a few reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
enum NotFailing {
    Known,
    WithinMax,
    AtImport,
    /// Its kind is not in `--fail-on`.
    NotInFailOn(String),
}

fn not_failing(f: &Finding) -> Option<NotFailing> {
    if f.fails {
        None
    } else if f.is_known() {
        Some(NotFailing::Known)
    } else if f.is_gated() {
        Some(NotFailing::WithinMax)
    } else if f.at_import {
        Some(NotFailing::AtImport)
    } else {
        Some(NotFailing::NotInFailOn(f.kind.to_string()))
    }
}

/// The `--fail-on` list the report was gated with.
fn fail_on_list(r: &Report) -> String {
    r.policy
        .as_ref()
        .map(|p| p.fail_on.join(","))
        .unwrap_or_else(|| crate::gate::policy::DEFAULT_FAIL_ON.into())
}

/// Why a user finding does not fail, for people (None if it fails).
pub fn why_not_failing(r: &Report, f: &Finding) -> Option<String> {
    Some(match not_failing(f)? {
        NotFailing::Known => "known from the baseline: reported, not gated".into(),
        NotFailing::WithinMax => "within --max-leaked-bytes: reported, not gated".into(),
        NotFailing::AtImport => format!(
            "{}: reported, not gated (add `import` to --fail-on to gate it)",
            crate::analyze::import_time::GROUP
        ),
        NotFailing::NotInFailOn(kind) => format!(
            "reported, not gated: {kind} is not in --fail-on {}",
            fail_on_list(r)
        ),
    })
}

/// Why none of `fs` fails, each reason said once: as
/// [`why_not_failing`] for one reason, else `reported, not gated: ` and
/// the reasons (`Leak_PossiblyLost and Leak_StillReachable are not in
/// --fail-on definite,indirect,errors; known from the baseline`).
pub fn why_none_fails(r: &Report, fs: &[&Finding]) -> String {
    let mut why: Vec<NotFailing> = Vec::new();
    for w in fs.iter().filter_map(|f| not_failing(f)) {
        if !why.contains(&w) {
            why.push(w);
        }
    }
    if why.len() <= 1 {
        return fs
            .iter()
            .find_map(|f| why_not_failing(r, f))
            .unwrap_or_default();
    }
    let kinds: Vec<&str> = why
        .iter()
        .filter_map(|w| match w {
            NotFailing::NotInFailOn(k) => Some(k.as_str()),
            _ => None,
        })
        .collect();
    let mut parts: Vec<String> = Vec::new();
    let mut kinds_said = false;
    for w in &why {
        match w {
            NotFailing::Known => parts.push("known from the baseline".into()),
            NotFailing::WithinMax => parts.push("within --max-leaked-bytes".into()),
            NotFailing::AtImport => parts.push(format!(
                "{} (add `import` to --fail-on to gate them)",
                crate::analyze::import_time::GROUP
            )),
            NotFailing::NotInFailOn(_) if !kinds_said => {
                kinds_said = true;
                let list = match kinds.as_slice() {
                    [one] => format!("{one} is"),
                    [init @ .., last] => format!("{} and {last} are", init.join(", ")),
                    [] => unreachable!("a NotInFailOn reason names its kind"),
                };
                parts.push(format!("{list} not in --fail-on {}", fail_on_list(r)));
            }
            NotFailing::NotInFailOn(_) => {}
        }
    }
    format!("reported, not gated: {}", parts.join("; "))
}

/// `leak_kinds.c:12`, `leak_kinds.c`, the object, or `???`.
pub fn place(ctx: &CiContext, f: &Finding) -> String {
    let path = ctx.display_path(f).unwrap_or_else(|| "???".into());
    let place = match f.location.as_ref().and_then(|l| l.line) {
        Some(l) => format!("{path}:{l}"),
        None => path,
    };
    match f
        .location
        .as_ref()
        .and_then(|l| generated_text(l.generated.as_ref()))
    {
        Some(g) => format!("{place}, {g}"),
        None => place,
    }
}

/// Where generated code lies, beside the source it was generated from:
/// `generated leaky.c:2977`.
pub fn generated_text(g: Option<&crate::report::GeneratedCode>) -> Option<String> {
    let g = g?;
    let file = g.file.as_deref().or(g.path.as_deref())?;
    Some(match g.line {
        Some(l) => format!("generated {file}:{l}"),
        None => format!("generated {file}"),
    })
}

/// The function of a finding's location, or `???`.
pub fn function(f: &Finding) -> &str {
    f.location
        .as_ref()
        .and_then(|l| l.function.as_deref())
        .unwrap_or("???")
}

/// What the finding is, in one line: `64 bytes in 1 block definitely lost
/// in leak_definite` (`48 bytes (16 direct, 32 indirect) in 1 block ...`
/// as the text report says it) or Valgrind's message for errors.
pub fn headline(f: &Finding) -> String {
    if f.is_leak() {
        let bytes = f.bytes.unwrap_or(0);
        let blocks = f.blocks.unwrap_or(0);
        let how = match f.kind {
            Kind::DefinitelyLost => "definitely lost",
            Kind::IndirectlyLost => "indirectly lost",
            Kind::PossiblyLost => "possibly lost",
            Kind::StillReachable => "still reachable",
            _ => "lost",
        };
        format!(
            "{} in {} {how} in {}",
            crate::render::bytes_split(bytes, f.direct_bytes.unwrap_or(bytes)),
            plural(blocks, "block", "blocks"),
            function(f)
        )
    } else {
        let msg = if f.message.is_empty() {
            f.kind.noun().0
        } else {
            f.message.clone()
        };
        format!("{msg} in {}", function(f))
    }
}

/// One frame for people: `leak_definite (leak_kinds.c:12)`.
pub fn frame_text(fr: &FrameOut) -> String {
    let name = fr.function.as_deref().unwrap_or("???");
    match (&fr.file, fr.line) {
        (Some(file), Some(l)) => match generated_text(fr.generated.as_ref()) {
            Some(g) => format!("{name} ({file}:{l}, {g})"),
            None => format!("{name} ({file}:{l})"),
        },
        _ => match &fr.object {
            Some(o) => format!("{name} (in {o})"),
            None => name.to_string(),
        },
    }
}

/// The stack, one frame a line, user frames marked with `>`.
pub fn stack_text(f: &Finding) -> String {
    frames_text(&f.stack)
}

fn frames_text(frames: &[FrameOut]) -> String {
    let mut s = String::new();
    for fr in frames {
        s.push_str(if fr.user { "> " } else { "  " });
        s.push_str(&frame_text(fr));
        s.push('\n');
    }
    s
}

/// The auxiliary stacks (where the block was freed or allocated, ...),
/// each under Valgrind's text and a colon, as [`stack_text`] writes stacks.
pub fn aux_stacks_text(f: &Finding) -> String {
    let mut s = String::new();
    for a in &f.aux_stacks {
        let text = if a.text.is_empty() {
            "another stack"
        } else {
            a.text.as_str()
        };
        s.push_str(&format!("{text}:\n"));
        s.push_str(&frames_text(&a.stack));
    }
    s
}

/// The indirectly lost findings a definite leak owns, one line each
/// (`with it, indirectly lost: 32 bytes in 1 block at leak_kinds.c:37 in
/// leak_indirect`); empty when none.
pub fn indirect_parts_text(f: &Finding) -> String {
    f.indirect_parts
        .iter()
        .map(|p| {
            format!(
                "with it, indirectly lost: {}\n",
                crate::render::indirect_part_text(p)
            )
        })
        .collect()
}

/// The source line at the finding's location, trimmed.
pub fn source(f: &Finding) -> Option<&str> {
    f.source_line
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A key for one finding that is stable across runs and line shifts and
/// unique in the report: the fingerprint, plus, when several user findings
/// share it (sites in one function), a hash of the source line (or the
/// site's rank when the source is not readable).
pub fn site_key(r: &Report, f: &Finding) -> String {
    let same: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|g| g.fingerprint == f.fingerprint && g.category == f.category)
        .collect();
    if same.len() <= 1 {
        return f.fingerprint.clone();
    }
    let by_source = source(f).map(|s| fnv1a(s.as_bytes()));
    let unique_source = by_source.is_some()
        && same
            .iter()
            .filter(|g| source(g).map(|s| fnv1a(s.as_bytes())) == by_source)
            .count()
            == 1;
    if unique_source {
        return format!("{}-{:08x}", f.fingerprint, by_source.unwrap_or(0) as u32);
    }
    // Lines, then (Cython: sites of one .pyx line) their generated lines.
    let line = |g: &Finding| {
        g.location.as_ref().map_or((0, 0), |l| {
            let generated = l.generated.as_ref().and_then(|c| c.line);
            (l.line.unwrap_or(0), generated.unwrap_or(0))
        })
    };
    let mut lines: Vec<(u32, u32)> = same.iter().map(|g| line(g)).collect();
    lines.sort_unstable();
    let mine = line(f);
    let rank = lines.iter().position(|l| *l == mine).unwrap_or(0);
    format!("{}-{}", f.fingerprint, rank + 1)
}

/// A one-line summary of the noise: `python: 37 records (2,864 bytes)`.
pub fn noise_line(r: &Report) -> String {
    let noise = &r.summary.noise;
    if noise.by_source.is_empty() {
        return "none".into();
    }
    noise
        .by_source
        .iter()
        .map(|(k, n)| {
            let bytes = noise.bytes_by_source.get(k).copied().unwrap_or(0);
            let recs = plural(*n, "record", "records");
            if bytes > 0 {
                format!("{k}: {recs} ({})", plural(bytes, "byte", "bytes"))
            } else {
                format!("{k}: {recs}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Help for a Valgrind kind: (short description, full description).
pub fn kind_help(kind: &Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::DefinitelyLost => (
            "Memory definitely lost",
            "A heap block allocated here is no longer pointed to by anything when the program exits: it can never be freed. Free it on every path (including error paths), or give it an owner (a smart pointer, a Python object's destructor).",
        ),
        Kind::IndirectlyLost => (
            "Memory indirectly lost",
            "A heap block allocated here is only reachable from blocks that are themselves lost (for example the nodes of a lost tree). Fixing the definitely-lost block that owns it usually fixes this too.",
        ),
        Kind::PossiblyLost => (
            "Memory possibly lost",
            "Only a pointer into the middle of this heap block survives at exit. It may be a leak, or a deliberate interior pointer (some allocators and containers keep those).",
        ),
        Kind::StillReachable => (
            "Memory still reachable",
            "This heap block is still pointed to at exit (a global or a cache) but was never freed. Usually harmless; free it at shutdown if it grows.",
        ),
        Kind::InvalidRead => (
            "Invalid read",
            "The program read memory it must not: outside a heap block, or from a block already freed. Check array bounds and object lifetimes.",
        ),
        Kind::InvalidWrite => (
            "Invalid write",
            "The program wrote memory it must not: outside a heap block, or into a block already freed. This corrupts the heap; check array bounds and object lifetimes.",
        ),
        Kind::InvalidFree => (
            "Invalid free",
            "A block was freed that is not the start of a live heap block: a double free, or a pointer that never came from malloc/new.",
        ),
        Kind::MismatchedFree => (
            "Mismatched free",
            "A block was released with the wrong function: malloc/free, new/delete and new[]/delete[] must be paired.",
        ),
        Kind::InvalidJump => (
            "Invalid jump",
            "The program jumped to an address that is not code (a corrupted function pointer or return address).",
        ),
        Kind::Overlap => (
            "Overlapping source and destination",
            "memcpy/strcpy (or a relative) was called with overlapping source and destination; use memmove.",
        ),
        Kind::UninitCondition => (
            "Conditional jump on uninitialised value",
            "A branch depends on memory that was never initialised. The origin stack (--track-origins) shows where it was allocated.",
        ),
        Kind::UninitValue => (
            "Use of uninitialised value",
            "An uninitialised value was used in a way that matters (an address, a system call). The origin stack shows where it came from.",
        ),
        Kind::SyscallParam => (
            "System call with invalid parameter",
            "A system call was given an uninitialised or unaddressable buffer.",
        ),
        Kind::FatalSignal => (
            "Fatal signal",
            "The program was killed by a signal (a crash) in this code.",
        ),
        Kind::ClientCheck => (
            "Client check failed",
            "A Valgrind client request (VALGRIND_CHECK_MEM_IS_DEFINED and friends) failed.",
        ),
        Kind::InvalidMemPool => (
            "Invalid memory pool",
            "A memory-pool client request named a pool that does not exist.",
        ),
        Kind::FishyValue => (
            "Fishy argument value",
            "An allocation function got an implausible size (probably a negative number).",
        ),
        Kind::ReallocSizeZero => (
            "realloc with size zero",
            "realloc(p, 0) behaves differently across C libraries; free the block explicitly.",
        ),
        _ => (
            "Memcheck error",
            "Valgrind Memcheck reported an error of this kind in your code.",
        ),
    }
}

/// Escapes a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn relative_paths() {
        let ctx = CiContext::new(Some(Path::new("/repo")));
        assert_eq!(ctx.relative("/repo/src/a.c").as_deref(), Some("src/a.c"));
        assert_eq!(ctx.relative("/elsewhere/a.c"), None);
        assert_eq!(ctx.relative("a.c"), None);
    }

    #[test]
    fn files_are_shown_relative_to_the_repository_or_the_current_directory() {
        let (repo, cwd) = (Some(Path::new("/repo")), Some(Path::new("/work/ci")));
        assert_eq!(
            shown_path("/repo/.leakgate/b.json", repo, cwd),
            ".leakgate/b.json"
        );
        assert_eq!(shown_path("/work/ci/b.json", repo, cwd), "b.json");
        assert_eq!(shown_path("/work/ci/b.json", None, cwd), "b.json");
        assert_eq!(shown_path("/tmp/b.json", repo, cwd), "/tmp/b.json");
        assert_eq!(shown_path("b.json", repo, cwd), "b.json");
    }

    #[test]
    fn ci_outputs_show_an_indirect_part_under_its_leak_only() {
        use crate::report::Kind;
        let leak = crate::render::test_leak;
        let mut fs = vec![
            leak(Kind::DefinitelyLost, "tree", 3, 48, 16),
            leak(Kind::IndirectlyLost, "leaf", 4, 32, 32),
        ];
        crate::gate::mark(&crate::gate::Policy::default(), &mut fs);
        let r = crate::render::test_report(&["t"], serde_json::json!([]), fs);
        assert_eq!(user_findings(&r).len(), 1);
        assert_eq!(
            headline(user_findings(&r)[0]),
            "48 bytes (16 direct, 32 indirect) in 1 block definitely lost in make_tree"
        );
        let ctx = CiContext::default();
        let part = "with it, indirectly lost: 32 bytes in 1 block at m.c:4 in make_tree";
        for (name, out) in [
            ("junit", crate::render::junit::render(&r, &ctx)),
            ("sarif", crate::render::sarif::render(&r, &ctx)),
            ("annotations", crate::render::annotations::render(&r, &ctx)),
            ("codequality", crate::render::codequality::render(&r, &ctx)),
        ] {
            assert!(out.contains(part), "{name}: {out}");
            assert!(!out.contains("Leak_IndirectlyLost"), "{name}: {out}");
        }
    }

    #[test]
    fn the_markdown_summary_names_the_baseline_relative_to_the_repository() {
        let mut r = crate::render::test_report(&["t"], serde_json::json!([]), Vec::new());
        r.baseline = Some(crate::report::BaselineOut {
            file: "/repo/.leakgate/baseline.json".into(),
            entries: 0,
            new: 0,
            known: 0,
            fixed: Vec::new(),
        });
        let md = crate::render::markdown::render(&r, &CiContext::new(Some(Path::new("/repo"))));
        assert!(md.contains("Baseline `.leakgate/baseline.json`: "), "{md}");
        assert!(!md.contains("/repo/"), "{md}");
    }
}
