//! Stack frame lines of sanitizer reports (`#0 0x7f.. in func /dir/file.c:18:5`,
//! `#1 0x55.. (/path/lib.so+0x1234)`, `in func+0x12 (module)`, `BuildId:`
//! suffixes), the module a symbolised frame most likely lies in (inferred
//! from the `(module+0xoffset)` frames of the same log), and the trimming
//! of the sanitizer's own interceptor frames to one allocator frame, the
//! way Valgrind's stacks start with `malloc` in its preloaded object.

/// One frame as the sanitizer printed it (before symbolisation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct RawFrame {
    /// The program counter as printed (`0x7f591e613545`).
    pub(super) ip_text: String,
    pub(super) ip: Option<u64>,
    pub(super) func: Option<String>,
    /// The source path as printed (absolute or relative to the build).
    pub(super) path: Option<String>,
    pub(super) line: Option<u32>,
    /// The object (`(module+0xoffset)`), printed or inferred.
    pub(super) module: Option<String>,
    /// The offset into `module`, when printed.
    pub(super) offset: Option<u64>,
}

fn hex(s: &str) -> Option<u64> {
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u64::from_str_radix(s, 16).ok()
}

/// Splits `path:line[:col]` into the path and the line.
fn split_location(loc: &str) -> (String, Option<u32>) {
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut parts: Vec<&str> = loc.rsplitn(3, ':').collect();
    parts.reverse();
    match parts.as_slice() {
        [p, l, c] if num(l) && num(c) => ((*p).to_string(), l.parse().ok()),
        [p, l, c] if num(c) => (format!("{p}:{l}"), c.parse().ok()),
        [p, l] if num(l) => ((*p).to_string(), l.parse().ok()),
        _ => (loc.to_string(), None),
    }
}

/// The `(module+0xoffset)` / `(module)` group at the end of a frame line,
/// when the parenthesised text names an object rather than closing a C++
/// signature (`operator new(unsigned long)`).
fn module_group(s: &str) -> Option<(usize, Option<String>, Option<u64>)> {
    if !s.ends_with(')') {
        return None;
    }
    let open = s
        .rfind(" (")
        .map(|i| i + 1)
        .or_else(|| s.starts_with('(').then_some(0))?;
    let inner = &s[open + 1..s.len() - 1];
    if inner == "<unknown module>" {
        return Some((open, None, None));
    }
    let (module, offset) = match inner.rsplit_once("+0x") {
        Some((m, o)) if u64::from_str_radix(o, 16).is_ok() => (m, hex(&format!("0x{o}"))),
        _ => (inner, None),
    };
    let looks_like_object = offset.is_some() || module.starts_with('/') || module.contains(".so");
    (looks_like_object && !module.is_empty()).then(|| (open, Some(module.to_string()), offset))
}

/// Parses a frame line (already trimmed): `#N 0xADDR ...`.
pub(super) fn parse_frame(line: &str) -> Option<RawFrame> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].trim_start();
    let (ip_text, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let ip = hex(ip_text);
    ip?;
    let mut f = RawFrame {
        ip_text: ip_text.to_string(),
        ip,
        ..RawFrame::default()
    };
    let mut rest = rest.trim();
    // `(BuildId: 0123abcd)` after the module.
    if let Some(i) = rest.rfind(" (BuildId: ")
        && rest.ends_with(')')
    {
        rest = rest[..i].trim_end();
    }
    if let Some((at, module, offset)) = module_group(rest) {
        f.module = module;
        f.offset = offset;
        rest = rest[..at].trim_end();
        // leakgate's `stack_trace_format` (`%S (%m+%o)`): a frame without a
        // source location names its module twice.
        if let Some((at, _, _)) = module_group(rest) {
            rest = rest[..at].trim_end();
        }
    }
    let Some(body) = rest.strip_prefix("in ") else {
        return Some(f);
    };
    let body = body.trim();
    // The location is the last word when it looks like one (a path, or
    // `file:line`); function names may hold spaces (`operator new(unsigned long)`).
    let (func, loc) = match body.rsplit_once(' ') {
        Some((func, loc))
            if (loc.contains('/') || loc == "<null>" || split_location(loc).1.is_some())
                && !loc.ends_with(')') =>
        {
            (func.trim(), Some(loc))
        }
        _ => (body, None),
    };
    if let Some(loc) = loc
        && loc != "<null>"
    {
        let (path, line) = split_location(loc);
        f.path = Some(path);
        f.line = line.filter(|&l| l > 0);
    }
    // `func+0x12`: the symbol and the offset into it (symbolize=0 with
    // names from the dynamic symbol table).
    let func = match func.rsplit_once("+0x") {
        Some((name, off)) if !name.is_empty() && u64::from_str_radix(off, 16).is_ok() => name,
        _ => func,
    };
    if !func.is_empty() && func != "<null>" && func != "??" {
        f.func = Some(func.to_string());
    }
    Some(f)
}

