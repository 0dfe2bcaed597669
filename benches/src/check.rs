//! Random inputs, poisoned outputs and element-by-element comparison with CPU references, and
//! what the checks past 2^31 elements share: their size, their memory gate, a parallel compare.
use std::fmt::Display;

use coalesce::{DeviceBuffer, Gpu};

/// Why a check failed: the library refused or the driver failed, or the GPU's result differs
/// from the CPU reference. Mismatches are the harness's business, not the library's, so they
/// are not a [`coalesce::Error`].
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The library or the driver reported an error.
    #[error(transparent)]
    Library(#[from] coalesce::Error),
    /// A GPU result differs from the CPU reference.
    #[error("{what}: mismatch at element {index}: GPU {got}, CPU {want}")]
    Mismatch { what: String, index: usize, got: String, want: String },
    /// A refusal the library should have made did not happen (or a different error came).
    #[error("{what}: expected {expected}, got {got}")]
    Unexpected { what: String, expected: String, got: String },
}

impl From<cust::error::CudaError> for CheckError {
    fn from(e: cust::error::CudaError) -> Self {
        CheckError::Library(e.into())
    }
}

/// `Result` of a check.
pub type CheckResult<T> = std::result::Result<T, CheckError>;

/// A NaN with a recognisable payload: outputs are filled with it before a run, so an element
/// the kernel skipped never equals the reference.
pub const POISON_BITS: u32 = 0x7fc0_dead;

/// Elements of the 1-D checks: past 2^31 and not a multiple of 4 (a vector tail).
pub const LARGE_N: usize = (1 << 31) + 5;

/// Most multiply-adds (m·n·k) a matmul check shape may have under a sanitizer
/// ([`sanitizer_sized`]): racecheck watches every shared-memory access, and at 1152 × 4096 × 512
/// one stage's checks outlast the bundle's 5 minutes a stage.
pub const SANITIZER_MAX_WORK: usize = 1 << 29;

/// Whether the checks run under compute-sanitizer (`COALESCE_SANITIZER=1`, which the bundle's
/// `racecheck` step sets): the matmul checks then take only their shapes of at most
/// [`SANITIZER_MAX_WORK`] multiply-adds and leave out the band and library-choice shapes, and
/// say which they left out. Every kernel's code paths (partial tiles, rings wrapping, stream-K's
/// shared tiles) still run: each stage's list has small shapes for each.
pub fn sanitizer_sized() -> bool {
    std::env::var("COALESCE_SANITIZER").is_ok_and(|v| v == "1")
}

/// SplitMix64: small, fast and good enough to fill hundreds of MiB of test data per second.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator with a fixed seed (reproducible).
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A generator seeded from `COALESCE_SEED` if set, else from the clock: fresh data each run.
    pub fn fresh() -> Self {
        let seed = std::env::var("COALESCE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x5eed)
        });
        Rng(seed)
    }

    /// The current state, printed by tests so a failure can be replayed with `COALESCE_SEED`.
    pub fn seed(&self) -> u64 {
        self.0
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1), 24 random bits: never NaN, rarely zero.
    pub fn f32(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }

    /// `n` values from [`Rng::f32`].
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }

    /// `n` arbitrary `i32`s (sums of them wrap, as on the GPU).
    pub fn i32s(&mut self, n: usize) -> Vec<i32> {
        (0..n).map(|_| self.next_u64() as i32).collect()
    }

    /// Uniform in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// One f32 run checked end to end: `in_len` fresh random inputs, an output of `out_len`
/// poisoned elements, `launch` on the GPU, then every output element compared bit for bit with
/// `reference` run on the CPU over the same input and an equally poisoned output (a reference
/// that refuses the shape fails the check with its error).
pub fn check_f32(
    gpu: &Gpu,
    rng: &mut Rng,
    what: &str,
    (in_len, out_len): (usize, usize),
    launch: impl FnOnce(&DeviceBuffer<f32>, &mut DeviceBuffer<f32>) -> coalesce::Result<()>,
    reference: impl FnOnce(&[f32], &mut [f32]) -> coalesce::Result<()>,
) -> CheckResult<()> {
    let input = rng.f32s(in_len);
    let d_input = gpu.upload(&input)?;
    let mut d_output = gpu.poisoned::<f32>(out_len, POISON_BITS)?;
    launch(&d_input, &mut d_output)?;
    gpu.synchronize()?;
    let mut want = vec![f32::from_bits(POISON_BITS); out_len];
    reference(&input, &mut want)?;
    same_bits(what, &d_output.to_vec()?, &want)
}

