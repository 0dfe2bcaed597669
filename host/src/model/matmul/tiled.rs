//! Stage 2, tiled: blocks stage 32 × 32 tiles of A and B in shared memory for the inner loop.
//! 32 FLOP a global load instead of 1; costs two barriers a tile and 8 KiB of shared memory.
//!
//! SASS (sm_90):
//! - `matmul_tiled` / `matmul_prefetch`: per tile one `LDG.E` of A and one of B under `at`'s
//!   bounds check, an `STS` of each into its tile (unconditional), and the inner product over the
//!   tile as 8 trips of one `LDS.128` of A's tile row (ptxas merges the PTX's four
//!   `ld.shared.b32` of `tile_offset(ty, i .. i + 4)`, 16-byte aligned since `i % 4 == 0`, into
//!   one; all lanes share `ty`, so one address) and four `LDS` of B's tile column; one `STG.E`.
//!   The prefetching kernel issues the same loads in another order.

use super::{Blocks, Launched, Replay, store_c};
use crate::error::Result;
use crate::model::{Model, Warp, lanes_where};
use coalesce_kernels::matmul::{TILE, row_major, tile_a_col, tile_b_row, tile_offset, tiled_coords};

pub(super) fn tiled_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    let t = |lane| w.thread(lane);
    let rc = |lane| {
        let (tx, ty) = t(lane);
        tiled_coords(w.block.0, w.block.1, tx, ty)
    };
    let b_tile = TILE * TILE * 4;
    for tile in 0..l.k.div_ceil(TILE) {
        element_loads(model, l, w, tile)?;
        let here = |lane| {
            let (tx, ty) = t(lane);
            4 * tile_offset(ty, tx)
        };
        model.shared_store(4, w.lanes, here)?;
        model.shared_store(4, w.lanes, |lane| b_tile + here(lane))?;
        for i in (0..TILE).step_by(4) {
            model.shared_load(16, w.lanes, |lane| 4 * tile_offset(t(lane).1, i))?;
            for q in i..i + 4 {
                model.shared_load(4, w.lanes, |lane| b_tile + 4 * tile_offset(q, t(lane).0))?;
            }
        }
    }
    store_c(model, l, w, rc)?;
    Ok(())
}

/// One warp's 4-byte loads of tile `tile` of A and of B, each lane's guarded as the kernels'
/// `at(a, row, tile_a_col(t, tx), m, k)` and `at(b, tile_b_row(t, ty), col, k, n)`: the tiled and
/// prefetching kernels, and the cp.async kernel where its rows are not 16-byte vectors.
pub(super) fn element_loads(model: &mut Model, l: &Launched, w: &Warp, tile: u32) -> Result<()> {
    let t = |lane| w.thread(lane);
    let rc = |lane| {
        let (tx, ty) = t(lane);
        tiled_coords(w.block.0, w.block.1, tx, ty)
    };
    let (m, n, k) = (l.m, l.n, l.k);
    let a_at = |lane| (rc(lane).0, tile_a_col(tile, t(lane).0));
    let b_at = |lane| (tile_b_row(tile, t(lane).1), rc(lane).1);
    let a_on = lanes_where(w.lanes, |lane| a_at(lane).0 < m && a_at(lane).1 < k);
    let b_on = lanes_where(w.lanes, |lane| b_at(lane).0 < k && b_at(lane).1 < n);
    model.load(l.a, 4, a_on, |lane| 4 * row_major(a_at(lane).0.into(), a_at(lane).1.into(), k.into()))?;
    model.load(l.b, 4, b_on, |lane| 4 * row_major(b_at(lane).0.into(), b_at(lane).1.into(), n.into()))?;
    Ok(())
}

/// Stage 2's replay: a block a `TILE × TILE` tile of C, k a tile at a time.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: |_| (TILE, TILE, TILE),
        origin: |_, (bx, by)| Ok(tiled_coords(bx, by, 0, 0)),
        warp: |model, l, _, w| tiled_warp(model, l, w),
    }),
    row: None,
};
