//! Stage 6, warptile: regblock's tile dealt to warps (64 × 32, lanes interleaved), k steps of 16.
//! Fragment loads pair up: 8 wavefronts a warp and k step, not 12; half the barriers per FMA.
//!
//! The host side: the warp-tiled kernels' launch, one for every [`WarpTile`] shape.
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{CHECK_SHAPES, EDGE_BENCH_SHAPES, EDGE_EXTRA_SHAPES, Lesson, SIZES};
use super::{Bench, Bounds, MatmulSig, Method, Stage};
use crate::launch::{Kernel, Launch};
use coalesce_kernels::matmul::{
    WARPTILE, WARPTILE_EDGE, WARPTILE_SMALL, WarpTile, matmul_warptile, matmul_warptile_edge,
    matmul_warptile_edge_sm90, matmul_warptile_sm90, matmul_warptile_small,
};

/// Sizes the small-grid kernel is swept over: where it is chosen, and the next size up.
const SMALL_SIZES: Bench = Bench::Cubes { sweep: &[1024, 2048], check: &[1024] };
/// Shapes checked for the unguarded warp-tiled kernel (multiples of its 128 × 128 × 16 tile).
const WARPTILE_SHAPES: [(usize, usize, usize); 4] =
    [(128, 128, 16), (256, 384, 144), (128, 640, 1008), (512, 512, 512)];
/// Shapes checked for the small-grid warp-tiled kernel (multiples of its 64 × 128 × 16 tile).
const WARPTILE_SMALL_SHAPES: [(usize, usize, usize); 4] =
    [(64, 128, 16), (192, 384, 144), (64, 640, 1008), (512, 512, 512)];

/// A warp-tiled stage of shape `cfg`: its tile, bounds and launch from the one shape, so the
/// three cannot disagree.
const fn stage(method: Method, kernel: Kernel<MatmulSig>, cfg: WarpTile, guarded: bool, lesson: Lesson) -> Stage {
    Stage {
        method,
        kernel,
        waves: None,
        warp_tile: Some(cfg),
        bounds: if guarded { Bounds::Guarded } else { Bounds::tiles_of(cfg) },
        block_rows: cfg.bm,
        launch: |stage, m, n, _, _| launch(stage.warp_tile.expect("built with a shape"), m, n),
        #[cfg(feature = "model")]
        replay: replay::REPLAY,
        #[cfg(feature = "model")]
        footprint: footprint::FOOTPRINT,
        lesson,
    }
}

/// Stage 6's descriptor: 128 × 128 × 16, whole tiles only.
pub(super) const WARPTILE_STAGE: Stage = stage(
    Method::Warptile,
    matmul_warptile,
    WARPTILE,
    false,
    Lesson {
        summary: "warps of 64x32 (lanes 8x4), BK 16, next fragments loaded during the FMAs",
        bench: SIZES,
        checks: &[&WARPTILE_SHAPES],
    },
);

/// Stage 6 built for sm_90.
pub(super) const SM90_STAGE: Stage = stage(
    Method::WarptileSm90,
    matmul_warptile_sm90,
    WARPTILE,
    false,
    Lesson {
        summary: "warptile built for sm_90: next A stored, B loaded at k step 12 of 16 (sm_90)",
        bench: SIZES,
        checks: &[&WARPTILE_SHAPES],
    },
);

/// Stage 6 on 64 × 128 × 16 tiles, for grids smaller than the GPU.
pub(super) const SMALL_STAGE: Stage = stage(
    Method::WarptileSmall,
    matmul_warptile_small,
    WARPTILE_SMALL,
    false,
    Lesson {
        summary: "warptile on 64x128 blocks of 4 warps, for grids smaller than the GPU",
        bench: SMALL_SIZES,
        checks: &[&WARPTILE_SMALL_SHAPES],
    },
);

