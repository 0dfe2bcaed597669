//! Matrix transpose, `out (cols × rows) = inᵀ` for a row-major `in (rows × cols)`, in 32 × 32
//! tiles processed by (32, 8) blocks (each thread handles 4 rows of its tile). The progression:
//! a tiled copy of the same shape (the ceiling), the naive transpose, a shared-memory tile, the
//! same tile padded to 33 columns, and a wide tile (64 × 64, 8-byte accesses, tiles visited down
//! columns) for even shapes, beside two copies with its accesses (tiles along rows, and down
//! columns as it reads them): the same transactions, and what walking down a column costs. In the Hopper module, the tile moved by the TMA through tensor maps
//! (`transpose_tma`).
//!
//! All four kernels launch a 1-D grid with one block per tile: block `b` takes row tile
//! `b / col_tiles` and column tile `b % col_tiles` ([`tile_origin`]). Consecutive blocks walk
//! along a row of tiles, the order a 2-D `(col tiles, row tiles)` grid would run them in, but the
//! number of row tiles is no longer capped by `gridDim.y` (65 535): any shape whose tile count
//! fits `gridDim.x` runs. Coordinates are `u32`, element indices 64-bit: any size.

use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{shared, thread};

pub mod elements;

/// Tile side.
pub const TILE: u32 = 32;
/// Rows of threads per block: each thread moves TILE / BLOCK_ROWS elements per tile.
pub const BLOCK_ROWS: u32 = 8;
/// Row pitch (in floats) of the plain shared tile: a column read hits one bank 32 times.
pub const PITCH: u32 = TILE;
/// Row pitch of the padded tile: column `c` of row `r` lands in bank `(r + c) % 32`.
pub const PITCH_PADDED: u32 = TILE + 1;

// A tile row is one warp (lanes = tx), so every global access of a warp is one 128-byte row
// segment of the input or of the output.
const _: () = assert!(TILE == crate::WARP_SIZE, "a warp is one tile row");
// Each thread takes rows ty, ty + BLOCK_ROWS, ... of its tile: they must cover it exactly.
const _: () = assert!(TILE.is_multiple_of(BLOCK_ROWS), "the block's rows step through the tile evenly");
const _: () = assert!(TILE * BLOCK_ROWS <= crate::launch::MAX_BLOCK_THREADS);
// The padded tile fits the dynamic shared memory a block gets without opting in.
const _: () = assert!(TILE * PITCH_PADDED * 4 <= DEFAULT_SHARED_BYTES);
// The padding is what spreads a tile column over the banks: pitch 33 is coprime to 32.
const _: () = assert!(PITCH == TILE && PITCH_PADDED % crate::WARP_SIZE == 1);

/// Threads per block of the TMA transpose (8 warps; each thread moves `TMA_STEPS` elements of
/// the 64 × 64 tile from the loaded boxes to the boxes to store).
pub const TMA_THREADS: u32 = 256;
/// Rows of one TMA box: a box is 64 rows of 32 floats, each row 128 bytes (the 128-byte
/// swizzle's span), so a 64 × 64 tile is two boxes each way.
pub const TMA_BOX_ROWS: u32 = WIDE_TILE;
/// Bytes of one 64 × 32 f32 box.
pub const TMA_BOX_BYTES: u32 = TMA_BOX_ROWS * TILE * 4;
/// Shared byte offset of the TMA transpose's mbarrier: after the two loaded boxes and the two
/// boxes to store.
pub const TMA_BARRIER: u32 = 4 * TMA_BOX_BYTES;
/// Shared memory of the TMA transpose: 1024 bytes of slack to align the boxes to the 128-byte
/// swizzle's 1024-byte period, four boxes, one mbarrier.
pub const TMA_SHARED_BYTES: u32 = 1024 + TMA_BARRIER + 8;
/// Elements each thread of the TMA transpose moves.
pub const TMA_STEPS: u32 = WIDE_TILE * WIDE_TILE / TMA_THREADS;
/// What the TMA transpose needs of a shape: rows and columns multiples of 4, so both tensors'
/// row pitches are multiples of 16 bytes (a tensor map's global strides must be).
pub const TMA_ALIGN: u32 = 4;
/// Warps that move one 32 × 32 quarter of the tile together, in `QUARTER_STEPS` steps.
const QUARTER_WARPS: u32 = 4;
const QUARTER_STEPS: u32 = TILE * TILE / (QUARTER_WARPS * crate::WARP_SIZE);

// A box row is 128 bytes: exactly the 128-byte swizzle's span, so chunk j of row r sits at
// chunk j ^ (r % 8).
const _: () = assert!(TILE * 4 == 128, "one box row is one 128-byte swizzle row");
const _: () = assert!(WIDE_TILE == 2 * TILE, "a 64 x 64 tile is two boxes each way");
const _: () = assert!(TMA_THREADS.is_multiple_of(crate::WARP_SIZE) && TMA_STEPS * TMA_THREADS == WIDE_TILE * WIDE_TILE);
// The warps split into pairs of quarter groups, the steps into halves: 4 quarters.
const _: () = assert!(TMA_THREADS / crate::WARP_SIZE == 2 * QUARTER_WARPS && TMA_STEPS == 2 * QUARTER_STEPS);
// A quarter's warp steps pair up its 64 4 × 4 blocks: 32 warp steps of 2 blocks.
const _: () = assert!(QUARTER_STEPS * QUARTER_WARPS == 32);
const _: () = assert!(TMA_STEPS == 16, "the TMA transpose's move is unroll_16!");
const _: () = assert!(TMA_SHARED_BYTES <= DEFAULT_SHARED_BYTES);