/// Bitwise comparison of floats that must be exact (copies, +2.0 on every component): a NaN
/// poison left behind never matches.
pub fn same_bits(what: &str, got: &[f32], want: &[f32]) -> CheckResult<()> {
    compare(what, got, want, |a, b| a.to_bits() == b.to_bits())
}

/// Exact comparison for integers.
pub fn same_values<T: Copy + PartialEq + Display>(what: &str, got: &[T], want: &[T]) -> CheckResult<()> {
    compare(what, got, want, |a, b| a == b)
}

fn compare<T: Copy + Display>(what: &str, got: &[T], want: &[T], eq: impl Fn(T, T) -> bool) -> CheckResult<()> {
    if got.len() != want.len() {
        return Err(CheckError::Mismatch {
            what: what.to_string(),
            index: got.len().min(want.len()),
            got: format!("{} elements", got.len()),
            want: format!("{} elements", want.len()),
        });
    }
    match got.iter().zip(want).position(|(&g, &w)| !eq(g, w)) {
        None => Ok(()),
        Some(index) => Err(CheckError::Mismatch {
            what: what.to_string(),
            index,
            got: got[index].to_string(),
            want: want[index].to_string(),
        }),
    }
}

/// SKIPPED unless the device has `bytes` plus a margin free (every large check asks this).
pub fn room(gpu: &Gpu, bytes: u64) -> Option<String> {
    let need = bytes + (1 << 30);
    (gpu.info().memory_bytes < need).then(|| {
        format!(
            "SKIPPED (needs {:.1} GiB, the device has {:.1})",
            need as f64 / 1e9,
            gpu.info().memory_bytes as f64 / 1e9
        )
    })
}

/// Compares `got[i]` with `want(i)` on every core; the first mismatch found is reported.
pub fn compare_with<T: Copy + PartialEq + Display + Sync>(
    what: &str,
    got: &[T],
    want: impl Fn(usize) -> T + Sync,
) -> CheckResult<()> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunk = got.len().div_ceil(threads).max(1);
    let bad = std::thread::scope(|s| {
        let parts: Vec<_> = got
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                let want = &want;
                s.spawn(move || {
                    part.iter().enumerate().find(|&(i, &g)| g != want(c * chunk + i)).map(|(i, _)| c * chunk + i)
                })
            })
            .collect();
        parts.into_iter().filter_map(|h| h.join().expect("compare thread")).min()
    });
    match bad {
        None => Ok(()),
        Some(index) => Err(CheckError::Mismatch {
            what: what.to_string(),
            index,
            got: got[index].to_string(),
            want: want(index).to_string(),
        }),
    }
}

/// ‖got − want‖₂ / ‖want‖₂ computed in f64.
pub fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        let d = f64::from(g) - w;
        diff += d * d;
        norm += w * w;
    }
    if got.len() != want.len() || got.iter().any(|g| !g.is_finite()) {
        return f64::INFINITY;
    }
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// Fails unless `relative_error(got, want) < tolerance`.
pub fn close(what: &str, got: &[f32], want: &[f64], tolerance: f64) -> CheckResult<f64> {
    let err = relative_error(got, want);
    if err < tolerance {
        Ok(err)
    } else {
        Err(CheckError::Mismatch {
            what: what.to_string(),
            index: 0,
            got: format!("relative error {err:.3e}"),
            want: format!("< {tolerance:.0e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_is_a_nan_that_never_compares_equal() {
        let poison = f32::from_bits(POISON_BITS);
        assert!(poison.is_nan());
        assert!(same_bits("x", &[poison], &[1.0]).is_err());
        assert!(same_bits("x", &[1.0, 2.0], &[1.0, 2.0]).is_ok());
    }

    #[test]
    fn comparison_names_the_first_bad_element() {
        match same_values("sum", &[1, 2, 9, 4], &[1, 2, 3, 5]) {
            Err(CheckError::Mismatch { index, got, want, .. }) => {
                assert_eq!((index, got.as_str(), want.as_str()), (2, "9", "3"))
            }
            other => panic!("expected a mismatch, got {other:?}"),
        }
        assert!(same_values("len", &[1], &[1, 2]).is_err());
    }

    #[test]
    fn random_floats_are_in_range_and_varied() {
        let mut rng = Rng::new(7);
        let v = rng.f32s(10_000);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        let distinct: std::collections::HashSet<u32> = v.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > 9_900);
    }

    #[test]
    fn relative_error_flags_nan_and_scales() {
        assert_eq!(relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert!((relative_error(&[1.1], &[1.0]) - 0.1).abs() < 1e-6);
        assert!(relative_error(&[f32::NAN], &[1.0]).is_infinite());
        assert!(close("m", &[1.0], &[1.0], 1e-5).is_ok());
        assert!(close("m", &[2.0], &[1.0], 1e-5).is_err());
    }
}
