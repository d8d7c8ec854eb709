//! Stage 3 of the pipeline: decide whose fault each record is.
//!
//! A leak is judged by its allocation stack, an error by its main stack. The
//! frames are walked from the innermost outwards: allocator frames are
//! skipped, pass-through frames (the CPython interpreter, and code compiled
//! into the user's object from headers outside the user's roots) are skipped,
//! and the first frame left decides: user code makes the record the user's,
//! anything else makes it noise labelled by that frame's library, except
//! that a lost block a library allocated when the user's code called it
//! directly (no interpreter frame between, not under module import) is the
//! user's, as an object CPython's C API made for them is. The rule is
//! written for users in docs/attribution.md ("How leakgate decides what is
//! yours").

mod installs;
mod names;

pub use installs::installed_from;
mod objects;
#[cfg(test)]
mod tests;

pub use names::is_module_init;
pub use names::{ALLOCATORS, CPYTHON_ALLOCATORS};
use names::{
    is_allocator_name, is_interpreter_bookkeeping, is_python_allocation_api, is_rust_runtime_name,
};
use objects::{
    LIBRARY_HEADER_DIRS, SYSTEM_PREFIXES, THIRD_PARTY_DIRS, basename, class_source, has_component,
    is_rust_library_source,
};
pub use objects::{
    ObjClass, Source, WELL_KNOWN_PACKAGES, cargo_dependency, classify_object, is_library_header,
    is_well_known_package, library_name, site_package,
};

use rustc_hash::FxHashMap as HashMap;
use std::path::{Component, Path, PathBuf};

use regex::Regex;

use crate::model::{Frame, Record, Sym};
pub use crate::report::Location;

pub use crate::model::is_below_main;

/// The uninitialised bytes CPython leaves by design, each a named rule: the
/// function whose allocation creates them, and the object and field. An
/// uninitialised-value error whose origin is one of these is the
/// interpreter's (`NoiseReason::InterpreterOrigin`) wherever it was used;
/// no other origin in the interpreter moves an error away from the user's
/// deciding frame.
pub const CPYTHON_UNINIT: &[(&str, &str)] = &[(
    "_PyLong_New",
    "PyLongObject.ob_digit[0] of the int 0: CPython 3.11's _PyLong_New(0) allocates one digit and leaves it uninitialised, and its small-int lookup (maybe_small_long) reads it",
)];

/// How a frame's source file relates to the user's roots.
#[derive(Debug, Clone)]
enum SourceRes {
    /// Under a root (directly, or by its trailing path components); the local path.
    User(PathBuf),
    /// In third-party or system places.
    Excluded(Source),
    /// Known, but neither under a root nor excluded.
    Elsewhere,
    /// No source information.
    None,
}

/// The role a frame plays in deciding a record's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Skip,
    PassThrough(Source),
    User,
    Decide(Source),
}

/// Which user-code rule applies (for the report and docs/attribution.md).
#[derive(Debug, Clone, Default)]
pub struct UserSpec {
    /// `--src-root` directories (canonicalised).
    pub roots: Vec<PathBuf>,
    /// `--user-object` globs.
    pub user_objects: Vec<String>,
}

/// The verdict on one record.
#[derive(Debug, Clone)]
pub struct Attribution {
    /// `None` for user records; the noise label otherwise.
    pub source: Option<Source>,
    /// The deciding frame (user frame for user records, owner for noise).
    pub owner: Option<usize>,
    /// Indices of user frames in the judged stack.
    pub user_frames: Vec<usize>,
    /// The judged stack's local (resolved) source paths, per frame index, for user frames.
    pub local_paths: Vec<(usize, PathBuf)>,
    /// Why a record whose stack runs through the user's code is noise
    /// anyway (the interpreter made the uninitialised value, or allocated
    /// for its own bookkeeping); `None` otherwise.
    pub reason: Option<NoiseReason>,
    /// A user record whose block a library allocated for the user's direct
    /// call (`PyArray_Ravel`'s array): which library, and the function the
    /// user called; `None` otherwise.
    pub made_by: Option<MadeBy>,
}