/// Shared byte offset (from the 1024-aligned base) of loaded box `h`: input columns
/// `32 h .. 32 h + 32` of the tile, all 64 rows.
#[inline(always)]
pub const fn tma_loaded(h: u32) -> u32 {
    h * TMA_BOX_BYTES
}

/// Shared byte offset of box to store `g`: output columns `32 g .. 32 g + 32` of the tile (input
/// rows), all 64 output rows (input columns).
#[inline(always)]
pub const fn tma_to_store(g: u32) -> u32 {
    (2 + g) * TMA_BOX_BYTES
}

/// Float offset of element `(r, c)` (`c < 32`) of an f32 box of 32-float rows stored with the
/// 128-byte swizzle (the 16-byte chunk `c / 4` of row `r` lands at chunk `(c / 4) ^ (r % 8)`), in
/// a box that starts on a 1024-byte boundary.
#[inline(always)]
pub const fn swizzle128(r: u32, c: u32) -> u32 {
    r * TILE + ((((c >> 2) ^ (r & 7)) << 2) | (c & 3))
}

/// `(r, c)` in the 64 × 64 tile of the element lane `lane` of warp `warp` moves at step `step`.
/// Warps 0-3 and 4-7, in steps 0-7 and 8-15, take the four 32 × 32 quarters. Inside a quarter,
/// warp step `ws` covers a pair of 4 × 4 blocks of one 8 × 8 block group, lanes 0-15 one block
/// and 16-31 the other (diagonally or anti-diagonally placed), so that a warp's 32 reads of the
/// swizzled loaded box and its 32 writes of the swizzled box to store (at `(c, r)`) each hit 32
/// different banks (a quarter starts on a multiple of 8 rows of each box, so the swizzle's
/// phase is the same as at its origin).
#[inline(always)]
pub const fn tma_lane_coords(warp: u32, lane: u32, step: u32) -> (u32, u32) {
    let quarter = (step / QUARTER_STEPS) * 2 + warp / QUARTER_WARPS;
    let ws = (step % QUARTER_STEPS) * QUARTER_WARPS + warp % QUARTER_WARPS;
    let anti = ws & 1;
    let (r0, c0) = (2 * ((ws >> 1) & 3), 2 * (ws >> 3));
    let e = lane >> 4;
    let (br, bc) = (r0 + e, c0 + (e ^ anti));
    (TILE * (quarter / 2) + 4 * br + ((lane >> 2) & 3), TILE * (quarter % 2) + 4 * bc + (lane & 3))
}

/// Float offset (from the 1024-aligned base) of tile element `(r, c)` in the loaded boxes: row
/// `r`, column `c % 32` of box `c / 32`.
#[inline(always)]
pub const fn tma_src(r: u32, c: u32) -> u32 {
    tma_loaded(c / TILE) / 4 + swizzle128(r, c % TILE)
}

/// Float offset of tile element `(r, c)` in the boxes to store: row `c`, column `r % 32` of box
/// `r / 32` (the output is the transpose).
#[inline(always)]
pub const fn tma_dst(r: u32, c: u32) -> u32 {
    tma_to_store(r / TILE) / 4 + swizzle128(c, r % TILE)
}

/// Whether the TMA transpose takes a `rows × cols` matrix: both multiples of [`TMA_ALIGN`], and
/// every box coordinate (up to a tile past the last) inside the TMA's signed 32-bit range.
pub const fn tma_supports(rows: u32, cols: u32) -> bool {
    rows > 0
        && cols > 0
        && rows.is_multiple_of(TMA_ALIGN)
        && cols.is_multiple_of(TMA_ALIGN)
        && rows <= i32::MAX as u32 - WIDE_TILE
        && cols <= i32::MAX as u32 - WIDE_TILE
}

/// Tiles across a row of the matrix (`cols / TILE` rounded up).
pub const fn col_tiles(cols: u32) -> u32 {
    cols.div_ceil(TILE)
}

/// Blocks of the launch over a `rows × cols` input: one per tile (may exceed `u32` for absurd
/// shapes; the plan checks it against `MAX_GRID_X`).
pub const fn tiles(rows: u32, cols: u32) -> u64 {
    col_tiles(cols) as u64 * rows.div_ceil(TILE) as u64
}

/// Origin `(x0, y0)` = (first column, first row) of the tile block `block` handles, with
/// `col_tiles` tiles per row: consecutive blocks run along a row of tiles (x fastest).
///
/// `col_tiles == 0` (a matrix without columns, never launched) is taken as 1 so the function is
/// total and the kernels carry no division-by-zero path.
#[inline(always)]
pub const fn tile_origin(block: u32, col_tiles: u32) -> (u32, u32) {
    let col_tiles = if col_tiles == 0 { 1 } else { col_tiles };
    ((block % col_tiles) * TILE, (block / col_tiles) * TILE)
}

/// `(row, col)` of the input element thread `(tx, ty)` of the tile at `origin` reads at step `j`
/// (`j = 0, BLOCK_ROWS, ..`): row `ty + j` of the tile, column `tx`, so a warp reads along a row.
#[inline(always)]
pub const fn load_coords(origin: (u32, u32), thread: (u32, u32), j: u32) -> (u32, u32) {
    (origin.1 + thread.1 + j, origin.0 + thread.0)
}

