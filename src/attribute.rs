//! Stage 3 of the pipeline: decide whose fault each record is.
//!
//! A leak is judged by its allocation stack, an error by its main stack. The
//! frames are walked from the innermost outwards: allocator frames are
//! skipped, pass-through frames (the CPython interpreter, and code compiled
//! into the user's object from headers outside the user's roots) are skipped,
//! and the first frame left decides: user code makes the record the user's,
//! anything else makes it noise labelled by that frame's library. The rule is
//! written for users in README.md ("How leakgate decides what is yours").

use rustc_hash::FxHashMap as HashMap;
use std::path::{Component, Path, PathBuf};

use regex::Regex;
use serde::Serialize;

use crate::model::{Frame, Record, Sym};

/// Where noise comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Python,
    Cuda,
    Torch,
    System,
    ThirdParty,
    Unknown,
}

impl Source {
    pub fn label(self) -> &'static str {
        match self {
            Source::Python => "python",
            Source::Cuda => "cuda",
            Source::Torch => "torch",
            Source::System => "system",
            Source::ThirdParty => "third_party",
            Source::Unknown => "unknown",
        }
    }
}

/// What kind of object (shared library or executable) a frame lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjClass {
    /// Valgrind's preloaded replacement objects (malloc and friends).
    Valgrind,
    Interpreter,
    Cuda,
    Torch,
    System,
    ThirdParty,
    /// No object known (`???`, JIT code).
    Unknown,
    /// None of the above: a candidate for the user's own code.
    Other,
}

/// Path components that mark third-party code wherever they appear.
const THIRD_PARTY_DIRS: &[&str] = &[
    "site-packages",
    "dist-packages",
    ".venv",
    "venv",
    "node_modules",
    "third_party",
    "_deps",
];

/// Path components that mark a library's headers compiled into the user's
/// object (their code allocates on its own behalf: pybind11's function
/// records, say).
const LIBRARY_HEADER_DIRS: &[&str] = &["pybind11", "nanobind"];

/// Prefixes of system locations.
const SYSTEM_PREFIXES: &[&str] = &["/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/", "/etc/"];

fn has_component(path: &str, names: &[&str]) -> bool {
    path.split('/').any(|c| names.contains(&c))
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Classifies an object path (`<obj>`).
pub fn classify_object(obj: Option<&str>) -> ObjClass {
    let Some(obj) = obj else {
        return ObjClass::Unknown;
    };
    if obj.is_empty() || obj == "???" {
        return ObjClass::Unknown;
    }
    let base = basename(obj);
    if base.starts_with("vgpreload_") || obj.contains("/valgrind/vgpreload") {
        return ObjClass::Valgrind;
    }
    if base.starts_with("libpython") || is_python_exe(base) || obj.contains("/lib-dynload/") {
        return ObjClass::Interpreter;
    }
    const CUDA: &[&str] = &[
        "libcuda.",
        "libcudart",
        "libnvidia-",
        "libcublas",
        "libcudnn",
        "libnccl",
        "libcufft",
        "libcurand",
        "libcusparse",
        "libcusolver",
        "libnvrtc",
        "libnvtoolsext",
        "libnvjitlink",
        "libcupti",
        "libnvperf",
        "libcufile",
        "libnvtx",
        "libcudadebugger",
    ];
    let lower = base.to_ascii_lowercase();
    if CUDA.iter().any(|p| lower.starts_with(p)) || obj.contains("/site-packages/nvidia/") {
        return ObjClass::Cuda;
    }
    const TORCH: &[&str] = &[
        "libtorch",
        "libc10",
        "libshm",
        "libcaffe2",
        "libmkl",
        "libiomp",
        "libgomp-",
        "libnvfuser",
    ];
    if TORCH.iter().any(|p| lower.starts_with(p))
        || obj.contains("/site-packages/torch/")
        || obj.contains("/dist-packages/torch/")
    {
        return ObjClass::Torch;
    }
    const SYSTEM: &[&str] = &[
        "libc.so",
        "libc-",
        "ld-linux",
        "ld64.so",
        "libstdc++",
        "libgcc_s",
        "libgomp.",
        "libm.so",
        "libm-",
        "libpthread",
        "libdl.",
        "libdl-",
        "librt.",
        "libresolv",
        "libz.so",
        "libffi",
    ];
    if SYSTEM.iter().any(|p| lower.starts_with(p)) {
        return ObjClass::System;
    }
    if has_component(obj, THIRD_PARTY_DIRS) {
        return ObjClass::ThirdParty;
    }
    if SYSTEM_PREFIXES.iter().any(|p| obj.starts_with(p)) {
        return ObjClass::System;
    }
    ObjClass::Other
}

fn is_python_exe(base: &str) -> bool {
    let Some(rest) = base.strip_prefix("python") else {
        return false;
    };
    rest.chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == 'm' || c == 'd')
}

