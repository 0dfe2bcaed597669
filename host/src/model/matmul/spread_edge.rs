//! Stage 11, spread_edge (Hopper): spread_streamk for any shape and any 4-byte alignment.
//! B copied a float at a time (24 copies a tile, not 12), no guard in the k loop; same sectors.
//!
//! SASS (sm_90, the Hopper module):
//! - `matmul_spread_edge_waves`: block `i` (linear id) takes tile `i` of C's tiles counted with
//!   the partial ones; its `edge_k_loop` replayed copy by copy at the k steps [`spread_copies`]
//!   names (A one float a copy from its clamped row, B one float from its wrapped column), the
//!   partial last k tile's copies of the lanes inside k and its `k % 16` steps of fragments,
//!   then single-float stores of the lanes inside C.
//! - `matmul_spread_edge`: stream-K's row (`stream_k_counts`) over that loop, a cut tile's
//!   partial sums read back a float at a time (`ld.global.cg.f32`) before its stores.

use super::warptile::{fragments, store_c_vectors};
use super::{Blocks, Cx, Launched, Replay, own_tile, tile_origin};
use crate::error::Result;
use crate::launch::Launch;
use crate::model::{Model, Warp, block_warps, lanes_where};
use coalesce_kernels::matmul::{EDGE_GROUP, StreamK, WARPTILE_ASYNC, WTS_STAGES, row_major, spread_copies};

/// A warp's copy `v` of k tile `kt` (of the whole k, a whole tile) of the block tile at
/// `(row0, col0)` in the guarded ring, of the lanes in `on`: A's floats ([`WarpTile::a_copy`],
/// rows clamped), then B's ([`WarpTile::b_copy`], columns wrapped: [`WarpTile::b_wrap_col`]),
/// 4 bytes a lane.
///
/// [`WarpTile::a_copy`]: coalesce_kernels::matmul::WarpTile::a_copy
/// [`WarpTile::b_copy`]: coalesce_kernels::matmul::WarpTile::b_copy
/// [`WarpTile::b_wrap_col`]: coalesce_kernels::matmul::WarpTile::b_wrap_col
fn edge_copy_warp(
    model: &mut Model,
    l: &Launched,
    w: &Warp,
    (row0, col0): (u32, u32),
    kt: u32,
    v: u32,
    on: u32,
) -> Result<()> {
    let cfg = WARPTILE_ASYNC;
    let t = |lane| w.thread(lane).0;
    let (m, n, k) = (l.m, l.n, u64::from(l.k));
    let k0 = u64::from(kt * cfg.bk);
    if v < cfg.a_floats() {
        model.load(l.a, 4, on, |lane| {
            let at = cfg.a_copy(t(lane), v);
            4 * row_major(cfg.a_src_row(row0, at, m, true).into(), k0 + u64::from(at.1), k)
        })?;
    } else {
        model.load(l.b, 4, on, |lane| {
            let at = cfg.b_copy(t(lane), v - cfg.a_floats());
            4 * row_major(k0 + u64::from(at.0), cfg.b_wrap_col(col0, at, n).into(), n.into())
        })?;
    }
    Ok(())
}

/// One warp of the guarded ring over k tiles `kt0..kt1` (rounding up) of the block tile at
/// `origin` (the kernel's `edge_k_loop`): the spread ring's walk over the whole tiles, if any
/// (first `stages - 1` up front, then [`spread_copies`] of tile `j + stages - 1` at each step of
/// tile `j`, `EDGE_GROUP` at a time, a tile past the last one the last again, and each step's
/// fragments), then, if the range holds the
/// partial last tile, its copies inside k and its steps' fragments from stage 0.
pub(super) fn edge_k_loop_warp(
    model: &mut Model,
    l: &Launched,
    w: &Warp,
    origin: (u32, u32),
    (kt0, kt1): (u32, u32),
) -> Result<()> {
    let (cfg, stages) = (WARPTILE_ASYNC, WTS_STAGES);
    let t = |lane| w.thread(lane).0;
    let whole = l.k / cfg.bk;
    let tiles = kt1.min(whole).saturating_sub(kt0);
    let copies = cfg.a_floats() + cfg.b_floats();
    // Copies of tiles past the range re-read its last tile (into a stage nothing reads).
    let source = |kt: u32| kt0 + kt.min(tiles.saturating_sub(1));
    if tiles > 0 {
        for kt in 0..stages - 1 {
            for v in 0..copies {
                edge_copy_warp(model, l, w, origin, source(kt), v, w.lanes)?;
            }
        }
        let stage_bytes = |kt: u32| 4 * (kt % stages) * cfg.stage_floats();
        fragments(model, w, cfg, stage_bytes(0), 0)?;
        for kt in 0..tiles {
            let fill = kt + stages - 1;
            for kk in 0..cfg.bk {
                let (lo, hi) = spread_copies(kk, copies, EDGE_GROUP);
                for v in lo..hi {
                    edge_copy_warp(model, l, w, origin, source(fill), v, w.lanes)?;
                }
                let (st, next) = if kk + 1 < cfg.bk { (kt, kk + 1) } else { (kt + 1, 0) };
                fragments(model, w, cfg, stage_bytes(st), next)?;
            }
        }
    }
    if kt1 > whole {
        let left = cfg.k_left(whole, l.k);
        for v in 0..copies {
            let inside = |lane| match v < cfg.a_floats() {
                true => cfg.a_copy(t(lane), v).1 < left,
                false => cfg.b_copy(t(lane), v - cfg.a_floats()).0 < left,
            };
            edge_copy_warp(model, l, w, origin, whole, v, lanes_where(w.lanes, inside))?;
        }
        for kk in 0..left {
            fragments(model, w, cfg, 0, kk)?;
        }
    }
    Ok(())
}

