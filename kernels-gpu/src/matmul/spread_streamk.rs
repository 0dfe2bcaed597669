//! Stage 10, spread_streamk (Hopper): warptile_streamk's schedule over warptile_spread's k loop.
//! The same transactions as warptile_streamk; each block's k tiles run at warptile_spread's pace.
//!
//! Stream-K ([`StreamK`](super::StreamK)) takes any k loop ([`KLoop`]): these are its two
//! kernels, the whole waves and the shared row, built on the spread ring instead of the
//! `cp.async` burst of stage 7.
//!
//! [`KLoop`]: super::warptile_async

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
use super::{
    stream_k::hopper_device::warptile_streamk,
    warptile_async::{WARPTILE_ASYNC, WTA_NA, WTA_NB, hopper_device::warptile_async},
    warptile_spread::hopper_device::SpreadRing,
};

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's whole waves over the spread ring: `matmul_warptile_spread`, but block `i`
    /// (linear id) computes tile `i`, as `matmul_warptile_streamk_waves` does for the async
    /// kernel. The same transactions a tile as `matmul_warptile_spread`.
    pub unsafe fn matmul_spread_streamk_waves(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async`).
        unsafe { warptile_async::<SpreadRing, 8, 16, WTA_NA, WTA_NB, true>(WARPTILE_ASYNC, a, b, c, m, n, k) }
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's shared row over the spread ring: `matmul_warptile_streamk` (the same split of
    /// the last wave's k iterations, the same flags and partial sums through C), each block's k
    /// tiles through `matmul_warptile_spread`'s loop.
    pub unsafe fn matmul_spread_streamk(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_streamk`).
        unsafe { warptile_streamk::<SpreadRing, 8, 16, WTA_NA, WTA_NB>(a, b, c, m, n, k) }
    }
}
