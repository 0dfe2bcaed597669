//! FP32 matrix multiply `C (m × n) = A (m × k) · B (k × n)`, all row-major. The progression:
//! naive (one output a thread, operands from global memory), shared-memory tiles, tiles with
//! the next one prefetched into registers (double buffering), and a register-blocked kernel
//! where each thread computes an 8 × 8 block from 16-byte shared-memory loads.

/// Tile side of the tiled kernels (and their 32 × 32 thread blocks).
pub const TILE: u32 = 32;
/// Thread block of the naive kernel.
pub const NAIVE_BLOCK: (u32, u32) = (32, 8);
/// Register-blocked kernel: the block's output tile is BM × BN, it walks k in steps of BK,
/// and each of its 256 threads computes TM × TN outputs.
pub const BM: u32 = 128;
pub const BN: u32 = 128;
pub const BK: u32 = 8; // matmul_regblock's k loop is unrolled by hand for BK = 8
pub const TM: u32 = 8;
pub const TN: u32 = 8;
/// Threads per block of the register-blocked kernel.
pub const RB_THREADS: u32 = (BM / TM) * (BN / TN);
/// Shared memory of the register-blocked kernel: two stages of Aᵀ (BK × BM) and B (BK × BN).
pub const RB_SHARED_FLOATS: u32 = 2 * BK * (BM + BN);

/// Grid of the naive kernel.
pub const fn naive_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(NAIVE_BLOCK.0), m.div_ceil(NAIVE_BLOCK.1))
}

/// Grid of the tiled kernels.
pub const fn tiled_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(TILE), m.div_ceil(TILE))
}

