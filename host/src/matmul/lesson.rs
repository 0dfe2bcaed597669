//! What the lesson harness runs a stage at ([`super::Stage::lesson`]): its line in the registry,
//! the shapes it is benchmarked and modelled at, and the shapes it is checked at on the GPU. The
//! shapes are the stages' own, so they live here beside the descriptors, not in the harness.

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
    /// [`EDGE_BENCH_SHAPES`], by index.
    EdgeShapes,
    /// [`SKINNY_BENCH_SHAPES`], by index.
    SkinnyShapes,
    /// [`THIN_BENCH_SHAPES`], by index.
    ThinShapes,
}

impl Bench {
    /// The shape `(m, n, k)` benchmarked for the parameter's `value` (ignored by [`Bench::Fixed`]).
    /// Panics on an [`Bench::EdgeShapes`] index past [`EDGE_BENCH_SHAPES`], which no registered
    /// sweep has.
    pub fn shape(self, value: u32) -> (usize, usize, usize) {
        match self {
            Bench::Fixed => (BENCH_SIZE, BENCH_SIZE, BENCH_SIZE),
            Bench::Cubes { .. } => (value as usize, value as usize, value as usize),
            Bench::EdgeShapes => EDGE_BENCH_SHAPES[value as usize],
            Bench::SkinnyShapes => SKINNY_BENCH_SHAPES[value as usize],
            Bench::ThinShapes => THIN_BENCH_SHAPES[value as usize],
        }
    }
}

/// The benchmark of the stages with no parameter: 4096³.
pub const BENCH_SIZE: usize = 4096;
/// Sizes (s × s × s) the warp-tiled kernels are swept over.
pub const SIZES: Bench = Bench::Cubes { sweep: &[1024, 2048, 4096, 8192], check: &[1024] };
/// Sizes the stream-K kernel is swept over: 3072³ (288 tiles, 2.18 waves on 132 SMs), 4096³
/// (3.88) and 8192³ (15.5).
pub const STREAMK_SIZES: Bench = Bench::Cubes { sweep: &[3072, 4096, 8192], check: &[3072] };
/// Sizes the spread ring's stream-K is swept over: stream-K's, and 2048³ (128 tiles, one wave
/// short of 132 SMs by 4 blocks: all shared).
pub const SPREAD_STREAMK_SIZES: Bench = Bench::Cubes { sweep: &[2048, 3072, 4096, 8192], check: &[3072] };
/// Sizes the small-grid kernel is swept over: where it is chosen, and the next size up.
pub const SMALL_SIZES: Bench = Bench::Cubes { sweep: &[1024, 2048], check: &[1024] };
/// Shapes (m, n, k) the guarded kernels are benchmarked at ([`Bench::EdgeShapes`]): one short of
/// 4096, one past, all three different, and 4096³ itself for the cost of the guards.
pub const EDGE_BENCH_SHAPES: [(usize, usize, usize); 4] =
    [(4095, 4095, 4095), (4097, 4097, 4097), (4000, 4100, 4033), (4096, 4096, 4096)];

/// Shapes (m, n, k) the skinny kernel is benchmarked at ([`Bench::SkinnyShapes`]): a row of A
/// and eight against 4096², the inference shapes of the matmul shapes sweep.
pub const SKINNY_BENCH_SHAPES: [(usize, usize, usize); 2] = [(1, 4096, 4096), (8, 4096, 4096)];
/// Shapes checked for the skinny kernel besides the general ones: every slab width (32, 16 and
/// 8 columns on 132 SMs), k a whole step, not one, and below one, A's rows read 4 bytes at a
/// time (k not a multiple of 4), two block rows (m = 9), and columns past the last whole slab.
pub const SKINNY_SHAPES: [(usize, usize, usize); 6] =
    [(1, 4224, 512), (8, 2047, 1000), (3, 1000, 4099), (9, 300, 64), (8, 33, 5), (2, 8191, 7)];
