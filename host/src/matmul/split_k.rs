//! Stage 14, split_k (Hopper, any shape): `warptile_small`'s guarded tiles with each tile's k cut
//! into ranges, a block a range, so that a grid of few tiles fills the GPU; partial tiles meet in
//! an L2 workspace, added in split order by a tile's last block. Stages 15 and 16,
//! split_k_wide and split_k_tall: the same on 32 × 128 and 128 × 32 tiles, for m or n ≤ 32.
//! Stage 17, split_k_spread: the cut on the spread ring's whole 128 × 256 tiles, the partials
//! added by reducer blocks at the end of the grid, 8 a tile.
//!
//! The host side: the launches, and when [`matmul`](super::matmul) takes which
//! ([`split_k_pays`]).
//!
//! Below the launches: the model's replay of their kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, EDGE_EXTRA_SHAPES, Lesson, WARPTILE_ASYNC_SHAPES};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{
    SPLIT_K, SPLIT_K_SPREAD, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, SplitKTile, WARPTILE_ASYNC, WTS_STAGES,
    matmul_split_k, matmul_split_k_spread, matmul_split_k_tall, matmul_split_k_wide,
};

/// Shapes checked for split-K besides the general and guarded ones (on 132 SMs): 8 splits of 2
/// k tiles; one k tile cut 8 ways (7 empty ranges adding zeros); a partial k tile in a short last
/// range; a skinny product of long k; partial tiles in m, n and k, 2 splits; and 512³ twice
/// more, each launch finding the tickets the one before set back to 0.
const SPLIT_K_SHAPES: [(usize, usize, usize); 7] = [
    (256, 256, 256),
    (64, 128, 16),
    (5, 130, 33),
    (32, 4096, 1024),
    (129, 4097, 515),
    (512, 512, 512),
    (512, 512, 512),
];

