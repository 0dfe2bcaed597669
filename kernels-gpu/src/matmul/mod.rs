//! FP32 matrix multiply `C (m × n) = A (m × k) · B (k × n)`, all row-major. The progression:
//! naive (one output a thread, operands from global memory), shared-memory tiles, tiles with
//! the next one prefetched into registers (double buffering), a register-blocked kernel
//! where each thread computes an 8 × 8 block from 16-byte shared-memory loads, and warp-tiled
//! kernels (the library's: [`WarpTile`]) that lay each warp's lanes out for one-wavefront
//! shared loads, walk k 16 at a time and load the next fragments during the FMAs, with a
//! small-grid shape and a guarded one for any shape. On Hopper, two more: a 128 × 256 tile of
//! 8 × 16 outputs a thread fed by a `cp.async` ring (`matmul_warptile_async`), and stream-K:
//! that kernel over the whole waves of tiles (`matmul_warptile_streamk_waves`), then a row of
//! blocks sharing the last, partly empty wave out by k iteration (`matmul_warptile_streamk`,
//! [`StreamK`]).
//!
//! Every kernel takes `(a, b, c, m, n, k)` and indexes global memory in 64 bits
//! ([`row_major`]): m·k, k·n and m·n may pass 2^32. Per-thread coordinates (rows, columns,
//! k positions) stay `u32`, which cannot wrap: a column is below `ceil(n / 32) * 32 <= 2^32`, a
//! row below the rows of one launch, which the host keeps to [`MAX_GRID_Y`] blocks by splitting
//! C and A into row bands ([`band_rows`]).
//!
//! One file a stage, in teaching order (as siboehm's SGEMM_CUDA numbers its kernels): `naive`,
//! `tiled`, `prefetch`, `cp_async` (Hopper), `regblock`, `warptile` (with its small-grid and
//! guarded shapes and their sm_90 builds), `async_ring`, `stream_k`, `spread_ring` (the library's
//! kernel on Hopper: async_ring's copies spread over the k steps), `spread_stream_k` and
//! `spread_edge` (that schedule for any shape; all Hopper). Each
//! holds its stage's kernels, their device code, its index math and its tests; this module the
//! index math every stage shares. Every item is re-exported here, at `matmul::`.

use crate::launch::MAX_GRID_Y;

mod naive;
pub use naive::*;
mod tiled;
pub use tiled::*;
mod prefetch;
pub use prefetch::*;
mod cp_async;
pub use cp_async::*;
mod regblock;
pub use regblock::*;
mod warptile;
pub use warptile::*;
mod async_ring;
pub use async_ring::*;
mod stream_k;
pub use stream_k::*;
mod spread_ring;
pub use spread_ring::*;
mod spread_stream_k;
pub use spread_stream_k::*;
mod spread_edge;
pub use spread_edge::*;

/// Element `(r, c)` of a row-major matrix of `cols` columns: 64-bit, for every matrix of every
/// kernel here.
#[inline(always)]
pub const fn row_major(r: u64, c: u64, cols: u64) -> u64 {
    r * cols + c
}

/// Rows of C (and A) one launch of a kernel whose blocks cover `block_rows` rows may take: the
/// grid's y dimension is at most [`MAX_GRID_Y`]. The host splits taller matrices into bands.
/// Past `u32::MAX` (blocks of more than 65537 rows), `u32::MAX`: every `u32` row count fits.
pub const fn band_rows(block_rows: u32) -> u32 {
    MAX_GRID_Y.saturating_mul(block_rows)
}

/// 16 bytes of shared memory, so shared loads of it are `ld.shared.v4` (the register-blocked and
/// warp-tiled kernels' fragments).
#[cfg(target_arch = "nvptx64")]
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct V4([f32; 4]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_is_64_bit() {
        assert_eq!(row_major(2, 3, 10), 23);
        assert_eq!(row_major(u32::MAX as u64, 5, u32::MAX as u64), u32::MAX as u64 * u32::MAX as u64 + 5);
    }

    #[test]
    fn band_rows_fill_the_grid_height() {
        assert_eq!(band_rows(TILE), 2_097_120);
        // Blocks taller than 65537 rows: every u32 row count (it overflowed).
        assert_eq!(band_rows(1 << 20), u32::MAX);
    }

    /// Every `(bx, by, tx, ty)` of a grid of `block`-sized blocks.
    pub(super) fn grid(gx: u32, gy: u32, block: (u32, u32)) -> impl Iterator<Item = (u32, u32, u32, u32)> {
        (0..gy).flat_map(move |by| {
            (0..gx).flat_map(move |bx| (0..block.1).flat_map(move |ty| (0..block.0).map(move |tx| (bx, by, tx, ty))))
        })
    }
}