fn class_source(c: ObjClass) -> Source {
    match c {
        ObjClass::Interpreter => Source::Python,
        ObjClass::Cuda => Source::Cuda,
        ObjClass::Torch => Source::Torch,
        ObjClass::System | ObjClass::Valgrind => Source::System,
        ObjClass::ThirdParty => Source::ThirdParty,
        ObjClass::Unknown => Source::Unknown,
        ObjClass::Other => Source::ThirdParty,
    }
}

/// Allocation functions by exact name (also used by the suppression generator).
pub(crate) const ALLOCATORS: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "strdup",
    "strndup",
    "__strdup",
    "__strndup",
    "wcsdup",
    "__libc_malloc",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    "_Znwm",
    "_Znam",
    "_ZdlPv",
    "_ZdaPv",
];

fn is_allocator_name(f: &str) -> bool {
    ALLOCATORS.contains(&f)
        || f.starts_with("operator new")
        || f.starts_with("operator delete")
        || f.starts_with("_ZnwmSt")
        || f.starts_with("_ZnamSt")
        || f.starts_with("_ZdlPv")
        || f.starts_with("_ZdaPv")
}

/// Names Valgrind gives frames below `main`; they never decide.
pub fn is_below_main(f: &str) -> bool {
    f == "(below main)"
        || f == "_start"
        || f.starts_with("__libc_start_main")
        || f.starts_with("__libc_start_call_main")
        || f.starts_with("generic_start_main")
}

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

/// Which user-code rule applies (for the report and the README).
#[derive(Debug, Clone, Default)]
pub struct UserSpec {
    /// `--src-root` directories (canonicalised).
    pub roots: Vec<PathBuf>,
    /// `--user-object` globs.
    pub user_objects: Vec<String>,
}

/// Where a user finding points.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Location {
    pub function: Option<String>,
    pub file: Option<String>,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub object: Option<String>,
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
        });
        if let Some(o) = obj {
            self.keep.push(o.clone());
        }
        self.obj_cache.insert(key, (class, user));
        (class, user)
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
                {
                    return SourceRes::Excluded(Source::ThirdParty);
                }
                return SourceRes::User(full.clone());
            }
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
        let stack = &rec.stack;
        // Pass 1: per-frame facts.
        let mut facts = Vec::with_capacity(stack.len());
        let mut root_hit = false;
        for f in stack {
            let (class, user_obj) = self.object(&f.obj);
            let src = self.source(f);
            if let SourceRes::User(_) = src
                && (matches!(class, ObjClass::Other | ObjClass::Unknown) || user_obj)
            {
                root_hit = true;
            }
            facts.push((class, user_obj, src));
        }
        let root_mode = !self.spec.roots.is_empty() && root_hit;
        let mut roles = Vec::with_capacity(stack.len());
        let mut below_main = false;
        let fd_kind = crate::policy::is_fd_kind(&rec.kind);
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
                    if first_pass.is_none() {
                        first_pass = Some((i, s));
                    }
                }
                Role::User => {
                    return Attribution {
                        source: None,
                        owner: Some(i),
                        user_frames,
                        local_paths,
                    };
                }
                Role::Decide(s) => {
                    return Attribution {
                        source: Some(s),
                        owner: Some(i),
                        user_frames,
                        local_paths,
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
        if let SourceRes::User(_) = src
            && (matches!(class, ObjClass::Other | ObjClass::Unknown) || user_obj)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_objects() {
        let c = |s| classify_object(Some(s));
        assert_eq!(
            c("/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so"),
            ObjClass::Valgrind
        );
        assert_eq!(
            c("/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"),
            ObjClass::Interpreter
        );
        assert_eq!(c("/usr/bin/python3.11"), ObjClass::Interpreter);
        assert_eq!(
            c("/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"),
            ObjClass::Interpreter
        );
        assert_eq!(
            c("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"),
            ObjClass::Cuda
        );
        assert_eq!(
            c("/v/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"),
            ObjClass::Torch
        );
        assert_eq!(c("/usr/lib/x86_64-linux-gnu/libc.so.6"), ObjClass::System);
        assert_eq!(
            c("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"),
            ObjClass::System
        );
        assert_eq!(
            c("/v/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so"),
            ObjClass::ThirdParty
        );
        assert_eq!(
            c("/home/dev/project/ext.cpython-311-x86_64-linux-gnu.so"),
            ObjClass::Other
        );
        assert_eq!(c("???"), ObjClass::Unknown);
        assert_eq!(classify_object(None), ObjClass::Unknown);
    }

    #[test]
    fn normalizes_paths() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
