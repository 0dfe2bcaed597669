//! Stage 11, spread_edge (Hopper): spread_streamk for any shape and any 4-byte alignment.
//! B copied a float at a time (24 copies a tile, not 12), no guard in the k loop; same sectors.
//!
//! The guarded kernel of stage 6 (`matmul_warptile_edge_sm90`) takes any shape, but in 128 × 128
//! tiles loaded through registers, and a shape one past a multiple of the tile pays a whole wave
//! for its last row and column of tiles (4097³: 1089 tiles on 132 SMs, 9 waves for 8.25). Here
//! the spread ring takes the edges instead, with stream-K's schedule counting the partial tiles:
//! - rows of A past m are clamped to the last one and columns of B past n wrapped to the tile
//!   before (`b_wrap_col`) when the copies' sources are set up (read in bounds, they feed only
//!   outputs that are never stored), so the ring's loop has no bounds check at all;
//! - B goes in a float at a time (a row of B is 16-byte aligned only when n is a multiple of 4),
//!   a warp's copy one 128-byte stretch of a row: the same sectors as 16-byte copies, four times
//!   the copy instructions, issued three at a time over the tile's k steps;
//! - the ring walks the whole k tiles only; a partial last one (k % 16 columns of A, rows of B)
//!   is copied with a check on each copy after the ring drains, and multiplied step by step;
//! - stores check `r < m` and `col < n` float by float.

use super::warptile::WarpTile;
use super::warptile_async::{WARPTILE_ASYNC, WTA_NA};
use super::warptile_spread::spread_steps;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
use super::{
    stream_k::hopper_device::warptile_streamk,
    warptile_async::{WTA_NB, hopper_device::warptile_async},
};

/// The guarded ring's copies of B ([`WarpTile`]'s shape, copied a float at a time).
impl WarpTile {
    /// Floats of B each thread copies a k tile in the guarded ring (one `cp.async` each).
    pub const fn b_floats(self) -> u32 {
        self.bk * self.bn / self.threads()
    }
    /// Column of B the guarded ring's copies at `(_, col)` (from `b_copy`) of the block whose
    /// columns start at `col0` read: past n, the same column of the tile before (`bn` to the
    /// left; n - 1 in the first tile), read in bounds and fed only to outputs past n, which are
    /// never stored. Not clamped to n - 1 everywhere: with every lane of a warp on one address,
    /// a tile one column past a multiple of 256 ran a quarter slower (4096 × 4097 × 4096 on
    /// the H100).
    #[inline(always)]
    pub const fn b_wrap_col(self, col0: u32, (_, col): (u32, u32), n: u32) -> u32 {
        let c = col0 + col;
        if c < n {
            c
        } else if col0 >= self.bn {
            c - self.bn
        } else {
            n - 1
        }
    }
    /// `(row, col)` inside the `bk × bn` tile of B of float `e` thread `t` copies in the guarded
    /// ring: a warp takes 32 consecutive floats of one row (128 bytes, 4 or 5 sectors whatever
    /// the row's alignment), the passes walk the rows. With `threads` a multiple of `bn` every
    /// float of a thread is in one column (one wrapped column, one source pointer).
    #[inline(always)]
    pub const fn b_copy(self, t: u32, e: u32) -> (u32, u32) {
        let idx = t + e * self.threads();
        (idx / self.bn, idx % self.bn)
    }
}

