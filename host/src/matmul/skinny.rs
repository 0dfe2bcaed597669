//! Stage 12, skinny (m ≤ 8, any n and k): one row of A meets all of B, so the multiply is B read
//! once. A block owns a slab of 8–32 columns of C for all of k; its lanes read B's rows across
//! the slab (whole sectors, each once), A's few rows are broadcasts, and the block's threads
//! split k and add their sums in shared memory in a fixed order.
//!
//! The host side: the slab width that fills the GPU, and the launch.
//!
//! Below the launch: the model's replay of its kernels (`replay`) and their footprint for the
//! index proofs (`footprint`).

use super::lesson::{Bench, CHECK_SHAPES, Lesson};
use super::{Bounds, Method, Stage};
use crate::launch::Launch;
use coalesce_kernels::matmul::{
    SKINNY_ROWS, SKINNY_SHARED_BYTES, matmul_skinny, skinny_block, skinny_grid, skinny_width,
};

/// Shapes checked for the skinny kernel besides the general ones: every slab width (32, 16 and
/// 8 columns on 132 SMs), k a whole step, not one, and below one, A's rows read 4 bytes at a
/// time (k not a multiple of 4), two block rows (m = 9), and columns past the last whole slab.
const SKINNY_SHAPES: [(usize, usize, usize); 6] =
    [(1, 4224, 512), (8, 2047, 1000), (3, 1000, 4099), (9, 300, 64), (8, 33, 5), (2, 8191, 7)];

/// Stage 12's descriptor.
pub(super) const STAGE: Stage = Stage {
    method: Method::Skinny,
    kernel: matmul_skinny,
    waves: None,
    warp_tile: None,
    bounds: Bounds::Guarded,
    block_rows: SKINNY_ROWS,
    launch: |_, m, n, _, sms| launch(m, n, sms),
    #[cfg(feature = "model")]
    replay: replay::REPLAY,
    #[cfg(feature = "model")]
    footprint: footprint::FOOTPRINT,
    lesson: Lesson {
        summary: "m <= 8: a block a slab of B's columns for all of k, B read once in whole sectors, k split over threads",
        // A row of A and eight against 4096², the inference shapes of the matmul shapes
        // sweep; checked at eight.
        bench: Bench::Shapes { sweep: &[(1, 4096, 4096), (8, 4096, 4096)], check: &[1] },
        checks: &[&CHECK_SHAPES, &SKINNY_SHAPES],
    },
};

/// Blocks of [`SKINNY_ROWS`] rows by a slab of [`skinny_width`] columns (the widest whose
/// blocks leave at most a 16th of the `sms` multiprocessors idle), each with its threads' partial sums in
/// shared memory; the kernel clamps and guards every global access.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    let width = skinny_width(n, sms);
    Launch { grid: skinny_grid(m, n, width), block: skinny_block(width), shared_bytes: SKINNY_SHARED_BYTES, cluster: 1 }
}

#[cfg(feature = "model")]
mod replay {
    //! The model's replay of the stage's launches (what the replays share:
    //! `crate::model::matmul`).
    //!
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

    use crate::error::Result;
    use crate::model::matmul::{Blocks, Launched, Replay};
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
}

/// What the skinny kernel's threads touch: B at columns clamped to the last, A's rows clamped,
/// k checked on the partial last step, each output stored inside C.
#[cfg(feature = "model")]
mod footprint {
    use crate::matmul::footprint::{Footprint, Matrix, Probe, Touch, Walked, ensure, ensure_eq, salt};
    use coalesce_kernels::matmul::{
        SKINNY_ROWS, SKINNY_THREADS, SKINNY_UNROLL, row_major, skinny_k, skinny_partial, skinny_rows, skinny_step,
        skinny_vectors,
    };

    pub(crate) const FOOTPRINT: Footprint = Footprint {
        launch: |p, _| {
            let (m, n, _) = p.dims;
            ensure!(p.grid.0 * p.block.0 >= n && p.grid.1 * SKINNY_ROWS >= m, "grid covers the band");
            ensure!(p.shared_bytes >= SKINNY_THREADS * SKINNY_ROWS * 4);
            Ok(())
        },
        block,
        stores: |p, (bx, by), store| {
            // Output o of the block is row o / width, column o % width.
            let (m, n, _) = p.dims;
            let width = p.block.0;
            let row0 = by * SKINNY_ROWS;
            for o in 0..skinny_rows(m, row0) * width {
                let (row, col) = (row0 + o / width, bx * width + o % width);
                if col < n {
                    store(row, col);
                }
            }
        },
    };

    /// Two corner threads and one more, at the first step of k, the last whole one and the
    /// partial one after it; then every output of the block.
    fn block(p: &Probe, (bx, by): (u32, u32), probe: u64, touch: Touch<'_>) -> Walked {
        let (m, n, k) = p.dims;
        let (m64, n64, k64) = (u64::from(m), u64::from(n), u64::from(k));
        let (width, thread_rows) = p.block;
        let stride = skinny_step(thread_rows);
        let vectors = skinny_vectors(k, p.addresses.0);
        let r = salt(probe, (bx, by));
        let row0 = by * SKINNY_ROWS;
        let picked = ((r % u64::from(width)) as u32, ((r >> 8) % u64::from(thread_rows)) as u32);
        for (tx, ty) in [(0, 0), (width - 1, thread_rows - 1), picked] {
            // Every lane reads at its column clamped to the last, and A's rows clamped.
            let col = u64::from((bx * width + tx).min(n - 1));
            // The first step, the last whole one and the partial one after it.
            let whole_steps = k64 / stride;
            for k0 in [0, whole_steps.saturating_sub(1) * stride, whole_steps * stride] {
                if k0 >= k64 {
                    continue;
                }
                let whole = k0 + stride <= k64;
                let kk = skinny_k(k0, ty);
                for u in 0..u64::from(SKINNY_UNROLL) {
                    if whole || kk + u < k64 {
                        touch(Matrix::B, row_major(kk + u, col, n64), 1)?;
                        for i in 0..SKINNY_ROWS {
                            let row = u64::from((row0 + i).min(m - 1));
                            touch(Matrix::A, row_major(row, kk + u, k64), 1)?;
                        }
                    }
                }
                if whole && vectors {
                    // Two 16-byte vectors of each row: aligned where A is.
                    ensure_eq!(row_major(m64 - 1, kk, k64) % 4, 0);
                    ensure_eq!(p.addresses.0 % 16, 0);
                }
            }
            for i in 0..SKINNY_ROWS {
                ensure!(skinny_partial(tx, ty, i, width) < SKINNY_THREADS * SKINNY_ROWS);
            }
        }
        // The outputs: o = i * width + x, each stored where inside C.
        for o in 0..skinny_rows(m, row0) * width {
            let (row, col) = (row0 + o / width, bx * width + o % width);
            ensure!(row < m);
            if col < n {
                touch(Matrix::C, row_major(row.into(), col.into(), n64), 1)?;
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
    fn skinny_plans_slabs_that_fill_the_gpu() {
        // 4096 columns on 132 SMs: 128 slabs of 32 leave 4 idle, under a 16th.
        let (l, _) = plan_of(Method::Skinny, (8, 4096, 4096), (8 * 4096, 4096 * 4096, 8 * 4096)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((128, 1), (32, 16), 16384));
        let (l, _) = plan_of(Method::Skinny, (9, 100, 3), (9 * 3, 3 * 100, 9 * 100)).unwrap();
        assert_eq!((l.grid, l.block), ((13, 2), (8, 64)));
    }
}
