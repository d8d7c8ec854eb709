//! The input sequence: a record's primary stack as Valgrind's matcher would
//! have seen it ([`StackView`]: inline groups, `<sframe>` names, the
//! `(below main)` rename, whether frames may be hidden below `main`, which
//! names are uncertain), and the options that describe how the XML was
//! written ([`MatchOptions`]).

use crate::model::{Frame, Record, Sym};

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

pub(super) const UNKNOWN: &str = "???";
pub(super) const BELOW_MAIN: &str = "(below main)";

/// Below-main function names (Linux), renamed `(below main)` by default.
pub use crate::model::valgrind_renames_below_main as is_below_main_name;

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
