//! Stage 6 of the pipeline: renderers. One file per output format; each takes
//! the finished [`Report`](crate::report::Report) and produces text.

pub mod annotations;
pub mod ci;
pub mod codequality;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod text;

use crate::kind::Kind;
use crate::report::{FrameOut, Report};
use crate::util::plural;

/// The user's findings counted by kind, in report order, for people:
/// `2 definitely-lost leaks, 1 InvalidRead error in your code`, or `no leaks
/// or memory errors in your code`.
pub fn user_findings_phrase(r: &Report) -> String {
    let mut by_kind: Vec<(&Kind, u64)> = Vec::new();
    for f in r.findings.iter().filter(|f| f.is_user()) {
        match by_kind.iter_mut().find(|(k, _)| **k == f.kind) {
            Some((_, n)) => *n += 1,
            None => by_kind.push((&f.kind, 1)),
        }
    }
    if by_kind.is_empty() {
        return "no leaks or memory errors in your code".into();
    }
    let parts: Vec<String> = by_kind
        .iter()
        .map(|(k, n)| {
            let (one, many) = k.noun();
            plural(*n, &one, &many)
        })
        .collect();
    format!("{} in your code", parts.join(", "))
}

/// Which frames of a stack a person needs to see (the text report prints
/// the others as `... N frames`, the HTML folds them): the user's frames
/// and one frame either side; the innermost three when no frame is the
/// user's; and a lone frame between shown ones (a fold of one frame would
/// cost a line anyway).
pub fn shown_frames(frames: &[FrameOut]) -> Vec<bool> {
    let n = frames.len();
    let mut keep = vec![false; n];
    for (i, fr) in frames.iter().enumerate() {
        if fr.user {
            keep[i.saturating_sub(1)..(i + 2).min(n)].fill(true);
        }
    }
    if !keep.contains(&true) {
        keep.iter_mut().take(3).for_each(|k| *k = true);
    }
    for i in 0..n {
        let before = i == 0 || keep[i - 1];
        let after = i + 1 == n || keep[i + 1];
        if !keep[i] && before && after {
            keep[i] = true;
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(user: &[bool]) -> Vec<FrameOut> {
        user.iter()
            .map(|u| FrameOut {
                function: None,
                object: None,
                file: None,
                path: None,
                line: None,
                ip: None,
                user: *u,
                generated: None,
            })
            .collect()
    }

    #[test]
    fn user_frames_and_their_neighbours_are_shown() {
        let k = shown_frames(&stack(&[
            false, false, false, true, false, false, false, false,
        ]));
        assert_eq!(k, [false, false, true, true, true, false, false, false]);
        // no user frame: the innermost three (and a lone gap filled)
        let k = shown_frames(&stack(&[false; 5]));
        assert_eq!(k, [true, true, true, false, false]);
        let k = shown_frames(&stack(&[false; 4]));
        assert_eq!(k, [true, true, true, true]);
        // a single frame between shown ones is shown
        let k = shown_frames(&stack(&[true, false, false, true, false, false, false]));
        assert_eq!(k, [true, true, true, true, true, false, false]);
    }
}