/// `(row, col)` of the input element the same thread stores at step `j` of the shared-tile
/// kernels' second phase: the lanes (`tx`) walk down an input column, which is along a row of
/// the output.
#[inline(always)]
pub const fn store_coords(origin: (u32, u32), thread: (u32, u32), j: u32) -> (u32, u32) {
    (origin.1 + thread.0, origin.0 + thread.1 + j)
}

/// Where element `(r, c)` of a row-major `? × cols` matrix lives (64-bit: any size).
#[inline(always)]
pub const fn row_major_index(r: u32, c: u32, cols: u32) -> u64 {
    r as u64 * cols as u64 + c as u64
}

/// Where element `(r, c)` of the input lands in the output (`cols × rows`, row-major).
#[inline(always)]
pub const fn transposed_index(r: u32, c: u32, rows: u32) -> u64 {
    c as u64 * rows as u64 + r as u64
}

/// Shared-memory slot of tile element `(row, col)` (both `< TILE`) in a tile of row pitch `pitch`.
#[inline(always)]
pub const fn tile_slot(row: u32, col: u32, pitch: u32) -> u32 {
    row * pitch + col
}

/// Side of the wide kernel's tile.
pub const WIDE_TILE: u32 = 64;
/// Rows of threads of the wide kernel's (32, WIDE_ROWS) block: a lane moves 2 floats of a row,
/// so a warp spans one 64-float tile row, and the block takes WIDE_TILE / WIDE_ROWS = 4 steps.
pub const WIDE_ROWS: u32 = 16;
/// Row pitch of the wide tile (64 + 1 floats).
pub const WIDE_PITCH: u32 = WIDE_TILE + 1;
/// Dynamic shared memory of the wide kernel: one padded 64 × 65 tile.
pub const WIDE_SHARED_BYTES: u32 = WIDE_TILE * WIDE_PITCH * 4;

const _: () = assert!(2 * crate::WARP_SIZE == WIDE_TILE, "a warp's float2 accesses span one tile row");
const _: () = assert!(WIDE_TILE.is_multiple_of(WIDE_ROWS));
const _: () = assert!(crate::WARP_SIZE * WIDE_ROWS <= crate::launch::MAX_BLOCK_THREADS);
const _: () = assert!(WIDE_SHARED_BYTES <= DEFAULT_SHARED_BYTES);

/// Row tiles down a column of the matrix for the wide kernel.
pub const fn wide_row_tiles(rows: u32) -> u32 {
    rows.div_ceil(WIDE_TILE)
}

/// Blocks of the wide launch: one per 64 × 64 tile.
pub const fn wide_tiles(rows: u32, cols: u32) -> u64 {
    wide_row_tiles(rows) as u64 * cols.div_ceil(WIDE_TILE) as u64
}

/// Origin `(x0, y0)` of the tile wide block `block` handles: consecutive blocks run *down* a
/// column of tiles (y fastest), so they write neighbouring rows of the output. On the H100 that
/// order ran 0.5–0.7% faster than along rows (a CUDA C sweep of tile orders; BENCHMARKS.md).
/// `row_tiles == 0` (never launched) is taken as 1, so the kernel has no division-by-zero path.
#[inline(always)]
pub const fn wide_tile_origin(block: u32, row_tiles: u32) -> (u32, u32) {
    let row_tiles = if row_tiles == 0 { 1 } else { row_tiles };
    ((block / row_tiles) * WIDE_TILE, (block % row_tiles) * WIDE_TILE)
}

/// Column tiles across a row of the matrix for the wide tile.
pub const fn wide_col_tiles(cols: u32) -> u32 {
    cols.div_ceil(WIDE_TILE)
}

/// Origin `(x0, y0)` of the tile block `block` of the along-rows wide copy handles:
/// consecutive blocks run *along* a row of tiles (x fastest), so at any moment the blocks in
/// flight read and write a few whole rows of both matrices. `col_tiles == 0` is taken as 1.
#[inline(always)]
pub const fn wide_tile_origin_along(block: u32, col_tiles: u32) -> (u32, u32) {
    let col_tiles = if col_tiles == 0 { 1 } else { col_tiles };
    ((block % col_tiles) * WIDE_TILE, (block / col_tiles) * WIDE_TILE)
}

/// `(row, first col)` of the float pair thread `(tx, ty)` loads at step `j` (0..4): row
/// `ty + j * WIDE_ROWS` of the tile, columns `2 tx` and `2 tx + 1`, so a warp reads 256
/// contiguous bytes of one row (8 sectors).
#[inline(always)]
pub const fn wide_load_coords(origin: (u32, u32), thread: (u32, u32), j: u32) -> (u32, u32) {
    (origin.1 + thread.1 + j * WIDE_ROWS, origin.0 + 2 * thread.0)
}

/// `(first row, col)` of the input pair the same thread writes at step `j` of the store phase:
/// input column `ty + j * WIDE_ROWS`, rows `2 tx` and `2 tx + 1`, which are two neighbouring
/// floats of an output row (a warp writes 256 contiguous output bytes).
#[inline(always)]
pub const fn wide_store_coords(origin: (u32, u32), thread: (u32, u32), j: u32) -> (u32, u32) {
    (origin.1 + 2 * thread.0, origin.0 + thread.1 + j * WIDE_ROWS)
}

