//! Stage 1, naive (the baseline): one output a thread, its row of A and column of B read from
//! global memory. A warp's B load is 4 sectors, its A load 1 (broadcast): 1 FLOP a global load.

#[cfg(target_arch = "nvptx64")]
use super::index::row_major;
use crate::kernel;
use crate::launch::MAX_BLOCK_THREADS;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, thread};

/// k steps the naive kernel loads ahead of its FMAs.
pub const NAIVE_UNROLL: u32 = 16;
/// Thread block of the naive kernel. (A 16 × 16 block, as in the CUDA C twin, measured within
/// 1.3% of this one on the H100: the block shape is not why naive trails its twin.)
pub const NAIVE_BLOCK: (u32, u32) = (32, 8);

const _: () = assert!(NAIVE_BLOCK.0 * NAIVE_BLOCK.1 <= MAX_BLOCK_THREADS, "naive block too large");
const _: () = assert!(NAIVE_BLOCK.0 == crate::WARP_SIZE, "a naive warp is one row of 32 columns");

/// Grid of the naive kernel.
pub const fn naive_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(NAIVE_BLOCK.0), m.div_ceil(NAIVE_BLOCK.1))
}

/// `(row, col)` of the output thread `(tx, ty)` of block `(bx, by)` of the naive kernel computes.
#[inline(always)]
pub const fn naive_coords(bx: u32, by: u32, tx: u32, ty: u32) -> (u32, u32) {
    let col = bx * NAIVE_BLOCK.0 + tx;
    let row = by * NAIVE_BLOCK.1 + ty;
    (row, col)
}

kernel! {
    /// Naive: thread (row, col) walks row `row` of A and column `col` of B in global memory.
    /// A warp is 32 consecutive columns of one row: its B loads and C stores are 128 contiguous
    /// bytes (4 sectors), its A load is one broadcast address (1 sector). Every operand is
    /// re-read from L2 by every thread that needs it (2k loads per 2k flops).
    pub unsafe fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let (row, col) =
            naive_coords(thread::block_idx_x(), thread::block_idx_y(), thread::thread_idx_x(), thread::thread_idx_y());
        if row < m && col < n {
            let (row, col, n, k) = (row as u64, col as u64, n as u64, k as u64);
            let mut acc = 0.0f32;
            // SAFETY: row < m, col < n, i < k, so each index is below m·k, k·n or m·n: the plan
            // checked the buffers hold exactly that many floats.
            unsafe {
                // 16 steps at a time, all 32 loads issued before the 16 FMAs (in the same order as
                // one step at a time, so the sum is bit-identical): nvcc compiles the CUDA C twin's
                // loop this way, and a latency-bound kernel runs as fast as the loads it keeps in
                // flight. Rolled, LLVM unrolls 8 steps and interleaves loads with the FMA chain.
                let mut i = 0;
                while i + NAIVE_UNROLL as u64 <= k {
                    let (mut av, mut bv) = ([0.0f32; NAIVE_UNROLL as usize], [0.0f32; NAIVE_UNROLL as usize]);
                    unroll_16!(j => {
                        av[j as usize] = *a.add(row_major(row, i + j as u64, k) as usize);
                        bv[j as usize] = *b.add(row_major(i + j as u64, col, n) as usize);
                    });
                    unroll_16!(j => {
                        acc = fma(av[j as usize], bv[j as usize], acc);
                    });
                    i += NAIVE_UNROLL as u64;
                }
                while i < k {
                    acc = fma(*a.add(row_major(row, i, k) as usize), *b.add(row_major(i, col, n) as usize), acc);
                    i += 1;
                }
                *c.add(row_major(row, col, n) as usize) = acc;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::index::row_major;
    use crate::matmul::index::tests::grid;

    #[test]
    fn naive_threads_cover_every_output_once() {
        let (m, n) = (19u32, 45u32);
        let mut hits = vec![0u8; (m * n) as usize];
        let (gx, gy) = naive_grid(m, n);
        for (bx, by, tx, ty) in grid(gx, gy, NAIVE_BLOCK) {
            let (r, c) = naive_coords(bx, by, tx, ty);
            if r < m && c < n {
                hits[row_major(r as u64, c as u64, n as u64) as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| h == 1));
        assert_eq!(naive_grid(9, 33), (2, 2));
    }
}
