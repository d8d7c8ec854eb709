//! Stage 5 of the pipeline: the gate. It decides once, and every output
//! reads what it decided: [`mark`] sets each finding's `gated` (the policy
//! counts it) and `fails` (it fails the gate), and [`verdict`] turns the
//! marks, the completeness of the XML and the target's exit status into the
//! verdict and its exit code ([`crate::exit`]). Renderers never re-derive a
//! finding's gate state; a saved report gets its marks back with
//! [`restore`].
//!
//! [`policy`] is the `--fail-on` vocabulary, [`baseline`] the `--baseline`
//! comparison (which marks findings `new`/`known` before the gate).

pub mod baseline;
mod decide;
pub mod policy;
mod verdict;

#[cfg(test)]
mod tests;

pub use decide::{Policy, gated_leaked_bytes, grows_per_call, leaked_bytes, mark, restore};
pub use verdict::{internal_error, notes, site_packages_hint, verdict};
