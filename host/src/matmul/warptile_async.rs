//! Stage 7, warptile_async (Hopper): 8 × 16 outputs a thread in 128 × 256 tiles, a `cp.async` ring.
//! 6 shared loads per 128 FMAs (was 4 per 64), no tile in registers; one block an SM, not two.
//!
//! The host side: the `cp.async` warp-tiled kernel's launch (`warptile_streamk`'s blocks too).

use super::footprint::Footprint;
use super::lesson::{Lesson, SIZES, WARPTILE_ASYNC_SHAPES};
use super::warptile::footprint::{FOOTPRINT, ring_block};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::warptile_async::REPLAY;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTA_STAGES, WTA_THREADS, matmul_warptile_async};

/// Stage 7's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarptileAsync,
    kernel: matmul_warptile_async,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    // The warp tile's, A copied through the ring.
    footprint: Footprint {
        block: |stage, p, block, probe, touch| ring_block(stage, p, block, probe, touch, Some(WTA_STAGES)),
        ..FOOTPRINT
    },
    lesson: Lesson {
        summary: "128x256 blocks, 8x16 a thread, 3-stage cp.async ring of k 16, 1 block/SM (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_ASYNC_SHAPES],
    },
};

/// A block a `WARPTILE_ASYNC` tile of C (whole tiles only), `WTA_THREADS` threads, its
/// `WTA_STAGES`-stage ring as shared memory (past the default: opted in at launch).
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    ring_launch(m, n, WTA_STAGES)
}

/// [`launch`] with a ring of `stages` stages (`warptile_spread`'s is deeper).
pub(super) const fn ring_launch(m: u32, n: u32, stages: u32) -> Launch {
    Launch {
        grid: WARPTILE_ASYNC.grid(m, n),
        block: (WTA_THREADS, 1),
        shared_bytes: WARPTILE_ASYNC.ring_bytes(stages),
        cluster: 1,
    }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn async_ring_plans_a_block_a_tile_with_its_ring() {
        let (l, _) = plan_of(Method::WarptileAsync, (256, 512, 32), (256 * 32, 32 * 512, 256 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((2, 2), (256, 1), 3 * 16 * (132 + 256) * 4));
    }
}