/// The library that allocated a lost block for the user's call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeBy {
    /// Its short name: `numpy`, `libstdc++`, `pybind11`.
    pub library: String,
    /// The library's function the user's code called.
    pub function: String,
}

impl MadeBy {
    /// One sentence for the report.
    pub fn describe(&self) -> String {
        format!(
            "allocated by {} ({}) for your call: yours to release",
            self.library, self.function
        )
    }
}

/// Why a record that passes through the user's frames is the interpreter's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoiseReason {
    /// The `--track-origins` stack says the interpreter function named
    /// created the uninitialised value (CPython 3.11's `_PyLong_New` leaves
    /// the digit of a zero int uninitialised); the user's code only used it.
    InterpreterOrigin(String),
    /// An interpreter function allocated for its own bookkeeping under the
    /// user's call (tracemalloc's traces and tracebacks).
    InterpreterBookkeeping(String),
    /// An indirectly lost block a library made for the user's direct call
    /// (the `TensorImpl` behind a leaked `new torch::Tensor`, the string of
    /// a leaked `std::runtime_error`): only a lost block points to it, and
    /// Valgrind counts its bytes in that block's record, so it is not a
    /// finding of its own.
    InsideLostBlock(MadeBy),
}

impl NoiseReason {
    /// One sentence for the report.
    pub fn describe(&self) -> String {
        match self {
            NoiseReason::InterpreterOrigin(f) => format!(
                "the uninitialised value was created by the interpreter ({f}), not by your code: CPython leaves it uninitialised and your code only passed it on"
            ),
            NoiseReason::InterpreterBookkeeping(f) => {
                format!("allocated by the interpreter's own bookkeeping ({f}) while your code ran")
            }
            NoiseReason::InsideLostBlock(m) => format!(
                "allocated by {} ({}) for your call and reachable only from a lost block: Valgrind counts its bytes in that block's record (\"N (direct, indirect)\"), so it is not a finding of its own",
                m.library, m.function
            ),
        }
    }
}

impl Attribution {
    pub fn is_user(&self) -> bool {
        self.source.is_none()
    }
}

/// Decides ownership of records; caches per-object and per-source decisions.
pub struct Attributor {
    spec: UserSpec,
    user_object_res: Vec<Regex>,
    obj_cache: HashMap<usize, (ObjClass, bool)>,
    src_cache: HashMap<(usize, usize), SourceRes>,
    /// Keeps cached keys' strings alive (keys are their addresses).
    keep: Vec<Sym>,
}

fn glob_to_regex(glob: &str) -> Regex {
    let mut re = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).expect("escaped glob is a valid regex")
}

fn sym_key(s: &Option<Sym>) -> usize {
    s.as_ref().map_or(0, |a| a.as_ptr() as usize)
}

impl Attributor {
    pub fn new(spec: UserSpec) -> Attributor {
        let user_object_res = spec.user_objects.iter().map(|g| glob_to_regex(g)).collect();
        Attributor {
            spec,
            user_object_res,
            obj_cache: HashMap::default(),
            src_cache: HashMap::default(),
            keep: Vec::new(),
        }
    }

    pub fn spec(&self) -> &UserSpec {
        &self.spec
    }

    fn object(&mut self, obj: &Option<Sym>) -> (ObjClass, bool) {
        let key = sym_key(obj);
        if let Some(v) = self.obj_cache.get(&key) {
            return *v;
        }
        let s = obj.as_deref();
        let class = classify_object(s);
        let user = s.is_some_and(|o| {
            self.user_object_res
                .iter()
                .any(|r| r.is_match(o) || r.is_match(basename(o)))
                || (class == ObjClass::ThirdParty && self.installed_from_a_root(o))
        });
        if let Some(o) = obj {
            self.keep.push(o.clone());
        }
        self.obj_cache.insert(key, (class, user));
        (class, user)
    }

