//! From one record to the lines of a suppression: which frames pin a rule
//! (allocators, the innermost real frames, the owner of the noise), and how
//! a frame becomes a `fun:`/`obj:` pattern that is no wider than needed.

/// Facts about one frame that generalisation needs.
pub(super) struct FInfo {
    loc: String,
    class: ObjClass,
    inlined: bool,
    alloc: bool,
}

pub(super) fn is_alloc_name(n: &str) -> bool {
    let n = n.split('@').next().unwrap_or(n);
    crate::analyze::attribute::ALLOCATORS.contains(&n)
        || n.starts_with("_Znw")
        || n.starts_with("_Zna")
        || n.starts_with("_Zdl")
        || n.starts_with("_Zda")
        || n.starts_with("operator new")
        || n.starts_with("operator delete")
}

use crate::analyze::attribute::{ObjClass, classify_object};
use std::fmt::Write as _;

use crate::model::{Frame, Record, is_below_main};

/// Valgrind's default `--num-callers`: a suppression with more location
/// lines is truncated there (and so becomes wider), so rules stay within it.
pub const MAX_LINES: usize = 12;

/// `fun:` pattern for a (mangled) name: clone/version suffixes become `*`,
/// `*` and `?` inside the name become `?`.
pub fn fun_pattern(name: &str) -> String {
    let mut cut = name.len();
    let mut star = false;
    if let Some(i) = name.find('@') {
        cut = i;
        star = true;
    }
    for m in [
        ".constprop.",
        ".isra.",
        ".part.",
        ".cold",
        ".lto_priv.",
        ".llvm.",
    ] {
        if let Some(i) = name[..cut].find(m)
            && i > 0
        {
            cut = i;
            star = true;
        }
    }
    let mut s: String = name[..cut]
        .chars()
        .map(|c| if c == '*' { '?' } else { c })
        .collect();
    if star {
        s.push('*');
    }
    format!("fun:{s}")
}

/// `obj:` pattern for an object path: `obj:*/libNAME.so*`, no directory, no
/// version numbers, no Python ABI tag.
pub fn obj_pattern(path: &str) -> String {
    if path.is_empty() || path == "???" {
        return "obj:*".into();
    }
    let base = path.rsplit('/').next().unwrap_or(path);
    let so = base
        .match_indices(".so")
        .find(|(i, _)| {
            let rest = &base[i + 3..];
            rest.is_empty() || rest.starts_with('.')
        })
        .map(|(i, _)| i);
    let mut stem = match so {
        Some(i) => &base[..i],
        None => base,
    };
    let mut star = false;
    for tag in [".cpython-", ".cp3", ".abi3", ".pypy"] {
        if let Some(i) = stem.find(tag)
            && i > 0
        {
            stem = &stem[..i];
            star = true;
        }
    }
    // Trailing `.N.M` version groups (`libpython3.11`, `python3.11`).
    while let Some(dot) = stem.rfind('.') {
        let tail = &stem[dot + 1..];
        if dot > 0 && !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            stem = &stem[..dot];
            star = true;
        } else {
            break;
        }
    }
    // A wheel's hash suffix (`libgomp-a34b3233`).
    if let Some(dash) = stem.rfind('-') {
        let tail = &stem[dash + 1..];
        if tail.len() >= 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()) && dash > 0 {
            stem = &stem[..dash];
            star = true;
        }
    }
    let stem: String = stem
        .chars()
        .map(|c| if c == '*' { '?' } else { c })
        .collect();
    let star = if star { "*" } else { "" };
    match so {
        Some(_) => format!("obj:*/{stem}{star}.so*"),
        None => format!("obj:*/{stem}{star}"),
    }
}

/// The location lines Valgrind would see for each frame (mangled names).
pub(super) fn frame_infos(rec: &Record) -> Vec<FInfo> {
    let stack = &rec.stack;
    let has_sframes = stack.iter().any(|f| f.sfun.is_some() || f.sobj.is_some());
    let gen_frames = rec
        .suppression
        .as_ref()
        .map(|g| &g.frames)
        .filter(|g| !has_sframes && g.len() == stack.len());
    let mut out = Vec::with_capacity(stack.len());
    for (i, f) in stack.iter().enumerate() {
        let inlined = f.ip.is_some() && stack.get(i + 1).is_some_and(|n| n.ip == f.ip);
        let name: Option<String> = if has_sframes {
            f.sfun.as_deref().map(str::to_string)
        } else if let Some(g) = gen_frames {
            g.get(i)
                .filter(|(is_fun, _)| *is_fun)
                .map(|(_, n)| n.to_string())
        } else {
            // No <sframe>: only plain C names are the names Valgrind matches.
            f.func
                .as_deref()
                .filter(|n| !(n.contains('(') || n.contains("::") || n.contains('<')))
                .filter(|n| !n.starts_with("operator"))
                .map(str::to_string)
        };
        if name.as_deref().is_some_and(is_below_main)
            || f.func.as_deref().is_some_and(is_below_main)
        {
            break;
        }
        let class = classify_object(f.obj.as_deref());
        let alloc = class == ObjClass::Valgrind
            || (name.as_deref().is_some_and(is_alloc_name)
                && matches!(class, ObjClass::System | ObjClass::Unknown));
        let loc = match name.as_deref() {
            Some(n) if !n.is_empty() && n != "???" && !n.contains(['\n', '\r']) => fun_pattern(n),
            _ => obj_pattern(f.sobj.as_deref().or(f.obj.as_deref()).unwrap_or_default()),
        };
        out.push(FInfo {
            loc,
            class,
            inlined,
            alloc,
        });
    }
    out
}

