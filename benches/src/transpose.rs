//! Transpose lessons: the registry entries, checks and workloads for `coalesce::transpose`, and
//! the library transpose's check past 2^31 elements ([`check_large`]).
use coalesce::model::Counts;
use coalesce::transpose::{self as lib, Method};
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu, Result};
use coalesce_kernels::transpose::transpose_tma;
use coalesce_kernels::util::fill_value;

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, check_f32, compare_with, room};
use crate::family::{Family, Labels, Param, Row};
use crate::workload::{Workload, random_buffer, random_pair};

/// Shapes checked: single element, single row/column, odd sizes around a tile, non-square,
/// large square and non-square matrices, and a tall and a wide one with more than 65 535 row
/// (or column) tiles, past what a 2-D grid's `gridDim.y` could hold.
pub const CHECK_SHAPES: [(usize, usize); 11] = [
    (1, 1),
    (1, 37),
    (37, 1),
    (31, 33),
    (33, 31),
    (1000, 1003),
    (4096, 4096),
    (2048, 8192),
    (8191, 4097),
    (2_100_000, 3),
    (3, 2_100_000),
];
/// Shapes the wide tile (even dimensions only) is checked at: a single pair, edge tiles on both
/// sides, non-square, large, and tall and wide past 65 535 tiles of a side.
pub const WIDE_CHECK_SHAPES: [(usize, usize); 9] =
    [(2, 2), (2, 38), (38, 2), (62, 66), (1000, 1002), (4096, 4096), (2048, 8192), (4_200_000, 2), (2, 4_200_000)];
/// Benchmarked shapes (256 MiB each way), selected by the `shape` parameter.
pub const BENCH_SHAPES: [(usize, usize); 2] = [(8192, 8192), (4096, 16384)];
/// Shape of [`check_large`]: 2^31 + 32768 elements (8.6 GB a buffer), a column count that is
/// not a multiple of the tile.
pub const LARGE_SHAPE: (usize, usize) = (32_768, 65_537);

/// The transpose variants: the library's methods, and the TMA transpose, which has its own entry
/// point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transpose {
    /// A library method through `transpose::run`.
    Method(Method),
    /// Tiles loaded and stored by the TMA through tensor maps (Hopper module).
    Tma,
}

/// `shape` 0 = 8192 × 8192, 1 = 4096 × 16384 (an index into [`BENCH_SHAPES`]).
const SHAPE: Param = Param { name: "shape", sweep: &[0, 1], check: &[0], labels: Some(Labels::Each(shape)) };
/// A [`SHAPE`] value as `ROWSxCOLS` (`0`: `8192x8192`).
fn shape(value: u32) -> String {
    BENCH_SHAPES.get(value as usize).map_or_else(|| value.to_string(), |(r, c)| format!("{r}x{c}"))
}

impl Family for Transpose {
    const NAME: &'static str = "transpose";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, _shape: u32) -> CheckResult<String> {
        let method = match self {
            Transpose::Method(method) => method,
            Transpose::Tma => return check_tma(gpu, rng),
        };
        let shapes: &[(usize, usize)] = if method.pairs() { &WIDE_CHECK_SHAPES } else { &CHECK_SHAPES };
        if method.pairs() {
            // Odd shapes are refused before any launch, and the library falls back to the padded tile.
            let (input, mut output) = (gpu.poisoned::<f32>(3 * 4, 0)?, gpu.poisoned::<f32>(3 * 4, 0)?);
            let what = format!("{} of 3 x 4", method.kernel().name());
            expect_refusal(&what, lib::run(gpu, method, &input, &mut output, 3, 4))?;
        }
        for &(r, c) in shapes {
            check_f32(
                gpu,
                rng,
                &format!("{r}x{c}"),
                (r * c, r * c),
                |input, output| lib::run(gpu, method, input, output, r, c),
                |input, want| {
                    if method.copies() {
                        want.copy_from_slice(input);
                        Ok(())
                    } else {
                        lib::transpose_cpu(input, want, r, c)
                    }
                },
            )?;
        }
        Ok(format!("shapes {shapes:?}"))
    }

    fn bench(self, gpu: &Gpu, shape: u32) -> Result<Workload> {
        let (r, c) = BENCH_SHAPES[shape as usize];
        let (input, mut output) = random_pair(gpu, r * c, r * c)?;
        let bytes = 8 * (r * c) as u64;
        match self {
            Transpose::Method(method) => {
                Ok(Workload::new(bytes, move |gpu| lib::run(gpu, method, &input, &mut output, r, c)))
            }
            Transpose::Tma => {
                let maps = lib::TileMaps::new(gpu, &input, &output, r, c)?;
                Ok(Workload::new(bytes, move |gpu| gpu.launch(lib::plan_tma(&maps, &input, &mut output)?)))
            }
        }
    }

    fn model(self, shape: u32, _sms: u32) -> Result<Option<Counts>> {
        let (r, c) = BENCH_SHAPES[shape as usize];
        match self {
            Transpose::Method(method) => coalesce::model::transpose::run(method, r, c).map(Some),
            Transpose::Tma => coalesce::model::transpose::tma(r, c).map(Some),
        }
    }
}

