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
