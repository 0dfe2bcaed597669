//! Shared-memory bank conflicts, measured alone: each block copies a table into shared memory
//! and every warp then sums `ITERS` words of it, lane `l` at step `k` reading `index(l, k)`.
//! A warp access takes as many shared-memory cycles as the most lanes hitting one bank
//! (with different addresses).

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::{shared, thread};

/// Words of the shared table (8 KiB).
pub const WORDS: u32 = 2048;
/// Reads per thread.
pub const ITERS: u32 = 4096;
/// Threads per block. The kernels depend on it: the table copy strides by `BLOCK` (so a smaller
/// block would leave words uncopied) and each thread's output is `output_index(block, t)`; the
/// plans launch exactly `BLOCKS` blocks of `BLOCK`.
pub const BLOCK: u32 = 256;
/// Blocks per launch.
pub const BLOCKS: u32 = 1056;
/// Sums one launch writes: one per thread.
pub const OUTPUTS: u32 = BLOCKS * BLOCK;
/// Dynamic shared memory of every launch: the table.
pub const SHARED_BYTES: u32 = WORDS * 4;
/// Largest stride of the stride sweep.
pub const MAX_STRIDE: u32 = 32;

const _: () = assert!(BLOCK.is_multiple_of(crate::WARP_SIZE), "every warp is full, lanes 0..32");
const _: () = assert!(SHARED_BYTES <= crate::launch::DEFAULT_SHARED_BYTES, "no opt-in for more shared memory");
// The tile patterns take `k % 32` and a lane < 32, and grow with both: their largest word is
// at lane 31, step 31, and lies inside the table. (`strided` wraps modulo `WORDS` itself.)
const _: () = assert!(rows(31, 31) < WORDS && cols(31, 31) < WORDS && cols_padded(31, 31) < WORDS);

/// Lane (within its warp) of thread `t` of the block: the `l` of the index patterns.
#[inline(always)]
pub const fn lane(t: u32) -> u32 {
    t % crate::WARP_SIZE
}

/// Word thread `t` copies into shared memory at trip `j` of the table copy: words `t, t + BLOCK,
/// ..` below `WORDS`, so with `BLOCK` threads every word once.
#[inline(always)]
pub const fn table_word(t: u32, j: u32) -> u32 {
    t + j * BLOCK
}

/// Output thread `t` of block `block` writes its sum to.
#[inline(always)]
pub const fn output_index(block: u32, t: u32) -> u32 {
    block * BLOCK + t
}

/// Along rows of a 32 × 32 tile: lane `l` reads column `l` of row `k % 32`. One bank per lane.
#[inline(always)]
pub const fn rows(lane: u32, k: u32) -> u32 {
    (k % 32) * 32 + lane
}

/// Down columns of a 32 × 32 tile: lane `l` reads row `l`, all in bank `k % 32`: 32-way.
#[inline(always)]
pub const fn cols(lane: u32, k: u32) -> u32 {
    lane * 32 + k % 32
}

/// Down columns of a 32 × 33 (padded) tile: lane `l` lands in bank `(l + k) % 32`.
#[inline(always)]
pub const fn cols_padded(lane: u32, k: u32) -> u32 {
    lane * 33 + k % 32
}

/// Lane `l` reads word `l * stride` (shifted by `k`): `gcd(stride, 32)` lanes share a bank.
/// Defined for every lane, step and stride: the product and sum wrap modulo 2^32, a multiple of
/// `WORDS`, so the word is exactly `(l * stride + k) mod WORDS`.
#[inline(always)]
pub const fn strided(lane: u32, k: u32, stride: u32) -> u32 {
    lane.wrapping_mul(stride).wrapping_add(k) % WORDS
}
const _: () = assert!((1u64 << 32).is_multiple_of(WORDS as u64), "wrapping modulo 2^32 keeps the word modulo WORDS");

