//! The JSON renderer: the report model serialised as is (the contract lives
//! in `report.rs` and docs/json.md).

use crate::report::Report;

/// Renders the report as pretty-printed JSON followed by a newline.
pub fn render(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("report serialises");
    s.push('\n');
    s
}
