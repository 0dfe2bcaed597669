//! Stage 6, warptile: regblock's tile dealt to warps (64 × 32, lanes interleaved), k steps of 16.
//! Fragment loads pair up: 8 wavefronts a warp and k step, not 12; half the barriers per FMA.
//!
//! The host side: the warp-tiled kernels' launch, one for every [`WarpTile`] shape.

use crate::launch::Launch;
use coalesce_kernels::matmul::WarpTile;

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
        let (l, _) = plan_of(Method::WarpTile, (256, 384, 32), (256 * 32, 32 * 384, 256 * 384)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (256, 1), 2 * 16 * (132 + 128) * 4));
        let (l, _) = plan_of(Method::WarpTileSmall, (256, 384, 32), (256 * 32, 32 * 384, 256 * 384)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 4), (128, 1), 2 * 16 * (68 + 128) * 4));
        let (l, _) = plan_of(Method::WarpTileEdge, (33, 129, 7), (231, 903, 33 * 129)).unwrap();
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
        let err = plan(Method::WarpTile, &a, &b, &mut c, (128, 128, 16)).unwrap_err();
        assert_eq!(err, Error::Misaligned { what: "matmul B", address: 0x2004, align: 16 });
        assert_eq!(choose(&a, &b, &c, (128, 128, 16), 132, false), Method::WarpTileEdge);
    }
}
