//! Stage 13, thin (n ≤ 8, any m and k): a few columns of B meet all of A, so the multiply is A
//! read once. A warp streams two rows of A (512 contiguous bytes a load), B's rows for the block's
//! chunk of k are staged in shared memory column by column, so that lanes read them as 16-byte
//! vectors without conflicts, and each lane's sums meet in a shuffle tree at the end.
//!
//! Read from L1 instead, a lane's four rows of B would be 128 bytes of their own line: 32
//! wavefronts a load. The transposed chunk costs 4, shared by both rows of the warp.

#[cfg(target_arch = "nvptx64")]
use super::index::row_major;
use crate::kernel;
use crate::launch::DEFAULT_SHARED_BYTES;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{math::fma, mem, shared, thread, warp};

/// Columns of C (and B) a block computes: all of them when n ≤ 8.
pub const THIN_COLS: u32 = 8;
/// Rows of A (and C) a warp streams.
pub const THIN_WARP_ROWS: u32 = 2;
/// Warps of a block.
pub const THIN_WARPS: u32 = 8;
/// Threads of a block.
pub const THIN_THREADS: u32 = THIN_WARPS * 32;
/// Rows of C a block computes.
pub const THIN_ROWS: u32 = THIN_WARPS * THIN_WARP_ROWS;
/// k a warp step covers: a float4 of A's row a lane.
pub const THIN_STEP: u32 = 128;
/// Warp steps a chunk: the A loads a lane issues before it waits (two rows: 4 vectors, 64 bytes).
/// (Four, 128 bytes, left ptxas a few bytes of spills at two blocks a multiprocessor.)
pub const THIN_STEPS: u32 = 2;
/// Rows of B staged at once.
pub const THIN_CHUNK: u32 = THIN_STEP * THIN_STEPS;
/// Shared memory of a block: the chunk of B, one column a row of `THIN_CHUNK` floats.
pub const THIN_SHARED_BYTES: u32 = THIN_COLS * THIN_CHUNK * 4;

const _: () = assert!(THIN_SHARED_BYTES <= DEFAULT_SHARED_BYTES, "thin's chunk must not need opt-in");
/// Rows of B each thread stages a chunk.
pub const THIN_STAGED_ROWS: u32 = THIN_CHUNK / THIN_THREADS;
const _: () = assert!(THIN_CHUNK.is_multiple_of(THIN_THREADS), "the threads stage whole rows of B");
const _: () = assert!(THIN_COLS == 8 && THIN_STEPS == 2 && THIN_WARP_ROWS == 2, "the loops are unroll_8! and 2 × 2");

/// Grid over `m × n`: a block `THIN_ROWS` rows by `THIN_COLS` columns.
pub const fn thin_grid(m: u32, n: u32) -> (u32, u32) {
    (n.div_ceil(THIN_COLS), m.div_ceil(THIN_ROWS))
}

/// Row `r` (of [`THIN_WARP_ROWS`]) of warp `warp` of block row `by`.
#[inline(always)]
pub const fn thin_row(by: u32, warp: u32, r: u32) -> u32 {
    by * THIN_ROWS + warp * THIN_WARP_ROWS + r
}

/// The first of the 4 consecutive columns of A (rows of B) lane `lane` reads in step `s` of the
/// chunk starting at `c0`.
#[inline(always)]
pub const fn thin_k(c0: u64, s: u32, lane: u32) -> u64 {
    c0 + (s * THIN_STEP + 4 * lane) as u64
}

/// Float offset of row `kk` of the chunk, column `j`, in the staged chunk: column-major, so a
/// warp's lanes read 4 consecutive rows each, 512 contiguous bytes.
#[inline(always)]
pub const fn thin_staged(j: u32, kk: u32) -> u32 {
    j * THIN_CHUNK + kk
}

/// Whether a lane reads A 16 bytes at a time: `k` a multiple of 4 (a lane's columns start at a
/// multiple of 4) and A at a 16-byte boundary. Otherwise 4 bytes at a time.
pub const fn thin_vectors(k: u32, a: u64) -> bool {
    k.is_multiple_of(4) && a.is_multiple_of(16)
}

