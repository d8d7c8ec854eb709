//! Leaks made once at import: a user's block allocated while the
//! interpreter imported the extension (under `PyInit_*`, a module exec slot
//! run by `PyModule_ExecDef`, the module state they set up), or, with
//! pytest checkpoints, before the first test (collection, which imports
//! the test modules and the extension). Such a block leaks once per
//! interpreter that imports the module, not once per call: the finding is
//! marked `at_import`, listed in its own group, and gated only when
//! `--fail-on` names `import` (docs/attribution.md, "Made once at import").
//! A leak in a function called once at run time (an error path) is not
//! marked: its stack has no import frame.

use crate::model::Record;
use crate::report::Finding;

/// Whether a record's allocation stack runs under module import or
/// initialisation: any frame is `PyInit_*`, a module exec slot's caller or
/// the import machinery that runs them. Leaks only: a memory error made at
/// import is gated like any other.
pub fn made_at_import(rec: &Record) -> bool {
    rec.is_leak()
        && rec.stack.iter().any(|f| {
            f.func
                .as_deref()
                .is_some_and(crate::analyze::attribute::is_module_init)
        })
}

/// With pytest checkpoints (`pytest`: tests ran): a user leak that grew in
/// no test, only before the first checkpoint (collection, which imports
/// the test modules and the extension; the `start` snapshot is a silent
/// baseline, so such blocks are `outside` every checkpoint) was made once
/// at import too. The same share holds the rare block allocated after the
/// session's end, at interpreter shutdown, which also happens once per
/// interpreter. Call after the shares are resolved.
pub fn mark_from_checkpoints(findings: &mut [Finding], pytest: bool) {
    if !pytest {
        return;
    }
    for f in findings.iter_mut().filter(|f| f.is_user() && f.is_leak()) {
        if !f.tests.is_empty()
            && f.tests
                .iter()
                .all(|t| t.kind == "start" || t.kind == "outside")
        {
            f.at_import = true;
        }
    }
}

/// The group's heading, in every output: what such a leak costs.
pub const GROUP: &str = "made once at import: leaks once per interpreter that imports the module";
