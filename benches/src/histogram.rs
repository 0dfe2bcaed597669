//! Histogram lessons: the registry entries, checks and workloads for `coalesce::histogram`.
use coalesce::histogram::{self as lib, BINS, Method, histogram_cpu};
use coalesce::{DeviceBuffer, Error, Gpu, Result};

use crate::check::{CheckError, CheckResult, POISON_BITS, Rng, same_values};
use crate::family::{Family, Labels, Param, Row};
use crate::workload::Workload;

/// Sizes checked: below one vector, every tail length, around one block's 4096 elements, a large
/// odd size, and 2^24.
pub const CHECK_SIZES: [usize; 9] = [1, 3, 4, 5, 4095, 4097, 40_961, 1_000_003, 1 << 24];
/// Values of the benchmark: 2^26 (256 MiB read).
pub const BENCH_N: usize = 1 << 26;

/// The input: 0 = uniform (every bin 1/256 of the values), 1 = skewed (bin `k` gets `2^-(k+1)`
/// of them: half in bin 0, a quarter in bin 1, ..., bins 33 and up none).
const INPUT: Param = Param { name: "input", sweep: &[0, 1], check: &[0, 1], labels: Some(Labels::Each(input_kind)) };
/// An [`INPUT`] value as `uniform` or `skewed`.
fn input_kind(value: u32) -> String {
    match value {
        0 => "uniform".into(),
        1 => "skewed".into(),
        v => v.to_string(),
    }
}

/// `n` values of input kind `kind` (see [`INPUT`]).
pub fn values(rng: &mut Rng, n: usize, kind: u32) -> Vec<u32> {
    (0..n)
        .map(|_| {
            let high = rng.next_u64() as u32 & !(BINS - 1);
            if kind == 0 { rng.next_u64() as u32 } else { high | (rng.next_u64() as u32).leading_zeros() }
        })
        .collect()
}

/// The benchmark's input of kind `kind`: [`BENCH_N`] values from a fixed seed per kind (the
/// model replays the same values).
pub fn bench_input(kind: u32) -> Vec<u32> {
    bench_values(kind, BENCH_N)
}

/// The first `n` values of [`bench_input`] (the warp pictures draw the first block's).
pub fn bench_values(kind: u32, n: usize) -> Vec<u32> {
    values(&mut Rng::new(u64::from(kind) + 11), n, kind)
}

/// The registry's histogram variants are the library's methods themselves, in teaching order.
impl Family for Method {
    const NAME: &'static str = "histogram";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, kind: u32) -> CheckResult<String> {
        for n in CHECK_SIZES {
            let input = values(rng, n, kind);
            let d_input = gpu.upload(&input)?;
            let mut bins = gpu.poisoned::<u32>(BINS as usize, POISON_BITS)?;
            lib::run(gpu, self, &d_input, &mut bins)?;
            gpu.synchronize()?;
            same_values(&format!("n={n}"), &bins.to_vec()?, &histogram_cpu(&input))?;
        }
        // Refused before any launch: bins of the wrong length.
        let d_input = gpu.upload(&[1u32; 8])?;
        let mut short = gpu.poisoned::<u32>(BINS as usize - 1, POISON_BITS)?;
        match lib::run(gpu, self, &d_input, &mut short) {
            Err(Error::LengthMismatch { .. }) => {}
            other => {
                return Err(CheckError::Unexpected {
                    what: "histogram into 255 bins".into(),
                    expected: "Error::LengthMismatch".into(),
                    got: format!("{other:?}"),
                });
            }
        }
        Ok(format!("n in {CHECK_SIZES:?}; 255 bins refused"))
    }

    fn model(self, kind: u32, _sms: u32) -> Result<Option<coalesce::model::Counts>> {
        // Only the DRAM footprint of the bins depends on the values (which bins the atomics
        // touch), so the replay gets the bench's own input, generated as `bench` generates it.
        coalesce::model::histogram::run(self, &bench_input(kind)).map(Some)
    }

    fn bench(self, gpu: &Gpu, kind: u32) -> Result<Workload> {
        let input: DeviceBuffer<u32> = gpu.upload(&bench_input(kind))?;
        let mut bins = gpu.poisoned::<u32>(BINS as usize, 0)?;
        Ok(Workload::new(4 * BENCH_N as u64, move |gpu| lib::run(gpu, self, &input, &mut bins)))
    }
}

/// The histogram variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Method>] = &[
    row(Method::Global, "256 bins, one red.global.add per element: same-address atomics queue in L2").swept(INPUT),
    row(Method::Shared, "per-block shared bins (red.shared.add), then one global atomic per bin and block").swept(INPUT),
    row(Method::Cluster, "shared bins combined over an 8-block cluster via mapa + ld.shared::cluster, one flush per cluster (sm_90)").swept(INPUT),
];

/// A method's row: it launches its own kernel, and is named after it.
const fn row(method: Method, summary: &'static str) -> Row<Method> {
    Row::by_kernel(method, summary, method.kernel())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skewed_input_halves_bin_by_bin() {
        let counts = histogram_cpu(&values(&mut Rng::new(3), 1 << 20, 1));
        assert!((counts[0] as f64 / (1 << 20) as f64 - 0.5).abs() < 0.01);
        assert!((counts[1] as f64 / (1 << 20) as f64 - 0.25).abs() < 0.01);
        assert!(counts[33..].iter().all(|&c| c == 0));
        let uniform = histogram_cpu(&values(&mut Rng::new(3), 1 << 20, 0));
        assert!(uniform.iter().all(|&c| (3500..4700).contains(&c)));
    }
}