/// Stage 6 with every access guarded: any shape.
pub(super) const EDGE_STAGE: Stage = stage(
    Method::WarptileEdge,
    matmul_warptile_edge,
    WARPTILE_EDGE,
    true,
    Lesson {
        summary: "warptile with guarded single-float loads: any shape (4095, 4097, 4000x4100x4033, 4096)",
        bench: EDGE_BENCH_SHAPES,
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES],
    },
);

/// The guarded stage 6 built for sm_90, its lanes interleaved as [`WARPTILE`]'s.
pub(super) const EDGE_SM90_STAGE: Stage = stage(
    Method::WarptileEdgeSm90,
    matmul_warptile_edge_sm90,
    WARPTILE,
    true,
    Lesson {
        summary: "warptile_edge built for sm_90 with warptile's interleaved lanes: fragment loads pair up (sm_90)",
        bench: EDGE_BENCH_SHAPES,
        checks: &[&CHECK_SHAPES, &EDGE_EXTRA_SHAPES],
    },
);

/// `cfg.grid(m, n)`: exact for the unguarded kernels (whole tiles), partial tiles included for
/// the guarded one; `cfg.threads()` threads and two shared stages a block.
pub(super) const fn launch(cfg: WarpTile, m: u32, n: u32) -> Launch {
    Launch { grid: cfg.grid(m, n), block: (cfg.threads(), 1), shared_bytes: cfg.shared_bytes(), cluster: 1 }
}

