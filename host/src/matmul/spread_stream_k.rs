//! Stage 10, spread_stream_k (Hopper): stream_k's schedule over spread_ring's k loop.
//! The same transactions as stream_k; each block's k tiles run at spread_ring's pace.
//!
//! The host side: stream-K's two launches ([`super::stream_k`]'s schedule) with the spread
//! ring's kernels and blocks.

use super::MatmulSig;
use super::stream_k::{launches_of, row_launch};
use crate::launch::{Kernel, Launch};
use coalesce_kernels::matmul::{matmul_spread_streamk, matmul_spread_streamk_waves};

/// The shared row's launch: `spread_ring`'s blocks on the row grid.
pub(super) const fn launch(m: u32, n: u32, sms: u32) -> Launch {
    row_launch(m, n, sms, super::spread_ring::launch(m, n))
}

/// The whole waves (`matmul_spread_streamk_waves`), then the shared row
/// (`matmul_spread_streamk`), each left out where it has no tile.
pub(super) fn launches(m: u32, n: u32, sms: u32) -> [Option<(Kernel<MatmulSig>, Launch)>; 2] {
    launches_of((m, n, sms, false), (matmul_spread_streamk_waves, matmul_spread_streamk), launch(m, n, sms))
}

#[cfg(test)]
mod tests {
    use crate::matmul::tests::launches_of;
    use crate::matmul::*;
    use coalesce_kernels::matmul::{matmul_spread_streamk, matmul_spread_streamk_waves};

    #[test]
    fn spread_stream_k_plans_the_same_schedule_with_the_spread_kernels() {
        let ring = 4 * 16 * (132 + 256) * 4;
        let sk =
            launches_of(Method::WarpTileSpreadStreamK, (4096, 4096, 16), (4096 * 16, 16 * 4096, 4096 * 4096)).unwrap();
        let grids: Vec<_> = sk.iter().map(|(name, l, _)| (*name, l.grid, l.block, l.shared_bytes)).collect();
        assert_eq!(
            grids,
            [
                (matmul_spread_streamk_waves.name(), (132, 3), (256, 1), ring),
                (matmul_spread_streamk.name(), (132, 1), (256, 1), ring)
            ]
        );
    }
}
