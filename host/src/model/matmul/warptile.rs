//! Stage 6, warptile: regblock's tile dealt to warps (64 × 32, lanes interleaved), k steps of 16.
//! Fragment loads pair up: 8 wavefronts a warp and k step, not 12; half the barriers per FMA.
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
//!

use super::{Blocks, Launched, Replay, own_tile};
use crate::error::Result;
use crate::model::{Counts, Model, Warp, lanes_where};
use coalesce_kernels::matmul::{WarpTile, row_major};

/// One warp of a warp-tiled kernel of shape `cfg`; `edge` for the guarded one.
pub(super) fn warptile_warp(model: &mut Model, l: &Launched, w: &Warp, cfg: WarpTile, edge: bool) -> Result<()> {
    let origin = cfg.block_origin(w.block.0, w.block.1);
    warptile_k_loop(model, l, w, (cfg, edge, false), origin, 0..cfg.k_tiles(l.k, edge))?;
    store_c_vectors(model, l, w, cfg, origin, edge)
}

/// One warp's k loop of a warp-tiled kernel of shape `cfg` (`edge`: guarded; `vectors`: its
/// whole k tiles read as 16-byte vectors where the rows allow, as split-K's do) over k tiles
/// `range` of the tile at `(row0, col0)`: everything but its stores of C.
pub(super) fn warptile_k_loop(
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
                let on = if tail { lanes_where(w.lanes, |lane| cfg.a_load(t(lane), v).1 + j < left) } else { w.lanes };
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
                model
                    .shared_store(4, w.lanes, |lane| stage_bytes(st) + 4 * cfg.at_offset(cfg.a_load(t(lane), v), j))?;
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
pub(super) fn fragments(model: &mut Model, w: &Warp, cfg: WarpTile, stage: u32, kk: u32) -> Result<()> {
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
pub(super) fn store_c_vectors(
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
        warp: |model, l, cx, w| warptile_warp(model, l, w, cx.tile(), !cx.stage.method.whole_tiles_only()),
    }),
    row: None,
};