kernel! {
    /// Tiled copy, `out = in`, with the transpose's tiling and grid: each warp reads and writes
    /// 128 contiguous bytes of one row (4 sectors per access). The bandwidth a transpose can at
    /// best reach.
    pub unsafe fn transpose_copy(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        device::for_my_tile_elements(rows, cols, |r, c, _| {
            let i = row_major_index(r, c, cols) as usize;
            // SAFETY: r < rows, c < cols, so i < rows * cols, which both buffers hold exactly
            // (checked by the plan).
            unsafe { *output.add(i) = *input.add(i) };
        });
    }
}

kernel! {
    /// Naive transpose: changes the copy's store to the transposed position. Reads along rows
    /// (4 sectors per warp) but writes down an output column, each lane `4 * rows` bytes from the
    /// next: 32 sectors per warp store for 128 useful bytes.
    pub unsafe fn transpose_naive(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        device::for_my_tile_elements(rows, cols, |r, c, _| {
            let (i, o) = (row_major_index(r, c, cols) as usize, transposed_index(r, c, rows) as usize);
            // SAFETY: r < rows, c < cols, so both indices are < rows * cols, which both buffers
            // hold exactly (checked by the plan).
            unsafe { *output.add(o) = *input.add(i) };
        });
    }
}

kernel! {
    /// Shared-memory tile: stages the tile so the store also runs along an output row. Global
    /// reads and writes both take 4 sectors per warp, but the tile's column read (lane stride
    /// 32 words) hits one bank 32 times: a 32-way bank conflict per warp load.
    pub unsafe fn transpose_shared(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees (TILE * PITCH floats of shared memory).
        unsafe { device::through_shared::<f32, PITCH>(input, output, rows, cols) }
    }
}

kernel! {
    /// Padded tile (33 floats a row): changes only the tile's pitch, so the column read spreads
    /// over all 32 banks, conflict-free, for 128 extra bytes of shared memory. Global traffic as
    /// `transpose_shared`: 4 sectors per warp access. The library's transpose.
    pub unsafe fn transpose_padded(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees (TILE * PITCH_PADDED floats of shared memory).
        unsafe { device::through_shared::<f32, PITCH_PADDED>(input, output, rows, cols) }
    }
}

kernel! {
    /// Wide tile: changes the padded kernel's 32 × 32 tile and 4-byte accesses to a 64 × 64 tile
    /// moved with 8-byte accesses by (32, 16) blocks, tiles visited down columns. Each warp
    /// access is 256 contiguous bytes (8 sectors) instead of 128 (4): half the global requests
    /// for the same sectors, and 8 elements per thread instead of 4. The tile reads and writes
    /// are 4-byte with a 2-way bank conflict (lanes `l` and `l + 16` meet, pitch 65). Needs
    /// even `rows` and `cols` (every row starts 8-byte aligned); the library's transpose takes it
    /// whenever they are.
    pub unsafe fn transpose_wide(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let tile = shared::dynamic::<f32>();
        let origin = wide_tile_origin(thread::block_idx_x(), wide_row_tiles(rows));
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        // SAFETY (whole body): the plan checked rows and cols even, both buffers exactly
        // rows * cols floats and 8-byte aligned, and launched (32, WIDE_ROWS) threads with
        // WIDE_SHARED_BYTES of shared memory. A pair starts at an even column (or row) below an
        // even bound, so its second float is inside too, and its index is even: 8-byte aligned.
        // Tile slots are < WIDE_TILE * WIDE_PITCH.
        unsafe {
            let mut v = [device::Pair([0.0; 2]); (WIDE_TILE / WIDE_ROWS) as usize];
            let mut j = 0;
            while j < WIDE_TILE / WIDE_ROWS {
                let (r, c) = wide_load_coords(origin, (tx, ty), j);
                if r < rows && c < cols {
                    v[j as usize] = *(input.add(row_major_index(r, c, cols) as usize) as *const device::Pair);
                }
                j += 1;
            }
            j = 0;
            while j < WIDE_TILE / WIDE_ROWS {
                let (r, c) = wide_load_coords(origin, (tx, ty), j);
                let slot = tile_slot(r - origin.1, c - origin.0, WIDE_PITCH) as usize;
                *tile.add(slot) = v[j as usize].0[0];
                *tile.add(slot + 1) = v[j as usize].0[1];
                j += 1;
            }
            thread::sync_threads();
            // The pair of output row `c` at columns `r, r + 1`, from the transposed tile slots.
            let pair = |r: u32, c: u32| {
                let (tr, tc) = (r - origin.1, c - origin.0);
                device::Pair([
                    *tile.add(tile_slot(tr, tc, WIDE_PITCH) as usize),
                    *tile.add(tile_slot(tr + 1, tc, WIDE_PITCH) as usize),
                ])
            };
            // A tile wholly inside the matrix (every tile but the last row and column of them)
            // stores without guards: with a guard per step LLVM moved each step's tile reads
            // into its own branch, and each branch waited out its shared-load latency alone.
            let store = |r: u32, c: u32| {
                *(output.add(transposed_index(r, c, rows) as usize) as *mut device::Pair) = pair(r, c);
            };
            j = 0;
            if origin.1 + WIDE_TILE <= rows && origin.0 + WIDE_TILE <= cols {
                while j < WIDE_TILE / WIDE_ROWS {
                    let (r, c) = wide_store_coords(origin, (tx, ty), j);
                    v[j as usize] = pair(r, c);
                    j += 1;
                }
                j = 0;
                while j < WIDE_TILE / WIDE_ROWS {
                    let (r, c) = wide_store_coords(origin, (tx, ty), j);
                    *(output.add(transposed_index(r, c, rows) as usize) as *mut device::Pair) = v[j as usize];
                    j += 1;
                }
            } else {
                while j < WIDE_TILE / WIDE_ROWS {
                    let (r, c) = wide_store_coords(origin, (tx, ty), j);
                    if r < rows && c < cols {
                        store(r, c);
                    }
                    j += 1;
                }
            }
        }
    }
}

