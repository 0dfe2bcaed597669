//! Stage 7, warptile_async (Hopper): 8 × 16 outputs a thread in 128 × 256 tiles, a `cp.async` ring.
//! 6 shared loads per 128 FMAs (was 4 per 64), no tile in registers; one block an SM, not two.

use super::warptile::WarpTile;
use crate::launch::MAX_SHARED_BYTES;

/// The `cp.async` warp-tiled kernels' index math ([`WarpTile`]'s shape, copied by `cp.async`).
impl WarpTile {
    /// Floats of A each thread copies per k step in the `cp.async` kernels (one `cp.async` each).
    pub const fn a_floats(self) -> u32 {
        self.bm * self.bk / self.threads()
    }
    /// Dynamic shared memory of a `cp.async` kernel's ring of `stages` stages.
    pub const fn ring_bytes(self, stages: u32) -> u32 {
        stages * self.stage_floats() * 4
    }
    /// `(row, col)` inside the `bm × bk` tile of A of float `e` a `cp.async` kernel's thread `t`
    /// copies: a warp takes 4 rows × the same 8 k (32 bytes, one sector, of each row), the
    /// passes walk the rows, then the next 8 k. Transposed into Aᵀ rows `at_stride()` apart,
    /// a warp's 32 floats land in 32 distinct banks when `at_stride() % 32 == 4`.
    #[inline(always)]
    pub const fn a_copy(self, t: u32, e: u32) -> (u32, u32) {
        let idx = t + e * self.threads();
        ((idx / 8) % self.bm, idx % 8 + 8 * (idx / (8 * self.bm)))
    }
    /// Whether the shape suits the `cp.async` kernels with `stages` stages: consistent, a
    /// whole number of A floats and B vectors a thread, conflict-free transposing copies, and
    /// a ring that fits the opt-in shared memory of a block (`max_shared`). Any shape and
    /// stage count may be asked, as [`WarpTile::is_consistent`].
    pub const fn async_consistent(self, stages: u32, max_shared: u32) -> bool {
        // `threads()` is defined (and at most 1024) once the tiles are consistent.
        self.tiles_consistent()
            && (self.bm as u64 * self.bk as u64).is_multiple_of(self.threads() as u64)
            && (self.bm as u64 + self.pad as u64) % 32 == 4
            && stages >= 2
            && stages as u128 * self.stage_bytes_wide() <= max_shared as u128
    }
}

/// The `cp.async` warp-tiled kernel's shape: 128 × 256 blocks walked in k steps of 16, 8
/// warps of 64 × 64 (lanes 8 × 4), 8 × 16 outputs a thread, so a k step is 6 shared vector
/// loads for 128 FMAs (4 for 64 in [`WARPTILE`](super::WARPTILE)); 245 registers, one block a
/// multiprocessor.
pub const WARPTILE_ASYNC: WarpTile =
    WarpTile { bm: 128, bn: 256, bk: 16, tm: 8, tn: 16, ly: 8, pad: 4, interleave: true };