/// Floats of B each thread copies a k tile in the guarded ring.
pub const WTE_NB: usize = WARPTILE_ASYNC.b_floats() as usize;
/// Copies a thread issues together in the guarded ring: its 24 a tile (8 of A, 16 of B) go out
/// three at a time at k steps 0, 2, .., 14 (four or six at a time ran 1.6% and 2% slower on the
/// H100, `results/experiments/sgemm-spread-edge/groups.log`).
pub const EDGE_GROUP: u32 = 3;
const _: () = assert!(spread_steps((WTA_NA + WTE_NB) as u32, EDGE_GROUP) <= WARPTILE_ASYNC.bk);
const _: () = assert!(WARPTILE_ASYNC.threads().is_multiple_of(WARPTILE_ASYNC.bn));
// The partial tile's copies are unrolled 16 deep.
const _: () = assert!(WTA_NA <= 16 && WTE_NB <= 16 && WTA_NA + WTE_NB <= 32);

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's whole waves for any shape: `matmul_spread_streamk_waves` over the guarded
    /// ring, block `i` taking tile `i` of C's tiles counted with the partial ones. Per whole k
    /// tile the sectors of `matmul_warptile_spread`, in 24 copies a thread instead of 12;
    /// stores checked float by float.
    pub unsafe fn matmul_spread_edge_waves(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async` and `edge_k_loop`).
        unsafe { warptile_async::<hopper_device::EdgeRing, 8, 16, WTA_NA, WTA_NB, true>(WARPTILE_ASYNC, a, b, c, m, n, k) }
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Stream-K's shared row for any shape: `matmul_spread_streamk` over the guarded ring, the
    /// partial sums of cut tiles read and added float by float inside C.
    pub unsafe fn matmul_spread_edge(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_streamk` and `edge_k_loop`).
        unsafe { warptile_streamk::<hopper_device::EdgeRing, 8, 16, WTA_NA, WTA_NB>(a, b, c, m, n, k) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b_wrap_col_stays_inside_b_and_keeps_the_columns_inside() {
        let cfg = WARPTILE_ASYNC;
        for n in [1, 5, 255, 256, 257, 4095, 4097, 4100] {
            for col0 in (0..n).step_by(cfg.bn as usize) {
                for t in 0..cfg.threads() {
                    let at = cfg.b_copy(t, 0);
                    let col = cfg.b_wrap_col(col0, at, n);
                    assert!(col < n, "n {n} col0 {col0} t {t}");
                    if col0 + at.1 < n {
                        assert_eq!(col, col0 + at.1);
                    }
                }
            }
        }
        // One past 4096: the tile's 255 columns past n read the tile before's, not one address.
        assert_eq!((cfg.b_wrap_col(4096, (0, 0), 4097), cfg.b_wrap_col(4096, (0, 7), 4097)), (4096, 3847));
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) mod hopper_device {
    use super::*;
    use crate::matmul::index::V4;
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::{outer_product, warp_fragments};
    use crate::matmul::warptile_async::hopper_device::KLoop;
    use crate::matmul::warptile_spread::{WTS_STAGES, spread_copies, spread_walk};
    use crate::prelude::{async_copy, math::fma, order, shared, thread};

    /// Stage 11's ring: [`edge_k_loop`] with the spread ring's 4 stages, for any shape.
    pub(in crate::matmul) struct EdgeRing;

    impl KLoop for EdgeRing {
        const STAGES: u32 = WTS_STAGES;
        const EDGE: bool = true;
        /// `NB` (B's vectors in the other rings) is not used: B goes in [`WTE_NB`] floats.
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn run<const TM: usize, const TN: usize, const NA: usize, const NB: usize>(
            cfg: WarpTile,
            a: *const f32,
            b: *const f32,
            m: u32,
            n: u32,
            k: u32,
            origin: (u32, u32),
            range: (u32, u32),
            acc: &mut [[f32; TN]; TM],
        ) {
            // SAFETY: forwarded.
            unsafe { edge_k_loop::<TM, TN, NA, WTE_NB, WTS_STAGES>(cfg, a, b, (m, n, k), origin, range, acc) }
        }
    }

    /// k tiles `kt0..kt1` (k tiles counted rounding up) of the block tile at `origin` of an
    /// `m × n × k` multiply, added into `acc`: the whole ones through the spread ring's walk
    /// (`spread_walk`) with `NA` floats of A and `NB` of B a thread ([`WarpTile::b_copy`]),
    /// `EDGE_GROUP` at a time, rows of A clamped and columns of B wrapped; then, if the range holds the
    /// partial last tile, that tile's columns below k, checked copy by copy, through stage 0.
    ///
    /// # Safety
    /// `cfg` is `WARPTILE_ASYNC`-like (`async_consistent`, `threads` a multiple of `bn`); A and
    /// B hold m·k and k·n floats (m, n, k ≥ 1), each 4-byte aligned; the tile at `origin` starts
    /// inside C (`row0 < m`, `col0 < n`) and `kt1 <= k.div_ceil(bk)`; the block has
    /// `cfg.threads()` threads and `cfg.ring_bytes(STAGES)` of shared memory, no copy of its own
    /// in flight and no warp still reading the ring. It may return with copies of its own still
    /// in flight (those past the range's last tile, into stages no tile is read from): a caller
    /// that calls it again waits for them first (`async_copy::wait_for(0)`).
    #[inline(always)]
    pub(in crate::matmul) unsafe fn edge_k_loop<
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
        const STAGES: u32,
    >(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        (m, n, k): (u32, u32, u32),
        (row0, col0): (u32, u32),
        (kt0, kt1): (u32, u32),
        acc: &mut [[f32; TN]; TM],
    ) {
        const { assert!(TM <= 8 && TN <= 16, "the FMA unrolls list 8 rows and 16 columns") };
        const { assert!(STAGES >= 2, "tile j + STAGES - 1 is copied during tile j") };
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        // Each call (stream-K's row makes one a segment) derives the thread's copy addresses
        // anew: hoisted out of the row's segment loop, they outlived it in 204 bytes of spills.
        let t = order::here(thread::thread_idx_x());
        let (bk, stage) = (cfg.bk, cfg.stage_floats());
        let whole = k / bk;
        let tiles = if kt1 < whole { kt1 } else { whole }.saturating_sub(kt0);
        let (k64, n64) = (k as u64, n as u64);
        let copies_a_tile = (NA + NB) as u32;
        // Sources are formed with `wrapping_add` (a clamped row's pointer may point past its
        // row before the tile it is used for), and read only where stated below.
        let mut a_src = [a; NA];
        let mut a_dst = [0u32; NA];
        let mut v = 0;
        while v < NA {
            let at = cfg.a_copy(t, v as u32);
            let row = cfg.a_src_row(row0, at, m, true);
            a_src[v] = a.wrapping_add(row_major(row as u64, (kt0 * bk + at.1) as u64, k64) as usize);
            a_dst[v] = ring + 4 * cfg.at_offset(at, 0);
            v += 1;
        }
        // Float `e` of B in k tile `kt` of the range, and where it goes in stage 0. Every float
        // of a thread is in one column (`threads` a multiple of `bn`): one wrapped column, and
        // the rows added in 64 bits (row e is `e · n` floats on: one wide multiply-add a copy).
        let b_col = b.wrapping_add(cfg.b_wrap_col(col0, cfg.b_copy(t, 0), n) as usize);
        let b_src = |kt: u32, e: usize| {
            let tile = b_col.wrapping_add(((kt0 + kt) as u64 * bk as u64 * n64) as usize);
            tile.wrapping_add((cfg.b_copy(t, e as u32).0 as u64 * n64) as usize)
        };
        let b_dst = |e: usize| ring + 4 * cfg.b_offset(cfg.b_copy(t, e as u32));
        // SAFETY (whole body): a copy of tile kt < tiles (copies past it read tile tiles - 1)
        // reads row min(row0 + r, m - 1) of A at a column below whole·bk ≤ k, and column
        // `b_wrap_col` (below n) of B at a row below whole·bk; the partial tile's copies are
        // checked against k (`k_left`). Shared offsets
        // stay inside the `STAGES` stages launched (`WarpTile::ring_bytes`) and the fragment
        // vectors are 16-byte aligned, as in `spread_k_loop`.
        unsafe {
            // Copy `v` (A's floats, then B's) of k tile `kt` into stage `kt % STAGES`. Past the last
            // tile, the last tile again, into a stage no tile is read from any more: no branch
            // around the copies (behind one, ptxas scheduled each burst apart from the FMAs).
            let copy = |kt: u32, v: usize| {
                let st = 4 * (kt % STAGES) * stage;
                let kt = if kt < tiles { kt } else { tiles - 1 };
                if v < NA {
                    async_copy::copy_4_prefetch_l2(a_dst[v] + st, a_src[v].wrapping_add((kt * bk) as usize));
                } else if v < NA + NB {
                    async_copy::copy_4(b_dst(v - NA) + st, b_src(kt, v - NA));
                }
            };
            let frag = |st: u32, kk: u32| {
                let base = s.add((st * stage) as usize);
                warp_fragments!(cfg, base, t, kk, TM, TN)
            };
            if tiles > 0 {
                spread_walk!((copy, frag), (copies_a_tile, EDGE_GROUP), STAGES, (tiles, bk), acc, TM, TN);
            }
            if kt1 > whole {
                // The partial last tile, into stage 0 once every copy has landed and every warp
                // has left the ring; its columns past k are never read.
                let left = cfg.k_left(whole, k);
                async_copy::wait_for(0);
                thread::sync_threads();
                // Unrolled by hand: a rolled loop indexes the sources at run time (local memory).
                unroll_16!(v => {
                    let v = v as usize;
                    if v < NA && cfg.a_copy(t, v as u32).1 < left {
                        async_copy::copy_4(a_dst[v], a_src[v].wrapping_add((tiles * bk) as usize));
                    }
                    if v < NB && cfg.b_copy(t, v as u32).0 < left {
                        async_copy::copy_4(b_dst(v), b_col.wrapping_add(row_major((whole * bk + cfg.b_copy(t, v as u32).0) as u64, 0, n64) as usize));
                    }
                });
                async_copy::commit();
                async_copy::wait_for(0);
                thread::sync_threads();
                let mut kk = 0;
                while kk < left {
                    let cur = frag(0, kk);
                    outer_product!(acc, cur, TM, TN);
                    kk += 1;
                }
            }
        }
    }
}