kernel! {
    /// Wide copy, `out = in`: changes the wide transpose to store each float pair back where it
    /// was read (no tile, no barrier) and to visit tiles along rows. Same global accesses as
    /// `transpose_wide`: 8 sectors per warp request both ways, half the requests of
    /// `transpose_copy`. At any moment the blocks in flight cover a few whole rows, so the DRAM
    /// sees nearly the memcpy's stream: the ceiling of a 64 × 64 tile.
    pub unsafe fn transpose_wide_copy(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let origin = wide_tile_origin_along(thread::block_idx_x(), wide_col_tiles(cols));
        // SAFETY: as `device::wide_copy` requires, checked by the plan.
        unsafe { device::wide_copy(input, output, rows, cols, origin) }
    }
}

kernel! {
    /// Wide copy down columns: changes only `transpose_wide_copy`'s tile order to the wide
    /// transpose's (y fastest). Every request is the same 8 sectors, so the transaction counts
    /// are identical; but the blocks in flight now touch a thin slice of every row, rows 4 ×
    /// `cols` bytes apart (on the H100, 4 blocks a multiprocessor: 1 KB of each row at 8192²),
    /// instead of a few whole rows. What that costs the DRAM is the price a
    /// transpose pays on the side it walks down a column.
    pub unsafe fn transpose_wide_copy_down(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let origin = wide_tile_origin(thread::block_idx_x(), wide_row_tiles(rows));
        // SAFETY: as `device::wide_copy` requires, checked by the plan.
        unsafe { device::wide_copy(input, output, rows, cols, origin) }
    }
}