/// The transpose variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Transpose>] = &[
    method(Method::Copy, "tiled copy of the same shape: coalesced both ways, 4-byte accesses in a 32x32 tile").swept(SHAPE),
    method(Method::Naive, "coalesced reads, column writes: 32 sectors per warp store").swept(SHAPE),
    method(Method::Shared, "32x32 shared tile: coalesced both ways, 32-way bank conflicts").swept(SHAPE),
    method(Method::Padded, "32x33 shared tile: coalesced both ways, conflict-free").swept(SHAPE),
    method(Method::Wide, "64x65 tile, 8-byte accesses (8 sectors a request), tiles down columns").swept(SHAPE),
    method(Method::WideCopy, "wide's accesses as a copy, tiles along rows: same sectors, the transposes' ceiling").swept(SHAPE),
    method(Method::WideCopyDown, "wide_copy with tiles down columns: the same sectors, a thin slice of every row in flight").swept(SHAPE),
    Row::by_kernel(Transpose::Tma, "64x64 tile a block as two 64x32 cp.async.bulk.tensor boxes each way, 128B-swizzled, tiles down columns (sm_90)", transpose_tma).swept(SHAPE),
];

/// A library method's row: it launches the method's kernel, and is named after it.
const fn method(method: Method, summary: &'static str) -> Row<Transpose> {
    Row::by_kernel(Transpose::Method(method), summary, method.kernel())
}

/// Shapes the TMA transpose is checked at: multiples of 4 (what its tensor maps take) around
/// and between tiles, non-square, large, and tall and wide past 65 535 row (column) tiles.
pub const TMA_CHECK_SHAPES: [(usize, usize); 10] = [
    (4, 4),
    (4, 36),
    (36, 4),
    (28, 36),
    (1000, 1004),
    (4096, 4096),
    (2048, 8192),
    (8188, 4100),
    (2_100_000, 4),
    (4, 2_100_000),
];

/// The TMA transpose against the CPU at [`TMA_CHECK_SHAPES`] (fresh random input, poisoned
/// output, every element), then the refusals: a shape that is not a multiple of 4, and maps
/// encoded for other buffers.
fn check_tma(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    for (r, c) in TMA_CHECK_SHAPES {
        check_f32(
            gpu,
            rng,
            &format!("tma {r}x{c}"),
            (r * c, r * c),
            |input, output| lib::tma_transpose(gpu, input, output, r, c),
            |input, want| lib::transpose_cpu(input, want, r, c),
        )?;
    }
    let (input, mut output) = (gpu.upload(&rng.f32s(31 * 33))?, gpu.poisoned::<f32>(31 * 33, POISON_BITS)?);
    expect_refusal("tma 31x33", lib::tma_transpose(gpu, &input, &mut output, 31, 33))?;
    let (a, b) = (gpu.upload(&rng.f32s(16))?, gpu.poisoned::<f32>(16, POISON_BITS)?);
    let mut other = gpu.poisoned::<f32>(16, POISON_BITS)?;
    let maps = lib::TileMaps::new(gpu, &a, &b, 4, 4)?;
    expect_refusal("tma maps of other buffers", lib::plan_tma(&maps, &a, &mut other).map(|_| ()))?;
    Ok(format!("shapes {TMA_CHECK_SHAPES:?}; 31x33 and foreign maps refused"))
}

/// `Ok` if `result` is the [`coalesce::Error::Unsupported`] a plan must answer with.
fn expect_refusal(what: &str, result: Result<()>) -> CheckResult<()> {
    match result {
        Err(coalesce::Error::Unsupported(_)) => Ok(()),
        other => Err(CheckError::Unexpected {
            what: what.into(),
            expected: "Error::Unsupported".into(),
            got: format!("{other:?}"),
        }),
    }
}

/// `transpose::transpose` of a [`LARGE_SHAPE`] matrix (2^31 + 32768 floats): the input is filled
/// on the GPU with `fill_value(i, seed, Bits)`, the output poisoned, and every output element's
/// bits are compared with what the CPU recomputes from the same hash. SKIPPED on a device without
/// room for both buffers plus 1 GiB.
pub fn check_large(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    large(gpu, rng, LARGE_SHAPE)
}

/// [`check_large`] with an even shape, 32768 × 65538 (2^31 + 65536 floats), which the library
/// transposes with the wide tile.
pub fn check_large_wide(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    large(gpu, rng, (LARGE_SHAPE.0, LARGE_SHAPE.1 + 1))
}

fn large(gpu: &Gpu, rng: &mut Rng, (rows, cols): (usize, usize)) -> CheckResult<String> {
    let n = rows * cols;
    if let Some(skip) = room(gpu, 2 * 4 * n as u64) {
        return Ok(skip);
    }
    let seed = rng.next_u64() as u32;
    let input: DeviceBuffer<f32> = random_buffer(gpu, n, Fill::Bits, seed)?;
    let mut output = gpu.poisoned::<f32>(n, POISON_BITS)?;
    lib::transpose(gpu, &input, &mut output, rows, cols)?;
    gpu.synchronize()?;
    drop(input);
    let got = output.to_vec()?;
    // Arbitrary bit patterns (NaNs too) must arrive unchanged: compare the words. Output element
    // `c * rows + r` is input element `r * cols + c`.
    let got: &[u32] = bytemuck::cast_slice(&got);
    compare_with(&format!("transpose of {rows}x{cols}"), got, |i| {
        let (c, r) = (i / rows, i % rows);
        fill_value((r * cols + c) as u64, seed, Fill::Bits)
    })?;
    let method = format!("{:?}", lib::choose(&output, &output, rows, cols)).to_lowercase();
    Ok(format!("{rows}x{cols} ({n} floats, {method} tile), every element against the CPU"))
}
