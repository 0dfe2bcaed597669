//! Shared-memory bank conflicts in isolation: launchers, CPU reference and registry entries for
//! `kernels-gpu/src/bank.rs` (rows, columns, padded columns, and a stride sweep).
use cust::memory::DeviceSlice;

use crate::check::{POISON_BITS, Rng, same_values};
use crate::error::{Result, exactly, in_range};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Param, Variant, Workload, range};
use crate::util::{Fill, random_buffer};
pub use coalesce_kernels::bank::*;

/// The access patterns of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Rows,
    Cols,
    ColsPadded,
    Stride(u32),
}

impl Pattern {
    const fn kernel(self) -> &'static str {
        match self {
            Pattern::Rows => "bank_rows",
            Pattern::Cols => "bank_cols",
            Pattern::ColsPadded => "bank_cols_padded",
            Pattern::Stride(_) => "bank_stride",
        }
    }

    /// The word lane `lane` reads at step `k` (the same functions the kernels call).
    pub fn index(self, lane: u32, k: u32) -> u32 {
        match self {
            Pattern::Rows => rows(lane, k),
            Pattern::Cols => cols(lane, k),
            Pattern::ColsPadded => cols_padded(lane, k),
            Pattern::Stride(s) => strided(lane, k, s),
        }
    }
}

/// Outputs of one launch: one sum per thread.
pub const OUTPUTS: usize = (BLOCKS * BLOCK) as usize;

/// Validates the table and output lengths and the pattern.
pub fn plan(pattern: Pattern, table_len: usize, output_len: usize) -> Result<Launch> {
    if let Pattern::Stride(s) = pattern {
        in_range("bank stride", s.into(), 1, MAX_STRIDE.into())?;
    }
    exactly("bank table", table_len, WORDS as usize)?;
    exactly("bank output", output_len, OUTPUTS)?;
    Ok(Launch::linear(BLOCKS, BLOCK).with_shared(WORDS * 4))
}

/// Every thread sums `ITERS` words of `table` (staged in shared memory) read with `pattern`.
pub fn run(gpu: &Gpu, pattern: Pattern, table: &DeviceSlice<i32>, output: &mut DeviceSlice<i32>) -> Result<()> {
    let launch = plan(pattern, table.len(), output.len())?;
    let (t, o) = (table.as_device_ptr(), output.as_device_ptr());
    match pattern {
        Pattern::Stride(s) => gpu.launch(pattern.kernel(), launch, kernel_args![t, o, s]),
        _ => gpu.launch(pattern.kernel(), launch, kernel_args![t, o]),
    }
}

/// CPU reference: the sum each lane computes (every warp computes the same 32 sums).
pub fn lane_sums_cpu(pattern: Pattern, table: &[i32]) -> [i32; 32] {
    std::array::from_fn(|lane| {
        (0..ITERS).fold(0i32, |acc, k| acc.wrapping_add(table[pattern.index(lane as u32, k) as usize]))
    })
}

fn check(gpu: &Gpu, rng: &mut Rng, pattern: Pattern) -> Result<String> {
    let table = rng.i32s(WORDS as usize);
    let d_table = gpu.upload(&table)?;
    let mut d_out = gpu.poisoned::<i32>(OUTPUTS, POISON_BITS)?;
    run(gpu, pattern, &d_table, &mut d_out)?;
    gpu.synchronize()?;
    let sums = lane_sums_cpu(pattern, &table);
    let want: Vec<i32> = (0..OUTPUTS).map(|t| sums[t % 32]).collect();
    same_values("lane sums", &d_out.as_host_vec()?, &want)?;
    Ok(format!("{OUTPUTS} thread sums"))
}

fn bench(gpu: &Gpu, pattern: Pattern) -> Result<Workload> {
    let table = random_buffer::<i32>(gpu, WORDS as usize, Fill::Bits, 3)?;
    let mut out = random_buffer::<i32>(gpu, OUTPUTS, Fill::Bits, 4)?;
    // Shared-memory bytes read: the figure this family's GB/s column reports.
    Ok(Workload::new(OUTPUTS as u64 * ITERS as u64 * 4, move |gpu| run(gpu, pattern, &table, &mut out)))
}

const STRIDES: [u32; MAX_STRIDE as usize] = range(1);

/// The bank-conflict family, in teaching order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        family: "bank",
        name: "rows",
        kernels: &[Pattern::Rows.kernel()],
        summary: "32x32 tile read along rows: one bank per lane, conflict-free",
        param: None,
        check: |gpu, rng, _| check(gpu, rng, Pattern::Rows),
        bench: |gpu, _| bench(gpu, Pattern::Rows),
    },
    Variant {
        family: "bank",
        name: "cols",
        kernels: &[Pattern::Cols.kernel()],
        summary: "32x32 tile read down columns: all lanes in one bank, 32-way conflict",
        param: None,
        check: |gpu, rng, _| check(gpu, rng, Pattern::Cols),
        bench: |gpu, _| bench(gpu, Pattern::Cols),
    },
    Variant {
        family: "bank",
        name: "cols_padded",
        kernels: &[Pattern::ColsPadded.kernel()],
        summary: "32x33 (padded) tile read down columns: conflict-free again",
        param: None,
        check: |gpu, rng, _| check(gpu, rng, Pattern::ColsPadded),
        bench: |gpu, _| bench(gpu, Pattern::ColsPadded),
    },
    Variant {
        family: "bank",
        name: "stride",
        kernels: &[Pattern::Stride(1).kernel()],
        summary: "lane l reads word l*stride: gcd(stride, 32)-way conflict",
        param: Some(Param { name: "stride", sweep: &STRIDES, check: &[1, 2, 3, 8, 16, 31, 32] }),
        check: |gpu, rng, s| check(gpu, rng, Pattern::Stride(s)),
        bench: |gpu, s| bench(gpu, Pattern::Stride(s)),
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn plan_rejects_bad_input() {
        assert!(matches!(plan(Pattern::Stride(0), 2048, OUTPUTS), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(Pattern::Stride(33), 2048, OUTPUTS), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(Pattern::Rows, 2047, OUTPUTS), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(Pattern::Rows, 2048, OUTPUTS - 1), Err(Error::LengthMismatch { .. })));
        assert_eq!(plan(Pattern::Cols, 2048, OUTPUTS).unwrap().shared_bytes, 8192);
    }

    #[test]
    fn lane_sums_follow_the_pattern() {
        let table: Vec<i32> = (0..WORDS as i32).collect();
        // Rows: lane l reads (k % 32) * 32 + l; summed over 4096 steps.
        let sums = lane_sums_cpu(Pattern::Rows, &table);
        let per_cycle: i32 = (0..32).map(|r| r * 32).sum();
        assert_eq!(sums[0], per_cycle * (ITERS as i32 / 32));
        assert_eq!(sums[5] - sums[0], 5 * ITERS as i32);
    }
}