crate::hopper_kernel! {
    /// TMA transpose: one 64 × 64 tile a block, tiles down columns (the wide kernel's grid).
    /// One thread loads the tile as two 64 × 32 boxes with `cp.async.bulk.tensor.2d` through the
    /// input's tensor map (completing on one mbarrier; elements past the matrix read as zero),
    /// the block moves it into two boxes transposed (all four 128-byte swizzled, so each warp's
    /// 32 shared reads and 32 writes are conflict-free without padding), and one thread stores
    /// those with two `cp.async.bulk.tensor.2d` through the output's map (elements past the
    /// matrix are clipped). Changes from `transpose_wide`: no thread computes a global address
    /// or a bounds check, and global memory moves in 128-byte box rows, 8 KiB an instruction.
    /// Both maps are grid constants (parameters by value), which the TMA reads without a fence.
    pub unsafe fn transpose_tma(input: crate::types::LoadMap, output: crate::types::StoreMap, rows: u32) {
        let input = crate::grid_constant!(transpose_tma, 0, input);
        let output = crate::grid_constant!(transpose_tma, 1, output);
        // SAFETY: forwarded plan guarantees (see `tma`).
        unsafe { hopper_device::tma(input, output, rows) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::*;
    use crate::prelude::{bulk, mbarrier};
    use crate::types::TensorMap;

    /// # Safety
    /// `input` and `output` are the generic addresses of grid-constant tensor maps encoded
    /// (`cuTensorMapEncodeTiled`, f32, 64-row × 32-column boxes, 128-byte swizzle) for a
    /// `rows × cols` input and its `cols × rows` output, both live; the launch is one block per
    /// 64 × 64 tile (`wide_tiles(rows, cols)`), `TMA_THREADS` threads and `TMA_SHARED_BYTES` of
    /// shared memory (checked by the plan). The maps hold the shape; the TMA clips at it.
    #[inline(always)]
    pub(super) unsafe fn tma(input: *const TensorMap, output: *const TensorMap, rows: u32) {
        let t = thread::thread_idx_x();
        let (warp, lane) = (t / crate::WARP_SIZE, t % crate::WARP_SIZE);
        let (x0, y0) = wide_tile_origin(thread::block_idx_x(), wide_row_tiles(rows));
        let raw = shared::dynamic::<u8>();
        // SAFETY: the dynamic shared memory is this block's.
        let raw_addr = unsafe { shared::address(raw) };
        let pad = raw_addr.next_multiple_of(1024) - raw_addr;
        let base = raw_addr + pad;
        let bar = base + TMA_BARRIER;
        // SAFETY (whole body): the maps are live and describe the matrices (plan); boxes and
        // the barrier lie inside the launched shared memory (pad < 1024, then TMA_SHARED_BYTES -
        // 1024 bytes); `tma_src` and `tma_dst` of a tile element (r, c < 64) lie inside their
        // boxes (the test `tma_lanes_move_every_element_once_without_bank_conflicts`). Every thread
        // reaches every barrier; thread 0 alone issues the TMA operations, after acquiring the
        // maps. Box coordinates are below rows + 64 and cols + 64, which fit i32 (plan:
        // `tma_supports`).
        unsafe {
            let boxes = raw.add(pad as usize) as *mut f32;
            if t == 0 {
                mbarrier::init(bar, 1);
                mbarrier::fence_init();
                mbarrier::arrive_expect_tx(bar, 2 * TMA_BOX_BYTES);
                bulk::load_tile_2d(base + tma_loaded(0), input, x0 as i32, y0 as i32, bar);
                bulk::load_tile_2d(base + tma_loaded(1), input, (x0 + TILE) as i32, y0 as i32, bar);
            }
            // The barrier is initialised before anyone waits on it.
            thread::sync_threads();
            mbarrier::wait_parity(bar, 0);
            // All 16 reads, then all 16 writes: the reads overlap, where a read after each
            // write (which may alias it, for all LLVM knows) would wait out every round trip.
            let mut v = [0.0f32; TMA_STEPS as usize];
            unroll_16!(step => {
                let (r, c) = tma_lane_coords(warp, lane, step);
                v[step as usize] = *boxes.add(tma_src(r, c) as usize);
            });
            unroll_16!(step => {
                let (r, c) = tma_lane_coords(warp, lane, step);
                *boxes.add(tma_dst(r, c) as usize) = v[step as usize];
            });
            // Each thread's shared writes are ordered before the async proxy's reads (the
            // stores), and every thread's are done before thread 0 issues them.
            bulk::fence_proxy_async();
            thread::sync_threads();
            if t == 0 {
                bulk::store_tile_2d(output, y0 as i32, x0 as i32, base + tma_to_store(0));
                bulk::store_tile_2d(output, (y0 + TILE) as i32, x0 as i32, base + tma_to_store(1));
                bulk::commit();
                // The boxes must stay in shared memory until the stores have read them.
                bulk::wait::<0>();
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device {
    use super::*;

    /// Two floats aligned to 8 bytes, so a load or store of one is a single 8-byte access
    /// (`ld.global.v2.f32`); `[f32; 2]` is only 4-byte aligned and compiles to two.
    #[repr(C, align(8))]
    #[derive(Clone, Copy)]
    pub(super) struct Pair(pub(super) [f32; 2]);

    /// This block's tile origin and this thread's `(tx, ty)` (the launch's block is
    /// `(TILE, BLOCK_ROWS)`).
    #[inline(always)]
    fn coords(cols: u32) -> ((u32, u32), (u32, u32)) {
        (tile_origin(thread::block_idx_x(), col_tiles(cols)), (thread::thread_idx_x(), thread::thread_idx_y()))
    }

    /// Calls `f(r, c, j)` for each element `(r, c)` of the input this thread reads from its
    /// block's tile (`load_coords` at steps `j = 0, BLOCK_ROWS, ..`), skipping those outside
    /// the matrix.
    #[inline(always)]
    pub(super) fn for_my_tile_elements(rows: u32, cols: u32, mut f: impl FnMut(u32, u32, u32)) {
        let (origin, t) = coords(cols);
        let mut j = 0;
        while j < TILE {
            let (r, c) = load_coords(origin, t, j);
            if r < rows && c < cols {
                f(r, c, j);
            }
            j += BLOCK_ROWS;
        }
    }

    /// The wide copies' body: the float pairs `wide_load_coords` gives this thread in the tile at
    /// `origin`, each loaded and stored back at the same index, all loads first.
    ///
    /// # Safety
    /// Both buffers hold exactly `rows * cols` floats and start 8-byte aligned, `rows` and `cols`
    /// are even, and the block is `(32, WIDE_ROWS)` (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn wide_copy(input: *const f32, output: *mut f32, rows: u32, cols: u32, origin: (u32, u32)) {
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let mut v = [Pair([0.0; 2]); (WIDE_TILE / WIDE_ROWS) as usize];
        let mut j = 0;
        while j < WIDE_TILE / WIDE_ROWS {
            let (r, c) = wide_load_coords(origin, (tx, ty), j);
            if r < rows && c < cols {
                // SAFETY: c is even and below the even cols, so c + 1 < cols too: the pair is
                // inside the buffer, at an even index of an 8-byte aligned base.
                v[j as usize] = unsafe { *(input.add(row_major_index(r, c, cols) as usize) as *const Pair) };
            }
            j += 1;
        }
        j = 0;
        while j < WIDE_TILE / WIDE_ROWS {
            let (r, c) = wide_load_coords(origin, (tx, ty), j);
            if r < rows && c < cols {
                // SAFETY: the pair loaded above, at the same index of the output (same length).
                unsafe { *(output.add(row_major_index(r, c, cols) as usize) as *mut Pair) = v[j as usize] };
            }
            j += 1;
        }
    }

    /// # Safety
    /// Both buffers hold `rows * cols` elements and the launch has `TILE * P` elements of dynamic
    /// shared memory and `(TILE, BLOCK_ROWS)` threads a block (checked by the plan).
    #[inline(always)]
    pub(crate) unsafe fn through_shared<T: Copy, const P: u32>(input: *const T, output: *mut T, rows: u32, cols: u32) {
        let tile = shared::dynamic::<T>();
        let (origin, (tx, ty)) = coords(cols);
        for_my_tile_elements(rows, cols, |r, c, j| {
            let i = row_major_index(r, c, cols) as usize;
            // SAFETY: r < rows, c < cols; the slot is < TILE * P (ty + j, tx < TILE), the shared
            // memory launched.
            unsafe { *tile.add(tile_slot(ty + j, tx, P) as usize) = *input.add(i) };
        });
        thread::sync_threads();
        let mut j = 0;
        while j < TILE {
            let (r, c) = store_coords(origin, (tx, ty), j);
            if r < rows && c < cols {
                // SAFETY: r < rows, c < cols as above; the slot is < TILE * P (tx, ty + j < TILE).
                // The slot was filled in the first phase by the thread of this block whose
                // `load_coords` gave this same (r, c), so it passed the same guard, and the
                // barrier made it visible (see the test `a_thread_stores_only_what_its_block_staged`).
                unsafe {
                    *output.add(transposed_index(r, c, rows) as usize) = *tile.add(tile_slot(tx, ty + j, P) as usize)
                };
            }
            j += BLOCK_ROWS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (block, thread, step) of the launch over `rows × cols`: what the load phase reads
    /// and the store phase writes.
    fn visit(rows: u32, cols: u32, mut load: impl FnMut(u32, u32), mut store: impl FnMut(u32, u32)) {
        for b in 0..tiles(rows, cols) as u32 {
            let origin = tile_origin(b, col_tiles(cols));
            for tx in 0..TILE {
                for ty in 0..BLOCK_ROWS {
                    for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
                        let (r, c) = load_coords(origin, (tx, ty), j);
                        if r < rows && c < cols {
                            load(r, c);
                        }
                        let (r, c) = store_coords(origin, (tx, ty), j);
                        if r < rows && c < cols {
                            store(r, c);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn wide_blocks_cover_every_even_shape_once_and_stage_what_they_store() {
        for (rows, cols) in [(2, 2), (2, 130), (130, 2), (64, 64), (66, 128), (200, 62)] {
            let n = (rows * cols) as usize;
            let (mut read, mut written) = (vec![0u8; n], vec![0u8; n]);
            let row_tiles = wide_row_tiles(rows);
            for b in 0..wide_tiles(rows, cols) as u32 {
                let origin = wide_tile_origin(b, row_tiles);
                let mut staged = std::collections::HashSet::new();
                for tx in 0..crate::WARP_SIZE {
                    for ty in 0..WIDE_ROWS {
                        for j in 0..WIDE_TILE / WIDE_ROWS {
                            let (r, c) = wide_load_coords(origin, (tx, ty), j);
                            assert!(r - origin.1 < WIDE_TILE && c + 1 - origin.0 < WIDE_TILE);
                            if r < rows && c < cols {
                                assert!(c + 1 < cols && c % 2 == 0);
                                read[row_major_index(r, c, cols) as usize] += 1;
                                read[row_major_index(r, c + 1, cols) as usize] += 1;
                                staged.insert((r, c));
                                staged.insert((r, c + 1));
                            }
                        }
                    }
                }
                for tx in 0..crate::WARP_SIZE {
                    for ty in 0..WIDE_ROWS {
                        for j in 0..WIDE_TILE / WIDE_ROWS {
                            let (r, c) = wide_store_coords(origin, (tx, ty), j);
                            if r < rows && c < cols {
                                assert!(r + 1 < rows && transposed_index(r, c, rows).is_multiple_of(2));
                                for (rr, cc) in [(r, c), (r + 1, c)] {
                                    assert!(staged.contains(&(rr, cc)), "stores only what its block staged");
                                    written[transposed_index(rr, cc, rows) as usize] += 1;
                                }
                            }
                        }
                    }
                }
            }
            assert!(read.iter().all(|&h| h == 1), "{rows}x{cols} reads");
            assert!(written.iter().all(|&h| h == 1), "{rows}x{cols} writes");
        }
        // Consecutive blocks walk down a column of tiles.
        assert_eq!([0, 1, 2].map(|b| wide_tile_origin(b, 2)), [(0, 0), (0, 64), (64, 0)]);
    }

    #[test]
    fn both_wide_tile_orders_visit_every_tile_once() {
        for (rows, cols) in [(2, 2), (2, 130), (130, 2), (64, 64), (66, 128), (200, 62)] {
            let tiles = wide_tiles(rows, cols) as u32;
            let down: std::collections::HashSet<_> =
                (0..tiles).map(|b| wide_tile_origin(b, wide_row_tiles(rows))).collect();
            let along: std::collections::HashSet<_> =
                (0..tiles).map(|b| wide_tile_origin_along(b, wide_col_tiles(cols))).collect();
            assert_eq!(down.len() as u32, tiles);
            assert_eq!(down, along, "{rows}x{cols}");
            assert!(along.iter().all(|&(x0, y0)| x0 < cols && y0 < rows));
        }
        // Consecutive blocks of the along order walk a row of tiles.
        assert_eq!([0, 1, 2].map(|b| wide_tile_origin_along(b, 2)), [(0, 0), (64, 0), (0, 64)]);
        assert_eq!(wide_tile_origin_along(5, 0), (0, 5 * 64), "no columns: taken as one tile per row");
    }

    #[test]
    fn one_block_per_tile_covers_every_element_once_both_ways() {
        for (rows, cols) in [(1, 1), (1, 37), (37, 1), (31, 33), (33, 31), (70, 65), (3, 200), (200, 3)] {
            let n = (rows * cols) as usize;
            let (mut read, mut written) = (vec![0u8; n], vec![0u8; n]);
            visit(
                rows,
                cols,
                |r, c| read[row_major_index(r, c, cols) as usize] += 1,
                |r, c| written[transposed_index(r, c, rows) as usize] += 1,
            );
            assert!(read.iter().all(|&h| h == 1), "{rows}x{cols} reads");
            assert!(written.iter().all(|&h| h == 1), "{rows}x{cols} writes");
        }
    }

    #[test]
    fn a_thread_stores_only_what_its_block_staged() {
        // The store phase reads slot (tx, ty + j); the thread of the same block whose load phase
        // wrote that slot, (tx', ty') at step j', has ty' + j' = tx and tx' = ty + j. It must
        // have loaded the very element the store phase writes out.
        let origin = tile_origin(5, 3);
        for tx in 0..TILE {
            for ty in 0..BLOCK_ROWS {
                for j in (0..TILE).step_by(BLOCK_ROWS as usize) {
                    let (loader, j_load) = ((ty + j, tx % BLOCK_ROWS), tx - tx % BLOCK_ROWS);
                    for pitch in [PITCH, PITCH_PADDED] {
                        assert_eq!(tile_slot(loader.1 + j_load, loader.0, pitch), tile_slot(tx, ty + j, pitch));
                    }
                    assert_eq!(load_coords(origin, loader, j_load), store_coords(origin, (tx, ty), j));
                }
            }
        }
    }

    #[test]
    fn tma_lanes_move_every_element_once_without_bank_conflicts() {
        let (tile, boxes) = (WIDE_TILE as usize, (TMA_BARRIER / 4) as usize);
        let (mut moved, mut read, mut written) = (vec![0u8; tile * tile], vec![0u8; boxes], vec![0u8; boxes]);
        for warp in 0..TMA_THREADS / 32 {
            for step in 0..TMA_STEPS {
                let coords: Vec<(u32, u32)> = (0..32).map(|lane| tma_lane_coords(warp, lane, step)).collect();
                let reads: std::collections::HashSet<u32> = coords.iter().map(|&(r, c)| tma_src(r, c) % 32).collect();
                let writes: std::collections::HashSet<u32> = coords.iter().map(|&(r, c)| tma_dst(r, c) % 32).collect();
                assert_eq!(reads.len(), 32, "warp {warp} step {step}: read conflicts");
                assert_eq!(writes.len(), 32, "warp {warp} step {step}: write conflicts");
                for (r, c) in coords {
                    assert!(r < WIDE_TILE && c < WIDE_TILE);
                    moved[r as usize * tile + c as usize] += 1;
                    // Inside its own box: loaded box c / 32, box to store r / 32.
                    assert_eq!(tma_src(r, c) / (TMA_BOX_BYTES / 4), c / TILE);
                    assert_eq!(tma_dst(r, c) / (TMA_BOX_BYTES / 4), 2 + r / TILE);
                    read[tma_src(r, c) as usize] += 1;
                    written[tma_dst(r, c) as usize] += 1;
                }
            }
        }
        assert!(moved.iter().all(|&m| m == 1));
        // Every word of the loaded boxes is read once and every word of the boxes to store
        // written once (nothing stale goes out).
        assert!(read[..boxes / 2].iter().all(|&m| m == 1) && written[boxes / 2..].iter().all(|&m| m == 1));
        // The swizzle is a permutation of each row's 32 words.
        for r in 0..WIDE_TILE {
            let row: std::collections::HashSet<u32> = (0..TILE).map(|c| swizzle128(r, c)).collect();
            assert_eq!(row.len(), 32);
            assert!(row.iter().all(|&o| o / TILE == r));
        }
        assert!(tma_supports(4, 4) && tma_supports(8188, 4100));
        assert_eq!(TMA_BARRIER + 8 + 1024, TMA_SHARED_BYTES);
        assert!((0..2).all(|b| tma_loaded(b).is_multiple_of(1024) && tma_to_store(b).is_multiple_of(1024)));
        assert!(!tma_supports(31, 32) && !tma_supports(32, 30) && !tma_supports(0, 4));
        assert!(!tma_supports(4, i32::MAX as u32 - 3) && tma_supports(4, i32::MAX as u32 - 67));
    }

    #[test]
    fn tiles_run_x_fastest_and_take_any_row_count() {
        assert_eq!(tile_origin(0, 3), (0, 0));
        assert_eq!(tile_origin(1, 3), (32, 0));
        assert_eq!(tile_origin(3, 3), (0, 32));
        assert_eq!(tile_origin(7, 0), (0, 7 * 32), "no columns: taken as one tile per row");
        // 4_194_304 × 8: 131 072 row tiles, twice what gridDim.y allowed.
        assert_eq!(tiles(4_194_304, 8), 131_072);
        assert_eq!(tile_origin(131_071, col_tiles(8)), (0, 4_194_304 - 32));
        // 32768 × 65537: 2^31 + 32768 elements, 2049 × 1024 tiles.
        assert_eq!(tiles(32_768, 65_537), 2049 * 1024);
        assert_eq!(row_major_index(32_767, 65_536, 65_537), (1 << 31) + 32_767);
        assert_eq!(transposed_index(32_767, 65_536, 32_768), (1 << 31) + 32_767);
        // The largest coordinates stay in u32.
        let (x0, y0) = tile_origin(col_tiles(u32::MAX) - 1, col_tiles(u32::MAX));
        assert_eq!(load_coords((x0, y0), (TILE - 1, BLOCK_ROWS - 1), TILE - BLOCK_ROWS), (31, u32::MAX));
    }
}
