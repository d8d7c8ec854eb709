//! Fuzz target: the XML reader through the entry points `analyze` uses
//! (`parse_slice` for mapped files, with its element cache; `parse_stream`
//! for compressed input and pipes; `parse_chunk` for pieces of a large
//! file), then attribution, the bundled suppressions and aggregation.
//! Must never panic; the cached and the streamed paths must read the same
//! records; the records must be conserved.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use leakgate::analyze::{Aggregator, check_conservation};
use leakgate::analyze::attribute::{Attributor, UserSpec};
use leakgate::parse::{Interner, parse_chunk, parse_slice, parse_stream};
use leakgate::suppress::Suppressor;
use libfuzzer_sys::fuzz_target;

fn suppressor() -> Arc<Suppressor> {
    static S: OnceLock<Arc<Suppressor>> = OnceLock::new();
    S.get_or_init(|| {
        Arc::new(Suppressor::new(
            leakgate::suppress::load::load(&[], true).expect("bundled suppressions"),
        ))
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.xml");
    let mut sliced = Vec::new();
    let mut agg = Aggregator::new(Attributor::new(UserSpec::default()), suppressor());
    agg.add_process();
    let a = parse_slice(data, path, 0, &mut Interner::default(), &mut |r, p| {
        sliced.push(format!("{r:?}"));
        agg.add(r, p);
    });
    let mut streamed = Vec::new();
    let b = parse_stream(data, path, 0, &mut Interner::default(), &mut |r, _| {
        streamed.push(format!("{r:?}"))
    });
    assert_eq!(
        a.is_ok(),
        b.is_ok(),
        "{:?} vs {:?}",
        a.as_ref().err(),
        b.as_ref().err()
    );
    assert_eq!(sliced, streamed, "cached and streamed reads differ");
    if let Ok(sum) = a {
        let analysis = agg.finish(vec![sum.process.clone()]);
        assert_eq!(check_conservation(&analysis), None);
        // A later piece of the same file, resumed with this header.
        let mid = data.len() / 2;
        let _ = parse_chunk(
            &data[mid..],
            mid as u64,
            Some(&sum.process),
            path,
            0,
            &mut Interner::default(),
            &mut |_, _| {},
        );
    }
});
