//! Stage 4, cp_async (Hopper): `prefetch`'s tiles go global → shared through a 4-stage ring.
//! Same bytes, 1/4 of the requests where rows are aligned; 1 barrier a tile; 32 KiB shared, not 8.

use super::tiled::TILE;
use crate::launch::DEFAULT_SHARED_BYTES;

/// Stages of the `cp.async` tiled kernel's shared ring (tiles in flight: `MM_STAGES - 1`).
pub const MM_STAGES: u32 = 4;
/// Floats of one stage of the `cp.async` kernel: a tile of A, then one of B.
pub const MM_STAGE_FLOATS: u32 = 2 * TILE * TILE;
/// Shared memory of the `cp.async` kernel (32 KiB: no opt-in, two 1024-thread blocks per SM).
pub const MM_SHARED_BYTES: u32 = MM_STAGES * MM_STAGE_FLOATS * 4;

const _: () = assert!(MM_STAGES >= 2, "the cp.async pipeline waits for all but MM_STAGES - 2 groups");
const _: () = assert!(MM_SHARED_BYTES <= DEFAULT_SHARED_BYTES, "cp.async tiles must not need opt-in");

/// Float offset in the `cp.async` kernel's ring of tile element `here` (a `tile_offset`) of A
/// for k tile `t` (stage `t % MM_STAGES`).
#[inline(always)]
pub const fn mm_a_slot(t: u32, here: u32) -> u32 {
    (t % MM_STAGES) * MM_STAGE_FLOATS + here
}

/// The same for B (the second half of the stage).
#[inline(always)]
pub const fn mm_b_slot(t: u32, here: u32) -> u32 {
    (t % MM_STAGES) * MM_STAGE_FLOATS + TILE * TILE + here
}

/// Whether the `cp.async` kernel copies 16-byte vectors (one `cp.async.cg` per 4 floats) for
/// this shape and these buffer addresses: rows of A and B start on 16-byte boundaries (k and n
/// multiples of 4, both buffers 16-byte aligned). Otherwise it copies 4 bytes per thread.
#[inline(always)]
pub const fn mm_vectors(n: u32, k: u32, a: u64, b: u64) -> bool {
    n.is_multiple_of(4) && k.is_multiple_of(4) && a.is_multiple_of(16) && b.is_multiple_of(16)
}

/// The 16-byte vector thread `t` (0..1024, `ty * TILE + tx`) of the `cp.async` kernel copies in
/// the vector path: threads 0..256 one of A's tile, 256..512 one of B's, the rest none. Returns
/// `(is_b, row in the tile, first column in the tile)`; a warp copies 4 rows of 128 bytes.
#[inline(always)]
pub const fn mm_vector_of(t: u32) -> Option<(bool, u32, u32)> {
    const PER_TILE: u32 = TILE * TILE / 4;
    const PER_ROW: u32 = TILE / 4;
    if t < 2 * PER_TILE {
        let u = t % PER_TILE;
        Some((t >= PER_TILE, u / PER_ROW, (u % PER_ROW) * 4))
    } else {
        None
    }
}

/// Bytes of a 16-byte vector starting at column `c0` (a multiple of 4) of row `r` of a
/// `rows × cols` matrix whose `cols` is a multiple of 4: 16 inside, 0 outside.
#[inline(always)]
pub const fn mm_vector_bytes(r: u32, c0: u32, rows: u32, cols: u32) -> u32 {
    if r < rows && c0 < cols { 16 } else { 0 }
}

