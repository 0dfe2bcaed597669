//! Replays of the matrix multiplies in `kernels-gpu/src/matmul.rs`.
//!
//! SASS (sm_90; `matmul_cp_async` from the Hopper module, the rest from the main one):
//! - `matmul_naive`: per k step one 4-byte `LDG.E` of A (the warp's 32 lanes share a row: one
//!   address) and one of B (32 consecutive columns), unrolled but never widened; one `STG.E`.
//! - `matmul_tiled` / `matmul_prefetch`: per tile one `LDG.E` of A and one of B under `at`'s
//!   bounds check, an `STS` of each into its tile (unconditional), and the inner product over the
//!   tile as 8 trips of one `LDS.128` of A's tile row (ptxas merges the PTX's four
//!   `ld.shared.b32` of `tile_offset(ty, i .. i + 4)`, 16-byte aligned since `i % 4 == 0`, into
//!   one; all lanes share `ty`, so one address) and four `LDS` of B's tile column; one `STG.E`.
//!   The prefetching kernel issues the same loads in another order.
//! - `matmul_cp_async`: per tile, in the 16-byte path (`mm_vectors`), one
//!   `LDGSTS.E.BYPASS.128` by each of the first 16 warps (warps 0-7 a vector of A's tile, 8-15
//!   of B's: `mm_vector_of`), none by the other 16; else two 4-byte `LDGSTS.E` by every warp (A,
//!   then B). Out-of-bounds lanes copy 0 bytes (the zero-fill operand); the model takes them as
//!   inactive lanes, no sector and no request where none copies (not measured: no launch at a
//!   benchmark size has such lanes). The inner product is a rolled loop of 8 trips, each two
//!   `LDS.64` of A's tile row (`tile_offset(ty, i)`, `i + 2`: one address a warp) and four `LDS`
//!   of B's tile column; one `STG.E` under `row < m && col < n`. Counted as Nsight Compute
//!   counts them on the H100: an `LDGSTS` is a global load (`..._op_ld` requests and sectors)
//!   and its write to shared memory is not a shared store.
//! - `matmul_regblock`: per k tile one `LDG.E.128` of A and one of B (the next stage's, except
//!   for the last tile; the first stage's before the loop), four `STS` of the A vector into Aᵀ
//!   and one `STS.128` of the B vector, 8 steps of four `LDS.128` (two A, two B fragments), and
//!   16 `STG.E.128` of the outputs.
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
//! Uniformity: a 4096³ multiply is 10^11 lane accesses, so each launch is replayed one block
//! per *class* and the class's count multiplied by its number of blocks. A block's global
//! addresses are its origin's plus offsets that do not depend on the block, and its shared
//! addresses do not depend on the block at all; so two blocks with the same number of valid
//! rows and columns (the guards, and the clamps of the guarded warp-tiled kernel, which clamp to
//! the block's last valid row or column) and the same origin offsets modulo a sector (the
//! alignment) make the same requests, sectors and wavefronts. The class key is exactly that.
//! The DRAM footprint is worked out apart: every thread with a valid `(row, col)` reads row
//! `row` of A and column `col` of B over all of k and writes `C(row, col)`, so the footprint is
//! the covered rows of A, the covered columns of B and their product in C (the warp-tiled
//! kernels' vectors and the clamped rows and columns read inside those too).
use crate::buffer::DeviceViewMut;
use std::collections::BTreeMap;

use super::{Buffer, Counts, Model, Warp, block_warps, blocks, fake_slice, lanes_where};
use crate::error::Result;
use crate::launch::{Call, Launch};
use crate::matmul::{
    BK, BM, BN, MatmulSig, Method, NAIVE_BLOCK, RB_B_OFFSET_V4, RB_STAGE_V4, StreamK, TILE, TM, WARPTILE_ASYNC,
    WTA_STAGES, WarpTile, matmul_warptile_streamk_waves, mm_a_slot, mm_b_slot, mm_vector_bytes, mm_vector_of,
    mm_vectors, naive_coords, plan, rb_a_frag, rb_a_index, rb_a_load, rb_at_offset, rb_b_frag, rb_b_index, rb_b_load,
    rb_b_offset, rb_block_origin, rb_out_col, rb_out_row, rb_thread, row_major, tile_a_col, tile_b_row, tile_offset,
    tiled_coords,
};

