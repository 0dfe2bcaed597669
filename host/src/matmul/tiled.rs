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
    footprint: footprint::FOOTPRINT,
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

/// What the tiled kernels' threads touch (`prefetch`'s and `cp_async`'s too): a tile of A and
/// one of B staged by each thread's element of each, every global access guarded.
pub(super) mod footprint {
    use crate::matmul::Stage;
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, salt};
    use coalesce_kernels::matmul::{
        TILE, TILED_SHARED_FLOATS, row_major, tile_a_col, tile_b_row, tile_offset, tiled_coords,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |_, p, _| {
            let (m, n, _) = p.dims;
            ensure!(p.grid.0 * TILE >= n && p.grid.1 * TILE >= m, "grid covers the band");
            Ok(())
        },
        block,
        stores: |_, p, (bx, by), store| {
            let (m, n, _) = p.dims;
            for ty in 0..p.block.1 {
                for tx in 0..p.block.0 {
                    let (row, col) = tiled_coords(bx, by, tx, ty);
                    if row < m && col < n {
                        store(row, col);
                    }
                }
            }
        },
    };

    /// Three corner threads and one more, each at the first k tile, the last and one between
    /// (the loop's, and the prefetch's of tile t + 1 < tiles).
    fn block(_: &Stage, p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let tiles = k.div_ceil(TILE);
        let r = salt(probe, (bx, by));
        let picked = ((r % u64::from(TILE)) as u32, ((r >> 8) % u64::from(TILE)) as u32);
        for (tx, ty) in [(0, 0), (TILE - 1, TILE - 1), (TILE - 1, 0), picked] {
            let (row, col) = tiled_coords(bx, by, tx, ty);
            ensure!(tile_offset(ty, tx) < TILED_SHARED_FLOATS / 2);
            for t in [0, tiles - 1, ((r >> 16) % u64::from(tiles)) as u32] {
                let (ac, br) = (tile_a_col(t, tx), tile_b_row(t, ty));
                if row < m && ac < k {
                    touch(Matrix::A, row_major(row.into(), ac.into(), k64), 1)?;
                }
                if br < k && col < n {
                    touch(Matrix::B, row_major(br.into(), col.into(), n64), 1)?;
                }
            }
            if row < m && col < n {
                touch(Matrix::C, row_major(row.into(), col.into(), n64), 1)?;
            }
        }
        Ok(())
    }
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
