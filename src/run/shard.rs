//! `--shard K/N`: one CI job's part of a pytest suite. The probe's plugin
//! collects the whole session and keeps the K-th of N contiguous parts
//! (`LEAKGATE_SHARD`), balanced by the per-test durations of an earlier
//! report when `--shard-durations` gives one (`LEAKGATE_SHARD_DURATIONS`,
//! a JSON file in the private directory); every test keeps its index in
//! the whole session, so `leakgate merge` of the N reports gives the
//! unsharded run's. The plugin also records each test's seconds
//! (`LEAKGATE_DURATIONS_DIR`), read back here for the report's
//! `per_test.durations`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `--shard K/N`: shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parses `K/N` with 1 <= K <= N (clap's value parser of `--shard`).
pub fn parse_shard(s: &str) -> Result<Shard, String> {
    let bad = || format!("{s:?}: expected K/N with 1 <= K <= N, e.g. 1/4");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = k.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if index == 0 || index > count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// The durations a shard is balanced by: node id → seconds, and where
/// they came from (the report's path, for the environment line).
#[derive(Debug, Clone, Default)]
pub struct ShardDurations {
    pub from: String,
    pub seconds: BTreeMap<String, f64>,
}

/// Where the plugin writes each test's seconds (`LEAKGATE_DURATIONS_DIR`,
/// one file per pid): `durations` in the private directory `dir`.
pub(super) fn durations_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("durations")
}

/// Each test's seconds, from the files of [`durations_dir`]: a test that
/// ran in several processes (pytest-xdist's workers each collect it, one
/// runs it) adds up.
pub(super) fn read_durations(dir: &Path) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(durations_dir(dir)) else {
        return out;
    };
    for e in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            if let Some((secs, test)) = line.split_once('\t')
                && let Ok(secs) = secs.parse::<f64>()
                && secs.is_finite()
            {
                *out.entry(test.to_string()).or_insert(0.0) += secs.max(0.0);
            }
        }
    }
    out
}

/// The plugin's environment for per-test durations and `--shard`: the
/// durations directory always, `LEAKGATE_SHARD` (and the durations file)
/// with a shard, each said in `environment`. `dir` is the private
/// directory.
pub(super) fn set_shard(
    cmd: &mut Command,
    environment: &mut Vec<String>,
    dir: &Path,
    cfg: &super::RunConfig,
) {
    if std::fs::create_dir_all(durations_dir(dir)).is_ok() {
        cmd.env("LEAKGATE_DURATIONS_DIR", durations_dir(dir));
    }
    let Some(shard) = cfg.shard else {
        return;
    };
    cmd.env("LEAKGATE_SHARD", shard.to_string());
    let by = match &cfg.shard_durations {
        Some(d) if !d.seconds.is_empty() => {
            let file = dir.join("shard-durations.json");
            let json = serde_json::to_string(&d.seconds).unwrap_or_else(|_| "{}".into());
            if std::fs::write(&file, json).is_ok() {
                cmd.env("LEAKGATE_SHARD_DURATIONS", &file);
            }
            format!(
                "balanced by the durations of {} tests in {}",
                d.seconds.len(),
                d.from
            )
        }
        Some(d) => format!(
            "{} has no per-test durations (per_test.durations): balanced by the number of tests",
            d.from
        ),
        None => "balanced by the number of tests".to_string(),
    };
    environment.push(format!(
        "LEAKGATE_SHARD={shard} (set by leakgate: --shard {shard}: pytest collects every test and runs part {} of {} contiguous parts, {by}; `leakgate merge` of the {} shards' JSON reports gives the whole suite's verdict)",
        shard.index, shard.count, shard.count
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_of_n_is_parsed_and_checked() {
        assert_eq!(parse_shard("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(parse_shard("1/1").map(|s| s.to_string()), Ok("1/1".into()));
        for bad in ["0/2", "3/2", "2", "a/b", "1/0", "-1/2", ""] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_add_up_by_test() {
        let tmp = tempfile::tempdir().unwrap();
        let d = durations_dir(tmp.path());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("10"), "1.5\tt.py::a\n0.25\tt.py::b\nbad line\n").unwrap();
        std::fs::write(d.join("11"), "0.5\tt.py::a\n").unwrap();
        let got = read_durations(tmp.path());
        assert_eq!(got.len(), 2);
        assert_eq!(got["t.py::a"], 2.0);
        assert_eq!(got["t.py::b"], 0.25);
    }
}