/// Floats in a sector.
const SECTOR_FLOATS: u64 = super::SECTOR_BYTES / 4;

/// The buffers and sizes of one launch.
struct Launched {
    a: Buffer,
    b: Buffer,
    c: Buffer,
    m: u32,
    n: u32,
    k: u32,
}

/// Counts of a planned matmul launch.
pub fn matmul(call: &Call<'_, MatmulSig>) -> Counts {
    let launch = call.launch();
    let &(a, b, ref c, m, n, k) = call.args();
    let kernel = call.kernel();
    // Stream-K's whole waves are the async kernel, its tiles found by linear block id.
    let linear = kernel == matmul_warptile_streamk_waves;
    let method = if linear {
        Method::WarpTileAsync
    } else {
        Method::ALL.into_iter().find(|method| method.kernel() == kernel).expect("a matmul kernel")
    };
    let mut model = Model::new();
    let l =
        Launched { a: model.buffer(a.address()), b: model.buffer(b.address()), c: model.buffer(c.address()), m, n, k };
    if method == Method::WarpTileStreamK {
        let sk = StreamK::new(m, n, k, launch.grid.0);
        stream_k_counts(&mut model, &l, &launch, sk);
        // The row covers the shared tiles (fewer than its blocks).
        let origin = |(x, _): (u32, u32)| sk.origin(sk.waves * sk.wave + x % sk.sk_tiles().max(1));
        footprint(&mut model, &l, &launch, origin, (WARPTILE_ASYNC.bm, WARPTILE_ASYNC.bn));
        return model.counts();
    }
    // Origin `(row, col)` of a block and how many of its rows and columns are inside C.
    let (block_rows, block_cols) = match method {
        Method::Naive => (NAIVE_BLOCK.1, NAIVE_BLOCK.0),
        Method::RegisterBlocked => (BM, BN),
        Method::WarpTile
        | Method::WarpTileSm90
        | Method::WarpTileAsync
        | Method::WarpTileStreamK
        | Method::WarpTileSmall
        | Method::WarpTileEdge
        | Method::WarpTileEdgeSm90 => {
            let cfg = warp_tile(method);
            (cfg.bm, cfg.bn)
        }
        Method::Tiled | Method::Prefetch | Method::CpAsync => (TILE, TILE),
    };
    let origin = |(bx, by): (u32, u32)| match method {
        Method::Naive => naive_coords(bx, by, 0, 0),
        Method::RegisterBlocked => rb_block_origin(bx, by),
        Method::WarpTileAsync => async_origin(&launch, n, (bx, by), linear),
        Method::WarpTile
        | Method::WarpTileSm90
        | Method::WarpTileStreamK
        | Method::WarpTileSmall
        | Method::WarpTileEdge
        | Method::WarpTileEdgeSm90 => warp_tile(method).block_origin(bx, by),
        Method::Tiled | Method::Prefetch | Method::CpAsync => tiled_coords(bx, by, 0, 0),
    };
    // The cp.async kernel's copy width: the same for every block.
    let vectors = mm_vectors(n, k, a.address(), b.address());
    let residue = |x: u64| x % SECTOR_FLOATS;
    let key = |block: (u32, u32)| {
        let (r0, c0) = origin(block);
        let rows = m.min(r0.saturating_add(block_rows)).saturating_sub(r0);
        let cols = n.min(c0.saturating_add(block_cols)).saturating_sub(c0);
        let (r0, c0) = (u64::from(r0), u64::from(c0));
        (rows, cols, residue(row_major(r0, 0, k.into())), residue(c0), residue(row_major(r0, c0, n.into())))
    };
    let mut classes: BTreeMap<_, ((u32, u32), u64)> = BTreeMap::new();
    for block in blocks(&launch) {
        classes.entry(key(block)).or_insert((block, 0)).1 += 1;
    }
    for (block, count) in classes.into_values() {
        let mut one = Model::instructions_only();
        let lb =
            Launched { a: one.buffer(a.address()), b: one.buffer(b.address()), c: one.buffer(c.address()), m, n, k };
        for w in block_warps(&launch, block) {
            match method {
                Method::Naive => naive_warp(&mut one, &lb, &w),
                Method::RegisterBlocked => regblock_warp(&mut one, &lb, &launch, &w),
                Method::CpAsync => cp_async_warp(&mut one, &lb, &w, vectors),
                Method::WarpTile
                | Method::WarpTileSm90
                | Method::WarpTileSmall
                | Method::WarpTileEdge
                | Method::WarpTileEdgeSm90 => {
                    // Guarded: the warp-tiled kernels that do not need whole tiles.
                    warptile_warp(&mut one, &lb, &w, warp_tile(method), !method.whole_tiles_only())
                }
                Method::WarpTileAsync => {
                    warptile_async_warp(&mut one, &lb, &w, async_origin(&launch, n, w.block, linear), WTA_STAGES)
                }
                Method::WarpTileStreamK => unreachable!("counted by stream_k_counts above"),
                Method::Tiled | Method::Prefetch => tiled_warp(&mut one, &lb, &w),
            }
        }
        model.add(&one.counts().repeated(count));
    }
    footprint(&mut model, &l, &launch, origin, (block_rows, block_cols));
    model.counts()
}