pub(super) fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Whether an object is a sanitizer runtime.
pub(super) fn is_runtime_module(m: &str) -> bool {
    let b = basename(m);
    [
        "liblsan.so",
        "libasan.so",
        "libclang_rt.",
        "libhwasan.so",
        "libubsan.so",
    ]
    .iter()
    .any(|p| b.starts_with(p))
}

/// The functions the runtimes intercept that a leak or free stack starts
/// with: at the top of a stack, without a source line, they are the
/// runtime's even in an executable (clang links its runtime statically).
fn is_intercepted(name: &str) -> bool {
    matches!(
        name,
        "malloc"
            | "calloc"
            | "realloc"
            | "reallocarray"
            | "free"
            | "cfree"
            | "memalign"
            | "aligned_alloc"
            | "posix_memalign"
            | "valloc"
            | "pvalloc"
            | "strdup"
            | "strndup"
    ) || name.starts_with("operator new")
        || name.starts_with("operator delete")
}

/// Whether a frame at the top of a stack is the sanitizer runtime's own
/// (an interceptor, the allocator), by its object, its source path or its
/// name.
pub(super) fn is_runtime_frame(f: &RawFrame) -> bool {
    if f.module.as_deref().is_some_and(is_runtime_module) {
        return true;
    }
    if f.path.is_none() && f.func.as_deref().is_some_and(is_intercepted) {
        return true;
    }
    if f.path.as_deref().is_some_and(|p| {
        p.contains("/libsanitizer/")
            || p.starts_with("libsanitizer/")
            || p.contains("compiler-rt/lib/")
    }) {
        return true;
    }
    f.func.as_deref().is_some_and(|n| {
        [
            "__interceptor_",
            "___interceptor_",
            "__asan_",
            "__lsan_",
            "__sanitizer_",
            "__asan::",
            "__lsan::",
            "__sanitizer::",
        ]
        .iter()
        .any(|p| n.starts_with(p))
    })
}

/// The name Valgrind gives the allocator an interceptor stands for
/// (`__interceptor_malloc` → `malloc`, and `free.part.0`, a part gcc split
/// off, → `free`: what addr2line names from the runtime's symbol table);
/// `None` for the runtime's internals.
fn public_name(func: &str) -> Option<String> {
    let mut n = func;
    for clone in [".part.", ".isra.", ".constprop.", ".cold", ".lto_priv."] {
        if let Some(at) = n.find(clone) {
            n = &n[..at];
        }
    }
    for p in [
        "__interceptor_trampoline_",
        "___interceptor_",
        "__interceptor_",
        "__asan_",
        "__lsan_",
    ] {
        if let Some(s) = n.strip_prefix(p) {
            n = s;
            break;
        }
    }
    if n.is_empty() || (n.contains("::") && !n.starts_with("operator ")) {
        return None;
    }
    Some(n.to_string())
}

