//! Stage 2, tiled: blocks stage 32 × 32 tiles of A and B in shared memory for the inner loop.
//! 32 FLOP a global load instead of 1; costs two barriers a tile and 8 KiB of shared memory.

#[cfg(target_arch = "nvptx64")]
use super::index::row_major;
use crate::kernel;
use crate::launch::{DEFAULT_SHARED_BYTES, MAX_BLOCK_THREADS};
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, shared, thread};

// The tile loops are unrolled by the prelude's `unroll_tile!` (32 steps) and `unroll_16!`.
const _: () = assert!(TILE == 32, "unroll_tile! lists 32 steps");
/// Tile side of the tiled kernels (and their 32 × 32 thread blocks).
pub const TILE: u32 = 32;
/// Shared memory of the tiled kernels: one tile of A, then one of B.
pub const TILED_SHARED_FLOATS: u32 = 2 * TILE * TILE;

const _: () = assert!(TILE * TILE <= MAX_BLOCK_THREADS, "one thread per tile element");
const _: () = assert!(TILED_SHARED_FLOATS * 4 <= DEFAULT_SHARED_BYTES, "tiled shared memory must not need opt-in");

/// Grid of the tiled kernels.
pub const fn tiled_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(TILE), m.div_ceil(TILE))
}

/// `(row, col)` of the output thread `(tx, ty)` of block `(bx, by)` of a tiled kernel computes.
#[inline(always)]
pub const fn tiled_coords(bx: u32, by: u32, tx: u32, ty: u32) -> (u32, u32) {
    (by * TILE + ty, bx * TILE + tx)
}

/// Column of A that thread column `tx` stages for tile `t` (its row is the thread's output row).
#[inline(always)]
pub const fn tile_a_col(t: u32, tx: u32) -> u32 {
    t * TILE + tx
}

/// Row of B that thread row `ty` stages for tile `t` (its column is the thread's output column).
#[inline(always)]
pub const fn tile_b_row(t: u32, ty: u32) -> u32 {
    t * TILE + ty
}

/// Float offset of `(r, c)` inside one `TILE × TILE` shared tile.
#[inline(always)]
pub const fn tile_offset(r: u32, c: u32) -> u32 {
    r * TILE + c
}

kernel! {
    /// Shared-memory tiles: each block stages 32 × 32 tiles of A and B, a warp loading 128
    /// contiguous bytes of one row of each (4 sectors, 5 when the row is not 32-byte aligned),
    /// so each operand is read from global memory once per block instead of once per thread.
    /// Changes from naive: the inner loop reads shared memory (A a broadcast, B one bank per
    /// lane: no conflicts). Barriers after the store and after the use.
    pub unsafe fn matmul_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `tiled`).
        unsafe { device::tiled::<false>(a, b, c, m, n, k) }
    }
}

/// The tiled kernels' device code, shared with `prefetch` (its `PREFETCH` form).
#[cfg(target_arch = "nvptx64")]
pub(super) mod device {
    use super::*;

    /// Element (r, i) of a `rows × cols` row-major matrix, 0 outside it.
    ///
    /// # Safety
    /// `p` holds `rows * cols` floats.
    #[inline(always)]
    unsafe fn at(p: *const f32, r: u32, i: u32, rows: u32, cols: u32) -> f32 {
        // SAFETY: r < rows and i < cols, so the index is below rows * cols.
        if r < rows && i < cols { unsafe { *p.add(row_major(r as u64, i as u64, cols as u64) as usize) } } else { 0.0 }
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is (TILE, TILE) threads with
    /// `TILED_SHARED_FLOATS` floats of shared memory (checked by the plan).
    #[inline(always)]
    pub(in crate::matmul) unsafe fn tiled<const PREFETCH: bool>(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let s = shared::dynamic::<f32>();
        // SAFETY: the launch has 2 * TILE * TILE floats of shared memory; B's tile is the second half.
        let (sa, sb) = (s, unsafe { s.add((TILE * TILE) as usize) });
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (row, col) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), tx, ty);
        let here = tile_offset(ty, tx) as usize;
        let tiles = k.div_ceil(TILE);
        let mut acc = 0.0f32;
        // SAFETY (whole body): `at` checks global bounds; shared indices < TILE * TILE because
        // tx, ty, i < TILE.
        unsafe {
            // With PREFETCH the registers always hold the tile to be stored next.
            let mut next_a = if PREFETCH { at(a, row, tile_a_col(0, tx), m, k) } else { 0.0 };
            let mut next_b = if PREFETCH { at(b, tile_b_row(0, ty), col, k, n) } else { 0.0 };
            let mut t = 0;
            while t < tiles {
                if PREFETCH {
                    *sa.add(here) = next_a;
                    *sb.add(here) = next_b;
                } else {
                    *sa.add(here) = at(a, row, tile_a_col(t, tx), m, k);
                    *sb.add(here) = at(b, tile_b_row(t, ty), col, k, n);
                }
                // The tile is complete before anyone reads it.
                thread::sync_threads();
                if PREFETCH && t + 1 < tiles {
                    // Issued before the arithmetic, so the loads' latency hides behind it.
                    next_a = at(a, row, tile_a_col(t + 1, tx), m, k);
                    next_b = at(b, tile_b_row(t + 1, ty), col, k, n);
                }
                // Straight-line, as nvcc compiles the CUDA C twin's constant 32-trip loop: rolled,
                // LLVM unrolls it only 4 times and pays 5 loop-control instructions per 4 FMAs.
                unroll_tile!(i => {
                    acc = fma(*sa.add(tile_offset(ty, i) as usize), *sb.add(tile_offset(i, tx) as usize), acc);
                });
                // Everyone is done reading the tile before it is overwritten.
                thread::sync_threads();
                t += 1;
            }
            if row < m && col < n {
                *c.add(row_major(row as u64, col as u64, n as u64) as usize) = acc;
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
    fn tiled_threads_cover_every_output_once() {
        let (m, n) = (19u32, 45u32);
        let mut hits = vec![0u8; (m * n) as usize];
        let (gx, gy) = tiled_grid(m, n);
        for (bx, by, tx, ty) in grid(gx, gy, (TILE, TILE)) {
            let (r, c) = tiled_coords(bx, by, tx, ty);
            if r < m && c < n {
                hits[row_major(r as u64, c as u64, n as u64) as usize] += 1;
            }
            // Shared offsets stay inside one tile; each thread owns its own slot.
            assert!(tile_offset(ty, tx) < TILE * TILE);
        }
        assert!(hits.iter().all(|&h| h == 1));
        // The tiles a block stages walk k in order: A column t * TILE + tx, B row t * TILE + ty.
        assert_eq!((tile_a_col(2, 5), tile_b_row(2, 7)), (69, 71));
        assert_eq!(tiled_grid(33, 65), (3, 2));
    }
}
