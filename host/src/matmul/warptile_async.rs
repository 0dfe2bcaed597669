//! Stage 7, warptile_async (Hopper): 8 × 16 outputs a thread in 128 × 256 tiles, a `cp.async` ring.
//! 6 shared loads per 128 FMAs (was 4 per 64), no tile in registers; one block an SM, not two.
//!
//! The host side: the `cp.async` warp-tiled kernel's launch (`warptile_streamk`'s blocks too).
//!
//! Below the launch: the model's replay of its kernel (`replay`); its footprint is `warptile`'s,
//! A copied through its ring.

#[cfg(feature = "model")]
use super::footprint::Footprint;
use super::lesson::{Lesson, SIZES, WARPTILE_ASYNC_SHAPES};
#[cfg(feature = "model")]
use super::warptile::footprint::{FOOTPRINT, ring_block};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTA_STAGES, WTA_THREADS, matmul_warptile_async};

/// Stage 7's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarptileAsync,
    kernel: matmul_warptile_async,
    waves: None,
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::tiles_of(WARPTILE_ASYNC),
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    // The warp tile's, A copied through the ring.
    #[cfg(feature = "model")]
    footprint: Footprint {
        block: |p, block, probe, touch| ring_block(p, block, probe, touch, Some(WTA_STAGES)),
        ..FOOTPRINT
    },
    lesson: Lesson {
        summary: "128x256 blocks, 8x16 a thread, 3-stage cp.async ring of k 16, 1 block/SM (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_ASYNC_SHAPES],
    },
};

/// A block a `WARPTILE_ASYNC` tile of C (whole tiles only), `WTA_THREADS` threads, its
/// `WTA_STAGES`-stage ring as shared memory (past the default: opted in at launch).
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    ring_launch(m, n, WTA_STAGES)
}

/// [`launch`] with a ring of `stages` stages (`warptile_spread`'s is deeper).
pub(super) const fn ring_launch(m: u32, n: u32, stages: u32) -> Launch {
    Launch {
        grid: WARPTILE_ASYNC.grid(m, n),
        block: (WTA_THREADS, 1),
        shared_bytes: WARPTILE_ASYNC.ring_bytes(stages),
        cluster: 1,
    }
}

