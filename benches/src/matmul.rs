//! Matmul lessons: the registry entries, checks and workloads for `coalesce::matmul`.
use std::ops::Range;

use coalesce::matmul::{self as lib, Method, matmul_cpu};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{Error, Gpu, Result};
use coalesce_kernels::matmul::{
    BM, BN, WARPTILE, WARPTILE_ASYNC, WARPTILE_SMALL, matmul_spread_edge_waves, matmul_spread_streamk_waves,
    matmul_warptile_streamk_waves,
};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, close};
use crate::family::{Family, Param, Row};
use crate::workload::{Workload, random_buffer};

/// Relative error (‖C − R‖₂ / ‖R‖₂ against float64) every kernel must stay under.
pub const TOLERANCE: f64 = 1e-5;
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
/// Extra shapes for the guarded warp-tiled kernel: partial tiles in m, n and k at once, k below
/// one k step, a single row and column, whole tiles (which it takes too).
pub const EDGE_EXTRA_SHAPES: [(usize, usize, usize); 5] =
    [(300, 260, 1000), (129, 385, 17), (1, 1000, 5), (1000, 1, 33), (256, 256, 256)];
/// The benchmark: 4096³.
pub const BENCH_SIZE: usize = 4096;
/// Sizes (s × s × s) the warp-tiled kernel is swept over.
const SIZE: Param = Param { name: "size", sweep: &[1024, 2048, 4096, 8192], check: &[1024], labels: None };
/// Sizes the stream-K kernel is swept over: 3072³ (288 tiles, 2.18 waves on 132 SMs), 4096³
/// (3.88) and 8192³ (15.5).
const STREAMK_SIZE: Param = Param { name: "size", sweep: &[3072, 4096, 8192], check: &[3072], labels: None };
/// Sizes the spread ring's stream-K is swept over: stream-K's, and 2048³ (128 tiles, one wave
/// short of 132 SMs by 4 blocks: all shared).
const SPREAD_STREAMK_SIZE: Param =
    Param { name: "size", sweep: &[2048, 3072, 4096, 8192], check: &[3072], labels: None };
/// Sizes the small-grid kernel is swept over: where it is chosen, and the next size up.
const SMALL_SIZE: Param = Param { name: "size", sweep: &[1024, 2048], check: &[1024], labels: None };
/// Shapes (m, n, k) the guarded kernel is benchmarked at, selected by the `shape` parameter:
/// one short of 4096, one past, all three different, and 4096³ itself for the cost of the guards.
pub const EDGE_BENCH_SHAPES: [(usize, usize, usize); 4] =
    [(4095, 4095, 4095), (4097, 4097, 4097), (4000, 4100, 4033), (4096, 4096, 4096)];
/// `shape` 0..=3: an index into [`EDGE_BENCH_SHAPES`].
const EDGE_SHAPE: Param = Param { name: "shape", sweep: &[0, 1, 2, 3], check: &[0], labels: Some(edge_shape) };
/// An [`EDGE_SHAPE`] value as `MxNxK` (`0`: `4095x4095x4095`).
fn edge_shape(value: u32) -> String {
    EDGE_BENCH_SHAPES.get(value as usize).map_or_else(|| value.to_string(), |(m, n, k)| format!("{m}x{n}x{k}"))
}
/// Rows of C compared around each band boundary (and at both ends) of the banded checks that
/// are too large to compare whole.
const WINDOW: usize = 2 * BM as usize;
/// Largest C the banded check compares in full (64 Mi floats); past it, rows near the band
/// boundaries only.
const FULL_COMPARE: usize = 1 << 26;

