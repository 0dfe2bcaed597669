//! Stage 9, warptile_spread (Hopper): warptile_async's copies go out two at a time between a tile's k
//! steps, 4 stages deep. The same transactions; no FMA waits on a copy's address registers.
//!
//! The host side: the spread kernel's launch (`spread_streamk`'s blocks too).
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
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTS_STAGES, matmul_warptile_spread};

/// Stage 9's descriptor: no guards, so whole [`WARPTILE_ASYNC`] tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::WarptileSpread,
    kernel: matmul_warptile_spread,
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
        block: |p, block, probe, touch| ring_block(p, block, probe, touch, Some(WTS_STAGES)),
        ..FOOTPRINT
    },
    lesson: Lesson {
        summary: "warptile_async with each thread's 12 copies a tile issued 2 at a time over the k steps, 4-stage ring (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_ASYNC_SHAPES],
    },
};

/// `warptile_async`'s blocks, with the `WTS_STAGES`-stage ring as their shared memory.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    super::warptile_async::ring_launch(m, n, WTS_STAGES)
}

#[cfg(feature = "model")]
pub(super) mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_warptile_spread` (and `matmul_spread_streamk_waves`, the same kernel over
    //!   stream-K's whole waves): its `spread_k_loop` replayed copy by copy at the k steps
    //!   [`spread_copies`] names, fragment by fragment, then `matmul_warptile`'s stores of C.

    use crate::error::Result;
    use crate::matmul::warptile::replay::fragments;
    use crate::matmul::warptile_async::replay::{async_origin, copy_warp, whole_tile_warp};
    use crate::model::matmul::{Blocks, Launched, Replay, own_tile};
    use crate::model::{Model, Warp};
    use coalesce_kernels::matmul::{SPREAD_GROUP, WARPTILE_ASYNC, WTS_STAGES, WarpTile, spread_copies};

    /// One warp of the spread ring with `stages` stages over k tiles `kt0..kt1` of the block tile
    /// at `origin` (the kernel's `spread_k_loop`): tiles `0..stages - 1` copied up front, then at
    /// each k step of tile `j` the copies [`spread_copies`] names of tile `j + stages - 1` (while
    /// there is one), and the next step's fragments (the last step's: the next tile's first, from
    /// its stage, even after the last tile).
    pub(crate) fn spread_k_loop_warp(
        model: &mut Model,
        l: &Launched,
        w: &Warp,
        (cfg, stages): (WarpTile, u32),
        origin: (u32, u32),
        (kt0, kt1): (u32, u32),
    ) -> Result<()> {
        let tiles = kt1 - kt0;
        let copies = cfg.a_floats() + cfg.b_vectors();
        for kt in 0..(stages - 1).min(tiles) {
            for v in 0..copies {
                copy_warp(model, l, w, cfg, origin, kt0 + kt, v)?;
            }
        }
        let stage_bytes = |kt: u32| 4 * (kt % stages) * cfg.stage_floats();
        fragments(model, w, cfg, stage_bytes(0), 0)?;
        for kt in 0..tiles {
            let fill = kt + stages - 1;
            for kk in 0..cfg.bk {
                if fill < tiles {
                    let (lo, hi) = spread_copies(kk, copies, SPREAD_GROUP);
                    for v in lo..hi {
                        copy_warp(model, l, w, cfg, origin, kt0 + fill, v)?;
                    }
                }
                let (st, next) = if kk + 1 < cfg.bk { (kt, kk + 1) } else { (kt + 1, 0) };
                fragments(model, w, cfg, stage_bytes(st), next)?;
            }
        }
        Ok(())
    }

    /// [`spread_k_loop_warp`] on [`WARPTILE_ASYNC`] with this stage's [`WTS_STAGES`]-stage ring.
    pub(crate) fn k_loop(model: &mut Model, l: &Launched, w: &Warp, origin: (u32, u32), ks: (u32, u32)) -> Result<()> {
        spread_k_loop_warp(model, l, w, (WARPTILE_ASYNC, WTS_STAGES), origin, ks)
    }

    /// Stage 9's replay: `warptile_async`'s blocks (by linear id over stream-K's whole waves,
    /// `matmul_spread_streamk_waves`), each warp through the spread ring.
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
    fn spread_ring_plans_a_block_a_tile_with_its_deeper_ring() {
        let (l, _) = plan_of(Method::WarptileSpread, (256, 512, 32), (256 * 32, 32 * 512, 256 * 512)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((2, 2), (256, 1), 4 * 16 * (132 + 256) * 4));
    }
}
