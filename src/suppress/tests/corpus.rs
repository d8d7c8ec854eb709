//! Unit tests of `suppress` on records taken from the raw Valgrind 3.19
//! corpus: generated suppressions match their own records, the
//! below-main rename.

use super::*;

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn tag<'a>(s: &'a str, t: &str) -> Option<&'a str> {
    let open = format!("<{t}>");
    let close = format!("</{t}>");
    let a = s.find(&open)? + open.len();
    let b = a + s[a..].find(&close)?;
    Some(&s[a..b])
}

/// Minimal extraction of `<error>`s (kind, what, first stack, sframes,
/// rawtext) by string search: enough for tests.
fn corpus_errors(path: &str) -> Vec<(Record, String)> {
    let Ok(xml) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for chunk in xml.split("<error>").skip(1) {
        let Some(end) = chunk.find("</error>") else {
            continue;
        };
        let e = &chunk[..end];
        let kind = tag(e, "kind").unwrap_or_default();
        let what = tag(e, "what")
            .or_else(|| tag(e, "text"))
            .unwrap_or_default();
        let stack_xml = tag(e, "stack").unwrap_or_default();
        let mut stack: Vec<Frame> = stack_xml
            .split("<frame>")
            .skip(1)
            .map(|f| Frame {
                ip: tag(f, "ip").map(Into::into),
                obj: tag(f, "obj").map(|x| unescape(x).into()),
                func: tag(f, "fn").map(|x| unescape(x).into()),
                file: tag(f, "file").map(Into::into),
                line: tag(f, "line").and_then(|l| l.parse().ok()),
                ..Default::default()
            })
            .collect();
        let Some(supp) = tag(e, "suppression") else {
            continue;
        };
        let sframes: Vec<&str> = supp.split("<sframe>").skip(1).collect();
        if sframes.len() == stack.len() {
            for (f, s) in stack.iter_mut().zip(&sframes) {
                if let Some(n) = tag(s, "fun") {
                    f.sfun = Some(unescape(n).into());
                } else if let Some(n) = tag(s, "obj") {
                    f.sobj = Some(unescape(n).into());
                }
            }
        }
        let raw = tag(supp, "rawtext")
            .and_then(|r| {
                let a = r.find("<![CDATA[")? + 9;
                let b = r.find("]]>")?;
                Some(r[a..b].to_string())
            })
            .unwrap_or_default();
        let rec = Record {
            kind: kind.into(),
            what: unescape(what.trim()),
            stack,
            suppression: Some(GenSuppression {
                kind: tag(supp, "skind").unwrap_or_default().to_string(),
                aux: tag(supp, "skaux").map(unescape),
                frames: vec![],
            }),
            ..Default::default()
        };
        out.push((rec, raw));
    }
    out
}

#[test]
fn corpus_generated_suppressions_match_their_records() {
    let dir = "/work/shared/corpus/raw-3.19";
    for name in ["many.xml", "inl.xml", "stripped.xml", "inl_nodemangle.xml"] {
        let path = format!("{dir}/{name}");
        let errs = corpus_errors(&path);
        if std::path::Path::new(&path).exists() {
            assert!(!errs.is_empty(), "{name}");
        }
        for (i, (rec, raw)) in errs.iter().enumerate() {
            let (s, e) = parse(name, raw, "Memcheck", 500);
            assert!(e.is_empty(), "{name}#{i}: {e:?}");
            assert_eq!(s.len(), 1, "{name}#{i}");
            let set = SuppressionSet::new(s, MatchOptions::default());
            assert_eq!(set.first_match(rec), Yes(0), "{name}#{i} {raw}");
            // The derived kind agrees with <skind>/<skaux>.
            let mut bare = rec.clone();
            bare.suppression = None;
            assert_eq!(record_kind(&bare), record_kind(rec), "{name}#{i}");
        }
    }
}

#[test]
fn corpus_below_main_rename() {
    let errs = corpus_errors("/work/shared/corpus/raw-3.19/inl_belowmain.xml");
    let Some((rec, raw)) = errs.first() else {
        return;
    };
    let bm = MatchOptions {
        show_below_main: true,
        ..Default::default()
    };
    // The generated rule names __libc_start_call_main, which a default run
    // renames: it matches up to main only.
    let (s, _) = parse("x", raw, "Memcheck", 500);
    assert_eq!(SuppressionSet::new(s, bm).first_match(rec), No);
    let (s, _) = parse("x", raw, "Memcheck", 4);
    assert_eq!(SuppressionSet::new(s, bm).first_match(rec), Yes(0));
    let t = "{\n r\n Memcheck:Cond\n ...\n fun:main\n fun:(below main)\n fun:__libc_start_main@@GLIBC_2.34\n fun:(below main)\n obj:*\n}\n";
    assert_eq!(set_with(t, bm).first_match(rec), Yes(0));
}
