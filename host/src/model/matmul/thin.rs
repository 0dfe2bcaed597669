//! Stage 13, thin (n ≤ 8, any m and k): a few columns of B meet all of A, so the multiply is A
//! read once. A warp streams two rows of A (512 contiguous bytes a load), B's rows for the block's
//! chunk of k are staged in shared memory column by column, so that lanes read them as 16-byte
//! vectors without conflicts, and each lane's sums meet in a shuffle tree at the end.
//!
//! SASS (sm_90):
//! - `matmul_thin`: per chunk of 256 of k four `LDG.E.128.CONSTANT` of A (two rows, two steps)
//!   where the chunk lies inside k and `thin_vectors` holds, else 16 `LDG.E` below k; eight
//!   `LDG.E` of B (a row of its 8 columns, 0 outside B) and their `STS`; a barrier; each step
//!   one `LDS.128` a column; a barrier. At the end five `SHFL.DOWN` a sum and lane 0's `STG.E`s.

use super::{Blocks, Launched, Replay};
use crate::error::Result;
use crate::model::{Model, Warp, lanes_where};
use coalesce_kernels::matmul::{
    THIN_CHUNK, THIN_COLS, THIN_ROWS, THIN_STAGED_ROWS, THIN_STEPS, THIN_THREADS, THIN_WARP_ROWS, row_major, thin_k,
    thin_row, thin_staged, thin_vectors,
};

fn thin_warp(model: &mut Model, l: &Launched, w: &Warp) -> Result<()> {
    let (m, n, k) = (l.m, l.n, u64::from(l.k));
    let (bx, by) = w.block;
    let col0 = bx * THIN_COLS;
    let vectors = thin_vectors(l.k, l.a.base());
    let mut c0 = 0;
    while c0 < k {
        let whole = vectors && c0 + u64::from(THIN_CHUNK) <= k;
        for r in 0..THIN_WARP_ROWS {
            let row = u64::from(thin_row(by, w.index, r).min(m - 1));
            for s in 0..THIN_STEPS {
                let first = |lane| 4 * row_major(row, thin_k(c0, s, lane), k);
                if whole {
                    model.load(l.a, 16, w.lanes, first)?;
                } else {
                    for q in 0..4 {
                        let below = lanes_where(w.lanes, |lane| thin_k(c0, s, lane) + q < k);
                        model.load(l.a, 4, below, |lane| first(lane) + 4 * q)?;
                    }
                }
            }
        }
        for h in 0..THIN_STAGED_ROWS {
            let kk = |lane| c0 + u64::from(h * THIN_THREADS + w.linear(lane));
            for j in 0..THIN_COLS {
                let inside = lanes_where(w.lanes, |lane| kk(lane) < k && col0 + j < n);
                model.load(l.b, 4, inside, |lane| 4 * row_major(kk(lane), u64::from(col0 + j), n.into()))?;
                model.shared_store(4, w.lanes, |lane| 4 * thin_staged(j, h * THIN_THREADS + w.linear(lane)))?;
            }
        }
        for s in 0..THIN_STEPS {
            for j in 0..THIN_COLS {
                model.shared_load(16, w.lanes, |lane| 4 * thin_staged(j, s * 128 + 4 * lane))?;
            }
        }
        c0 += u64::from(THIN_CHUNK);
    }
    for r in 0..THIN_WARP_ROWS {
        let row = thin_row(by, w.index, r);
        for j in 0..THIN_COLS {
            let stored = if row < m && col0 + j < n { w.lanes & 1 } else { 0 };
            model.store(l.c, 4, stored, |_| 4 * row_major(row.into(), u64::from(col0 + j), n.into()))?;
        }
    }
    Ok(())
}

/// Stage 13's replay: a block 16 rows by 8 columns, k a chunk of 256 at a time.
pub(crate) const REPLAY: Replay = Replay {
    blocks: Some(Blocks {
        tile: |_| (THIN_ROWS, THIN_COLS, THIN_CHUNK),
        origin: |_, (bx, by)| Ok((by * THIN_ROWS, bx * THIN_COLS)),
        warp: |model, l, _, w| thin_warp(model, l, w),
    }),
    row: None,
};
