//! Stage 7, warptile_async (Hopper): 8 × 16 outputs a thread in 128 × 256 tiles, a `cp.async` ring.
//! 6 shared loads per 128 FMAs (was 4 per 64), no tile in registers; one block an SM, not two.
//!
//! SASS (sm_90, the Hopper module):
//! - `matmul_warptile_async` (and `matmul_warptile_streamk_waves`, the same kernel over stream-K's
//!   whole waves): its `async_k_loop` replayed copy by copy and fragment by fragment, then
//!   `matmul_warptile`'s 16-byte stores of C.

use super::warptile::{fragments, store_c_vectors};
use super::{Blocks, Launched, Replay, own_tile};
use crate::error::Result;
use crate::launch::Launch;
use crate::model::{Model, Warp};
use coalesce_kernels::matmul::{WARPTILE_ASYNC, WTA_STAGES, WarpTile, row_major};

/// One warp of the `cp.async` warp-tiled kernel of shape `cfg` with a ring of `stages`, over k
/// tiles `kt0..kt1` of the block tile at `(row0, col0)` (the kernel's `async_k_loop`): the
/// first `stages` tiles copied up front, the rest one a tile (A one float a copy, B 16 bytes),
/// `bk` fragment loads a tile, each the next step's (the last step of a tile the next tile's
/// first, from its stage, even after the last tile), and the first tile's first loads before
/// the loop.
pub(super) fn async_k_loop_warp(
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
pub(super) fn copy_warp(
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
pub(super) fn async_origin(launch: &Launch, n: u32, (bx, by): (u32, u32), linear: bool) -> (u32, u32) {
    if linear {
        WARPTILE_ASYNC.tile_origin(by * launch.grid.0 + bx, n / WARPTILE_ASYNC.bn)
    } else {
        WARPTILE_ASYNC.block_origin(bx, by)
    }
}

/// One warp of the `cp.async` warp-tiled kernel: its block's whole tile (at `origin`), then C.
pub(super) fn warptile_async_warp(
    model: &mut Model,
    l: &Launched,
    w: &Warp,
    origin: (u32, u32),
    stages: u32,
) -> Result<()> {
    let cfg = WARPTILE_ASYNC;
    async_k_loop_warp(model, l, w, (cfg, stages), origin, (0, cfg.k_tiles(l.k, false)))?;
    store_c_vectors(model, l, w, cfg, origin, false)?;
    Ok(())
}

/// Stage 7's replay: a block a [`WARPTILE_ASYNC`] tile, by its coordinates or (stream-K's whole
/// waves, `matmul_warptile_streamk_waves`) by its linear id.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: own_tile,
        origin: |cx, block| Ok(async_origin(cx.launch, cx.n, block, cx.linear)),
        warp: |model, l, cx, w| {
            let origin = async_origin(cx.launch, cx.n, w.block, cx.linear);
            warptile_async_warp(model, l, w, origin, WTA_STAGES)
        },
    }),
    row: None,
};