#[cfg(feature = "model")]
pub(super) mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_warptile_async` (and `matmul_warptile_streamk_waves`, the same kernel over stream-K's
    //!   whole waves): its `async_k_loop` replayed copy by copy and fragment by fragment, then
    //!   `matmul_warptile`'s 16-byte stores of C.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::warptile::replay::{fragments, store_c_vectors};
    use crate::model::matmul::{Blocks, Cx, Launched, Replay, own_tile};
    use crate::model::{Model, Warp};
    use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTA_STAGES, WarpTile, row_major};

    /// One warp of the `cp.async` warp-tiled kernel of shape `cfg` with a ring of `stages`, over k
    /// tiles `kt0..kt1` of the block tile at `(row0, col0)` (the kernel's `async_k_loop`): the
    /// first `stages` tiles copied up front, the rest one a tile (A one float a copy, B 16 bytes),
    /// `bk` fragment loads a tile, each the next step's (the last step of a tile the next tile's
    /// first, from its stage, even after the last tile), and the first tile's first loads before
    /// the loop.
    pub(crate) fn async_k_loop_warp(
        model: &mut Model,
        l: &Launched,
        w: &Warp,
        (cfg, stages): (WarpTile, u32),
        (row0, col0): (u32, u32),
        (kt0, kt1): (u32, u32),
    ) -> Result<()> {
        let tiles = kt1 - kt0;
        let copy = |model: &mut Model, kt: u32| -> Result<()> {
            for v in 0..cfg.a_floats() + cfg.b_vectors() {
                copy_warp(model, l, w, cfg, (row0, col0), kt0 + kt, v)?;
            }
            Ok(())
        };
        let stage_bytes = |kt: u32| 4 * (kt % stages) * cfg.stage_floats();
        for kt in 0..stages.min(tiles) {
            copy(model, kt)?;
        }
        fragments(model, w, cfg, stage_bytes(0), 0)?;
        for kt in 0..tiles {
            for kk in 0..cfg.bk {
                if kk + 1 < cfg.bk {
                    fragments(model, w, cfg, stage_bytes(kt), kk + 1)?;
                } else {
                    if kt + stages < tiles {
                        copy(model, kt + stages)?;
                    }
                    fragments(model, w, cfg, stage_bytes(kt + 1), 0)?;
                }
            }
        }
        Ok(())
    }

    /// A warp's `cp.async` copy `v` of k tile `kt` (of the whole k) of the block tile at `(row0,
    /// col0)`, numbered as the kernels number them: A's floats ([`WarpTile::a_copy`], 4 bytes a
    /// lane), then B's vectors ([`WarpTile::b_load`], 16 bytes a lane).
    pub(crate) fn copy_warp(
        model: &mut Model,
        l: &Launched,
        w: &Warp,
        cfg: WarpTile,
        (row0, col0): (u32, u32),
        kt: u32,
        v: u32,
    ) -> Result<()> {
        let t = |lane| w.thread(lane).0;
        let (n, k) = (u64::from(l.n), u64::from(l.k));
        let k0 = u64::from(kt * cfg.bk);
        if v < cfg.a_floats() {
            model.load(l.a, 4, w.lanes, |lane| {
                let (row, col) = cfg.a_copy(t(lane), v);
                4 * row_major(u64::from(row0 + row), k0 + u64::from(col), k)
            })?;
        } else {
            model.load(l.b, 16, w.lanes, |lane| {
                let (row, col) = cfg.b_load(t(lane), v - cfg.a_floats());
                4 * row_major(k0 + u64::from(row), u64::from(col0 + col), n)
            })?;
        }
        Ok(())
    }

    /// The tile of block `(bx, by)` of a `matmul_warptile_async` launch, or with `linear` of a
    /// `matmul_warptile_streamk_waves` launch (its linear id's).
    pub(crate) fn async_origin(launch: &Launch, n: u32, (bx, by): (u32, u32), linear: bool) -> (u32, u32) {
        if linear {
            WARPTILE_ASYNC.tile_origin(by * launch.grid.0 + bx, n / WARPTILE_ASYNC.bn)
        } else {
            WARPTILE_ASYNC.block_origin(bx, by)
        }
    }

    /// One warp's k loop over k tiles `(kt0, kt1)` of the [`WARPTILE_ASYNC`] block tile at
    /// `origin`, through a ring (this stage's, or stage 9's spread ring): what a whole tile, a
    /// stream-K segment and a split-K range run.
    pub(crate) type KLoop = fn(&mut Model, &Launched, &Warp, (u32, u32), (u32, u32)) -> Result<()>;

    /// [`async_k_loop_warp`] on [`WARPTILE_ASYNC`] with this stage's [`WTA_STAGES`]-stage ring.
    pub(crate) fn k_loop(model: &mut Model, l: &Launched, w: &Warp, origin: (u32, u32), ks: (u32, u32)) -> Result<()> {
        async_k_loop_warp(model, l, w, (WARPTILE_ASYNC, WTA_STAGES), origin, ks)
    }

    /// One warp of a ring kernel on [`WARPTILE_ASYNC`] tiles (this stage's, stage 9's): its
    /// block's whole tile (by its coordinates, or by its linear id over stream-K's whole waves)
    /// through `k_loop`, then C.
    pub(crate) fn whole_tile_warp(model: &mut Model, l: &Launched, cx: &Cx<'_>, w: &Warp, k_loop: KLoop) -> Result<()> {
        let cfg = WARPTILE_ASYNC;
        let origin = async_origin(cx.launch, cx.n, w.block, cx.linear);
        k_loop(model, l, w, origin, (0, cfg.k_tiles(l.k, false)))?;
        store_c_vectors(model, l, w, cfg, origin, false)
    }

    /// Stage 7's replay: a block a [`WARPTILE_ASYNC`] tile, by its coordinates or (stream-K's whole
    /// waves, `matmul_warptile_streamk_waves`) by its linear id.
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: own_tile,
            origin: |cx, block| Ok(async_origin(cx.launch, cx.n, block, cx.linear)),
            warp: |model, l, cx, w| whole_tile_warp(model, l, cx, w, k_loop),
        }),
        row: None,
    };
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn async_ring_plans_a_block_a_tile_with_its_ring() {
        let (l, _) = plan_of(Method::WarptileAsync, (256, 512, 32), (256 * 32, 32 * 512, 256 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((2, 2), (256, 1), 3 * 16 * (132 + 256) * 4));
    }
}
