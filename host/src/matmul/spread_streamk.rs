//! Stage 10, spread_streamk (Hopper): warptile_streamk's schedule over warptile_spread's k loop.
//! The same transactions as warptile_streamk; each block's k tiles run at warptile_spread's pace.
//!
//! The host side: stream-K's two launches ([`super::warptile_streamk`]'s schedule) with the spread
//! ring's kernels and blocks.
//!
//! Below the launch: the model's replay of its row (`replay`); its footprint is
//! `warptile_streamk`'s.

use super::lesson::{Bench, Lesson, STREAMK_SHAPES};
use super::warptile_streamk::row_launch;
use super::{Bounds, Method, Stage, Waves};
use crate::launch::Launch;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, matmul_spread_streamk, matmul_spread_streamk_waves};

/// Sizes the spread ring's stream-K is swept over: stream-K's, and 2048³ (128 tiles, one wave
/// short of 132 SMs by 4 blocks: all shared).
const SPREAD_STREAMK_SIZES: Bench = Bench::Cubes { sweep: &[2048, 3072, 4096, 8192], check: &[3072] };

/// Stage 10's descriptor: `warptile_spread`'s blocks over the whole waves
/// (`matmul_spread_streamk_waves`), then the shared row (`matmul_spread_streamk`); no guards, so
/// whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::SpreadStreamk,
    kernel: matmul_spread_streamk,
    waves: Some(Waves { kernel: matmul_spread_streamk_waves, blocks_of: Method::WarptileSpread }),
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _, sms| launch(m, n, sms),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: super::warptile_streamk::footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "stream-K over warptile_spread's k loop: whole waves, then one row shares the rest (sm_90)",
        bench: SPREAD_STREAMK_SIZES,
        checks: &[&STREAMK_SHAPES],
    },
};

/// The shared row's launch: `warptile_spread`'s blocks on the row grid.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    row_launch(m, n, sms, super::warptile_spread::launch(m, n))
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches: stage 8's row (`warptile_streamk`'s
    //! `stream_k_counts`) over the spread ring's k loop; its whole waves are `warptile_spread`'s
    //! blocks.

    use crate::matmul::warptile_spread::replay::k_loop;
    use crate::matmul::warptile_streamk::replay::stream_k_counts;
    use crate::model::matmul::Replay;

    /// Stage 10's replay: its row, segment by segment through the spread ring.
    pub(crate) const REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| stream_k_counts(model, l, launch, k_loop)) };
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::launches_of;
    use crate::matmul::*;
    use coalesce_kernels::matmul::{matmul_spread_streamk, matmul_spread_streamk_waves};

    #[test]
    fn spread_stream_k_plans_the_same_schedule_with_the_spread_kernels() {
        let ring = 4 * 16 * (132 + 256) * 4;
        let sk = launches_of(Method::SpreadStreamk, (4096, 4096, 16), (4096 * 16, 16 * 4096, 4096 * 4096)).unwrap();
        let grids: Vec<_> = sk.iter().map(|(name, l, _)| (*name, l.grid, l.block, l.shared_bytes)).collect();
        assert_eq!(
            grids,
            [
                (matmul_spread_streamk_waves.name(), (132, 3), (256, 1), ring),
                (matmul_spread_streamk.name(), (132, 1), (256, 1), ring)
            ]
        );
    }
}
