//! FP32 matrix multiply: launchers, the float64 CPU reference and registry entries for
//! `kernels-gpu/src/matmul.rs` (naive, shared tiles, tiles with prefetch, register blocking).
use cust::memory::DeviceSlice;

use crate::check::{POISON_BITS, Rng, close};
use crate::error::{Error, Result, check_aligned16, elements, exactly, in_range};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Variant, Workload, variant};
use crate::util::{Fill, random_buffer};
pub use coalesce_kernels::matmul::*;

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

/// The kernels, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Naive,
    Tiled,
    Prefetch,
    RegisterBlocked,
}

impl Method {
    pub const fn kernel(self) -> &'static str {
        match self {
            Method::Naive => "matmul_naive",
            Method::Tiled => "matmul_tiled",
            Method::Prefetch => "matmul_prefetch",
            Method::RegisterBlocked => "matmul_regblock",
        }
    }
}

/// Validates `C (m × n) = A (m × k) · B (k × n)` for `method` and returns its launch.
pub fn plan(method: Method, (m, n, k): (usize, usize, usize), lens: (usize, usize, usize)) -> Result<Launch> {
    for (what, v) in [("m", m), ("n", n), ("k", k)] {
        elements(what, v)?;
    }
    for (what, v) in [("m * k", m.saturating_mul(k)), ("k * n", k.saturating_mul(n)), ("m * n", m.saturating_mul(n))] {
        elements(what, v)?;
    }
    exactly("matmul A", lens.0, m * k)?;
    exactly("matmul B", lens.1, k * n)?;
    exactly("matmul C", lens.2, m * n)?;
    let (m32, n32, k32) = (m as u32, n as u32, k as u32);
    let launch = match method {
        Method::Naive => Launch { grid: naive_grid(m32, n32), block: NAIVE_BLOCK, shared_bytes: 0 },
        Method::Tiled | Method::Prefetch => {
            Launch { grid: tiled_grid(m32, n32), block: (TILE, TILE), shared_bytes: 2 * TILE * TILE * 4 }
        }
        Method::RegisterBlocked => {
            if !regblock_supports(m32, n32, k32) {
                return Err(Error::Unsupported(format!(
                    "register-blocked matmul needs m and n multiples of {BM} and k a multiple of {BK}, got {m} x {n} x {k}"
                )));
            }
            Launch { grid: (n32 / BN, m32 / BM), block: (RB_THREADS, 1), shared_bytes: RB_SHARED_FLOATS * 4 }
        }
    };
    in_range("row blocks", launch.grid.1.into(), 1, 65_535)?;
    Ok(launch)
}

/// Queues `c = a · b` (row-major, `a` is m × k, `b` is k × n) with `method`.
pub fn run(
    gpu: &Gpu,
    method: Method,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: (usize, usize, usize),
) -> Result<()> {
    let launch = plan(method, shape, (a.len(), b.len(), c.len()))?;
    let (pa, pb, pc) = (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
    if method == Method::RegisterBlocked {
        for (what, p) in [("matmul A", pa.as_raw()), ("matmul B", pb.as_raw()), ("matmul C", pc.as_raw())] {
            check_aligned16(what, p)?;
        }
    }
    let (m, n, k) = (shape.0 as u32, shape.1 as u32, shape.2 as u32);
    gpu.launch(method.kernel(), launch, kernel_args![pa, pb, pc, m, n, k])
}

/// The library's matmul: register-blocked where the shape allows, else tiled with prefetch.
pub fn matmul(
    gpu: &Gpu,
    a: &DeviceSlice<f32>,
    b: &DeviceSlice<f32>,
    c: &mut DeviceSlice<f32>,
    shape: (usize, usize, usize),
) -> Result<()> {
    let (m, n, k) = shape;
    let fits = m <= u32::MAX as usize
        && n <= u32::MAX as usize
        && k <= u32::MAX as usize
        && regblock_supports(m as u32, n as u32, k as u32);
    run(gpu, if fits { Method::RegisterBlocked } else { Method::Prefetch }, a, b, c, shape)
}

/// Float64 CPU reference (row-major, i-k-j order so the inner loop streams rows of B).
pub fn matmul_cpu(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let x = f64::from(a[i * k + p]);
            for (r, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *r += x * f64::from(y);
            }
        }
    }
    c
}