/// Shapes (m, n, k) the thin kernel is benchmarked at ([`Bench::ThinShapes`]): a column of B
/// and eight against 4096² of A, the thin shapes of the matmul shapes sweep.
pub const THIN_BENCH_SHAPES: [(usize, usize, usize); 2] = [(4096, 1, 4096), (4096, 8, 4096)];
/// Shapes checked for the thin kernel besides the general ones: whole chunks of k and a partial
/// last one, k below one step, k not a multiple of 4 (A a float at a time), n of 1, 3, 8 and past
/// 8 (two column blocks), m not a multiple of 16.
pub const THIN_SHAPES: [(usize, usize, usize); 6] =
    [(4096, 8, 1024), (1000, 1, 1030), (33, 3, 5), (17, 9, 513), (300, 8, 4099), (4111, 2, 64)];
/// Sizes split-K is benchmarked at: the squares whose 64 × 128 grids leave most of an H100 idle,
/// and 1024³, where it is cut only two ways and `matmul::matmul` does not take it.
pub const SPLIT_K_SIZES: Bench = Bench::Cubes { sweep: &[256, 512, 768, 1024], check: &[512] };
/// Shapes checked for split-K besides the general and guarded ones (on 132 SMs): 8 splits of 2
/// k tiles; one k tile cut 8 ways (7 empty ranges adding zeros); a partial k tile in a short last
/// range; a skinny product of long k; partial tiles in m, n and k, 2 splits; and 512³ twice
/// more, each launch finding the tickets the one before set back to 0.
pub const SPLIT_K_SHAPES: [(usize, usize, usize); 7] = [
    (256, 256, 256),
    (64, 128, 16),
    (5, 130, 33),
    (32, 4096, 1024),
    (129, 4097, 515),
    (512, 512, 512),
    (512, 512, 512),
];
/// Shapes (m, n, k) checked for the general kernels: 1, odd, prime and non-tile sizes.
pub const CHECK_SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (33, 17, 65), (127, 131, 67), (257, 96, 200), (512, 512, 512)];
/// Shapes checked for the register-blocked kernel (multiples of its 128 × 128 × 8 tile).
pub const REGBLOCK_SHAPES: [(usize, usize, usize); 4] =
    [(128, 128, 8), (256, 384, 136), (128, 640, 1000), (512, 512, 512)];
/// Shapes checked for the unguarded warp-tiled kernel (multiples of its 128 × 128 × 16 tile).
pub const WARPTILE_SHAPES: [(usize, usize, usize); 4] =
    [(128, 128, 16), (256, 384, 144), (128, 640, 1008), (512, 512, 512)];
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
/// Shapes checked for the guarded spread ring's stream-K (on 132 SMs) besides the guarded
/// kernel's: 170 tiles, partial in m, n and k (one whole wave, 38 shared, k 32 whole tiles and 3
/// columns); 64 tiles all shared, k 62 tiles and 8; 4 tiles of k below one step (only the
/// partial k tile, most blocks idle); 66 tiles one column wide at the edge; the first again
/// twice (each launch finds the flags the one before cleared).
pub const SPREAD_EDGE_SHAPES: [(usize, usize, usize); 6] =
    [(1153, 4097, 515), (1000, 2000, 1000), (130, 300, 7), (4097, 257, 100), (1153, 4097, 515), (1153, 4097, 515)];
/// Shapes checked for the small-grid warp-tiled kernel (multiples of its 64 × 128 × 16 tile).
pub const WARPTILE_SMALL_SHAPES: [(usize, usize, usize); 4] =
    [(64, 128, 16), (192, 384, 144), (64, 640, 1008), (512, 512, 512)];
/// Extra shapes for the guarded warp-tiled kernels: partial tiles in m, n and k at once, k below
/// one k step, a single row and column, whole tiles (which they take too).
pub const EDGE_EXTRA_SHAPES: [(usize, usize, usize); 5] =
    [(300, 260, 1000), (129, 385, 17), (1, 1000, 5), (1000, 1, 33), (256, 256, 256)];