/// Stages of `matmul_warptile_async`'s ring (74.5 KiB: past the 48 KiB default, opted in).
pub const WTA_STAGES: u32 = 3;
/// Threads of a `matmul_warptile_async` block.
pub const WTA_THREADS: u32 = 256;
/// Floats of A and 16-byte vectors of B each thread copies a k tile in `matmul_warptile_async`
/// and the stream-K kernels (the const parameters of their shared k loop).
pub const WTA_NA: usize = WARPTILE_ASYNC.a_floats() as usize;
pub const WTA_NB: usize = WARPTILE_ASYNC.b_vectors() as usize;
const _: () = assert!(WARPTILE_ASYNC.async_consistent(WTA_STAGES, MAX_SHARED_BYTES));
const _: () = assert!(WARPTILE_ASYNC.threads() == WTA_THREADS);

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Warp tiling through a `cp.async` ring: 128 × 256 blocks of 8 warps of 64 × 64, 8 × 16
    /// outputs a thread, k steps of 16, both tiles copied global → shared by `cp.async` three
    /// stages ahead, so no register holds a tile in flight and 128 accumulators fit. Per k step
    /// a warp makes 6 `ld.shared.v4` (2 of A: 8 contiguous vectors; 4 of B: 4 contiguous
    /// vectors) for 128 FMAs a thread. Per k tile a warp copies A one float at a time, 4 rows ×
    /// 32 bytes a copy (4 sectors, each row's 128-byte line prefetched into L2; transposed into
    /// Aᵀ, 32 distinct banks), 8 copies a thread, and B 16 bytes at a time, 512 contiguous bytes
    /// a copy (16 sectors), 4 a thread. Changes
    /// from `matmul_warptile_sm90`: twice the outputs a thread (a third fewer shared loads per
    /// FMA), no loads through registers, and one block a multiprocessor instead of two.
    /// Assumes whole tiles and 16-byte aligned buffers (no bounds checks).
    pub unsafe fn matmul_warptile_async(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `warptile_async`).
        unsafe {
            use hopper_device::{AsyncRing, warptile_async};
            warptile_async::<AsyncRing, 8, 16, WTA_NA, WTA_NB, false>(WARPTILE_ASYNC, a, b, c, m, n, k)
        }
    }
}

/// Declares the sources and shared destinations of a thread's `cp.async` copies of k tile `kt0`
/// into stage 0 of a ring at shared address `$ring`: `a_src, a_dst, b_src, b_dst`, A's `$na` floats
/// ([`WarpTile::a_copy`], transposed into Aᵀ) and B's `$nb` vectors ([`WarpTile::b_load`]).
/// Copy `v` of tile `kt` adds `kt` tiles to the source and its stage to the destination
/// ([`copy_a`], [`copy_b`]). Macros, not functions: both rings' loops (`async_k_loop`, stage
/// 9's `spread_k_loop`) expand the same statements; through a shared struct LLVM scheduled each
/// loop differently (the spread kernel 2.5% slower at 4096³ on the H100, `matmul_warptile_async`
/// 6 registers more). Unsafe pointer arithmetic: the caller's `unsafe` block and contract.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
macro_rules! ring_copies {
    (($a_src:ident, $a_dst:ident, $b_src:ident, $b_dst:ident) = $cfg:expr, ($a:expr, $b:expr), $ring:expr, $t:expr,
     ($row0:expr, $col0:expr), ($kt0:expr, $bk:expr), ($k64:expr, $n64:expr), $na:ident, $nb:ident) => {
        let mut $a_src = [$a; $na];
        let mut $a_dst = [0u32; $na];
        let mut v = 0;
        while v < $na {
            let (row, col) = $cfg.a_copy($t, v as u32);
            $a_src[v] = $a.add(row_major(($row0 + row) as u64, ($kt0 * $bk + col) as u64, $k64) as usize);
            $a_dst[v] = $ring + 4 * $cfg.at_offset((row, col), 0);
            v += 1;
        }
        let mut $b_src = [$b; $nb];
        let mut $b_dst = [0u32; $nb];
        let mut v = 0;
        while v < $nb {
            let at = $cfg.b_load($t, v as u32);
            $b_src[v] = $b.add(row_major(($kt0 * $bk + at.0) as u64, ($col0 + at.1) as u64, $n64) as usize);
            $b_dst[v] = $ring + 4 * $cfg.b_offset(at);
            v += 1;
        }
    };
}

/// Copy `$v` of A (one float, from [`ring_copies`]) of k tile `$kt`, `$st` bytes into the ring.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
macro_rules! copy_a {
    (($src:expr, $dst:expr), $v:expr, $st:expr, $kt:expr, $bk:expr) => {
        // A row's 16 floats of a tile are 2 of the sectors of a 128-byte line the next 3 tiles
        // read: fetched into L2 together (+0.6% at 4096³, +1.2% at 2048³ on the H100).
        async_copy::copy_4_prefetch_l2($dst[$v] + $st, $src[$v].add(($kt * $bk) as usize))
    };
}

