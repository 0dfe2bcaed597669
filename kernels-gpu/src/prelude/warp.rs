//! Warp-level primitives.

pub use crate::WARP_SIZE as SIZE;

/// Every lane of a full warp takes part.
pub const FULL_MASK: u32 = 0xffff_ffff;

unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
}

/// `__shfl_down_sync(FULL_MASK, value, delta)`: the value of lane `lane + delta`.
///
/// # Safety
/// All 32 lanes of the warp must execute this call together (converged, none exited):
/// with the full mask, a shuffle from divergent code is undefined behaviour.
#[inline(always)]
pub unsafe fn shfl_down_i32(value: i32, delta: u32) -> i32 {
    // SAFETY: the caller guarantees the whole warp is converged here.
    unsafe { shfl_sync_down_i32(FULL_MASK, value, delta, 0x1f) }
}

/// `__shfl_down_sync` for `f32` (the same 32 bits moved).
///
/// # Safety
/// As [`shfl_down_i32`]: the whole warp calls it together.
#[inline(always)]
pub unsafe fn shfl_down_f32(value: f32, delta: u32) -> f32 {
    // SAFETY: forwarded from the caller.
    f32::from_bits(unsafe { shfl_down_i32(value.to_bits() as i32, delta) } as u32)
}

/// Sum over the warp; lane 0 holds the total (wrapping for integers).
///
/// # Safety
/// As [`shfl_down_i32`]: the whole warp calls it together.
#[inline(always)]
pub unsafe fn reduce_sum_i32(mut value: i32) -> i32 {
    let mut delta = SIZE / 2;
    while delta > 0 {
        // SAFETY: forwarded from the caller.
        value = value.wrapping_add(unsafe { shfl_down_i32(value, delta) });
        delta /= 2;
    }
    value
}

/// `__shfl_down_sync` for a 64-bit value: two 32-bit shuffles of its halves.
///
/// # Safety
/// As [`shfl_down_i32`]: the whole warp calls it together.
#[inline(always)]
pub unsafe fn shfl_down_u64(value: u64, delta: u32) -> u64 {
    // SAFETY: forwarded from the caller.
    let (lo, hi) = unsafe { (shfl_down_i32(value as i32, delta), shfl_down_i32((value >> 32) as i32, delta)) };
    (lo as u32 as u64) | ((hi as u32 as u64) << 32)
}