    /// Whether pip installed `obj` from a local checkout that is one of the
    /// source roots, or holds one (run from the checkout or a folder of
    /// it): the user's extension, whatever its debug info's paths say
    /// (`installs`).
    fn installed_from_a_root(&self, obj: &str) -> bool {
        let Some(src) = installs::installed_from(obj) else {
            return false;
        };
        let src = std::fs::canonicalize(&src).unwrap_or(src);
        self.spec
            .roots
            .iter()
            .any(|r| r.starts_with(&src) || src.starts_with(r))
    }

    fn source(&mut self, f: &Frame) -> SourceRes {
        let key = (sym_key(&f.dir), sym_key(&f.file));
        if let Some(v) = self.src_cache.get(&key) {
            return v.clone();
        }
        let res = self.resolve_source(f.dir.as_deref(), f.file.as_deref());
        for s in [&f.dir, &f.file].into_iter().flatten() {
            self.keep.push(s.clone());
        }
        self.src_cache.insert(key, res.clone());
        res
    }

    fn resolve_source(&self, dir: Option<&str>, file: Option<&str>) -> SourceRes {
        let Some(file) = file else {
            return SourceRes::None;
        };
        let full: PathBuf = match dir {
            Some(d) if !file.starts_with('/') => Path::new(d).join(file),
            _ => PathBuf::from(file),
        };
        let full = normalize(&full);
        let full_s = full.to_string_lossy();
        // Directly under a root.
        for root in &self.spec.roots {
            if let Ok(rel) = full.strip_prefix(root) {
                let rel_s = rel.to_string_lossy();
                if has_component(&rel_s, THIRD_PARTY_DIRS)
                    || has_component(&rel_s, LIBRARY_HEADER_DIRS)
                    || cargo_dependency(&rel_s).is_some()
                {
                    return SourceRes::Excluded(Source::ThirdParty);
                }
                return SourceRes::User(full.clone());
            }
        }
        if is_rust_library_source(&full_s) {
            return SourceRes::Excluded(Source::System);
        }
        if cargo_dependency(&full_s).is_some() {
            return SourceRes::Excluded(Source::ThirdParty);
        }
        if has_component(&full_s, THIRD_PARTY_DIRS) || has_component(&full_s, LIBRARY_HEADER_DIRS) {
            let torch = full_s.contains("/torch/include/") || full_s.contains("/torch/csrc/");
            return SourceRes::Excluded(if torch {
                Source::Torch
            } else {
                Source::ThirdParty
            });
        }
        if SYSTEM_PREFIXES.iter().any(|p| full_s.starts_with(p)) {
            return SourceRes::Excluded(Source::System);
        }
        // Elsewhere: does a trailing part of the path name a file under a root?
        if full.is_absolute() {
            let comps: Vec<&std::ffi::OsStr> = full
                .components()
                .filter_map(|c| match c {
                    Component::Normal(s) => Some(s),
                    _ => None,
                })
                .collect();
            for k in (1..=comps.len()).rev() {
                let suffix: PathBuf = comps[comps.len() - k..].iter().collect();
                for root in &self.spec.roots {
                    let cand = root.join(&suffix);
                    if cand.is_file() {
                        return SourceRes::User(cand);
                    }
                }
            }
        }
        SourceRes::Elsewhere
    }

