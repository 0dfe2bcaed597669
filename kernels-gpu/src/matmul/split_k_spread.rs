//! Stage 17, split_k_spread (Hopper, whole tiles): split_k's cut on `warptile_spread`'s 128 × 256
//! tiles and 4-stage ring, one block a multiprocessor, k cut up to 8 ways. The same transactions
//! a k tile as `matmul_warptile_spread`; per block a 128 KiB partial written to L2 and read back
//! once, by the reducers.
//!
//! Its partials are 128 KiB, and one block reading a tile's 8 back is a tail of its own (15 µs
//! of 98 at m = 128 against 4096², ncu), so the sum is not the last block's: the grid ends in
//! rows of reducer blocks, 8 a tile, each waiting for its tile's tickets and adding one row of
//! the threads' sums, so a tile's partials are read by 8 multiprocessors at once.

use super::split_k::{SplitK, SplitKTile};
use super::warptile_async::WARPTILE_ASYNC;

/// Stage 17's tile, for whole tiles of few blocks: the spread ring's 128 × 256 blocks of 8 warps
/// ([`WARPTILE_ASYNC`]), 8 × 16 sums a thread, one block a multiprocessor, k cut up to 8 ways:
/// the k loop that runs at 52 TFLOP/s on the H100 at 4096³, on grids of 8 to 32 tiles.
pub const SPLIT_K_SPREAD: SplitKTile = SplitKTile { cfg: WARPTILE_ASYNC, blocks_per_sm: 1, max_splits: 8 };

const _: () = assert!(SPLIT_K_SPREAD.is_consistent());

/// Stage 17's reducer blocks a tile: one a row of its threads' 8 × 16 sums, so that the sum of a
/// tile's partials is read by 8 multiprocessors, not by its last split block alone.
pub const SPREAD_REDUCERS: u32 = SPLIT_K_SPREAD.cfg.tm;

impl SplitK {
    /// Stage 17's grid: [`SplitK::grid`]'s rows of split blocks, then rows of
    /// [`SPREAD_REDUCERS`] reducer blocks a tile (none with one split: its blocks store C).
    pub const fn spread_grid(self) -> (u32, u32) {
        let (gx, gy) = self.grid();
        if self.splits == 1 {
            return (gx, gy);
        }
        (gx, gy + (self.tiles() * SPREAD_REDUCERS as u64).div_ceil(gx as u64) as u32)
    }

    /// Reducer block `(bx, by)` of a spread grid `grid_x` blocks wide: `(tile, row of the threads'
    /// sums)` it adds, for rows past the split blocks' and inside the reducers' count.
    #[inline(always)]
    pub const fn reducer(self, bx: u32, by: u32, grid_x: u32) -> Option<(u32, u32)> {
        if by < self.tiles_y {
            return None;
        }
        let rho = (by - self.tiles_y) as u64 * grid_x as u64 + bx as u64;
        if rho >= self.tiles() * SPREAD_REDUCERS as u64 {
            return None;
        }
        Some(((rho / SPREAD_REDUCERS as u64) as u32, (rho % SPREAD_REDUCERS as u64) as u32))
    }
}

