//! Stage 14, split_k (Hopper, any shape): `warptile_small`'s 64 × 128 tiles, guarded, with each
//! tile's k cut into `splits` ranges, a block a range, so a grid of few tiles still fills the GPU.
//! Each block writes its partial tile (32 KiB) to a workspace in L2; the last of a tile's blocks
//! to arrive adds the partials in split order and stores C: (2·splits − 1) × 32 KiB more L2
//! traffic a tile for `splits` times the blocks.
//!
//! 512³ is 32 tiles of 64 × 128: one launch of 32 blocks each walking all 32 k tiles leaves 100
//! of the H100's 132 multiprocessors idle. Cut 8 ways it is 256 blocks of 4 k tiles, two a
//! multiprocessor. The order of the sums is fixed (split 0 first), so the result does not depend
//! on which block finishes last.
//!
//! Stages 15 and 16, split_k_wide and split_k_tall: the same on 32 × 128 and 128 × 32 tiles
//! ([`SplitKTile`]), for m ≤ 32 and n ≤ 32. At m = 32 a 64-row tile multiplies 32 rows past m
//! and at n = 32 a 128-column tile 96 columns past n (clamped reads, never stored): half and
//! three quarters of its FMAs. A 32-row or 32-column tile multiplies none; its 4 × 8 sums a
//! thread fit 4 blocks a multiprocessor, and k is cut up to 16 ways.

use super::warptile::{WARPTILE_SMALL, WarpTile};
use super::warptile_spread::WTS_STAGES;
use crate::launch::MAX_SHARED_BYTES;

/// A split-K kernel's block tile, how many of its blocks a multiprocessor runs at once (its
/// kernel's launch bounds: the grid aims at filling them) and the most ranges a tile's k is cut
/// into (the tile's last block reads the others' partials back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitKTile {
    /// The warp-tiled shape of a block, every access guarded.
    pub cfg: WarpTile,
    /// Blocks a multiprocessor runs at once.
    pub blocks_per_sm: u32,
    /// Most ranges a tile's k is cut into.
    pub max_splits: u32,
}

/// Stage 14's tile: [`WARPTILE_SMALL`]'s 64 × 128, 8 × 8 sums a thread, two blocks a
/// multiprocessor (214 registers), k cut at most 8 ways (7 × 32 KiB read back).
pub const SPLIT_K: SplitKTile = SplitKTile { cfg: WARPTILE_SMALL, blocks_per_sm: 2, max_splits: 8 };
/// Stage 15's tile, for m ≤ 32: 32 × 128 blocks of 4 warps of 32 × 32 (lanes 8 × 4), 4 × 8 sums
/// a thread, so a row of A past m is never multiplied where stage 14's 64 rows wasted half; a
/// quarter of the registers' sums lets 4 blocks share a multiprocessor, and k is cut up to 16 ways.
pub const SPLIT_K_WIDE: SplitKTile = SplitKTile {
    cfg: WarpTile { bm: 32, bn: 128, bk: 16, tm: 4, tn: 8, ly: 8, pad: 4, interleave: true },
    blocks_per_sm: 4,
    max_splits: 16,
};
/// Stage 16's tile, for n ≤ 32: 128 × 32 blocks of 4 warps of 32 × 32 (lanes 4 × 8), 8 × 4 sums
/// a thread: stage 15's turned over, so no column of B past n is multiplied where stage 14's 128
/// columns wasted three quarters.
pub const SPLIT_K_TALL: SplitKTile = SplitKTile {
    cfg: WarpTile { bm: 128, bn: 32, bk: 16, tm: 8, tn: 4, ly: 4, pad: 4, interleave: true },
    blocks_per_sm: 4,
    max_splits: 16,
};
/// Floats of the split-K kernels' workspace: the partial tiles of the launch running (16 MiB of
/// the Hopper module's global memory, shared by the three kernels, whose launches are ordered
/// on one stream).
pub const SPLIT_K_WORKSPACE_FLOATS: u32 = 1 << 22;
/// Ticket counters of the workspace: one a tile, for as many tiles as partial tiles of the
/// smallest tile fit.
pub const SPLIT_K_TICKETS: u32 = 1024;

