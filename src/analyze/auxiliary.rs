//! A record's auxiliary stacks (`<auxwhat>`/`<xauxwhat>` with a `<stack>`):
//! where a block was freed and allocated, the block an address lies near,
//! the origin of an uninitialised value. Each is judged by the attribution
//! machinery as the main stack is, so its frames are marked `user` by the
//! same rule; they never decide whose the record is and are not part of
//! its fingerprint.

use super::aggregate::frame_out;
use super::attribute::Attributor;
use crate::model::Record;
use crate::report::AuxStack;

/// The record's auxiliary stacks, in Valgrind's order, each cut to
/// `max_frames` frames when given (noise findings' stacks are cut).
pub(super) fn aux_stacks(
    attributor: &mut Attributor,
    rec: &Record,
    max_frames: Option<usize>,
) -> Vec<AuxStack> {
    rec.aux
        .iter()
        .filter(|a| !a.stack.is_empty())
        .map(|a| {
            // The stack judged alone, as the main stack of a record of the
            // same kind (a descriptor kind lets libc's wrappers pass).
            let judged = Record {
                kind: rec.kind.clone(),
                stack: a.stack.clone(),
                ..Record::default()
            };
            let att = attributor.attribute(&judged);
            let take = max_frames.map_or(a.stack.len(), |m| m.min(a.stack.len()));
            let stack = a.stack[..take]
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let local = att
                        .local_paths
                        .iter()
                        .find(|(j, _)| *j == i)
                        .map(|(_, p)| p);
                    frame_out(f, att.user_frames.contains(&i), local)
                })
                .collect();
            AuxStack {
                text: a.text.clone(),
                stack,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