    /// Attributes one record.
    pub fn attribute(&mut self, rec: &Record) -> Attribution {
        use crate::kind::Kind;
        let lost = if &*rec.kind == Kind::IndirectlyLost.as_str() {
            Lost::Indirectly
        } else if &*rec.kind == Kind::DefinitelyLost.as_str()
            || &*rec.kind == Kind::PossiblyLost.as_str()
        {
            Lost::Root
        } else {
            Lost::No
        };
        let mut att = self.attribute_stack(&rec.stack, crate::kind::is_fd_kind(&rec.kind), lost);
        match att.source {
            None => {
                // An uninitialised value the interpreter made is not the
                // user's fault, wherever it was used.
                if let Some(origin) = rec.origin()
                    && let Some(f) = self.interpreter_origin(&origin.stack)
                {
                    att.source = Some(Source::Python);
                    att.reason = Some(NoiseReason::InterpreterOrigin(f));
                }
            }
            Some(Source::Python) => {
                if let Some(i) = att.owner
                    && let Some(name) = rec.stack[i].func.as_deref()
                    && is_interpreter_bookkeeping(name)
                    && !att.user_frames.is_empty()
                {
                    att.reason = Some(NoiseReason::InterpreterBookkeeping(name.to_string()));
                }
            }
            Some(_) => {}
        }
        att
    }

    /// The interpreter function that created an uninitialised value, when
    /// the origin stack's innermost frame that is not an allocator (libc's,
    /// Valgrind's, or one of CPython's allocation functions that hand
    /// uninitialised memory to their caller) lies in the interpreter and is
    /// one of [`CPYTHON_UNINIT`]'s named rules. Any other origin in the
    /// interpreter (the bytes around a string CPython made, a dead stack
    /// slot a CPython frame reused) leaves the error with the frame that
    /// decided it: the user's code read what it should not have.
    fn interpreter_origin(&mut self, origin: &[Frame]) -> Option<String> {
        for f in origin {
            let (class, user_obj) = self.object(&f.obj);
            let name = f.func.as_deref().unwrap_or("");
            if class == ObjClass::Valgrind
                || (is_allocator_name(name)
                    && matches!(class, ObjClass::System | ObjClass::Unknown))
            {
                continue;
            }
            if class == ObjClass::Interpreter && !user_obj {
                if is_python_allocation_api(name) {
                    continue;
                }
                return CPYTHON_UNINIT
                    .iter()
                    .any(|(func, _)| *func == name)
                    .then(|| name.to_string());
            }
            return None;
        }
        None
    }

