//! Symbolising the frames a sanitizer printed without symbols
//! (`symbolize=0`, or no symboliser at run time): `(module+0xoffset)` frames
//! are given to `addr2line -a -f -i -C -e module 0xoffset...`, one process
//! per module with all its offsets, all started at once, when `addr2line` is
//! installed and the module exists on this machine; their answers are kept
//! for the rest of the process. Anything that fails leaves the frames as
//! they were (object and address kept); inlined calls become frames of
//! their own, innermost first, as Valgrind shows them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::frames::RawFrame;

/// One address's answer: (function, source path, line), innermost first.
type Resolved = Vec<(Option<String>, Option<String>, Option<u32>)>;

/// Symbolises, in place, every frame of `stacks` that has an object and
/// an offset but no function or no source line.
pub(super) fn symbolize(stacks: &mut [&mut Vec<RawFrame>]) {
    let mut wanted: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in stacks.iter() {
        for f in s.iter().filter(|f| needs(f)) {
            if let (Some(m), Some(o)) = (&f.module, f.offset) {
                wanted.entry(m.clone()).or_default().push(o);
            }
        }
    }
    if wanted.is_empty() {
        return;
    }
    let Ok(tool) = which::which("addr2line") else {
        return;
    };
    let mut answers = ANSWERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // One addr2line per module, all at once (libpython's alone reads its
    // debug information for about 25 ms); what an earlier call of this
    // process resolved is not asked again (`leakgate run` reads a
    // sanitizer run's logs twice: for cut stacks, then the analysis).
    let mut running = Vec::new();
    for (module, mut offsets) in wanted {
        offsets.sort_unstable();
        offsets.dedup();
        if let Some(known) = answers.get(&module) {
            offsets.retain(|o| !known.contains_key(o));
        }
        if offsets.is_empty() || !Path::new(&module).is_file() {
            continue;
        }
        if let Some(child) = spawn_addr2line(&tool, &module, &offsets) {
            running.push((module, offsets, child));
        }
    }
    for (module, offsets, child) in running {
        let mut got = match child.wait_with_output() {
            Ok(o) if o.status.success() => parse_output(&String::from_utf8_lossy(&o.stdout)),
            _ => BTreeMap::new(),
        };
        // An offset addr2line did not answer stays unresolved (not asked again).
        let known = answers.entry(module).or_default();
        for off in offsets {
            known.insert(off, got.remove(&off).unwrap_or_default());
        }
    }
    for s in stacks.iter_mut() {
        let mut out = Vec::with_capacity(s.len());
        for f in s.drain(..) {
            let hit = match (&f.module, f.offset) {
                (Some(m), Some(o)) if needs(&f) => answers.get(m).and_then(|k| k.get(&o)),
                _ => None,
            };
            match hit {
                Some(r) if !r.is_empty() => {
                    for (func, path, line) in r {
                        let mut g = f.clone();
                        g.func = func.clone().or_else(|| f.func.clone());
                        if path.is_some() {
                            g.path = path.clone();
                            g.line = *line;
                        }
                        out.push(g);
                    }
                }
                _ => out.push(f),
            }
        }
        **s = out;
    }
}

fn needs(f: &RawFrame) -> bool {
    f.module.is_some() && f.offset.is_some() && (f.func.is_none() || f.path.is_none())
}

/// What addr2line said, by module and offset, for the whole process.
static ANSWERS: std::sync::OnceLock<std::sync::Mutex<BTreeMap<String, BTreeMap<u64, Resolved>>>> =
    std::sync::OnceLock::new();

/// Starts addr2line for a module's offsets; None when it cannot start.
fn spawn_addr2line(tool: &Path, module: &str, offsets: &[u64]) -> Option<Child> {
    Command::new(tool)
        .args(["-a", "-f", "-i", "-C", "-e", module])
        .args(offsets.iter().map(|o| format!("{o:#x}")))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// Reads `addr2line -a -f -i` output: an address line, then pairs of
/// function and `file:line` lines (several when calls were inlined).
pub(super) fn parse_output(text: &str) -> BTreeMap<u64, Resolved> {
    let mut out: BTreeMap<u64, Resolved> = BTreeMap::new();
    let mut cur: Option<u64> = None;
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(h) = l.strip_prefix("0x")
            && let Ok(a) = u64::from_str_radix(h, 16)
        {
            cur = Some(a);
            out.entry(a).or_default();
            continue;
        }
        let Some(a) = cur else { continue };
        let func = (l != "??").then(|| l.to_string());
        let loc = lines.next().unwrap_or("??:0");
        let loc = loc.split(" (discriminator").next().unwrap_or(loc);
        let (path, line) = match loc.rsplit_once(':') {
            Some((p, n)) if p != "??" => (Some(p.to_string()), n.parse().ok().filter(|&n| n > 0)),
            _ => (None, None),
        };
        if func.is_none() && path.is_none() {
            continue;
        }
        out.entry(a).or_default().push((func, path, line));
    }
    out
}
