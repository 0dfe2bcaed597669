//! Stage 4, cp_async (Hopper): `prefetch`'s tiles go global → shared through a 4-stage ring.
//! Same bytes, 1/4 of the requests where rows are aligned; 1 barrier a tile; 32 KiB shared, not 8.
//!
//! The host side: the `cp.async` tiled kernel's launch.
//!
//! Below the launch: the model's replay of its kernel (`replay`); its footprint is `tiled`'s.

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{MM_SHARED_BYTES, TILE, matmul_cp_async};

/// Stage 4's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::CpAsync,
    kernel: matmul_cp_async,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: TILE,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: super::tiled::footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "32x32 tiles through a 4-stage cp.async ring: 3 tiles in flight, 1 barrier a tile (sm_90)",
        bench: Bench::Fixed,
        checks: &[&CHECK_SHAPES],
    },
};

/// `tiled`'s blocks, with the `MM_STAGES`-stage ring as their shared memory.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { shared_bytes: MM_SHARED_BYTES, ..super::tiled::launch(m, n) }
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90, the Hopper module):
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

    use crate::error::Result;
    use crate::matmul::tiled::replay::element_loads;
    use crate::model::matmul::{Blocks, Launched, Replay, store_c};
    use crate::model::{Model, Warp, lanes_where};
    use coalesce_kernels::matmul::{
        TILE, mm_a_slot, mm_b_slot, mm_vector_bytes, mm_vector_of, row_major, tile_offset, tiled_coords,
    };

    fn cp_async_warp(model: &mut Model, l: &Launched, w: &Warp, vectors: bool) -> Result<()> {
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
                model.load(l.a, 16, on_a, at)?;
                model.load(l.b, 16, on_b, at)?;
            } else {
                element_loads(model, l, w, tile)?;
            }
            // The inner product: 8 trips of two LDS.64 of A's row and four LDS of B's column.
            for i in (0..TILE).step_by(4) {
                for pair in [i, i + 2] {
                    model.shared_load(8, w.lanes, |lane| 4 * mm_a_slot(tile, tile_offset(t(lane).1, pair)))?;
                }
                for q in i..i + 4 {
                    model.shared_load(4, w.lanes, |lane| 4 * mm_b_slot(tile, tile_offset(q, t(lane).0)))?;
                }
            }
        }
        store_c(model, l, w, rc)?;
        Ok(())
    }

    /// Stage 4's replay: `tiled`'s blocks, copying vectors where the launch's shape and buffers let
    /// it (`mm_vectors`).
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: |_| (TILE, TILE, TILE),
            origin: |_, (bx, by)| Ok(tiled_coords(bx, by, 0, 0)),
            warp: |model, l, cx, w| cp_async_warp(model, l, w, cx.vectors),
        }),
        row: None,
    };
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn cp_async_plans_tiled_blocks_with_a_ring() {
        let (l, _) = plan_of(Method::CpAsync, (33, 65, 7), (231, 455, 2145)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (32, 32), 32768));
    }
}
