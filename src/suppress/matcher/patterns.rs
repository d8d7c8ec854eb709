//! Compiled patterns and per-name bit sets: every distinct `fun:`/`obj:`
//! pattern of the loaded suppressions gets an id ([`PatTable`]); every
//! distinct name met in a stack is compared once with all of them and the
//! answers kept as bit sets ([`Bits`]) in a [`Cache`] shared across records.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use super::glob::{Verdict, can_match_prefix, is_simple, string_match};
use super::view::{BELOW_MAIN, FunCertainty, HiddenFrames, UNKNOWN, ViewFrame};
use crate::model::Sym;

#[derive(Default, Clone, Copy)]
pub(super) struct FxHasher(u64);

impl FxHasher {
    pub(super) fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(w) ^ rest.len() as u64);
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Debug)]
pub(super) struct Pat {
    pub(super) text: Box<str>,
    /// Matches every name (only `*`s).
    pub(super) everything: bool,
    /// May match some `_Z…`/`_R…` (mangled) name.
    pub(super) maybe_mangled: bool,
    /// May match a frame hidden below `main` (per [`HiddenFrames`]).
    pub(super) hidden_ok: bool,
}

#[derive(Debug, Default)]
pub(super) struct PatTable {
    pub(super) pats: Vec<Pat>,
    pub(super) literal: FxMap<Box<str>, u32>,
    pub(super) globs: Vec<u32>,
}

/// Typical libc paths, to judge whether an `obj:` pattern can match a hidden
/// below-main frame.
const LIBC_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/x86_64-linux-gnu/libc-2.31.so",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib64/libc.so.6",
    "/lib64/libc-2.17.so",
    "/usr/lib/libc.so.6",
    "/lib/libc.so.6",
];

impl PatTable {
    pub(super) fn intern(&mut self, text: &str, is_fun: bool, hidden: HiddenFrames) -> u32 {
        if let Some(&id) = self.literal.get(text) {
            return id;
        }
        if let Some(&id) = self
            .globs
            .iter()
            .find(|&&g| &*self.pats[g as usize].text == text)
        {
            return id;
        }
        let id = self.pats.len() as u32;
        let hidden_ok = match hidden {
            HiddenFrames::Any => true,
            HiddenFrames::BelowMainLike if is_fun => {
                string_match(text, BELOW_MAIN)
                    || string_match(text, UNKNOWN)
                    || can_match_prefix(text, "__libc_start_main@")
            }
            HiddenFrames::BelowMainLike => {
                string_match(text, UNKNOWN) || LIBC_PATHS.iter().any(|p| string_match(text, p))
            }
        };
        self.pats.push(Pat {
            text: text.into(),
            everything: !text.is_empty() && text.bytes().all(|c| c == b'*'),
            maybe_mangled: can_match_prefix(text, "_Z") || can_match_prefix(text, "_R"),
            hidden_ok,
        });
        if is_simple(text) {
            self.literal.insert(text.into(), id);
        } else {
            self.globs.push(id);
        }
        id
    }

    pub(super) fn words(&self) -> usize {
        self.pats.len().div_ceil(64).max(1)
    }
}

/// Per-name match results against every pattern of one table.
#[derive(Debug, Clone)]
pub(super) struct Bits {
    pub(super) yes: Box<[u64]>,
    pub(super) maybe: Box<[u64]>,
}

pub(super) fn bit(set: &[u64], i: u32) -> bool {
    set.get((i / 64) as usize)
        .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
}

pub(super) fn set_bit(set: &mut [u64], i: u32) {
    if let Some(w) = set.get_mut((i / 64) as usize) {
        *w |= 1u64 << (i % 64);
    }
}

impl Bits {
    pub(super) fn empty(words: usize) -> Self {
        Bits {
            yes: vec![0; words].into(),
            maybe: vec![0; words].into(),
        }
    }

    pub(super) fn verdict(&self, pid: u32) -> Verdict {
        if bit(&self.yes, pid) {
            Verdict::Yes
        } else if bit(&self.maybe, pid) {
            Verdict::Unknown
        } else {
            Verdict::No
        }
    }
}

