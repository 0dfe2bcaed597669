//! The library's transposes of elements of 1, 2 and 8 bytes (`coalesce::transpose::transpose::<T>`;
//! 4-byte elements take the `f32` kernels, which move bits).
//!
//! A packed tile keeps every thread's global accesses one word wide, whatever the element: a
//! word is 4 bytes for 1- and 2-byte elements (`K` = 4 or 2 of them) and 8 bytes for 8-byte ones
//! (`K` = 1), so a warp reads or writes 32 consecutive words of a row (128 or 256 contiguous
//! bytes), as the `f32` padded and wide tiles do. The tile is `32 K` rows × 32 words (`32 K`
//! elements): 16 KiB for bytes, 8 KiB otherwise. Threads load it along input rows, one word a
//! lane; to store along output rows, a thread reads the `K` words at one word column of `K`
//! consecutive tile rows (a `K × K` block of elements), transposes that block in registers with
//! byte permutes ([`quad_transpose`], [`pair_transpose`]), and writes `K` output words, one in
//! each of `K` consecutive output rows. The tile's words are XOR-swizzled
//! ([`packed_slot`]) so the row writes and the column reads both hit 32 different banks.
//!
//! Needs rows and columns that are multiples of `K` and word-aligned buffers (every row then
//! starts on a word); the library takes [`transpose_padded_u8`] or [`transpose_padded_u16`], the
//! padded 32 × 33 tile one element a lane, for any other 1- or 2-byte matrix.

use super::{BLOCK_ROWS, PITCH_PADDED, TILE};
use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math, shared, thread};

/// Words across a packed tile's row: one warp's.
pub const PACKED_WORDS: u32 = crate::WARP_SIZE;
/// Rows of threads of a packed block (`PACKED_WORDS`, `PACKED_ROWS`).
pub const PACKED_ROWS: u32 = 8;
/// Elements of a word for 1-byte elements.
pub const K_U8: u32 = 4;
/// Elements of a word for 2-byte elements.
pub const K_U16: u32 = 2;
/// Elements of a word for 8-byte elements.
pub const K_U64: u32 = 1;
/// Load steps of a thread for the largest `K` (the register array it fills).
#[cfg(target_arch = "nvptx64")]
const MAX_LOADS: usize = (PACKED_WORDS * K_U8 / PACKED_ROWS) as usize;

const _: () = assert!(PACKED_WORDS.is_multiple_of(PACKED_ROWS), "the store phase's groups cover the tile's words");
const _: () = assert!(packed_shared_bytes(K_U8, 4) <= DEFAULT_SHARED_BYTES);
const _: () = assert!(packed_shared_bytes(K_U64, 8) <= DEFAULT_SHARED_BYTES);
const _: () = assert!(TILE * PITCH_PADDED * 2 <= DEFAULT_SHARED_BYTES);

/// Side of a packed tile in elements: `32 K` rows and `32 K` columns.
pub const fn packed_side(k: u32) -> u32 {
    PACKED_WORDS * k
}

/// Dynamic shared memory of a packed launch: the tile's `32 K × 32` words of `word_bytes`.
pub const fn packed_shared_bytes(k: u32, word_bytes: u32) -> u32 {
    packed_side(k) * PACKED_WORDS * word_bytes
}

/// Tiles down a column of the matrix.
pub const fn packed_row_tiles(rows: u32, k: u32) -> u32 {
    rows.div_ceil(packed_side(k))
}

/// Blocks of a packed launch over a `rows × cols` matrix: one per tile.
pub const fn packed_tiles(rows: u32, cols: u32, k: u32) -> u64 {
    packed_row_tiles(rows, k) as u64 * cols.div_ceil(packed_side(k)) as u64
}