/// The generalised rule lines for a record at `level` (0 most general;
/// 1 without `...`; each further level pins one more frame). `None` when the
/// record gives nothing to pin or the rule would exceed [`MAX_LINES`].
pub(super) fn rule_lines(rec: &Record, owner: Option<usize>, level: u32) -> Option<Vec<String>> {
    let infos = frame_infos(rec);
    let np = infos.iter().take_while(|f| f.alloc).count();
    let (prefix, body) = infos.split_at(np);
    let mut lines: Vec<String> = prefix.iter().map(|f| f.loc.clone()).collect();
    if body.is_empty() {
        return (!lines.is_empty() && lines.len() <= MAX_LINES).then_some(lines);
    }
    // The innermost frames: at least two (one more per level above 1), and
    // at least one of them a real (not inlined) frame.
    let need = 2 + level.saturating_sub(1) as usize;
    let mut real = 0;
    let mut anchor_end = body.len() - 1;
    for (i, f) in body.iter().enumerate() {
        if !f.inlined {
            real += 1;
        }
        if i + 1 >= need && real >= 1 {
            anchor_end = i;
            break;
        }
    }
    // The owning library frame, when it lies deeper and is not the interpreter.
    let owner_b = owner
        .filter(|&o| o >= np && o - np < body.len())
        .map(|o| o - np)
        .filter(|&o| !matches!(body[o].class, ObjClass::Interpreter | ObjClass::Valgrind))
        .filter(|&o| o > anchor_end);
    match owner_b {
        Some(o) => {
            let end = (o + 1).min(body.len() - 1);
            lines.extend(body[..=anchor_end].iter().map(|f| f.loc.clone()));
            if level == 0 && o > anchor_end + 1 {
                lines.push("...".into());
            } else {
                lines.extend(body[anchor_end + 1..o].iter().map(|f| f.loc.clone()));
            }
            lines.extend(body[o..=end].iter().map(|f| f.loc.clone()));
        }
        None => lines.extend(body[..=anchor_end].iter().map(|f| f.loc.clone())),
    }
    // A trailing `...` or `obj:*` adds nothing but width.
    while lines.last().is_some_and(|l| l == "..." || l == "obj:*") && lines.len() > 1 {
        lines.pop();
    }
    if lines
        .iter()
        .all(|l| l == "..." || l == "obj:*" || l == "fun:*")
    {
        return None;
    }
    (lines.len() <= MAX_LINES).then_some(lines)
}

/// A readable, name-safe version of a function name.
pub(super) fn readable(f: &Frame) -> String {
    let raw = match (&f.func, &f.obj) {
        (Some(n), _) => n.to_string(),
        (None, Some(o)) => o.rsplit('/').next().unwrap_or(o).to_string(),
        _ => "unknown".into(),
    };
    let mut s = raw.as_str();
    if let Some(i) = s.find('(')
        && i > 0
    {
        s = &s[..i];
    }
    // Drop a leading return type (`long pybind11::...`).
    if let Some(i) = s.rfind(' ')
        && !s[..i].contains('<')
    {
        s = &s[i + 1..];
    }
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '~') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_string();
    let out: String = out.chars().take(60).collect();
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// One line describing an example stack.
pub(super) fn example_line(rec: &Record) -> String {
    let mut parts = Vec::new();
    for f in rec.stack.iter().take(8) {
        let mut p = match (&f.func, &f.obj) {
            (Some(n), _) => n.to_string(),
            (None, Some(o)) => format!("[{}]", o.rsplit('/').next().unwrap_or(o)),
            _ => "???".into(),
        };
        if p.chars().count() > 60 {
            p = p.chars().take(57).collect::<String>() + "...";
        }
        if let (Some(file), Some(line)) = (&f.file, f.line) {
            let _ = write!(p, " ({file}:{line})");
        }
        parts.push(p);
    }
    let mut s = parts.join(" < ");
    if rec.stack.len() > 8 {
        let _ = write!(s, " < ... {} more", rec.stack.len() - 8);
    }
    s.replace(['\n', '\r'], " ")
}
