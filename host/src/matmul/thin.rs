//! Stage 13, thin (n ≤ 8, any m and k): a few columns of B meet all of A, so the multiply is A
//! read once. A warp streams two rows of A (512 contiguous bytes a load), B's rows for the block's
//! chunk of k are staged in shared memory column by column, so that lanes read them as 16-byte
//! vectors without conflicts, and each lane's sums meet in a shuffle tree at the end.
//!
//! The host side: the launch.
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{THIN_ROWS, THIN_SHARED_BYTES, THIN_THREADS, matmul_thin, thin_grid};

/// Shapes checked for the thin kernel besides the general ones: whole chunks of k and a partial
/// last one, k below one step, k not a multiple of 4 (A a float at a time), n of 1, 3, 8 and past
/// 8 (two column blocks), m not a multiple of 16.
const THIN_SHAPES: [(usize, usize, usize); 6] =
    [(4096, 8, 1024), (1000, 1, 1030), (33, 3, 5), (17, 9, 513), (300, 8, 4099), (4111, 2, 64)];

/// Stage 13's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Thin,
    kernel: matmul_thin,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: THIN_ROWS,
    launch: |_, m, n, _, _| launch(m, n),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "n <= 8: a warp streams two rows of A in 512-byte loads, B's chunk staged column-major in shared memory",
        // A column of B and eight against 4096² of A, the thin shapes of the matmul shapes
        // sweep; checked at eight.
        bench: Bench::Shapes { sweep: &[(4096, 1, 4096), (4096, 8, 4096)], check: &[1] },
        checks: &[&CHECK_SHAPES, &THIN_SHAPES],
    },
};

/// Blocks of [`THIN_ROWS`] rows by 8 columns, each with its chunk of B in shared memory; the
/// kernel clamps rows of A and guards every other global access.
pub(super) const fn launch(m: u32, n: u32) -> Launch {
    Launch { grid: thin_grid(m, n), block: (THIN_THREADS, 1), shared_bytes: THIN_SHARED_BYTES, cluster: 1 }
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
    //! chunk of k are staged in shared memory column by column, so that lanes read them as 16-byte
    //! vectors without conflicts, and each lane's sums meet in a shuffle tree at the end.
    //!
    //! SASS (sm_90):
    //! - `matmul_thin`: per chunk of 256 of k four `LDG.E.128.CONSTANT` of A (two rows, two steps)
    //!   where the chunk lies inside k and `thin_vectors` holds, else 16 `LDG.E` below k; eight
    //!   `LDG.E` of B (a row of its 8 columns, 0 outside B) and their `STS`; a barrier; each step
    //!   one `LDS.128` a column; a barrier. At the end five `SHFL.DOWN` a sum and lane 0's `STG.E`s.

    use crate::error::Result;
    use crate::model::matmul::{Blocks, Launched, Replay};
    use crate::model::{Model, Warp, lanes_where};
    use coalesce_kernels::matmul::{
        THIN_CHUNK, THIN_COLS, THIN_ROWS, THIN_STAGED_ROWS, THIN_STEPS, THIN_THREADS, THIN_WARP_ROWS, row_major,
        thin_k, thin_row, thin_staged, thin_vectors,
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
}

/// What the thin kernel's threads touch: rows of A clamped, k checked, B staged inside its
/// columns, each output stored by lane 0 of its warp inside C.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, salt};
    use coalesce_kernels::matmul::{
        THIN_CHUNK, THIN_COLS, THIN_SHARED_BYTES, THIN_STAGED_ROWS, THIN_STEP, THIN_STEPS, THIN_THREADS,
        THIN_WARP_ROWS, THIN_WARPS, row_major, thin_grid, thin_k, thin_row, thin_staged,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            let (m, n, _) = p.dims;
            ensure_eq!(p.grid, thin_grid(m, n));
            ensure_eq!(p.block, (THIN_THREADS, 1));
            ensure!(p.shared_bytes >= THIN_SHARED_BYTES);
            Ok(())
        },
        block,
        stores: |p, (bx, by), store| {
            let (m, n, _) = p.dims;
            for w in 0..THIN_WARPS {
                for r in 0..THIN_WARP_ROWS {
                    for j in 0..THIN_COLS {
                        let (row, col) = (thin_row(by, w, r), bx * THIN_COLS + j);
                        if row < m && col < n {
                            store(row, col);
                        }
                    }
                }
            }
        },
    };

    /// The first and last warps and one more, at lanes 0, 31 and one more, over the first chunk
    /// of k and the last (partial or whole): A's rows, B's staged rows, then C.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        let (n64, k64) = (u64::from(n), u64::from(k));
        let r = salt(probe, (bx, by));
        let col0 = bx * THIN_COLS;
        for w in [0, THIN_WARPS - 1, (r % u64::from(THIN_WARPS)) as u32] {
            for lane in [0, 31, ((r >> 8) % 32) as u32] {
                let t = w * 32 + lane;
                // The first chunk and the last (partial or whole).
                let last = (k64 - 1) / u64::from(THIN_CHUNK) * u64::from(THIN_CHUNK);
                for c0 in [0, last] {
                    for row in 0..THIN_WARP_ROWS {
                        let row = u64::from(thin_row(by, w, row).min(m - 1));
                        for s in 0..THIN_STEPS {
                            let kk = thin_k(c0, s, lane);
                            for q in 0..4 {
                                if kk + q < k64 {
                                    touch(Matrix::A, row_major(row, kk + q, k64), 1)?;
                                }
                            }
                            ensure!(thin_staged(THIN_COLS - 1, s * THIN_STEP + 4 * lane) + 4 <= THIN_SHARED_BYTES / 4);
                        }
                    }
                    for h in 0..THIN_STAGED_ROWS {
                        let kk = c0 + u64::from(h * THIN_THREADS + t);
                        for j in 0..THIN_COLS {
                            if kk < k64 && col0 + j < n {
                                touch(Matrix::B, row_major(kk, u64::from(col0 + j), n64), 1)?;
                            }
                            ensure!(thin_staged(j, h * THIN_THREADS + t) < THIN_SHARED_BYTES / 4);
                        }
                    }
                }
                for row in 0..THIN_WARP_ROWS {
                    let row = thin_row(by, w, row);
                    for j in 0..THIN_COLS {
                        if lane == 0 && row < m && col0 + j < n {
                            touch(Matrix::C, row_major(row.into(), u64::from(col0 + j), n64), 1)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::plan_of;
    use crate::matmul::*;

    #[test]
    fn thin_plans_sixteen_rows_a_block() {
        let (l, _) = plan_of(Method::Thin, (4096, 8, 4096), (4096 * 4096, 4096 * 8, 4096 * 8)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((1, 256), (256, 1), 8192));
        let (l, _) = plan_of(Method::Thin, (17, 9, 3), (17 * 3, 3 * 9, 17 * 9)).unwrap();
        assert_eq!(l.grid, (2, 2));
    }
}
