//! Stage 12, skinny (m ≤ 8, any n and k): one row of A meets all of B, so the multiply is B read
//! once. A block owns a slab of 8–32 columns of C for all of k; its lanes read B's rows across
//! the slab (128, 64 or 32 contiguous bytes: whole sectors, each read once), A's few rows are
//! broadcasts from L1, and the block's threads split k and add their sums in shared memory.
//!
//! The tiled stages give m = 1 one block row of 128: 32 blocks walk all of k on a quarter of an
//! H100's multiprocessors. Here every multiprocessor streams its own columns of B, each sector of
//! B crosses DRAM once, and the sum is in a fixed order (no atomics): the same inputs give the
//! same bits on every call.

#[cfg(target_arch = "nvptx64")]
use super::index::row_major;
use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, mem, order, shared, thread};

/// Rows of C (and A) a block computes: the `m` a skinny multiply may have in one block row.
/// (32 rows a block spilled: ptxas keeps each row's address of A in two registers.)
pub const SKINNY_ROWS: u32 = 8;
/// Threads of a block: `width` columns by `512 / width` thread rows ([`skinny_block`]).
pub const SKINNY_THREADS: u32 = 512;
/// Consecutive rows of B a thread loads before its FMAs: 32 loads of 4 bytes in flight a thread,
/// 64 KiB a multiprocessor. (1024 threads of 16 held as much, but at 64 registers a thread
/// ptxas issued only 11 of the 16 before the first FMA: 2.4 TB/s of an H200's 4.3.)
pub const SKINNY_UNROLL: u32 = 32;
/// Shared memory of a block: each thread's [`SKINNY_ROWS`] partial sums.
pub const SKINNY_SHARED_BYTES: u32 = SKINNY_THREADS * SKINNY_ROWS * 4;

const _: () = assert!(SKINNY_SHARED_BYTES <= DEFAULT_SHARED_BYTES, "skinny partials must not need opt-in");
const _: () = assert!(
    SKINNY_UNROLL == 32 && SKINNY_ROWS == 8,
    "the loops are unroll_tile! over B's rows, unroll_8! over A's rows and vectors"
);

/// Columns of C a block covers on a GPU of `sms` multiprocessors: the widest of 32, 16 and 8
/// whose blocks leave at most a 16th of the multiprocessors idle (a lane a column, so a warp
/// reads one row of B's slab in 128 bytes, two rows in 64 or four in 32: whole sectors in every
/// case, and A's broadcasts one address a warp at width 32, two or four narrower).
pub const fn skinny_width(n: u32, sms: u32) -> u32 {
    if skinny_fills(n, 32, sms) {
        32
    } else if skinny_fills(n, 16, sms) {
        16
    } else {
        8
    }
}

/// Whether slabs of `width` columns give all but a 16th of `sms` multiprocessors a block.
const fn skinny_fills(n: u32, width: u32, sms: u32) -> bool {
    16 * n.div_ceil(width) as u64 >= 15 * sms as u64
}

/// The block of a launch of `width` columns: `(width, 512 / width)`; a thread row is `threadIdx.y`.
pub const fn skinny_block(width: u32) -> (u32, u32) {
    (width, SKINNY_THREADS / width)
}

/// Grid over `m × n`: a block a slab of `width` columns and [`SKINNY_ROWS`] rows.
pub const fn skinny_grid(m: u32, n: u32, width: u32) -> (u32, u32) {
    (n.div_ceil(width), m.div_ceil(SKINNY_ROWS))
}

/// Rows of B a block's threads read in one step: [`SKINNY_UNROLL`] each thread row.
pub const fn skinny_step(thread_rows: u32) -> u64 {
    thread_rows as u64 * SKINNY_UNROLL as u64
}

/// The first of the [`SKINNY_UNROLL`] consecutive rows of B (columns of A) thread row `ty`
/// reads in the step that starts at row `k0`.
#[inline(always)]
pub const fn skinny_k(k0: u64, ty: u32) -> u64 {
    k0 + ty as u64 * SKINNY_UNROLL as u64
}

/// Rows of C the block whose first row is `row0` stores: at most [`SKINNY_ROWS`].
pub const fn skinny_rows(m: u32, row0: u32) -> u32 {
    let rows = m.saturating_sub(row0);
    if rows > SKINNY_ROWS { SKINNY_ROWS } else { rows }
}

/// Float offset in shared memory of thread `(tx, ty)`'s partial sum of row `i` of its block,
/// in a block `width` columns wide: a warp's lanes store consecutive floats.
#[inline(always)]
pub const fn skinny_partial(tx: u32, ty: u32, i: u32, width: u32) -> u32 {
    (ty * SKINNY_ROWS + i) * width + tx
}

/// Whether a thread reads A's rows 16 bytes at a time: `k` a multiple of 4 (each thread's rows
/// start at a multiple of [`SKINNY_UNROLL`], so every vector starts on a row's multiple of 4)
/// and A at a 16-byte boundary. Otherwise 4 bytes at a time.
pub const fn skinny_vectors(k: u32, a: u64) -> bool {
    k.is_multiple_of(4) && a.is_multiple_of(16)
}

