//! Stage 14, split_k (Hopper, any shape): `warptile_small`'s guarded tiles with each tile's k cut
//! into ranges, a block a range, so that a grid of few tiles fills the GPU; partial tiles meet in
//! an L2 workspace, added in split order by a tile's last block.
//!
//! The host side: the launch, and when [`matmul`](super::matmul) takes it ([`split_k_pays`]).
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{SPLIT_K, SplitK, matmul_split_k};

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
    warp_tile: Some(SPLIT_K),
    bounds: Bounds::Guarded,
    block_rows: SPLIT_K.bm,
    launch: |_, m, n, sms| launch(m, n, sms),
    replay: replay::REPLAY,
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

/// [`SplitK::grid`] of the shape on `sms` multiprocessors, blocks of the small warp tile.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    Launch {
        grid: SplitK::of(m, n, sms).grid(),
        block: (SPLIT_K.threads(), 1),
        shared_bytes: SPLIT_K.shared_bytes(),
        cluster: 1,
    }
}

/// Fewest splits [`matmul`](super::matmul) cuts a tile's k into. On the H100, 1024³ (128 tiles
/// of 64 × 128 on 132 SMs, cut two ways) took 60.4 µs against 55.5 for `warptile_small`'s one
/// block a tile; 768³ (three ways) 34.9 against 41.6 (BENCHMARKS.md).
pub const SPLIT_K_FROM: u32 = 3;

/// Whether [`matmul`](super::matmul) takes split-K for an `m × n × k` multiply on `sms`
/// multiprocessors: its tiles cut at least [`SPLIT_K_FROM`] ways, each range at least two k tiles,
/// the launch inside the workspace.
pub const fn split_k_pays(m: u32, n: u32, k: u32, sms: u32) -> bool {
    let sk = SplitK::of(m, n, sms);
    sk.splits >= SPLIT_K_FROM && sk.fits() && SPLIT_K.k_tiles(k, true) >= 2 * sk.splits
}

mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_split_k`: `matmul_warptile_edge`'s k loop over the block's k range of the 64 × 128
    //!   tile, its whole k tiles read as `LDG.E.128` where rows start on 16-byte boundaries
    //!   (`mm_vectors`; B's only by the lanes whose 4 columns are inside n); then 16 `STG.E.128` of
    //!   its sums into the workspace (`split_k_slot`: a warp's 32 lanes 512 contiguous bytes), one `ATOMG.ADD` of thread 0, and on the tile's last
    //!   block 16 `LDG.E.128` (`ld.global.cg`) for each other split's partial, then C's floats as
    //!   `matmul_warptile_edge` stores them (64 `STG.E`, guarded). Which block of a tile arrives last
    //!   depends on timing; the replay takes the last split's, the same counts as any other's. With
    //!   one split (tiles that fill the GPU) a block stores its tile as `matmul_warptile_edge` does.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::warptile::replay::{store_c_vectors, warptile_k_loop};
    use crate::model::matmul::{Launched, Replay};
    use crate::model::{Model, block_warps};
    use coalesce_kernels::matmul::{SPLIT_K, SplitK, split_k_slot};

    /// A made-up address for the split-K kernel's workspace and tickets (module globals, no buffers
    /// of the call).
    const WORKSPACE_ADDRESS: u64 = 0x7100_0000_0000;
    const TICKETS_ADDRESS: u64 = 0x7200_0000_0000;

    /// Counts of a split-K launch on schedule `sk` (its grid's): every block's warps replayed.
    fn split_k_counts(model: &mut Model, l: &Launched, launch: &Launch, sk: SplitK) -> Result<()> {
        let (workspace, tickets) = (model.buffer(WORKSPACE_ADDRESS), model.buffer(TICKETS_ADDRESS));
        let (gx, gy) = sk.grid();
        for by in 0..gy {
            for bx in 0..gx {
                let (tx, z) = sk.block(bx);
                let tile = sk.tile(tx, by);
                let origin = SPLIT_K.block_origin(tx, by);
                let (first, end) = sk.walked(z, l.k);
                for w in block_warps(launch, (bx, by)) {
                    let t = |lane| w.thread(lane).0;
                    warptile_k_loop(model, l, &w, (SPLIT_K, true, l.vectors), origin, first..end)?;
                    // One split: the tile stored as the guarded warp tile stores it.
                    if sk.splits == 1 {
                        store_c_vectors(model, l, &w, SPLIT_K, origin, true)?;
                        continue;
                    }
                    let slots = |model: &mut Model, split: u32, store: bool| -> Result<()> {
                        for i in 0..SPLIT_K.tm {
                            for h in 0..SPLIT_K.tn / 4 {
                                let at = |lane| 4 * (sk.partial(tile, split) + u64::from(split_k_slot(t(lane), i, h)));
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
                        for split in 0..z {
                            slots(model, split, false)?;
                        }
                        if w.thread(0).0 == 0 {
                            model.store(tickets, 4, 1, |_| 4 * u64::from(tile))?;
                        }
                        store_c_vectors(model, l, &w, SPLIT_K, origin, true)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Stage 14's replay: its whole launch, block by block.
    pub(crate) const REPLAY: Replay = Replay {
        blocks: None,
        row: Some(|model, l, launch| split_k_counts(model, l, launch, SplitK::of_grid(l.n, launch.grid))),
    };
}

/// What split-K's threads touch: the guarded warp tile's k loop over the block's k range, its
/// partial into the workspace, and on a tile's last block C, inside only.
mod footprint {
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, salt, thread_cells, tile_cells,
    };
    use coalesce_kernels::matmul::{SPLIT_K, SPLIT_K_MAX_BLOCKS, SPLIT_K_TILE_FLOATS, SplitK, row_major, split_k_slot};

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            // The grid is the schedule's, which the kernel reads back from it.
            let (m, n, _) = p.dims;
            let sk = SplitK::of(m, n, p.sms);
            ensure_eq!(p.grid, sk.grid());
            ensure_eq!(SplitK::of_grid(n, p.grid), sk);
            ensure!(sk.fits() || sk.splits == 1);
            ensure_eq!(p.shared_bytes, SPLIT_K.shared_bytes());
            Ok(())
        },
        block,
        stores: |p, (bx, by), store| {
            // Only a tile's last block stores, and every tile has one.
            let (m, n, _) = p.dims;
            let sk = SplitK::of_grid(n, p.grid);
            let (tx, z) = sk.block(bx);
            if z + 1 == sk.splits {
                for (row, col) in tile_cells(SPLIT_K, SPLIT_K.block_origin(tx, by)) {
                    if row < m && col < n {
                        store(row, col);
                    }
                }
            }
        },
    };

    /// Threads at the warps' edges and one more, at the range's first and last k tiles (the
    /// guarded warp tile's loads), then the thread's slots of the workspace and its outputs.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let cfg = SPLIT_K;
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let sk = SplitK::of(m, n, p.sms);
        let r = salt(probe, (bx, by));
        let (tx, z) = sk.block(bx);
        ensure!(tx < sk.tiles_x && z < sk.splits);
        let (first, end) = sk.walked(z, k);
        let (row0, col0) = cfg.block_origin(tx, by);
        ensure!(row0 < m && col0 < n);
        if sk.fits() {
            ensure!(
                sk.partial(sk.tile(tx, by), z) + u64::from(SPLIT_K_TILE_FLOATS)
                    <= u64::from(SPLIT_K_MAX_BLOCKS) * u64::from(SPLIT_K_TILE_FLOATS)
            );
        }
        let threads = cfg.threads();
        for t in [0, 1, 31, 32, threads - 1, (r % u64::from(threads)) as u32] {
            for kt in [first, end.saturating_sub(1).max(first)] {
                let kt64 = u64::from(kt) * u64::from(cfg.bk);
                for v in 0..cfg.a_vectors() {
                    let at = cfg.a_load(t, v);
                    let row = u64::from(cfg.a_src_row(row0, at, m, true));
                    for j in 0..4u64 {
                        if kt64 + u64::from(at.1) + j < k64 {
                            touch(Matrix::A, row_major(row, kt64 + u64::from(at.1) + j, k64), 1)?;
                        }
                    }
                }
                for v in 0..cfg.b_vectors() {
                    let bt = cfg.b_load(t, v);
                    let kr = kt64 + u64::from(bt.0);
                    if kr < k64 {
                        for j in 0..4 {
                            let col = u64::from(cfg.b_src_col(col0, bt, j, n, true));
                            touch(Matrix::B, row_major(kr, col, n64), 1)?;
                        }
                    }
                }
            }
            for i in 0..cfg.tm {
                for h in 0..cfg.tn / 4 {
                    ensure!(split_k_slot(t, i, h) + 4 <= SPLIT_K_TILE_FLOATS);
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
        assert!(split_k_pays(512, 512, 512, 132) && split_k_pays(32, 4096, 4096, 132));
        assert!(!split_k_pays(4096, 4096, 4096, 132) && !split_k_pays(256, 384, 64, 132));
    }
}