impl SplitKTile {
    /// Floats of one partial tile in the workspace.
    pub const fn tile_floats(self) -> u32 {
        self.cfg.bm * self.cfg.bn
    }

    /// Most blocks of one launch: one partial tile each in the workspace.
    pub const fn max_blocks(self) -> u32 {
        SPLIT_K_WORKSPACE_FLOATS / self.tile_floats()
    }

    /// Whether the tile fits the kernels' assumptions: a consistent warp tile of 8 × 8 sums a
    /// thread at most, its blocks' tickets inside [`SPLIT_K_TICKETS`], and a partial tile the
    /// threads' slots exactly.
    pub const fn is_consistent(self) -> bool {
        self.cfg.tiles_consistent()
            && self.cfg.tm <= 8
            && self.blocks_per_sm > 0
            && self.max_splits > 0
            && self.max_blocks() <= SPLIT_K_TICKETS
            && self.tile_floats() == self.cfg.tm * self.cfg.tn * self.cfg.threads()
            && if self.cfg.tn <= 8 {
                self.cfg.is_consistent() && split_k_group(self.cfg) * self.cfg.tm * self.cfg.tn / 4 == 16
            } else {
                // The spread ring's (its shared memory opted into), whose last block adds a row
                // of 4 vectors at a time, all its splits' loaded together: 32 vectors at most.
                self.cfg.async_consistent(WTS_STAGES, MAX_SHARED_BYTES) && self.cfg.tn == 16 && self.max_splits <= 8
            }
    }
}

/// Float offset inside a partial tile of `cfg` of thread `t`'s 4 sums `4h..4h + 4` of its
/// accumulator row `i`: the block's threads side by side for each `(i, h)`, so a warp writes and
/// reads 512 contiguous bytes.
#[inline(always)]
pub const fn split_k_slot(cfg: WarpTile, t: u32, i: u32, h: u32) -> u32 {
    ((i * (cfg.tn / 4) + h) * cfg.threads() + t) * 4
}

/// Splits a tile's last block of `cfg` loads at a time, in split order: as many as 16 vectors of
/// its thread's sums hold (one of 64 × 128, two of 32 × 128 and 128 × 32). With two, the block's
/// own partial is read back from the workspace like the others'.
#[inline(always)]
pub const fn split_k_group(cfg: WarpTile) -> u32 {
    16 / (cfg.tm * cfg.tn / 4)
}

const _: () = assert!(SPLIT_K.is_consistent() && SPLIT_K_WIDE.is_consistent() && SPLIT_K_TALL.is_consistent());

/// The split-K schedule of an `m × n × k` multiply on tile `cfg`: a grid of `tiles_x × tiles_y`
/// tiles, each tile's k tiles cut into `splits` ranges of equal length (`per`; the last ranges
/// may be shorter or empty), block `x` of a grid row taking tile column `x % tiles_x` and range
/// `x / tiles_x`. The kernel reads the schedule back from its grid and n ([`SplitK::of_grid`]);
/// a range that starts past k is empty, and its block adds zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitK {
    /// The block tile.
    pub cfg: WarpTile,
    /// Tile columns (over n).
    pub tiles_x: u32,
    /// Tile rows (over m).
    pub tiles_y: u32,
    /// Ranges a tile's k tiles are cut into.
    pub splits: u32,
}

