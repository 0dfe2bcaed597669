//! Stage 11, spread_edge (Hopper): spread_streamk for any shape and any 4-byte alignment.
//! B copied a float at a time (24 copies a tile, not 12), no guard in the k loop; same sectors.
//!
//! The host side: stream-K's two launches over the guarded ring, the schedule counting partial
//! tiles ([`StreamK::covering`](coalesce_kernels::matmul::StreamK::covering)).
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{CHECK_SHAPES, EDGE_BENCH_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage, Waves};
use crate::launch::Launch;
use coalesce_kernels::matmul::{WARPTILE_ASYNC, matmul_spread_edge, matmul_spread_edge_waves};

/// Shapes checked for the guarded spread ring's stream-K (on 132 SMs) besides the guarded
/// kernel's: 170 tiles, partial in m, n and k (one whole wave, 38 shared, k 32 whole tiles and 3
/// columns); 64 tiles all shared, k 62 tiles and 8; 4 tiles of k below one step (only the
/// partial k tile, most blocks idle); 66 tiles one column wide at the edge; the first again
/// twice (each launch finds the flags the one before cleared).
const SPREAD_EDGE_SHAPES: [(usize, usize, usize); 6] =
    [(1153, 4097, 515), (1000, 2000, 1000), (130, 300, 7), (4097, 257, 100), (1153, 4097, 515), (1153, 4097, 515)];

/// Stage 11's descriptor: its own blocks over the whole waves (`matmul_spread_edge_waves`), then
/// the shared row (`matmul_spread_edge`), every access guarded.
pub(super) const STAGE: Stage = Stage {
    method: Method::SpreadEdge,
    kernel: matmul_spread_edge,
    waves: Some(Waves { kernel: matmul_spread_edge_waves, blocks_of: Method::SpreadEdge }),
    warp_tile: Some(WARPTILE_ASYNC),
    bounds: Bounds::Guarded,
    block_rows: WARPTILE_ASYNC.bm,
    launch: |_, m, n, _, sms| launch(m, n, sms),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "stream-K over the spread ring for any shape: A rows clamped, B columns wrapped, B copied a float at a time, partial k tile last (sm_90)",
        bench: EDGE_BENCH_SHAPES,
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES, &SPREAD_EDGE_SHAPES],
    },
};