/// Replaces the leading run of runtime frames by one frame standing for
/// the allocator (or `free`, `memcpy`, ...) the program called: named as
/// Valgrind names it, in the runtime's object when the log names it
/// (`runtime`), at the address of the frame the program called.
pub(super) fn trim_runtime(stack: &mut Vec<RawFrame>, runtime: Option<&str>) {
    let n = stack.iter().take_while(|f| is_runtime_frame(f)).count();
    if n == 0 {
        return;
    }
    let last = &stack[n - 1];
    let module = last
        .module
        .clone()
        .filter(|m| is_runtime_module(m))
        .or_else(|| runtime.map(str::to_string));
    let top = RawFrame {
        ip_text: last.ip_text.clone(),
        ip: last.ip,
        func: last.func.as_deref().and_then(public_name),
        path: None,
        line: None,
        offset: if module == last.module {
            last.offset
        } else {
            None
        },
        module,
    };
    stack.splice(..n, [top]);
    // glibc's strdup calls the intercepted malloc (LeakSanitizer does not
    // intercept strdup): `malloc ← __GI___strdup (libc)` is Valgrind's one
    // `strdup` frame, so the caller owns the block, as under Memcheck.
    if stack.len() > 1
        && stack[0].func.as_deref() == Some("malloc")
        && let Some(name) = stack[1].func.as_deref().and_then(libc_duplicator)
        && match stack[1].module.as_deref() {
            Some(m) => basename(m).starts_with("libc.so"),
            // A symbolised glibc frame names no object: its internal name
            // or glibc's source file says whose it is.
            None => {
                stack[1]
                    .func
                    .as_deref()
                    .is_some_and(|f| f.starts_with("__"))
                    || stack[1]
                        .path
                        .as_deref()
                        .is_none_or(|p| p.contains("string/str"))
            }
        }
    {
        stack[0].func = Some(name.to_string());
        stack[0].ip_text = stack[1].ip_text.clone();
        stack[0].ip = stack[1].ip;
        stack.remove(1);
    }
}

/// glibc's string duplicators by their internal names (`__GI___strdup`,
/// `__strdup`): the name Valgrind's replacement has.
fn libc_duplicator(func: &str) -> Option<&'static str> {
    let n = func.trim_start_matches("__GI_").trim_start_matches("__");
    ["strdup", "strndup", "wcsdup"]
        .into_iter()
        .find(|d| *d == n)
}

/// Where each object printed as `(module+0xoffset)` was loaded
/// (`ip - offset`), and the largest offset seen in it.
#[derive(Debug, Default)]
pub(super) struct ModuleMap {
    bases: Vec<(u64, String, u64)>,
}

/// How far past the furthest offset seen in an object a frame may lie and
/// still be taken as that object's.
const SLACK: u64 = 1 << 20;

impl ModuleMap {
    pub(super) fn learn(&mut self, f: &RawFrame) {
        let (Some(ip), Some(m), Some(off)) = (f.ip, &f.module, f.offset) else {
            return;
        };
        let Some(base) = ip.checked_sub(off) else {
            return;
        };
        match self.bases.iter_mut().find(|(b, n, _)| *b == base && n == m) {
            Some(e) => e.2 = e.2.max(off),
            None => self.bases.push((base, m.clone(), off)),
        }
    }

    /// The object a frame without one most likely lies in: the nearest
    /// load address below its address, within [`SLACK`] of what was seen.
    pub(super) fn infer(&self, ip: u64) -> Option<&str> {
        self.bases
            .iter()
            .filter(|(b, _, max)| *b <= ip && ip - b <= max.saturating_add(SLACK))
            .max_by_key(|(b, _, _)| *b)
            .map(|(_, m, _)| m.as_str())
    }

    /// A sanitizer runtime named by the log, if any.
    pub(super) fn runtime(&self) -> Option<&str> {
        self.bases
            .iter()
            .map(|(_, m, _)| m.as_str())
            .find(|m| is_runtime_module(m))
    }
}