/// The shape of a warp-tiled method.
fn warp_tile(method: Method) -> WarpTile {
    method.warp_tile().expect("a warp-tiled method")
}

/// Marks the DRAM footprint (see the module docs): covered rows and columns, from the blocks'
/// origins and sizes clipped to C.
fn footprint(
    model: &mut Model,
    l: &Launched,
    launch: &Launch,
    origin: impl Fn((u32, u32)) -> (u32, u32),
    (block_rows, block_cols): (u32, u32),
) {
    let (n, k) = (u64::from(l.n), u64::from(l.k));
    let mut rows = vec![false; l.m as usize];
    let mut cols = vec![false; l.n as usize];
    for block in blocks(launch) {
        let (r0, c0) = origin(block);
        for r in r0..l.m.min(r0.saturating_add(block_rows)) {
            rows[r as usize] = true;
        }
        for c in c0..l.n.min(c0.saturating_add(block_cols)) {
            cols[c as usize] = true;
        }
    }
    let runs = |covered: &[bool]| {
        let mut out = Vec::new();
        let mut start = None;
        for (i, &on) in covered.iter().chain([false].iter()).enumerate() {
            match (on, start) {
                (true, None) => start = Some(i as u64),
                (false, Some(s)) => {
                    out.push((s, i as u64 - s));
                    start = None;
                }
                _ => {}
            }
        }
        out
    };
    let (row_runs, col_runs) = (runs(&rows), runs(&cols));
    for &(r, len) in &row_runs {
        model.footprint_read(l.a, 4 * row_major(r, 0, k), 4 * len * k);
        for rr in r..r + len {
            for &(c, width) in &col_runs {
                model.footprint_write(l.c, 4 * row_major(rr, c, n), 4 * width);
            }
        }
    }
    if !row_runs.is_empty() {
        for i in 0..k {
            for &(c, width) in &col_runs {
                model.footprint_read(l.b, 4 * row_major(i, c, n), 4 * width);
            }
        }
    }
}

/// The one-output-a-thread kernels' 4-byte `STG.E` of C: the lanes whose `rc(lane)` (row, col)
/// lies inside C store it.
fn store_c(model: &mut Model, l: &Launched, w: &Warp, rc: impl Fn(u32) -> (u32, u32)) {
    let inside = |lane| {
        let (r, c) = rc(lane);
        r < l.m && c < l.n
    };
    model.store(l.c, 4, lanes_where(w.lanes, inside), |lane| {
        let (r, c) = rc(lane);
        4 * row_major(r.into(), c.into(), l.n.into())
    });
}

