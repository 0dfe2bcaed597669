//! Stage 6, warptile: regblock's tile dealt to warps (64 × 32, lanes interleaved), k steps of 16.
//! Fragment loads pair up: 8 wavefronts a warp and k step, not 12; half the barriers per FMA.
//!
//! The host side: the warp-tiled kernels' launch, one for every [`WarpTile`] shape.

use super::lesson::{CHECK_SHAPES, EDGE_BENCH_SHAPES, EDGE_EXTRA_SHAPES, Lesson, SIZES};
use super::{Bench, Bounds, MatmulSig, Method, Stage};
use crate::launch::{Kernel, Launch};
use crate::model::matmul::warptile::REPLAY;
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
        launch: |stage, m, n, _| launch(stage.warp_tile.expect("built with a shape"), m, n),
        replay: REPLAY,
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