/// Stage 14's descriptor: guarded, any shape.
pub(super) const STAGE: Stage = Stage {
    method: Method::SplitK,
    kernel: matmul_split_k,
    waves: None,
    warp_tile: Some(SPLIT_K.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K.cfg.bm,
    launch: |_, m, n, k, sms| launch(SPLIT_K, m, n, k, sms),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "warptile_small's guarded tiles, each tile's k cut into up to 8 ranges a block each; the last block adds the partials in order (sm_90)",
        // The squares whose 64 × 128 grids leave most of an H100 idle, 1024³ (cut two ways), and
        // m or n of 32 and 128 against 4096²: the matmul shapes sweep's, where split-K pays.
        bench: Bench::Shapes {
            sweep: &[
                (256, 256, 256),
                (512, 512, 512),
                (768, 768, 768),
                (1024, 1024, 1024),
                (32, 4096, 4096),
                (128, 4096, 4096),
                (4096, 32, 4096),
                (4096, 128, 4096),
            ],
            check: &[1],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// Stage 15's descriptor: stage 14 on 32 × 128 tiles, guarded, any shape.
pub(super) const WIDE_STAGE: Stage = Stage {
    method: Method::SplitKWide,
    kernel: matmul_split_k_wide,
    waves: None,
    warp_tile: Some(SPLIT_K_WIDE.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K_WIDE.cfg.bm,
    launch: |_, m, n, k, sms| launch(SPLIT_K_WIDE, m, n, k, sms),
    #[cfg(feature = "model")]
    replay: replay::WIDE_REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::WIDE_FOOTPRINT,
    lesson: Lesson {
        summary: "split_k on 32 x 128 tiles, 4 x 8 sums a thread, 4 blocks a multiprocessor, k cut up to 16 ways: no rows past m = 32 multiplied (sm_90)",
        bench: Bench::Shapes {
            sweep: &[(256, 256, 256), (512, 512, 512), (32, 4096, 4096), (128, 4096, 4096)],
            check: &[0],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// Stage 16's descriptor: stage 15 turned over, 128 × 32 tiles, guarded, any shape.
pub(super) const TALL_STAGE: Stage = Stage {
    method: Method::SplitKTall,
    kernel: matmul_split_k_tall,
    waves: None,
    warp_tile: Some(SPLIT_K_TALL.cfg),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K_TALL.cfg.bm,
    launch: |_, m, n, k, sms| launch(SPLIT_K_TALL, m, n, k, sms),
    #[cfg(feature = "model")]
    replay: replay::TALL_REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::TALL_FOOTPRINT,
    lesson: Lesson {
        summary: "split_k on 128 x 32 tiles, 8 x 4 sums a thread, 4 blocks a multiprocessor, k cut up to 16 ways: no columns past n = 32 multiplied (sm_90)",
        bench: Bench::Shapes {
            // 384³ and 768³ last, so that the earlier runs keep their ids: the small squares
            // `matmul` takes this tile for, and the first it does not.
            sweep: &[
                (256, 256, 256),
                (512, 512, 512),
                (4096, 32, 4096),
                (4096, 128, 4096),
                (384, 384, 384),
                (768, 768, 768),
            ],
            check: &[2],
        },
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPLIT_K_SHAPES],
    },
};

/// Shapes checked for stage 17 besides the spread ring's (whole 128 × 256 × 16 tiles, on 132
/// SMs): one tile of 4 k tiles cut 2 ways; 4 tiles of 63 k tiles cut 8 ways (a short last
/// range); 9 tiles of 17 k tiles cut 8 ways of 3 (the last range empty); m = 128 against a long
/// k; and 1024³ twice more, each launch finding the tickets the one before set back to 0.
const SPREAD_SHAPES: [(usize, usize, usize); 6] =
    [(128, 256, 64), (256, 512, 1008), (384, 768, 272), (128, 1024, 4096), (1024, 1024, 1024), (1024, 1024, 1024)];

/// Stage 17's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const SPREAD_STAGE: Stage = Stage {
    method: Method::SplitKSpread,
    kernel: matmul_split_k_spread,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, k, sms| Launch {
        grid: SplitK::of(SPLIT_K_SPREAD, m, n, k, sms).spread_grid(),
        shared_bytes: WARPTILE_ASYNC.ring_bytes(WTS_STAGES),
        ..launch(SPLIT_K_SPREAD, m, n, k, sms)
    },
    #[cfg(feature = "model")]
    replay: replay::SPREAD_REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::SPREAD_FOOTPRINT,
    lesson: Lesson {
        summary: "split_k on warptile_spread's 128 x 256 tiles and 4-stage ring, one block a multiprocessor, k cut up to 8 ways; then 8 reducer blocks a tile each add a row of every split's vectors (sm_90)",
        bench: Bench::Shapes {
            sweep: &[(512, 512, 512), (768, 768, 768), (1024, 1024, 1024), (128, 4096, 4096)],
            check: &[0],
        },
        checks: &[&WARPTILE_ASYNC_SHAPES, &SPREAD_SHAPES],
    },
};

/// [`SplitK::grid`] of the shape on `sms` multiprocessors, blocks of `tile`.
const fn launch(tile: SplitKTile, m: u32, n: u32, k: u32, sms: u32) -> Launch {
    Launch {
        grid: SplitK::of(tile, m, n, k, sms).grid(),
        block: (tile.cfg.threads(), 1),
        shared_bytes: tile.cfg.shared_bytes(),
        cluster: 1,
    }
}

/// Fewest splits [`matmul`](super::matmul) cuts a tile's k into. On the H100, 1024³ (128 tiles
/// of 64 × 128 on 132 SMs, cut two ways) took 60.4 µs against 55.5 for `warptile_small`'s one
/// block a tile; 768³ (three ways) 34.9 against 41.6 (BENCHMARKS.md).
pub const SPLIT_K_FROM: u32 = 3;

/// Most k tiles a range of stage 14's 64 × 128 tiles may have for [`split_k_stage`] to take the
/// 128 × 32 tile instead: with ranges this short a block is mostly its launch, its first loads
/// and its partial, and twice the blocks of a quarter the sums do better. On the H100, 256³ (2 k
/// tiles a range) and 512³ (4) took 8.2 and 17.7 µs on 128 × 32 tiles against 11.2–11.9 and
/// 17.8–19.1 on 64 × 128; m or n = 128 against 4096² (64) 125.5–131.8 against 116.6–120.0
/// (BENCHMARKS.md).
pub const SPLIT_K_SHORT: u32 = 4;

/// The split-K stage and tile for an `m × n × k` multiply on `sms` multiprocessors: 32 × 128
/// tiles where m ≤ 32 (stage 15), 128 × 32 where n ≤ 32 (stage 16) or where stage 14's ranges
/// would be at most [`SPLIT_K_SHORT`] k tiles, else 64 × 128 (stage 14).
pub const fn split_k_stage(m: u32, n: u32, k: u32, sms: u32) -> (Method, SplitKTile) {
    if m <= SPLIT_K_WIDE.cfg.bm {
        (Method::SplitKWide, SPLIT_K_WIDE)
    } else if n <= SPLIT_K_TALL.cfg.bn || SplitK::of(SPLIT_K, m, n, k, sms).per(k) <= SPLIT_K_SHORT {
        (Method::SplitKTall, SPLIT_K_TALL)
    } else {
        (Method::SplitK, SPLIT_K)
    }
}

/// The split-K stage [`matmul`](super::matmul) takes for an `m × n × k` multiply on `sms`
/// multiprocessors, if any ([`split_k_stage`]'s, where its tiles are cut at least
/// [`SPLIT_K_FROM`] ways inside the workspace; a range has two k tiles or more by
/// [`SplitK::of`]).
pub const fn split_k_pays(m: u32, n: u32, k: u32, sms: u32) -> Option<Method> {
    let (method, tile) = split_k_stage(m, n, k, sms);
    let sk = SplitK::of(tile, m, n, k, sms);
    if sk.splits >= SPLIT_K_FROM && sk.fits() { Some(method) } else { None }
}

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
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_split_k`: `matmul_warptile_edge`'s k loop over the block's k range of the 64 × 128
    //!   tile, its whole k tiles read as `LDG.E.128` where rows start on 16-byte boundaries
    //!   (`mm_vectors`; B's only by the lanes whose 4 columns are inside n); then 16 `STG.E.128` of
    //!   its sums into the workspace (`split_k_slot`: a warp's 32 lanes 512 contiguous bytes), one
    //!   `ATOMG.ADD` of thread 0, and on the tile's last block 16 `LDG.E.128` (`ld.global.cg`) for
    //!   each other split's partial, then C's floats as `matmul_warptile_edge` stores them (64
    //!   `STG.E`, guarded). Which block of a tile arrives last depends on timing; the replay takes
    //!   the last split's, the same counts as any other's. With one split (tiles that fill the GPU)
    //!   a block stores its tile as `matmul_warptile_edge` does.
    //! - `matmul_split_k_wide` and `matmul_split_k_tall` (stages 15 and 16): the same on 32 × 128
    //!   and 128 × 32 tiles, 8 `STG.E.128` of sums a thread, and the last block loads the partials
    //!   two splits at a time (`split_k_group`), its own read back too.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::warptile::replay::{store_c_vectors, warptile_k_loop};
    use crate::matmul::warptile_spread::replay::spread_k_loop_warp;
    use crate::model::matmul::{Launched, Replay};
    use crate::model::{Model, block_warps};
    use coalesce_kernels::matmul::{
        SPLIT_K, SPLIT_K_SPREAD, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, SplitKTile, WTS_STAGES, row_major, split_k_group,
        split_k_slot,
    };

    /// A made-up address for the split-K kernel's workspace and tickets (module globals, no buffers
    /// of the call).
    const WORKSPACE_ADDRESS: u64 = 0x7100_0000_0000;
    const TICKETS_ADDRESS: u64 = 0x7200_0000_0000;

    /// Counts of a split-K launch of `tile` (the schedule its grid gives): every block's warps
    /// replayed.
    fn split_k_counts(model: &mut Model, l: &Launched, launch: &Launch, tile: SplitKTile) -> Result<()> {
        let (workspace, tickets) = (model.buffer(WORKSPACE_ADDRESS), model.buffer(TICKETS_ADDRESS));
        let cfg = tile.cfg;
        let sk = SplitK::of_grid(cfg, l.n, launch.grid);
        // Whether the last block reads its own partial back too (it loads splits in groups).
        let own = u32::from(split_k_group(cfg) > 1);
        let (gx, gy) = sk.grid();
        for by in 0..gy {
            for bx in 0..gx {
                let (tx, z) = sk.block(bx);
                let tile = sk.tile(tx, by);
                let origin = cfg.block_origin(tx, by);
                let (first, end) = sk.walked(z, l.k);
                for w in block_warps(launch, (bx, by)) {
                    let t = |lane| w.thread(lane).0;
                    warptile_k_loop(model, l, &w, (cfg, true, l.vectors), origin, first..end)?;
                    // One split: the tile stored as the guarded warp tile stores it.
                    if sk.splits == 1 {
                        store_c_vectors(model, l, &w, cfg, origin, true)?;
                        continue;
                    }
                    let slots = |model: &mut Model, split: u32, store: bool| -> Result<()> {
                        for i in 0..cfg.tm {
                            for h in 0..cfg.tn / 4 {
                                let at =
                                    |lane| 4 * (sk.partial(tile, split) + u64::from(split_k_slot(cfg, t(lane), i, h)));
                                if store {
                                    model.store(workspace, 16, w.lanes, at)?;
                                } else {
                                    model.load(workspace, 16, w.lanes, at)?;
                                }
                            }
                        }
                        Ok(())
                    };
                    slots(model, z, true)?;
                    if w.thread(0).0 == 0 {
                        model.atomic(tickets, 4 * u64::from(tile))?;
                    }
                    if z + 1 == sk.splits {
                        for split in 0..z + own {
                            slots(model, split, false)?;
                        }
                        if w.thread(0).0 == 0 {
                            model.store(tickets, 4, 1, |_| 4 * u64::from(tile))?;
                        }
                        store_c_vectors(model, l, &w, cfg, origin, true)?;
                    }
                }
            }
        }
        Ok(())
    }

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
                    spread_k_loop_warp(model, l, &w, (cfg, WTS_STAGES), origin, sk.walked(z, l.k))?;
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

    /// Stage 14's replay: its whole launch, block by block.
    pub(crate) const REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| split_k_counts(model, l, launch, SPLIT_K)) };

    /// Stage 15's replay (32 × 128 tiles).
    pub(crate) const WIDE_REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| split_k_counts(model, l, launch, SPLIT_K_WIDE)) };

    /// Stage 17's replay (the spread ring's 128 × 256 tiles).
    pub(crate) const SPREAD_REPLAY: Replay = Replay { blocks: None, row: Some(spread_counts) };

    /// Stage 16's replay (128 × 32 tiles).
    pub(crate) const TALL_REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| split_k_counts(model, l, launch, SPLIT_K_TALL)) };
}

/// What split-K's threads touch: the guarded warp tile's k loop over the block's k range, its
/// partial into the workspace, and on a tile's last block C, inside only.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Store, Touch, Walked, ensure, ensure_eq, salt, thread_cells, tile_cells,
    };
    use crate::matmul::warptile::footprint::thread_k_tile;
    use coalesce_kernels::matmul::{
        SPLIT_K, SPLIT_K_SPREAD, SPLIT_K_TALL, SPLIT_K_TICKETS, SPLIT_K_WIDE, SPLIT_K_WORKSPACE_FLOATS,
        SPREAD_REDUCERS, SplitK, SplitKTile, WTS_STAGES, row_major, split_k_slot,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| launch(SPLIT_K, p),
        block: |p, b, probe, touch| block(SPLIT_K, p, b, probe, touch),
        stores: |p, b, store| stores(SPLIT_K, p, b, store),
    };
    pub(crate) const WIDE_FOOTPRINT: Footprint = Footprint {
        launch: |p, _| launch(SPLIT_K_WIDE, p),
        block: |p, b, probe, touch| block(SPLIT_K_WIDE, p, b, probe, touch),
        stores: |p, b, store| stores(SPLIT_K_WIDE, p, b, store),
    };
    pub(crate) const TALL_FOOTPRINT: Footprint = Footprint {
        launch: |p, _| launch(SPLIT_K_TALL, p),
        block: |p, b, probe, touch| block(SPLIT_K_TALL, p, b, probe, touch),
        stores: |p, b, store| stores(SPLIT_K_TALL, p, b, store),
    };
    pub(crate) const SPREAD_FOOTPRINT: Footprint =
        Footprint { launch: |p, _| spread_launch(p), block: spread_block, stores: spread_stores };

    /// The grid is the schedule's of `tile`, which the kernel reads back from it.
    fn launch(tile: SplitKTile, p: &Probe) -> Walked {
        let (m, n, k) = p.dims;
        let sk = SplitK::of(tile, m, n, k, p.sms);
        ensure_eq!(p.grid, sk.grid());
        ensure_eq!(SplitK::of_grid(tile.cfg, n, p.grid), sk);
        ensure!(sk.fits() || sk.splits == 1);
        ensure_eq!(p.shared_bytes, tile.cfg.shared_bytes());
        Ok(())
    }

    /// Only a tile's last block stores, and every tile has one.
    fn stores(tile: SplitKTile, p: &Probe, (bx, by): (u32, u32), store: Store<'_>) {
        let (cfg, (m, n, _)) = (tile.cfg, p.dims);
        let sk = SplitK::of_grid(cfg, n, p.grid);
        let (tx, z) = sk.block(bx);
        if z + 1 == sk.splits {
            for (row, col) in tile_cells(cfg, cfg.block_origin(tx, by)) {
                if row < m && col < n {
                    store(row, col);
                }
            }
        }
    }

    /// Threads at the warps' edges and one more, at the range's first and last k tiles (the
    /// guarded warp tile's loads), then the thread's slots of the workspace and its outputs.
    fn block(tile: SplitKTile, p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let cfg = tile.cfg;
        let (m, n, k) = p.dims;
        let n64 = u64::from(n);
        let sk = SplitK::of(tile, m, n, k, p.sms);
        let r = salt(probe, (bx, by));
        let (tx, z) = sk.block(bx);
        ensure!(tx < sk.tiles_x && z < sk.splits);
        let (first, end) = sk.walked(z, k);
        let (row0, col0) = cfg.block_origin(tx, by);
        ensure!(row0 < m && col0 < n);
        if sk.fits() {
            ensure!(
                sk.partial(sk.tile(tx, by), z) + u64::from(tile.tile_floats()) <= u64::from(SPLIT_K_WORKSPACE_FLOATS)
            );
            ensure!(sk.tile(tx, by) < SPLIT_K_TICKETS);
        }
        let threads = cfg.threads();
        for t in [0, 1, 31, 32, threads - 1, (r % u64::from(threads)) as u32] {
            for kt in [first, end.saturating_sub(1).max(first)] {
                thread_k_tile(cfg, (true, None), p.dims, t, (row0, col0), kt, touch)?;
            }
            for i in 0..cfg.tm {
                for h in 0..cfg.tn / 4 {
                    ensure!(split_k_slot(cfg, t, i, h) + 4 <= tile.tile_floats());
                }
            }
            for (row, col) in thread_cells(cfg, t, (row0, col0)) {
                if row < m && col < n {
                    touch(Matrix::C, row_major(row.into(), col.into(), n64), 1)?;
                }
            }
        }
        Ok(())
    }

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

#[cfg(test)]
mod tests {
    use super::split_k_pays;
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn split_k_plans_a_grid_row_of_splits_per_tile_row() {
        // 512³ on 132 SMs: 4 × 8 tiles of 64 × 128, each cut 8 ways.
        let (l, _) = plan_of(Method::SplitK, (512, 512, 512), (512 * 512, 512 * 512, 512 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((32, 8), (128, 1), 2 * (16 * 68 + 16 * 128) * 4));
        // It pays where a few tiles have a long k, not where the tiles fill the GPU or k is short.
        // Short ranges (stage 14's 4 k tiles at 512³, 2 at 256³) take the 128 × 32 tile; long ones
        // (768³: 16; m = 128 against 4096²: 64) stage 14's.
        assert_eq!(split_k_pays(512, 512, 512, 132), Some(Method::SplitKTall));
        assert_eq!(split_k_pays(256, 256, 256, 132), Some(Method::SplitKTall));
        assert_eq!(split_k_pays(768, 768, 768, 132), Some(Method::SplitK));
        assert_eq!(split_k_pays(128, 4096, 4096, 132), Some(Method::SplitK));
        assert_eq!(split_k_pays(32, 4096, 4096, 132), Some(Method::SplitKWide));
        assert_eq!(split_k_pays(4096, 32, 4096, 132), Some(Method::SplitKTall));
        assert_eq!((split_k_pays(4096, 4096, 4096, 132), split_k_pays(256, 384, 64, 132)), (None, None));
        // m = 32 against 4096²: one row of 32 tiles of 32 × 128, cut 16 ways.
        let (l, _) = plan_of(Method::SplitKWide, (32, 4096, 4096), (32 * 4096, 4096 * 4096, 32 * 4096)).unwrap();
        assert_eq!((l.grid, l.block), ((512, 1), (128, 1)));
    }
}