kernel! {
    #[launch_bounds(256, 2)]
    /// Thin: block `(bx, by)` computes rows `by·16..` of C over columns `bx·8..`, for all of k
    /// in chunks of 256. Warp `w` streams rows `by·16 + 2w` and the next: lane `l` loads the 4
    /// floats at `c0 + 128s + 4l` of each (16 bytes where [`thin_vectors`]), 2 steps a chunk;
    /// thread `t` stages row `c0 + t` of B's 8 columns into shared memory
    /// (column-major); each lane then adds its 4 columns of A against the chunk's 4 rows of B
    /// (one 16-byte shared load a column), and at the end the warp's lanes add their sums in a
    /// shuffle tree. Rows of A are clamped to `m - 1`; B outside `k × n` is staged as 0; only
    /// `r < m`, `col < n` are stored.
    pub unsafe fn matmul_thin(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `thin`).
        unsafe { device::thin(a, b, c, m, n, k) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// A warp's sums: a row of A's, one a column of the block.
    type Sums = [[f32; THIN_COLS as usize]; THIN_WARP_ROWS as usize];
    /// A lane's floats of A for one chunk: rows, steps, 4 columns.
    type Chunk = [[[f32; 4]; THIN_STEPS as usize]; THIN_WARP_ROWS as usize];

    /// A lane's floats of A for the chunk at `c0`: with `WHOLE` (the chunk inside k, A 16-byte
    /// aligned, k a multiple of 4) one 16-byte load a row and step, else a float at a time below k.
    ///
    /// # Safety
    /// A holds m·k floats and every row in `rows` is below m; with `WHOLE` as above.
    #[inline(always)]
    unsafe fn load_chunk<const WHOLE: bool>(
        a: *const f32,
        rows: &[u32; THIN_WARP_ROWS as usize],
        c0: u64,
        lane: u32,
        k: u64,
        av: &mut Chunk,
    ) {
        unroll_2!(r => {
            unroll_2!(s => {
                let kk = thin_k(c0, s, lane);
                let first = row_major(rows[r as usize] as u64, kk, k) as usize;
                if WHOLE {
                    // SAFETY: kk + 4 <= c0 + THIN_CHUNK <= k, first a multiple of 4 of a 16-byte aligned
                    // A (k and kk multiples of 4): a whole vector inside its row.
                    av[r as usize][s as usize] = unsafe { mem::load_v4_f32_nc(a.add(first) as *const [f32; 4]) };
                } else {
                    unroll_4!(q => {
                        if kk + (q as u64) < k {
                            // SAFETY: the row is below m and kk + q < k.
                            av[r as usize][s as usize][q as usize] = unsafe { *a.add(first + q as usize) };
                        }
                    });
                }
            });
        });
    }

    /// # Safety
    /// Buffers hold m·k, k·n and m·n floats, m, n, k ≥ 1; the launch is `THIN_THREADS` threads
    /// on `thin_grid(m, n)` with `THIN_SHARED_BYTES` of shared memory (checked by the plan).
    #[inline(always)]
    pub(super) unsafe fn thin(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let t = thread::thread_idx_x();
        let (lane, w) = (t % 32, t / 32);
        let (bx, by) = (thread::block_idx_x(), thread::block_idx_y());
        let col0 = bx * THIN_COLS;
        let vectors = thin_vectors(k, a as u64);
        let k64 = k as u64;
        // The warp's rows of A, clamped to the last (32 bits each: held for the whole loop).
        let rows: [u32; THIN_WARP_ROWS as usize] = [0, 1].map(|r| {
            let row = thin_row(by, w, r);
            if row < m { row } else { m - 1 }
        });
        let staged = shared::dynamic::<f32>();
        let mut acc: Sums = [[0.0; THIN_COLS as usize]; THIN_WARP_ROWS as usize];
        let mut c0 = 0u64;
        while c0 < k64 {
            // A's floats for the whole chunk first: 4 vectors in flight a lane.
            let mut av: Chunk = [[[0.0; 4]; THIN_STEPS as usize]; THIN_WARP_ROWS as usize];
            if vectors && c0 + THIN_CHUNK as u64 <= k64 {
                // SAFETY: the chunk lies inside k, A is 16-byte aligned and k a multiple of 4.
                unsafe { load_chunk::<true>(a, &rows, c0, lane, k64, &mut av) };
            } else {
                // SAFETY: every float is checked against k.
                unsafe { load_chunk::<false>(a, &rows, c0, lane, k64, &mut av) };
            }
            // B's chunk, column-major: thread t stages row c0 + t.
            for h in 0..THIN_STAGED_ROWS {
                let kk = c0 + (h * THIN_THREADS + t) as u64;
                // One base address a row of B, the columns at constant offsets from it.
                let row = if kk < k64 { kk } else { 0 };
                // SAFETY: row < k, so the row starts inside B.
                let pb = unsafe { b.add(row_major(row, col0 as u64, n as u64) as usize) };
                unroll_8!(j => {
                    let v = if kk < k64 && col0 + j < n {
                        // SAFETY: kk < k and col0 + j < n: element (kk, col0 + j) of B.
                        unsafe { *pb.add(j as usize) }
                    } else {
                        0.0
                    };
                    // SAFETY: thin_staged(j, h·256 + t) < 8 · THIN_CHUNK floats, the shared memory launched.
                    unsafe { *staged.add(thin_staged(j, h * THIN_THREADS + t) as usize) = v };
                });
            }
            // The chunk is staged before anyone reads it.
            thread::sync_threads();
            unroll_2!(s => {
                unroll_8!(j => {
                    // SAFETY: thin_staged(j, 128s + 4·lane) + 4 <= 8 · THIN_CHUNK, a multiple of 4 floats
                    // of the 16-byte aligned dynamic shared memory.
                    let b4 = unsafe {
                        shared::load_v4_f32(shared::address(staged.add(thin_staged(j, s * THIN_STEP + 4 * lane) as usize)))
                    };
                    unroll_2!(r => {
                        let x = av[r as usize][s as usize];
                        let sum = &mut acc[r as usize][j as usize];
                        unroll_4!(q => {
                            *sum = fma(x[q as usize], b4[q as usize], *sum);
                        });
                    });
                });
            });
            // Everyone is done with the chunk before the next one is staged over it.
            thread::sync_threads();
            c0 += THIN_CHUNK as u64;
        }
        // The lanes' sums, in a fixed tree: lane 0 holds each total.
        unroll_2!(r => {
            unroll_8!(j => {
                let mut v = acc[r as usize][j as usize];
                // SAFETY: the whole warp is here (no lane has left the uniform loop above).
                unsafe {
                    v += warp::shfl_down_f32(v, 16);
                    v += warp::shfl_down_f32(v, 8);
                    v += warp::shfl_down_f32(v, 4);
                    v += warp::shfl_down_f32(v, 2);
                    v += warp::shfl_down_f32(v, 1);
                }
                let (row, col) = (thin_row(by, w, r), col0 + j);
                if lane == 0 && row < m && col < n {
                    // SAFETY: row < m and col < n.
                    unsafe { *c.add(row_major(row as u64, col as u64, n as u64) as usize) = v };
                }
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_stages_every_row_of_b_once_and_lanes_read_each_once() {
        let k = 1300u64;
        let mut staged = vec![0u8; k as usize];
        let mut read = vec![0u8; k as usize];
        let mut c0 = 0;
        while c0 < k {
            for h in 0..THIN_STAGED_ROWS {
                for t in 0..THIN_THREADS {
                    let kk = c0 + (h * THIN_THREADS + t) as u64;
                    if kk < k {
                        staged[kk as usize] += 1;
                    }
                }
            }
            for s in 0..THIN_STEPS {
                for lane in 0..32 {
                    for q in 0..4 {
                        let kk = thin_k(c0, s, lane) + q;
                        if kk < k {
                            read[kk as usize] += 1;
                            // What the lane reads of the staged chunk is what was staged there.
                            assert_eq!(kk - c0, (s * THIN_STEP + 4 * lane) as u64 + q);
                        }
                    }
                }
            }
            c0 += THIN_CHUNK as u64;
        }
        assert!(staged.iter().all(|&h| h == 1) && read.iter().all(|&h| h == 1));
        assert_eq!(thin_staged(THIN_COLS - 1, THIN_CHUNK - 1) + 1, THIN_SHARED_BYTES / 4);
        assert_eq!(thin_grid(4096, 1), (1, 256));
        assert_eq!(thin_grid(17, 9), (2, 2));
        assert_eq!(thin_row(2, 7, 1), 47);
    }
}