    /// `lost`: whether the record is a lost block, which a library's frame
    /// hands to the user's code that called it (see [`called_by_user`]).
    fn attribute_stack(&mut self, stack: &[Frame], fd_kind: bool, lost: Lost) -> Attribution {
        // Pass 1: per-frame facts.
        let mut facts = Vec::with_capacity(stack.len());
        let mut root_hit = false;
        for f in stack {
            let (class, user_obj) = self.object(&f.obj);
            let src = self.source(f);
            if let SourceRes::User(_) = src
                && (claims_source(class) || user_obj)
            {
                root_hit = true;
            }
            facts.push((class, user_obj, src));
        }
        // An object under site-packages that holds a frame of the user's
        // sources in this stack is the user's extension (installed with
        // `pip install .`): its other frames (inlined CPython or library
        // headers) are judged as in any user object, not as third-party.
        let claimed: Vec<&str> = stack
            .iter()
            .zip(&facts)
            .filter(|(_, (class, _, src))| {
                *class == ObjClass::ThirdParty && matches!(src, SourceRes::User(_))
            })
            .filter_map(|(f, _)| f.obj.as_deref())
            .collect();
        if !claimed.is_empty() {
            for (f, fact) in stack.iter().zip(facts.iter_mut()) {
                if fact.0 == ObjClass::ThirdParty
                    && f.obj.as_deref().is_some_and(|o| claimed.contains(&o))
                {
                    fact.0 = ObjClass::Other;
                }
            }
        }
        let root_mode = !self.spec.roots.is_empty() && root_hit;
        let mut roles = Vec::with_capacity(stack.len());
        let mut below_main = false;
        for (f, (class, user_obj, src)) in stack.iter().zip(&facts) {
            // Frames below main never decide, nor does anything outside them
            // (with --show-below-main=yes Valgrind unwinds past `_start` into
            // frames without object or name).
            below_main = below_main || f.func.as_deref().is_some_and(is_below_main);
            roles.push(if below_main {
                Role::Skip
            } else {
                self.role(f, *class, *user_obj, src, root_mode)
            });
            // A descriptor error's stack starts in libc's `open`/`close`/
            // `fopen` wrappers, which act for their caller, like allocators.
            if fd_kind && let Some(Role::Decide(Source::System)) = roles.last() {
                *roles.last_mut().expect("just pushed") = Role::PassThrough(Source::System);
            }
        }
        let mut user_frames = Vec::new();
        let mut local_paths = Vec::new();
        for (i, r) in roles.iter().enumerate() {
            if *r == Role::User {
                user_frames.push(i);
                if let SourceRes::User(p) = &facts[i].2 {
                    local_paths.push((i, p.clone()));
                }
            }
        }
        let mut first_pass: Option<(usize, Source)> = None;
        for (i, r) in roles.iter().enumerate() {
            match *r {
                Role::Skip => {}
                Role::PassThrough(s) => {
                    // For a descriptor, libc's open/close wrappers only act
                    // for their caller: the label is the first library
                    // after them (the interpreter's `os.open`, say).
                    let replace = match first_pass {
                        None => true,
                        Some((_, Source::System)) => fd_kind && s != Source::System,
                        Some(_) => false,
                    };
                    if replace {
                        first_pass = Some((i, s));
                    }
                }
                Role::User => {
                    return Attribution {
                        source: None,
                        owner: Some(i),
                        user_frames,
                        local_paths,
                        reason: None,
                        made_by: None,
                    };
                }
                Role::Decide(s) => {
                    if lost != Lost::No
                        && is_library(s)
                        && let Some((user, callee)) = called_by_user(stack, &roles, i)
                    {
                        let f = &stack[callee];
                        let src = f.path();
                        let made_by = MadeBy {
                            library: library_name(f.obj.as_deref(), src.as_deref()),
                            function: f
                                .func
                                .clone()
                                .map_or_else(|| "???".into(), |n| n.to_string()),
                        };
                        if lost == Lost::Indirectly {
                            return Attribution {
                                source: Some(s),
                                owner: Some(i),
                                user_frames,
                                local_paths,
                                reason: Some(NoiseReason::InsideLostBlock(made_by)),
                                made_by: None,
                            };
                        }
                        return Attribution {
                            source: None,
                            owner: Some(user),
                            user_frames,
                            local_paths,
                            reason: None,
                            made_by: Some(made_by),
                        };
                    }
                    return Attribution {
                        source: Some(s),
                        owner: Some(i),
                        user_frames,
                        local_paths,
                        reason: None,
                        made_by: None,
                    };
                }
            }
        }
        let (owner, source) = match first_pass {
            Some((i, s)) => (Some(i), s),
            None => (None, Source::Unknown),
        };
        Attribution {
            source: Some(source),
            owner,
            user_frames,
            local_paths,
            reason: None,
            made_by: None,
        }
    }

