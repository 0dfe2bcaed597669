//! The library's entry points past 2^31 elements, checked against the CPU: the input is filled
//! on the GPU with `fill_value(i, seed)` and the CPU recomputes what every output element must be
//! from the same hash, so no 8 GiB input has to cross PCIe. Each check says SKIPPED when the
//! device has too little memory.
use coalesce::kernels::util::fill_value;
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu};

use crate::check::{CheckError, CheckResult, Rng};
use crate::workload::random_buffer;

/// One large check.
pub struct LargeCheck {
    /// `library/...`, as the checks binary prints it.
    pub id: &'static str,
    /// Runs the check.
    pub run: fn(&Gpu, &mut Rng) -> CheckResult<String>,
}

/// Elements of the 1-D checks: past 2^31 and not a multiple of 4 (a vector tail).
pub const LARGE_N: usize = (1 << 31) + 5;

/// The checks, in order.
pub const CHECKS: &[LargeCheck] = &[
    LargeCheck { id: "library/copy/n=2^31+5", run: copy },
    LargeCheck { id: "library/reduce/n=2^31+5", run: crate::reduce::check_large },
    LargeCheck { id: "library/transpose/32768x65537", run: crate::transpose::check_large },
    LargeCheck { id: "library/transpose/32768x65538", run: crate::transpose::check_large_wide },
];

/// SKIPPED unless the device has `bytes` plus a margin free (every large check asks this).
pub(crate) fn room(gpu: &Gpu, bytes: u64) -> Option<String> {
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
pub fn compare_with<T: Copy + PartialEq + std::fmt::Display + Sync>(
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

/// The bits `fill_value` gives element `i`.
fn bits(i: usize, seed: u32, fill: Fill) -> u32 {
    fill_value(i as u64, seed, fill)
}

fn copy(gpu: &Gpu, rng: &mut Rng) -> CheckResult<String> {
    let n = LARGE_N;
    if let Some(skip) = room(gpu, 8 * n as u64) {
        return Ok(skip);
    }
    let seed = rng.next_u64() as u32;
    let input: DeviceBuffer<f32> = random_buffer(gpu, n, Fill::Bits, seed)?;
    let mut output = gpu.poisoned::<f32>(n, crate::check::POISON_BITS)?;
    coalesce::coalescing::copy(gpu, &input, &mut output)?;
    gpu.synchronize()?;
    // Arbitrary bit patterns (NaNs too) must arrive unchanged: compare the words.
    let got: Vec<u32> = output.to_vec()?.iter().map(|x| x.to_bits()).collect();
    compare_with("copy of 2^31+5", &got, |i| bits(i, seed, Fill::Bits))?;
    Ok(format!("{n} floats, every element against the CPU"))
}
