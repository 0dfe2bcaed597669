//! Matmul lessons: the registry entries, checks and workloads for `coalesce::matmul`.
use std::ops::Range;

use coalesce::matmul::{self as lib, Bench, Bounds, Method, matmul_cpu};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{Error, Gpu, Result};
use coalesce_kernels::matmul::BM;

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, SANITIZER_MAX_WORK, close, sanitizer_sized};
use crate::family::{Family, Labels, Param, Row, range};
use crate::workload::{Workload, random_buffer};

/// Relative error (‖C − R‖₂ / ‖R‖₂ against float64) every kernel must stay under.
pub const TOLERANCE: f64 = 1e-5;
/// The values of a [`Bench::Shapes`] sweep (indices into its shapes), as many from the front as
/// it has shapes: at most 8 (asserted as the table is built).
const SHAPE_INDICES: [u32; 8] = range(0);
/// Rows of C compared around each band boundary (and at both ends) of the banded checks that
/// are too large to compare whole.
const WINDOW: usize = 2 * BM as usize;
/// Largest C the banded check compares in full (64 Mi floats); past it, rows near the band
/// boundaries only.
const FULL_COMPARE: usize = 1 << 26;

/// The registry's matmul variants are the library's methods themselves, in teaching order.
impl Family for Method {
    const NAME: &'static str = "matmul";
    const ROWS: &'static [Row<Self>] = &VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, _: u32) -> CheckResult<String> {
        let stage = self.stage();
        let mut shapes: Vec<(usize, usize, usize)> =
            stage.lesson.checks.iter().flat_map(|set| set.iter()).copied().collect();
        let sanitizer = sanitizer_sized();
        let all = shapes.len();
        if sanitizer {
            shapes.retain(|&(m, n, k)| m * n * k <= SANITIZER_MAX_WORK);
        }
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
        if sanitizer {
            let left = all - shapes.len();
            return Ok(format!(
                "shapes {shapes:?}, worst relative error {worst:.1e}; under a sanitizer: {left} of {all} shapes past \
                 {SANITIZER_MAX_WORK} multiply-adds, the band and library-choice shapes left out"
            ));
        }
        // The guarded warp-tiled stages are where `matmul::matmul` sends what the unguarded ones
        // refuse.
        let guarded = stage.bounds == Bounds::Guarded;
        if guarded && stage.warp_tile.is_some() {
            extra = format!("; {}", check_unaligned(self, gpu, rng)?);
        }
        // The guarded stream-K stage (11) is `matmul::matmul`'s where `spread_edge_pays`.
        if guarded && stage.waves.is_some() {
            extra = format!("{extra}; {}", check_library_edge(gpu, rng)?);
        }
        // Stages 12 and 13 are `matmul::matmul`'s for m <= 8, and n <= 8 past that, at any
        // alignment: each chosen for its shape one float off (A's rows then read 4 bytes at a time).
        let one_float_shape = match self {
            Method::Skinny => Some((8, 1000, 516)),
            Method::Thin => Some((1000, 8, 516)),
            _ => None,
        };
        if let Some(shape) = one_float_shape {
            extra = format!("{extra}; {}", one_float_off(gpu, rng, shape, |_| Some(self), None)?);
        }
        let banded = check_banded(self, gpu, rng)?;
        Ok(format!("shapes {shapes:?}, worst relative error {worst:.1e}{extra}; {banded}"))
    }

    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload> {
        let (m, n, k) = self.stage().lesson.bench.shape(value)?;
        let a = random_buffer::<f32>(gpu, m * k, Fill::Unit, 8)?;
        let b = random_buffer::<f32>(gpu, k * n, Fill::Unit, 9)?;
        let mut c = random_buffer::<f32>(gpu, m * n, Fill::Unit, 10)?;
        let bytes = 4 * (m * k + k * n + m * n) as u64;
        Ok(Workload::new(bytes, move |gpu| lib::run(gpu, self, &a, &b, &mut c, (m, n, k)))
            .with_flops(2 * (m * n * k) as u64))
    }

    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>> {
        // One band: every benchmark shape fits one launch.
        let shape = self.stage().lesson.bench.shape(value)?;
        coalesce::matmul::model(self, shape, sms).map(Some)
    }
}

/// The matmul variants, one row each, from the table of stages (teaching order).
const VARIANTS: [Row<Method>; Method::ALL.len()] = {
    let mut rows = [row(Method::Naive); Method::ALL.len()];
    let mut i = 0;
    while i < rows.len() {
        rows[i] = row(Method::ALL[i]);
        i += 1;
    }
    rows
};

/// A stage's row: it launches its own kernel, and is named after it.
const fn row(method: Method) -> Row<Method> {
    let stage = method.stage();
    let row = Row::by_kernel(method, stage.lesson.summary, stage.kernel);
    // Stream-K's shared row names it; the whole waves launch first, and the model counts both.
    let row = match stage.waves {
        Some(waves) => row.launches(waves.kernel).profiling(2),
        None => row,
    };
    match stage.lesson.bench {
        Bench::Fixed => row,
        Bench::Cubes { sweep, check } => row.swept(Param { name: "size", sweep, check, labels: None }),
        Bench::Shapes { sweep, check } => {
            // Checked as the table is built, so a stage's list that breaks them does not compile.
            assert!(!sweep.is_empty() && sweep.len() <= SHAPE_INDICES.len(), "1 to 8 benchmark shapes a stage");
            let mut i = 0;
            while i < check.len() {
                assert!((check[i] as usize) < sweep.len(), "a checked shape index past the stage's shapes");
                i += 1;
            }
            let indices = SHAPE_INDICES.split_at(sweep.len()).0;
            row.swept(Param { name: "shape", sweep: indices, check, labels: Some(Labels::Shapes(sweep)) })
        }
    }
}

/// A guarded kernel (`method`) on operands that are not 16-byte aligned, as `matmul::matmul`
/// sends them when the unguarded kernel refuses: [`one_float_off`] at 1024 × 1152 × 160, where
/// `matmul::matmul` must choose the guarded kernel of this GPU's module (its tiles fill an H100
/// on their own, so split-K does not pay, and 10 k tiles are too few for stage 11).
fn check_unaligned(method: Method, gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let expected = |sm90| Some(if sm90 { Method::WarptileEdgeSm90 } else { Method::WarptileEdge });
    one_float_off(gpu, rng, (1024, 1152, 160), expected, Some(method))
}

/// `matmul::matmul` on a shape that is not whole tiles, large enough for stage 11
/// (`spread_edge_pays`: 170 tiles, 33 k tiles): [`one_float_off`] at 1153 × 4097 × 515, where
/// on sm_90 it must choose [`Method::SpreadEdge`].
fn check_library_edge(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let (m, n, k) = (1153, 4097, 515);
    let pays = lib::spread_edge_pays(m as u32, n as u32, k as u32, gpu.multiprocessors());
    one_float_off(gpu, rng, (m, n, k), |sm90| (sm90 && pays).then_some(Method::SpreadEdge), None)
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
    let (m, n, k) = match method.stage().bounds {
        Bounds::WholeTiles { bm, bn, bk } => (band + bm as usize, bn as usize, bk as usize),
        Bounds::Guarded => (band + 33, 5, 3),
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
