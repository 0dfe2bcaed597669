//! Stage 14, split_k (Hopper, any shape): `warptile_small`'s guarded tiles with each tile's k cut
//! into ranges, a block a range, so that a grid of few tiles fills the GPU; partial tiles meet in
//! an L2 workspace, added in split order by a tile's last block. Stages 15 and 16,
//! split_k_wide and split_k_tall: the same on 32 × 128 and 128 × 32 tiles, for m or n ≤ 32.
//!
//! The host side: the launches, and when [`matmul`](super::matmul) takes which
//! ([`split_k_pays`]).

use super::lesson::{Bench, CHECK_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::split_k::{REPLAY, TALL_REPLAY, WIDE_REPLAY};
use coalesce_kernels::matmul::{
    SPLIT_K, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, SplitKTile, matmul_split_k, matmul_split_k_tall, matmul_split_k_wide,
};

/// Shapes checked for split-K besides the general and guarded ones (on 132 SMs): 8 splits of 2
/// k tiles; one k tile cut 8 ways (7 empty ranges adding zeros); a partial k tile in a short last
/// range; a skinny product of long k; partial tiles in m, n and k, 2 splits; and 512³ twice
/// more, each launch finding the tickets the one before set back to 0.
const SPLIT_K_SHAPES: [(usize, usize, usize); 7] = [
    (256, 256, 256),
    (64, 128, 16),
    (5, 130, 33),
    (32, 4096, 1024),
    (129, 4097, 515),
    (512, 512, 512),
    (512, 512, 512),
];

/// Stage 14's descriptor: guarded, any shape.
pub(super) const STAGE: Stage = Stage {
    method: Method::SplitK,
    kernel: matmul_split_k,
    waves: None,
    warp_tile: Some(SPLIT_K.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K.cfg.bm,
    launch: |_, m, n, sms| launch(SPLIT_K, m, n, sms),
    replay: REPLAY,
    lesson: Lesson {
        summary: "warptile_small's guarded tiles, each tile's k cut into up to 8 ranges a block each; the last block adds the partials in order (sm_90)",
        // The squares whose 64 × 128 grids leave most of an H100 idle, 1024³ (cut two ways), and
        // m or n of 32 and 128 against 4096²: the matmul shapes sweep's, where split-K pays.
        bench: Bench::Shapes {
            sweep: &[
                (256, 256, 256),
                (512, 512, 512),
                (768, 768, 768),
                (1024, 1024, 1024),
                (32, 4096, 4096),
                (128, 4096, 4096),
                (4096, 32, 4096),
                (4096, 128, 4096),
            ],
            check: &[1],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// Stage 15's descriptor: stage 14 on 32 × 128 tiles, guarded, any shape.
pub(super) const WIDE_STAGE: Stage = Stage {
    method: Method::SplitKWide,
    kernel: matmul_split_k_wide,
    waves: None,
    warp_tile: Some(SPLIT_K_WIDE.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K_WIDE.cfg.bm,
    launch: |_, m, n, sms| launch(SPLIT_K_WIDE, m, n, sms),
    replay: WIDE_REPLAY,
    lesson: Lesson {
        summary: "split_k on 32 x 128 tiles, 4 x 8 sums a thread, 4 blocks a multiprocessor, k cut up to 16 ways: no rows past m = 32 multiplied (sm_90)",
        bench: Bench::Shapes {
            sweep: &[(256, 256, 256), (512, 512, 512), (32, 4096, 4096), (128, 4096, 4096)],
            check: &[0],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// Stage 16's descriptor: stage 15 turned over, 128 × 32 tiles, guarded, any shape.
pub(super) const TALL_STAGE: Stage = Stage {
    method: Method::SplitKTall,
    kernel: matmul_split_k_tall,
    waves: None,
    warp_tile: Some(SPLIT_K_TALL.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K_TALL.cfg.bm,
    launch: |_, m, n, sms| launch(SPLIT_K_TALL, m, n, sms),
    replay: TALL_REPLAY,
    lesson: Lesson {
        summary: "split_k on 128 x 32 tiles, 8 x 4 sums a thread, 4 blocks a multiprocessor, k cut up to 16 ways: no columns past n = 32 multiplied (sm_90)",
        bench: Bench::Shapes {
            sweep: &[(256, 256, 256), (512, 512, 512), (4096, 32, 4096), (4096, 128, 4096)],
            check: &[2],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// [`SplitK::grid`] of the shape on `sms` multiprocessors, blocks of `tile`.
const fn launch(tile: SplitKTile, m: u32, n: u32, sms: u32) -> Launch {
    Launch {
        grid: SplitK::of(tile, m, n, sms).grid(),
        block: (tile.cfg.threads(), 1),
        shared_bytes: tile.cfg.shared_bytes(),
        cluster: 1,
    }
}

/// Fewest splits [`matmul`](super::matmul) cuts a tile's k into. On the H100, 1024³ (128 tiles
/// of 64 × 128 on 132 SMs, cut two ways) took 60.4 µs against 55.5 for `warptile_small`'s one
/// block a tile; 768³ (three ways) 34.9 against 41.6 (BENCHMARKS.md).
pub const SPLIT_K_FROM: u32 = 3;

/// The split-K stage and tile for an `m × n` C: 32 × 128 tiles where m ≤ 32 (stage 15), 128 ×
/// 32 where n ≤ 32 (stage 16), else 64 × 128 (stage 14).
pub const fn split_k_stage(m: u32, n: u32) -> (Method, SplitKTile) {
    if m <= SPLIT_K_WIDE.cfg.bm {
        (Method::SplitKWide, SPLIT_K_WIDE)
    } else if n <= SPLIT_K_TALL.cfg.bn {
        (Method::SplitKTall, SPLIT_K_TALL)
    } else {
        (Method::SplitK, SPLIT_K)
    }
}

/// The split-K stage [`matmul`](super::matmul) takes for an `m × n × k` multiply on `sms`
/// multiprocessors, if any ([`split_k_stage`]'s, where its tiles are cut at least
/// [`SPLIT_K_FROM`] ways, each range at least two k tiles, the launch inside the workspace).
pub const fn split_k_pays(m: u32, n: u32, k: u32, sms: u32) -> Option<Method> {
    let (method, tile) = split_k_stage(m, n);
    let sk = SplitK::of(tile, m, n, sms);
    if sk.splits >= SPLIT_K_FROM && sk.fits() && tile.cfg.k_tiles(k, true) >= 2 * sk.splits {
        Some(method)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::split_k_pays;
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn split_k_plans_a_grid_row_of_splits_per_tile_row() {
        // 512³ on 132 SMs: 4 × 8 tiles of 64 × 128, each cut 8 ways.
        let (l, _) = plan_of(Method::SplitK, (512, 512, 512), (512 * 512, 512 * 512, 512 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((32, 8), (128, 1), 2 * (16 * 68 + 16 * 128) * 4));
        // It pays where a few tiles have a long k, not where the tiles fill the GPU or k is short.
        assert_eq!(split_k_pays(512, 512, 512, 132), Some(Method::SplitK));
        assert_eq!(split_k_pays(32, 4096, 4096, 132), Some(Method::SplitKWide));
        assert_eq!(split_k_pays(4096, 32, 4096, 132), Some(Method::SplitKTall));
        assert_eq!((split_k_pays(4096, 4096, 4096, 132), split_k_pays(256, 384, 64, 132)), (None, None));
        // m = 32 against 4096²: one row of 32 tiles of 32 × 128, cut 16 ways.
        let (l, _) = plan_of(Method::SplitKWide, (32, 4096, 4096), (32 * 4096, 4096 * 4096, 32 * 4096)).unwrap();
        assert_eq!((l.grid, l.block), ((512, 1), (128, 1)));
    }
}