impl SplitK {
    /// The schedule of `tile` on a GPU of `sms` multiprocessors: as many splits as fill its
    /// blocks a multiprocessor, at most its `max_splits`, `max_blocks()` blocks in all, and half
    /// k's tiles (two k tiles a range at least: a range of one spends as long on its partial as
    /// on its FMAs); one (no cut) where the tiles alone fill the GPU. `m` and `n` at least 1.
    pub const fn of(tile: SplitKTile, m: u32, n: u32, k: u32, sms: u32) -> SplitK {
        let (tiles_x, tiles_y) = tile.cfg.grid(m, n);
        let tiles = tiles_x as u64 * tiles_y as u64;
        let tiles = if tiles == 0 { 1 } else { tiles };
        let mut splits = sms as u64 * tile.blocks_per_sm as u64 / tiles;
        if splits > tile.max_splits as u64 {
            splits = tile.max_splits as u64;
        }
        if splits > tile.max_blocks() as u64 / tiles {
            splits = tile.max_blocks() as u64 / tiles;
        }
        let halves = tile.cfg.k_tiles(k, true) as u64 / 2;
        if splits > halves {
            splits = halves;
        }
        SplitK { cfg: tile.cfg, tiles_x, tiles_y, splits: if splits == 0 { 1 } else { splits as u32 } }
    }

    /// Tiles of C.
    pub const fn tiles(self) -> u64 {
        self.tiles_x as u64 * self.tiles_y as u64
    }

    /// Blocks of the launch.
    pub const fn blocks(self) -> u64 {
        self.tiles() * self.splits as u64
    }

    /// Floats of one partial tile in the workspace.
    #[inline(always)]
    pub const fn tile_floats(self) -> u32 {
        self.cfg.bm * self.cfg.bn
    }

    /// Whether the launch fits the workspace (a partial tile a block) and its tickets (one a
    /// tile).
    pub const fn fits(self) -> bool {
        self.blocks() * self.tile_floats() as u64 <= SPLIT_K_WORKSPACE_FLOATS as u64
            && self.tiles() <= SPLIT_K_TICKETS as u64
    }

    /// The grid: `tiles_x · splits` blocks a row, a row a tile row.
    pub const fn grid(self) -> (u32, u32) {
        (self.tiles_x * self.splits, self.tiles_y)
    }

    /// The schedule a block of tile `cfg` reads back from its launch's grid (the plan's
    /// [`SplitK::grid`]).
    #[inline(always)]
    pub const fn of_grid(cfg: WarpTile, n: u32, (grid_x, grid_y): (u32, u32)) -> SplitK {
        // At least 1 (n is), which also spares the kernel a division-by-zero branch.
        let tiles_x = if n == 0 { 1 } else { n.div_ceil(cfg.bn) };
        let splits = match grid_x.checked_div(tiles_x) {
            Some(splits) if splits > 0 => splits,
            _ => 1,
        };
        SplitK { cfg, tiles_x, tiles_y: grid_y, splits }
    }

    /// `(tile column, split)` of block `bx` of a grid row.
    #[inline(always)]
    pub const fn block(self, bx: u32) -> (u32, u32) {
        (bx % self.tiles_x, bx / self.tiles_x)
    }

    /// k tiles of a range: all of k's (a partial last one included) over the splits.
    #[inline(always)]
    pub const fn per(self, k: u32) -> u32 {
        self.cfg.k_tiles(k, true).div_ceil(self.splits)
    }

    /// The k tiles split `z` walks: `start..end`, empty past k.
    #[inline(always)]
    pub const fn range(self, z: u32, k: u32) -> (u32, u32) {
        let (tiles, per) = (self.cfg.k_tiles(k, true), self.per(k));
        let start = z * per;
        let end = start + per;
        let end = if end > tiles { tiles } else { end };
        if start > end { (end, end) } else { (start, end) }
    }

    /// [`SplitK::range`] as the kernel walks it: an empty range starts on k's last tile, which
    /// the loop's first loads read (and nothing is added).
    #[inline(always)]
    pub const fn walked(self, z: u32, k: u32) -> (u32, u32) {
        let (first, end) = self.range(z, k);
        let last = self.cfg.k_tiles(k, true) - 1;
        if first < end { (first, end) } else { (last, last) }
    }