/// Copy `$v` of B (a 16-byte vector, from [`ring_copies`]) of k tile `$kt` (`$n` columns),
/// `$st` bytes into the ring.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
macro_rules! copy_b {
    (($src:expr, $dst:expr), $v:expr, $st:expr, $kt:expr, $bk:expr, $n:expr) => {{
        let p = $src[$v].add($kt as usize * $bk as usize * $n as usize);
        async_copy::copy_16($dst[$v] + $st, p as *const [f32; 4]);
    }};
}
// Stage 9's spread ring copies with these too.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) use {copy_a, copy_b, ring_copies};

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) mod hopper_device {
    use super::*;
    use crate::matmul::edge::store_tile_edge;
    use crate::matmul::index::V4;
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::{outer_product, warp_fragments};
    use crate::prelude::{async_copy, math::fma, mem, order, shared, thread};

    /// The `cp.async` warp-tiled kernel for `cfg`, whose `tm`, `tn`, `a_floats()` and
    /// `b_vectors()` are `TM`, `TN`, `NA` and `NB`, walking k through the ring `L`: block
    /// `(x, y)` computes its whole tile, or with `LINEAR` the block of linear id `i` whole tile
    /// `i` ([`WarpTile::tile_origin`]); then [`KLoop::run`], [`store_tile`].
    ///
    /// # Safety
    /// `cfg.supports(m, n, k)`; buffers hold m·k, k·n and m·n floats and start on 16-byte
    /// boundaries; the launch is blocks of `cfg.threads()` threads with
    /// `cfg.ring_bytes(L::STAGES)` of shared memory: `cfg.grid(m, n)` of them, or with `LINEAR`
    /// at most `(m / bm) · (n / bn)` (stream-K's whole waves). With an `L::EDGE` loop instead:
    /// any m, n, k ≥ 1 and 4-byte aligned buffers (`edge_k_loop`), `LINEAR`, and at most
    /// `m.div_ceil(bm) · n.div_ceil(bn)` blocks (`StreamK::covering`'s whole waves).
    #[inline(always)]
    pub(in crate::matmul) unsafe fn warptile_async<
        L: KLoop,
        const TM: usize,
        const TN: usize,
        const NA: usize,
        const NB: usize,
        const LINEAR: bool,
    >(
        cfg: WarpTile,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let origin = if LINEAR {
            // A guarded loop counts partial tiles too.
            cfg.tile_origin(thread::block_linear(), if L::EDGE { n.div_ceil(cfg.bn) } else { n / cfg.bn })
        } else {
            cfg.block_origin(thread::block_idx_x(), thread::block_idx_y())
        };
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: forwarded (the tile is one of C's, all of k).
        unsafe {
            L::run::<TM, TN, NA, NB>(cfg, a, b, m, n, k, origin, (0, cfg.k_tiles(k, L::EDGE)), &mut acc);
            if L::EDGE {
                store_tile_edge::<TM, TN>(cfg, c, (m, n), origin, &acc, false);
            } else {
                store_tile::<TM, TN>(cfg, c, n, origin, &acc, false);
            }
        }
    }

    /// How a warp-tiled block walks its k tiles through a ring of shared stages: the ring's
    /// depth and when its copies go out ([`AsyncRing`]: all of a tile's at once, at the
    /// barrier; stage 9's `SpreadRing`: two at a time between a tile's k steps). The stream-K
    /// kernels take either.
    pub(in crate::matmul) trait KLoop {
        /// Stages of the ring (its shared memory: [`WarpTile::ring_bytes`]).
        const STAGES: u32;
        /// Whether the loop takes any shape (stage 11's `EdgeRing`): partial tiles of C and a
        /// partial last k tile, so its kernels count tiles rounding up and guard their stores.
        const EDGE: bool = false;
        /// k tiles `kt0..kt1` of the block tile at `origin` of an `m × n × k` multiply, added
        /// into `acc`.
        ///
        /// # Safety
        /// As [`async_k_loop`] with `Self::STAGES` stages (with `EDGE`, as `edge_k_loop`).
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
        );
    }

    /// Stage 7's ring: [`async_k_loop`] with [`WTA_STAGES`] stages.
    pub(in crate::matmul) struct AsyncRing;

    impl KLoop for AsyncRing {
        const STAGES: u32 = WTA_STAGES;
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
            unsafe { async_k_loop::<TM, TN, NA, NB, WTA_STAGES>(cfg, a, b, n, k, origin, range, acc) }
        }
    }

    /// k tiles `kt0..kt1` of the block tile at `origin` through a ring of `STAGES` stages,
    /// added into `acc`. Tile `j` of the range goes into stage `j % STAGES`; the first
    /// `STAGES` tiles are issued up front, and tile `j + STAGES` right after the barrier at tile
    /// `j`'s last k step, when every warp has read stage `j % STAGES` into registers. Each
    /// thread commits one group a tile (empty past the last), so "at most STAGES - 2 pending"
    /// at that barrier is "tile j + 1 has landed".
    ///
    /// # Safety
    /// `cfg` is `WARPTILE_ASYNC`-like (`async_consistent`); the tile at `origin` and k tiles
    /// `kt0..kt1` lie inside A (m·k floats) and B (k·n), both 16-byte aligned with k and n
    /// multiples of the tile; the block has `cfg.threads()` threads and `cfg.ring_bytes(STAGES)`
    /// of shared memory, no copy of its own in flight and no warp still reading the ring.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(in crate::matmul) unsafe fn async_k_loop<
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
        let s = shared::dynamic::<f32>();
        // SAFETY: the dynamic shared memory is this block's.
        let ring = unsafe { shared::address(s) };
        let t = thread::thread_idx_x();
        let (bk, stage) = (cfg.bk, cfg.stage_floats());
        let tiles = kt1 - kt0;
        let (k64, n64) = (k as u64, n as u64);
        // SAFETY (whole body): every global float and vector below lies inside its matrix
        // (`WarpTile::a_copy`, `b_load` within the tile and k tiles below kt1); shared offsets
        // stay inside the `STAGES` stages launched (`WarpTile::ring_bytes`); shared vectors are
        // 16-byte aligned (`at_stride`, `bn` and the vector offsets are multiples of 4 floats).
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
            let issue = |kt: u32| {
                if kt < tiles {
                    let st = 4 * (kt % STAGES) * stage;
                    let mut v = 0;
                    while v < NA {
                        copy_a!((a_src, a_dst), v, st, kt, bk);
                        v += 1;
                    }
                    let mut v = 0;
                    while v < NB {
                        copy_b!((b_src, b_dst), v, st, kt, bk, n);
                        v += 1;
                    }
                }
                async_copy::commit();
            };
            let frag = |st: u32, kk: u32| {
                let base = s.add((st * stage) as usize);
                warp_fragments!(cfg, base, t, kk, TM, TN)
            };
            let mut j = 0;
            while j < STAGES {
                issue(j);
                j += 1;
            }
            async_copy::wait_for(STAGES - 1);
            thread::sync_threads();
            let mut cur = frag(0, 0);
            let mut kt = 0;
            while kt < tiles {
                let st = kt % STAGES;
                unroll_tile!(kk => {
                    if kk < bk {
                        let next = if kk + 1 < bk {
                            frag(st, kk + 1)
                        } else {
                            // Tile kt + 1 has landed for everyone, and everyone has read stage
                            // st: refill it with tile kt + STAGES.
                            async_copy::wait_for(STAGES - 2);
                            thread::sync_threads();
                            issue(kt + STAGES);
                            let (mut fa, mut fb) = frag((kt + 1) % STAGES, 0);
                            // The next tile's first loads stay here, ahead of this step's FMAs,
                            // and the FMAs after the barrier (else LLVM sinks the loads to the
                            // loop's top and hoists the FMAs above the barrier: nothing hides
                            // either wait).
                            order::pin(&mut fa);
                            order::pin(&mut fb);
                            order::pin(&mut cur.0);
                            order::pin(&mut cur.1);
                            (fa, fb)
                        };
                        outer_product!(acc, cur, TM, TN);
                        cur = next;
                    }
                });
                kt += 1;
            }
        }
    }

    /// Stores `acc`, the block tile at `origin`, into C; with `add`, adds it to what C holds
    /// there (another block's partial sums, published to this block).
    ///
    /// # Safety
    /// The tile lies inside C (m·n floats, 16-byte aligned, n a multiple of 4); the block has
    /// `cfg.threads()` threads.
    #[inline(always)]
    pub(in crate::matmul) unsafe fn store_tile<const TM: usize, const TN: usize>(
        cfg: WarpTile,
        c: *mut f32,
        n: u32,
        (row0, col0): (u32, u32),
        acc: &[[f32; TN]; TM],
        add: bool,
    ) {
        let t = thread::thread_idx_x();
        let at = |i: u32, h: u32| {
            let (r, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
            // SAFETY: `out_row`/`out_col` stay inside the tile (caller's contract), so the
            // offset is inside C.
            unsafe { c.add(row_major(r as u64, col as u64, n as u64) as usize) as *mut [f32; 4] }
        };
        let sums = |i: u32, h: u32| {
            let (i, h) = (i as usize, h as usize);
            [acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]]
        };
        // SAFETY: every vector is inside the tile, 16-byte aligned (caller's contract).
        unsafe {
            if add {
                // Another block's partial sums: a pair of rows' loads all go out before their
                // first store (the asm keeps program order), so 2·TN/4 round trips to L2
                // overlap; one load, add and store at a time waited out 32 of them a tile.
                unroll_tile!(@ p {
                    if (2 * p as usize) < TM {
                        let mut before = [[0.0f32; 4]; 8];
                        unroll_tile!(@ j {
                            if ((2 * p + j / 4) as usize) < TM && ((j % 4) as usize) < TN / 4 {
                                before[j as usize] = mem::load_v4_f32_cg(at(2 * p + j / 4, j % 4));
                            }
                        }; 0 1 2 3 4 5 6 7);
                        unroll_tile!(@ j {
                            if ((2 * p + j / 4) as usize) < TM && ((j % 4) as usize) < TN / 4 {
                                let (b, v) = (before[j as usize], sums(2 * p + j / 4, j % 4));
                                mem::store_v4_f32(at(2 * p + j / 4, j % 4), [b[0] + v[0], b[1] + v[1], b[2] + v[2], b[3] + v[3]]);
                            }
                        }; 0 1 2 3 4 5 6 7);
                    }
                }; 0 1 2 3);
            } else {
                // The address spelled out again rather than through `at`: through the closure
                // LLVM moved C's address arithmetic into `matmul_warptile_async`'s k loop, and
                // sharing it the other way changed `matmul_warptile_streamk`'s PTX (measured
                // kernels are kept byte-identical).
                unroll_tile!(@ i {
                    if (i as usize) < TM {
                        let r = row0 + cfg.out_row(t, i);
                        unroll_tile!(@ h {
                            if (h as usize) < TN / 4 {
                                let col = col0 + cfg.out_col(t, h);
                                let at = c.add(row_major(r as u64, col as u64, n as u64) as usize) as *mut [f32; 4];
                                mem::store_v4_f32(at, sums(i, h));
                            }
                        }; 0 1 2 3);
                    }
                }; 0 1 2 3 4 5 6 7);
            }
        }
    }
}
