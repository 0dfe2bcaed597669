//! Matrix transpose, `out (cols × rows) = inᵀ` for a row-major `in (rows × cols)`, in 32 × 32
//! tiles processed by (32, 8) blocks (each thread handles 4 rows of its tile). The progression:
//! a tiled copy of the same shape (the ceiling), the naive transpose, a shared-memory tile, and
//! the same tile padded to 33 columns.

/// Tile side.
pub const TILE: u32 = 32;
/// Rows of threads per block: each thread moves TILE / BLOCK_ROWS elements per tile.
pub const BLOCK_ROWS: u32 = 8;
/// Row pitch (in floats) of the plain shared tile: a column read hits one bank 32 times.
pub const PITCH: u32 = TILE;
/// Row pitch of the padded tile: column `c` of row `r` lands in bank `(r + c) % 32`.
pub const PITCH_PADDED: u32 = TILE + 1;

/// Grid of a `rows × cols` input: one block per tile, x along columns.
pub const fn grid(rows: u32, cols: u32) -> (u32, u32) {
    (cols.div_ceil(TILE), rows.div_ceil(TILE))
}

/// Where element (r, c) of the input lands in the output.
#[inline(always)]
pub const fn transposed_index(r: u32, c: u32, rows: u32) -> u64 {
    c as u64 * rows as u64 + r as u64
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{shared, thread};

    /// Tile origin and this thread's lane/row inside it.
    #[inline(always)]
    fn coords() -> (u32, u32, u32, u32) {
        (thread::block_idx_x() * TILE, thread::block_idx_y() * TILE, thread::thread_idx_x(), thread::thread_idx_y())
    }

    /// Calls `f(r, c)` for each element (r, c) of the input that this thread handles in its
    /// block's tile (TILE / BLOCK_ROWS rows, one column), skipping those outside the matrix.
    #[inline(always)]
    fn for_my_tile_elements(rows: u32, cols: u32, mut f: impl FnMut(u32, u32)) {
        let (x0, y0, tx, ty) = coords();
        let c = x0 + tx;
        let mut j = 0;
        while j < TILE {
            let r = y0 + ty + j;
            if r < rows && c < cols {
                f(r, c);
            }
            j += BLOCK_ROWS;
        }
    }

    /// Tiled copy, `out = in`, with the transpose's tiling: reads and writes both coalesced
    /// (4 sectors per warp access). The bandwidth a transpose can at best reach.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn transpose_copy(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        for_my_tile_elements(rows, cols, |r, c| {
            let i = r as usize * cols as usize + c as usize;
            // SAFETY: r < rows, c < cols; the launcher checked both buffers hold rows*cols.
            unsafe { *output.add(i) = *input.add(i) };
        });
    }

    /// Naive transpose: reads along rows (coalesced), writes down columns, so each warp store
    /// scatters over 32 rows of the output: 32 sectors for 128 useful bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn transpose_naive(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        for_my_tile_elements(rows, cols, |r, c| {
            let i = r as usize * cols as usize + c as usize;
            // SAFETY: r < rows, c < cols; the launcher checked both buffers hold rows*cols.
            unsafe { *output.add(transposed_index(r, c, rows) as usize) = *input.add(i) };
        });
    }

    /// # Safety
    /// Both buffers hold `rows * cols` floats and the launch has `TILE * P` floats of
    /// dynamic shared memory (checked by the launcher).
    #[inline(always)]
    unsafe fn through_shared<const P: u32>(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let tile = shared::dynamic::<f32>();
        let (x0, y0, tx, ty) = coords();
        for_my_tile_elements(rows, cols, |r, c| {
            let at = (r - y0) * P + (c - x0);
            // SAFETY: r < rows, c < cols; at < TILE * P, the shared memory launched.
            unsafe { *tile.add(at as usize) = *input.add(r as usize * cols as usize + c as usize) };
        });
        thread::sync_threads();
        let mut j = 0;
        while j < TILE {
            // Output row = input column x0 + ty + j; output column = input row y0 + tx.
            let (r, c) = (y0 + tx, x0 + ty + j);
            if r < rows && c < cols {
                // SAFETY: in bounds as above; tx * P + ty + j < TILE * P.
                unsafe { *output.add(transposed_index(r, c, rows) as usize) = *tile.add((tx * P + ty + j) as usize) };
            }
            j += BLOCK_ROWS;
        }
    }

    /// Shared-memory tile: global reads and writes both coalesced, but the column read of the
    /// tile (lane stride 32 words) is a 32-way bank conflict.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn transpose_shared(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded launcher guarantees (TILE * PITCH floats of shared memory).
        unsafe { through_shared::<PITCH>(input, output, rows, cols) }
    }

    /// Padded tile (33 floats a row): the column read spreads over all 32 banks, conflict-free,
    /// for 128 extra bytes of shared memory.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn transpose_padded(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded launcher guarantees (TILE * PITCH_PADDED floats of shared memory).
        unsafe { through_shared::<PITCH_PADDED>(input, output, rows, cols) }
    }
}
