//! Instructions Valgrind cannot run. Valgrind translates every instruction
//! itself; one its decoder does not know (AVX-512 from `-march=native` on
//! an AVX-512 machine: Valgrind 3.19 to 3.27 decode none of it) makes it
//! print `vex amd64->IR: unhandled instruction bytes: 0x62 …` on standard
//! error and raise SIGILL, which kills the process. The XML then holds a
//! `FatalSignal` SIGILL at that instruction and the leak check Valgrind ran
//! after the abort — exactly what `ud2` (`__builtin_trap()`) leaves too, so
//! only `run`, which reads Valgrind's standard error, can tell them apart.
//!
//! With that line seen, the process is marked incomplete (naming the
//! object, the bytes and how to rebuild), its crash is noise with source
//! `valgrind`, and so are the leaks of your code that only its leak check
//! saw: the process did not finish, so what it still held is not a leak.
//! Memory errors found before the abort stay the user's. Without it
//! (`analyze`), a SIGILL crash stays a crash and its advice says what to
//! check.

use crate::kind::Kind;
use crate::model::{ProcessInfo, UnhandledInstruction};
use crate::report::{Category, Finding, FrameOut};

/// The noise label of what an unhandled instruction leaves behind.
pub const SOURCE: &str = "valgrind";

/// The advice on a SIGILL crash read from XML alone (`analyze`).
pub const SIGILL_ADVICE: &str = "SIGILL is an instruction that could not run: either the code executed an invalid one (ud2, __builtin_trap()) or one Valgrind cannot decode (AVX-512 from -march=native: Valgrind's standard error then says `vex amd64->IR: unhandled instruction bytes: 0x62 …`). The XML alone does not tell them apart; `leakgate run` reads Valgrind's standard error and tells";

/// Whether a finding is a crash by SIGILL.
fn is_sigill_crash(f: &Finding) -> bool {
    f.kind == Kind::FatalSignal && f.message.contains("SIGILL")
}

/// Gives every SIGILL crash [`SIGILL_ADVICE`] (`analyze`: no standard error
/// to tell an unhandled instruction from an invalid one).
pub fn advise_sigill(findings: &mut [Finding]) {
    for f in findings
        .iter_mut()
        .filter(|f| is_sigill_crash(f) && f.advice.is_none())
    {
        f.advice = Some(SIGILL_ADVICE.into());
    }
}

/// `0x109159` or `0x109159` in any case, as a number.
fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u64::from_str_radix(digits, 16).ok()
}

/// Whether the bytes start with an EVEX prefix (0x62: AVX-512) on x86.
fn is_evex(u: &UnhandledInstruction) -> bool {
    matches!(u.arch.as_str(), "amd64" | "x86")
        && u.bytes
            .split_whitespace()
            .next()
            .and_then(hex)
            .is_some_and(|b| b == 0x62)
}

/// How to rebuild `object` so that Valgrind can run it.
pub fn rebuild_advice(u: &UnhandledInstruction, object: &str) -> String {
    let what = if is_evex(u) {
        "without AVX-512"
    } else {
        "for an older CPU"
    };
    let flags = match u.arch.as_str() {
        "amd64" | "x86" => "-march=x86-64-v3 (AVX2, which Valgrind runs) instead of -march=native",
        _ => "a generic -march/-mcpu instead of -march=native or -mcpu=native",
    };
    format!(
        "rebuild {object} {what} for the run under Valgrind: {flags}, or the package's own switch that turns native optimisation off"
    )
}

/// `at 0x109159 in add16 (avx.c:5)` for the frame.
fn place(frame: Option<&FrameOut>, address: Option<u64>) -> String {
    let mut s = String::new();
    if let Some(a) = address.or_else(|| frame.and_then(|f| f.ip.as_deref()).and_then(hex)) {
        s.push_str(&format!("at {a:#x}"));
    }
    if let Some(func) = frame.and_then(|f| f.function.as_deref()) {
        s.push_str(&format!(" in {func}"));
    }
    if let Some((file, line)) = frame.and_then(|f| Some((f.file.as_deref()?, f.line))) {
        match line {
            Some(l) => s.push_str(&format!(" ({file}:{l})")),
            None => s.push_str(&format!(" ({file})")),
        }
    }
    s.trim().to_string()
}