    /// Index of tile `(tx, ty)` (its ticket counter).
    #[inline(always)]
    pub const fn tile(self, tx: u32, ty: u32) -> u32 {
        ty * self.tiles_x + tx
    }

    /// Float where split `z`'s partial of tile `tile` starts in the workspace.
    #[inline(always)]
    pub const fn partial(self, tile: u32, z: u32) -> u64 {
        (tile as u64 * self.splits as u64 + z as u64) * self.tile_floats() as u64
    }
}

/// The body of a split-K kernel on tile `$tile` (its `tm` and `tn` being `$tm` and `$tn`, its
/// vector counts the literal array lengths the k loop needs).
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
macro_rules! split_k_body {
    ($tile:ident, $tm:literal, $tn:literal, $a:ident, $b:ident, $c:ident, $m:ident, $n:ident, $k:ident) => {{
        use crate::matmul::warptile::{WT_LATE_SPLIT_AT, device::warptile};
        const NA: usize = $tile.cfg.a_vectors() as usize;
        const NB: usize = $tile.cfg.b_vectors() as usize;
        const { assert!($tile.cfg.tm == $tm && $tile.cfg.tn == $tn) };
        // SAFETY: forwarded plan guarantees (see `warptile` and `hopper_device::SplitTile`).
        unsafe {
            warptile::<hopper_device::SplitTile, $tm, $tn, NA, NB, true, WT_LATE_SPLIT_AT>(
                $tile.cfg, $a, $b, $c, $m, $n, $k,
            )
        }
    }};
}

crate::hopper_kernel! {
    #[launch_bounds(128, 2)]
    /// Split-K over the guarded small-grid warp tile: block `x` of grid row `y` computes tile
    /// `(x % tiles_x, y)` over k range `x / tiles_x` ([`SplitK`]), writes its sums to the
    /// workspace and takes a ticket; the tile's last block adds the partials in split order and
    /// stores C's floats inside `m × n`. Per k tile the sectors of `matmul_warptile_edge`, read
    /// as 16-byte vectors where rows start on 16-byte boundaries (`mm_vectors`); per block 32 KiB
    /// written to L2, and the last block of a tile reads the other splits' back.
    pub unsafe fn matmul_split_k(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        split_k_body!(SPLIT_K, 8, 8, a, b, c, m, n, k)
    }
}

crate::hopper_kernel! {
    #[launch_bounds(128, 4)]
    /// `matmul_split_k` on 32 × 128 tiles ([`SPLIT_K_WIDE`]), for m ≤ 32: per k tile a block
    /// reads 2 KiB of A and 8 KiB of B for 64 Ki FMAs (stage 14: 4 KiB, 8 KiB, 128 Ki), and
    /// writes a 16 KiB partial.
    pub unsafe fn matmul_split_k_wide(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        split_k_body!(SPLIT_K_WIDE, 4, 8, a, b, c, m, n, k)
    }
}

