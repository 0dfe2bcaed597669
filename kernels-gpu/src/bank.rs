//! Shared-memory bank conflicts, measured alone: each block copies a table into shared memory
//! and every warp then sums `ITERS` words of it, lane `l` at step `k` reading `index(l, k)`.
//! A warp access takes as many shared-memory cycles as the most lanes hitting one bank
//! (with different addresses).

/// Words of the shared table (8 KiB).
pub const WORDS: u32 = 2048;
/// Reads per thread.
pub const ITERS: u32 = 4096;
/// Threads per block.
pub const BLOCK: u32 = 256;
/// Blocks per launch.
pub const BLOCKS: u32 = 1056;
/// Largest stride of the stride sweep.
pub const MAX_STRIDE: u32 = 32;

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
#[inline(always)]
pub const fn strided(lane: u32, k: u32, stride: u32) -> u32 {
    (lane * stride + k) % WORDS
}

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

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::prelude::{shared, thread};

    /// # Safety
    /// `table` holds `WORDS` i32, `out` one per thread of the grid, and the launch has
    /// `WORDS * 4` bytes of shared memory (checked by the launcher). `index` stays < WORDS.
    #[inline(always)]
    unsafe fn walk(table: *const i32, out: *mut i32, stride: u32, index: fn(u32, u32, u32) -> u32) {
        let s = shared::dynamic::<i32>();
        let t = thread::thread_idx_x();
        let mut i = t;
        while i < WORDS {
            // SAFETY: i < WORDS.
            unsafe { *s.add(i as usize) = *table.add(i as usize) };
            i += BLOCK;
        }
        thread::sync_threads();
        let lane = t % 32;
        let mut acc = 0i32;
        let mut k = 0;
        while k < ITERS {
            // Volatile: one 4-byte shared load per step, as written. Otherwise ptxas merges a
            // lane's consecutive column words into 16-byte loads and the column pattern turns
            // into an 8-way conflict of wide loads instead of the 32-way one it teaches.
            // SAFETY: index() < WORDS.
            acc = acc.wrapping_add(unsafe { s.add(index(lane, k, stride) as usize).read_volatile() });
            k += 1;
        }
        // SAFETY: one output per thread of the grid.
        unsafe { *out.add(thread::index_1d() as usize) = acc };
    }

    /// Row reads: conflict-free, one shared-memory cycle per warp access.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn bank_rows(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { walk(table, out, 0, |l, k, _| rows(l, k)) }
    }

    /// Column reads of an unpadded tile: 32-way conflict, 32 cycles per warp access.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn bank_cols(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { walk(table, out, 0, |l, k, _| cols(l, k)) }
    }

    /// Column reads of a tile padded to 33 words a row: conflict-free again.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn bank_cols_padded(table: *const i32, out: *mut i32) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { walk(table, out, 0, |l, k, _| cols_padded(l, k)) }
    }

    /// Stride sweep: `gcd(stride, 32)`-way conflicts.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn bank_stride(table: *const i32, out: *mut i32, stride: u32) {
        // SAFETY: forwarded launcher guarantees.
        unsafe { walk(table, out, stride, strided) }
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
    fn every_index_stays_in_the_table() {
        for l in 0..32 {
            for k in 0..ITERS {
                assert!(rows(l, k) < WORDS && cols(l, k) < WORDS && cols_padded(l, k) < WORDS);
                assert!(strided(l, k, MAX_STRIDE) < WORDS);
            }
        }
    }
}