crate::hopper_kernel! {
    #[launch_bounds(256, 1)]
    /// Split-K over the spread ring ([`SPLIT_K_SPREAD`]): block `x` of grid row `y < tiles_y`
    /// walks k range `x / tiles_x` of tile `(x % tiles_x, y)` through `matmul_warptile_spread`'s
    /// ring, writes its 128 KiB partial to the workspace and takes a ticket; in the rows after,
    /// [`SPREAD_REDUCERS`] blocks a tile each wait for its tickets, add a row of every split's
    /// vectors in split order and store it in C. Assumes whole tiles and 16-byte aligned buffers
    /// (no bounds checks).
    pub unsafe fn matmul_split_k_spread(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded plan guarantees (see `spread_device::spread_split_k`).
        unsafe { spread_device::spread_split_k(a, b, c, m, n, k) }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90", target_feature = "ptx83"))]
mod spread_device {
    use super::*;
    use crate::matmul::index::row_major;
    use crate::matmul::split_k::hopper_device::{globals, store_partial};
    use crate::matmul::split_k_slot;
    use crate::matmul::warptile_async::hopper_device::{KLoop, store_tile};
    use crate::matmul::warptile_async::{WTA_NA, WTA_NB};
    use crate::matmul::warptile_spread::hopper_device::SpreadRing;
    use crate::prelude::{atomic, mem, thread};

    /// Stage 17's block: a split block walks its k range of its tile through the spread ring and
    /// publishes its partial; a reducer block ([`SplitK::reducer`]) waits for its tile's splits,
    /// adds its row of every split's vectors in split order and stores them in C.
    ///
    /// # Safety
    /// `SPLIT_K_SPREAD.cfg.supports(m, n, k)` (whole tiles), buffers of m·k, k·n and m·n floats
    /// on 16-byte boundaries; the launch is `SplitK::of(SPLIT_K_SPREAD, m, n, k, _).spread_grid()`
    /// of `cfg.threads()` threads with `cfg.ring_bytes(WTS_STAGES)` of shared memory, no other
    /// split-K launch of the module runs at the same time, and blocks start in the order of their
    /// linear id (a reducer waits only for split blocks, whose ids are all lower).
    #[inline(always)]
    pub(super) unsafe fn spread_split_k(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let cfg = SPLIT_K_SPREAD.cfg;
        let sk = SplitK::of_grid(cfg, n, (thread::grid_dim_x(), m.div_ceil(cfg.bm)));
        let (bx, by) = (thread::block_idx_x(), thread::block_idx_y());
        let t = thread::thread_idx_x();
        let (workspace, tickets) = globals();
        if by >= sk.tiles_y {
            let Some((tile, i)) = sk.reducer(bx, by, thread::grid_dim_x()) else { return };
            // Never planned (split blocks capped to the workspace, or none to wait for).
            if sk.splits == 1 || !sk.fits() {
                return;
            }
            // SAFETY: the ticket of a tile below `tiles() <= SPLIT_K_TICKETS`; the workspace
            // reads lie in this tile's partials (`fits`); C's vectors in its whole tile, 16-byte
            // aligned (the caller's contract).
            unsafe {
                let ticket = tickets.add(tile as usize);
                if t == 0 {
                    // Acquire: once every split block's ticket is in, their partials are visible
                    // to this thread, and through the barrier below to the block.
                    while atomic::load_acquire_u32(ticket) < sk.splits {}
                }
                thread::sync_threads();
                let (row0, col0) = cfg.block_origin(tile % sk.tiles_x, tile / sk.tiles_x);
                // Row `i` of every thread's sums: its 4 vectors from every split, loaded together
                // (32 at most), added in split order.
                let mut part = [[[0.0f32; 4]; 8]; 4];
                unroll_4!(h => {
                    unroll_8!(split => {
                        if split < sk.splits {
                            let at = workspace.add((sk.partial(tile, split) + split_k_slot(cfg, t, i, h) as u64) as usize);
                            part[h as usize][split as usize] = mem::load_v4_f32_cg(at as *const [f32; 4]);
                        }
                    });
                });
                unroll_4!(h => {
                    let p = &part[h as usize];
                    let mut sum = p[0];
                    unroll_8!(split => {
                        if split > 0 && split < sk.splits {
                            let v = p[split as usize];
                            sum = [sum[0] + v[0], sum[1] + v[1], sum[2] + v[2], sum[3] + v[3]];
                        }
                    });
                    let (r, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
                    mem::store_v4_f32(c.add(row_major(r as u64, col as u64, n as u64) as usize) as *mut [f32; 4], sum);
                });
                // The tile's last reducer to pass sets its counter back to 0 for the next
                // launch: every reducer counts itself in after its wait, so none is still waiting.
                if t == 0 && atomic::add_u32(ticket, 1) == sk.splits + SPREAD_REDUCERS - 1 {
                    *ticket = 0;
                }
            }
            return;
        }
        let (tx, z) = sk.block(bx);
        let origin = cfg.block_origin(tx, by);
        let mut acc = [[0.0f32; 16]; 8];
        // SAFETY: the tile and its k range lie inside A and B (whole tiles, the schedule's
        // range; an empty one starts on k's last tile and copies nothing).
        unsafe { SpreadRing::run::<8, 16, WTA_NA, WTA_NB>(cfg, a, b, m, n, k, origin, sk.walked(z, k), &mut acc) };
        if sk.splits == 1 {
            // SAFETY: the block's whole tile of C (whole tiles, aligned: the caller's contract).
            unsafe { store_tile::<8, 16>(cfg, c, n, origin, &acc, false) };
            return;
        }
        if !sk.fits() || z >= sk.splits {
            return;
        }
        let four = |i: u32, h: u32| {
            let (i, h) = (i as usize, 4 * h as usize);
            [acc[i][h], acc[i][h + 1], acc[i][h + 2], acc[i][h + 3]]
        };
        // SAFETY: this split's partial of its tile lies in the workspace (`fits`, z < splits,
        // the tile one of the schedule's); every thread of the block calls it.
        unsafe { store_partial::<8, 16>(cfg, sk, (sk.tile(tx, by), z), &four) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_reducers_follow_the_split_blocks_and_cover_every_row_once() {
        for (m, n, k) in [(128, 256, 64), (128, 4096, 4096), (768, 768, 768), (1024, 1024, 1024), (384, 768, 272)] {
            for sms in [1, 8, 132, 144] {
                let sk = SplitK::of(SPLIT_K_SPREAD, m, n, k, sms);
                let (gx, gy) = sk.spread_grid();
                assert_eq!(SplitK::of_grid(SPLIT_K_SPREAD.cfg, n, (gx, m / 128)), sk);
                let mut seen = vec![0u32; (sk.tiles() * SPREAD_REDUCERS as u64) as usize];
                for by in 0..gy {
                    for bx in 0..gx {
                        match sk.reducer(bx, by, gx) {
                            // Every reducer's linear id is past every split block's: it waits
                            // only for blocks started before it.
                            Some((tile, i)) => {
                                assert!(by >= sk.tiles_y && sk.splits > 1, "{m}x{n}x{k} on {sms}");
                                seen[(tile * SPREAD_REDUCERS + i) as usize] += 1;
                            }
                            None => assert!(by < sk.tiles_y || by == gy - 1, "{m}x{n}x{k}: an idle row"),
                        }
                    }
                }
                assert!(seen.iter().all(|&s| s == u32::from(sk.splits > 1)), "{m}x{n}x{k} on {sms}");
            }
        }
        // m = 128 against 4096²: 16 tiles cut 8 ways (one row of 128 split blocks), then one row
        // of 128 reducers.
        let sk = SplitK::of(SPLIT_K_SPREAD, 128, 4096, 4096, 132);
        assert_eq!((sk.tiles(), sk.splits, sk.per(4096), sk.spread_grid()), (16, 8, 32, (128, 2)));
    }
}
