//! Stage 5, regblock: each thread computes 8 × 8 outputs of a 128 × 128 tile from 16-byte loads.
//! Per k step 4 `ld.shared.v4` feed 64 FMAs: a 16:1 flop-to-shared-load ratio instead of 2:1.
//!
//! The host side: the register-blocked kernel's launch (whole tiles only:
//! [`Method::supports`](super::Method::supports)).
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{BK, BM, BN, RB_SHARED_FLOATS, RB_THREADS, matmul_regblock, regblock_grid};

/// Shapes checked for the register-blocked kernel (multiples of its 128 × 128 × 8 tile).
const REGBLOCK_SHAPES: [(usize, usize, usize); 4] = [(128, 128, 8), (256, 384, 136), (128, 640, 1000), (512, 512, 512)];

/// Stage 5's descriptor: no guards, so whole `BM × BN × BK` tiles only.
pub(super) const STAGE: Stage = Stage {
    method: Method::Regblock,
    kernel: matmul_regblock,
    waves: None,
    warp_tile: None,
    bounds: Bounds::WholeTiles { bm: BM, bn: BN, bk: BK },
    block_rows: BM,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "128x128 block tile, 8x8 per thread, 16-byte shared loads, 2 stages",
        bench: Bench::Fixed,
        checks: &[&REGBLOCK_SHAPES],
    },
};

/// Exactly the `BM × BN` tiles of C, `RB_THREADS` threads and two shared stages a block.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { grid: regblock_grid(m, n), block: (RB_THREADS, 1), shared_bytes: RB_SHARED_FLOATS * 4, cluster: 1 }
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! SASS (sm_90):
    //! - `matmul_regblock`: per k tile one `LDG.E.128` of A and one of B (the next stage's, except
    //!   for the last tile; the first stage's before the loop), four `STS` of the A vector into Aᵀ
    //!   and one `STS.128` of the B vector, 8 steps of four `LDS.128` (two A, two B fragments), and
    //!   16 `STG.E.128` of the outputs.

    use crate::error::Result;
    use crate::launch::Launch;
    use crate::model::matmul::{Blocks, Launched, Replay};
    use crate::model::{Model, Warp};
    use coalesce_kernels::matmul::{
        BK, BM, BN, RB_B_OFFSET_V4, RB_STAGE_V4, TM, rb_a_frag, rb_a_index, rb_a_load, rb_at_offset, rb_b_frag,
        rb_b_index, rb_b_load, rb_b_offset, rb_block_origin, rb_out_col, rb_out_row, rb_thread, row_major,
    };

    fn regblock_warp(model: &mut Model, l: &Launched, launch: &Launch, w: &Warp) -> Result<()> {
        debug_assert_eq!(launch.block.1, 1);
        let t = |lane| w.thread(lane).0;
        let (row0, col0) = rb_block_origin(w.block.0, w.block.1);
        let (n, k) = (l.n, l.k);
        let load = |model: &mut Model, kt: u32| -> Result<()> {
            model.load(l.a, 16, w.lanes, |lane| 4 * rb_a_index(row0, rb_a_load(t(lane)), kt, k))?;
            model.load(l.b, 16, w.lanes, |lane| 4 * rb_b_index(col0, rb_b_load(t(lane)), kt, n))?;
            Ok(())
        };
        // Byte addresses in shared memory: stage `s` starts at `s * RB_STAGE_V4` vectors, its B part
        // `RB_B_OFFSET_V4` vectors further.
        let stage_bytes = |s: u32| 16 * s * RB_STAGE_V4;
        let store = |model: &mut Model, s: u32| -> Result<()> {
            for i in 0..4 {
                model.shared_store(4, w.lanes, |lane| stage_bytes(s) + 4 * rb_at_offset(rb_a_load(t(lane)), i))?;
            }
            model.shared_store(16, w.lanes, |lane| {
                stage_bytes(s) + 16 * (RB_B_OFFSET_V4 + rb_b_offset(rb_b_load(t(lane))))
            })?;
            Ok(())
        };
        let tiles = k / BK;
        load(model, 0)?;
        store(model, 0)?;
        for kt in 0..tiles {
            let stage = kt % 2;
            let more = kt + 1 < tiles;
            if more {
                load(model, kt + 1)?;
            }
            for kk in 0..BK {
                let (tx, ty) = (|lane| rb_thread(t(lane)).0, |lane| rb_thread(t(lane)).1);
                model.shared_load(16, w.lanes, |lane| stage_bytes(stage) + 16 * rb_a_frag(kk, ty(lane)).0)?;
                model.shared_load(16, w.lanes, |lane| stage_bytes(stage) + 16 * rb_a_frag(kk, ty(lane)).1)?;
                model.shared_load(16, w.lanes, |lane| {
                    stage_bytes(stage) + 16 * (RB_B_OFFSET_V4 + rb_b_frag(kk, tx(lane)).0)
                })?;
                model.shared_load(16, w.lanes, |lane| {
                    stage_bytes(stage) + 16 * (RB_B_OFFSET_V4 + rb_b_frag(kk, tx(lane)).1)
                })?;
            }
            if more {
                store(model, 1 - stage)?;
            }
        }
        for i in 0..TM {
            for half in 0..2 {
                model.store(l.c, 16, w.lanes, |lane| {
                    let (tx, ty) = rb_thread(t(lane));
                    4 * row_major(rb_out_row(row0, ty, i).into(), rb_out_col(col0, tx, half).into(), n.into())
                })?;
            }
        }
        Ok(())
    }

    /// Stage 5's replay: a block a `BM × BN` tile, k a `BK` tile at a time.
    pub(crate) const REPLAY: Replay = Replay {
        blocks: Some(Blocks {
            tile: |_| (BM, BN, BK),
            origin: |_, (bx, by)| Ok(rb_block_origin(bx, by)),
            warp: |model, l, cx, w| regblock_warp(model, l, cx.launch, w),
        }),
        row: None,
    };
}

