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

use super::warptile::{WARPTILE_SMALL, WarpTile};

/// The tile of a split-K block: [`WARPTILE_SMALL`]'s, every access guarded.
pub const SPLIT_K: WarpTile = WARPTILE_SMALL;
/// Most blocks of one split-K launch: its workspace holds one partial tile each, and its counters
/// one a tile (16 MiB and 2 KiB of the Hopper module's global memory).
pub const SPLIT_K_MAX_BLOCKS: u32 = 512;
/// Floats of one partial tile in the workspace.
pub const SPLIT_K_TILE_FLOATS: u32 = SPLIT_K.bm * SPLIT_K.bn;
/// Blocks a multiprocessor runs at once (the launch bounds below): the grid aims at filling them.
pub const SPLIT_K_BLOCKS_PER_SM: u32 = 2;
/// Most ranges a tile's k is cut into: the tile's last block reads the others' partials back, 7
/// × 32 KiB at most.
pub const SPLIT_K_MAX_SPLITS: u32 = 8;

/// The split-K schedule of an `m × n` multiply: a grid of `tiles_x × tiles_y` tiles, each tile's
/// k tiles cut into `splits` ranges of equal length (`per`; the last ranges may be shorter or
/// empty), block `x` of a grid row taking tile column `x % tiles_x` and range `x / tiles_x`. k
/// plays no part in the grid (a launch's geometry is the same for every k); a range that starts
/// past k is empty, and its block adds zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitK {
    /// Tile columns (over n).
    pub tiles_x: u32,
    /// Tile rows (over m).
    pub tiles_y: u32,
    /// Ranges a tile's k tiles are cut into.
    pub splits: u32,
}

impl SplitK {
    /// The schedule on a GPU of `sms` multiprocessors: as many splits as fill
    /// [`SPLIT_K_BLOCKS_PER_SM`] blocks a multiprocessor, at most [`SPLIT_K_MAX_SPLITS`] and
    /// [`SPLIT_K_MAX_BLOCKS`] blocks in all; one (no cut) where the tiles alone fill the GPU.
    /// `m` and `n` at least 1.
    pub const fn of(m: u32, n: u32, sms: u32) -> SplitK {
        let (tiles_x, tiles_y) = SPLIT_K.grid(m, n);
        let tiles = tiles_x as u64 * tiles_y as u64;
        let tiles = if tiles == 0 { 1 } else { tiles };
        let mut splits = sms as u64 * SPLIT_K_BLOCKS_PER_SM as u64 / tiles;
        if splits > SPLIT_K_MAX_SPLITS as u64 {
            splits = SPLIT_K_MAX_SPLITS as u64;
        }
        if splits > SPLIT_K_MAX_BLOCKS as u64 / tiles {
            splits = SPLIT_K_MAX_BLOCKS as u64 / tiles;
        }
        SplitK { tiles_x, tiles_y, splits: if splits == 0 { 1 } else { splits as u32 } }
    }

    /// Tiles of C.
    pub const fn tiles(self) -> u64 {
        self.tiles_x as u64 * self.tiles_y as u64
    }

    /// Blocks of the launch.
    pub const fn blocks(self) -> u64 {
        self.tiles() * self.splits as u64
    }

    /// Whether the launch fits the workspace ([`SPLIT_K_MAX_BLOCKS`] partial tiles).
    pub const fn fits(self) -> bool {
        self.blocks() <= SPLIT_K_MAX_BLOCKS as u64
    }

    /// The grid: `tiles_x · splits` blocks a row, a row a tile row.
    pub const fn grid(self) -> (u32, u32) {
        (self.tiles_x * self.splits, self.tiles_y)
    }

