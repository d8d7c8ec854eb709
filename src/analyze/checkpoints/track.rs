//! Follows blocks across snapshots by their allocation site: a block that
//! still looked reachable at one check and is lost at a later one belongs
//! to the checkpoint that first saw it. The result is each finding's grown
//! bytes and blocks per checkpoint ([`Shares`]).

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::{Ckpt, SiteKey, SnapRec};

/// Grown bytes and blocks per (finding key, checkpoint).
pub(super) type Shares = HashMap<(u64, Option<u32>), BTreeMap<Ckpt, (i64, i64)>>;

/// Blocks still not lost (reachable, possibly lost) at a site, oldest first:
/// (checkpoint that saw them appear, their finding key, blocks, bytes).
type Live = VecDeque<(Ckpt, (u64, Option<u32>), i64, i64)>;

pub(super) fn add_share(
    shares: &mut Shares,
    key: (u64, Option<u32>),
    c: Ckpt,
    bytes: i64,
    blocks: i64,
) {
    let e = shares.entry(key).or_default().entry(c).or_insert((0, 0));
    e.0 = e.0.saturating_add(bytes);
    e.1 = e.1.saturating_add(blocks);
}

/// Takes up to `want` blocks from the oldest live blocks; returns the
/// owners taken, with their blocks and bytes, and cancels their share.
fn take_live(live: &mut Live, want: i64, shares: &mut Shares) -> Vec<(Ckpt, i64, i64)> {
    let mut out = Vec::new();
    let mut want = want;
    while want > 0 {
        let Some(front) = live.front_mut() else { break };
        let take = want.min(front.2);
        let bytes = if front.2 > 0 {
            // i128: bytes × blocks of hostile input must not overflow.
            (i128::from(front.3) * i128::from(take) / i128::from(front.2)) as i64
        } else {
            0
        };
        add_share(
            shares,
            front.1,
            front.0,
            bytes.saturating_neg(),
            take.saturating_neg(),
        );
        out.push((front.0, take, bytes));
        front.2 = front.2.saturating_sub(take);
        front.3 = front.3.saturating_sub(bytes);
        want = want.saturating_sub(take);
        if front.2 <= 0 {
            live.pop_front();
        }
    }
    out
}

/// The final leak check, as a checkpoint of its own.
pub(super) const EXIT: usize = usize::MAX - 1;

/// Handles the loss records of one snapshot (checkpoint `c`).
fn process_group(
    group: &[SnapRec],
    c: Ckpt,
    live: &mut HashMap<(usize, u64), Live>,
    shares: &mut Shares,
) {
    // Per site: blocks that left the not-lost kinds in this snapshot.
    let mut left: HashMap<u64, i64> = HashMap::new();
    for s in group.iter().filter(|s| !s.lost && s.dblocks < 0) {
        let e = left.entry(s.site).or_default();
        *e = e.saturating_add(s.dblocks.saturating_neg());
    }
    let mut moved: HashMap<u64, i64> = HashMap::new();
    // Lost blocks: first those that were reachable before (the lag).
    for s in group.iter().filter(|s| s.lost && s.dblocks > 0) {
        let l = live.entry((s.process, s.site)).or_default();
        let avail = left
            .get(&s.site)
            .copied()
            .unwrap_or(0)
            .saturating_sub(moved.get(&s.site).copied().unwrap_or(0));
        let from_live = s.dblocks.min(avail.max(0));
        let per_block = s.dbytes.max(0) / s.dblocks.max(1);
        let mut placed: i64 = 0;
        for (owner, blocks, _) in take_live(l, from_live, shares) {
            add_share(
                shares,
                s.key,
                owner,
                per_block.saturating_mul(blocks),
                blocks,
            );
            placed = placed.saturating_add(blocks);
        }
        let m = moved.entry(s.site).or_default();
        *m = m.saturating_add(placed);
        let rest_blocks = s.dblocks.saturating_sub(placed);
        let rest_bytes = s
            .dbytes
            .max(0)
            .saturating_sub(per_block.saturating_mul(placed));
        if rest_blocks > 0 || rest_bytes > 0 {
            add_share(shares, s.key, c, rest_bytes, rest_blocks);
        }
    }
    // Not-lost blocks: freed ones leave (oldest first), new ones arrive.
    for s in group.iter().filter(|s| !s.lost) {
        let l = live.entry((s.process, s.site)).or_default();
        if s.dblocks < 0 {
            let m = moved.entry(s.site).or_default();
            let already = (*m).min(s.dblocks.saturating_neg());
            *m = m.saturating_sub(already);
            let freed = s.dblocks.saturating_neg().saturating_sub(already);
            take_live(l, freed, shares);
        } else if s.dblocks > 0 || s.dbytes > 0 {
            l.push_back((c, s.key, s.dblocks, s.dbytes.max(0)));
            add_share(shares, s.key, c, s.dbytes.max(0), s.dblocks);
        }
    }
}