/// Applies what `run` saw on Valgrind's standard error: every process that
/// died of SIGILL at an instruction Valgrind could not decode is marked
/// incomplete, its crash and the leaks of your code its leak check found
/// become noise with source [`SOURCE`]. Returns the pids marked; `notes`
/// gets what was relabelled and the unhandled instructions of processes
/// that went on (they handled the SIGILL themselves).
pub fn apply(
    findings: &mut [Finding],
    processes: &mut [ProcessInfo],
    seen: &[UnhandledInstruction],
    notes: &mut Vec<String>,
) -> Vec<u64> {
    let mut marked = Vec::new();
    // A process dies at most once: its last unhandled instruction is the one.
    for (i, u) in seen.iter().enumerate() {
        if marked.contains(&u.pid) || seen[i + 1..].iter().any(|v| v.pid == u.pid) {
            continue;
        }
        let Some(p) = processes
            .iter_mut()
            .find(|p| p.pid == Some(u.pid) && p.fatal_signal.as_deref() == Some("SIGILL"))
        else {
            notes.push(format!(
                "Valgrind could not decode an instruction of pid {} ({} bytes {}) and raised SIGILL; the process went on (it handled the signal itself, as CPU-feature probes do)",
                u.pid, u.arch, u.bytes
            ));
            continue;
        };
        let crash = findings
            .iter_mut()
            .find(|f| is_sigill_crash(f) && f.pids.contains(&u.pid));
        // Inlined frames share the address: the last of them is the
        // function the instruction was compiled into.
        let frame = crash.as_ref().and_then(|f| {
            f.stack
                .iter()
                .rfind(|fr| u.address.is_some() && fr.ip.as_deref().and_then(hex) == u.address)
                .or(f.stack.first())
                .cloned()
        });
        let object = frame
            .as_ref()
            .and_then(|f| f.object.clone())
            .unwrap_or_else(|| "the object that holds it".into());
        let evex = if is_evex(u) {
            "; 0x62 is the EVEX prefix of AVX-512, which Valgrind 3.19 to 3.27 do not decode"
        } else {
            ""
        };
        let advice = rebuild_advice(u, &object);
        p.complete = false;
        p.incomplete_reason = Some(format!(
            "Valgrind cannot run an instruction of {object} {}: {} bytes {} (the instruction and what follows it{evex}). Valgrind stopped the process with SIGILL: a limitation of Valgrind, not a finding in your code; the process did not finish, so its leak check means nothing. To check this code, {advice}",
            place(frame.as_ref(), u.address),
            u.arch,
            u.bytes
        ));
        if let Some(f) = crash {
            f.category = Category::Noise;
            f.source = Some(SOURCE.into());
            f.gated = None;
            f.reason = Some(format!(
                "Valgrind cannot decode this instruction ({} bytes {}) and raised SIGILL itself",
                u.arch, u.bytes
            ));
            f.advice = Some(advice);
        }
        marked.push(u.pid);
    }
    if marked.is_empty() {
        return marked;
    }
    // The leak check of a process that did not finish: what it still held
    // is not lost. Only findings seen in no other process.
    let (mut n, mut bytes) = (0u64, 0u64);
    for f in findings
        .iter_mut()
        .filter(|f| f.is_user() && f.is_leak() && f.pids.iter().all(|p| marked.contains(p)))
    {
        f.category = Category::Noise;
        f.source = Some(SOURCE.into());
        f.gated = None;
        f.reason = Some(
            "found by the leak check of a process Valgrind stopped with SIGILL (an instruction it cannot decode): the process did not finish, so what it still held is not a leak".into(),
        );
        n += 1;
        bytes += f.bytes.unwrap_or(0);
    }
    if n > 0 {
        let pids: Vec<String> = marked.iter().map(u64::to_string).collect();
        notes.push(format!(
            "pid {}: Valgrind stopped it at an instruction it cannot decode, so its leak check ran on a process that did not finish: {} of your code ({}) that only this leak check found {} listed as noise (source `{SOURCE}`), not gated",
            pids.join(", "),
            crate::util::plural(n, "leak finding", "leak findings"),
            crate::util::plural(bytes, "byte", "bytes"),
            if n == 1 { "is" } else { "are" },
        ));
    }
    // User findings first.
    findings.sort_by_key(|f| !f.is_user());
    marked
}

#[cfg(test)]
mod tests;
