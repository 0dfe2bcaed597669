//! Stage 5, regblock: each thread computes 8 × 8 outputs of a 128 × 128 tile from 16-byte loads.
//! Per k step 4 `ld.shared.v4` feed 64 FMAs: a 16:1 flop-to-shared-load ratio instead of 2:1.

use super::index::row_major;
use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, mem, shared, thread};

/// Register-blocked kernel: the block's output tile is BM × BN, it walks k in steps of BK,
/// and each of its 256 threads computes TM × TN outputs.
pub const BM: u32 = 128;
/// Columns of the register-blocked kernel's output tile.
pub const BN: u32 = 128;
/// k step of the register-blocked kernel (its k loop is unrolled by hand for BK = 8).
pub const BK: u32 = 8;
/// Output rows per thread of the register-blocked kernel.
pub const TM: u32 = 8;
/// Output columns per thread of the register-blocked kernel.
pub const TN: u32 = 8;
/// Threads per block of the register-blocked kernel (a 16 × 16 grid of 8 × 8 blocks), laid out
/// 1-D; the kernel derives every coordinate from this constant, never from `blockDim`.
pub const RB_THREADS: u32 = (BM / TM) * (BN / TN);
/// Shared memory of the register-blocked kernel: two stages of Aᵀ (BK × BM) and B (BK × BN).
pub const RB_SHARED_FLOATS: u32 = 2 * BK * (BM + BN);
/// One stage of the register-blocked kernel's shared memory, in 16-byte vectors: Aᵀ then B.
pub const RB_STAGE_V4: u32 = BK * (BM + BN) / 4;
/// Where B starts inside a stage, in 16-byte vectors (after Aᵀ's BK × BM floats).
pub const RB_B_OFFSET_V4: u32 = BK * BM / 4;

const _: () = assert!(RB_THREADS == 256, "the register-blocked kernel is written for 256 threads");
// One 16-byte vector of A and one of B per thread fill a stage.
const _: () = assert!(BM * BK / 4 == RB_THREADS, "one A vector per thread per stage");
const _: () = assert!(BK * BN / 4 == RB_THREADS, "one B vector per thread per stage");
const _: () = assert!(BK == 8, "matmul_regblock's k loop is unrolled by hand for BK = 8");
const _: () = assert!(TM == 8 && TN == 8, "the 8 x 8 block is two 4-float vectors a row and a column");
// The 4 + 4 split: the 16 thread rows (columns) at 4 floats each span exactly half the tile, so
// the second 4 start BM / 2 (BN / 2) further, and a fragment load is 2 vectors BM / 8 apart.
const _: () = assert!((BM / TM) * 4 == BM / 2 && (BN / TN) * 4 == BN / 2, "the 4 + 4 split covers the tile");
const _: () = assert!(RB_SHARED_FLOATS * 4 <= DEFAULT_SHARED_BYTES, "regblock shared memory must not need opt-in");
const _: () = assert!(RB_SHARED_FLOATS == 2 * RB_STAGE_V4 * 4, "two stages");

/// Grid of the register-blocked kernel (the shape must be supported: no partial tiles).
pub const fn regblock_grid(m: u32, n: u32) -> (u32, u32) {
    (n / BN, m / BM)
}

/// Whether the register-blocked kernel handles this shape (it has no bounds checks).
pub const fn regblock_supports(m: u32, n: u32, k: u32) -> bool {
    m > 0 && n > 0 && k > 0 && m.is_multiple_of(BM) && n.is_multiple_of(BN) && k.is_multiple_of(BK)
}

/// `(tx, ty)` of thread `t` of the register-blocked kernel in its 16 × 16 grid of 8 × 8 blocks.
#[inline(always)]
pub const fn rb_thread(t: u32) -> (u32, u32) {
    (t % (BN / TN), t / (BN / TN))
}

/// `(row0, col0)`: the corner of block `(bx, by)`'s BM × BN output tile.
#[inline(always)]
pub const fn rb_block_origin(bx: u32, by: u32) -> (u32, u32) {
    (by * BM, bx * BN)
}

/// `(row, col)` inside the BM × BK tile of A of the 16-byte vector thread `t` loads: 2 vectors a
/// row, so a warp reads 16 rows of 32 contiguous bytes.
#[inline(always)]
pub const fn rb_a_load(t: u32) -> (u32, u32) {
    (t / (BK / 4), (t % (BK / 4)) * 4)
}

