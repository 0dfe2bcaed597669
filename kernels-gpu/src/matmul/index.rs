//! The index math every matmul stage shares: 64-bit row-major addressing, how many rows one
//! launch may take, and the 16-byte shared-memory vector the fragment loads read.

use crate::launch::MAX_GRID_Y;

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
pub(crate) struct V4(pub(crate) [f32; 4]);

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::matmul::TILE;

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
    pub(in crate::matmul) fn grid(gx: u32, gy: u32, block: (u32, u32)) -> impl Iterator<Item = (u32, u32, u32, u32)> {
        (0..gy).flat_map(move |by| {
            (0..gx).flat_map(move |bx| (0..block.1).flat_map(move |ty| (0..block.0).map(move |tx| (bx, by, tx, ty))))
        })
    }
}