/// The shared row's launch: `spread_streamk`'s (the spread ring's blocks on the row grid, one
/// block a multiprocessor, which partial tiles do not change).
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    super::spread_streamk::launch(m, n, sms)
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
    //! - `matmul_spread_edge_waves`: block `i` (linear id) takes tile `i` of C's tiles counted with
    //!   the partial ones; its `edge_k_loop` replayed copy by copy at the k steps [`spread_copies`]
    //!   names (A one float a copy from its clamped row, B one float from its wrapped column), the
    //!   partial last k tile's copies of the lanes inside k and its `k % 16` steps of fragments,
    //!   then single-float stores of the lanes inside C.
    //! - `matmul_spread_edge`: stream-K's row (`stream_k_counts`) over that loop, a cut tile's
    //!   partial sums read back a float at a time (`ld.global.cg.f32`) before its stores.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::matmul::warptile::replay::{fragments, store_c_vectors};
    use crate::model::matmul::{Blocks, Cx, Launched, Replay, own_tile, tile_origin};
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
    fn edge_k_loop_warp(
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
    fn waves_warp(model: &mut Model, l: &Launched, w: &Warp, origin: (u32, u32)) -> Result<()> {
        let cfg = WARPTILE_ASYNC;
        edge_k_loop_warp(model, l, w, origin, (0, cfg.k_tiles(l.k, true)))?;
        store_c_vectors(model, l, w, cfg, origin, true)?;
        Ok(())
    }

    /// Counts of `matmul_spread_edge` (stream-K's row over the guarded ring) on schedule `sk`, as
    /// `stream_k_counts` replays the whole-tile rows, the partial sums read a float at a time.
    fn row_counts(model: &mut Model, l: &Launched, launch: &Launch, sk: StreamK) -> Result<()> {
        let cfg = WARPTILE_ASYNC;
        let flags = model.buffer(crate::matmul::warptile_streamk::replay::FLAGS_ADDRESS);
        for x in 0..sk.wave {
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(x, u) {
                let (row0, col0) = tile_origin(sk, tile)?;
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
                                model.load(l.c, 4, on, |lane| {
                                    4 * row_major(r(lane).into(), col(lane).into(), l.n.into())
                                })?;
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
}

/// What the guarded ring's two kernels touch: every tile they take starts inside C, the ring's
/// copies read rows of A clamped and columns of B wrapped at whole k tiles, the partial k tile's
/// copies only below k, and C is read and stored only inside.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Store, Touch, Walked, ensure, ensure_eq, salt, thread_cells, tile_cells,
        warp_tile_origin,
    };
    use coalesce_kernels::matmul::{SK_MAX_WAVE, StreamK, WARPTILE_ASYNC, WTS_STAGES, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint { launch, block, stores };

    /// Both launches' ring; the row's grid the schedule's, and the tiles and k tiles that
    /// schedule hands out inside it.
    fn launch(p: &Probe, _: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        ensure_eq!(p.shared_bytes, WARPTILE_ASYNC.ring_bytes(WTS_STAGES));
        if !p.linear {
            // The row reads its wave from its grid: the host's must be the schedule's.
            ensure_eq!(p.grid, StreamK::of(m, n, k, p.sms.clamp(1, SK_MAX_WAVE), true).row_grid());
            ensure!(p.grid.0 <= SK_MAX_WAVE, "one flag a block");
            let sk = StreamK::covering(m, n, k, p.grid.0);
            for x in 0..sk.wave {
                let mut u = 0;
                while let Some((tile, k0, k1)) = sk.segment(x, u) {
                    ensure!(tile < sk.tiles && k0 < k1 && k1 <= sk.iters);
                    u += 1;
                }
            }
        }
        Ok(())
    }

    /// The block's work as the kernels find it, `(block, tile origin, k tiles kt0..kt1)`: a whole
    /// wave's block the tile of its linear id (of the partial ones counted too) and all of k,
    /// partial last k tile included; a block of the row each segment of its schedule. Each at
    /// threads at the warps' edges and one more, the first whole k tile, the last and one
    /// between, and the partial one.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let cfg = WARPTILE_ASYNC;
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let mut work = Vec::new();
        if p.linear {
            work.push(((bx, by), warp_tile_origin(p, (bx, by)), (0, cfg.k_tiles(k, true))));
        } else {
            let sk = StreamK::covering(m, n, k, p.grid.0);
            let mut u = 0;
            while let Some((tile, k0, k1)) = sk.segment(bx, u) {
                work.push(((bx, u), sk.origin(tile).ok_or("a tile past the schedule's")?, (k0, k1)));
                u += 1;
            }
        }
        let bk = cfg.bk;
        let threads = cfg.threads();
        let stage_floats = cfg.stage_floats();
        let whole = k / bk;
        for (block, (row0, col0), (kt0, kt1)) in work {
            // `edge_k_loop`'s safety contract.
            ensure!(row0 < m && col0 < n, "tile at ({row0}, {col0}) starts past C");
            ensure!(kt0 < kt1 && kt1 <= k.div_ceil(bk));
            let r = salt(probe, block);
            let tiles = kt1.min(whole).saturating_sub(kt0);
            let walked = if tiles == 0 { vec![] } else { vec![0, tiles - 1, ((r >> 16) % u64::from(tiles)) as u32] };
            for t in [0, 1, 31, 32, threads - 1, (r % u64::from(threads)) as u32] {
                // The ring's whole k tiles (the copies' sources as the kernel forms them: A's
                // from the range's start, B's per tile): rows of A and columns of B clamped, and
                // no check on k, so every column of A and row of B must be below k.
                for kt in walked.iter().copied() {
                    let st = (kt % WTS_STAGES) * stage_floats;
                    for e in 0..cfg.a_floats() {
                        let at = cfg.a_copy(t, e);
                        ensure!(at.0 < cfg.bm && at.1 < bk);
                        ensure!(4 * (st + cfg.at_offset(at, 0)) < cfg.ring_bytes(WTS_STAGES));
                        let row = u64::from(cfg.a_src_row(row0, at, m, true));
                        let ia = row_major(row, u64::from(kt0 * bk + at.1), k64) + u64::from(kt * bk);
                        touch(Matrix::A, ia, 1)?;
                    }
                    for e in 0..cfg.b_floats() {
                        let at = cfg.b_copy(t, e);
                        ensure!(at.0 < bk && at.1 < cfg.bn);
                        ensure!(4 * (st + cfg.b_offset(at)) < cfg.ring_bytes(WTS_STAGES));
                        let col = u64::from(cfg.b_wrap_col(col0, at, n));
                        touch(Matrix::B, row_major(u64::from((kt0 + kt) * bk + at.0), col, n64), 1)?;
                    }
                }
                // The partial last k tile, into stage 0: only the copies below k.
                if kt1 > whole {
                    let left = cfg.k_left(whole, k);
                    ensure!(0 < left && left < bk);
                    for e in 0..cfg.a_floats() {
                        let at = cfg.a_copy(t, e);
                        if at.1 < left {
                            let row = u64::from(cfg.a_src_row(row0, at, m, true));
                            let ia = row_major(row, u64::from(kt0 * bk + at.1), k64) + u64::from(tiles * bk);
                            touch(Matrix::A, ia, 1)?;
                        }
                    }
                    for e in 0..cfg.b_floats() {
                        let at = cfg.b_copy(t, e);
                        if at.0 < left {
                            let col = u64::from(cfg.b_wrap_col(col0, at, n));
                            touch(Matrix::B, row_major(u64::from((kt0 + tiles) * bk + at.0), col, n64), 1)?;
                        }
                    }
                }
                // Stores (and the row's reads of published sums) float by float inside C.
                for (row, col) in thread_cells(cfg, t, (row0, col0)) {
                    if row < m && col < n {
                        touch(Matrix::C, row_major(row.into(), col.into(), n64), 1)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// A whole wave's block stores its tile; a block of the row the tiles whose last k tile it
    /// computes; each only inside C.
    fn stores(p: &Probe, (bx, by): (u32, u32), store: Store<'_>) {
        let (m, n, k) = p.dims;
        let mut tile = |origin| {
            for (row, col) in tile_cells(WARPTILE_ASYNC, origin) {
                if row < m && col < n {
                    store(row, col);
                }
            }
        };
        if p.linear {
            tile(warp_tile_origin(p, (bx, by)));
            return;
        }
        let sk = StreamK::covering(m, n, k, p.grid.0);
        let mut u = 0;
        while let Some((t, _, k1)) = sk.segment(bx, u) {
            if k1 == sk.iters {
                tile(sk.origin(t).expect("a tile of the schedule"));
            }
            u += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::launches_of;
    use crate::matmul::*;
    use coalesce_kernels::matmul::{matmul_spread_edge, matmul_spread_edge_waves};

    #[test]
    fn spread_edge_counts_partial_tiles_in_its_schedule() {
        let ring = 4 * 16 * (132 + 256) * 4;
        let grids = |(m, n, k): (usize, usize, usize)| {
            launches_of(Method::SpreadEdge, (m, n, k), (m * k, k * n, m * n))
                .unwrap()
                .into_iter()
                .map(|(name, l, _)| (name, l.grid, l.block, l.shared_bytes))
                .collect::<Vec<_>>()
        };
        // 4097² is 33 x 17 = 561 tiles on 132 SMs: 4 whole waves, 33 tiles shared.
        assert_eq!(
            grids((4097, 4097, 4097)),
            [
                (matmul_spread_edge_waves.name(), (132, 4), (256, 1), ring),
                (matmul_spread_edge.name(), (132, 1), (256, 1), ring)
            ]
        );
        // One partial tile: no whole wave, the row shares it.
        assert_eq!(grids((5, 7, 3)), [(matmul_spread_edge.name(), (132, 1), (256, 1), ring)]);
    }
}