/// `(row, col)` inside the BK × BN tile of B of the 16-byte vector thread `t` loads: 32 vectors
/// a row, so a warp reads one 512-byte row segment.
#[inline(always)]
pub const fn rb_b_load(t: u32) -> (u32, u32) {
    (t / (BN / 4), (t % (BN / 4)) * 4)
}

/// Element of A where the vector loaded at `(a_row, a_col)` (from [`rb_a_load`]) starts, for the
/// k tile `kt` of the block whose rows start at `row0`.
#[inline(always)]
pub const fn rb_a_index(row0: u32, (a_row, a_col): (u32, u32), kt: u32, k: u32) -> u64 {
    row_major((row0 + a_row) as u64, (kt * BK + a_col) as u64, k as u64)
}

/// Element of B where the vector loaded at `(b_row, b_col)` (from [`rb_b_load`]) starts, for the
/// k tile `kt` of the block whose columns start at `col0`.
#[inline(always)]
pub const fn rb_b_index(col0: u32, (b_row, b_col): (u32, u32), kt: u32, n: u32) -> u64 {
    row_major((kt * BK + b_row) as u64, (col0 + b_col) as u64, n as u64)
}

/// Float offset inside a stage's Aᵀ (BK rows of BM) where element `i` of the A vector loaded at
/// `(a_row, a_col)` goes: A's element `(a_row, a_col + i)` is Aᵀ's `(a_col + i, a_row)`.
#[inline(always)]
pub const fn rb_at_offset((a_row, a_col): (u32, u32), i: u32) -> u32 {
    (a_col + i) * BM + a_row
}

/// 16-byte-vector offset inside a stage's B part (BK rows of BN / 4 vectors) of the B vector
/// loaded at `(b_row, b_col)`: B is stored as loaded.
#[inline(always)]
pub const fn rb_b_offset((b_row, b_col): (u32, u32)) -> u32 {
    b_row * BN / 4 + b_col / 4
}

/// Vector offsets inside a stage's Aᵀ of the two A vectors thread row `ty` reads at k step `kk`:
/// rows `ty * 4 ..` and `BM / 2 + ty * 4 ..` (the 4 + 4 split).
#[inline(always)]
pub const fn rb_a_frag(kk: u32, ty: u32) -> (u32, u32) {
    (kk * BM / 4 + ty, kk * BM / 4 + BM / 8 + ty)
}

/// Vector offsets inside a stage's B part of the two B vectors thread column `tx` reads at k step
/// `kk`: columns `tx * 4 ..` and `BN / 2 + tx * 4 ..`.
#[inline(always)]
pub const fn rb_b_frag(kk: u32, tx: u32) -> (u32, u32) {
    (kk * BN / 4 + tx, kk * BN / 4 + BN / 8 + tx)
}

/// Row of C that accumulator row `i` (0..TM) of thread row `ty` holds: `ty * 4 + i` for the first
/// 4, then the same 64 rows further.
#[inline(always)]
pub const fn rb_out_row(row0: u32, ty: u32, i: u32) -> u32 {
    row0 + (i / 4) * (BM / 2) + ty * 4 + i % 4
}

/// First column of C of the 4 accumulators `half * 4 ..` of thread column `tx` (one 16-byte
/// store): `tx * 4`, then the same 64 columns further.
#[inline(always)]
pub const fn rb_out_col(col0: u32, tx: u32, half: u32) -> u32 {
    col0 + half * (BN / 2) + tx * 4
}