kernel! {
    #[launch_bounds(512, 1)]
    /// Skinny: block `(bx, by)` computes rows `by·8..` of C over columns `bx·width..` for all
    /// of k (`width` = `blockDim.x`). Thread `(tx, ty)` walks k in steps of `blockDim.y · 32`
    /// rows, loading 32 rows of B at column `tx` (a warp: 128 contiguous bytes of one row, or 64
    /// of two, or 32 of four) and the same 32 columns of A's rows (broadcasts, 16 bytes where
    /// [`skinny_vectors`]); then the thread rows' sums meet in shared memory, added in order of
    /// `ty`. Rows of A are clamped to `m - 1` and columns of B to `n - 1`; only `r < m`,
    /// `col < n` are stored.
    pub unsafe fn matmul_skinny(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `skinny`).
        unsafe { device::skinny(a, b, c, m, n, k) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// A thread's sums, two a row of the block: the even and odd columns of each of A's vectors
    /// go into their own, so a row's 32 FMAs are two chains of 16, not one of 32. (Four sums a
    /// row ran no faster and left ptxas a few bytes of spills at 128 registers.)
    type Sums = [[f32; 2]; SKINNY_ROWS as usize];

    /// A thread's operands for one step.
    struct At {
        /// Its first row of B, column of A.
        kk: u64,
        /// The same in the next step.
        next: u64,
        k: u64,
        n: u64,
        /// Its column of B, clamped to `n - 1`.
        col: u64,
        /// The block's first row of C.
        row0: u32,
        m: u32,
    }

    /// One step: 32 rows of B and A's columns for them, into `acc`. With `GUARD` (the last step)
    /// rows at or past k read nothing and add nothing; with `VEC` A is read 16 bytes at a time.
    ///
    /// # Safety
    /// A and B hold m·k and k·n floats, m, n and k are at least 1, `col < n`; without `GUARD`
    /// `kk + 32 <= k`; with `VEC` `skinny_vectors(k, a)`.
    #[inline(always)]
    unsafe fn step<const GUARD: bool, const VEC: bool>(a: *const f32, b: *const f32, at: &At, acc: &mut Sums) {
        let mut bv = [0.0f32; SKINNY_UNROLL as usize];
        // All 32 loads of B issued before any FMA: they are the stream.
        unroll_tile!(u => {
            let r = at.kk + u as u64;
            if !GUARD || r < at.k {
                // SAFETY: r < k and col < n.
                bv[u as usize] = unsafe { *b.add(row_major(r, at.col, at.n) as usize) };
            }
        });
        // Pinned here, so that LLVM does not sink a load to its first FMA.
        order::pin(&mut bv);
        // A's rows for the next step, into L1 while this one's FMAs wait for B: a block reads
        // each of A's floats once, so they come from L2, and the rows' loads after the first
        // would each wait an L2 round trip behind the FMAs before them (m = 8 ran at 38% of
        // DRAM bandwidth, m = 1 at 78%).
        if !GUARD && at.next + SKINNY_UNROLL as u64 <= at.k {
            unroll_8!(i => {
                let row = at.row0 + i;
                if row < at.m {
                    let first = row_major(row as u64, at.next, at.k);
                    let last = first + SKINNY_UNROLL as u64 - 1;
                    // SAFETY: row < m and next <= last < next + UNROLL <= k: inside A.
                    unsafe {
                        mem::prefetch_l1(a.add(first as usize));
                        mem::prefetch_l1(a.add(last as usize));
                    }
                }
            });
        }
        // SAFETY: forwarded from the caller.
        unsafe { rows::<GUARD, VEC>(a, at, &bv, acc) }
    }

    /// The block's rows of the step: each row of A's 32 columns against `bv`.
    ///
    /// # Safety
    /// As [`step`].
    #[inline(always)]
    unsafe fn rows<const GUARD: bool, const VEC: bool>(
        a: *const f32,
        at: &At,
        bv: &[f32; SKINNY_UNROLL as usize],
        acc: &mut Sums,
    ) {
        // The rows' offsets computed again each step (8 multiplies): hoisted, they held 16
        // registers for the whole loop, and ptxas then issued B's loads late to make room.
        let k = order::here(at.k as u32) as u64;
        // Unrolled by hand: rolled, LLVM kept B's 32 floats in local memory to index them.
        // A row past m is skipped (a uniform branch): m = 1 costs one row, and ptxas does not
        // hoist a row's loads above the branch into the registers B's loads hold.
        unroll_8!(i => {
            let row = at.row0 + i;
            if row < at.m {
            let first = row_major(row as u64, at.kk, k) as usize;
            let out = &mut acc[i as usize];
            // A vector at a time, each into its four FMAs: a whole row of A at once would hold
            // as many registers as B's rows.
            unroll_8!(q => {
                let q = q as usize;
                let mut a4 = [0.0f32; 4];
                if VEC && !GUARD {
                    // SAFETY: kk + UNROLL <= k, and first + 4q is a multiple of 4 of a 16-byte
                    // aligned A (k a multiple of 4, kk of UNROLL): a whole vector inside row `row`.
                    a4 = unsafe { mem::load_v4_f32_nc((a.add(first) as *const [f32; 4]).add(q)) };
                } else {
                    for (j, v) in a4.iter_mut().enumerate() {
                        let u = 4 * q + j;
                        if !GUARD || at.kk + (u as u64) < at.k {
                            // SAFETY: row < m and kk + u < k.
                            *v = unsafe { *a.add(first + u) };
                        }
                    }
                }
                for (j, x) in a4.iter().enumerate() {
                    out[j % 2] = fma(*x, bv[4 * q + j], out[j % 2]);
                }
            });
            }
        });
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats, m, n, k ≥ 1; the launch is `skinny_block(w)`
    /// threads for w of 8, 16 or 32 on `skinny_grid(m, n, w)` with `SKINNY_SHARED_BYTES` of
    /// shared memory (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn skinny(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (width, thread_rows) = (thread::block_dim_x(), thread::block_dim_y());
        let col = thread::block_idx_x() * width + tx;
        let row0 = thread::block_idx_y() * SKINNY_ROWS;
        let stride = skinny_step(thread_rows);
        let mut at =
            At { kk: 0, next: 0, k: k as u64, n: n as u64, col: if col < n { col } else { n - 1 } as u64, row0, m };
        let mut acc: Sums = [[0.0; 2]; SKINNY_ROWS as usize];
        let mut k0 = 0u64;
        // SAFETY: whole steps end at or before k; the last, partial one is guarded.
        unsafe {
            if skinny_vectors(k, a as u64) {
                while k0 + stride <= at.k {
                    at.kk = skinny_k(k0, ty);
                    at.next = skinny_k(k0 + stride, ty);
                    step::<false, true>(a, b, &at, &mut acc);
                    k0 += stride;
                }
            } else {
                while k0 + stride <= at.k {
                    at.kk = skinny_k(k0, ty);
                    at.next = skinny_k(k0 + stride, ty);
                    step::<false, false>(a, b, &at, &mut acc);
                    k0 += stride;
                }
            }
            if k0 < at.k {
                at.kk = skinny_k(k0, ty);
                step::<true, false>(a, b, &at, &mut acc);
            }
        }
        let s = shared::dynamic::<f32>();
        // SAFETY: skinny_partial(tx, ty, i, width) < 512 · 8 floats, the shared memory launched.
        unsafe {
            for i in 0..SKINNY_ROWS as usize {
                let [even, odd] = acc[i];
                *s.add(skinny_partial(tx, ty, i as u32, width) as usize) = even + odd;
            }
        }
        // Every partial is stored before any is added.
        thread::sync_threads();
        let rows = skinny_rows(m, row0);
        let mut o = ty * width + tx;
        while o < rows * width {
            let (i, x) = (o / width, o % width);
            let (row, col) = (row0 + i, thread::block_idx_x() * width + x);
            if row < m && col < n {
                let mut sum = 0.0f32;
                // SAFETY: r < thread_rows, i < 32 and x < width: inside the partials; row < m and
                // col < n inside C.
                unsafe {
                    for r in 0..thread_rows {
                        sum += *s.add(skinny_partial(x, r, i, width) as usize);
                    }
                    *c.add(row_major(row as u64, col as u64, n as u64) as usize) = sum;
                }
            }
            o += SKINNY_THREADS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_every_row_of_b_once() {
        for thread_rows in [8u32, 16, 32] {
            let k = 1000u64;
            let stride = skinny_step(thread_rows);
            let mut hits = vec![0u8; k as usize];
            let mut k0 = 0;
            while k0 < k {
                for ty in 0..thread_rows {
                    for u in 0..SKINNY_UNROLL as u64 {
                        let r = skinny_k(k0, ty) + u;
                        if r < k {
                            hits[r as usize] += 1;
                        }
                    }
                }
                k0 += stride;
            }
            assert!(hits.iter().all(|&h| h == 1), "{thread_rows} thread rows");
        }
    }

    #[test]
    fn widths_fill_the_gpu_and_partials_tile_shared_memory() {
        // 128 slabs of 32 leave 4 of 132 SMs idle (under a 16th); 2048 columns need 16.
        assert_eq!(skinny_width(4096, 132), 32);
        assert_eq!(skinny_width(2048, 132), 16);
        assert_eq!(skinny_width(100, 132), 8);
        for w in [8u32, 16, 32] {
            let (bx, by) = skinny_block(w);
            assert_eq!(bx * by, SKINNY_THREADS);
            let mut seen = vec![false; (SKINNY_THREADS * SKINNY_ROWS) as usize];
            for ty in 0..by {
                for tx in 0..bx {
                    for i in 0..SKINNY_ROWS {
                        let o = skinny_partial(tx, ty, i, w) as usize;
                        assert!(!seen[o]);
                        seen[o] = true;
                    }
                }
            }
        }
        assert_eq!(skinny_rows(1, 0), 1);
        assert_eq!(skinny_rows(9, 0), 8);
        assert_eq!(skinny_rows(70, 64), 6);
        assert_eq!(skinny_rows(60, 64), 0);
        assert_eq!(skinny_grid(9, 4097, 32), (129, 2));
    }
}
