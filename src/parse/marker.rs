//! The probe's checkpoint markers (`leakgate-checkpoint {json}`): the text
//! of a `<clientmsg>` in Valgrind's XML, or a line of a sanitizer log.
//! Read here, where the reports are parsed; `analyze::checkpoints` ties the
//! leak snapshots after them to the tests they name.

use serde::Deserialize;

use crate::probe::MARKER_PREFIX;

/// A checkpoint marker, as the probe writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Marker {
    /// `test` (a pytest test), `start` (before the first test), `finish`
    /// (end of the session), `checkpoint` (a call of `checkpoint()`).
    #[serde(default = "default_kind")]
    pub kind: String,
    pub label: String,
    /// Repetition (1-based) and how many were asked for (`--repeat`).
    #[serde(default)]
    pub rep: Option<u32>,
    #[serde(default)]
    pub of: Option<u32>,
    /// A pytest test's position in the collected session (the same in
    /// every pytest-xdist worker): orders the tests of parallel workers as
    /// a serial run would.
    #[serde(default)]
    pub index: Option<u64>,
    /// On the first marker of a process: CPython's free lists, `off` or why
    /// they stayed on (see `free_lists_off` in the probe).
    #[serde(default)]
    pub freelists: Option<String>,
}

fn default_kind() -> String {
    "checkpoint".into()
}

/// Parses a `<clientmsg>` text; `None` when it is not a leakgate marker.
pub fn parse_marker(text: &str) -> Option<Marker> {
    let json = text.trim().strip_prefix(MARKER_PREFIX.trim_end())?.trim();
    serde_json::from_str(json).ok()
}
