//! Stage 2, tiled: blocks stage 32 × 32 tiles of A and B in shared memory for the inner loop.
//! 32 FLOP a global load instead of 1; costs two barriers a tile and 8 KiB of shared memory.
//!
//! The host side: the tiled kernels' launch (`prefetch`'s too).
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{TILE, TILED_SHARED_FLOATS, matmul_tiled, tiled_grid};

/// Stage 2's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Tiled,
    kernel: matmul_tiled,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: TILE,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
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

#[cfg(feature = "model")]
pub(super) mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90):
    //! - `matmul_tiled` / `matmul_prefetch`: per tile one `LDG.E` of A and one of B under `at`'s
    //!   bounds check, an `STS` of each into its tile (unconditional), and the inner product over the
    //!   tile as 8 trips of one `LDS.128` of A's tile row (ptxas merges the PTX's four
    //!   `ld.shared.b32` of `tile_offset(ty, i .. i + 4)`, 16-byte aligned since `i % 4 == 0`, into
    //!   one; all lanes share `ty`, so one address) and four `LDS` of B's tile column; one `STG.E`.
    //!   The prefetching kernel issues the same loads in another order.

    use crate::error::Result;
    use crate::model::matmul::{Blocks, Launched, Replay, store_c};
    use crate::model::{Model, Warp, lanes_where};
    use coalesce_kernels::matmul::{TILE, row_major, tile_a_col, tile_b_row, tile_offset, tiled_coords};

    pub(crate) fn tiled_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
        let t = |lane| w.thread(lane);
        let rc = |lane| {
            let (tx, ty) = t(lane);
            tiled_coords(w.block.0, w.block.1, tx, ty)
        };
        let b_tile = TILE * TILE * 4;
        for tile in 0..l.k.div_ceil(TILE) {
            element_loads(model, l, w, tile)?;
            let here = |lane| {
                let (tx, ty) = t(lane);
                4 * tile_offset(ty, tx)
            };
            model.shared_store(4, w.lanes, here)?;
            model.shared_store(4, w.lanes, |lane| b_tile + here(lane))?;
            for i in (0..TILE).step_by(4) {
                model.shared_load(16, w.lanes, |lane| 4 * tile_offset(t(lane).1, i))?;
                for q in i..i + 4 {
                    model.shared_load(4, w.lanes, |lane| b_tile + 4 * tile_offset(q, t(lane).0))?;
                }
            }
        }
        store_c(model, l, w, rc)?;
        Ok(())
    }

    /// One warp's 4-byte loads of tile `tile` of A and of B, each lane's guarded as the kernels'
    /// `at(a, row, tile_a_col(t, tx), m, k)` and `at(b, tile_b_row(t, ty), col, k, n)`: the tiled and
    /// prefetching kernels, and the cp.async kernel where its rows are not 16-byte vectors.
    pub(crate) fn element_loads(model: &mut Model, l: &Launched, w: &Warp, tile: u32) -> Result<()> {
        let t = |lane| w.thread(lane);
        let rc = |lane| {
            let (tx, ty) = t(lane);
            tiled_coords(w.block.0, w.block.1, tx, ty)
        };
        let (m, n, k) = (l.m, l.n, l.k);
        let a_at = |lane| (rc(lane).0, tile_a_col(tile, t(lane).0));
        let b_at = |lane| (tile_b_row(tile, t(lane).1), rc(lane).1);
        let a_on = lanes_where(w.lanes, |lane| a_at(lane).0 < m && a_at(lane).1 < k);
        let b_on = lanes_where(w.lanes, |lane| b_at(lane).0 < k && b_at(lane).1 < n);
        model.load(l.a, 4, a_on, |lane| 4 * row_major(a_at(lane).0.into(), a_at(lane).1.into(), k.into()))?;
        model.load(l.b, 4, b_on, |lane| 4 * row_major(b_at(lane).0.into(), b_at(lane).1.into(), n.into()))?;
        Ok(())
    }

    /// Stage 2's replay: a block a `TILE × TILE` tile of C, k a tile at a time.
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: |_| (TILE, TILE, TILE),
            origin: |_, (bx, by)| Ok(tiled_coords(bx, by, 0, 0)),
            warp: |model, l, _, w| tiled_warp(model, l, w),
        }),
        row: None,
    };
}

/// What the tiled kernels' threads touch (`prefetch`'s and `cp_async`'s too): a tile of A and
/// one of B staged by each thread's element of each, every global access guarded.
#[cfg(feature = "model")]
pub(super) mod footprint {
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, one_a_thread, salt};
    use coalesce_kernels::matmul::{
        TILE, TILED_SHARED_FLOATS, row_major, tile_a_col, tile_b_row, tile_offset, tiled_coords,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            let (m, n, _) = p.dims;
            ensure!(p.grid.0 * TILE >= n && p.grid.1 * TILE >= m, "grid covers the band");
            Ok(())
        },
        block,
        stores: |p, block, store| one_a_thread(p, block, tiled_coords, store),
    };

    /// Three corner threads and one more, each at the first k tile, the last and one between
    /// (the loop's, and the prefetch's of tile t + 1 < tiles).
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
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