crate::hopper_kernel! {
    /// Tiles through a `cp.async` pipeline: the same 32 × 32 tiles and global bytes as
    /// `matmul_prefetch`, but the tiles go global → shared with `cp.async` into a 4-stage ring,
    /// so three tiles are in flight while one is computed, no register holds them on the way and
    /// the store to shared leaves the instruction stream. Where rows start on 16-byte boundaries
    /// (k, n multiples of 4, aligned buffers) 512 threads each copy one 16-byte vector with
    /// `cp.async.cg` (L2 only; a warp: 4 rows of 128 bytes); else every thread copies its two
    /// floats with 4-byte `cp.async.ca`. Edges are zero-filled by the copy itself. One barrier
    /// per tile instead of two (refilling the stage read in the previous trip, after this trip's
    /// barrier). Costs 32 KiB of shared memory per block instead of 8.
    pub unsafe fn matmul_cp_async(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `cp_async_tiled`).
        unsafe { hopper_device::cp_async_tiled(a, b, c, m, n, k) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::*;
    use crate::matmul::index::row_major;
    use crate::matmul::tiled::{tile_a_col, tile_b_row, tile_offset, tiled_coords};
    use crate::prelude::{async_copy, math::fma, shared, thread};

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is (TILE, TILE) threads with
    /// `MM_SHARED_BYTES` of shared memory (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn cp_async_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (row, col) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), tx, ty);
        let here = tile_offset(ty, tx);
        let tiles = k.div_ceil(TILE);
        let vectors = mm_vectors(n, k, a as u64, b as u64);
        let vector = mm_vector_of(ty * TILE + tx);
        let (row0, col0) = tiled_coords(thread::block_idx_x(), thread::block_idx_y(), 0, 0);
        // Tile t's copies into stage t % MM_STAGES; every trip commits a group, empty past the
        // last tile, so "all but the newest MM_STAGES - 2 groups" is always "tile t".
        let issue = |t: u32| {
            if t < tiles && vectors {
                if let Some((is_b, r, c0)) = vector {
                    // A: row row0 + r, columns t*TILE + c0 ..+4; B: row t*TILE + r, columns
                    // col0 + c0 ..+4. k and n are multiples of 4, so a vector is all in or all out.
                    let (src, rows, cols, gr, gc) =
                        if is_b { (b, k, n, t * TILE + r, col0 + c0) } else { (a, m, k, row0 + r, t * TILE + c0) };
                    let bytes = mm_vector_bytes(gr, gc, rows, cols);
                    let slot = if is_b { mm_b_slot(t, tile_offset(r, c0)) } else { mm_a_slot(t, tile_offset(r, c0)) };
                    // SAFETY: an inside vector is below rows·cols, 16-byte aligned (mm_vectors);
                    // an outside one reads 0 bytes from the aligned buffer start. The slot is a
                    // 16-byte aligned part of stage t's half (c0 % 4 == 0), this thread's own.
                    unsafe {
                        let at = if bytes > 0 { row_major(gr as u64, gc as u64, cols as u64) as usize } else { 0 };
                        async_copy::copy_16_zfill(ring + 4 * slot, src.add(at), bytes);
                    }
                }
            } else if t < tiles {
                let (ac, br) = (tile_a_col(t, tx), tile_b_row(t, ty));
                let (a_in, b_in) = (row < m && ac < k, br < k && col < n);
                // SAFETY: an element outside the matrix reads 0 bytes (zero fill) from the
                // buffer's first float, which exists (m·k, k·n >= 1); one inside is below m·k
                // or k·n. The slots are inside the ring launched (mm_*_slot < MM_STAGES *
                // MM_STAGE_FLOATS) and this thread's own.
                unsafe {
                    let a_src = if a_in { a.add(row_major(row as u64, ac as u64, k as u64) as usize) } else { a };
                    let b_src = if b_in { b.add(row_major(br as u64, col as u64, n as u64) as usize) } else { b };
                    async_copy::copy_4_zfill(ring + 4 * mm_a_slot(t, here), a_src, if a_in { 4 } else { 0 });
                    async_copy::copy_4_zfill(ring + 4 * mm_b_slot(t, here), b_src, if b_in { 4 } else { 0 });
                }
            }
            async_copy::commit();
        };
        let mut t = 0;
        while t < MM_STAGES - 1 {
            issue(t);
            t += 1;
        }
        let mut acc = 0.0f32;
        t = 0;
        while t < tiles {
            // My copies of tile t have landed; after the barrier everyone's have, and everyone
            // has finished tile t - 1, whose stage the next issue overwrites.
            async_copy::wait::<{ MM_STAGES - 2 }>();
            thread::sync_threads();
            issue(t + MM_STAGES - 1);
            // SAFETY: shared indices stay inside stage t % MM_STAGES (ty, tx, i < TILE).
            unsafe {
                let sa = s.add(mm_a_slot(t, 0) as usize);
                let sb = s.add(mm_b_slot(t, 0) as usize);
                let mut i = 0;
                while i < TILE {
                    acc = fma(*sa.add(tile_offset(ty, i) as usize), *sb.add(tile_offset(i, tx) as usize), acc);
                    i += 1;
                }
            }
            t += 1;
        }
        if row < m && col < n {
            // SAFETY: row < m, col < n: below m·n, which C holds.
            unsafe { *c.add(row_major(row as u64, col as u64, n as u64) as usize) = acc };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::tiled::tile_offset;

    #[test]
    fn cp_async_stages_are_disjoint_and_fit() {
        let mut seen = std::collections::HashSet::new();
        for t in 0..MM_STAGES {
            for here in 0..TILE * TILE {
                assert!(seen.insert(mm_a_slot(t, here)) && seen.insert(mm_b_slot(t, here)));
            }
        }
        assert_eq!(seen.len() as u32 * 4, MM_SHARED_BYTES);
        assert_eq!(mm_a_slot(MM_STAGES, 5), mm_a_slot(0, 5), "the ring wraps");
    }

    #[test]
    fn cp_async_vectors_cover_both_tiles_once() {
        let (mut a, mut b) = (vec![0u8; (TILE * TILE) as usize], vec![0u8; (TILE * TILE) as usize]);
        for t in 0..TILE * TILE {
            if let Some((is_b, r, c0)) = mm_vector_of(t) {
                assert!(r < TILE && c0 % 4 == 0 && c0 + 4 <= TILE);
                let hits = if is_b { &mut b } else { &mut a };
                for c in c0..c0 + 4 {
                    hits[tile_offset(r, c) as usize] += 1;
                }
            }
        }
        assert!(a.iter().chain(&b).all(|&h| h == 1));
        // A warp's 32 vectors are 4 rows of 8 consecutive vectors (128 bytes each).
        let warp: Vec<_> = (32..64).map(|t| mm_vector_of(t).unwrap()).collect();
        assert_eq!((warp[0].1, warp[31].1, warp[7].2), (4, 7, 28));
        assert!(mm_vectors(64, 8, 256, 512) && !mm_vectors(64, 6, 256, 512) && !mm_vectors(64, 8, 260, 512));
        assert_eq!((mm_vector_bytes(3, 4, 4, 8), mm_vector_bytes(4, 4, 4, 8), mm_vector_bytes(0, 8, 4, 8)), (16, 0, 0));
    }
}
