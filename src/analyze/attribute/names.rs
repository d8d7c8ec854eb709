//! Function names attribution knows: allocators (never the culprit), the
//! CPython allocation API, and interpreter bookkeeping such as tracemalloc.

/// Allocation functions by exact name (also used by the suppression generator).
pub const ALLOCATORS: &[&str] = &[
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

pub(super) fn is_allocator_name(f: &str) -> bool {
    ALLOCATORS.contains(&f)
        || f.starts_with("operator new")
        || f.starts_with("operator delete")
        || f.starts_with("_ZnwmSt")
        || f.starts_with("_ZnamSt")
        || f.starts_with("_ZdlPv")
        || f.starts_with("_ZdaPv")
}

/// CPython's object and memory allocators: what a block's allocation stack
/// passes through between libc's `malloc` and the function that made the
/// object. Shared with the free-list note (`checkpoints::recycled_note`).
pub const CPYTHON_ALLOCATORS: &[&str] = &[
    "PyMem_Malloc",
    "PyMem_Calloc",
    "PyMem_Realloc",
    "_PyMem_RawMalloc",
    "_PyMem_RawRealloc",
    "PyObject_Malloc",
    "PyObject_Calloc",
    "PyObject_Realloc",
    "_PyObject_Malloc",
    "_PyObject_Realloc",
    "_PyObject_New",
    "_PyObject_NewVar",
    "_PyObject_GC_New",
    "_PyObject_GC_NewVar",
    "_PyObject_GC_Resize",
    "_PyObject_GC_Malloc",
    "gc_alloc",
    "PyType_GenericAlloc",
    "_PyType_AllocNoTrack",
];

/// Beyond [`CPYTHON_ALLOCATORS`]: CPython's allocation functions that hand
/// (possibly) uninitialised memory to their caller: in an origin stack the
/// caller made the value, not them.
pub(super) const PYTHON_ALLOCATION_API: &[&str] = &[
    "PyMem_RawMalloc",
    "PyMem_RawCalloc",
    "PyMem_RawRealloc",
    "_PyMem_RawCalloc",
    "_PyObject_Calloc",
    "pymalloc_alloc",
    "pymalloc_realloc",
    "PyObject_Init",
    "PyObject_InitVar",
    "_PyObject_GC_Calloc",
    "PyBytes_FromStringAndSize",
    "_PyBytes_FromSize",
    "_PyBytes_Resize",
    "PyByteArray_FromStringAndSize",
    "PyByteArray_Resize",
    "PyUnicode_New",
    "PyUnicode_Resize",
    "resize_compact",
    "unicode_resize",
];

pub(super) fn is_python_allocation_api(f: &str) -> bool {
    CPYTHON_ALLOCATORS.contains(&f)
        || PYTHON_ALLOCATION_API.contains(&f)
        || f.starts_with("_PyMem_Debug")
        || f.starts_with("_PyBytesWriter_")
        || f.starts_with("_PyUnicodeWriter_")
        // tracemalloc's hooks wrap every allocator while it traces.
        || (f.starts_with("tracemalloc_") && !is_interpreter_bookkeeping(f))
}

/// Interpreter functions that allocate for the interpreter's own
/// bookkeeping, whoever's call they run under: tracemalloc's traces,
/// tracebacks and hash tables (its allocator hooks themselves are not here:
/// they wrap the caller's allocation).
pub(super) fn is_interpreter_bookkeeping(f: &str) -> bool {
    matches!(
        f,
        "raw_malloc" | "raw_calloc" | "raw_realloc" | "traceback_new" | "tracemalloc_add_trace"
    ) || f.starts_with("tracemalloc_copy")
        || f.starts_with("tracemalloc_create")
        || f.starts_with("_tracemalloc_")
}

/// Functions that import or initialise an extension module: a module's
/// `PyInit_*`, the interpreter's loader, and the exec slots of multi-phase
/// initialisation (`PyModule_ExecDef` calls them). What is allocated under
/// them lives as long as the process.
pub fn is_module_init(f: &str) -> bool {
    f.starts_with("PyInit_")
        || f.starts_with("_imp_create_dynamic")
        || f.starts_with("_imp_exec_dynamic")
        || f == "exec_builtin_or_dynamic"
        || f == "_PyImport_LoadDynamicModuleWithSpec"
        || f.starts_with("PyModule_ExecDef")
}

/// Functions of Rust's standard library and allocator shims, by their
/// demangled name (`alloc::vec::from_elem`, `<alloc::raw_vec::RawVecInner>::try_allocate_in`,
/// `<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem`, `__rust_alloc`,
/// `__rdl_alloc`): compiled into every Rust object, they run for their caller.
pub(super) fn is_rust_runtime_name(f: &str) -> bool {
    const CRATES: &[&str] = &["alloc::", "core::", "std::"];
    let path = match f.strip_prefix('<') {
        // `<alloc::...>::f`: the type's crate; `<T as Trait>::f`: the
        // type's when it has a path (`<ext::Holder as core::ops::Drop>` is
        // the user's impl), else the trait's (`<u8 as alloc::...>`).
        Some(inner) => match inner.split_once(" as ") {
            Some((ty, tr)) => {
                let ty = ty.trim_start_matches(['&', '*']);
                let ty = ty
                    .strip_prefix("mut ")
                    .or(ty.strip_prefix("const "))
                    .unwrap_or(ty);
                if ty.contains("::") { ty } else { tr }
            }
            None => inner,
        },
        None => f,
    };
    CRATES.iter().any(|c| path.starts_with(c))
        || ["__rust_", "__rdl_", "__rg_", "__rustc::"]
            .iter()
            .any(|p| f.starts_with(p))
}
