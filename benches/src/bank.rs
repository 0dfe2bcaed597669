//! Bank-conflict lessons: the registry entries, checks and workloads for `coalesce::bank`.
use coalesce::bank::{self as lib, MAX_STRIDE, OUTPUTS, Pattern, Tile, WORDS};
use coalesce::model::Counts;
use coalesce::util::Fill;
use coalesce::{Gpu, Result};
use coalesce_kernels::bank::{ITERS, bank_stride, lane};

use crate::check::{CheckResult, POISON_BITS, Rng, same_values};
use crate::family::{Family, Param, Row, range};
use crate::workload::{Workload, random_buffer};

/// The bank-conflict variants: the library's tile reads, and its stride pattern swept over the
/// stride.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bank {
    /// A 32-wide tile read one way.
    Tile(Tile),
    /// Lane `l` reads word `l * stride`.
    Stride,
}

const STRIDES: [u32; MAX_STRIDE as usize] = range(1);
const STRIDE: Param = Param { name: "stride", sweep: &STRIDES, check: &[1, 2, 3, 8, 16, 31, 32], labels: None };

impl Family for Bank {
    const NAME: &'static str = "bank";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String> {
        let pattern = self.pattern(value);
        let outputs = OUTPUTS as usize;
        let table = rng.i32s(WORDS as usize);
        let d_table = gpu.upload(&table)?;
        let mut d_out = gpu.poisoned::<i32>(outputs, POISON_BITS)?;
        lib::run(gpu, pattern, &d_table, &mut d_out)?;
        gpu.synchronize()?;
        // Every warp computes the same 32 sums: thread t's is lane t % 32's.
        let sums = lib::lane_sums_cpu(pattern, &table)?;
        let want: Vec<i32> = (0..OUTPUTS).map(|t| sums[lane(t) as usize]).collect();
        same_values("lane sums", &d_out.to_vec()?, &want)?;
        Ok(format!("{outputs} thread sums"))
    }

    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload> {
        let pattern = self.pattern(value);
        let table = random_buffer::<i32>(gpu, WORDS as usize, Fill::Bits, 3)?;
        let mut out = random_buffer::<i32>(gpu, OUTPUTS as usize, Fill::Bits, 4)?;
        // Shared-memory bytes read: the figure this family's GB/s column reports.
        Ok(Workload::new(u64::from(OUTPUTS) * u64::from(ITERS) * 4, move |gpu| {
            lib::run(gpu, pattern, &table, &mut out)
        }))
    }

    fn model(self, value: u32, _sms: u32) -> Result<Option<Counts>> {
        coalesce::model::bank::run(self.pattern(value)).map(Some)
    }
}

/// The bank-conflict variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Bank>] = &[
    tile(Tile::Rows, "32x32 tile read along rows: one bank per lane, conflict-free"),
    tile(Tile::Cols, "32x32 tile read down columns: all lanes in one bank, 32-way conflict"),
    tile(Tile::ColsPadded, "32x33 (padded) tile read down columns: conflict-free again"),
    Row::new(Bank::Stride, "stride", "lane l reads word l*stride: gcd(stride, 32)-way conflict").launches(bank_stride).swept(STRIDE),
];

/// A library tile read's row: it launches the tile's kernel, and is named after it.
const fn tile(tile: Tile, summary: &'static str) -> Row<Bank> {
    Row::by_kernel(Bank::Tile(tile), summary, tile.kernel())
}

impl Bank {
    /// The library's pattern for this variant at parameter `value` (the stride; else unused).
    fn pattern(self, value: u32) -> Pattern {
        match self {
            Bank::Tile(tile) => Pattern::Tile(tile),
            Bank::Stride => Pattern::Stride(value),
        }
    }
}