/// The n-way conflict a stride causes: lanes per bank, `gcd(stride, 32)`.
pub const fn conflict_degree(stride: u32) -> u32 {
    let (mut a, mut b) = (stride, 32);
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

kernel! {
    /// Row reads of a 32 x 32 tile: lane `l` reads word `(k % 32) * 32 + l`, 32 consecutive
    /// words in 32 different banks: conflict-free, one shared-memory cycle per warp access.
    pub unsafe fn bank_rows(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded plan guarantees (see `walk`); `rows` stays below `WORDS`.
        unsafe { device::walk(table, out, 0, |l, k, _| rows(l, k)) }
    }
}

kernel! {
    /// Column reads of the same unpadded tile: changes rows to columns, so lane `l` reads word
    /// `l * 32 + k % 32` and all 32 lanes hit bank `k % 32`: a 32-way conflict, 32 cycles per
    /// warp access.
    pub unsafe fn bank_cols(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded plan guarantees (see `walk`); `cols` stays below `WORDS`.
        unsafe { device::walk(table, out, 0, |l, k, _| cols(l, k)) }
    }
}

kernel! {
    /// Column reads of a tile padded to 33 words a row: changes only the row pitch, so lane `l`
    /// lands in bank `(l + k) % 32` and the columns are conflict-free again (one cycle).
    pub unsafe fn bank_cols_padded(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded plan guarantees (see `walk`); `cols_padded` stays below `WORDS`.
        unsafe { device::walk(table, out, 0, |l, k, _| cols_padded(l, k)) }
    }
}

kernel! {
    /// Stride sweep: generalises the column read, lane `l` reads word `l * stride + k`, so
    /// `gcd(stride, 32)` lanes share each bank: a `gcd(stride, 32)`-way conflict.
    pub unsafe fn bank_stride(table: *const i32, out: *mut i32, stride: u32) {
        // SAFETY: forwarded plan guarantees (see `walk`); `strided` wraps below `WORDS`.
        unsafe { device::walk(table, out, stride, strided) }
    }
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;

    /// # Safety
    /// `table` holds `WORDS` i32 and `out` `OUTPUTS`; the launch is `BLOCKS` blocks of `BLOCK`
    /// threads with `SHARED_BYTES` of shared memory (the plans launch exactly that). `index`
    /// stays below `WORDS` for every lane < 32 and step.
    #[inline(always)]
    pub(super) unsafe fn walk(table: *const i32, out: *mut i32, stride: u32, index: fn(u32, u32, u32) -> u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        // Copy the table in: thread t takes words t, t + BLOCK, ...; with BLOCK threads that is
        // every word once.
        let mut j = 0;
        while table_word(t, j) < WORDS {
            let i = table_word(t, j) as usize;
            // SAFETY: i < WORDS, the table's length and the shared words launched.
            unsafe { *s.add(i) = *table.add(i) };
            j += 1;
        }
        thread::sync_threads();
        let lane = lane(t);
        let mut acc = 0i32;
        let mut k = 0;
        while k < ITERS {
            // Volatile: one 4-byte shared load per step, as written. Otherwise ptxas merges a
            // lane's consecutive column words into 16-byte loads and the column pattern turns
            // into an 8-way conflict of wide loads instead of the 32-way one it teaches.
            // SAFETY: index() < WORDS (the caller's contract).
            acc = acc.wrapping_add(unsafe { s.add(index(lane, k, stride) as usize).read_volatile() });
            k += 1;
        }
        // SAFETY: block < BLOCKS and t < BLOCK, so the index is < OUTPUTS, `out`'s length.
        unsafe { *out.add(output_index(thread::block_idx_x(), t) as usize) = acc };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Most lanes of a warp hitting one bank at step `k`.
    fn degree(index: impl Fn(u32) -> u32) -> u32 {
        let mut per_bank = [0u32; 32];
        for lane in 0..32 {
            per_bank[(index(lane) % 32) as usize] += 1;
        }
        *per_bank.iter().max().unwrap()
    }

    #[test]
    fn patterns_have_the_expected_conflict_degree() {
        for k in [0, 5, 31, 100] {
            assert_eq!(degree(|l| rows(l, k)), 1);
            assert_eq!(degree(|l| cols(l, k)), 32);
            assert_eq!(degree(|l| cols_padded(l, k)), 1);
            for stride in 1..=MAX_STRIDE {
                assert_eq!(degree(|l| strided(l, k, stride)), conflict_degree(stride), "stride {stride}");
            }
        }
        assert_eq!([1, 2, 3, 4, 6, 8, 16, 24, 32].map(conflict_degree), [1, 2, 1, 4, 2, 8, 16, 8, 32]);
    }

    #[test]
    fn every_thread_of_the_launch_has_its_own_output_and_copies_its_words() {
        let mut hits = vec![0u8; OUTPUTS as usize];
        for b in 0..BLOCKS {
            for t in 0..BLOCK {
                hits[output_index(b, t) as usize] += 1;
            }
        }
        assert!(hits.iter().all(|&h| h == 1));
        // The copy loop: thread t takes t, t + BLOCK, ... below WORDS; together every word once.
        let mut copied = vec![0u8; WORDS as usize];
        for t in 0..BLOCK {
            let mut j = 0;
            while table_word(t, j) < WORDS {
                copied[table_word(t, j) as usize] += 1;
                j += 1;
            }
        }
        assert!(copied.iter().all(|&c| c == 1));
        assert_eq!((lane(0), lane(33), lane(BLOCK - 1)), (0, 1, 31));
    }

    #[test]
    fn strided_is_defined_for_every_stride() {
        // The word is `(lane * stride + k) mod WORDS` exactly, with no overflow, for any stride
        // (the stride kernel and `Pattern::Stride` take a whole u32).
        for stride in [0, 33, 1 << 16, (1 << 31) + 1, u32::MAX - 1, u32::MAX] {
            for (l, k) in [(0, 0), (1, 0), (31, 7), (31, ITERS - 1), (u32::MAX, u32::MAX)] {
                let exact = (u64::from(l) * u64::from(stride) + u64::from(k)) % u64::from(WORDS);
                assert_eq!(u64::from(strided(l, k, stride)), exact, "lane {l} step {k} stride {stride}");
            }
        }
    }

    #[test]
    fn every_index_stays_in_the_table() {
        for l in 0..32 {
            for k in 0..ITERS {
                assert!(rows(l, k) < WORDS && cols(l, k) < WORDS && cols_padded(l, k) < WORDS);
                assert!(strided(l, k, MAX_STRIDE) < WORDS);
            }
        }
    }
}