    fn role(
        &self,
        f: &Frame,
        class: ObjClass,
        user_obj: bool,
        src: &SourceRes,
        root_mode: bool,
    ) -> Role {
        let name = f.func.as_deref().unwrap_or("");
        if class == ObjClass::Valgrind {
            return Role::Skip;
        }
        if is_allocator_name(name)
            && matches!(
                class,
                ObjClass::System | ObjClass::Unknown | ObjClass::Valgrind
            )
        {
            return Role::Skip;
        }
        if is_below_main(name) {
            return Role::Skip;
        }
        // Rust's allocator shims and standard library compiled into the
        // user's object without line information (`__rust_alloc`,
        // `<alloc::raw_vec::RawVecInner>::try_allocate_in`) run for their
        // caller, as the frames with `/rustc/...` sources do.
        if matches!(src, SourceRes::None)
            && matches!(class, ObjClass::Other | ObjClass::Unknown)
            && is_rust_runtime_name(name)
        {
            return Role::PassThrough(Source::System);
        }
        if let SourceRes::User(_) = src
            && (claims_source(class) || user_obj)
        {
            return Role::User;
        }
        if user_obj {
            return match src {
                SourceRes::Excluded(s) => header_role(*s),
                _ => Role::User,
            };
        }
        match class {
            ObjClass::Interpreter if is_interpreter_bookkeeping(name) => {
                Role::Decide(Source::Python)
            }
            ObjClass::Interpreter => Role::PassThrough(Source::Python),
            ObjClass::Other => match src {
                SourceRes::Excluded(s) => header_role(*s),
                SourceRes::User(_) => Role::User,
                SourceRes::Elsewhere => {
                    if root_mode {
                        Role::PassThrough(Source::ThirdParty)
                    } else {
                        Role::User
                    }
                }
                SourceRes::None => {
                    if root_mode {
                        Role::Decide(Source::ThirdParty)
                    } else {
                        Role::User
                    }
                }
            },
            c => Role::Decide(class_source(c)),
        }
    }
}

/// The noise labels of libraries whose frames hand what they allocate to the
/// user's code that called them: everything but the interpreter (its frames
/// pass through already) and unknown code.
fn is_library(s: Source) -> bool {
    matches!(
        s,
        Source::System | Source::ThirdParty | Source::Torch | Source::Cuda
    )
}

/// What kind of lost block a record is, for [`called_by_user`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lost {
    /// Not a lost block (still reachable, an error).
    No,
    /// Definitely or possibly lost: a leak of its own.
    Root,
    /// Indirectly lost: counted in the record of the block pointing to it.
    Indirectly,
}

/// For a lost block whose deciding frame `decider` is a library's: the
/// user's frame that called that library directly, and the library's
/// outermost frame (the function the user called). Outward of the decider
/// only library frames (and allocators) may stand before the user's frame:
/// an interpreter frame between them means the interpreter called the
/// library, not the user. And no frame outward of the user's may be module
/// import or initialisation (`PyInit_*`, a module exec slot run by
/// `PyModule_ExecDef`, ...): what a library allocates while a module is
/// imported lives as long as the process (pybind11's registrations,
/// NumPy's `import_array`), and stays the library's.
fn called_by_user(stack: &[Frame], roles: &[Role], decider: usize) -> Option<(usize, usize)> {
    let mut callee = decider;
    for (j, r) in roles.iter().enumerate().skip(decider + 1) {
        match *r {
            Role::User => {
                let init = stack[j + 1..]
                    .iter()
                    .any(|f| f.func.as_deref().is_some_and(is_module_init));
                return (!init).then_some((j, callee));
            }
            Role::Skip => {}
            Role::Decide(s) | Role::PassThrough(s) if is_library(s) => callee = j,
            _ => return None,
        }
    }
    None
}

/// Whether a frame in an object of this class is the user's when its source
/// file lies under a source root. Besides objects that are nobody else's,
/// an object under site-packages (a venv) counts: `pip install .` puts the
/// extension under test there, and its debug info still names the checkout's
/// files. Interpreter, CUDA, torch and system objects never do.
fn claims_source(class: ObjClass) -> bool {
    matches!(
        class,
        ObjClass::Other | ObjClass::Unknown | ObjClass::ThirdParty
    )
}

/// A frame of the user's object whose source is a header from elsewhere:
/// system headers (the C++ standard library) pass through, since their code
/// runs for the caller (a `std::vector` the user leaked is the user's);
/// third-party library headers (pybind11, torch) own what they allocate.
fn header_role(s: Source) -> Role {
    match s {
        Source::System => Role::PassThrough(Source::System),
        other => Role::Decide(other),
    }
}

/// Lexically normalises `a/./b/../c` (no file-system access).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