/// The registry's matmul variants are the library's methods themselves, in teaching order.
impl Family for Method {
    const NAME: &'static str = "matmul";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, _: u32) -> CheckResult<String> {
        let shapes: Vec<(usize, usize, usize)> = match self {
            Method::RegisterBlocked => REGBLOCK_SHAPES.to_vec(),
            Method::WarpTile | Method::WarpTileSm90 => WARPTILE_SHAPES.to_vec(),
            Method::WarpTileAsync | Method::WarpTileSpread => WARPTILE_ASYNC_SHAPES.to_vec(),
            Method::WarpTileStreamK | Method::WarpTileSpreadStreamK => STREAMK_SHAPES.to_vec(),
            Method::WarpTileSmall => WARPTILE_SMALL_SHAPES.to_vec(),
            Method::WarpTileEdge | Method::WarpTileEdgeSm90 => {
                CHECK_SHAPES.iter().chain(&EDGE_EXTRA_SHAPES).copied().collect()
            }
            Method::WarpTileSpreadEdge => {
                CHECK_SHAPES.iter().chain(&EDGE_EXTRA_SHAPES).chain(&SPREAD_EDGE_SHAPES).copied().collect()
            }
            Method::Naive | Method::Tiled | Method::Prefetch | Method::CpAsync => CHECK_SHAPES.to_vec(),
        };
        let mut worst = 0.0f64;
        for &shape in &shapes {
            let (m, n, k) = shape;
            let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
            let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
            let mut dc = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
            lib::run(gpu, self, &da, &db, &mut dc, shape)?;
            gpu.synchronize()?;
            let err = close(&format!("{m}x{n}x{k}"), &dc.to_vec()?, &matmul_cpu(&a, &b, shape)?, TOLERANCE)?;
            worst = worst.max(err);
        }
        let mut extra = String::new();
        if self.whole_tiles_only() {
            // The kernel refuses what it cannot do, before any launch.
            let (da, db) = (gpu.upload(&[0.5f32; 100 * 16])?, gpu.upload(&[0.5f32; 16 * 128])?);
            let mut dc = gpu.poisoned::<f32>(100 * 128, POISON_BITS)?;
            match lib::run(gpu, self, &da, &db, &mut dc, (100, 128, 16)) {
                Err(Error::Unsupported(_)) => {}
                other => {
                    return Err(CheckError::Unexpected {
                        what: format!("{} 100 x 128 x 16", self.kernel().name()),
                        expected: "Error::Unsupported".into(),
                        got: format!("{other:?}"),
                    });
                }
            }
        }
        if matches!(self, Method::WarpTileEdge | Method::WarpTileEdgeSm90 | Method::WarpTileSpreadEdge) {
            extra = format!("; {}", check_unaligned(self, gpu, rng)?);
        }
        if self == Method::WarpTileSpreadEdge {
            extra = format!("{extra}; {}", check_library_edge(gpu, rng)?);
        }
        let banded = check_banded(self, gpu, rng)?;
        Ok(format!("shapes {shapes:?}, worst relative error {worst:.1e}{extra}; {banded}"))
    }

    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload> {
        let (m, n, k) = bench_shape(self, value);
        let a = random_buffer::<f32>(gpu, m * k, Fill::Unit, 8)?;
        let b = random_buffer::<f32>(gpu, k * n, Fill::Unit, 9)?;
        let mut c = random_buffer::<f32>(gpu, m * n, Fill::Unit, 10)?;
        let bytes = 4 * (m * k + k * n + m * n) as u64;
        Ok(Workload::new(bytes, move |gpu| lib::run(gpu, self, &a, &b, &mut c, (m, n, k)))
            .with_flops(2 * (m * n * k) as u64))
    }

    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>> {
        // One band: every benchmark shape fits one launch.
        let shape = bench_shape(self, value);
        coalesce::model::matmul::run(self, shape, sms).map(Some)
    }
}