fn naive_warp(model: &mut Model, l: &Launched, w: &Warp) {
    let rc = |lane| {
        let (tx, ty) = w.thread(lane);
        naive_coords(w.block.0, w.block.1, tx, ty)
    };
    let active = lanes_where(w.lanes, |lane| {
        let (r, c) = rc(lane);
        r < l.m && c < l.n
    });
    let (n, k) = (u64::from(l.n), u64::from(l.k));
    for i in 0..k {
        model.load(l.a, 4, active, |lane| 4 * row_major(rc(lane).0.into(), i, k));
        model.load(l.b, 4, active, |lane| 4 * row_major(i, rc(lane).1.into(), n));
    }
    store_c(model, l, w, rc);
}

fn tiled_warp(model: &mut Model, l: &Launched, w: &Warp) {
    let t = |lane| w.thread(lane);
    let rc = |lane| {
        let (tx, ty) = t(lane);
        tiled_coords(w.block.0, w.block.1, tx, ty)
    };
    let (m, n, k) = (l.m, l.n, l.k);
    let b_tile = TILE * TILE * 4;
    for tile in 0..k.div_ceil(TILE) {
        // `at(a, row, tile_a_col(t, tx), m, k)` and `at(b, tile_b_row(t, ty), col, k, n)`.
        let a_at = |lane| (rc(lane).0, tile_a_col(tile, t(lane).0));
        let b_at = |lane| (tile_b_row(tile, t(lane).1), rc(lane).1);
        let a_on = lanes_where(w.lanes, |lane| a_at(lane).0 < m && a_at(lane).1 < k);
        let b_on = lanes_where(w.lanes, |lane| b_at(lane).0 < k && b_at(lane).1 < n);
        model.load(l.a, 4, a_on, |lane| 4 * row_major(a_at(lane).0.into(), a_at(lane).1.into(), k.into()));
        model.load(l.b, 4, b_on, |lane| 4 * row_major(b_at(lane).0.into(), b_at(lane).1.into(), n.into()));
        let here = |lane| {
            let (tx, ty) = t(lane);
            4 * tile_offset(ty, tx)
        };
        model.shared_store(4, w.lanes, here);
        model.shared_store(4, w.lanes, |lane| b_tile + here(lane));
        for i in (0..TILE).step_by(4) {
            model.shared_load(16, w.lanes, |lane| 4 * tile_offset(t(lane).1, i));
            for q in i..i + 4 {
                model.shared_load(4, w.lanes, |lane| b_tile + 4 * tile_offset(q, t(lane).0));
            }
        }
    }
    store_c(model, l, w, rc);
}

