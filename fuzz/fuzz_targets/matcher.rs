//! Fuzz target: random suppression rules against random stacks (drawn from
//! the fuzzer's bytes), leakgate's matcher against the slow reference model
//! of Valgrind's matching in `tests/reference/mod.rs`, on complete stacks
//! and on stacks cut below `main`. Any difference panics.
#![no_main]

#[path = "../../tests/reference/mod.rs"]
mod reference;

use libfuzzer_sys::fuzz_target;
use reference::Source;

fuzz_target!(|data: &[u8]| {
    let mut src = reference::Bytes { data, pos: 0 };
    // Half the inputs: a full report (everything decidable), compared
    // exactly; the other half: frames hidden below `main`, where every
    // certain answer must be right.
    let result = if src.below(2) == 0 {
        reference::check_one(&mut src).map(|_| ())
    } else {
        reference::check_hidden(&mut src).map(|_| ())
    };
    if let Err(e) = result {
        panic!("matcher differs from the reference: {e}");
    }
});