/// The matmul variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Method>] = &[
    row(Method::Naive, "one output a thread, operands straight from global memory"),
    row(Method::Tiled, "32x32 shared-memory tiles, barriers after store and after use"),
    row(Method::Prefetch, "tiles with the next one loaded into registers during compute"),
    row(Method::CpAsync, "32x32 tiles through a 4-stage cp.async ring: 3 tiles in flight, 1 barrier a tile (sm_90)"),
    row(Method::RegisterBlocked, "128x128 block tile, 8x8 per thread, 16-byte shared loads, 2 stages"),
    row(Method::WarpTile, "warps of 64x32 (lanes 8x4), BK 16, next fragments loaded during the FMAs").swept(SIZE),
    row(Method::WarpTileSm90, "warptile built for sm_90: next A stored, B loaded at k step 12 of 16 (sm_90)").swept(SIZE),
    row(Method::WarpTileAsync, "128x256 blocks, 8x16 a thread, 3-stage cp.async ring of k 16, 1 block/SM (sm_90)").swept(SIZE),
    // Its shared row names it; the whole waves launch first, and the model counts both.
    row(Method::WarpTileStreamK, "warptile_async over the whole waves by linear block id, then one row shares the rest by k iteration (sm_90)").launches(matmul_warptile_streamk_waves).swept(STREAMK_SIZE).profiling(2),
    row(Method::WarpTileSpread, "warptile_async with each thread's 12 copies a tile issued 2 at a time over the k steps, 4-stage ring (sm_90)").swept(SIZE),
    row(Method::WarpTileSpreadStreamK, "stream-K over warptile_spread's k loop: whole waves, then one row shares the rest (sm_90)").launches(matmul_spread_streamk_waves).swept(SPREAD_STREAMK_SIZE).profiling(2),
    row(Method::WarpTileSpreadEdge, "stream-K over the spread ring for any shape: A rows clamped, B columns wrapped, B copied a float at a time, partial k tile last (sm_90)").launches(matmul_spread_edge_waves).swept(EDGE_SHAPE).profiling(2),
    row(Method::WarpTileSmall, "warptile on 64x128 blocks of 4 warps, for grids smaller than the GPU").swept(SMALL_SIZE),
    row(Method::WarpTileEdge, "warptile with guarded single-float loads: any shape (4095, 4097, 4000x4100x4033, 4096)").swept(EDGE_SHAPE),
    row(Method::WarpTileEdgeSm90, "warptile_edge built for sm_90 with warptile's interleaved lanes: fragment loads pair up (sm_90)").swept(EDGE_SHAPE),
];

/// A method's row: it launches its own kernel, and is named after it.
const fn row(method: Method, summary: &'static str) -> Row<Method> {
    Row::by_kernel(method, summary, method.kernel())
}

/// The shape `(m, n, k)` `method` is benchmarked (and modelled) at for its parameter `value`.
fn bench_shape(method: Method, value: u32) -> (usize, usize, usize) {
    match method {
        Method::WarpTile
        | Method::WarpTileSm90
        | Method::WarpTileAsync
        | Method::WarpTileStreamK
        | Method::WarpTileSpread
        | Method::WarpTileSpreadStreamK
        | Method::WarpTileSmall => (value as usize, value as usize, value as usize),
        Method::WarpTileEdge | Method::WarpTileEdgeSm90 | Method::WarpTileSpreadEdge => {
            EDGE_BENCH_SHAPES[value as usize]
        }
        Method::Naive | Method::Tiled | Method::Prefetch | Method::CpAsync | Method::RegisterBlocked => {
            (BENCH_SIZE, BENCH_SIZE, BENCH_SIZE)
        }
    }
}

/// A guarded kernel (`method`) on operands that are not 16-byte aligned, as `matmul::matmul`
/// sends them when the unguarded kernel refuses: [`one_float_off`] at 256 × 384 × 160, where
/// `matmul::matmul` must choose the guarded kernel of this GPU's module.
fn check_unaligned(method: Method, gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let expected = |sm90| Some(if sm90 { Method::WarpTileEdgeSm90 } else { Method::WarpTileEdge });
    one_float_off(gpu, rng, (256, 384, 160), expected, Some(method))
}

/// `matmul::matmul` on a shape that is not whole tiles, large enough for stage 11
/// (`spread_edge_pays`: 170 tiles, 33 k tiles): [`one_float_off`] at 1153 × 4097 × 515, where
/// on sm_90 it must choose [`Method::WarpTileSpreadEdge`].
fn check_library_edge(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let (m, n, k) = (1153, 4097, 515);
    let pays = lib::spread_edge_pays(m as u32, n as u32, k as u32, gpu.multiprocessors());
    one_float_off(gpu, rng, (m, n, k), |sm90| (sm90 && pays).then_some(Method::WarpTileSpreadEdge), None)
}