crate::hopper_kernel! {
    #[launch_bounds(128, 4)]
    /// `matmul_split_k` on 128 × 32 tiles ([`SPLIT_K_TALL`]), for n ≤ 32: per k tile a block
    /// reads 8 KiB of A and 2 KiB of B for 64 Ki FMAs, and writes a 16 KiB partial.
    pub unsafe fn matmul_split_k_tall(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        split_k_body!(SPLIT_K_TALL, 8, 4, a, b, c, m, n, k)
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
pub(super) mod hopper_device {
    use super::*;
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::device::TileJob;
    use crate::prelude::{atomic, mem, shared, thread};

    /// The partial tiles of the launch running now ([`SplitK::partial`]).
    static mut SPLIT_K_WORKSPACE: [f32; SPLIT_K_WORKSPACE_FLOATS as usize] = [0.0; SPLIT_K_WORKSPACE_FLOATS as usize];
    /// Tickets taken a tile; the last block of a tile sets its counter back to 0 for the next
    /// launch.
    static mut SPLIT_K_TICKET_COUNTERS: [u32; SPLIT_K_TICKETS as usize] = [0; SPLIT_K_TICKETS as usize];

    /// The workspace and the ticket counters (module globals).
    #[inline(always)]
    pub(in crate::matmul) fn globals() -> (*mut f32, *mut u32) {
        ((&raw mut SPLIT_K_WORKSPACE).cast::<f32>(), (&raw mut SPLIT_K_TICKET_COUNTERS).cast::<u32>())
    }

    /// The schedule of the launch running, from its grid, and this block's `(tile column, split)`.
    #[inline(always)]
    pub(in crate::matmul) fn this_block(cfg: WarpTile, n: u32) -> (SplitK, u32, u32) {
        let sk = SplitK::of_grid(cfg, n, (thread::grid_dim_x(), thread::grid_dim_y()));
        let (tx, z) = sk.block(thread::block_idx_x());
        (sk, tx, z)
    }

    /// A split's block writes its partial: the thread's sums (`four(i, h)`, `TM × TN / 4`
    /// vectors) into its slots of split `z`'s partial of `tile`, then one ticket a block. Thread
    /// 0's ticket (the count before its own), `None` on the other threads.
    ///
    /// # Safety
    /// The partial lies in the workspace (`sk.fits()`, `z < sk.splits`, `tile < sk.tiles()`), and
    /// the block's threads all call this.
    #[inline(always)]
    pub(in crate::matmul) unsafe fn store_partial<const TM: usize, const TN: usize>(
        cfg: WarpTile,
        sk: SplitK,
        (tile, z): (u32, u32),
        four: &dyn Fn(u32, u32) -> [f32; 4],
    ) -> Option<u32> {
        let t = thread::thread_idx_x();
        // SAFETY: workspace offsets are below `blocks() * tile_floats()` (the caller's `fits`,
        // z < splits, tile < tiles, `split_k_slot` inside a tile), tickets below `tiles() <=
        // SPLIT_K_TICKETS`.
        unsafe {
            let (workspace, tickets) = globals();
            let mine = workspace.add(sk.partial(tile, z) as usize);
            unroll_8!(i => {
                if (i as usize) < TM {
                    unroll_4!(h => {
                        if (h as usize) < TN / 4 {
                            mem::store_v4_f32(mine.add(split_k_slot(cfg, t, i, h) as usize) as *mut [f32; 4], four(i, h));
                        }
                    });
                }
            });
            // Release: the barrier orders the block's partial before thread 0's fence, whose
            // cumulativity makes all of it visible GPU-wide before the ticket (one fence a
            // block, not every thread waiting for its own stores).
            thread::sync_threads();
            if t == 0 {
                atomic::fence_gpu();
                Some(atomic::add_u32(tickets.add(tile as usize), 1))
            } else {
                None
            }
        }
    }

    /// A split's block publishes its partial ([`store_partial`]). `Some((workspace, tile))` on
    /// the tile's last block, whose threads then see every split's partial (its ticket's counter
    /// set back to 0 for the next launch); `None` on the others, and where the schedule is one
    /// the workspace cannot hold (never planned: nothing is written past it).
    ///
    /// # Safety
    /// The launch is `SplitK::of(tile, ..).grid()` of `cfg`'s blocks, alone among the module's
    /// split-K launches; every read of the block's shared memory comes before this call.
    #[inline(always)]
    pub(super) unsafe fn publish<const TM: usize, const TN: usize>(
        cfg: WarpTile,
        (sk, tx, z): (SplitK, u32, u32),
        four: &dyn Fn(u32, u32) -> [f32; 4],
    ) -> Option<(*mut f32, u32)> {
        if !sk.fits() || z >= sk.splits {
            return None;
        }
        let tile = sk.tile(tx, thread::block_idx_y());
        let s = shared::dynamic::<u32>();
        // SAFETY: the partial lies in the workspace (checked above), the ticket below
        // `tiles() <= SPLIT_K_TICKETS`; shared word 0 is inside the launch's shared memory,
        // written after a barrier that follows every read of it (the caller's contract).
        unsafe {
            if let Some(ticket) = store_partial::<TM, TN>(cfg, sk, (tile, z), four) {
                // Acquire: every partial whose ticket came before is visible to this thread,
                // and through the barrier below to its block.
                atomic::fence_gpu();
                let last = ticket + 1 == sk.splits;
                if last {
                    *globals().1.add(tile as usize) = 0;
                }
                *s = last as u32;
            }
            thread::sync_threads();
            // Uniform: every thread reads the flag behind the same barrier.
            if *s == 0 { None } else { Some((globals().0, tile)) }
        }
    }

    /// A split-K block's job: its tile's range of k, its sums to the workspace, and on the tile's
    /// last block the partials added in split order into C.
    ///
    /// Safety (of the kernels, beside `warptile`'s): the launch is `SplitK::of(tile, m, n, k,
    /// _).grid()` of its kernel's tile, and no other split-K launch of the same module runs at
    /// the same time (the workspace and tickets are the module's).
    pub(super) struct SplitTile;

    impl TileJob for SplitTile {
        const STORES: bool = false;
        const VECTORS: bool = true;

        #[inline(always)]
        fn origin(cfg: WarpTile, n: u32) -> (u32, u32) {
            let (_, tx, _) = this_block(cfg, n);
            cfg.block_origin(tx, thread::block_idx_y())
        }

        #[inline(always)]
        fn range(cfg: WarpTile, n: u32, k: u32, _: u32) -> (u32, u32) {
            let (sk, _, z) = this_block(cfg, n);
            sk.walked(z, k)
        }

        #[inline(always)]
        fn vectors(a: *const f32, b: *const f32, n: u32, k: u32) -> bool {
            crate::matmul::cp_async::mm_vectors(n, k, a as u64, b as u64)
        }

        #[inline(always)]
        unsafe fn finish<const TM: usize, const TN: usize>(
            cfg: WarpTile,
            c: *mut f32,
            (m, n): (u32, u32),
            (row0, col0): (u32, u32),
            acc: &[[f32; TN]; TM],
        ) {
            const { assert!(TM <= 8 && TN <= 8 && TM * TN / 4 <= 16, "split-K's slots are 8 rows of 2 vectors at most") };
            // The thread's sums as `TM · TN / 4` vectors, `q` being `(i, h)`, row by row.
            let hs = TN / 4;
            let (sk, tx, z) = this_block(cfg, n);
            let t = thread::thread_idx_x();
            let n64 = n as u64;
            let four = |i: u32, h: u32| {
                let (i, h) = (i as usize, 4 * h as usize);
                [acc[i][h], acc[i][h + 1], acc[i][h + 2], acc[i][h + 3]]
            };
            // C's floats of this thread inside `m × n`, from its sums `sum(i, h)`.
            let store = |sum: &dyn Fn(u32, u32) -> [f32; 4]| {
                unroll_8!(i => {
                    if (i as usize) < TM {
                        let r = row0 + cfg.out_row(t, i);
                        unroll_2!(h => {
                            if (h as usize) < hs {
                                let v = sum(i, h);
                                let col = col0 + cfg.out_col(t, h);
                                if r < m {
                                    unroll_4!(q => {
                                        if col + q < n {
                                            // SAFETY: inside m × n (checked), and C holds m·n floats.
                                            unsafe { *c.add(row_major(r as u64, (col + q) as u64, n64) as usize) = v[q as usize] };
                                        }
                                    });
                                }
                            }
                        });
                    }
                });
            };
            // One split (a grid whose tiles fill the GPU, or one too large for the workspace):
            // the tile is whole, stored as the guarded warp tile stores it.
            if sk.splits == 1 {
                store(&four);
                return;
            }
            // SAFETY: the launch is the schedule's (the kernel's contract); shared word 0 is
            // written behind a barrier that follows every read of the k loop's stages.
            let Some((workspace, tile)) = (unsafe { publish::<TM, TN>(cfg, (sk, tx, z), &four) }) else {
                return;
            };
            let slot = |i: u32, h: u32| split_k_slot(cfg, t, i, h);
            // SAFETY: workspace offsets are below `blocks() * tile_floats()` (`fits`, z < splits,
            // tile < tiles, `split_k_slot` inside a tile); stores of C are checked against m and n.
            unsafe {
                // In split order, `split_k_group` splits at a time: their vectors are loaded
                // together, so a group costs one L2 round trip, not one a vector (a load and its
                // add a vector, rolled, kept one load in flight: 112 round trips for 8 splits of
                // 64 × 128).
                let vectors = TM * hs;
                let group = split_k_group(cfg) as usize;
                let mut sums = [[0.0f32; 4]; 16];
                let mut j = 0;
                while j < sk.splits {
                    let mut part = [[0.0f32; 4]; 16];
                    unroll_16!(q => {
                        let (g, v) = (q / vectors as u32, q % vectors as u32);
                        let split = j + g;
                        if (q as usize) < group * vectors && split < sk.splits {
                            // Two splits at a time, this block's own partial is read back
                            // (this thread's own stores, in its program order) rather than kept
                            // in registers, where ptxas spilled under the 128-register bound.
                            if split == z && group == 1 {
                                part[q as usize] = four(v / hs as u32, v % hs as u32);
                            } else {
                                // SAFETY: split `split`'s partial of this tile, inside the
                                // workspace (above), published before its ticket (acquired above)
                                // or stored by this thread.
                                let at = workspace.add((sk.partial(tile, split) + slot(v / hs as u32, v % hs as u32) as u64) as usize);
                                part[q as usize] = mem::load_v4_f32_cg(at as *const [f32; 4]);
                            }
                        }
                    });
                    // Vector by vector, the group's splits in order.
                    unroll_16!(q => {
                        let (g, v) = (q / vectors as u32, q % vectors as u32);
                        if (q as usize) < group * vectors && j + g < sk.splits {
                            let (a, b) = (sums[v as usize], part[q as usize]);
                            sums[v as usize] = [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]];
                        }
                    });
                    j += group as u32;
                }
                store(&|i, h| sums[(i * hs as u32 + h) as usize]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::SPLIT_K_SPREAD;
    use crate::matmul::WARPTILE_ASYNC;

    const TILES: [SplitKTile; 4] = [SPLIT_K, SPLIT_K_WIDE, SPLIT_K_TALL, SPLIT_K_SPREAD];

    #[test]
    fn split_k_ranges_cover_every_k_tile_once() {
        for tile in TILES {
            for (m, n) in [(1, 1), (256, 256), (512, 512), (32, 4096), (4096, 32), (4096, 128), (100, 9), (4096, 4096)]
            {
                for sms in [0, 1, 2, 66, 132, 144, 1000, u32::MAX] {
                    for k in [1, 15, 16, 17, 32, 100, 512, 4096] {
                        let sk = SplitK::of(tile, m, n, k, sms);
                        assert!(sk.splits >= 1 && sk.splits <= tile.max_splits, "{m}x{n}x{k} on {sms}: {sk:?}");
                        assert!(sk.fits() || sk.splits == 1, "{m}x{n}x{k} on {sms}: {sk:?}");
                        // Two k tiles a range at least, where k is cut at all.
                        assert!(sk.splits == 1 || tile.cfg.k_tiles(k, true) >= 2 * sk.splits, "{m}x{n}x{k}: {sk:?}");
                        // The kernel reads the same schedule back from its grid.
                        assert_eq!(SplitK::of_grid(tile.cfg, n, sk.grid()), sk);
                        let mut next = 0;
                        for z in 0..sk.splits {
                            let (start, end) = sk.range(z, k);
                            assert!(
                                start == next.min(end) && end >= start,
                                "{m}x{n}x{k} on {sms}: split {z} {start}..{end}"
                            );
                            next = end;
                        }
                        assert_eq!(next, tile.cfg.k_tiles(k, true), "{m}x{n}x{k} on {sms}");
                    }
                }
            }
        }
        // 512³ on 132 SMs: 32 tiles cut 8 ways, 4 k tiles each; 256³ capped at 8 splits.
        let sk = SplitK::of(SPLIT_K, 512, 512, 512, 132);
        assert_eq!((sk.tiles(), sk.splits, sk.per(512), sk.grid()), (32, 8, 4, (32, 8)));
        assert_eq!(SplitK::of(SPLIT_K, 256, 256, 256, 132).splits, 8);
        // 256³ on 128 × 32 tiles: 16 tiles, cut 8 ways (k's 16 tiles, two a range), not 16.
        assert_eq!(SplitK::of(SPLIT_K_TALL, 256, 256, 256, 132).splits, 8);
        // k of one k tile: no cut.
        assert_eq!(SplitK::of(SPLIT_K, 256, 256, 16, 132).splits, 1);
        // 4096² fills the GPU with tiles alone: no cut.
        assert_eq!(SplitK::of(SPLIT_K, 4096, 4096, 4096, 132).splits, 1);
        // m = 32 against 4096²: 32 tiles of 32 × 128, cut 16 ways (4 blocks a multiprocessor).
        let sk = SplitK::of(SPLIT_K_WIDE, 32, 4096, 4096, 132);
        assert_eq!((sk.tiles(), sk.splits, sk.per(4096), sk.grid()), (32, 16, 16, (512, 1)));
        let sk = SplitK::of(SPLIT_K_TALL, 4096, 32, 4096, 132);
        assert_eq!((sk.tiles(), sk.splits, sk.grid()), (32, 16, (16, 32)));
    }

    #[test]
    fn split_k_slots_cover_a_partial_tile_once() {
        for tile in TILES {
            let cfg = tile.cfg;
            let mut seen = vec![false; tile.tile_floats() as usize];
            for t in 0..cfg.threads() {
                for i in 0..cfg.tm {
                    for h in 0..cfg.tn / 4 {
                        for q in 0..4 {
                            let at = (split_k_slot(cfg, t, i, h) + q) as usize;
                            assert!(!seen[at], "{tile:?}: slot {at} twice");
                            seen[at] = true;
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s), "{tile:?}");
        }
    }

    #[test]
    fn split_k_tiles_are_as_documented() {
        assert_eq!(
            (SPLIT_K_WIDE.cfg.threads(), SPLIT_K_WIDE.cfg.a_vectors(), SPLIT_K_WIDE.cfg.b_vectors()),
            (128, 1, 4)
        );
        assert_eq!(
            (SPLIT_K_TALL.cfg.threads(), SPLIT_K_TALL.cfg.a_vectors(), SPLIT_K_TALL.cfg.b_vectors()),
            (128, 4, 1)
        );
        assert_eq!((SPLIT_K.max_blocks(), SPLIT_K_WIDE.max_blocks(), SPLIT_K_TALL.max_blocks()), (512, 1024, 1024));
        // The spread ring's 8 × 16 sums a thread: its last block loads a row of 4 vectors from
        // every split together, 8 splits at most; and its ring's shared memory, not two stages.
        assert_eq!((SPLIT_K_SPREAD.max_blocks(), SPLIT_K_SPREAD.is_consistent()), (128, true));
        assert!(!SplitKTile { max_splits: 16, ..SPLIT_K_SPREAD }.is_consistent());
        // 8 × 16 sums on the small tiles' loop (two stages of 128 × 256 pass 48 KiB): refused.
        assert!(!SplitKTile { cfg: WarpTile { tn: 8, ..WARPTILE_ASYNC }, ..SPLIT_K }.is_consistent());
    }
}