fn regblock_warp(model: &mut Model, l: &Launched, launch: &Launch, w: &Warp) {
    debug_assert_eq!(launch.block.1, 1);
    let t = |lane| w.thread(lane).0;
    let (row0, col0) = rb_block_origin(w.block.0, w.block.1);
    let (n, k) = (l.n, l.k);
    let load = |model: &mut Model, kt: u32| {
        model.load(l.a, 16, w.lanes, |lane| 4 * rb_a_index(row0, rb_a_load(t(lane)), kt, k));
        model.load(l.b, 16, w.lanes, |lane| 4 * rb_b_index(col0, rb_b_load(t(lane)), kt, n));
    };
    // Byte addresses in shared memory: stage `s` starts at `s * RB_STAGE_V4` vectors, its B part
    // `RB_B_OFFSET_V4` vectors further.
    let stage_bytes = |s: u32| 16 * s * RB_STAGE_V4;
    let store = |model: &mut Model, s: u32| {
        for i in 0..4 {
            model.shared_store(4, w.lanes, |lane| stage_bytes(s) + 4 * rb_at_offset(rb_a_load(t(lane)), i));
        }
        model
            .shared_store(16, w.lanes, |lane| stage_bytes(s) + 16 * (RB_B_OFFSET_V4 + rb_b_offset(rb_b_load(t(lane)))));
    };
    let tiles = k / BK;
    load(model, 0);
    store(model, 0);
    for kt in 0..tiles {
        let stage = kt % 2;
        let more = kt + 1 < tiles;
        if more {
            load(model, kt + 1);
        }
        for kk in 0..BK {
            let (tx, ty) = (|lane| rb_thread(t(lane)).0, |lane| rb_thread(t(lane)).1);
            model.shared_load(16, w.lanes, |lane| stage_bytes(stage) + 16 * rb_a_frag(kk, ty(lane)).0);
            model.shared_load(16, w.lanes, |lane| stage_bytes(stage) + 16 * rb_a_frag(kk, ty(lane)).1);
            model.shared_load(16, w.lanes, |lane| {
                stage_bytes(stage) + 16 * (RB_B_OFFSET_V4 + rb_b_frag(kk, tx(lane)).0)
            });
            model.shared_load(16, w.lanes, |lane| {
                stage_bytes(stage) + 16 * (RB_B_OFFSET_V4 + rb_b_frag(kk, tx(lane)).1)
            });
        }
        if more {
            store(model, 1 - stage);
        }
    }
    for i in 0..TM {
        for half in 0..2 {
            model.store(l.c, 16, w.lanes, |lane| {
                let (tx, ty) = rb_thread(t(lane));
                4 * row_major(rb_out_row(row0, ty, i).into(), rb_out_col(col0, tx, half).into(), n.into())
            });
        }
    }
}

fn cp_async_warp(model: &mut Model, l: &Launched, w: &Warp, vectors: bool) {
    let t = |lane| w.thread(lane);
    let rc = |lane| {
        let (tx, ty) = t(lane);
        tiled_coords(w.block.0, w.block.1, tx, ty)
    };
    let (row0, col0) = tiled_coords(w.block.0, w.block.1, 0, 0);
    let (m, n, k) = (l.m, l.n, l.k);
    for tile in 0..k.div_ceil(TILE) {
        if vectors {
            // `issue`'s vector path: `(is_b, global row, global column, rows, cols)` of the
            // lane's vector, if it has one.
            let copy = |lane| {
                let (tx, ty) = t(lane);
                mm_vector_of(ty * TILE + tx).map(|(is_b, r, c0)| {
                    if is_b {
                        (true, tile * TILE + r, col0 + c0, k, n)
                    } else {
                        (false, row0 + r, tile * TILE + c0, m, k)
                    }
                })
            };
            // Lanes that copy bytes (a vector outside the matrix copies 0: zero fill); threads
            // 0..256 copy A and 256..512 B, whole warps of either.
            let copying = |b_side: bool| {
                lanes_where(w.lanes, |lane| {
                    copy(lane).is_some_and(|(is_b, gr, gc, rows, cols)| {
                        is_b == b_side && mm_vector_bytes(gr, gc, rows, cols) > 0
                    })
                })
            };
            let at = |lane| {
                let (_, gr, gc, _, cols) = copy(lane).expect("a copying lane");
                4 * row_major(gr.into(), gc.into(), cols.into())
            };
            let (on_a, on_b) = (copying(false), copying(true));
            debug_assert!(on_a == 0 || on_b == 0, "one LDGSTS, one buffer a warp");
            model.load(l.a, 16, on_a, at);
            model.load(l.b, 16, on_b, at);
        } else {
            let a_at = |lane| (rc(lane).0, tile_a_col(tile, t(lane).0));
            let b_at = |lane| (tile_b_row(tile, t(lane).1), rc(lane).1);
            let a_on = lanes_where(w.lanes, |lane| a_at(lane).0 < m && a_at(lane).1 < k);
            let b_on = lanes_where(w.lanes, |lane| b_at(lane).0 < k && b_at(lane).1 < n);
            model.load(l.a, 4, a_on, |lane| 4 * row_major(a_at(lane).0.into(), a_at(lane).1.into(), k.into()));
            model.load(l.b, 4, b_on, |lane| 4 * row_major(b_at(lane).0.into(), b_at(lane).1.into(), n.into()));
        }
        // The inner product: 8 trips of two LDS.64 of A's row and four LDS of B's column.
        for i in (0..TILE).step_by(4) {
            for pair in [i, i + 2] {
                model.shared_load(8, w.lanes, |lane| 4 * mm_a_slot(tile, tile_offset(t(lane).1, pair)));
            }
            for q in i..i + 4 {
                model.shared_load(4, w.lanes, |lane| 4 * mm_b_slot(tile, tile_offset(q, t(lane).0)));
            }
        }
    }
    store_c(model, l, w, rc);
}

