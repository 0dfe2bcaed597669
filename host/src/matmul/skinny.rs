//! Stage 12, skinny (m ≤ 8, any n and k): one row of A meets all of B, so the multiply is B read
//! once. A block owns a slab of 8–32 columns of C for all of k; its lanes read B's rows across
//! the slab (whole sectors, each once), A's few rows are broadcasts, and the block's threads
//! split k and add their sums in shared memory in a fixed order.
//!
//! The host side: the slab width that fills the GPU, and the launch.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use crate::model::matmul::skinny::REPLAY;
use coalesce_kernels::matmul::{
    SKINNY_ROWS, SKINNY_SHARED_BYTES, matmul_skinny, skinny_block, skinny_grid, skinny_width,
};

/// Shapes checked for the skinny kernel besides the general ones: every slab width (32, 16 and
/// 8 columns on 132 SMs), k a whole step, not one, and below one, A's rows read 4 bytes at a
/// time (k not a multiple of 4), two block rows (m = 9), and columns past the last whole slab.
const SKINNY_SHAPES: [(usize, usize, usize); 6] =
    [(1, 4224, 512), (8, 2047, 1000), (3, 1000, 4099), (9, 300, 64), (8, 33, 5), (2, 8191, 7)];

/// Stage 12's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Skinny,
    kernel: matmul_skinny,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: SKINNY_ROWS,
    launch: |_, m, n, sms| launch(m, n, sms),
    replay: REPLAY,
    lesson: Lesson {
        summary: "m <= 8: a block a slab of B's columns for all of k, B read once in whole sectors, k split over threads",
        // A row of A and eight against 4096², the inference shapes of the matmul shapes
        // sweep; checked at eight.
        bench: Bench::Shapes { sweep: &[(1, 4096, 4096), (8, 4096, 4096)], check: &[1] },
        checks: &[&CHECK_SHAPES, &SKINNY_SHAPES],
    },
};

/// Blocks of [`SKINNY_ROWS`] rows by a slab of [`skinny_width`] columns (the widest whose
/// blocks leave at most a 16th of the `sms` multiprocessors idle), each with its threads' partial sums in
/// shared memory; the kernel clamps and guards every global access.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    let width = skinny_width(n, sms);
    Launch { grid: skinny_grid(m, n, width), block: skinny_block(width), shared_bytes: SKINNY_SHARED_BYTES, cluster: 1 }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn skinny_plans_slabs_that_fill_the_gpu() {
        // 4096 columns on 132 SMs: 128 slabs of 32 leave 4 idle, under a 16th.
        let (l, _) = plan_of(Method::Skinny, (8, 4096, 4096), (8 * 4096, 4096 * 4096, 8 * 4096)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((128, 1), (32, 16), 16384));
        let (l, _) = plan_of(Method::Skinny, (9, 100, 3), (9 * 3, 3 * 100, 9 * 100)).unwrap();
        assert_eq!((l.grid, l.block), ((13, 2), (8, 64)));
    }
}
