//! leakgate's exit codes, in one place (docs/exit-codes.md).
//!
//! When several apply: [`USAGE`] (decided before the gate runs), then
//! [`INTERNAL`], then [`FAIL`], then [`INCOMPLETE`], then [`TARGET`]. The
//! gate's verdict carries the code as `verdict.exit_code`; its
//! `verdict.status` names it ([`crate::report::Status`]).

/// Passed: no gated finding in the user's code, every report complete, the
/// target exited 0.
pub const PASS: i32 = 0;
/// The gate failed: a failing finding in the user's code.
pub const FAIL: i32 = 1;
/// Usage, configuration or input error (bad flags, unwritable output, a
/// file that is not Valgrind XML, Valgrind missing): decided before the run.
pub const USAGE: i32 = 2;
/// An XML report is incomplete or missing, or Valgrind failed.
pub const INCOMPLETE: i32 = 3;
/// The target exited non-zero (or was killed) and nothing else failed.
pub const TARGET: i32 = 4;
/// leakgate's own accounting does not add up (a bug): the report cannot be
/// trusted.
pub const INTERNAL: i32 = 5;

/// The process exit code for `code` (always one of the constants above).
pub fn to_exit_code(code: i32) -> std::process::ExitCode {
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(INTERNAL as u8))
}

/// A few words for `code`, for messages.
pub fn describe(code: i32) -> &'static str {
    match code {
        PASS => "passed",
        FAIL => "gate failed",
        USAGE => "usage or input error",
        INCOMPLETE => "incomplete report",
        TARGET => "the target exited non-zero",
        INTERNAL => "internal error",
        _ => "unknown exit code",
    }
}
