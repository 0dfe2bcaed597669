//! Stage 5, regblock: each thread computes 8 × 8 outputs of a 128 × 128 tile from 16-byte loads.
//! Per k step 4 `ld.shared.v4` feed 64 FMAs: a 16:1 flop-to-shared-load ratio instead of 2:1.
//!
//! SASS (sm_90):
//! - `matmul_regblock`: per k tile one `LDG.E.128` of A and one of B (the next stage's, except
//!   for the last tile; the first stage's before the loop), four `STS` of the A vector into Aᵀ
//!   and one `STS.128` of the B vector, 8 steps of four `LDS.128` (two A, two B fragments), and
//!   16 `STG.E.128` of the outputs.

use super::{Blocks, Launched, Replay};
use crate::error::Result;
use crate::launch::Launch;
use crate::model::{Model, Warp};
use coalesce_kernels::matmul::{
    BK, BM, BN, RB_B_OFFSET_V4, RB_STAGE_V4, TM, rb_a_frag, rb_a_index, rb_a_load, rb_at_offset, rb_b_frag, rb_b_index,
    rb_b_load, rb_b_offset, rb_block_origin, rb_out_col, rb_out_row, rb_thread, row_major,
};

pub(super) fn regblock_warp(model: &mut Model, l: &Launched, launch: &Launch, w: &Warp) -> Result<()> {
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
