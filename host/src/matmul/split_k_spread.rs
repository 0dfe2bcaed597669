//! Stage 17, split_k_spread (Hopper, whole tiles): split_k's cut on `warptile_spread`'s 128 × 256
//! tiles and ring, one block a multiprocessor, k cut up to 8 ways; the partials added by reducer
//! blocks at the end of the grid, 8 a tile.
//!
//! The host side: the launch, and when [`matmul`](super::matmul) takes it
//! ([`split_k_spread_pays`]).
//!
//! Below the launch: the model's replay of its kernel (`replay`) and its footprint for the index
//! proofs (`footprint`).

use super::lesson::{Bench, Lesson, WARPTILE_ASYNC_SHAPES};
use super::split_k::split_k_pays;
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{SPLIT_K_SPREAD, SplitK, WARPTILE_ASYNC, WTS_STAGES, matmul_split_k_spread};

/// Shapes checked for stage 17 besides the spread ring's (whole 128 × 256 × 16 tiles, on 132
/// SMs): one tile of 4 k tiles cut 2 ways; 4 tiles of 63 k tiles cut 8 ways (a short last
/// range); 9 tiles of 17 k tiles cut 8 ways of 3 (the last range empty); m = 128 against a long
/// k; and 1024³ twice more, each launch finding the tickets the one before set back to 0.
const SPREAD_SHAPES: [(usize, usize, usize); 6] =
    [(128, 256, 64), (256, 512, 1008), (384, 768, 272), (128, 1024, 4096), (1024, 1024, 1024), (1024, 1024, 1024)];

/// Stage 17's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::SplitKSpread,
    kernel: matmul_split_k_spread,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, k, sms| Launch {
        grid: SplitK::of(SPLIT_K_SPREAD, m, n, k, sms).spread_grid(),
        shared_bytes: WARPTILE_ASYNC.ring_bytes(WTS_STAGES),
        ..super::split_k::launch(SPLIT_K_SPREAD, m, n, k, sms)
    },
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "split_k on warptile_spread's 128 x 256 tiles and 4-stage ring, one block a multiprocessor, k cut up to 8 ways; then 8 reducer blocks a tile each add a row of every split's vectors (sm_90)",
        bench: Bench::Shapes {
            sweep: &[(512, 512, 512), (768, 768, 768), (1024, 1024, 1024), (128, 4096, 4096)],
            check: &[0],
        },
        checks: &[&WARPTILE_ASYNC_SHAPES, &SPREAD_SHAPES],
    },
};

/// Fewest k tiles a range of stage 17 takes for [`matmul`](super::matmul) to choose it: its ring
/// copies three tiles ahead, and a block's 128 KiB partial and its reducers' reads of it cost
/// about what a few tiles' FMAs do. On an H200, 768³ (7 k tiles a range) took 30.3 µs against
/// stage 14's 36.4, m = 128 against 4096² (32) 98.2 against 121.5, and 512³ (4) 22.4 against
/// the 128 × 32 tile's 16.8 (BENCHMARKS.md).
pub const SPREAD_SPLIT_MIN_TILES: u32 = 6;

