//! Stage 14, split_k (Hopper, any shape): `warptile_small`'s guarded tiles with each tile's k cut
//! into ranges, a block a range, so that a grid of few tiles fills the GPU; partial tiles meet in
//! an L2 workspace, added in split order by a tile's last block. Stages 15 and 16,
//! split_k_wide and split_k_tall: the same on 32 × 128 and 128 × 32 tiles, for m or n ≤ 32.
//! Stage 17, the cut on the spread ring's tiles, is `split_k_spread`, which shares this stage's
//! schedule, workspace and tickets.
//!
//! The host side: the launches, and when [`matmul`](super::matmul) takes which
//! ([`split_k_pays`]).
//!
//! Below the launches: the model's replay of their kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{
    SPLIT_K, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, SplitKTile, matmul_split_k, matmul_split_k_tall, matmul_split_k_wide,
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

/// [`SplitK::grid`] of the shape on `sms` multiprocessors, blocks of `tile`.
pub(super) const fn launch(tile: SplitKTile, m: u32, n: u32, k: u32, sms: u32) -> Launch {
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

#[cfg(feature = "model")]
pub(super) mod replay {
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
    use crate::model::matmul::{Launched, Replay};
    use crate::model::{Model, block_warps};
    use coalesce_kernels::matmul::{
        SPLIT_K, SPLIT_K_TALL, SPLIT_K_WIDE, SplitK, SplitKTile, split_k_group, split_k_slot,
    };

    /// A made-up address for the split-K kernel's workspace and tickets (module globals, no buffers
    /// of the call).
    pub(in crate::matmul) const WORKSPACE_ADDRESS: u64 = 0x7100_0000_0000;
    pub(in crate::matmul) const TICKETS_ADDRESS: u64 = 0x7200_0000_0000;

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

    /// Stage 14's replay: its whole launch, block by block.
    pub(crate) const REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| split_k_counts(model, l, launch, SPLIT_K)) };

    /// Stage 15's replay (32 × 128 tiles).
    pub(crate) const WIDE_REPLAY: Replay =
        Replay { blocks: None, row: Some(|model, l, launch| split_k_counts(model, l, launch, SPLIT_K_WIDE)) };

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
        SPLIT_K, SPLIT_K_TALL, SPLIT_K_TICKETS, SPLIT_K_WIDE, SPLIT_K_WORKSPACE_FLOATS, SplitK, SplitKTile, row_major,
        split_k_slot,
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
