//! The library's entry points past 2^31 elements, checked against the CPU: the input is filled
//! on the GPU with `fill_value(i, seed)` and the CPU recomputes what every output element must be
//! from the same hash, so no 8 GiB input has to cross PCIe. Each check says SKIPPED when the
//! device has too little memory.
use coalesce::util::Fill;
use coalesce::{DeviceBuffer, Gpu};
use coalesce_kernels::util::fill_value;

use crate::check::{CheckResult, LARGE_N, POISON_BITS, Rng, compare_with, room};
use crate::workload::random_buffer;

/// One large check.
pub struct LargeCheck {
    /// `library/...`, as the checks binary prints it.
    pub id: &'static str,
    /// Runs the check.
    pub run: fn(&Gpu, &mut Rng) -> CheckResult<String>,
}

/// The checks, in order.
pub const CHECKS: &[LargeCheck] = &[
    LargeCheck { id: "library/copy/n=2^31+5", run: copy },
    LargeCheck { id: "library/reduce/n=2^31+5", run: crate::reduce::check_large },
    LargeCheck { id: "library/reduce/f32 n=2^30 cancelling", run: crate::elements::check_cancellation },
    LargeCheck { id: "library/transpose/32768x65537", run: crate::transpose::check_large },
    LargeCheck { id: "library/transpose/32768x65538", run: crate::transpose::check_large_wide },
];

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
    let mut output = gpu.poisoned::<f32>(n, POISON_BITS)?;
    coalesce::coalescing::copy(gpu, &input, &mut output)?;
    gpu.synchronize()?;
    // Arbitrary bit patterns (NaNs too) must arrive unchanged: compare the words.
    let got: Vec<u32> = output.to_vec()?.iter().map(|x| x.to_bits()).collect();
    compare_with("copy of 2^31+5", &got, |i| bits(i, seed, Fill::Bits))?;
    Ok(format!("{n} floats, every element against the CPU"))
}