kernel! {
    /// Register blocking: a 128 × 128 tile per block, 8 × 8 outputs per thread held in
    /// registers. Per k step a thread loads 2 + 2 16-byte vectors from shared memory and does
    /// 64 FMAs (a 16:1 flop-to-shared-load ratio instead of 2:1). Aᵀ and B are staged with
    /// 16-byte global loads (a warp: 16 rows × 32 bytes of A, 512 contiguous bytes of B), two
    /// shared stages deep, the next stage prefetched into registers. The 8 × 8 block is split
    /// 4 + 4 rows/cols 64 apart so a warp's vector loads and stores touch contiguous 256-byte
    /// runs. Assumes `RB_THREADS` threads a block and a supported shape (no bounds checks).
    pub unsafe fn matmul_regblock(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `regblock`).
        unsafe { device::regblock(a, b, c, m, n, k) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::matmul::index::V4;

    /// # Safety
    /// `regblock_supports(m, n, k)`; buffers hold m·k, k·n and m·n floats and start on 16-byte
    /// boundaries; the launch is `regblock_grid(m, n)` blocks of `RB_THREADS` threads with
    /// `RB_SHARED_FLOATS` floats of shared memory (all checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn regblock(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let _ = m;
        let s = shared::dynamic::<V4>();
        let t = thread::thread_idx_x();
        let (tx, ty) = rb_thread(t);
        let (row0, col0) = rb_block_origin(thread::block_idx_x(), thread::block_idx_y());
        // Global load assignment: one vector of the A tile and one of the B tile per thread.
        let a_at = rb_a_load(t);
        let b_at = rb_b_load(t);
        // Shared layout in V4 units: stage s holds Aᵀ (BK × BM/4) then B (BK × BN/4).
        const STAGE: usize = RB_STAGE_V4 as usize;
        const B_OFF: usize = RB_B_OFFSET_V4 as usize;
        let sf = s as *mut f32;
        let mut acc = [[0.0f32; TN as usize]; TM as usize];
        // SAFETY (whole body): the plan checked m % BM == 0, n % BN == 0, k % BK == 0, the
        // buffer lengths and the launch, so every global index below (from the shared index
        // functions, for t < RB_THREADS and the grid's blocks) is in bounds; shared indices stay
        // inside the 2 stages launched (RB_SHARED_FLOATS floats); all vectors are 16-byte aligned.
        unsafe {
            let load_a = |kt: u32| mem::load_v4_f32(a.add(rb_a_index(row0, a_at, kt, k) as usize) as *const [f32; 4]);
            let load_b = |kt: u32| mem::load_v4_f32(b.add(rb_b_index(col0, b_at, kt, n) as usize) as *const [f32; 4]);
            let store = |stage: usize, va: [f32; 4], vb: [f32; 4]| {
                let base = sf.add(stage * STAGE * 4);
                let mut i = 0;
                while i < 4 {
                    *base.add(rb_at_offset(a_at, i) as usize) = va[i as usize];
                    i += 1;
                }
                *s.add(stage * STAGE + B_OFF + rb_b_offset(b_at) as usize) = V4(vb);
            };
            let tiles = k / BK;
            store(0, load_a(0), load_b(0));
            thread::sync_threads();
            let mut kt = 0;
            while kt < tiles {
                let stage = (kt % 2) as usize;
                let more = kt + 1 < tiles;
                let (mut va, mut vb) = ([0.0f32; 4], [0.0f32; 4]);
                if more {
                    va = load_a(kt + 1);
                    vb = load_b(kt + 1);
                }
                let sa = s.add(stage * STAGE);
                let sb = s.add(stage * STAGE + B_OFF);
                // One k step: 4 vector loads from shared memory, 64 FMAs. Called with literal
                // k so the whole BK loop unrolls (LLVM leaves a loop this large rolled).
                let mut step = |kk: u32| {
                    let (a_lo, a_hi) = rb_a_frag(kk, ty);
                    let (b_lo, b_hi) = rb_b_frag(kk, tx);
                    let (a_lo, a_hi) = (*sa.add(a_lo as usize), *sa.add(a_hi as usize));
                    let (b_lo, b_hi) = (*sb.add(b_lo as usize), *sb.add(b_hi as usize));
                    let fa = [a_lo.0[0], a_lo.0[1], a_lo.0[2], a_lo.0[3], a_hi.0[0], a_hi.0[1], a_hi.0[2], a_hi.0[3]];
                    let fb = [b_lo.0[0], b_lo.0[1], b_lo.0[2], b_lo.0[3], b_hi.0[0], b_hi.0[1], b_hi.0[2], b_hi.0[3]];
                    let mut i = 0;
                    while i < TM as usize {
                        let mut j = 0;
                        while j < TN as usize {
                            acc[i][j] = fma(fa[i], fb[j], acc[i][j]);
                            j += 1;
                        }
                        i += 1;
                    }
                };
                step(0);
                step(1);
                step(2);
                step(3);
                step(4);
                step(5);
                step(6);
                step(7);
                if more {
                    // The other stage was last read in the previous trip, before its barrier.
                    store(1 - stage, va, vb);
                }
                thread::sync_threads();
                kt += 1;
            }
            let mut i = 0;
            while i < TM {
                let r = rb_out_row(row0, ty, i);
                let mut half = 0;
                while half < 2 {
                    let col = rb_out_col(col0, tx, half);
                    let j = (half * 4) as usize;
                    let v =
                        [acc[i as usize][j], acc[i as usize][j + 1], acc[i as usize][j + 2], acc[i as usize][j + 3]];
                    let at = row_major(r as u64, col as u64, n as u64) as usize;
                    mem::store_v4_f32(c.add(at) as *mut [f32; 4], v);
                    half += 1;
                }
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_blocking_shape_is_consistent() {
        assert_eq!(RB_SHARED_FLOATS * 4, 16 * 1024);
        assert!(regblock_supports(128, 256, 8));
        assert!(!regblock_supports(128, 200, 8));
        assert!(!regblock_supports(0, 128, 8));
        assert!(!regblock_supports(128, 128, 12));
        assert_eq!(regblock_grid(256, 384), (3, 2));
    }

    #[test]
    fn regblock_stage_is_filled_exactly_once() {
        let mut at = vec![0u8; (BK * BM) as usize];
        let mut bt = vec![0u8; (BK * BN / 4) as usize];
        for t in 0..RB_THREADS {
            let (a_row, a_col) = rb_a_load(t);
            assert!(a_row < BM && a_col + 4 <= BK);
            for i in 0..4 {
                at[rb_at_offset((a_row, a_col), i) as usize] += 1;
            }
            let (b_row, b_col) = rb_b_load(t);
            assert!(b_row < BK && b_col + 4 <= BN && b_col % 4 == 0);
            bt[rb_b_offset((b_row, b_col)) as usize] += 1;
        }
        assert!(at.iter().all(|&h| h == 1), "Aᵀ");
        assert!(bt.iter().all(|&h| h == 1), "B");
        assert_eq!(RB_B_OFFSET_V4 * 4, BK * BM);
    }

    #[test]
    fn regblock_fragments_stay_in_their_part_of_the_stage() {
        for kk in 0..BK {
            for t in 0..RB_THREADS {
                let (tx, ty) = rb_thread(t);
                let (lo, hi) = rb_a_frag(kk, ty);
                assert!(lo < RB_B_OFFSET_V4 && hi < RB_B_OFFSET_V4);
                // The A vectors hold rows ty*4.. and BM/2 + ty*4.. of Aᵀ's row kk.
                assert_eq!((lo * 4 % BM, hi * 4 % BM, lo * 4 / BM), (ty * 4, BM / 2 + ty * 4, kk));
                let (lo, hi) = rb_b_frag(kk, tx);
                assert!(lo < BK * BN / 4 && hi < BK * BN / 4);
                assert_eq!((lo * 4 % BN, hi * 4 % BN, lo * 4 / BN), (tx * 4, BN / 2 + tx * 4, kk));
                // What the fragment reads is what rb_out_row / rb_out_col say the thread owns.
                assert_eq!(rb_out_row(0, ty, 0), ty * 4);
                assert_eq!(rb_out_row(0, ty, 4), BM / 2 + ty * 4);
                assert_eq!(rb_out_col(0, tx, 1), BN / 2 + tx * 4);
            }
        }
    }

    #[test]
    fn regblock_threads_cover_the_output_tile_once_in_256_byte_runs() {
        let mut hits = vec![0u8; (BM * BN) as usize];
        for t in 0..RB_THREADS {
            let (tx, ty) = rb_thread(t);
            for i in 0..TM {
                for half in 0..2 {
                    let (r, c) = (rb_out_row(0, ty, i), rb_out_col(0, tx, half));
                    for j in 0..4 {
                        hits[(r * BN + c + j) as usize] += 1;
                    }
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1));
        // A warp (threads 32w .. 32w + 31) stores, for each (i, half), two rows of 16
        // consecutive 16-byte vectors: contiguous 256-byte runs.
        for w in 0..RB_THREADS / 32 {
            let cols: Vec<u32> = (32 * w..32 * w + 16).map(|t| rb_out_col(0, rb_thread(t).0, 0)).collect();
            assert!(cols.windows(2).all(|p| p[1] == p[0] + 4));
        }
    }

    #[test]
    fn regblock_global_loads_stay_inside_a_supported_shape() {
        let (m, n, k) = (256u32, 384u32, 24u32);
        let (gx, gy) = regblock_grid(m, n);
        for (bx, by) in [(0, 0), (gx - 1, gy - 1)] {
            let (row0, col0) = rb_block_origin(bx, by);
            for t in [0, 1, 31, 32, RB_THREADS - 1] {
                for kt in [0, k / BK - 1] {
                    assert!(rb_a_index(row0, rb_a_load(t), kt, k) + 4 <= (m * k) as u64);
                    assert!(rb_b_index(col0, rb_b_load(t), kt, n) + 4 <= (k * n) as u64);
                }
                let (tx, ty) = rb_thread(t);
                let last = row_major(rb_out_row(row0, ty, TM - 1) as u64, rb_out_col(col0, tx, 1) as u64, n as u64);
                assert!(last + 4 <= (m * n) as u64);
            }
        }
    }
}