/// One warp of a warp-tiled kernel of shape `cfg`; `edge` for the guarded one.
fn warptile_warp(model: &mut Model, l: &Launched, w: &Warp, cfg: WarpTile, edge: bool) {
    let t = |lane| w.thread(lane).0;
    let (row0, col0) = cfg.block_origin(w.block.0, w.block.1);
    let (m, n, k) = (l.m, l.n, l.k);
    let tiles = cfg.k_tiles(k, edge);
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
    let load = |model: &mut Model, kt: u32| {
        let (tail, left) = (partial && kt + 1 == tiles, cfg.k_left(kt, k));
        for v in 0..a_vectors {
            if !edge {
                model.load(l.a, 16, w.lanes, |lane| 4 * a_at(lane, v, kt));
                continue;
            }
            for j in 0..4 {
                let on = if tail { lanes_where(w.lanes, |lane| cfg.a_load(t(lane), v).1 + j < left) } else { w.lanes };
                model.load(l.a, 4, on, |lane| 4 * (a_at(lane, v, kt) + u64::from(j)));
            }
        }
        for v in 0..b_vectors {
            if !edge {
                model.load(l.b, 16, w.lanes, |lane| 4 * b_at(lane, v, kt, 0));
                continue;
            }
            let on = if tail { lanes_where(w.lanes, |lane| cfg.b_load(t(lane), v).0 < left) } else { w.lanes };
            for j in 0..4 {
                model.load(l.b, 4, on, |lane| 4 * b_at(lane, v, kt, j));
            }
        }
    };
    let stage_bytes = |st: u32| 4 * st * cfg.stage_floats();
    let store = |model: &mut Model, st: u32| {
        for v in 0..a_vectors {
            for j in 0..4 {
                model.shared_store(4, w.lanes, |lane| stage_bytes(st) + 4 * cfg.at_offset(cfg.a_load(t(lane), v), j));
            }
        }
        for v in 0..b_vectors {
            model.shared_store(16, w.lanes, |lane| stage_bytes(st) + 4 * cfg.b_offset(cfg.b_load(t(lane), v)));
        }
    };
    load(model, 0);
    store(model, 0);
    for kt in 0..tiles {
        let st = kt % 2;
        // The last tile loads (and stores into the unused stage) itself again.
        load(model, if kt + 1 < tiles { kt + 1 } else { kt });
        for kk in 0..cfg.bk {
            fragments(model, w, cfg, stage_bytes(st), kk);
        }
        store(model, 1 - st);
    }
    store_c_vectors(model, l, w, cfg, cfg.block_origin(w.block.0, w.block.1), edge);
}

/// A warp-tiled kernel's fragment loads of k step `kk` from the stage at `stage` bytes: `tm / 4`
/// 16-byte loads of Aᵀ, then `tn / 4` of B.
fn fragments(model: &mut Model, w: &Warp, cfg: WarpTile, stage: u32, kk: u32) {
    let t = |lane| w.thread(lane).0;
    for g in 0..cfg.tm / 4 {
        model.shared_load(16, w.lanes, |lane| stage + 4 * cfg.a_frag(kk, t(lane), g));
    }
    for h in 0..cfg.tn / 4 {
        model.shared_load(16, w.lanes, |lane| stage + 4 * cfg.b_frag(kk, t(lane), h));
    }
}