/// Every snapshot in file order, then each complete process' final leak
/// check as one more snapshot; `ckpt_of` names a record's checkpoint.
pub(super) fn track(
    snaps: &[SnapRec],
    finals: &[SnapRec],
    complete: &[bool],
    ckpt_of: impl Fn(&SnapRec) -> Ckpt,
) -> Shares {
    let mut shares: Shares = HashMap::new();
    let mut live: HashMap<(usize, u64), Live> = HashMap::new();
    type CumKey = (usize, u64, (u64, Option<u32>), bool);
    let mut cum: HashMap<CumKey, (i64, i64)> = HashMap::new();
    // Records of one snapshot are consecutive; handle them a snapshot at a time.
    let mut i = 0;
    while i < snaps.len() {
        let c = ckpt_of(&snaps[i]);
        let mut j = i;
        while j < snaps.len() && ckpt_of(&snaps[j]) == c {
            j += 1;
        }
        let group = &snaps[i..j];
        i = j;
        process_group(group, c, &mut live, &mut shares);
        for s in group {
            let e = cum
                .entry((s.process, s.site, s.key, s.lost))
                .or_insert((0, 0));
            e.0 = e.0.saturating_add(s.dbytes);
            e.1 = e.1.saturating_add(s.dblocks);
        }
    }
    // The final leak check (at exit) is one more snapshot: its growth is
    // what it holds beyond what the snapshots added up to. A block still
    // reachable at the last checkpoint and lost at exit is found here.
    let with_snaps: std::collections::BTreeSet<usize> = snaps.iter().map(|s| s.process).collect();
    for p in with_snaps {
        if !complete.get(p).copied().unwrap_or(false) {
            continue;
        }
        let mut fin: BTreeMap<SiteKey, (i64, i64)> = BTreeMap::new();
        for f in finals.iter().filter(|f| f.process == p) {
            let e = fin.entry((f.site, f.key, f.lost)).or_insert((0, 0));
            e.0 = e.0.saturating_add(f.dbytes);
            e.1 = e.1.saturating_add(f.dblocks);
        }
        let mut all = fin.clone();
        for (&(q, site, key, lost), v) in &cum {
            if q == p {
                let e = all.entry((site, key, lost)).or_insert((0, 0));
                e.0 = e.0.saturating_sub(v.0);
                e.1 = e.1.saturating_sub(v.1);
            }
        }
        let group: Vec<SnapRec> = all
            .into_iter()
            .filter(|(_, v)| v.0 != 0 || v.1 != 0)
            .map(|((site, key, lost), v)| SnapRec {
                process: p,
                msgs: 0,
                key,
                site,
                lost,
                dbytes: v.0,
                dblocks: v.1,
            })
            .collect();
        process_group(&group, (p, EXIT), &mut live, &mut shares);
    }
    shares
}
