//! Stage 11, spread_edge (Hopper): spread_streamk for any shape and any 4-byte alignment.
//! B copied a float at a time (24 copies a tile, not 12), no guard in the k loop; same sectors.
//!
//! The host side: stream-K's two launches over the guarded ring, the schedule counting partial
//! tiles ([`StreamK::covering`](coalesce_kernels::matmul::StreamK::covering)).

use super::lesson::{CHECK_SHAPES, EDGE_BENCH_SHAPES, EDGE_EXTRA_SHAPES, Lesson};
use super::{Bounds, Method, Stage, Waves};
use crate::launch::Launch;
use crate::model::matmul::spread_edge::REPLAY;
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
    launch: |_, m, n, sms| launch(m, n, sms),
    replay: REPLAY,
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

/// What the guarded ring's two kernels touch: every tile they take starts inside C, the ring's
/// copies read rows of A clamped and columns of B wrapped at whole k tiles, the partial k tile's
/// copies only below k, and C is read and stored only inside.
mod footprint {
    use crate::matmul::Stage;
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Store, Touch, Walked, ensure, ensure_eq, salt, thread_cells, tile_cells,
        warp_tile_origin,
    };
    use coalesce_kernels::matmul::{SK_MAX_WAVE, StreamK, WARPTILE_ASYNC, WTS_STAGES, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint { launch, block, stores };

    /// Both launches' ring; the row's grid the schedule's, and the tiles and k tiles that
    /// schedule hands out inside it.
    fn launch(_: &Stage, p: &Probe, _: Touch<'_>) -> Walked {
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
    fn block(stage: &Stage, p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let cfg = WARPTILE_ASYNC;
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let mut work = Vec::new();
        if p.linear {
            work.push(((bx, by), warp_tile_origin(stage, p, (bx, by)), (0, cfg.k_tiles(k, true))));
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
    fn stores(stage: &Stage, p: &Probe, (bx, by): (u32, u32), store: Store<'_>) {
        let (m, n, k) = p.dims;
        let mut tile = |origin| {
            for (row, col) in tile_cells(WARPTILE_ASYNC, origin) {
                if row < m && col < n {
                    store(row, col);
                }
            }
        };
        if p.linear {
            tile(warp_tile_origin(stage, p, (bx, by)));
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
