//! Stage 9, warptile_spread (Hopper): warptile_async's copies go out two at a time between a tile's k
//! steps, 4 stages deep. The same transactions; no FMA waits on a copy's address registers.
//!
//! In `matmul_warptile_async` each thread issues its 12 copies of a tile (8 floats of A, 4
//! vectors of B) in one burst right after the tile's barrier. The H100 profile (BENCHMARKS.md)
//! showed what that costs: ptxas, out of registers, reuses the copies' address registers for
//! the next FMAs, and a `cp.async` reads its registers only when the memory pipe takes it, so
//! those FMAs wait for the whole burst (long scoreboard); and the next tile's first fragment
//! loads queue behind the burst (short scoreboard at the top of the loop). Spreading the copies
//! over the k steps, two at a time, removes both waits. The price is depth: a tile's copies go
//! out during the tile two before it is read rather than three, so the ring takes 4 stages.

use super::warptile_async::{WARPTILE_ASYNC, WTA_NA, WTA_NB};
use crate::launch::MAX_SHARED_BYTES;

/// Stages of the spread ring: tile `j + 3` is copied during tile `j`, into the stage tile `j - 1`
/// was read from (99.3 KiB of shared memory).
pub const WTS_STAGES: u32 = 4;
/// Copies a thread issues together, at every [`SPREAD_EVERY`]-th k step: 2 (one `@!PT LDS`
/// triple of ptxas's a pair instead of one a copy, 3 fewer issue slots a pair).
pub const SPREAD_GROUP: u32 = 2;
/// k steps from one burst of copies to the next.
pub const SPREAD_EVERY: u32 = 2;
const _: () = assert!(WARPTILE_ASYNC.async_consistent(WTS_STAGES, MAX_SHARED_BYTES));
// Every copy of a tile goes out within the tile's k steps.
const _: () = assert!(spread_steps((WTA_NA + WTA_NB) as u32, SPREAD_GROUP) <= WARPTILE_ASYNC.bk);
// `spread_walk` unrolls a tile's copies 32 deep.
const _: () = assert!(WTA_NA + WTA_NB <= 32);

/// The copies (numbered as the `cp.async` kernels number them: A's, then B's) a thread issues
/// at k step `kk` of a tile in a spread ring, `group` at a time: the next `group` at every
/// [`SPREAD_EVERY`]-th step, clipped to the `copies` there are.
#[inline(always)]
pub const fn spread_copies(kk: u32, copies: u32, group: u32) -> (u32, u32) {
    // Saturating: a step past u32::MAX copies is past the last (the kernels' steps are below bk).
    let lo = (kk / SPREAD_EVERY).saturating_mul(group);
    if !kk.is_multiple_of(SPREAD_EVERY) || lo >= copies {
        return (0, 0);
    }
    let end = lo.saturating_add(group);
    (lo, if end < copies { end } else { copies })
}