fn check(gpu: &Gpu, rng: &mut Rng, method: Method) -> Result<String> {
    let shapes: &[_] = if method == Method::RegisterBlocked { &REGBLOCK_SHAPES } else { &CHECK_SHAPES };
    let mut worst = 0.0f64;
    for &shape in shapes {
        let (m, n, k) = shape;
        let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
        let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let mut dc = gpu.poisoned::<f32>(m * n, POISON_BITS)?;
        run(gpu, method, &da, &db, &mut dc, shape)?;
        gpu.synchronize()?;
        let err = close(&format!("{m}x{n}x{k}"), &dc.as_host_vec()?, &matmul_cpu(&a, &b, shape), TOLERANCE)?;
        worst = worst.max(err);
    }
    if method == Method::RegisterBlocked {
        // The kernel refuses what it cannot do, before any launch.
        let (da, db) = (gpu.upload(&[0.5f32; 100 * 8])?, gpu.upload(&[0.5f32; 8 * 128])?);
        let mut dc = gpu.poisoned::<f32>(100 * 128, POISON_BITS)?;
        if !matches!(run(gpu, method, &da, &db, &mut dc, (100, 128, 8)), Err(Error::Unsupported(_))) {
            return Err(Error::Unsupported("100 x 128 x 8 should have been refused".into()));
        }
    }
    Ok(format!("shapes {shapes:?}, worst relative error {worst:.1e}"))
}

fn bench(gpu: &Gpu, method: Method) -> Result<Workload> {
    let s = BENCH_SIZE;
    let a = random_buffer::<f32>(gpu, s * s, Fill::Unit, 8)?;
    let b = random_buffer::<f32>(gpu, s * s, Fill::Unit, 9)?;
    let mut c = random_buffer::<f32>(gpu, s * s, Fill::Unit, 10)?;
    Ok(Workload::new(12 * (s * s) as u64, move |gpu| run(gpu, method, &a, &b, &mut c, (s, s, s)))
        .with_flops(2 * (s * s * s) as u64))
}

/// The matmul family, in teaching order.
pub const VARIANTS: &[Variant] = &[
    variant!(
        "matmul",
        "naive",
        Method::Naive.kernel(),
        Method::Naive,
        "one output a thread, operands straight from global memory"
    ),
    variant!(
        "matmul",
        "tiled",
        Method::Tiled.kernel(),
        Method::Tiled,
        "32x32 shared-memory tiles, barriers after store and after use"
    ),
    variant!(
        "matmul",
        "prefetch",
        Method::Prefetch.kernel(),
        Method::Prefetch,
        "tiles with the next one loaded into registers during compute"
    ),
    variant!(
        "matmul",
        "regblock",
        Method::RegisterBlocked.kernel(),
        Method::RegisterBlocked,
        "128x128 block tile, 8x8 per thread, 16-byte shared loads, 2 stages"
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_rejects_bad_shapes() {
        assert!(matches!(plan(Method::Naive, (0, 4, 4), (0, 16, 0)), Err(Error::Empty(_))));
        assert!(matches!(
            plan(Method::Naive, (2, 3, 4), (8, 12, 5)),
            Err(Error::LengthMismatch { what: "matmul C", .. })
        ));
        assert!(matches!(
            plan(Method::Tiled, (2, 3, 4), (7, 12, 6)),
            Err(Error::LengthMismatch { what: "matmul A", .. })
        ));
        assert!(matches!(plan(Method::RegisterBlocked, (100, 128, 8), (800, 1024, 12800)), Err(Error::Unsupported(_))));
        let l = plan(Method::RegisterBlocked, (256, 384, 8), (2048, 3072, 98304)).unwrap();
        assert_eq!((l.grid, l.block, l.shared_bytes), ((3, 2), (256, 1), 16384));
        assert_eq!(plan(Method::Tiled, (33, 65, 7), (231, 455, 2145)).unwrap().grid, (3, 2));
    }

    #[test]
    fn cpu_reference_multiplies() {
        // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]
        assert_eq!(matmul_cpu(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], (2, 2, 2)), [19.0, 22.0, 43.0, 50.0]);
        // 1 x 3 times 3 x 1.
        assert_eq!(matmul_cpu(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], (1, 1, 3)), [32.0]);
    }
}
