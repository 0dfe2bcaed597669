//! Stage 3, prefetch: `tiled` with the next tile's global loads issued into registers first.
//! The same transactions; their latency overlaps the FMAs, for two more registers a thread.
//!
//! The host side: `tiled`'s launch, unchanged.
//!
//! Below the launch: the model's replay of its kernel (`replay`); its footprint is `tiled`'s.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{TILE, matmul_prefetch};

/// Stage 3's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Prefetch,
    kernel: matmul_prefetch,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: TILE,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: super::tiled::footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "tiles with the next one loaded into registers during compute",
        bench: Bench::Fixed,
        checks: &[&CHECK_SHAPES],
    },
};

/// [`super::tiled::launch`]: the prefetch changes the order of the loads, not the blocks.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    super::tiled::launch(m, n)
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90):
    //! - `matmul_prefetch`: `matmul_tiled`'s (see `tiled`): the prefetching kernel issues the same
    //!   loads in another order, which none of these counters sees.

    use crate::error::Result;
    use crate::matmul::tiled::replay::tiled_warp;
    use crate::model::matmul::{Blocks, Launched, Replay};
    use crate::model::{Model, Warp};
    use coalesce_kernels::matmul::{TILE, tiled_coords};

    /// One warp of `matmul_prefetch`: counted as `matmul_tiled`'s (module docs).
    fn prefetch_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
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
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn prefetch_plans_the_tiled_launch() {
        for (shape, lens) in [((33, 65, 7), (231, 455, 2145)), ((128, 128, 8), (1024, 1024, 16384))] {
            assert_eq!(plan_of(Method::Prefetch, shape, lens).unwrap(), plan_of(Method::Tiled, shape, lens).unwrap());
        }
    }
}
