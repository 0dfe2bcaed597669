//! What the lesson harness runs a stage at ([`super::Stage::lesson`]): its line in the registry,
//! the shapes it is benchmarked and modelled at, and the shapes it is checked at on the GPU. The
//! shapes are the stages' own, so they live with the descriptors, not in the harness: here those
//! several stages share, in a stage's own file those it alone takes.

use crate::error::{Error, Result};

/// A stage's row in the lesson harness (`coalesce-benches`' registry, checks and benches).
#[derive(Debug, Clone, Copy)]
pub struct Lesson {
    /// One line: the access pattern and what it costs (`xtask list`, the report).
    pub summary: &'static str,
    /// The shapes it is benchmarked and modelled at.
    pub bench: Bench,
    /// The shapes it is checked at against the CPU, in order: these sets one after another.
    pub checks: &'static [&'static [(usize, usize, usize)]],
}

/// The shapes a stage is benchmarked (and modelled) at, by the value of its swept parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bench {
    /// [`BENCH_SIZE`]³ only: no parameter.
    Fixed,
    /// `s × s × s` for each size `s` of `sweep`; the harness's checks run at the sizes of `check`.
    Cubes {
        /// The sizes benchmarked.
        sweep: &'static [u32],
        /// The sizes the checks of a swept run take (a subset of `sweep`).
        check: &'static [u32],
    },
    /// Each `(m, n, k)` of `sweep`, by its index (the parameter `shape`, labelled `MxNxK`); the
    /// harness's checks run at the indices of `check`.
    Shapes {
        /// The shapes benchmarked, at least one.
        sweep: &'static [(usize, usize, usize)],
        /// The indices into `sweep` the checks of a swept run take.
        check: &'static [u32],
    },
}

impl Bench {
    /// The shape `(m, n, k)` benchmarked for the parameter's `value` (ignored by [`Bench::Fixed`]);
    /// [`Error::OutOfRange`] for an index past a [`Bench::Shapes`] list.
    pub fn shape(self, value: u32) -> Result<(usize, usize, usize)> {
        match self {
            Bench::Fixed => Ok((BENCH_SIZE, BENCH_SIZE, BENCH_SIZE)),
            Bench::Cubes { .. } => Ok((value as usize, value as usize, value as usize)),
            Bench::Shapes { sweep, .. } => sweep.get(value as usize).copied().ok_or(Error::OutOfRange {
                what: "matmul benchmark shape index",
                value: value.into(),
                min: 0,
                max: (sweep.len() as u64).saturating_sub(1),
            }),
        }
    }
}

/// The benchmark of the stages with no parameter: 4096³.
pub const BENCH_SIZE: usize = 4096;
/// Sizes (s × s × s) the warp-tiled kernels are swept over.
pub const SIZES: Bench = Bench::Cubes { sweep: &[1024, 2048, 4096, 8192], check: &[1024] };
/// Shapes (m, n, k) the guarded kernels are benchmarked at: one short of 4096, one
/// past, all three different, and 4096³ itself for the cost of the guards; checked at the first.
pub const EDGE_BENCH_SHAPES: Bench = Bench::Shapes {
    sweep: &[(4095, 4095, 4095), (4097, 4097, 4097), (4000, 4100, 4033), (4096, 4096, 4096)],
    check: &[0],
};
/// Shapes (m, n, k) checked for the general kernels: 1, odd, prime and non-tile sizes.
pub const CHECK_SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (33, 17, 65), (127, 131, 67), (257, 96, 200), (512, 512, 512)];
/// Shapes checked for the `cp.async` warp-tiled kernel (multiples of its 128 × 256 × 16 tile;
/// 1008 = 63 k tiles, more than its ring's 3 stages, not a multiple of them).
pub const WARPTILE_ASYNC_SHAPES: [(usize, usize, usize); 5] =
    [(128, 256, 16), (128, 256, 32), (256, 512, 144), (128, 768, 1008), (512, 512, 512)];
/// Shapes checked for stream-K on the GPU's own wave (on 132 SMs): 144 tiles (one whole wave
/// and 12 shared), 90 tiles all shared (no whole wave; a block's range inside one tile), one
/// tile of one k tile (most blocks idle), 8 tiles, 132 tiles (one whole wave, no shared row),
/// and the first shape again twice: each launch finds the flags the one before cleared (a flag
/// left set would let a block add sums not yet written).
pub const STREAMK_SHAPES: [(usize, usize, usize); 7] = [
    (1152, 4096, 512),
    (1280, 2304, 1008),
    (128, 256, 16),
    (512, 512, 512),
    (1536, 2816, 64),
    (1152, 4096, 512),
    (1152, 4096, 512),
];
/// Extra shapes for the guarded warp-tiled kernels: partial tiles in m, n and k at once, k below
/// one k step, a single row and column, whole tiles (which they take too).
pub const EDGE_EXTRA_SHAPES: [(usize, usize, usize); 5] =
    [(300, 260, 1000), (129, 385, 17), (1, 1000, 5), (1000, 1, 33), (256, 256, 256)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bench_shape_past_the_list_is_an_error() {
        assert_eq!(EDGE_BENCH_SHAPES.shape(2), Ok((4000, 4100, 4033)));
        assert_eq!(
            EDGE_BENCH_SHAPES.shape(4),
            Err(Error::OutOfRange { what: "matmul benchmark shape index", value: 4, min: 0, max: 3 })
        );
        assert_eq!(SIZES.shape(2048), Ok((2048, 2048, 2048)));
        assert_eq!(Bench::Fixed.shape(7), Ok((BENCH_SIZE, BENCH_SIZE, BENCH_SIZE)));
    }
}