/// Origin `(x0, y0)` (first column, first row) of block `block`'s tile: consecutive blocks run
/// down a column of tiles, the wide `f32` tile's order. `row_tiles == 0` (never launched) is
/// taken as 1, so the kernel has no division-by-zero path.
#[inline(always)]
pub const fn packed_origin(block: u32, row_tiles: u32, k: u32) -> (u32, u32) {
    let row_tiles = if row_tiles == 0 { 1 } else { row_tiles };
    ((block / row_tiles) * packed_side(k), (block % row_tiles) * packed_side(k))
}

/// `(row, first column)` of the word thread `(tx, ty)` loads at step `j` (`0..4 K`): tile row
/// `ty + 8 j`, word `tx`, so a warp reads 32 consecutive words of one input row.
#[inline(always)]
pub const fn packed_load(origin: (u32, u32), thread: (u32, u32), j: u32, k: u32) -> (u32, u32) {
    (origin.1 + thread.1 + j * PACKED_ROWS, origin.0 + k * thread.0)
}

/// `(first row, first column)` of the `K × K` block thread `(tx, ty)` stores at step `j`
/// (`0..4`): input rows `k tx ..`, input columns `k c ..` with `c = ty + 8 j`. Those columns
/// are `K` output rows, and the rows word `tx` of each: a warp writes 32 consecutive words of
/// `K` output rows.
#[inline(always)]
pub const fn packed_store(origin: (u32, u32), thread: (u32, u32), j: u32, k: u32) -> (u32, u32) {
    (origin.1 + k * thread.0, origin.0 + k * (thread.1 + j * PACKED_ROWS))
}

/// Shared word of tile word `(r, w)` (tile row `r < 32 K`, word `w < 32`): word `w` XOR
/// `(r / K) % 32` of row `r`. A warp writing one row (lanes `w = 0..32`) and a warp reading
/// word `c` of rows `K l + i` (lanes `l`) both meet 32 different banks (4-byte words; for
/// 8-byte words, each half-warp 16 different pairs).
#[inline(always)]
pub const fn packed_slot(r: u32, w: u32, k: u32) -> u32 {
    r * PACKED_WORDS + (w ^ ((r / k) % PACKED_WORDS))
}

/// `__byte_perm(a, b, selector)` (`prmt.b32`): byte `i` of the result is byte
/// `(selector >> 4 i) & 7` of the eight bytes `b:a`, `a` the low four.
pub const fn byte_perm(a: u32, b: u32, selector: u32) -> u32 {
    let bytes = ((b as u64) << 32) | a as u64;
    let mut out = 0u32;
    let mut i = 0;
    while i < 4 {
        let from = (selector >> (4 * i)) & 7;
        out |= (((bytes >> (8 * from)) & 0xff) as u32) << (8 * i);
        i += 1;
    }
    out
}

/// Selectors of [`quad_transpose`]'s and [`pair_transpose`]'s permutes: bytes 0 and 1 of `a` and
/// of `b` interleaved, bytes 2 and 3 likewise; halves 0 of `a` and `b`, halves 1 likewise.
pub const INTERLEAVE_LOW: u32 = 0x5140;
pub const INTERLEAVE_HIGH: u32 = 0x7362;
pub const HALVES_LOW: u32 = 0x5410;
pub const HALVES_HIGH: u32 = 0x7632;

/// The transpose of a 4 × 4 block of bytes: `rows[r]` holds row `r` (byte `c` its column `c`);
/// the result's word `c` holds column `c` (byte `r` from row `r`). Eight permutes (`perm`:
/// [`byte_perm`] on the CPU, one `prmt` each on the GPU).
#[inline(always)]
pub fn quad_transpose(rows: [u32; 4], perm: impl Fn(u32, u32, u32) -> u32) -> [u32; 4] {
    let low01 = perm(rows[0], rows[1], INTERLEAVE_LOW);
    let high01 = perm(rows[0], rows[1], INTERLEAVE_HIGH);
    let low23 = perm(rows[2], rows[3], INTERLEAVE_LOW);
    let high23 = perm(rows[2], rows[3], INTERLEAVE_HIGH);
    [
        perm(low01, low23, HALVES_LOW),
        perm(low01, low23, HALVES_HIGH),
        perm(high01, high23, HALVES_LOW),
        perm(high01, high23, HALVES_HIGH),
    ]
}

