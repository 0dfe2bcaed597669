//! Stage 3, prefetch: `tiled` with the next tile's global loads issued into registers first.
//! The same transactions; their latency overlaps the FMAs, for two more registers a thread.
//!
//! SASS (sm_90):
//! - `matmul_prefetch`: `matmul_tiled`'s (see `tiled`): the prefetching kernel issues the same
//!   loads in another order, which none of these counters sees.

use super::Launched;
use super::tiled::tiled_warp;
use crate::error::Result;
use crate::model::{Model, Warp};

/// One warp of `matmul_prefetch`: counted as `matmul_tiled`'s (module docs).
pub(super) fn prefetch_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    tiled_warp(model, l, w)?;
    Ok(())
}
