//! Stage 3, prefetch: `tiled` with the next tile's global loads issued into registers first.
//! The same transactions; their latency overlaps the FMAs, for two more registers a thread.
//!
//! SASS (sm_90):
//! - `matmul_prefetch`: `matmul_tiled`'s (see `tiled`): the prefetching kernel issues the same
//!   loads in another order, which none of these counters sees.

use super::tiled::tiled_warp;
use super::{Blocks, Launched, Replay};
use crate::error::Result;
use crate::model::{Model, Warp};
use coalesce_kernels::matmul::{TILE, tiled_coords};

/// One warp of `matmul_prefetch`: counted as `matmul_tiled`'s (module docs).
pub(super) fn prefetch_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    tiled_warp(model, l, w)?;
    Ok(())
}

/// Stage 3's replay: `tiled`'s blocks.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: |_| (TILE, TILE, TILE),
        origin: |_, (bx, by)| Ok(tiled_coords(bx, by, 0, 0)),
        warp: |model, l, _, w| prefetch_warp(model, l, w),
    }),
    row: None,
};
