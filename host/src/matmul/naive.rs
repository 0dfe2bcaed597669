//! Stage 1, naive (the baseline): one output a thread, its row of A and column of B read from
//! global memory. A warp's B load is 4 sectors, its A load 1 (broadcast): 1 FLOP a global load.
//!
//! The host side: the naive kernel's launch.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::naive::REPLAY;
use coalesce_kernels::matmul::{NAIVE_BLOCK, matmul_naive, naive_grid};

/// Stage 1's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Naive,
    kernel: matmul_naive,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: NAIVE_BLOCK.1,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
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

/// What the naive kernel's threads touch: one output each, under `row < m && col < n`.
mod footprint {
    use crate::matmul::Stage;
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, salt};
    use coalesce_kernels::matmul::{NAIVE_BLOCK, naive_coords, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |_, p, _| {
            let (m, n, _) = p.dims;
            ensure!(p.grid.0 * NAIVE_BLOCK.0 >= n && p.grid.1 * NAIVE_BLOCK.1 >= m, "grid covers the band");
            Ok(())
        },
        block,
        stores: |_, p, (bx, by), store| {
            let (m, n, _) = p.dims;
            for ty in 0..p.block.1 {
                for tx in 0..p.block.0 {
                    let (row, col) = naive_coords(bx, by, tx, ty);
                    if row < m && col < n {
                        store(row, col);
                    }
                }
            }
        },
    };

    /// The block's corner threads and one more, each at k = 0, k - 1 and one between.
    fn block(_: &Stage, p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
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
