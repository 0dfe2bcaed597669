//! Which element a thread handles at each step. Every variant computes `out = in + 1` over
//! the same array with the same number of threads; only the assignment of elements changes.
//!
//! 1-D: each of `T` threads handles `per_thread` elements, either a contiguous chunk of its own
//! or every `T`-th element. 2-D: a (32, 8) block over a row-major matrix whose lanes run along
//! x (along a row) or along y (down a column).
//!
//! These are lesson kernels: sizes and coordinates are `u32`, counts below 2^31
//! (`MAX_ELEMENTS_32`).

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::thread;

/// Threads per block of the 1-D variants.
pub const BLOCK: u32 = 256;
/// The 2-D block: 32 lanes wide, 8 rows tall (256 threads).
pub const BLOCK_2D: (u32, u32) = (32, 8);
/// Largest elements-per-thread of the sweep.
pub const MAX_PER_THREAD: u32 = 128;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "warps must not straddle blocks");
// One warp is one row of the 2-D block: its lanes differ only in `thread.0`, which `along_x`
// maps to consecutive columns and `along_y` to consecutive rows. That is the whole lesson.
const _: () = assert!(BLOCK_2D.0 == crate::WARP_SIZE, "a warp is one row of the 2-D block");
const _: () = assert!(BLOCK_2D.0 * BLOCK_2D.1 == BLOCK, "1-D and 2-D variants run equal blocks");

/// Threads of a 1-D walk over `n` elements, `per_thread` each (`n` is a multiple of
/// `per_thread`; the plan checks it). `per_thread == 0` (never launched) gives 0 threads, so the
/// kernels carry no division-by-zero path.
#[inline(always)]
pub const fn walk_threads(n: u32, per_thread: u32) -> u32 {
    match n.checked_div(per_thread) {
        Some(threads) => threads,
        None => 0,
    }
}

/// Element thread `t` of `threads` handles at step `k` when each owns a contiguous chunk.
#[inline(always)]
pub const fn chunked_index(t: u32, k: u32, per_thread: u32, _threads: u32) -> u64 {
    t as u64 * per_thread as u64 + k as u64
}

/// Element thread `t` of `threads` handles at step `k` when threads interleave.
#[inline(always)]
pub const fn interleaved_index(t: u32, k: u32, _per_thread: u32, threads: u32) -> u64 {
    k as u64 * threads as u64 + t as u64
}

/// (row, col) a thread of a 2-D launch handles when its lane index runs along x (coalesced)...
#[inline(always)]
pub const fn along_x(block: (u32, u32), thread: (u32, u32)) -> (u32, u32) {
    (block.1 * BLOCK_2D.1 + thread.1, block.0 * BLOCK_2D.0 + thread.0)
}

/// ... or along y: consecutive lanes walk down a column, `cols * 4` bytes apart.
#[inline(always)]
pub const fn along_y(block: (u32, u32), thread: (u32, u32)) -> (u32, u32) {
    (block.1 * BLOCK_2D.0 + thread.0, block.0 * BLOCK_2D.1 + thread.1)
}

/// Where element `(r, c)` of a row-major `? × cols` matrix lives.
#[inline(always)]
pub const fn matrix_index(r: u32, c: u32, cols: u32) -> u64 {
    r as u64 * cols as u64 + c as u64
}

/// Blocks of the 2-D launch over a `rows × cols` matrix for `along_x` (for `along_y` swap the
/// roles of the block's sides).
pub const fn grid_2d(rows: u32, cols: u32, lanes_along_x: bool) -> (u32, u32) {
    if lanes_along_x {
        (cols.div_ceil(BLOCK_2D.0), rows.div_ceil(BLOCK_2D.1))
    } else {
        (cols.div_ceil(BLOCK_2D.1), rows.div_ceil(BLOCK_2D.0))
    }
}

kernel! {
    /// Each thread walks its own contiguous chunk (`chunked_index`): at every step the warp's 32
    /// addresses are `4 * per_thread` bytes apart, so a warp request needs `min(32, 4 *
    /// per_thread)` sectors for 128 useful bytes: 32 from 8 elements per thread on.
    pub unsafe fn access_order_chunked(input: *const f32, output: *mut f32, n: u32, per_thread: u32) {
        // SAFETY: forwarded plan guarantees.
        unsafe { device::walk(input, output, n, per_thread, chunked_index) }
    }
}

kernel! {
    /// Threads interleave (`interleaved_index`): changes only which element step `k` takes, so at
    /// every step the warp reads 128 contiguous bytes (4 sectors), whatever `per_thread` is.
    pub unsafe fn access_order_interleaved(input: *const f32, output: *mut f32, n: u32, per_thread: u32) {
        // SAFETY: forwarded plan guarantees.
        unsafe { device::walk(input, output, n, per_thread, interleaved_index) }
    }
}

