//! Stage 12, skinny (m ≤ 8, any n and k): one row of A meets all of B, so the multiply is B read
//! once. A block owns a slab of 8–32 columns of C for all of k; its lanes read B's rows across
//! the slab (whole sectors, each once), A's few rows are broadcasts, and the block's threads
//! split k and add their sums in shared memory in a fixed order.
//!
//! SASS (sm_90):
//! - `matmul_skinny`: per step 32 4-byte `LDG.E` of B (the warp's lanes one row's slab, or two
//!   or four rows' at widths 16 and 8), then for each of the block's rows below m eight
//!   `LDG.E.128.CONSTANT` of A where `skinny_vectors` holds, else 32 `LDG.E`; the last step's
//!   loads only below k; two `CCTL.E.PF1` a row of A (prefetches of the next step's rows into
//!   L1, which the counters do not count as loads). After the loop eight `STS` of the thread's sums, and each output one
//!   `LDS` a thread row and one `STG.E`.

use super::{Blocks, Launched, Replay};
use crate::error::Result;
use crate::model::{Model, Warp, lanes_where};
use coalesce_kernels::matmul::{
    SKINNY_ROWS, SKINNY_THREADS, SKINNY_UNROLL, row_major, skinny_k, skinny_partial, skinny_rows, skinny_step,
    skinny_vectors,
};

fn skinny_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    let (width, thread_rows) = w.block_dim;
    let (m, n, k) = (l.m, l.n, u64::from(l.k));
    let row0 = w.block.1 * SKINNY_ROWS;
    let t = |lane| w.thread(lane);
    // Every lane reads B at its column, clamped to the last; it stores only inside C.
    let col = |lane| (w.block.0 * width + t(lane).0).min(n - 1);
    let stride = skinny_step(thread_rows);
    let vectors = skinny_vectors(l.k, l.a.base());
    let mut k0 = 0;
    while k0 < k {
        let guard = k0 + stride > k;
        let kk = |lane| skinny_k(k0, t(lane).1);
        let below = |u: u64| lanes_where(w.lanes, |lane| kk(lane) + u < k);
        for u in 0..u64::from(SKINNY_UNROLL) {
            model.load(l.b, 4, below(u), |lane| 4 * row_major(kk(lane) + u, col(lane).into(), n.into()))?;
        }
        for i in 0..skinny_rows(m, row0) {
            let row = u64::from(row0 + i);
            let first = |lane| 4 * row_major(row, kk(lane), k);
            if vectors && !guard {
                for q in 0..u64::from(SKINNY_UNROLL) / 4 {
                    model.load(l.a, 16, w.lanes, |lane| first(lane) + 16 * q)?;
                }
            } else {
                for u in 0..u64::from(SKINNY_UNROLL) {
                    model.load(l.a, 4, below(u), |lane| first(lane) + 4 * u)?;
                }
            }
        }
        k0 += stride;
    }
    for i in 0..SKINNY_ROWS {
        model.shared_store(4, w.lanes, |lane| 4 * skinny_partial(t(lane).0, t(lane).1, i, width))?;
    }
    // The outputs, a thread each in turn: output o is row o / width, column o % width.
    let outputs = skinny_rows(m, row0) * width;
    let mut first = 0;
    while first < outputs {
        let o = |lane| first + w.linear(lane);
        let at = |lane| (o(lane) / width, o(lane) % width);
        let active = lanes_where(w.lanes, |lane| {
            let (i, x) = at(lane);
            o(lane) < outputs && row0 + i < m && w.block.0 * width + x < n
        });
        for r in 0..thread_rows {
            model.shared_load(4, active, |lane| 4 * skinny_partial(at(lane).1, r, at(lane).0, width))?;
        }
        model.store(l.c, 4, active, |lane| {
            let (i, x) = at(lane);
            4 * row_major(u64::from(row0 + i), u64::from(w.block.0 * width + x), n.into())
        })?;
        first += SKINNY_THREADS;
    }
    Ok(())
}

/// Stage 12's replay: a block 8 rows by its slab of columns, k a step of its thread rows at a
/// time.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: |cx| (SKINNY_ROWS, cx.launch.block.0, skinny_step(cx.launch.block.1).try_into().unwrap_or(u32::MAX)),
        origin: |cx, (bx, by)| Ok((by * SKINNY_ROWS, bx * cx.launch.block.0)),
        warp: |model, l, _, w| skinny_warp(model, l, w),
    }),
    row: None,
};