/// The transpose of a 2 × 2 block of 2-byte elements held as [`quad_transpose`]'s rows.
#[inline(always)]
pub fn pair_transpose(rows: [u32; 2], perm: impl Fn(u32, u32, u32) -> u32) -> [u32; 2] {
    [perm(rows[0], rows[1], HALVES_LOW), perm(rows[0], rows[1], HALVES_HIGH)]
}

/// Declares a packed transpose: its body is `device::packed`, written once.
macro_rules! packed_transpose {
    ($(#[$attr:meta])* $name:ident: $word:ty, $packing:ty) => {
        kernel! {
            $(#[$attr])*
            pub unsafe fn $name(input: *const $word, output: *mut $word, rows: u32, cols: u32) {
                // SAFETY: forwarded plan guarantees (see `device::packed`).
                unsafe { device::packed::<$packing>(input, output, rows, cols) }
            }
        }
    };
}

packed_transpose! {
    /// Transpose of 1-byte elements in 128 × 128 tiles, 4-byte global accesses (a warp: 128
    /// contiguous bytes of a row), a 4 × 4 byte block transposed in registers by each thread for
    /// each of its 4 output words of a store step. Rows and columns multiples of 4.
    transpose_packed_u8: u32, device::Bytes
}

packed_transpose! {
    /// Transpose of 2-byte elements in 64 × 64 tiles, 4-byte global accesses, 2 × 2 blocks
    /// transposed in registers. Rows and columns even.
    transpose_packed_u16: u32, device::Halves
}

packed_transpose! {
    /// Transpose of 8-byte elements in 32 × 32 tiles, 8-byte global accesses (a warp: 256
    /// contiguous bytes of a row, as the wide `f32` tile's), the swizzled tile in place of the
    /// padded one. Any shape.
    transpose_packed_u64: u64, device::Eights
}

kernel! {
    /// Transpose of 1-byte elements through the padded 32 × 33 tile, one element a lane (a warp
    /// moves 32 bytes a request): the library's transpose of bytes whose shape or views the
    /// packed tile does not take.
    pub unsafe fn transpose_padded_u8(input: *const u8, output: *mut u8, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees (TILE * PITCH_PADDED bytes of shared memory).
        unsafe { super::device::through_shared::<u8, PITCH_PADDED>(input, output, rows, cols) }
    }
}

kernel! {
    /// `transpose_padded_u8` for 2-byte elements.
    pub unsafe fn transpose_padded_u16(input: *const u16, output: *mut u16, rows: u32, cols: u32) {
        // SAFETY: forwarded plan guarantees (TILE * PITCH_PADDED u16 of shared memory).
        unsafe { super::device::through_shared::<u16, PITCH_PADDED>(input, output, rows, cols) }
    }
}

/// Threads of a packed block: `(PACKED_WORDS, PACKED_ROWS)`; and of a padded one, `(TILE,
/// BLOCK_ROWS)` (the `f32` padded tile's).
pub const PACKED_BLOCK: (u32, u32) = (PACKED_WORDS, PACKED_ROWS);
/// See [`PACKED_BLOCK`].
pub const PADDED_BLOCK: (u32, u32) = (TILE, BLOCK_ROWS);

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// How one element size is packed into words.
    pub(super) trait Packing {
        type Word: Copy;
        const K: u32;
        const ZERO: Self::Word;
        /// The `K × K` block of `rows[..K]` (row `i` of the block in word `i`) transposed
        /// (column `i` in word `i`).
        fn transpose(rows: [Self::Word; 4]) -> [Self::Word; 4];
    }

    pub(super) struct Bytes;
    pub(super) struct Halves;
    pub(super) struct Eights;

    impl Packing for Bytes {
        type Word = u32;
        const K: u32 = K_U8;
        const ZERO: u32 = 0;
        #[inline(always)]
        fn transpose(rows: [u32; 4]) -> [u32; 4] {
            quad_transpose(rows, math::prmt)
        }
    }

    impl Packing for Halves {
        type Word = u32;
        const K: u32 = K_U16;
        const ZERO: u32 = 0;
        #[inline(always)]
        fn transpose(rows: [u32; 4]) -> [u32; 4] {
            let [a, b] = pair_transpose([rows[0], rows[1]], math::prmt);
            [a, b, 0, 0]
        }
    }

    impl Packing for Eights {
        type Word = u64;
        const K: u32 = K_U64;
        const ZERO: u64 = 0;
        #[inline(always)]
        fn transpose(rows: [u64; 4]) -> [u64; 4] {
            rows
        }
    }

    /// # Safety
    /// `rows` and `cols` are multiples of `P::K`, both buffers hold exactly `rows * cols / K`
    /// words and start on a word boundary, and the launch is one `PACKED_BLOCK` block a tile
    /// (`packed_tiles`) with `packed_shared_bytes(K, word)` of shared memory (the plan checks
    /// all of it).
    #[inline(always)]
    pub(super) unsafe fn packed<P: Packing>(input: *const P::Word, output: *mut P::Word, rows: u32, cols: u32) {
        let k = P::K;
        let tile = shared::dynamic::<P::Word>();
        let origin = packed_origin(thread::block_idx_x(), packed_row_tiles(rows, k), k);
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        // Row pitches in words: input rows hold `cols` elements, output rows `rows`.
        let (in_pitch, out_pitch) = ((cols / k) as u64, (rows / k) as u64);
        // SAFETY (whole body): a word at an in-matrix element index that is a multiple of K is
        // whole (rows and cols are multiples of K) and below `rows * cols / K`; tile slots are
        // below `32 K * 32`, the shared memory launched.
        unsafe {
            // Every load first, then every shared write: the loads overlap. Words outside the
            // matrix are staged as zeros, so every slot the store phase reads was written.
            let mut v = [P::ZERO; MAX_LOADS];
            let loads = 4 * k;
            let mut j = 0;
            while j < loads {
                let (r, c) = packed_load(origin, (tx, ty), j, k);
                if r < rows && c < cols {
                    v[j as usize] = *input.add((r as u64 * in_pitch + (c / k) as u64) as usize);
                }
                j += 1;
            }
            j = 0;
            while j < loads {
                let (r, _) = packed_load(origin, (tx, ty), j, k);
                *tile.add(packed_slot(r - origin.1, tx, k) as usize) = v[j as usize];
                j += 1;
            }
            thread::sync_threads();
            // Every step's shared reads, then its stores: K words each.
            let mut j = 0;
            while j < PACKED_WORDS / PACKED_ROWS {
                let (r0, c0) = packed_store(origin, (tx, ty), j, k);
                let (tr, word) = (r0 - origin.1, (c0 - origin.0) / k);
                let mut block = [P::ZERO; 4];
                let mut i = 0;
                while i < k {
                    block[i as usize] = *tile.add(packed_slot(tr + i, word, k) as usize);
                    i += 1;
                }
                let columns = P::transpose(block);
                i = 0;
                while i < k {
                    if r0 < rows && c0 + i < cols {
                        *output.add(((c0 + i) as u64 * out_pitch + (r0 / k) as u64) as usize) = columns[i as usize];
                    }
                    i += 1;
                }
                j += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_permutes_transpose_blocks() {
        let rows = [0x0302_0100, 0x1312_1110, 0x2322_2120, 0x3332_3130];
        assert_eq!(quad_transpose(rows, byte_perm), [0x3020_1000, 0x3121_1101, 0x3222_1202, 0x3323_1303]);
        assert_eq!(pair_transpose([0x0001_0000, 0x0101_0100], byte_perm), [0x0100_0000, 0x0101_0001]);
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x7654), 0x8877_6655);
        assert_eq!(byte_perm(0x4433_2211, 0x8877_6655, 0x3210), 0x4433_2211);
    }

    /// Every element of a `rows × cols` matrix (multiples of K) is read once and written once,
    /// to its transposed place, by simulating each block's loads, tile and stores, and the
    /// banks of every warp access are distinct.
    fn packed_moves_once(rows: u32, cols: u32, k: u32) {
        let n = (rows * cols) as usize;
        let input: Vec<u32> = (0..n as u32).collect();
        let mut output = vec![u32::MAX; n];
        let side = packed_side(k) as usize;
        for b in 0..packed_tiles(rows, cols, k) as u32 {
            let origin = packed_origin(b, packed_row_tiles(rows, k), k);
            // tile[slot] holds the K elements of a word.
            let mut tile = vec![Vec::new(); side * PACKED_WORDS as usize];
            for ty in 0..PACKED_ROWS {
                for j in 0..4 * k {
                    let mut banks = std::collections::HashSet::new();
                    for tx in 0..PACKED_WORDS {
                        let (r, c) = packed_load(origin, (tx, ty), j, k);
                        let slot = packed_slot(r - origin.1, tx, k);
                        banks.insert(slot % 32);
                        tile[slot as usize] = (0..k)
                            .map(|e| if r < rows && c + e < cols { input[(r * cols + c + e) as usize] } else { 0 })
                            .collect();
                    }
                    assert_eq!(banks.len(), 32, "load ty {ty} j {j}");
                }
            }
            assert!(tile.iter().all(|w| w.len() == k as usize), "every slot written");
            for ty in 0..PACKED_ROWS {
                for j in 0..PACKED_WORDS / PACKED_ROWS {
                    for i in 0..k {
                        let mut banks = std::collections::HashSet::new();
                        for tx in 0..PACKED_WORDS {
                            let (r0, c0) = packed_store(origin, (tx, ty), j, k);
                            let slot = packed_slot(r0 - origin.1 + i, (c0 - origin.0) / k, k);
                            banks.insert(slot % 32);
                            // Column i of the block's row i' is element i of tile row r0 + i'.
                            if r0 < rows && c0 + i < cols {
                                for e in 0..k {
                                    let word = &tile[packed_slot(r0 - origin.1 + e, (c0 - origin.0) / k, k) as usize];
                                    let out = ((c0 + i) * rows + r0 + e) as usize;
                                    assert_eq!(output[out], u32::MAX, "written twice");
                                    output[out] = word[i as usize];
                                }
                            }
                        }
                        assert_eq!(banks.len(), 32, "store ty {ty} j {j} i {i}");
                    }
                }
            }
        }
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(output[(c * rows + r) as usize], input[(r * cols + c) as usize], "{rows}x{cols} k={k}");
            }
        }
    }

    #[test]
    fn packed_tiles_move_every_element_once_without_bank_conflicts() {
        for k in [K_U8, K_U16, K_U64] {
            for (rows, cols) in [(4, 4), (128, 128), (132, 8), (8, 260), (256, 124), (4, 512)] {
                packed_moves_once(rows * k / 4, cols * k / 4, k);
                if k < 4 {
                    packed_moves_once(rows, cols, k);
                }
            }
        }
        assert_eq!(packed_shared_bytes(K_U8, 4), 16 * 1024);
        assert_eq!(packed_shared_bytes(K_U16, 4), 8 * 1024);
        assert_eq!(packed_shared_bytes(K_U64, 8), 8 * 1024);
        // The largest coordinates stay in u32: a tile's last row is at most u32::MAX.
        let side = packed_side(K_U8);
        let (x0, y0) =
            packed_origin(packed_tiles(u32::MAX, 4, K_U8) as u32 - 1, packed_row_tiles(u32::MAX, K_U8), K_U8);
        assert_eq!((x0, y0 + (side - 1)), (0, u32::MAX));
    }
}