/// An `m × n × k` multiply whose A, B and C start one float into their buffers (sub-slices, 4
/// bytes off a 16-byte boundary). `matmul::matmul`'s choice for it must be `expected(sm90)`
/// where that names one; the multiply runs through `matmul::matmul` where that choice is
/// `method` or no `method` is given, else `method` runs through `matmul::run`. Nothing may be
/// written before C, and C must be within [`TOLERANCE`] of the CPU.
fn one_float_off(
    gpu: &Gpu,
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    expected: impl Fn(bool) -> Option<Method>,
    method: Option<Method>,
) -> CheckResult<String> {
    let (a, b) = (rng.f32s(m * k + 1), rng.f32s(k * n + 1));
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut dc = gpu.poisoned::<f32>(m * n + 1, POISON_BITS)?;
    let (sa, sb) = (da.slice(1..)?, db.slice(1..)?);
    let mut sc = dc.slice_mut(1..)?;
    let sm90 = gpu.supports(coalesce_kernels::matmul::matmul_warptile_sm90).is_ok();
    let chosen = lib::choose(&sa, &sb, &sc, (m, n, k), gpu.multiprocessors(), sm90);
    let what = format!("{m}x{n}x{k} one float off");
    if let Some(expected) = expected(sm90)
        && chosen != expected
    {
        return Err(CheckError::Unexpected {
            what: format!("matmul::matmul's kernel for {what}"),
            expected: format!("{expected:?}"),
            got: format!("{chosen:?}"),
        });
    }
    let through = match method {
        Some(method) if method != chosen => {
            lib::run(gpu, method, &sa, &sb, &mut sc, (m, n, k))?;
            "matmul::run"
        }
        _ => {
            lib::matmul(gpu, &sa, &sb, &mut sc, (m, n, k))?;
            "matmul::matmul"
        }
    };
    gpu.synchronize()?;
    let got = dc.to_vec()?;
    if got[0].to_bits() != POISON_BITS {
        return Err(CheckError::Mismatch {
            what: format!("{what}: {through} wrote before C"),
            index: 0,
            got: got[0].to_string(),
            want: "the poison".into(),
        });
    }
    let err = close(&what, &got[1..], &matmul_cpu(&a[1..], &b[1..], (m, n, k))?, TOLERANCE)?;
    Ok(format!("{what} through {through} ({chosen:?} chosen), relative error {err:.1e}"))
}

/// A matrix one band taller than one launch takes (small n and k; for the whole-tiles-only
/// kernels the smallest whole tiles): the library splits it into two row bands. Compared in
/// full where C is small, else at both ends and around the band boundary.
fn check_banded(method: Method, gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let band = method.band_rows() as usize;
    let (m, n, k) = match method {
        Method::RegisterBlocked => (band + BM as usize, BN as usize, 8),
        Method::WarpTile | Method::WarpTileSm90 => (band + WARPTILE.bm as usize, WARPTILE.bn as usize, 16),
        Method::WarpTileAsync | Method::WarpTileStreamK | Method::WarpTileSpread | Method::WarpTileSpreadStreamK => {
            (band + WARPTILE_ASYNC.bm as usize, WARPTILE_ASYNC.bn as usize, 16)
        }
        Method::WarpTileSmall => (band + WARPTILE_SMALL.bm as usize, WARPTILE_SMALL.bn as usize, 16),
        Method::Naive
        | Method::Tiled
        | Method::Prefetch
        | Method::CpAsync
        | Method::WarpTileEdge
        | Method::WarpTileEdgeSm90
        | Method::WarpTileSpreadEdge => (band + 33, 5, 3),
    };
    let need = 4 * (m * k + k * n + m * n) as u64 + (1 << 30);
    if gpu.info().memory_bytes < need {
        return Ok(format!("banded {m}x{n}x{k} skipped (needs {:.1} GB)", need as f64 / 1e9));
    }
    let a = random_buffer::<f32>(gpu, m * k, Fill::Unit, rng.next_u64() as u32)?;
    let b_host = rng.f32s(k * n);
    let b = gpu.upload(&b_host)?;
    let mut c = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
    lib::run(gpu, method, &a, &b, &mut c, (m, n, k))?;
    gpu.synchronize()?;
    let windows: Vec<Range<usize>> = if m * n <= FULL_COMPARE {
        vec![Range { start: 0, end: m }]
    } else {
        vec![0..WINDOW, band - WINDOW..band + WINDOW.min(m - band), m - WINDOW..m]
    };
    let mut worst = 0.0f64;
    for rows in &windows {
        let a_rows = a.slice(rows.start * k..rows.end * k)?.to_vec()?;
        let c_rows = c.slice(rows.start * n..rows.end * n)?.to_vec()?;
        let want = matmul_cpu(&a_rows, &b_host, (rows.len(), n, k))?;
        worst = worst.max(close(&format!("banded {m}x{n}x{k} rows {rows:?}"), &c_rows, &want, TOLERANCE)?);
    }
    Ok(format!("banded {m}x{n}x{k} (2 bands) rows {windows:?}, worst {worst:.1e}"))
}
