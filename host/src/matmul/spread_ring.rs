//! Stage 9, spread_ring (Hopper): async_ring's copies go out two at a time between a tile's k
//! steps, 4 stages deep. The same transactions; no FMA waits on a copy's address registers.
//!
//! The host side: the spread kernel's launch (`spread_stream_k`'s blocks too).

use super::lesson::{Lesson, SIZES, WARPTILE_ASYNC_SHAPES};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::spread_ring::REPLAY;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTA_THREADS, WTS_STAGES, matmul_warptile_spread};

/// Stage 9's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarpTileSpread,
    kernel: matmul_warptile_spread,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    lesson: Lesson {
        summary: "warptile_async with each thread's 12 copies a tile issued 2 at a time over the k steps, 4-stage ring (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_ASYNC_SHAPES],
    },
};

/// A block a `WARPTILE_ASYNC` tile of C (whole tiles only), `WTA_THREADS` threads, its
/// `WTS_STAGES`-stage ring as shared memory (past the default: opted in at launch).
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch {
        grid: WARPTILE_ASYNC.grid(m, n),
        block: (WTA_THREADS, 1),
        shared_bytes: WARPTILE_ASYNC.ring_bytes(WTS_STAGES),
        cluster: 1,
    }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn spread_ring_plans_a_block_a_tile_with_its_deeper_ring() {
        let (l, _) = plan_of(Method::WarpTileSpread, (256, 512, 32), (256 * 32, 32 * 512, 256 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((2, 2), (256, 1), 4 * 16 * (132 + 256) * 4));
    }
}
