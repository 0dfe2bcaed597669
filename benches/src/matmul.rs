//! Matmul lessons: the registry entries, checks and workloads for `coalesce::matmul`.
use std::ops::Range;

use coalesce::matmul::{self as lib, BM, BN, Method, matmul_cpu};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{Error, Gpu, Result};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, close};
use crate::registry::Family;
use crate::workload::{Workload, random_buffer};

/// Relative error (‖C − R‖₂ / ‖R‖₂ against float64) every kernel must stay under.
pub const TOLERANCE: f64 = 1e-5;
/// Shapes (m, n, k) checked for the general kernels: 1, odd, prime and non-tile sizes.
pub const CHECK_SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (33, 17, 65), (127, 131, 67), (257, 96, 200), (512, 512, 512)];
/// Shapes checked for the register-blocked kernel (multiples of its 128 × 128 × 8 tile).
pub const REGBLOCK_SHAPES: [(usize, usize, usize); 4] =
    [(128, 128, 8), (256, 384, 136), (128, 640, 1000), (512, 512, 512)];
/// The benchmark: 4096³.
pub const BENCH_SIZE: usize = 4096;
/// Rows of C compared around each band boundary (and at both ends) of the banded checks that
/// are too large to compare whole.
const WINDOW: usize = 2 * BM as usize;
/// Largest C the banded check compares in full (64 Mi floats); past it, rows near the band
/// boundaries only.
const FULL_COMPARE: usize = 1 << 26;

/// The matmul variants, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matmul {
    /// One output a thread.
    Naive,
    /// 32 × 32 shared-memory tiles.
    Tiled,
    /// Tiles with the next one prefetched into registers.
    Prefetch,
    /// Tiles through a 4-stage cp.async pipeline (Hopper module).
    CpAsync,
    /// 128 × 128 block tile, 8 × 8 a thread.
    Regblock,
}

impl Family for Matmul {
    const NAME: &'static str = "matmul";
    const VARIANTS: &'static [Self] =
        &[Matmul::Naive, Matmul::Tiled, Matmul::Prefetch, Matmul::CpAsync, Matmul::Regblock];

    fn name(self) -> &'static str {
        match self {
            Matmul::Naive => "naive",
            Matmul::Tiled => "tiled",
            Matmul::Prefetch => "prefetch",
            Matmul::CpAsync => "cp_async",
            Matmul::Regblock => "regblock",
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Matmul::Naive => "one output a thread, operands straight from global memory",
            Matmul::Tiled => "32x32 shared-memory tiles, barriers after store and after use",
            Matmul::Prefetch => "tiles with the next one loaded into registers during compute",
            Matmul::CpAsync => {
                "32x32 tiles through a 4-stage cp.async ring: 3 tiles in flight, 1 barrier a tile (sm_90)"
            }
            Matmul::Regblock => "128x128 block tile, 8x8 per thread, 16-byte shared loads, 2 stages",
        }
    }

    fn kernels(self) -> &'static [&'static str] {
        use coalesce::matmul::*;
        match self {
            Matmul::Naive => const { &[matmul_naive.name()] },
            Matmul::Tiled => const { &[matmul_tiled.name()] },
            Matmul::Prefetch => const { &[matmul_prefetch.name()] },
            Matmul::CpAsync => const { &[matmul_cp_async.name()] },
            Matmul::Regblock => const { &[matmul_regblock.name()] },
        }
    }

    fn check(self, gpu: &Gpu, rng: &mut Rng, _: u32) -> CheckResult<String> {
        let method = self.method();
        if let Err(e) = gpu.supports(method.kernel()) {
            return Ok(format!("SKIPPED ({e})"));
        }
        let shapes: &[_] = if method == Method::RegisterBlocked { &REGBLOCK_SHAPES } else { &CHECK_SHAPES };
        let mut worst = 0.0f64;
        for &shape in shapes {
            let (m, n, k) = shape;
            let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
            let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
            let mut dc = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
            lib::run(gpu, method, &da, &db, &mut dc, shape)?;
            gpu.synchronize()?;
            let err = close(&format!("{m}x{n}x{k}"), &dc.as_host_vec()?, &matmul_cpu(&a, &b, shape), TOLERANCE)?;
            worst = worst.max(err);
        }
        if method == Method::RegisterBlocked {
            // The kernel refuses what it cannot do, before any launch.
            let (da, db) = (gpu.upload(&[0.5f32; 100 * 8])?, gpu.upload(&[0.5f32; 8 * 128])?);
            let mut dc = gpu.poisoned::<f32>(100 * 128, POISON_BITS)?;
            match lib::run(gpu, method, &da, &db, &mut dc, (100, 128, 8)) {
                Err(Error::Unsupported(_)) => {}
                other => {
                    return Err(CheckError::Unexpected {
                        what: "regblock 100 x 128 x 8".into(),
                        expected: "Error::Unsupported".into(),
                        got: format!("{other:?}"),
                    });
                }
            }
        }
        let banded = self.check_banded(gpu, rng)?;
        Ok(format!("shapes {shapes:?}, worst relative error {worst:.1e}; {banded}"))
    }

    fn bench(self, gpu: &Gpu, _: u32) -> Result<Workload> {
        let (method, s) = (self.method(), BENCH_SIZE);
        gpu.supports(method.kernel())?;
        let a = random_buffer::<f32>(gpu, s * s, Fill::Unit, 8)?;
        let b = random_buffer::<f32>(gpu, s * s, Fill::Unit, 9)?;
        let mut c = random_buffer::<f32>(gpu, s * s, Fill::Unit, 10)?;
        Ok(Workload::new(12 * (s * s) as u64, move |gpu| lib::run(gpu, method, &a, &b, &mut c, (s, s, s)))
            .with_flops(2 * (s * s * s) as u64))
    }

    fn model(self, _: u32, _sms: u32) -> Result<Option<Counts>> {
        if self.method() == Method::CpAsync {
            // Not modelled yet: cp.async copies bypass the load/store pipe the model counts.
            return Ok(None);
        }
        // One band: BENCH_SIZE rows fit one launch of every method.
        coalesce::model::matmul::run(self.method(), (BENCH_SIZE, BENCH_SIZE, BENCH_SIZE)).map(Some)
    }
}

impl Matmul {
    /// The library method the variant runs.
    pub const fn method(self) -> Method {
        match self {
            Matmul::Naive => Method::Naive,
            Matmul::Tiled => Method::Tiled,
            Matmul::Prefetch => Method::Prefetch,
            Matmul::CpAsync => Method::CpAsync,
            Matmul::Regblock => Method::RegisterBlocked,
        }
    }

    /// A matrix one band taller than one launch takes (small n and k; for regblock the
    /// smallest whole tiles): the library splits it into two row bands. Compared in full where
    /// C is small, else at both ends and around the band boundary.
    fn check_banded(self, gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
        let method = self.method();
        let band = method.band_rows() as usize;
        let (m, n, k) = match method {
            Method::RegisterBlocked => (band + BM as usize, BN as usize, 8),
            _ => (band + 33, 5, 3),
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
            let a_rows = a.index(rows.start * k..rows.end * k).as_host_vec()?;
            let c_rows = c.index(rows.start * n..rows.end * n).as_host_vec()?;
            let want = matmul_cpu(&a_rows, &b_host, (rows.len(), n, k));
            worst = worst.max(close(&format!("banded {m}x{n}x{k} rows {rows:?}"), &c_rows, &want, TOLERANCE)?);
        }
        Ok(format!("banded {m}x{n}x{k} (2 launches) rows {windows:?}, worst {worst:.1e}"))
    }
}
