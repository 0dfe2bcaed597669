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

/// Threads per block of the fill.
pub const FILL_BLOCK: u32 = 256;
/// Resident blocks per multiprocessor of the fill's grid-stride launch.
pub const FILL_BLOCKS_PER_SM: u32 = 8;

kernel! {
    /// Grid-stride fill: `out[i] = fill_value(i, seed, fill)` for `i < n` (coalesced 4-byte
    /// stores, 64-bit indices: any size).
    pub unsafe fn util_fill(out: *mut u32, n: u64, seed: u32, fill: u32) {
        let fill = if fill == Fill::Unit as u32 { Fill::Unit } else { Fill::Bits };
        let step = thread::grid_size_1d() as u64;
        let mut i = thread::index_1d() as u64;
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
    fn unit_fill_is_in_range_and_varied() {
        let values: Vec<f32> = (0..4096).map(|i| f32::from_bits(fill_value(i, 3, Fill::Unit))).collect();
        assert!(values.iter().all(|v| (-1.0..1.0).contains(v)));
        let distinct: std::collections::HashSet<u32> = values.iter().map(|v| v.to_bits()).collect();
        assert!(distinct.len() > 4000);
        assert_ne!(fill_value(5, 1, Fill::Bits), fill_value(5, 2, Fill::Bits));
    }
}