    /// The schedule a block reads back from its launch's grid (the plan's [`SplitK::grid`]).
    #[inline(always)]
    pub const fn of_grid(n: u32, (grid_x, grid_y): (u32, u32)) -> SplitK {
        // At least 1 (n is), which also spares the kernel a division-by-zero branch.
        let tiles_x = if n == 0 { 1 } else { n.div_ceil(SPLIT_K.bn) };
        let splits = match grid_x.checked_div(tiles_x) {
            Some(splits) if splits > 0 => splits,
            _ => 1,
        };
        SplitK { tiles_x, tiles_y: grid_y, splits }
    }

    /// `(tile column, split)` of block `bx` of a grid row.
    #[inline(always)]
    pub const fn block(self, bx: u32) -> (u32, u32) {
        (bx % self.tiles_x, bx / self.tiles_x)
    }

    /// k tiles of a range: all of k's (a partial last one included) over the splits.
    #[inline(always)]
    pub const fn per(self, k: u32) -> u32 {
        SPLIT_K.k_tiles(k, true).div_ceil(self.splits)
    }

    /// The k tiles split `z` walks: `start..end`, empty past k.
    #[inline(always)]
    pub const fn range(self, z: u32, k: u32) -> (u32, u32) {
        let (tiles, per) = (SPLIT_K.k_tiles(k, true), self.per(k));
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
        let last = SPLIT_K.k_tiles(k, true) - 1;
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
        (tile as u64 * self.splits as u64 + z as u64) * SPLIT_K_TILE_FLOATS as u64
    }
}

/// Float offset inside a partial tile of thread `t`'s 4 sums `4h..4h + 4` of its accumulator row
/// `i`: the block's threads side by side for each `(i, h)`, so a warp writes and reads 512
/// contiguous bytes.
#[inline(always)]
pub const fn split_k_slot(t: u32, i: u32, h: u32) -> u32 {
    ((i * (SPLIT_K.tn / 4) + h) * SPLIT_K.threads() + t) * 4
}

const _: () = assert!(SPLIT_K.is_consistent() && SPLIT_K.tm == 8 && SPLIT_K.tn == 8);
const _: () = assert!(SPLIT_K_TILE_FLOATS == SPLIT_K.tm * SPLIT_K.tn * SPLIT_K.threads());

