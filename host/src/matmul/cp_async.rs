//! Stage 4, cp_async (Hopper): `prefetch`'s tiles go global → shared through a 4-stage ring.
//! Same bytes, 1/4 of the requests where rows are aligned; 1 barrier a tile; 32 KiB shared, not 8.
//!
//! The host side: the `cp.async` tiled kernel's launch.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::cp_async::REPLAY;
use coalesce_kernels::matmul::{MM_SHARED_BYTES, TILE, matmul_cp_async};

/// Stage 4's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::CpAsync,
    kernel: matmul_cp_async,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: TILE,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    footprint: super::tiled::footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "32x32 tiles through a 4-stage cp.async ring: 3 tiles in flight, 1 barrier a tile (sm_90)",
        bench: Bench::Fixed,
        checks: &[&CHECK_SHAPES],
    },
};

/// `tiled`'s blocks, with the `MM_STAGES`-stage ring as their shared memory.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { shared_bytes: MM_SHARED_BYTES, ..super::tiled::launch(m, n) }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn cp_async_plans_tiled_blocks_with_a_ring() {
        let (l, _) = plan_of(Method::CpAsync, (33, 65, 7), (231, 455, 2145)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (32, 32), 32768));
    }
}