#[cfg(feature = "model")]
pub(super) mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90):
    //! - `matmul_warptile` / `matmul_warptile_small` (`WarpTile`, `NA = a_vectors()`, `NB =
    //!   b_vectors()`: 2 and 2, 2 and 4): before the k loop one `LDG.E.128` per A vector and per B
    //!   vector of tile 0, four `STS` per A vector (Aᵀ, `at_offset`) and one `STS.128` per B vector
    //!   (`b_offset`) into stage 0. Per k tile (none branched around): the same loads of the next
    //!   tile (the last tile loads itself again, `next_kt`) and the same stores into the other stage,
    //!   and `bk` = 16 steps of `tm / 4 + tn / 4` = 4 `LDS.128` fragments (`a_frag`, `b_frag`).
    //!   LLVM rotates the loop so each trip starts with its own step-0 fragments, and drops the last
    //!   trip's load of the next stage's, whose result is dead: 64 `LDS.128` a tile, none outside.
    //!   Then `tm · tn / 4` = 16 `STG.E.128` (`out_row`, `out_col`). The lane bits alternate
    //!   between lane row and column (`WarpTile::lane_coords`), so an A fragment's lanes pair up on
    //!   `l ^ 2` (same lane row) and a B fragment's on `l ^ 1` (same lane column): 2 wavefronts each.
    //! - `matmul_warptile_edge`: `matmul_warptile`'s shared accesses, with 4-byte loads: four
    //!   `LDG.E` per A vector (`a_index` + 0..4, rows clamped by `a_src_row`) and per B vector
    //!   (`b_row_start` + `b_src_col` of columns 0..4, clamped); on the partial last k tile only the
    //!   A floats with column `< k_left` and the B vectors with row `< k_left` load (predicated). The
    //!   outputs are 64 `STG.E` (4 a vector) under `r < m && col + j < n`.
    //! - `matmul_warptile_edge_sm90`: `matmul_warptile_edge`'s global accesses with
    //!   `matmul_warptile`'s lanes (interleaved, so its fragment loads pair up as that kernel's do).

    use crate::error::Result;
    use crate::model::matmul::{Blocks, Launched, Replay, own_tile};
    use crate::model::{Counts, Model, Warp, lanes_where};
    use coalesce_kernels::matmul::{WarpTile, row_major};

    /// One warp of a warp-tiled kernel of shape `cfg`; `edge` for the guarded one.
    fn warptile_warp(model: &mut Model, l: &Launched, w: &Warp, cfg: WarpTile, edge: bool) -> Result<()> {
        let origin = cfg.block_origin(w.block.0, w.block.1);
        warptile_k_loop(model, l, w, (cfg, edge, false), origin, 0..cfg.k_tiles(l.k, edge))?;
        store_c_vectors(model, l, w, cfg, origin, edge)
    }

    /// One warp's k loop of a warp-tiled kernel of shape `cfg` (`edge`: guarded; `vectors`: its
    /// whole k tiles read as 16-byte vectors where the rows allow, as split-K's do) over k tiles
    /// `range` of the tile at `(row0, col0)`: everything but its stores of C.
    pub(crate) fn warptile_k_loop(
        model: &mut Model,
        l: &Launched,
        w: &Warp,
        (cfg, edge, vectors): (WarpTile, bool, bool),
        (row0, col0): (u32, u32),
        range: std::ops::Range<u32>,
    ) -> Result<()> {
        let t = |lane| w.thread(lane).0;
        let (m, n, k) = (l.m, l.n, l.k);
        let tiles = cfg.k_tiles(k, edge);
        let (first, end) = (range.start, range.end);
        // Only the guarded kernel's last tile can be partial.
        let partial = edge && !k.is_multiple_of(cfg.bk);
        let (a_vectors, b_vectors) = (cfg.a_vectors(), cfg.b_vectors());
        // Element where lane's A vector `v` starts in tile `kt` (`a_row` of the kernel, then `a_index`).
        let a_at = |lane, v, kt| {
            let at = cfg.a_load(t(lane), v);
            cfg.a_index(u64::from(cfg.a_src_row(row0, at, m, edge)) * u64::from(k), kt, at)
        };
        // Element of column j of lane's B vector `v` in tile `kt` (columns from the thread's first
        // vector, as the kernel's `b_col`).
        let b_at = |lane, v, kt, j| {
            let col = cfg.b_src_col(col0, cfg.b_load(t(lane), 0), j, n, edge);
            cfg.b_row_start(kt, cfg.b_load(t(lane), v), n.into()) + u64::from(col)
        };
        let load = |model: &mut Model, kt: u32| -> Result<()> {
            let (tail, left) = (partial && kt + 1 == tiles, cfg.k_left(kt, k));
            for v in 0..a_vectors {
                if !edge || (vectors && !tail) {
                    model.load(l.a, 16, w.lanes, |lane| 4 * a_at(lane, v, kt))?;
                    continue;
                }
                for j in 0..4 {
                    let on =
                        if tail { lanes_where(w.lanes, |lane| cfg.a_load(t(lane), v).1 + j < left) } else { w.lanes };
                    model.load(l.a, 4, on, |lane| 4 * (a_at(lane, v, kt) + u64::from(j)))?;
                }
            }
            for v in 0..b_vectors {
                if !edge {
                    model.load(l.b, 16, w.lanes, |lane| 4 * b_at(lane, v, kt, 0))?;
                    continue;
                }
                // Split-K's lanes whose 4 columns are inside n (none clamped) read a vector.
                let whole = if vectors && !tail {
                    lanes_where(w.lanes, |lane| b_at(lane, v, kt, 3) == b_at(lane, v, kt, 0) + 3)
                } else {
                    0
                };
                if whole != 0 {
                    model.load(l.b, 16, whole, |lane| 4 * b_at(lane, v, kt, 0))?;
                }
                let rest = w.lanes & !whole;
                if rest == 0 {
                    continue;
                }
                let on = if tail { lanes_where(rest, |lane| cfg.b_load(t(lane), v).0 < left) } else { rest };
                for j in 0..4 {
                    model.load(l.b, 4, on, |lane| 4 * b_at(lane, v, kt, j))?;
                }
            }
            Ok(())
        };
        let stage_bytes = |st: u32| 4 * st * cfg.stage_floats();
        let store = |model: &mut Model, st: u32| -> Result<()> {
            for v in 0..a_vectors {
                for j in 0..4 {
                    model.shared_store(4, w.lanes, |lane| {
                        stage_bytes(st) + 4 * cfg.at_offset(cfg.a_load(t(lane), v), j)
                    })?;
                }
            }
            for v in 0..b_vectors {
                model.shared_store(16, w.lanes, |lane| stage_bytes(st) + 4 * cfg.b_offset(cfg.b_load(t(lane), v)))?;
            }
            Ok(())
        };
        load(model, first)?;
        store(model, 0)?;
        for kt in range {
            let st = (kt - first) % 2;
            // The last tile loads (and stores into the unused stage) itself again.
            load(model, if kt + 1 < end { kt + 1 } else { kt })?;
            for kk in 0..cfg.bk {
                fragments(model, w, cfg, stage_bytes(st), kk)?;
            }
            store(model, 1 - st)?;
        }
        Ok(())
    }

    /// A warp-tiled kernel's fragment loads of k step `kk` from the stage at `stage` bytes: `tm / 4`
    /// 16-byte loads of Aᵀ, then `tn / 4` of B.
    ///
    /// The loads' addresses depend on the warp's place in its block, the stage and the step, never
    /// on the block or the k tile, and shared loads reach no L2: each distinct case is counted once
    /// and its counts added again (a 4096³ stream-K replay makes millions of identical ones).
    pub(crate) fn fragments(model: &mut Model, w: &Warp, cfg: WarpTile, stage: u32, kk: u32) -> Result<()> {
        let key = FragmentCase { cfg, warp: (w.index, w.lanes, w.block_dim), stage, kk };
        if let Some(counts) = FRAGMENTS.with(|cases| cases.borrow().get(&key).copied()) {
            return model.add(&counts);
        }
        let mut one = Model::instructions_only();
        let t = |lane| w.thread(lane).0;
        for g in 0..cfg.tm / 4 {
            one.shared_load(16, w.lanes, |lane| stage + 4 * cfg.a_frag(kk, t(lane), g))?;
        }
        for h in 0..cfg.tn / 4 {
            one.shared_load(16, w.lanes, |lane| stage + 4 * cfg.b_frag(kk, t(lane), h))?;
        }
        let counts = one.counts();
        FRAGMENTS.with(|cases| {
            let mut cases = cases.borrow_mut();
            // A bound on the memo: a few thousand cases a replay, cleared past it.
            if cases.len() >= 1 << 16 {
                cases.clear();
            }
            cases.insert(key, counts);
        });
        model.add(&counts)
    }

    /// What a warp's fragment loads depend on: the tile's shape, the warp's place and lanes, the
    /// stage's offset and the k step.
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    struct FragmentCase {
        cfg: WarpTile,
        warp: (u32, u32, (u32, u32)),
        stage: u32,
        kk: u32,
    }

    thread_local! {
        static FRAGMENTS: std::cell::RefCell<std::collections::HashMap<FragmentCase, Counts>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }

    /// A warp-tiled kernel's C: a 16-byte store per 4 accumulators, or with `edge` 4 single floats
    /// each, of the lanes whose float lies inside C.
    pub(crate) fn store_c_vectors(
        model: &mut Model,
        l: &Launched,
        w: &Warp,
        cfg: WarpTile,
        (row0, col0): (u32, u32),
        edge: bool,
    ) -> Result<()> {
        let t = |lane| w.thread(lane).0;
        let (m, n) = (l.m, l.n);
        for i in 0..cfg.tm {
            let r = |lane| row0 + cfg.out_row(t(lane), i);
            for h in 0..cfg.tn / 4 {
                let col = |lane| col0 + cfg.out_col(t(lane), h);
                if !edge {
                    model.store(l.c, 16, w.lanes, |lane| 4 * row_major(r(lane).into(), col(lane).into(), n.into()))?;
                    continue;
                }
                for j in 0..4 {
                    let on = lanes_where(w.lanes, |lane| r(lane) < m && col(lane) + j < n);
                    model.store(l.c, 4, on, |lane| 4 * row_major(r(lane).into(), (col(lane) + j).into(), n.into()))?;
                }
            }
        }
        Ok(())
    }

    /// The replay of every stage 6 build (`warptile`, `_sm90`, `_small`, `_edge`, `_edge_sm90`): a
    /// block a tile of the stage's own shape, its warps guarded where the stage is.
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: own_tile,
            origin: |cx, (bx, by)| Ok(cx.tile().block_origin(bx, by)),
            warp: |model, l, cx, w| warptile_warp(model, l, w, cx.tile(), cx.guarded),
        }),
        row: None,
    };
}