/// What the register-blocked kernel's threads touch: no guards, so the grid must be exactly the
/// band's tiles and every vector aligned.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, salt};
    use coalesce_kernels::matmul::{
        BK, BM, BN, RB_THREADS, TM, rb_a_index, rb_a_load, rb_b_index, rb_b_load, rb_block_origin, rb_out_col,
        rb_out_row, rb_thread, row_major,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            let (m, n, _) = p.dims;
            ensure_eq!((p.grid.0 * BN, p.grid.1 * BM), (n, m));
            for address in [p.addresses.0, p.addresses.1, p.addresses.2] {
                ensure_eq!(address % 16, 0);
            }
            Ok(())
        },
        block,
        stores: |_, (bx, by), store| {
            let (row0, col0) = rb_block_origin(bx, by);
            for t in 0..RB_THREADS {
                let (tx, ty) = rb_thread(t);
                for i in 0..TM {
                    for half in 0..2 {
                        for j in 0..4 {
                            store(rb_out_row(row0, ty, i), rb_out_col(col0, tx, half) + j);
                        }
                    }
                }
            }
        },
    };

    /// Threads at the warps' edges and one more, each at the first k tile, the last and one
    /// between: 16-byte vectors of A and B, then its 8 × 8 outputs.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let (_, n, k) = p.dims;
        let tiles = k / BK;
        let r = salt(probe, (bx, by));
        let (row0, col0) = rb_block_origin(bx, by);
        for t in [0, 1, 31, 32, RB_THREADS - 1, (r % u64::from(RB_THREADS)) as u32] {
            for kt in [0, tiles - 1, ((r >> 16) % u64::from(tiles)) as u32] {
                let ia = rb_a_index(row0, rb_a_load(t), kt, k);
                let ib = rb_b_index(col0, rb_b_load(t), kt, n);
                ensure!(ia.is_multiple_of(4) && ib.is_multiple_of(4), "16-byte vectors");
                touch(Matrix::A, ia, 4)?;
                touch(Matrix::B, ib, 4)?;
            }
            let (tx, ty) = rb_thread(t);
            for i in 0..TM {
                for half in 0..2 {
                    let ic = row_major(rb_out_row(row0, ty, i).into(), rb_out_col(col0, tx, half).into(), n.into());
                    ensure!(ic.is_multiple_of(4));
                    touch(Matrix::C, ic, 4)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::buffer::DeviceViewMut;
    use crate::matmul::tests::{plan_of, slices};
    use crate::matmul::*;
    use coalesce_kernels::matmul::BM;

    #[test]
    fn register_blocked_plans_exactly_its_tiles() {
        let (l, d) = plan_of(Method::Regblock, (256, 384, 8), (2048, 3072, 98304)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (256, 1), 16384));
        assert_eq!(d, Dims { m: 256, n: 384, k: 8 });
    }

    #[test]
    fn register_blocked_plan_checks_alignment() {
        // SAFETY: descriptors only.
        let (a, b, mut c) = unsafe {
            (
                DeviceViewMut::<f32>::stand_in(0x1000, 128 * 8),
                DeviceViewMut::<f32>::stand_in(0x2004, 8 * 128),
                DeviceViewMut::<f32>::stand_in(0x4000, 128 * 128),
            )
        };
        let plan = |method, a, b, c: &mut _, shape| plan(method, a, b, c, shape, 132, |_| Ok(()));
        let err = plan(Method::Regblock, &a, &b, &mut c, (128, 128, 8)).unwrap_err();
        assert_eq!(err, Error::Misaligned { what: "matmul B", address: 0x2004, align: 16 });
        // The tiled kernels load floats one by one: any 4-byte alignment will do.
        assert!(plan(Method::Prefetch, &a, &b, &mut c, (128, 128, 8)).is_ok());
        assert!(plan(Method::WarptileEdge, &a, &b, &mut c, (128, 128, 8)).is_ok());
        assert_eq!(choose(&a, &b, &c, (128, 128, 8), 132, false), Method::WarptileEdge);
    }

    #[test]
    fn register_blocked_bands_keep_whole_tiles() {
        assert_eq!(Method::Regblock.band_rows() % BM, 0);
        let band = Method::Regblock.band_rows() as usize;
        let (m, n, k) = (band + 2 * BM as usize, 128, 8);
        let (a, b, mut c) = slices((m * k, k * n, m * n));
        let mut rows_seen = Vec::new();
        plan_bands(Method::Regblock, &a, &b, &mut c, (m, n, k), 132, |rows, call| {
            assert_eq!(call.launch().grid.1 as usize * BM as usize, rows.len());
            rows_seen.push(rows);
            Ok(())
        })
        .unwrap();
        assert_eq!(rows_seen, [0..band, band..m]);
        // k = 8 is whole register-blocked tiles but not warp-tiled ones (k a multiple of 16).
        assert_eq!(choose(&a, &b, &c, (m, n, k), 132, true), Method::WarptileEdgeSm90);
        assert_eq!(choose(&a, &b, &c, (m, n, k), 132, false), Method::WarptileEdge);
        let (a, b, c) = slices((m * 16, 16 * n, m * n));
        assert_eq!(choose(&a, &b, &c, (m, n, 16), 132, false), Method::Warptile);
    }
}
