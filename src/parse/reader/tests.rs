//! Unit tests of `parse::reader`.

use super::*;

/// Records (as Debug text) from the cached in-memory path and the
/// uncached stream path.
fn both(xml: &[u8]) -> (Vec<String>, Vec<String>) {
    let path = Path::new("t.xml");
    let mut a = Vec::new();
    let mut b = Vec::new();
    parse_slice(xml, path, 0, &mut Interner::default(), &mut |r, _| {
        a.push(format!("{r:?}"))
    })
    .unwrap();
    parse_stream(xml, path, 0, &mut Interner::default(), &mut |r, _| {
        b.push(format!("{r:?}"))
    })
    .unwrap();
    (a, b)
}

#[test]
fn element_cache_gives_what_parsing_gives() {
    for f in ["leak_kinds.xml", "mem_errors.xml"] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/recorded")
            .join(f);
        let xml = std::fs::read(&p).unwrap();
        let (a, b) = both(&xml);
        assert!(!a.is_empty());
        assert_eq!(a, b, "{f}");
    }
}

#[test]
fn element_cache_is_not_fooled_by_odd_frames() {
    // The same odd frames twice: a comment hiding `</frame>`, CDATA, an
    // entity, an unknown child, a frame with a thread name inside.
    let frames = "<frame><!-- </frame> --><ip>0x1</ip><fn>a</fn></frame>\n\
             <frame><ip>0x2</ip><fn><![CDATA[b</frame>]]></fn></frame>\n\
             <frame><ip>0x3</ip><fn>c&amp;d</fn></frame>\n\
             <frame><ip>0x4</ip><zz>x</zz><fn>e</fn></frame>\n\
             <frame><ip>0x5</ip><threadname>t</frame></threadname><fn>f</fn></frame>\n\
             <frame><ip>0x6</ip><fn>g</fn></frame>\n";
    let rec = |n: u32| {
        format!(
            "<error>\n<unique>0x{n}</unique><tid>1</tid><kind>Leak_DefinitelyLost</kind>\
                 <xwhat><text>x</text><leakedbytes>8</leakedbytes><leakedblocks>1</leakedblocks></xwhat>\
                 <stack>{frames}{frames}</stack>\
                 <suppression><sname>s</sname><skind>Memcheck:Leak</skind>\
                 <sframe> <fun>a</fun> </sframe><sframe><!-- </sframe> --><fun>b</fun></sframe>\
                 <sframe> <fun>a</fun> </sframe></suppression>\n</error>\n"
        )
    };
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<valgrindoutput>\n<protocolversion>4</protocolversion>\
             <pid>1</pid>\n{}{}{}</valgrindoutput>\n",
        rec(1),
        rec(2),
        rec(3)
    );
    let (a, b) = both(xml.as_bytes());
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
}

#[test]
fn element_cache_agrees_on_a_frame_left_open() {
    // Found by the xml_reader fuzz target: a frame whose end tag is
    // missing, then a nested stack whose frame is a cache hit, then the
    // open frame's late end tag.
    let xml = "<valgrindoutput><protocolversion>4</protocolversion><pid>1</pid>\n\
             <error><unique>0x1</unique><kind>Leak_DefinitelyLost</kind><stack>\n\
             <frame><ip>0x1</ip><fn>a</fn></frame>\n\
             <frame><ip>0x2</ip><fn>partial</fn><dir>d</dir><x y\n\n<error>\n\
             <stack><frame><ip>0x1</ip><fn>a</fn></frame></stack>\n\
             </x></frame></stack></error></valgrindoutput>\n";
    let (a, b) = both(xml.as_bytes());
    assert_eq!(a.len(), 1);
    assert_eq!(a, b);
}

#[test]
fn element_cache_agrees_on_an_sframe_with_two_names() {
    // Found by the xml_reader fuzz target: an `<sframe>` holding two
    // `<fun>`s (a corrupted end tag in between) adds two names; a cache
    // entry would give back only the last one.
    let supp = "<suppression><sname>s</sname><skind>Memcheck:Leak</skind>\
             <sframe> <fun>a</fun   x>\n rame> <fun>b</fun> </sframe>\
             <sframe> <fun>c</fun> </sframe></suppression>";
    let rec = |n: u32| {
        format!(
            "<error><unique>0x{n}</unique><kind>Leak_DefinitelyLost</kind>\
                 <stack><frame><ip>0x1</ip><fn>f</fn></frame></stack>{supp}</error>\n"
        )
    };
    let xml = format!(
        "<valgrindoutput><protocolversion>4</protocolversion><pid>1</pid>\n{}{}</valgrindoutput>\n",
        rec(1),
        rec(2)
    );
    let (a, b) = both(xml.as_bytes());
    assert_eq!(a.len(), 2);
    assert_eq!(a, b);
}

#[test]
fn element_cache_skips_empty_elements() {
    // Found by the xml_reader fuzz target: `<frame/>` followed by the
    // children of a frame seen before: the empty frame has no body, the
    // cache must not take the following bytes as one.
    let frame = "<frame><ip>0x1</ip><fn>malloc</fn></frame>";
    let rec = |n: u32, first: &str| {
        format!(
            "<error><unique>0x{n}</unique><kind>Leak_DefinitelyLost</kind>\
                 <stack>{first}<frame><ip>0x1</ip><fn>malloc</fn></frame></stack>\
                 <suppression><skind>Memcheck:Leak</skind><sframe> <fun>a</fun></sframe>\
                 <sframe/><sframe> <fun>a</fun></sframe></suppression></error>\n"
        )
    };
    let xml = format!(
        "<valgrindoutput><protocolversion>4</protocolversion><pid>1</pid>\n{}{}</valgrindoutput>\n",
        rec(1, frame),
        rec(2, "<frame/><ip>0x1</ip><fn>malloc</fn></frame>")
    );
    let (a, b) = both(xml.as_bytes());
    assert_eq!(a.len(), 2);
    assert_eq!(a, b);
}