/// A warp-tiled kernel's C: a 16-byte store per 4 accumulators, or with `edge` 4 single floats
/// each, of the lanes whose float lies inside C.
fn store_c_vectors(model: &mut Model, l: &Launched, w: &Warp, cfg: WarpTile, (row0, col0): (u32, u32), edge: bool) {
    let t = |lane| w.thread(lane).0;
    let (m, n) = (l.m, l.n);
    for i in 0..cfg.tm {
        let r = |lane| row0 + cfg.out_row(t(lane), i);
        for h in 0..cfg.tn / 4 {
            let col = |lane| col0 + cfg.out_col(t(lane), h);
            if !edge {
                model.store(l.c, 16, w.lanes, |lane| 4 * row_major(r(lane).into(), col(lane).into(), n.into()));
                continue;
            }
            for j in 0..4 {
                let on = lanes_where(w.lanes, |lane| r(lane) < m && col(lane) + j < n);
                model.store(l.c, 4, on, |lane| 4 * row_major(r(lane).into(), (col(lane) + j).into(), n.into()));
            }
        }
    }
}

/// One warp of the `cp.async` warp-tiled kernel of shape `cfg` with a ring of `stages`, over k
/// tiles `kt0..kt1` of the block tile at `(row0, col0)` (the kernel's `async_k_loop`): the
/// first `stages` tiles copied up front, the rest one a tile (A one float a copy, B 16 bytes),
/// `bk` fragment loads a tile, each the next step's (the last step of a tile the next tile's
/// first, from its stage, even after the last tile), and the first tile's first loads before
/// the loop.
fn async_k_loop_warp(
    model: &mut Model,
    l: &Launched,
    w: &Warp,
    (cfg, stages): (WarpTile, u32),
    (row0, col0): (u32, u32),
    (kt0, kt1): (u32, u32),
) {
    let t = |lane| w.thread(lane).0;
    let (n, k) = (u64::from(l.n), u64::from(l.k));
    let tiles = kt1 - kt0;
    let copy = |model: &mut Model, kt: u32| {
        let k0 = u64::from((kt0 + kt) * cfg.bk);
        for e in 0..cfg.a_floats() {
            model.load(l.a, 4, w.lanes, |lane| {
                let (row, col) = cfg.a_copy(t(lane), e);
                4 * row_major(u64::from(row0 + row), k0 + u64::from(col), k)
            });
        }
        for v in 0..cfg.b_vectors() {
            model.load(l.b, 16, w.lanes, |lane| {
                let (row, col) = cfg.b_load(t(lane), v);
                4 * row_major(k0 + u64::from(row), u64::from(col0 + col), n)
            });
        }
    };
    let stage_bytes = |kt: u32| 4 * (kt % stages) * cfg.stage_floats();
    for kt in 0..stages.min(tiles) {
        copy(model, kt);
    }
    fragments(model, w, cfg, stage_bytes(0), 0);
    for kt in 0..tiles {
        for kk in 0..cfg.bk {
            if kk + 1 < cfg.bk {
                fragments(model, w, cfg, stage_bytes(kt), kk + 1);
            } else {
                if kt + stages < tiles {
                    copy(model, kt + stages);
                }
                fragments(model, w, cfg, stage_bytes(kt + 1), 0);
            }
        }
    }
}

/// The tile of block `(bx, by)` of a `matmul_warptile_async` launch, or with `linear` of a
/// `matmul_warptile_streamk_waves` launch (its linear id's).
fn async_origin(launch: &Launch, n: u32, (bx, by): (u32, u32), linear: bool) -> (u32, u32) {
    if linear {
        WARPTILE_ASYNC.tile_origin(by * launch.grid.0 + bx, n / WARPTILE_ASYNC.bn)
    } else {
        WARPTILE_ASYNC.block_origin(bx, by)
    }
}