/// k steps a spread ring takes to issue `copies` copies `group` at a time: the step after its
/// last burst's run of [`SPREAD_EVERY`]. A `group` of 0 is taken as 1 (no division by zero), and
/// a count past `u32::MAX` saturates there.
pub const fn spread_steps(copies: u32, group: u32) -> u32 {
    let group = if group == 0 { 1 } else { group };
    copies.div_ceil(group).saturating_mul(SPREAD_EVERY)
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// `matmul_warptile_async` with its copies spread: the same 128 × 256 tiles, warps, fragment
    /// loads and FMAs, but each thread issues its 12 copies of a tile two at a time at k steps
    /// 0, 2, .., 10 of the tile two before the one they fill ([`spread_copies`]), into a ring
    /// of 4 stages (99.3 KiB). The same transactions as `matmul_warptile_async`. Assumes whole
    /// tiles and 16-byte aligned buffers (no bounds checks).
    pub unsafe fn matmul_warptile_spread(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async`).
        unsafe {
            use crate::matmul::warptile_async::hopper_device::warptile_async;
            warptile_async::<hopper_device::SpreadRing, 8, 16, WTA_NA, WTA_NB, false>(WARPTILE_ASYNC, a, b, c, m, n, k)
        }
    }
}

/// The spread ring's walk over `$tiles` k tiles (`$bk` steps each) of a ring of `$stages`
/// stages: the first `$stages - 1` tiles' `$copies` copies up front, then at each k step of tile
/// `j` the copies [`spread_copies`] names (`$group` at a time) of tile `j + $stages - 1`, the
/// fragments of the next step, and the step's FMAs into `$acc`. `$copy(kt, v)` issues copy `v`
/// of tile `kt` (none past the last), `$frag(stage, kk)` loads a step's fragments. A macro: the
/// spread ring (`spread_k_loop`) and the guarded one (stage 11's `edge_k_loop`) expand the same
/// statements with their own copies (see `ring_copies` on why not a shared function).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
macro_rules! spread_walk {
    (($copy:ident, $frag:ident), ($copies:expr, $group:expr), $stages:ident, ($tiles:expr, $bk:expr), $acc:ident, $tm:ident, $tn:ident) => {
        let mut j = 0;
        while j + 1 < $stages {
            // Unrolled by hand: rolled (LLVM keeps 24 copies rolled), the copies' sources are
            // indexed at run time, in local memory.
            unroll_tile!(v => {
                if v < $copies {
                    $copy(j, v as usize);
                }
            });
            async_copy::commit();
            j += 1;
        }
        async_copy::wait_for($stages - 2);
        thread::sync_threads();
        let mut cur = $frag(0, 0);
        let mut kt = 0;
        while kt < $tiles {
            let st = kt % $stages;
            let fill = kt + $stages - 1;
            unroll_tile!(kk => {
                if kk < $bk {
                    let (lo, hi) = spread_copies(kk, $copies, $group);
                    let mut v = lo;
                    while v < hi {
                        $copy(fill, v as usize);
                        v += 1;
                    }
                    if hi == $copies {
                        async_copy::commit();
                    }
                    let next = if kk + 1 < $bk {
                        $frag(st, kk + 1)
                    } else {
                        // Tile kt + 1 has landed for everyone, and everyone has read stage st.
                        async_copy::wait_for($stages - 2);
                        thread::sync_threads();
                        let (mut fa, mut fb) = $frag((kt + 1) % $stages, 0);
                        // As in `async_k_loop`: the next tile's first loads stay ahead of
                        // this step's FMAs, and the FMAs after the barrier.
                        order::pin(&mut fa);
                        order::pin(&mut fb);
                        order::pin(&mut cur.0);
                        order::pin(&mut cur.1);
                        (fa, fb)
                    };
                    outer_product!($acc, cur, $tm, $tn);
                    cur = next;
                }
            });
            kt += 1;
        }
    };
}
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) use spread_walk;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) mod hopper_device {
    use super::*;
    use crate::matmul::index::V4;
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::{WarpTile, outer_product, warp_fragments};
    use crate::matmul::warptile_async::hopper_device::KLoop;
    use crate::matmul::warptile_async::{copy_a, copy_b, ring_copies};
    use crate::prelude::{async_copy, math::fma, order, shared, thread};

    /// Stage 9's ring: [`spread_k_loop`] with [`WTS_STAGES`] stages.
    pub(in crate::matmul) struct SpreadRing;

    impl KLoop for SpreadRing {
        const STAGES: u32 = WTS_STAGES;
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn run<const TM: usize, const TN: usize, const NA: usize, const NB: usize>(
            cfg: WarpTile,
            a: *const f32,
            b: *const f32,
            _: u32,
            n: u32,
            k: u32,
            origin: (u32, u32),
            range: (u32, u32),
            acc: &mut [[f32; TN]; TM],
        ) {
            // SAFETY: forwarded.
            unsafe { spread_k_loop::<TM, TN, NA, NB, WTS_STAGES>(cfg, a, b, n, k, origin, range, acc) }
        }
    }

    /// k tiles `kt0..kt1` of the block tile at `origin` through a ring of `STAGES` stages, the
    /// copies spread over the k steps, added into `acc`. Tile `j` of the range goes into stage
    /// `j % STAGES`; tiles `0..STAGES - 1` are copied up front, and tile `j + STAGES - 1` during
    /// tile `j`, at the steps [`spread_copies`] names, into the stage tile `j - 1` was read
    /// from (every warp left it at the barrier that ended tile `j - 1`; for `j = 0` the stage
    /// no tile has used). Each thread commits one group a tile (empty past the last), so "at
    /// most STAGES - 2 pending" at the barrier ending tile `j` is "tile j + 1 has landed".
    ///
    /// # Safety
    /// As `async_k_loop` with `STAGES` stages.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::matmul) unsafe fn spread_k_loop<
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
        const STAGES: u32,
    >(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        n: u32,
        k: u32,
        (row0, col0): (u32, u32),
        (kt0, kt1): (u32, u32),
        acc: &mut [[f32; TN]; TM],
    ) {
        const { assert!(TM <= 8 && TN <= 16, "the FMA unrolls list 8 rows and 16 columns") };
        const { assert!(STAGES >= 2, "tile j + STAGES - 1 is copied during tile j") };
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        let t = thread::thread_idx_x();
        let (bk, stage) = (cfg.bk, cfg.stage_floats());
        let tiles = kt1 - kt0;
        let (k64, n64) = (k as u64, n as u64);
        let copies_a_tile = (NA + NB) as u32;
        // SAFETY (whole body): as `async_k_loop`'s, whose copies these are (`ring_copies`).
        unsafe {
            ring_copies!(
                (a_src, a_dst, b_src, b_dst) = cfg,
                (a, b),
                ring,
                t,
                (row0, col0),
                (kt0, bk),
                (k64, n64),
                NA,
                NB
            );
            // Copy `v` of k tile `kt` into stage `kt % STAGES` (none past the last tile).
            let copy = |kt: u32, v: usize| {
                if kt < tiles {
                    let st = 4 * (kt % STAGES) * stage;
                    if v < NA {
                        copy_a!((a_src, a_dst), v, st, kt, bk);
                    } else if v < NA + NB {
                        copy_b!((b_src, b_dst), v - NA, st, kt, bk, n);
                    }
                }
            };
            let frag = |st: u32, kk: u32| {
                let base = s.add((st * stage) as usize);
                warp_fragments!(cfg, base, t, kk, TM, TN)
            };
            spread_walk!((copy, frag), (copies_a_tile, SPREAD_GROUP), STAGES, (tiles, bk), acc, TM, TN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_copies_issue_every_copy_once_within_a_tile() {
        let copies = (WTA_NA + WTA_NB) as u32;
        let mut issued = vec![0; copies as usize];
        for kk in 0..WARPTILE_ASYNC.bk {
            let (lo, hi) = spread_copies(kk, copies, SPREAD_GROUP);
            assert!(hi - lo <= SPREAD_GROUP);
            for v in lo..hi {
                issued[v as usize] += 1;
            }
        }
        assert!(issued.iter().all(|&n| n == 1), "{issued:?}");
        // Two at a time at steps 0, 2, .., 10; an odd count ends on a single copy.
        let at = |kk, copies| spread_copies(kk, copies, SPREAD_GROUP);
        assert_eq!((at(0, 12), at(1, 12), at(10, 12)), ((0, 2), (0, 0), (10, 12)));
        assert_eq!((at(12, 12), at(4, 5)), ((0, 0), (4, 5)));
        assert_eq!((spread_steps(12, 2), spread_steps(5, 2)), (12, 6));
        // Three at a time (stage 11's 24 copies): 0..3 at step 0, 21..24 at step 14.
        assert_eq!(
            (spread_copies(0, 24, 3), spread_copies(2, 24, 3), spread_copies(14, 24, 3)),
            ((0, 3), (3, 6), (21, 24))
        );
        assert_eq!((spread_copies(16, 24, 3), spread_steps(24, 3)), ((0, 0), 16));
        // Any input (these divided by zero or overflowed).
        assert_eq!((spread_steps(5, 0), spread_steps(u32::MAX, 1)), (10, u32::MAX));
        assert_eq!((spread_copies(u32::MAX - 1, 24, 3), spread_copies(0, u32::MAX, 3)), ((0, 0), (0, 3)));
        assert_eq!(spread_copies(2, u32::MAX, u32::MAX - 1), (u32::MAX - 1, u32::MAX));
    }
}
