//! Property test: leakgate's suppression matcher (indexed, cached, a dynamic
//! programme for `...`) against the slow reference model of Valgrind's
//! matching in `tests/reference/mod.rs`, on thousands of random rule sets and
//! stacks from a fixed seed (the `matcher` fuzz target explores further).

use crate::reference;

#[test]
fn matcher_agrees_with_the_reference_model() {
    let mut rng = reference::Rng(0x9e37_79b9_7f4a_7c15);
    let cases = 20_000;
    let mut failures = Vec::new();
    let (mut matched, mut by_later) = (0, 0);
    for i in 0..cases {
        match reference::check_one(&mut rng) {
            Ok(leakgate::suppress::MatchOutcome::Suppressed(k)) => {
                matched += 1;
                by_later += usize::from(k > 0);
            }
            Ok(_) => {}
            Err(e) => {
                failures.push(format!("case {i}: {e}"));
                if failures.len() >= 3 {
                    break;
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The generator makes both answers common (it is not testing only "no").
    eprintln!("{matched} of {cases} cases suppressed ({by_later} by a later rule)");
    assert!(matched > cases / 5 && matched < cases * 4 / 5, "{matched}");
    assert!(by_later > cases / 20, "{by_later}");
}

#[test]
fn reference_globs_follow_the_spec_examples() {
    // §3.3: the whole name, `*` any bytes (also `/`), `?` one byte, no escapes.
    use reference::glob;
    assert!(glob(b"*8", b"value8"));
    assert!(glob(b"m*n", b"main"));
    assert!(glob(b"alph?_co*", b"alpha_cond"));
    assert!(glob(b"*/st", b"/some/dir/st"));
    assert!(!glob(b"st", b"/some/dir/st"));
    assert!(!glob(b"\\?\\?\\?", b"???"));
    assert!(glob(b"*", b""));
    assert!(!glob(b"?", b""));
    assert!(!glob(b"clock_nanosleep", b"clock_nanosleep@@GLIBC_2.17"));
}

#[test]
fn undecidable_answers_never_lie_about_hidden_frames() {
    let mut rng = reference::Rng(0x2545_f491_4f6c_dd1d);
    let cases = 10_000;
    let mut unknown = 0;
    for i in 0..cases {
        match reference::check_hidden(&mut rng) {
            Ok(u) => unknown += u,
            Err(e) => panic!("case {i}: {e}"),
        }
    }
    eprintln!("{unknown} undecidable rule answers in {cases} cases");
    assert!(unknown > cases / 20, "{unknown}");
}
