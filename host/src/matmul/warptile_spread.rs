//! Stage 9, warptile_spread (Hopper): warptile_async's copies go out two at a time between a tile's k
//! steps, 4 stages deep. The same transactions; no FMA waits on a copy's address registers.
//!
//! The host side: the spread kernel's launch (`spread_streamk`'s blocks too).

use super::footprint::Footprint;
use super::lesson::{Lesson, SIZES, WARPTILE_ASYNC_SHAPES};
use super::warptile::footprint::{FOOTPRINT, ring_block};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::warptile_spread::REPLAY;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTS_STAGES, matmul_warptile_spread};

/// Stage 9's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarptileSpread,
    kernel: matmul_warptile_spread,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    // The warp tile's, A copied through the ring.
    footprint: Footprint {
        block: |stage, p, block, probe, touch| ring_block(stage, p, block, probe, touch, Some(WTS_STAGES)),
        ..FOOTPRINT
    },
    lesson: Lesson {
        summary: "warptile_async with each thread's 12 copies a tile issued 2 at a time over the k steps, 4-stage ring (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_ASYNC_SHAPES],
    },
};

/// `warptile_async`'s blocks, with the `WTS_STAGES`-stage ring as their shared memory.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    super::warptile_async::ring_launch(m, n, WTS_STAGES)
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn spread_ring_plans_a_block_a_tile_with_its_deeper_ring() {
        let (l, _) = plan_of(Method::WarptileSpread, (256, 512, 32), (256 * 32, 32 * 512, 256 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((2, 2), (256, 1), 4 * 16 * (132 + 256) * 4));
    }
}