/// One warp of the `cp.async` warp-tiled kernel: its block's whole tile (at `origin`), then C.
fn warptile_async_warp(model: &mut Model, l: &Launched, w: &Warp, origin: (u32, u32), stages: u32) {
    let cfg = WARPTILE_ASYNC;
    async_k_loop_warp(model, l, w, (cfg, stages), origin, (0, cfg.k_tiles(l.k, false)));
    store_c_vectors(model, l, w, cfg, origin, false);
}

/// Counts of a stream-K row on schedule `sk` (its grid's, [`StreamK`]): each block is
/// replayed segment by segment, as the kernel's `warptile_streamk` runs them: the k loop, the
/// wait for the previous block (one `ld.acquire` of thread 0: a spin past the first read is not
/// counted, it depends on timing) and its flag cleared (a store), the partial sums read back
/// from C (`ld.global.cg`, 16 bytes a 4 accumulators), C stored, and the flag set for the next
/// block (a store). The whole waves before it are a launch of their own
/// (`matmul_warptile_streamk_waves`, counted as the async kernel).
fn stream_k_counts(model: &mut Model, l: &Launched, launch: &Launch, sk: StreamK) {
    let cfg = WARPTILE_ASYNC;
    let flags = model.buffer(FLAGS_ADDRESS);
    for x in 0..sk.wave {
        let mut u = 0;
        while let Some((tile, k0, k1)) = sk.segment(x, u) {
            let origin = sk.origin(tile);
            for w in block_warps(launch, (x, 0)) {
                async_k_loop_warp(model, l, &w, (cfg, WTA_STAGES), origin, (k0, k1));
                let first = w.thread(0).0 == 0;
                if k0 > 0 {
                    if first {
                        model.load(flags, 4, 1, |_| 0);
                        model.store(flags, 4, 1, |_| 0);
                    }
                    load_c_vectors(model, l, &w, cfg, origin);
                }
                store_c_vectors(model, l, &w, cfg, origin, false);
                if k1 < sk.iters && first {
                    model.store(flags, 4, 1, |_| 0);
                }
            }
            u += 1;
        }
    }
}

/// A made-up address for the stream-K kernel's flags (a module global, no buffer of the call).
const FLAGS_ADDRESS: u64 = 0x7000_0000_0000;

/// The 16-byte reads of C before a partial tile is added to it (`store_tile` with `add`).
fn load_c_vectors(model: &mut Model, l: &Launched, w: &Warp, cfg: WarpTile, (row0, col0): (u32, u32)) {
    let t = |lane| w.thread(lane).0;
    for i in 0..cfg.tm {
        for h in 0..cfg.tn / 4 {
            model.load(l.c, 16, w.lanes, |lane| {
                4 * row_major(
                    (row0 + cfg.out_row(t(lane), i)).into(),
                    (col0 + cfg.out_col(t(lane), h)).into(),
                    l.n.into(),
                )
            });
        }
    }
}

/// The `m × n × k` multiply with `method`, one band (at most `method.band_rows()` rows): what
/// Nsight Compute counts for its launches together (stream-K's two summed), every method
/// replayed from its SASS (module docs). Errors as [`plan`] (a whole-tiles-only method refuses
/// other shapes).
pub fn run(method: Method, (m, n, k): (usize, usize, usize), sms: u32) -> Result<Counts> {
    let a: DeviceViewMut<'static, f32> = fake_slice(0, m * k);
    let b: DeviceViewMut<'static, f32> = fake_slice(1, k * n);
    let mut c: DeviceViewMut<'static, f32> = fake_slice(2, m * n);
    let mut total = Counts::default();
    plan(method, &a, &b, &mut c, (m, n, k), sms, |call| {
        total = total.plus(&matmul(&call));
        Ok(())
    })?;
    Ok(total)
}
