//! Whose an object file is, by its path alone: the interpreter, CUDA,
//! torch, the system, a third-party package, or possibly the user's; and
//! the noise label ([`Source`]) each class gets.

use serde::Serialize;

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
pub(super) const THIRD_PARTY_DIRS: &[&str] = &[
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
pub(super) const LIBRARY_HEADER_DIRS: &[&str] = &["pybind11", "nanobind"];

/// Prefixes of system locations.
pub(super) const SYSTEM_PREFIXES: &[&str] =
    &["/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/", "/etc/"];

/// Whether a source path is Rust's standard library (`std`, `core`,
/// `alloc`) compiled into the user's object: rustc's own paths
/// (`/rustc/<commit>/library/...`), or the `rust-src` component's. Like the
/// C++ standard library's headers, its code runs for its caller.
pub(super) fn is_rust_library_source(path: &str) -> bool {
    path.starts_with("/rustc/") || path.contains("/lib/rustlib/src/rust/library/")
}

/// The crate a source path of a Cargo dependency belongs to: a crate from a
/// registry (`$CARGO_HOME/registry/src/<index>/pyo3-0.30.1/src/...` →
/// `pyo3`) or a git checkout (`$CARGO_HOME/git/checkouts/<name>-<hash>/<rev>/...`).
/// Compiled into the user's object, its code owns what it allocates.
pub fn cargo_dependency(path: &str) -> Option<&str> {
    let comps: Vec<&str> = path.split('/').collect();
    let w = comps.windows(4).find(|w| {
        (w[0] == "registry" && w[1] == "src") || (w[0] == "git" && w[1] == "checkouts")
    })?;
    let name = if w[0] == "registry" {
        // `<name>-<major>.<minor>.<patch>[-pre][+build]`; names may hold `-<digit>` (`sha-1`).
        let dir = w[3];
        let semver = |v: &str| {
            let mut parts = v.splitn(3, '.');
            parts
                .next()
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
                && parts
                    .next()
                    .is_some_and(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
                && parts
                    .next()
                    .is_some_and(|p| p.starts_with(|c: char| c.is_ascii_digit()))
        };
        dir.match_indices('-')
            .map(|(i, _)| i)
            .find(|&i| semver(&dir[i + 1..]))
            .map_or(dir, |i| &dir[..i])
    } else {
        // `<name>-<hash>`.
        w[2].rsplit_once('-').map_or(w[2], |(n, _)| n)
    };
    (!name.is_empty()).then_some(name)
}

pub(super) fn has_component(path: &str, names: &[&str]) -> bool {
    path.split('/').any(|c| names.contains(&c))
}

pub(super) fn basename(path: &str) -> &str {
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

/// A library's short name for the report, from its object's path (the
/// package under site-packages: `numpy`; else the file name without its
/// `.so` suffix: `libstdc++`), or for library headers compiled into another
/// object from their source path (`pybind11`).
pub fn library_name(obj: Option<&str>, src: Option<&str>) -> String {
    let package = |path: &str| site_package(path).map(str::to_string);
    let from_object = obj.filter(|o| {
        !matches!(
            classify_object(Some(o)),
            ObjClass::Other | ObjClass::Unknown | ObjClass::Valgrind
        )
    });
    // A library's header code inlined into another package's object (NumPy's
    // `PyArray_GETITEM` compiled into pyBigWig's): the header's package made
    // the block, not the object's.
    if let Some(s) = src
        && let Some(p) = package(s)
        && obj.and_then(site_package) != Some(p.as_str())
    {
        return p;
    }
    if let Some(o) = from_object {
        return package(o).unwrap_or_else(|| stem(basename(o)).to_string());
    }
    if let Some(s) = src {
        if let Some(h) = s.split('/').find(|c| LIBRARY_HEADER_DIRS.contains(c)) {
            return h.to_string();
        }
        if let Some(c) = cargo_dependency(s) {
            return c.to_string();
        }
        if let Some(p) = package(s) {
            return p;
        }
    }
    obj.map_or_else(
        || "an unknown library".into(),
        |o| stem(basename(o)).to_string(),
    )
}

/// The package a path under site-packages (dist-packages) belongs to: the
/// directory after it (`numpy`), or a top-level module's name
/// (`_cffi_backend` for `_cffi_backend.cpython-311-x86_64-linux-gnu.so`).
pub fn site_package(path: &str) -> Option<&str> {
    let comps: Vec<&str> = path.split('/').collect();
    let i = comps
        .iter()
        .position(|c| *c == "site-packages" || *c == "dist-packages")?;
    let rest = comps.get(i + 1..)?;
    let first = rest.first()?;
    Some(if rest.len() > 1 { first } else { stem(first) })
}

/// Packages whose compiled objects are well known to be nobody's own
/// extension under test: their import-time and cache blocks are library
/// noise, and advice to claim them (`--user-object`) would mislead.
pub const WELL_KNOWN_PACKAGES: &[&str] = &[
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "PIL",
    "pyarrow",
    "h5py",
    "sklearn",
    "tensorflow",
    "jaxlib",
    "cv2",
    "numba",
    "llvmlite",
    "grpc",
    "google",
    "cryptography",
    "_cffi_backend",
    "pydantic_core",
    "lxml",
    "yaml",
    "_yaml",
    "psutil",
    "zmq",
    "greenlet",
    "triton",
    "tokenizers",
    "safetensors",
    "torchvision",
    "torchaudio",
];

/// Whether an object path lies in a [`WELL_KNOWN_PACKAGES`] package under
/// site-packages (or dist-packages).
pub fn is_well_known_package(obj: &str) -> bool {
    site_package(obj).is_some_and(|p| WELL_KNOWN_PACKAGES.contains(&p))
}

/// Whether a source path lies in a library's header tree (pybind11,
/// nanobind) or a Cargo dependency's sources (pyo3): code compiled into
/// another object that owns what it allocates, whoever's object it is in.
pub fn is_library_header(path: &str) -> bool {
    has_component(path, LIBRARY_HEADER_DIRS) || cargo_dependency(path).is_some()
}

/// `libstdc++.so.6` → `libstdc++`; `_foo.cpython-311-x86_64-linux-gnu.so` → `_foo`.
fn stem(file: &str) -> &str {
    let end = [".so", ".cpython-", ".abi3", ".py"]
        .iter()
        .filter_map(|s| file.find(s))
        .min()
        .unwrap_or(file.len());
    &file[..end]
}

pub(super) fn is_python_exe(base: &str) -> bool {
    let Some(rest) = base.strip_prefix("python") else {
        return false;
    };
    rest.chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == 'm' || c == 'd')
}

pub(super) fn class_source(c: ObjClass) -> Source {
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