/// One warp of `matmul_spread_edge_waves`: its block's tile (at `origin`, of the partial ones
/// counted) over all of k, then its stores, the lanes inside C.
pub(super) fn waves_warp(model: &mut Model, l: &Launched, w: &Warp, origin: (u32, u32)) -> Result<()> {
    let cfg = WARPTILE_ASYNC;
    edge_k_loop_warp(model, l, w, origin, (0, cfg.k_tiles(l.k, true)))?;
    store_c_vectors(model, l, w, cfg, origin, true)?;
    Ok(())
}

/// Counts of `matmul_spread_edge` (stream-K's row over the guarded ring) on schedule `sk`, as
/// `stream_k_counts` replays the whole-tile rows, the partial sums read a float at a time.
pub(super) fn row_counts(model: &mut Model, l: &Launched, launch: &Launch, sk: StreamK) -> Result<()> {
    let cfg = WARPTILE_ASYNC;
    let flags = model.buffer(super::warptile_streamk::FLAGS_ADDRESS);
    for x in 0..sk.wave {
        let mut u = 0;
        while let Some((tile, k0, k1)) = sk.segment(x, u) {
            let (row0, col0) = super::tile_origin(sk, tile)?;
            for w in block_warps(launch, (x, 0)) {
                edge_k_loop_warp(model, l, &w, (row0, col0), (k0, k1))?;
                let first = w.thread(0).0 == 0;
                if k0 > 0 {
                    if first {
                        model.load(flags, 4, 1, |_| 0)?;
                        model.store(flags, 4, 1, |_| 0)?;
                    }
                    let t = |lane| w.thread(lane).0;
                    for i in 0..cfg.tm {
                        let r = |lane| row0 + cfg.out_row(t(lane), i);
                        for q in 0..cfg.tn {
                            let col = |lane| col0 + cfg.out_col(t(lane), q / 4) + q % 4;
                            let on = lanes_where(w.lanes, |lane| r(lane) < l.m && col(lane) < l.n);
                            model
                                .load(l.c, 4, on, |lane| 4 * row_major(r(lane).into(), col(lane).into(), l.n.into()))?;
                        }
                    }
                }
                store_c_vectors(model, l, &w, cfg, (row0, col0), true)?;
                if k1 < sk.iters && first {
                    model.store(flags, 4, 1, |_| 0)?;
                }
            }
            u += 1;
        }
    }
    Ok(())
}

/// Stage 11's replay: its whole waves block by block, each the tile of its linear id (in the
/// kernel's u32 arithmetic) of the schedule that counts partial tiles; its row whole.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: own_tile,
        origin: waves_origin,
        warp: |model, l, cx, w| waves_warp(model, l, w, waves_origin(cx, w.block)?),
    }),
    row: Some(|model, l, launch| row_counts(model, l, launch, StreamK::of(l.m, l.n, l.k, launch.grid.0, true))),
};

/// The tile of block `(bx, by)` of `matmul_spread_edge_waves`.
fn waves_origin(cx: &Cx<'_>, (bx, by): (u32, u32)) -> Result<(u32, u32)> {
    let grid = cx.launch.grid.0;
    tile_origin(StreamK::covering(cx.m, cx.n, cx.k, grid), by.wrapping_mul(grid).wrapping_add(bx))
}