crate::hopper_kernel! {
    #[launch_bounds(128, 2)]
    /// Split-K over the guarded small-grid warp tile: block `x` of grid row `y` computes tile
    /// `(x % tiles_x, y)` over k range `x / tiles_x` ([`SplitK`]), writes its sums to the
    /// workspace and takes a ticket; the tile's last block adds the partials in split order and
    /// stores C's floats inside `m × n`. Per k tile the sectors of `matmul_warptile_edge`, read
    /// as 16-byte vectors where rows start on 16-byte boundaries (`mm_vectors`); per block 32 KiB
    /// written to L2, and the last block of a tile reads the other splits' back.
    pub unsafe fn matmul_split_k(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        use crate::matmul::warptile::{WT_LATE_SPLIT_AT, device::warptile};
        const NA: usize = SPLIT_K.a_vectors() as usize;
        const NB: usize = SPLIT_K.b_vectors() as usize;
        // SAFETY: forwarded plan guarantees (see `warptile` and `hopper_device::SplitTile`).
        unsafe { warptile::<hopper_device::SplitTile, 8, 8, NA, NB, true, WT_LATE_SPLIT_AT>(SPLIT_K, a, b, c, m, n, k) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod hopper_device {
    use super::*;
    use crate::matmul::index::row_major;
    use crate::matmul::warptile::device::TileJob;
    use crate::prelude::{atomic, mem, shared, thread};

    /// The partial tiles of the launch running now ([`SplitK::partial`]).
    static mut SPLIT_K_WORKSPACE: [f32; (SPLIT_K_MAX_BLOCKS * SPLIT_K_TILE_FLOATS) as usize] =
        [0.0; (SPLIT_K_MAX_BLOCKS * SPLIT_K_TILE_FLOATS) as usize];
    /// Tickets taken a tile; the last block of a tile sets its counter back to 0 for the next
    /// launch.
    static mut SPLIT_K_TICKETS: [u32; SPLIT_K_MAX_BLOCKS as usize] = [0; SPLIT_K_MAX_BLOCKS as usize];

    /// The schedule of the launch running, from its grid, and this block's `(tile column, split)`.
    #[inline(always)]
    fn this_block(n: u32) -> (SplitK, u32, u32) {
        let sk = SplitK::of_grid(n, (thread::grid_dim_x(), thread::grid_dim_y()));
        let (tx, z) = sk.block(thread::block_idx_x());
        (sk, tx, z)
    }

    /// A split-K block's job: its tile's range of k, its sums to the workspace, and on the tile's
    /// last block the partials added in split order into C.
    ///
    /// Safety (of the kernel, beside `warptile`'s): the launch is `SplitK::of(m, n, _).grid()`,
    /// and no other launch of this kernel of the same module runs at the same time (the
    /// workspace and tickets are the module's).
    pub(super) struct SplitTile;

    impl TileJob for SplitTile {
        const STORES: bool = false;
        const VECTORS: bool = true;

        #[inline(always)]
        fn origin(cfg: WarpTile, n: u32) -> (u32, u32) {
            let (_, tx, _) = this_block(n);
            cfg.block_origin(tx, thread::block_idx_y())
        }

        #[inline(always)]
        fn range(n: u32, k: u32, _: u32) -> (u32, u32) {
            let (sk, _, z) = this_block(n);
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
            let (sk, tx, z) = this_block(n);
            let t = thread::thread_idx_x();
            let n64 = n as u64;
            let four = |i: u32, h: u32| {
                let (i, h) = (i as usize, 4 * h as usize);
                [acc[i][h], acc[i][h + 1], acc[i][h + 2], acc[i][h + 3]]
            };
            // C's floats of this thread inside `m × n`, from its sums `sum(i, h)`.
            let store = |sum: &dyn Fn(u32, u32) -> [f32; 4]| {
                unroll_8!(i => {
                    let r = row0 + cfg.out_row(t, i);
                    unroll_2!(h => {
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
                    });
                });
            };
            // One split (a grid whose tiles fill the GPU, or one too large for the workspace):
            // the tile is whole, stored as the guarded warp tile stores it.
            if sk.splits == 1 {
                store(&four);
                return;
            }
            const { assert!(TM == 8 && TN == 8, "split-K's slots are 8 rows of 2 vectors") };
            // Never planned (several splits are capped to the workspace): store nothing rather
            // than write past it.
            if !sk.fits() || z >= sk.splits {
                return;
            }
            let tile = sk.tile(tx, thread::block_idx_y());
            let s = shared::dynamic::<u32>();
            // SAFETY: workspace offsets are below `blocks() * SPLIT_K_TILE_FLOATS` (`fits`, z <
            // splits, tile < tiles, `split_k_slot` inside a tile), tickets below `tiles() <=
            // SPLIT_K_MAX_BLOCKS`; shared word 0 is inside the launch's shared memory, written
            // after the barrier that follows every read of the k loop's stages; stores of C are
            // checked against m and n.
            unsafe {
                let workspace = (&raw mut SPLIT_K_WORKSPACE).cast::<f32>();
                let tickets = (&raw mut SPLIT_K_TICKETS).cast::<u32>();
                let mine = workspace.add(sk.partial(tile, z) as usize);
                unroll_8!(i => {
                    unroll_2!(h => {
                        mem::store_v4_f32(mine.add(split_k_slot(t, i, h) as usize) as *mut [f32; 4], four(i, h));
                    });
                });
                // Release: this thread's partial is visible GPU-wide before the block's ticket.
                atomic::fence_gpu();
                thread::sync_threads();
                if t == 0 {
                    let ticket = atomic::add_u32(tickets.add(tile as usize), 1);
                    // Acquire: every partial whose ticket came before is visible to this thread,
                    // and through the barrier below to its block.
                    atomic::fence_gpu();
                    let last = ticket + 1 == sk.splits;
                    if last {
                        *tickets.add(tile as usize) = 0;
                    }
                    *s = last as u32;
                }
                thread::sync_threads();
                // Uniform: every thread reads the flag behind the same barrier.
                if *s == 0 {
                    return;
                }
                // Split by split, in order: the 16 vectors of one partial are loaded together, so
                // a split costs one L2 round trip, not 16 (a load and its add a vector, rolled,
                // kept one load in flight: 112 round trips for 8 splits).
                let mut sums = [[0.0f32; 4]; 16];
                let mut j = 0;
                while j < sk.splits {
                    let mut part = [[0.0f32; 4]; 16];
                    if j == z {
                        unroll_16!(q => {
                            part[q as usize] = four(q / 2, q % 2);
                        });
                    } else {
                        let theirs = workspace.add(sk.partial(tile, j) as usize);
                        unroll_16!(q => {
                            // SAFETY: split j's partial of this tile, inside the workspace
                            // (above), published before its ticket (acquired above).
                            let at = theirs.add(split_k_slot(t, q / 2, q % 2) as usize);
                            part[q as usize] = mem::load_v4_f32_cg(at as *const [f32; 4]);
                        });
                    }
                    unroll_16!(q => {
                        let (a, b) = (sums[q as usize], part[q as usize]);
                        sums[q as usize] = [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]];
                    });
                    j += 1;
                }
                store(&|i, h| sums[(2 * i + h) as usize]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_k_ranges_cover_every_k_tile_once() {
        for (m, n) in [(1, 1), (256, 256), (512, 512), (32, 4096), (4096, 128), (100, 9), (4096, 4096)] {
            for sms in [0, 1, 2, 66, 132, 144, 1000, u32::MAX] {
                let sk = SplitK::of(m, n, sms);
                assert!(sk.splits >= 1 && sk.splits <= SPLIT_K_MAX_SPLITS, "{m}x{n} on {sms}: {sk:?}");
                assert!(sk.fits() || sk.splits == 1, "{m}x{n} on {sms}: {sk:?}");
                // The kernel reads the same schedule back from its grid.
                assert_eq!(SplitK::of_grid(n, sk.grid()), sk);
                for k in [1, 15, 16, 17, 100, 512, 4096] {
                    let mut next = 0;
                    for z in 0..sk.splits {
                        let (start, end) = sk.range(z, k);
                        assert!(
                            start == next.min(end) && end >= start,
                            "{m}x{n}x{k} on {sms}: split {z} {start}..{end}"
                        );
                        next = end;
                    }
                    assert_eq!(next, SPLIT_K.k_tiles(k, true), "{m}x{n}x{k} on {sms}");
                }
            }
        }
        // 512³ on 132 SMs: 32 tiles cut 8 ways, 4 k tiles each; 256³ capped at 8 splits.
        let sk = SplitK::of(512, 512, 132);
        assert_eq!((sk.tiles(), sk.splits, sk.per(512), sk.grid()), (32, 8, 4, (32, 8)));
        assert_eq!(SplitK::of(256, 256, 132).splits, 8);
        // 4096² fills the GPU with tiles alone: no cut.
        assert_eq!(SplitK::of(4096, 4096, 132).splits, 1);
    }

    #[test]
    fn split_k_slots_cover_a_partial_tile_once() {
        let mut seen = vec![false; SPLIT_K_TILE_FLOATS as usize];
        for t in 0..SPLIT_K.threads() {
            for i in 0..8 {
                for h in 0..2 {
                    for q in 0..4 {
                        let at = (split_k_slot(t, i, h) + q) as usize;
                        assert!(!seen[at], "slot {at} twice");
                        seen[at] = true;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
