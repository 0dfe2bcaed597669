//! Stage 1, naive (the baseline): one output a thread, its row of A and column of B read from
//! global memory. A warp's B load is 4 sectors, its A load 1 (broadcast): 1 FLOP a global load.
//!
//! SASS (sm_90):
//! - `matmul_naive`: per k step one 4-byte `LDG.E` of A (the warp's 32 lanes share a row: one
//!   address) and one of B (32 consecutive columns), unrolled but never widened; one `STG.E`.

use super::{Blocks, Launched, Replay, SECTOR_FLOATS, store_c};
use crate::error::Result;
use crate::model::{Model, Warp, lanes_where};
use coalesce_kernels::matmul::{NAIVE_BLOCK, naive_coords, row_major};

pub(super) fn naive_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    let rc = |lane| {
        let (tx, ty) = w.thread(lane);
        naive_coords(w.block.0, w.block.1, tx, ty)
    };
    let active = lanes_where(w.lanes, |lane| {
        let (r, c) = rc(lane);
        r < l.m && c < l.n
    });
    let (n, k) = (u64::from(l.n), u64::from(l.k));
    for i in 0..k {
        model.load(l.a, 4, active, |lane| 4 * row_major(rc(lane).0.into(), i, k))?;
        model.load(l.b, 4, active, |lane| 4 * row_major(i, rc(lane).1.into(), n))?;
    }
    store_c(model, l, w, rc)?;
    Ok(())
}

/// Stage 1's replay: a block of [`NAIVE_BLOCK`] outputs; a thread walks k a float at a time, and
/// a sector of A's row holds 8 of them (the tile stream's step).
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: |_| (NAIVE_BLOCK.1, NAIVE_BLOCK.0, SECTOR_FLOATS as u32),
        origin: |_, (bx, by)| Ok(naive_coords(bx, by, 0, 0)),
        warp: |model, l, _, w| naive_warp(model, l, w),
    }),
    row: None,
};
