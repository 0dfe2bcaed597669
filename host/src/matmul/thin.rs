//! Stage 13, thin (n ≤ 8, any m and k): a few columns of B meet all of A, so the multiply is A
//! read once. A warp streams two rows of A (512 contiguous bytes a load), B's rows for the block's
//! chunk of k are staged in shared memory column by column, so that lanes read them as 16-byte
//! vectors without conflicts, and each lane's sums meet in a shuffle tree at the end.
//!
//! The host side: the launch.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::thin::REPLAY;
use coalesce_kernels::matmul::{THIN_ROWS, THIN_SHARED_BYTES, THIN_THREADS, matmul_thin, thin_grid};

/// Shapes checked for the thin kernel besides the general ones: whole chunks of k and a partial
/// last one, k below one step, k not a multiple of 4 (A a float at a time), n of 1, 3, 8 and past
/// 8 (two column blocks), m not a multiple of 16.
const THIN_SHAPES: [(usize, usize, usize); 6] =
    [(4096, 8, 1024), (1000, 1, 1030), (33, 3, 5), (17, 9, 513), (300, 8, 4099), (4111, 2, 64)];

/// Stage 13's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Thin,
    kernel: matmul_thin,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: THIN_ROWS,
    launch: |_, m, n, _| launch(m, n),
    replay: REPLAY,
    lesson: Lesson {
        summary: "n <= 8: a warp streams two rows of A in 512-byte loads, B's chunk staged column-major in shared memory",
        // A column of B and eight against 4096² of A, the thin shapes of the matmul shapes
        // sweep; checked at eight.
        bench: Bench::Shapes { sweep: &[(4096, 1, 4096), (4096, 8, 4096)], check: &[1] },
        checks: &[&CHECK_SHAPES, &THIN_SHAPES],
    },
};

/// Blocks of [`THIN_ROWS`] rows by 8 columns, each with its chunk of B in shared memory; the
/// kernel clamps rows of A and guards every other global access.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { grid: thin_grid(m, n), block: (THIN_THREADS, 1), shared_bytes: THIN_SHARED_BYTES, cluster: 1 }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn thin_plans_sixteen_rows_a_block() {
        let (l, _) = plan_of(Method::Thin, (4096, 8, 4096), (4096 * 4096, 4096 * 8, 4096 * 8)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((1, 256), (256, 1), 8192));
        let (l, _) = plan_of(Method::Thin, (17, 9, 3), (17 * 3, 3 * 9, 17 * 9)).unwrap();
        assert_eq!(l.grid, (2, 2));
    }
}