kernel! {
    /// 2-D block whose lanes run along a row (`along_x`): changes the launch from 1-D threads to
    /// (32, 8) blocks over a matrix, one element per thread. One warp touches 128 contiguous
    /// bytes, 4 sectors per access.
    pub unsafe fn access_order_block_x(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees.
        unsafe { device::walk_2d(input, output, rows, cols, along_x) }
    }
}

kernel! {
    /// 2-D block whose lanes run down a column (`along_y`): changes only the map, so a warp's
    /// 32 addresses lie a row (`4 * cols` bytes) apart: 32 sectors per access for 128 useful bytes.
    pub unsafe fn access_order_block_y(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees.
        unsafe { device::walk_2d(input, output, rows, cols, along_y) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// # Safety
    /// `input` and `output` hold `n` floats and `n` is a multiple of `per_thread` (checked by
    /// the plan). Any block size works: threads past `walk_threads` do nothing.
    #[inline(always)]
    pub(super) unsafe fn walk(
        input: *const f32,
        output: *mut f32,
        n: u32,
        per_thread: u32,
        index: fn(u32, u32, u32, u32) -> u64,
    ) {
        // The plan never passes 0 (`walk_threads` would give 0 threads). Returning here, before
        // the division, is what keeps the loop below compiled exactly as before `walk_threads`
        // existed: LLVM then knows `per_thread != 0` and drops `walk_threads`'s own guard.
        if per_thread == 0 {
            return;
        }
        let threads = walk_threads(n, per_thread);
        let t = thread::index_1d();
        if t < threads {
            let mut k = 0;
            while k < per_thread {
                let i = index(t, k, per_thread, threads) as usize;
                // SAFETY: t < threads and k < per_thread, so i < threads * per_thread == n.
                unsafe { *output.add(i) = *input.add(i) + 1.0 };
                k += 1;
            }
        }
    }

    /// # Safety
    /// Both buffers hold `rows * cols` floats and the block is `BLOCK_2D` (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn walk_2d(
        input: *const f32,
        output: *mut f32,
        rows: u32,
        cols: u32,
        map: fn((u32, u32), (u32, u32)) -> (u32, u32),
    ) {
        let (r, c) =
            map((thread::block_idx_x(), thread::block_idx_y()), (thread::thread_idx_x(), thread::thread_idx_y()));
        if r < rows && c < cols {
            let i = matrix_index(r, c, cols) as usize;
            // SAFETY: r < rows and c < cols, so i < rows * cols.
            unsafe { *output.add(i) = *input.add(i) + 1.0 };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_visit_every_element_once() {
        let (threads, per) = (6u32, 4u32);
        assert_eq!(walk_threads(threads * per, per), threads);
        assert_eq!(walk_threads(24, 0), 0);
        for index in [chunked_index, interleaved_index] {
            let mut seen: Vec<u64> =
                (0..threads).flat_map(|t| (0..per).map(move |k| index(t, k, per, threads))).collect();
            seen.sort();
            assert_eq!(seen, (0..24).collect::<Vec<u64>>());
        }
        // The seed's example: thread 1 of 4 with 3 elements each.
        assert_eq!([0, 1, 2].map(|k| chunked_index(1, k, 3, 4)), [3, 4, 5]);
        assert_eq!([0, 1, 2].map(|k| interleaved_index(1, k, 3, 4)), [1, 5, 9]);
    }

    #[test]
    fn two_d_maps_cover_the_matrix() {
        let (rows, cols) = (70u32, 45u32);
        for (lanes_x, map) in [(true, along_x as fn(_, _) -> _), (false, along_y)] {
            let (gx, gy) = grid_2d(rows, cols, lanes_x);
            let mut hits = vec![0u8; (rows * cols) as usize];
            for bx in 0..gx {
                for by in 0..gy {
                    for tx in 0..BLOCK_2D.0 {
                        for ty in 0..BLOCK_2D.1 {
                            let (r, c) = map((bx, by), (tx, ty));
                            if r < rows && c < cols {
                                hits[matrix_index(r, c, cols) as usize] += 1;
                            }
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "lanes along x: {lanes_x}");
        }
        // Lanes 0 and 1 of a warp: same row (x) or same column (y).
        assert_eq!(along_x((0, 0), (1, 0)), (0, 1));
        assert_eq!(along_y((0, 0), (1, 0)), (1, 0));
    }
}
