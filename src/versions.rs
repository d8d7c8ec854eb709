//! Valgrind versions: parsing `3.26.0`-style strings, comparing them, the
//! versions leakgate is tested with live, and the version-dependent facts
//! the other stages rely on (descriptor errors in the XML from 3.23,
//! `--num-callers` minimum from 3.26, the suppression kinds each version
//! reads: see `suppress::kind`).

use std::fmt;

/// A Valgrind release, `major.minor.patch` (patch 0 when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VgVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl VgVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> VgVersion {
        VgVersion {
            major,
            minor,
            patch,
        }
    }

    /// `3.26.0`, `3.27`, `valgrind-3.19.0`, `3.23.0.GIT`: the leading
    /// numbers; `None` when there is no `MAJOR.MINOR`.
    pub fn parse(s: &str) -> Option<VgVersion> {
        let s = s.trim();
        let s = s.strip_prefix("valgrind-").unwrap_or(s);
        let mut it = s.split('.');
        let num = |p: Option<&str>| -> Option<u32> {
            let p = p?;
            let end = p.bytes().take_while(u8::is_ascii_digit).count();
            p[..end].parse().ok()
        };
        let major = num(it.next())?;
        let minor = num(it.next())?;
        let patch = num(it.next()).unwrap_or(0);
        Some(VgVersion::new(major, minor, patch))
    }

    /// Whether this release is `major.minor` or later.
    pub fn at_least(self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }
}

impl fmt::Display for VgVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The releases whose live runs leakgate's CI checks (keep in step with
/// `.ci/run`, `tests/it/versions.rs` and the version table of
/// docs/valgrind-versions.md).
pub const TESTED: [VgVersion; 4] = [
    VgVersion::new(3, 19, 0),
    VgVersion::new(3, 22, 0),
    VgVersion::new(3, 26, 0),
    VgVersion::new(3, 27, 1),
];

/// `3.19.0, 3.22.0, 3.26.0, 3.27.1`.
pub fn tested_list() -> String {
    TESTED
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `v` is one of [`TESTED`].
pub fn is_tested(v: VgVersion) -> bool {
    TESTED.contains(&v)
}

/// The first release that writes descriptor errors (`FdNotClosed`,
/// `FdBadClose`) to the XML with `--track-fds=yes` (protocol 5).
pub const FD_ERRORS_IN_XML: (u32, u32) = (3, 23);

/// The smallest `--num-callers` a release accepts: 1 up to 3.25; 2 from
/// 3.26 (3.27 rejects 1 as a bad option; 3.26 accepts it and then fails on
/// its own default.supp, whose rules need two frames).
pub fn min_num_callers(v: VgVersion) -> u32 {
    if v.at_least(3, 26) { 2 } else { 1 }
}

/// The largest `--num-callers` every release accepts.
pub const MAX_NUM_CALLERS: u32 = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let v = VgVersion::parse("valgrind-3.19.0").unwrap();
        assert_eq!(v, VgVersion::new(3, 19, 0));
        assert_eq!(VgVersion::parse("3.27").unwrap().to_string(), "3.27.0");
        assert_eq!(
            VgVersion::parse("3.23.0.GIT").unwrap(),
            VgVersion::new(3, 23, 0)
        );
        assert!(VgVersion::parse("x").is_none());
        assert!(VgVersion::new(3, 27, 1) > VgVersion::new(3, 26, 0));
        assert!(VgVersion::new(3, 22, 0).at_least(3, 22));
        assert!(!VgVersion::new(3, 22, 0).at_least(3, 23));
        assert!(is_tested(VgVersion::new(3, 22, 0)));
        assert!(!is_tested(VgVersion::new(3, 24, 0)));
        assert_eq!(min_num_callers(VgVersion::new(3, 27, 1)), 2);
        assert_eq!(min_num_callers(VgVersion::new(3, 19, 0)), 1);
    }
}
