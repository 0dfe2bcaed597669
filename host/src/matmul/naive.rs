//! Stage 1, naive (the baseline): one output a thread, its row of A and column of B read from
//! global memory. A warp's B load is 4 sectors, its A load 1 (broadcast): 1 FLOP a global load.
//!
//! The host side: the naive kernel's launch.
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{NAIVE_BLOCK, matmul_naive, naive_grid};

/// Stage 1's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Naive,
    kernel: matmul_naive,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: NAIVE_BLOCK.1,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "one output a thread, operands straight from global memory",
        bench: Bench::Fixed,
        checks: &[&CHECK_SHAPES],
    },
};

/// One thread an output of C, in blocks of [`NAIVE_BLOCK`]: partial blocks at the edges, the
/// kernel guards `row < m && col < n`.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { grid: naive_grid(m, n), block: NAIVE_BLOCK, shared_bytes: 0, cluster: 1 }
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90):
    //! - `matmul_naive`: per k step one 4-byte `LDG.E` of A (the warp's 32 lanes share a row: one
    //!   address) and one of B (32 consecutive columns), unrolled but never widened; one `STG.E`.

    use crate::error::Result;
    use crate::model::matmul::{Blocks, Launched, Replay, SECTOR_FLOATS, store_c};
    use crate::model::{Model, Warp, lanes_where};
    use coalesce_kernels::matmul::{NAIVE_BLOCK, naive_coords, row_major};

    fn naive_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
        let rc = |lane| {
            let (tx, ty) = w.thread(lane);
            naive_coords(w.block.0, w.block.1, tx, ty)
        };
        let active = lanes_where(w.lanes, |lane| {
            let (r, c) = rc(lane);
            r < l.m && c < l.n
        });
        let (n, k) = (u64::from(l.n), u64::from(l.k));
        for i in 0..k {
            model.load(l.a, 4, active, |lane| 4 * row_major(rc(lane).0.into(), i, k))?;
            model.load(l.b, 4, active, |lane| 4 * row_major(i, rc(lane).1.into(), n))?;
        }
        store_c(model, l, w, rc)?;
        Ok(())
    }

    /// Stage 1's replay: a block of [`NAIVE_BLOCK`] outputs; a thread walks k a float at a time, and
    /// a sector of A's row holds 8 of them (the tile stream's step).
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: |_| (NAIVE_BLOCK.1, NAIVE_BLOCK.0, SECTOR_FLOATS as u32),
            origin: |_, (bx, by)| Ok(naive_coords(bx, by, 0, 0)),
            warp: |model, l, _, w| naive_warp(model, l, w),
        }),
        row: None,
    };
}

/// What the naive kernel's threads touch: one output each, under `row < m && col < n`.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, one_a_thread, salt};
    use coalesce_kernels::matmul::{NAIVE_BLOCK, naive_coords, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            let (m, n, _) = p.dims;
            ensure!(p.grid.0 * NAIVE_BLOCK.0 >= n && p.grid.1 * NAIVE_BLOCK.1 >= m, "grid covers the band");
            Ok(())
        },
        block,
        stores: |p, block, store| one_a_thread(p, block, naive_coords, store),
    };

    /// The block's corner threads and one more, each at k = 0, k - 1 and one between.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let r = salt(probe, (bx, by));
        let picked = ((r % u64::from(NAIVE_BLOCK.0)) as u32, ((r >> 8) % u64::from(NAIVE_BLOCK.1)) as u32);
        for (tx, ty) in [(0, 0), (NAIVE_BLOCK.0 - 1, NAIVE_BLOCK.1 - 1), picked] {
            let (row, col) = naive_coords(bx, by, tx, ty);
            if row < m && col < n {
                for i in [0, k64 - 1, (r >> 16) % k64] {
                    touch(Matrix::A, row_major(row.into(), i, k64), 1)?;
                    touch(Matrix::B, row_major(i, col.into(), n64), 1)?;
                }
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
    fn naive_plans_one_thread_an_output() {
        let (l, _) = plan_of(Method::Naive, (33, 65, 7), (231, 455, 2145)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 5), (32, 8), 0));
    }
}
