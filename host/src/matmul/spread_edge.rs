//! Stage 11, spread_edge (Hopper): spread_streamk for any shape and any 4-byte alignment.
//! B copied a float at a time (24 copies a tile, not 12), no guard in the k loop; same sectors.
//!
//! The host side: stream-K's two launches over the guarded ring, the schedule counting partial
//! tiles ([`StreamK::covering`](coalesce_kernels::matmul::StreamK::covering)).

use super::lesson::{CHECK_SHAPES, EDGE_BENCH_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage, Waves};
use crate::launch::Launch;
use crate::model::matmul::spread_edge::REPLAY;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, matmul_spread_edge, matmul_spread_edge_waves};

/// Shapes checked for the guarded spread ring's stream-K (on 132 SMs) besides the guarded
/// kernel's: 170 tiles, partial in m, n and k (one whole wave, 38 shared, k 32 whole tiles and 3
/// columns); 64 tiles all shared, k 62 tiles and 8; 4 tiles of k below one step (only the
/// partial k tile, most blocks idle); 66 tiles one column wide at the edge; the first again
/// twice (each launch finds the flags the one before cleared).
const SPREAD_EDGE_SHAPES: [(usize, usize, usize); 6] =
    [(1153, 4097, 515), (1000, 2000, 1000), (130, 300, 7), (4097, 257, 100), (1153, 4097, 515), (1153, 4097, 515)];

/// Stage 11's descriptor: its own blocks over the whole waves (`matmul_spread_edge_waves`), then
/// the shared row (`matmul_spread_edge`), every access guarded.
pub(super) const STAGE: Stage = Stage {
    method: Method::SpreadEdge,
    kernel: matmul_spread_edge,
    waves: Some(Waves { kernel: matmul_spread_edge_waves, blocks_of: Method::SpreadEdge }),
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::Guarded,
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, sms| launch(m, n, sms),
    replay: REPLAY,
    lesson: Lesson {
        summary: "stream-K over the spread ring for any shape: A rows clamped, B columns wrapped, B copied a float at a time, partial k tile last (sm_90)",
        bench: EDGE_BENCH_SHAPES,
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPREAD_EDGE_SHAPES],
    },
};

/// The shared row's launch: `spread_streamk`'s (the spread ring's blocks on the row grid, one
/// block a multiprocessor, which partial tiles do not change).
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    super::spread_streamk::launch(m, n, sms)
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::launches_of;
    use crate::matmul::*;
    use coalesce_kernels::matmul::{matmul_spread_edge, matmul_spread_edge_waves};

    #[test]
    fn spread_edge_counts_partial_tiles_in_its_schedule() {
        let ring = 4 * 16 * (132 + 256) * 4;
        let grids = |(m, n, k): (usize, usize, usize)| {
            launches_of(Method::SpreadEdge, (m, n, k), (m * k, k * n, m * n))
                .unwrap()
                .into_iter()
                .map(|(name, l, _)| (name, l.grid, l.block, l.shared_bytes))
                .collect::<Vec<_>>()
        };
        // 4097² is 33 x 17 = 561 tiles on 132 SMs: 4 whole waves, 33 tiles shared.
        assert_eq!(
            grids((4097, 4097, 4097)),
            [
                (matmul_spread_edge_waves.name(), (132, 4), (256, 1), ring),
                (matmul_spread_edge.name(), (132, 1), (256, 1), ring)
            ]
        );
        // One partial tile: no whole wave, the row shares it.
        assert_eq!(grids((5, 7, 3)), [(matmul_spread_edge.name(), (132, 1), (256, 1), ring)]);
    }
}
