//! Fuzz target: random suppression rules against random stacks (drawn from
//! the fuzzer's bytes), leakgate's matcher against the slow reference model
//! of Valgrind's matching in `tests/reference/mod.rs`. Any difference panics.
#![no_main]

#[path = "../../tests/reference/mod.rs"]
mod reference;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut src = reference::Bytes { data, pos: 0 };
    if let Err(e) = reference::check_one(&mut src) {
        panic!("matcher differs from the reference: {e}");
    }
});