/// What the warp-tiled kernels' threads touch (`warptile_async`'s and `warptile_spread`'s too,
/// through their rings): the unguarded ones exactly the band's tiles in aligned vectors, the
/// guarded one its rows and columns clamped and k checked.
#[cfg(feature = "model")]
pub(super) mod footprint {
    use crate::matmul::footprint::{
        Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, salt, tile_cells, warp_tile_origin,
    };
    use coalesce_kernels::matmul::{WarpTile, row_major};

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch,
        block: |p, block, probe, touch| ring_block(p, block, probe, touch, None),
        stores: |p, block, store| {
            let (m, n, _) = p.dims;
            let edge = p.guarded;
            for (row, col) in tile_cells(p.warp_tile.expect("a warp-tiled stage"), warp_tile_origin(p, block)) {
                if !edge || (row < m && col < n) {
                    store(row, col);
                }
            }
        },
    };

    /// The guarded kernel's grid covers the band; stream-K's whole waves are the band's first
    /// tiles; the others' grids are exactly its tiles, from aligned buffers.
    fn launch(p: &Probe, _: Touch<'_>) -> Walked {
        let cfg = p.warp_tile.expect("a warp-tiled stage");
        let (m, n, _) = p.dims;
        if p.guarded {
            ensure_eq!(p.grid, (n.div_ceil(cfg.bn), m.div_ceil(cfg.bm)));
        } else if p.linear {
            // The first `waves * wave` tiles, fewer than the band's.
            ensure!(p.grid.0 * p.grid.1 <= (m / cfg.bm) * (n / cfg.bn));
        } else {
            // No guards: the grid is exactly the band's tiles and every vector is aligned.
            ensure_eq!((p.grid.0 * cfg.bn, p.grid.1 * cfg.bm), (n, m));
            for address in [p.addresses.0, p.addresses.1, p.addresses.2] {
                ensure_eq!(address % 16, 0);
            }
        }
        Ok(())
    }

    /// Threads at the warps' edges and one more, each at the first k tile, the last and one
    /// between: A's vectors (or with a `cp.async` ring of `ring` stages, A's floats into their
    /// transposed places in it), B's vectors, then the thread's outputs.
    pub(crate) fn ring_block(
        p: &Probe,
        (bx, by): (u32, u32),
        probe: u64,
        touch: Touch<'_>,
        ring: Option<u32>,
    ) -> Walked {
        let cfg = p.warp_tile.expect("a warp-tiled stage");
        let edge = p.guarded;
        let (m, n, k) = p.dims;
        let n64 = u64::from(n);
        let tiles = cfg.k_tiles(k, edge);
        let threads = cfg.threads();
        let r = salt(probe, (bx, by));
        let (row0, col0) = warp_tile_origin(p, (bx, by));
        for t in [0, 1, 31, 32, threads - 1, (r % u64::from(threads)) as u32] {
            for kt in [0, tiles - 1, ((r >> 16) % u64::from(tiles)) as u32] {
                thread_k_tile(cfg, (edge, ring), p.dims, t, (row0, col0), kt, touch)?;
            }
            for i in 0..cfg.tm {
                for h in 0..cfg.tn / 4 {
                    let (row, col) = (row0 + cfg.out_row(t, i), col0 + cfg.out_col(t, h));
                    for j in 0..4 {
                        if !edge || (row < m && col + j < n) {
                            touch(Matrix::C, row_major(row.into(), (col + j).into(), n64), 1)?;
                        }
                    }
                    if !edge {
                        ensure!(row_major(row.into(), col.into(), n64).is_multiple_of(4));
                    }
                }
            }
        }
        Ok(())
    }

    /// What thread `t` of a warp-tiled block at `(row0, col0)` loads of k tile `kt` (guarded
    /// with `edge`): A's vectors, or with a `cp.async` ring of `ring` stages A's floats into their
    /// transposed places in it, then B's vectors. Shared by the stages that walk such tiles
    /// (stage 14's split-K ranges among them).
    pub(crate) fn thread_k_tile(
        cfg: WarpTile,
        (edge, ring): (bool, Option<u32>),
        (m, n, k): (u32, u32, u32),
        t: u32,
        (row0, col0): (u32, u32),
        kt: u32,
        touch: Touch<'_>,
    ) -> Walked {
        let (n64, k64) = (u64::from(n), u64::from(k));
        let kt64 = u64::from(kt) * u64::from(cfg.bk);
        // The cp.async kernels copy A one float at a time, each into its transposed
        // place in the ring.
        if let Some(stages) = ring {
            for e in 0..cfg.a_floats() {
                let (row, col) = cfg.a_copy(t, e);
                ensure!(row < cfg.bm && col < cfg.bk);
                let at = (stages - 1) * cfg.stage_floats() + cfg.at_offset((row, col), 0);
                ensure!(4 * at < cfg.ring_bytes(stages));
                touch(Matrix::A, row_major((row0 + row).into(), kt64 + u64::from(col), k64), 1)?;
            }
        }
        // A: vector v, elements j, read where the kernel reads them (the guarded kernel
        // skips k past the end).
        for v in 0..if ring.is_some() { 0 } else { cfg.a_vectors() } {
            let at = cfg.a_load(t, v);
            let row = u64::from(cfg.a_src_row(row0, at, m, edge));
            for j in 0..4u64 {
                let kc = kt64 + u64::from(at.1) + j;
                if !edge || kc < k64 {
                    touch(Matrix::A, row_major(row, kc, k64), 1)?;
                }
            }
            if !edge {
                ensure!(row_major(row, kt64 + u64::from(at.1), k64).is_multiple_of(4), "16-byte A vectors");
            }
        }
        for v in 0..cfg.b_vectors() {
            let bt = cfg.b_load(t, v);
            let kr = kt64 + u64::from(bt.0);
            if edge && kr >= k64 {
                continue;
            }
            for j in 0..4 {
                let col = cfg.b_src_col(col0, bt, j, n, edge);
                touch(Matrix::B, row_major(kr, col.into(), n64), 1)?;
            }
            if !edge {
                ensure!(row_major(kr, u64::from(col0 + bt.1), n64).is_multiple_of(4));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::buffer::DeviceViewMut;
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn warp_tiled_plans_a_block_a_tile() {
        let (l, _) = plan_of(Method::Warptile, (256, 384, 32), (256 * 32, 32 * 384, 256 * 384)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (256, 1), 2 * 16 * (132 + 128) * 4));
        let (l, _) = plan_of(Method::WarptileSmall, (256, 384, 32), (256 * 32, 32 * 384, 256 * 384)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 4), (128, 1), 2 * 16 * (68 + 128) * 4));
        let (l, _) = plan_of(Method::WarptileEdge, (33, 129, 7), (231, 903, 33 * 129)).unwrap();
        assert_eq!((l.grid, l.block), ((2, 1), (256, 1)));
    }

    #[test]
    fn warp_tiled_plan_checks_alignment() {
        let plan = |method, a, b, c: &mut _, shape| plan(method, a, b, c, shape, 132, |_| Ok(()));
        // SAFETY: descriptors only.
        let (a, b, mut c) = unsafe {
            (
                DeviceViewMut::<f32>::stand_in(0x1000, 128 * 16),
                DeviceViewMut::<f32>::stand_in(0x2004, 16 * 128),
                DeviceViewMut::<f32>::stand_in(0x4000, 128 * 128),
            )
        };
        let err = plan(Method::Warptile, &a, &b, &mut c, (128, 128, 16)).unwrap_err();
        assert_eq!(err, Error::Misaligned { what: "matmul B", address: 0x2004, align: 16 });
        assert_eq!(choose(&a, &b, &c, (128, 128, 16), 132, false), Method::WarptileEdge);
    }
}
