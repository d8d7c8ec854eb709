//! Stage 5 of the pipeline: the gate. It decides once, and every output
//! reads what it decided: [`mark`] sets each finding's `gated` (the policy
//! counts it) and `fails` (it fails the gate), and [`verdict`] turns the
//! marks, the completeness of the XML and the target's exit status into the
//! verdict and its exit code ([`crate::exit`]). Renderers never re-derive a
//! finding's gate state; a saved report gets its marks back with
//! [`restore`].
//!
//! A definite leak's indirectly lost blocks are one thing to fix with it:
//! `indirect` folds the user's indirect findings into the gated definite
//! leak that owns them (`indirect_of`, not gated again).
//!
//! [`policy`] is the `--fail-on` vocabulary, [`baseline`] the `--baseline`
//! comparison (which marks findings `new`/`known` before the gate).

pub mod baseline;
mod decide;
mod indirect;
pub mod policy;
mod verdict;

#[cfg(test)]
mod tests;

pub use decide::{Policy, gated_leaked_bytes, grows_per_call, leaked_bytes, mark, restore};
pub use verdict::{internal_error, notes, site_packages_hint, verdict};
