//! Unit tests of `analyze::macros`.

use super::*;

#[test]
fn finds_macro_bodies_and_their_lines() {
    let text = r##"// macro_rules! not_me { }
use std::x;
macro_rules! scratch {
    ($n:expr) => {
        Box::into_raw(vec![0u8; $n].into_boxed_slice()) // } in a comment
    };
}
fn f() { let s = "macro_rules! fake { }"; let c = '{'; let l: &'static str = r#"}"#; }
#[cfg_attr(feature = "collapse", collapse_debuginfo(yes))]
macro_rules! two
(
    () => { '}' }
);
"##;
    let m = macro_bodies(text);
    assert_eq!(
        m,
        vec![
            MacroBody {
                name: "scratch".into(),
                first: 3,
                last: 7
            },
            MacroBody {
                name: "two".into(),
                first: 11,
                last: 13
            },
        ]
    );
}

#[test]
fn lifetimes_and_nested_comments_do_not_confuse_the_scan() {
    let text = "fn a<'a>(x: &'a str) {}\n/* /* { */ */\nmacro_rules! m { ($l:lifetime) => { &$l () } }\nfn b() {}\n";
    assert_eq!(
        macro_bodies(text),
        vec![MacroBody {
            name: "m".into(),
            first: 3,
            last: 3
        }]
    );
}

#[test]
fn the_note_names_the_macro_and_the_fix() {
    let m = MacroBody {
        name: "scratch".into(),
        first: 3,
        last: 7,
    };
    let n = note(&m, "lib.rs");
    assert!(n.contains("macro `scratch!` (lib.rs:3-7)"), "{n}");
    assert!(n.contains("#[collapse_debuginfo(yes)]"), "{n}");
}
