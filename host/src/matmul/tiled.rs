//! Stage 2, tiled: blocks stage 32 × 32 tiles of A and B in shared memory for the inner loop.
//! 32 FLOP a global load instead of 1; costs two barriers a tile and 8 KiB of shared memory.
//!
//! The host side: the tiled kernels' launch (`prefetch`'s too).

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::tiled::REPLAY;
use coalesce_kernels::matmul::{TILE, TILED_SHARED_FLOATS, matmul_tiled, tiled_grid};

/// Stage 2's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Tiled,
    kernel: matmul_tiled,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: TILE,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    lesson: Lesson {
        summary: "32x32 shared-memory tiles, barriers after store and after use",
        bench: Bench::Fixed,
        checks: &[&CHECK_SHAPES],
    },
};

/// One thread an output of C in `TILE × TILE` blocks, each with a tile of A and one of B in
/// shared memory; partial blocks at the edges, the kernel guards every global access.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { grid: tiled_grid(m, n), block: (TILE, TILE), shared_bytes: TILED_SHARED_FLOATS * 4, cluster: 1 }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn tiled_plans_a_block_a_tile_of_c() {
        let (l, _) = plan_of(Method::Tiled, (33, 65, 7), (231, 455, 2145)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (32, 32), 8192));
    }
}