/// Whether the register-blocked kernel handles this shape (it has no bounds checks).
pub const fn regblock_supports(m: u32, n: u32, k: u32) -> bool {
    m > 0 && n > 0 && k > 0 && m.is_multiple_of(BM) && n.is_multiple_of(BN) && k.is_multiple_of(BK)
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::math::fma;
    use crate::prelude::{mem, shared, thread};

    /// Naive: thread (row, col) walks row `row` of A and column `col` of B in global memory.
    /// B and C accesses are coalesced across the warp, A is a broadcast; every operand is
    /// re-read from L2 by every thread that needs it (2k loads per 2k flops).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let col = thread::block_idx_x() * NAIVE_BLOCK.0 + thread::thread_idx_x();
        let row = thread::block_idx_y() * NAIVE_BLOCK.1 + thread::thread_idx_y();
        if row < m && col < n {
            let (row, col, n, k) = (row as usize, col as usize, n as usize, k as usize);
            let mut acc = 0.0f32;
            // SAFETY: row < m, col < n, i < k; the launcher checked the buffers' lengths.
            unsafe {
                for i in 0..k {
                    acc = fma(*a.add(row * k + i), *b.add(i * n + col), acc);
                }
                *c.add(row * n + col) = acc;
            }
        }
    }

    /// Element (r, i) of a `rows × cols` row-major matrix, 0 outside it.
    ///
    /// # Safety
    /// `p` holds `rows * cols` floats.
    #[inline(always)]
    unsafe fn at(p: *const f32, r: u32, i: u32, rows: u32, cols: u32) -> f32 {
        // SAFETY: bounds checked here.
        if r < rows && i < cols { unsafe { *p.add(r as usize * cols as usize + i as usize) } } else { 0.0 }
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats; the launch is (32, 32) threads with
    /// `2 * TILE * TILE` floats of shared memory (checked by the launcher).
    #[inline(always)]
    unsafe fn tiled<const PREFETCH: bool>(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let s = shared::dynamic::<f32>();
        // SAFETY: the launch has 2 * TILE * TILE floats of shared memory; B's tile is the second half.
        let (sa, sb) = (s, unsafe { s.add((TILE * TILE) as usize) });
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let row = thread::block_idx_y() * TILE + ty;
        let col = thread::block_idx_x() * TILE + tx;
        let here = (ty * TILE + tx) as usize;
        let tiles = k.div_ceil(TILE);
        let mut acc = 0.0f32;
        // SAFETY (whole body): `at` checks global bounds; shared indices < TILE * TILE.
        unsafe {
            // With PREFETCH the registers always hold the tile to be stored next.
            let mut next_a = if PREFETCH { at(a, row, tx, m, k) } else { 0.0 };
            let mut next_b = if PREFETCH { at(b, ty, col, k, n) } else { 0.0 };
            let mut t = 0;
            while t < tiles {
                if PREFETCH {
                    *sa.add(here) = next_a;
                    *sb.add(here) = next_b;
                } else {
                    *sa.add(here) = at(a, row, t * TILE + tx, m, k);
                    *sb.add(here) = at(b, t * TILE + ty, col, k, n);
                }
                // The tile is complete before anyone reads it.
                thread::sync_threads();
                if PREFETCH && t + 1 < tiles {
                    // Issued before the arithmetic, so the loads' latency hides behind it.
                    next_a = at(a, row, (t + 1) * TILE + tx, m, k);
                    next_b = at(b, (t + 1) * TILE + ty, col, k, n);
                }
                let mut i = 0;
                while i < TILE {
                    acc = fma(*sa.add((ty * TILE + i) as usize), *sb.add((i * TILE + tx) as usize), acc);
                    i += 1;
                }
                // Everyone is done reading the tile before it is overwritten.
                thread::sync_threads();
                t += 1;
            }
            if row < m && col < n {
                *c.add(row as usize * n as usize + col as usize) = acc;
            }
        }
    }

    /// Shared-memory tiles: each block stages 32 × 32 tiles of A and B (coalesced loads), so
    /// each operand is read from global memory once per block instead of once per thread.
    /// Barriers after the store and after the use (the seed's listing misplaces both).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn matmul_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { tiled::<false>(a, b, c, m, n, k) }
    }

    /// Tiles with prefetch: the next tile's global loads are issued into registers before the
    /// current tile is computed, so their latency overlaps the arithmetic (two more registers).
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn matmul_prefetch(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { tiled::<true>(a, b, c, m, n, k) }
    }

    /// 16 bytes of shared memory, so shared loads of it are `ld.shared.v4`.
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct V4([f32; 4]);

    /// Register blocking: a 128 × 128 tile per block, 8 × 8 outputs per thread held in
    /// registers. Per k step a thread loads 2 + 2 16-byte vectors from shared memory and does
    /// 64 FMAs (a 16:1 flop-to-shared-load ratio instead of 2:1). Aᵀ and B are staged with
    /// 16-byte global loads, two shared stages deep, the next stage prefetched into registers.
    /// The 8 × 8 block is split 4 + 4 rows/cols 64 apart so a warp's vector loads and stores
    /// touch contiguous 256-byte runs.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn matmul_regblock(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let _ = m;
        let s = shared::dynamic::<V4>();
        let t = thread::thread_idx_x();
        let (tx, ty) = (t % (BN / TN), t / (BN / TN));
        let (row0, col0) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        let (n_, k_) = (n as usize, k as usize);
        // Global load assignment: A tile is BM rows × BK cols (2 vectors a row), B tile is
        // BK rows × BN cols (32 vectors a row); one vector of each per thread.
        let (a_row, a_col) = (t / 2, (t % 2) * 4);
        let (b_row, b_col) = (t / 32, (t % 32) * 4);
        // Shared layout in V4 units: stage s holds Aᵀ (BK × BM/4) then B (BK × BN/4).
        const STAGE: usize = (BK * (BM + BN) / 4) as usize;
        const B_OFF: usize = (BK * BM / 4) as usize;
        let sf = s as *mut f32;
        let mut acc = [[0.0f32; TN as usize]; TM as usize];
        // SAFETY (whole body): the launcher checked m % BM == 0, n % BN == 0, k % BK == 0 and
        // the buffer lengths, so every global index is in bounds; shared indices stay inside
        // the 2 stages launched (RB_SHARED_FLOATS floats); all vectors are 16-byte aligned.
        unsafe {
            let load_a = |kt: u32| {
                mem::load_v4_f32(a.add((row0 + a_row) as usize * k_ + (kt * BK + a_col) as usize) as *const [f32; 4])
            };
            let load_b = |kt: u32| {
                mem::load_v4_f32(b.add((kt * BK + b_row) as usize * n_ + (col0 + b_col) as usize) as *const [f32; 4])
            };
            let store = |stage: usize, va: [f32; 4], vb: [f32; 4]| {
                let base = sf.add(stage * STAGE * 4);
                // Aᵀ: element (a_row, a_col + i) goes to row a_col + i, column a_row.
                let mut i = 0;
                while i < 4 {
                    *base.add(((a_col + i) * BM + a_row) as usize) = va[i as usize];
                    i += 1;
                }
                *s.add(stage * STAGE + B_OFF + (b_row * BN / 4 + b_col / 4) as usize) = V4(vb);
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
                    let a_lo = *sa.add((kk * BM / 4 + ty) as usize);
                    let a_hi = *sa.add((kk * BM / 4 + BM / 8 + ty) as usize);
                    let b_lo = *sb.add((kk * BN / 4 + tx) as usize);
                    let b_hi = *sb.add((kk * BN / 4 + BN / 8 + tx) as usize);
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
            // Rows ty*4 + {0..4} and 64 + ty*4 + {0..4}; columns likewise with tx.
            let mut i = 0;
            while i < TM {
                let r = row0 + (i / 4) * (BM / 2) + ty * 4 + i % 4;
                let mut half = 0;
                while half < 2 {
                    let col = col0 + half * (BN / 2) + tx * 4;
                    let j = (half * 4) as usize;
                    let v =
                        [acc[i as usize][j], acc[i as usize][j + 1], acc[i as usize][j + 2], acc[i as usize][j + 3]];
                    mem::store_v4_f32(c.add(r as usize * n_ + col as usize) as *mut [f32; 4], v);
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
        assert_eq!(RB_THREADS, 256);
        // One A vector and one B vector per thread fill a stage.
        assert_eq!(BM * BK / 4, RB_THREADS);
        assert_eq!(BK * BN / 4, RB_THREADS);
        assert_eq!(RB_SHARED_FLOATS * 4, 16 * 1024);
        assert!(regblock_supports(128, 256, 8));
        assert!(!regblock_supports(128, 200, 8));
        assert!(!regblock_supports(0, 128, 8));
        assert!(!regblock_supports(128, 128, 12));
        assert_eq!(tiled_grid(33, 65), (3, 2));
    }
}