/// Bit sets per distinct name, shared across records.
#[derive(Debug, Default)]
pub(super) struct Cache {
    pub(super) fun_exact: FxMap<Box<str>, u32>,
    pub(super) fun_doubtful: FxMap<Box<str>, u32>,
    pub(super) obj: FxMap<Box<str>, u32>,
    /// Front caches keyed by the address of an interned string; each entry
    /// keeps its `Arc` alive, so the address cannot be reused meanwhile.
    pub(super) fun_ptr: FxMap<(usize, FunCertainty), (Sym, u32)>,
    pub(super) obj_ptr: FxMap<usize, (Sym, u32)>,
    /// Id of the shared bit set for demangled names.
    pub(super) demangled: Option<u32>,
    pub(super) bits: Vec<Bits>,
}

pub(super) const CACHE_LIMIT: usize = 1 << 20;

impl Cache {
    pub(super) fn push(&mut self, b: Bits) -> u32 {
        self.bits.push(b);
        (self.bits.len() - 1) as u32
    }

    pub(super) fn fun_id(&mut self, t: &PatTable, name: &str, c: FunCertainty) -> u32 {
        match c {
            FunCertainty::Exact => {
                if let Some(&id) = self.fun_exact.get(name) {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                if let Some(&id) = t.literal.get(name) {
                    set_bit(&mut b.yes, id);
                }
                for &g in &t.globs {
                    if string_match(&t.pats[g as usize].text, name) {
                        set_bit(&mut b.yes, g);
                    }
                }
                let id = self.push(b);
                self.fun_exact.insert(name.into(), id);
                id
            }
            FunCertainty::Demangled => {
                if let Some(id) = self.demangled {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                for (i, p) in t.pats.iter().enumerate() {
                    if p.everything {
                        set_bit(&mut b.yes, i as u32);
                    } else if p.maybe_mangled {
                        set_bit(&mut b.maybe, i as u32);
                    }
                }
                let id = self.push(b);
                self.demangled = Some(id);
                id
            }
            FunCertainty::Doubtful => {
                if let Some(&id) = self.fun_doubtful.get(name) {
                    return id;
                }
                let mut b = Bits::empty(t.words());
                for (i, p) in t.pats.iter().enumerate() {
                    if p.everything {
                        set_bit(&mut b.yes, i as u32);
                    } else if p.maybe_mangled || string_match(&p.text, name) {
                        set_bit(&mut b.maybe, i as u32);
                    }
                }
                let id = self.push(b);
                self.fun_doubtful.insert(name.into(), id);
                id
            }
        }
    }

    pub(super) fn fun_id_sym(&mut self, t: &PatTable, f: &ViewFrame<'_>) -> u32 {
        let Some(sym) = f.fun_sym else {
            return self.fun_id(t, f.fun, f.certainty);
        };
        let key = (Arc::as_ptr(sym) as *const u8 as usize, f.certainty);
        if let Some((_, id)) = self.fun_ptr.get(&key) {
            return *id;
        }
        let id = self.fun_id(t, sym, f.certainty);
        self.fun_ptr.insert(key, (sym.clone(), id));
        id
    }

    pub(super) fn obj_id_sym(&mut self, t: &PatTable, f: &ViewFrame<'_>) -> u32 {
        let Some(sym) = f.obj_sym else {
            return self.obj_id(t, f.obj);
        };
        let key = Arc::as_ptr(sym) as *const u8 as usize;
        if let Some((_, id)) = self.obj_ptr.get(&key) {
            return *id;
        }
        let id = self.obj_id(t, sym);
        self.obj_ptr.insert(key, (sym.clone(), id));
        id
    }

    pub(super) fn obj_id(&mut self, t: &PatTable, name: &str) -> u32 {
        if let Some(&id) = self.obj.get(name) {
            return id;
        }
        let mut b = Bits::empty(t.words());
        if let Some(&id) = t.literal.get(name) {
            set_bit(&mut b.yes, id);
        }
        for &g in &t.globs {
            if string_match(&t.pats[g as usize].text, name) {
                set_bit(&mut b.yes, g);
            }
        }
        let id = self.push(b);
        self.obj.insert(name.into(), id);
        id
    }
}
