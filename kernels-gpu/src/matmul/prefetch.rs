//! Stage 3, prefetch: `tiled` with the next tile's global loads issued into registers first.
//! The same transactions; their latency overlaps the FMAs, for two more registers a thread.

#[cfg(target_arch = "nvptx64")]
use super::tiled;
use crate::kernel;

kernel! {
    /// Tiles with prefetch: the same transactions as `matmul_tiled`, but the next tile's global
    /// loads are issued into registers before the current tile is computed, so their latency
    /// overlaps the arithmetic (two more registers).
    pub unsafe fn matmul_prefetch(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `tiled`).
        unsafe { tiled::device::tiled::<true>(a, b, c, m, n, k) }
    }
}
