//! Helpers that are not lessons: filling large device buffers with pseudo-random data on the GPU,
//! so benchmarks never run on zeros and never wait for gigabytes to cross PCIe.

use crate::kernel;
#[cfg(target_arch = "nvptx64")]
use crate::prelude::thread;

/// What `util_fill` writes.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Arbitrary 32-bit patterns (any `i32`).
    Bits = 0,
    /// `f32` uniform in [-1, 1).
    Unit = 1,
}

/// A 32-bit hash of an element index and a seed (the finaliser of MurmurHash3 on a mix of both).
pub const fn hash(index: u64, seed: u32) -> u32 {
    let mut h = (index as u32) ^ ((index >> 32) as u32).wrapping_mul(0x9e37_79b9) ^ seed;
    h = h.wrapping_add(seed.rotate_left(16));
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// The value element `index` gets for `fill` and `seed`.
pub const fn fill_value(index: u64, seed: u32, fill: Fill) -> u32 {
    let h = hash(index, seed);
    match fill {
        Fill::Bits => h,
        // 23 random bits of mantissa on 1.0, shifted to [-1, 1).
        Fill::Unit => (f32::from_bits(0x3f80_0000 | (h >> 9)) * 2.0 - 3.0).to_bits(),
    }
}

/// The first element thread `thread` of block `block` (of `block_dim` threads) fills, in 64
/// bits: exact for every grid (at most 2^31 - 1 blocks of 1024 threads, past u32).
#[inline(always)]
pub const fn fill_start(block: u32, block_dim: u32, thread: u32) -> u64 {
    block as u64 * block_dim as u64 + thread as u64
}

/// The grid-stride step of a grid of `grid_dim` blocks of `block_dim` threads, in 64 bits: never
/// wraps (to 0, an endless loop, or to a short step that writes words twice).
#[inline(always)]
pub const fn fill_step(block_dim: u32, grid_dim: u32) -> u64 {
    block_dim as u64 * grid_dim as u64
}

/// Most 4-byte words a fill takes: a buffer of at most `u64::MAX` bytes. Below it, `i + step`
/// of the grid-stride loop cannot overflow (a step is below 2^41).
pub const MAX_FILL_WORDS: u64 = u64::MAX / 4;

/// Threads per block of the fill.
pub const FILL_BLOCK: u32 = 256;
/// Resident blocks per multiprocessor of the fill's grid-stride launch.
pub const FILL_BLOCKS_PER_SM: u32 = 8;

kernel! {
    /// Grid-stride fill: `out[i] = fill_value(i, seed, fill)` for `i < n` (coalesced 4-byte
    /// stores, 64-bit indices and step: any size, any grid; `n <= MAX_FILL_WORDS`).
    pub unsafe fn util_fill(out: *mut u32, n: u64, seed: u32, fill: u32) {
        let fill = if fill == Fill::Unit as u32 { Fill::Unit } else { Fill::Bits };
        let step = fill_step(thread::block_dim_x(), thread::grid_dim_x());
        let mut i = fill_start(thread::block_idx_x(), thread::block_dim_x(), thread::thread_idx_x());
        while i < n {
            // SAFETY: the plan passes the buffer's exact length (in 4-byte words) as `n`.
            unsafe { *out.add(i as usize) = fill_value(i, seed, fill) };
            i += step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_indices_never_wrap() {
        use crate::launch::{MAX_BLOCK_THREADS, MAX_GRID_X};
        // The largest grid the driver takes: the step and the last thread's start are exact.
        let threads = u64::from(MAX_GRID_X) * u64::from(MAX_BLOCK_THREADS);
        assert_eq!(fill_step(MAX_BLOCK_THREADS, MAX_GRID_X), threads);
        assert_eq!(fill_start(MAX_GRID_X - 1, MAX_BLOCK_THREADS, MAX_BLOCK_THREADS - 1), threads - 1);
        // A grid of exactly 2^32 threads: a u32 step would be 0 and the loop endless.
        assert_eq!(fill_step(FILL_BLOCK, 1 << 24), 1 << 32);
        assert_eq!(fill_start((1 << 24) - 1, FILL_BLOCK, FILL_BLOCK - 1), (1 << 32) - 1);
        assert_eq!((fill_start(2, FILL_BLOCK, 5), fill_step(FILL_BLOCK, 12)), (517, 3072));
    }

    #[test]
    fn unit_fill_is_in_range_and_varied() {
        let values: Vec<f32> = (0..4096).map(|i| f32::from_bits(fill_value(i, 3, Fill::Unit))).collect();
        assert!(values.iter().all(|v| (-1.0..1.0).contains(v)));
        let distinct: std::collections::HashSet<u32> = values.iter().map(|v| v.to_bits()).collect();
        assert!(distinct.len() > 4000);
        assert_ne!(fill_value(5, 1, Fill::Bits), fill_value(5, 2, Fill::Bits));
    }
}