/// Whether [`matmul`](super::matmul) takes stage 17 for an `m × n × k` multiply of whole
/// 128 × 256 × 16 tiles on `sms` multiprocessors: where split-K pays at all ([`split_k_pays`]:
/// the small tiles leave the GPU short), the big tiles cut at least two ways inside the
/// workspace, each range at least [`SPREAD_SPLIT_MIN_TILES`] k tiles. At 1024³, where the
/// 64 × 128 tiles fill the GPU uncut, it took 56.0 µs against `warptile_small`'s 55.3.
pub const fn split_k_spread_pays(m: u32, n: u32, k: u32, sms: u32) -> bool {
    let sk = SplitK::of(SPLIT_K_SPREAD, m, n, k, sms);
    split_k_pays(m, n, k, sms).is_some() && sk.splits >= 2 && sk.fits() && sk.per(k) >= SPREAD_SPLIT_MIN_TILES
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launch (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module): `matmul_split_k_spread`'s split blocks run
    //! `matmul_warptile_spread`'s `spread_k_loop` over their range, then 32 `STG.E.128` of their
    //! sums into the workspace and one `ATOMG.ADD` of thread 0; its reducer blocks thread 0's
    //! `ld.acquire` spin, 4 × splits `LDG.E.128` (`ld.global.cg`) a thread, 4 `STG.E.128` of C and
    //! one `ATOMG.ADD`.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::split_k::replay::{TICKETS_ADDRESS, WORKSPACE_ADDRESS};
    use crate::matmul::warptile::replay::store_c_vectors;
    use crate::matmul::warptile_spread::replay::k_loop;
    use crate::model::matmul::{Launched, Replay};
    use crate::model::{Model, block_warps};
    use coalesce_kernels::matmul::{SPLIT_K_SPREAD, SplitK, row_major, split_k_slot};

    /// Counts of a stage 17 launch: its split blocks' spread ring over their ranges, each
    /// thread's partial into its slots and thread 0's ticket; then its reducer blocks, each
    /// thread 0's wait (one `ld.acquire`: the spins past it depend on timing), a row of every
    /// split's vectors (`ld.global.cg`), that row of C, and thread 0's count.
    fn spread_counts(model: &mut Model, l: &Launched, launch: &Launch) -> Result<()> {
        let (workspace, tickets) = (model.buffer(WORKSPACE_ADDRESS), model.buffer(TICKETS_ADDRESS));
        let cfg = SPLIT_K_SPREAD.cfg;
        let sk = SplitK::of_grid(cfg, l.n, (launch.grid.0, l.m.div_ceil(cfg.bm)));
        let slot = |tile: u32, split: u32, t: u32, i: u32, h: u32| {
            4 * (sk.partial(tile, split) + u64::from(split_k_slot(cfg, t, i, h)))
        };
        let (gx, gy) = launch.grid;
        for by in 0..gy {
            for bx in 0..gx {
                if let Some((tile, i)) = sk.reducer(bx, by, gx) {
                    let (row0, col0) = cfg.block_origin(tile % sk.tiles_x, tile / sk.tiles_x);
                    for w in block_warps(launch, (bx, by)) {
                        let t = |lane| w.thread(lane).0;
                        let first = w.thread(0).0 == 0;
                        if first {
                            model.load(tickets, 4, 1, |_| 4 * u64::from(tile))?;
                        }
                        // Past its wait: every split block replayed before it is done.
                        model.wait_for_earlier();
                        for h in 0..cfg.tn / 4 {
                            for split in 0..sk.splits {
                                model.load(workspace, 16, w.lanes, |lane| slot(tile, split, t(lane), i, h))?;
                            }
                        }
                        let r = |lane| u64::from(row0 + cfg.out_row(t(lane), i));
                        for h in 0..cfg.tn / 4 {
                            let col = |lane| u64::from(col0 + cfg.out_col(t(lane), h));
                            model.store(l.c, 16, w.lanes, |lane| 4 * row_major(r(lane), col(lane), l.n.into()))?;
                        }
                        if first {
                            model.atomic(tickets, 4 * u64::from(tile))?;
                        }
                    }
                    continue;
                }
                if by >= sk.tiles_y {
                    continue;
                }
                let (tx, z) = sk.block(bx);
                let tile = sk.tile(tx, by);
                let origin = cfg.block_origin(tx, by);
                for w in block_warps(launch, (bx, by)) {
                    let t = |lane| w.thread(lane).0;
                    k_loop(model, l, &w, origin, sk.walked(z, l.k))?;
                    if sk.splits == 1 {
                        store_c_vectors(model, l, &w, cfg, origin, false)?;
                        continue;
                    }
                    for i in 0..cfg.tm {
                        for h in 0..cfg.tn / 4 {
                            model.store(workspace, 16, w.lanes, |lane| slot(tile, z, t(lane), i, h))?;
                        }
                    }
                    if w.thread(0).0 == 0 {
                        model.atomic(tickets, 4 * u64::from(tile))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Stage 17's replay: its whole launch, split blocks then reducers.
    pub(crate) const REPLAY: Replay = Replay { blocks: None, row: Some(spread_counts) };
}

/// What stage 17's threads touch: the spread ring's copies over a split block's k range and its
/// partial's slots, or a reducer's row of every split's slots and of C.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Store, Touch, Walked, ensure, ensure_eq, salt, thread_cells, tile_cells,
    };
    use crate::matmul::warptile::footprint::thread_k_tile;
    use coalesce_kernels::matmul::{
        SPLIT_K_SPREAD, SPLIT_K_TICKETS, SPLIT_K_WORKSPACE_FLOATS, SPREAD_REDUCERS, SplitK, WTS_STAGES, row_major,
        split_k_slot,
    };

    pub(crate) const FOOTPRINT: Footprint =
        Footprint { launch: |p, _| spread_launch(p), block: spread_block, stores: spread_stores };

    /// Stage 17's schedule, as its kernel reads it back from the grid's width and m.
    fn spread_schedule(p: &Probe) -> SplitK {
        let cfg = SPLIT_K_SPREAD.cfg;
        SplitK::of_grid(cfg, p.dims.1, (p.grid.0, p.dims.0.div_ceil(cfg.bm)))
    }

    /// Whole tiles from aligned buffers (no guards), the ring's shared memory, and a grid of the
    /// schedule's split blocks and then [`SPREAD_REDUCERS`] reducers for every tile.
    fn spread_launch(p: &Probe) -> Walked {
        let cfg = SPLIT_K_SPREAD.cfg;
        let (m, n, k) = p.dims;
        let sk = SplitK::of(SPLIT_K_SPREAD, m, n, k, p.sms);
        ensure_eq!(p.grid, sk.spread_grid());
        ensure_eq!(spread_schedule(p), sk);
        ensure!(sk.fits() || sk.splits == 1);
        ensure_eq!(p.shared_bytes, cfg.ring_bytes(WTS_STAGES));
        ensure!(m % cfg.bm == 0 && n % cfg.bn == 0 && k % cfg.bk == 0);
        for address in [p.addresses.0, p.addresses.1, p.addresses.2] {
            ensure_eq!(address % 16, 0);
        }
        if sk.splits > 1 {
            let (gx, gy) = p.grid;
            let last = sk.tiles() * u64::from(SPREAD_REDUCERS) - 1;
            ensure_eq!(sk.reducer((last % u64::from(gx)) as u32, gy - 1, gx).map(|r| r.0 as u64), Some(sk.tiles() - 1));
        }
        Ok(())
    }

    /// With one split, each block its tile; else each reducer a row of its threads' sums.
    fn spread_stores(p: &Probe, (bx, by): (u32, u32), store: Store<'_>) {
        let cfg = SPLIT_K_SPREAD.cfg;
        let sk = spread_schedule(p);
        if sk.splits == 1 {
            for cell in tile_cells(cfg, cfg.block_origin(bx, by)) {
                store(cell.0, cell.1);
            }
        } else if let Some((tile, i)) = sk.reducer(bx, by, p.grid.0) {
            let (row0, col0) = cfg.block_origin(tile % sk.tiles_x, tile / sk.tiles_x);
            for t in 0..cfg.threads() {
                for h in 0..cfg.tn / 4 {
                    for j in 0..4 {
                        store(row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h) + j);
                    }
                }
            }
        }
    }

    /// A split block: threads at the warps' edges and one more at its range's first and last k
    /// tiles (the ring's copies), its slots of the workspace, and C where it is the only split.
    /// A reducer: its row of every split's slots and of C.
    fn spread_block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let cfg = SPLIT_K_SPREAD.cfg;
        let (m, n, k) = p.dims;
        let n64 = u64::from(n);
        let sk = spread_schedule(p);
        let r = salt(probe, (bx, by));
        let threads = cfg.threads();
        let probes = [0, 1, 31, 32, threads - 1, (r % u64::from(threads)) as u32];
        let inside = |tile: u32, split: u32| {
            sk.partial(tile, split) + u64::from(SPLIT_K_SPREAD.tile_floats()) <= u64::from(SPLIT_K_WORKSPACE_FLOATS)
                && tile < SPLIT_K_TICKETS
        };
        if by >= sk.tiles_y {
            let Some((tile, i)) = sk.reducer(bx, by, p.grid.0) else { return Ok(()) };
            ensure!(u64::from(tile) < sk.tiles() && i < cfg.tm && sk.splits > 1);
            ensure!((0..sk.splits).all(|split| inside(tile, split)));
            let (row0, col0) = cfg.block_origin(tile % sk.tiles_x, tile / sk.tiles_x);
            for t in probes {
                for h in 0..cfg.tn / 4 {
                    ensure!(split_k_slot(cfg, t, i, h) + 4 <= SPLIT_K_SPREAD.tile_floats());
                    let (row, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
                    ensure!(row < m && col + 4 <= n);
                    touch(Matrix::C, row_major(row.into(), col.into(), n64), 4)?;
                }
            }
            return Ok(());
        }
        let (tx, z) = sk.block(bx);
        ensure!(tx < sk.tiles_x && z < sk.splits);
        let (first, end) = sk.walked(z, k);
        let (row0, col0) = cfg.block_origin(tx, by);
        ensure!(row0 < m && col0 < n);
        if sk.splits > 1 {
            ensure!(inside(sk.tile(tx, by), z));
        }
        for t in probes {
            for kt in [first, end.saturating_sub(1).max(first)] {
                thread_k_tile(cfg, (false, Some(WTS_STAGES)), p.dims, t, (row0, col0), kt, touch)?;
            }
            if sk.splits == 1 {
                for (row, col) in thread_cells(cfg, t, (row0, col0)) {
                    touch(Matrix::C, row_major(row.into(), col.into(), n64), 1)?;
                }
            }
        }
        Ok(())
    }
}
