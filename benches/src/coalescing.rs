//! Coalescing lessons: the registry entries, checks and workloads for `coalesce::coalescing`.
use coalesce::coalescing::{self as lib, AsyncCopy, Load, MAX_OFFSET, MAX_STRIDE};
use coalesce::model::Counts;
use coalesce::{Gpu, Result};
use coalesce_kernels::coalescing::{
    coalescing_bulk, coalescing_copy_any, coalescing_cp_async, coalescing_offset, coalescing_offset_cg,
    coalescing_stride, coalescing_vec4, coalescing_vec4_stream, offset_len, stride_len,
};

use crate::check::{CheckResult, Rng, check_f32};
use crate::family::{Family, Labels, Param, Row, range};
use crate::workload::{Workload, random_pair};

/// Sizes every copy is checked at: one element, less and more than a warp, a large prime-ish
/// odd size, and 2^26 (256 MiB).
pub const CHECK_SIZES: [usize; 5] = [1, 31, 33, 1_000_003, 1 << 26];
/// Sizes the 16-byte copies are checked at: every tail length, and a partial last chunk.
pub const COPY_CHECK_SIZES: [usize; 9] = [1, 2, 3, 4, 5, 31, 33, 1_000_003, 1 << 26];
/// Elements of the offset and copy benchmarks: 256 MiB read + 256 MiB written.
pub const BENCH_N: usize = 1 << 26;
/// Elements of the stride benchmarks: 256 MiB useful each way, like every other bandwidth
/// buffer (at 128 MiB the 50 MB L2 still held 12% of stride 1's written sectors when the kernel
/// ended); at stride 32 each buffer spans 8 GiB. A device with too little memory skips the
/// largest strides.
pub const BENCH_STRIDE_N: usize = 1 << 26;

/// The coalescing variants, in teaching order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coalescing {
    /// Copy starting `offset` floats in.
    Offset,
    /// Copy every `stride`-th float.
    Stride,
    /// The offset copy with L2-only loads.
    OffsetCg,
    /// The library's 16-byte copy, swept over the grid size.
    Vec4,
    /// The same with read-only loads and streaming stores.
    Vec4Stream,
    /// `cp.async` into a 4-stage shared ring (Hopper module).
    CpAsync,
    /// TMA bulk copies of 16 KiB chunks (Hopper module).
    Bulk,
    /// The library's any-offset copy, over source and destination element offsets 0-3.
    AnyOffset,
    /// The driver's device-to-device memcpy over the same views: what `any_offset` must match.
    MemcpyAt,
}

const OFFSETS: [u32; MAX_OFFSET as usize + 1] = range(0);
const STRIDES: [u32; MAX_STRIDE as usize] = range(1);
const OFFSET: Param = Param { name: "offset", sweep: &OFFSETS, check: &[0, 1, 2, 7, 8, 16, 31, 32], labels: None };
const STRIDE: Param = Param { name: "stride", sweep: &STRIDES, check: &[1, 2, 3, 8, 31, 32], labels: None };
/// Resident blocks per SM of the cp.async copy's persistent grid (its ring allows 8 on an H100).
/// 0: one ring's worth of chunks per block, the hardware scheduling blocks as others finish.
const CP_GRID: Param =
    Param { name: "blocks_per_sm", sweep: &[2, 8, 0], check: &[1, 8, 0], labels: Some(Labels::Each(ring_blocks)) };
/// Resident blocks per SM of the bulk copy (3 rings of 64 KiB fit an H100 SM).
const BULK_GRID: Param =
    Param { name: "blocks_per_sm", sweep: &[1, 2, 3, 0], check: &[1, 3, 0], labels: Some(Labels::Each(ring_blocks)) };
/// Blocks per SM of the 16-byte copies; 0 = one unrolled trip per thread (no loop).
const GRID: Param = Param {
    name: "blocks_per_sm",
    sweep: &[1, 2, 4, 8, 16, 32, 64, 0],
    check: &[0, 1, 8, 64],
    labels: Some(Labels::Each(trip_blocks)),
};
/// [`CP_GRID`] and [`BULK_GRID`] values: 0 is `one-ring` (a block per ring's worth of chunks).
fn ring_blocks(value: u32) -> String {
    if value == 0 { "one-ring".into() } else { value.to_string() }
}
/// [`GRID`] values: 0 is `one-trip` (a block per 8 KiB chunk, one unrolled trip a thread).
fn trip_blocks(value: u32) -> String {
    if value == 0 { "one-trip".into() } else { value.to_string() }
}
/// Source and destination element offsets of the any-offset copies, as `10 * source +
/// destination` (`offsets=12`: the source view starts 1 float past a 16-byte boundary, the
/// destination 2): every pair of 0-3.
const PAIRS: [u32; 16] = [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33];
const OFFSET_PAIRS: Param =
    Param { name: "offsets", sweep: &PAIRS, check: &PAIRS, labels: Some(Labels::Each(offset_pair_label)) };
/// An [`OFFSET_PAIRS`] value as `src+S/dst+D` (`12`: `src+1/dst+2`).
fn offset_pair_label(value: u32) -> String {
    let (src, dst) = offset_pair(value);
    format!("src+{src}/dst+{dst}")
}
/// Sizes the any-offset copy is checked at: every head and tail length, around the first
/// vectors and a block's 8 KiB chunk (2048 floats), and large.
const ANY_CHECK_SIZES: [usize; 26] = [
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    15,
    16,
    17,
    31,
    33,
    2047,
    2048,
    2049,
    4097,
    6151,
    1_000_003,
    1 << 24,
];

/// The element offsets `(source, destination)` of an `offsets` value.
const fn offset_pair(value: u32) -> (usize, usize) {
    ((value / 10) as usize, (value % 10) as usize)
}

impl Family for Coalescing {
    const NAME: &'static str = "coalescing";
    const ROWS: &'static [Row<Self>] = VARIANTS;

    fn check(self, gpu: &Gpu, rng: &mut Rng, value: u32) -> CheckResult<String> {
        let sizes: Vec<usize> = match self {
            // The largest stride size is capped so the strided buffers stay at 512 MiB.
            Coalescing::Stride => CHECK_SIZES.iter().map(|&n| n.min((1 << 27) / value as usize)).collect(),
            Coalescing::Vec4 | Coalescing::Vec4Stream | Coalescing::CpAsync | Coalescing::Bulk => {
                COPY_CHECK_SIZES.to_vec()
            }
            Coalescing::AnyOffset | Coalescing::MemcpyAt => ANY_CHECK_SIZES.to_vec(),
            _ => CHECK_SIZES.to_vec(),
        };
        for &n in &sizes {
            let len = self.buffer_len(n, value);
            check_f32(
                gpu,
                rng,
                &format!("n={n}"),
                (len, len),
                |input, output| self.run(gpu, input, output, n, value),
                |input, want| self.reference(input, want, n, value),
            )?;
        }
        Ok(format!("n in {sizes:?}"))
    }

    fn bench(self, gpu: &Gpu, value: u32) -> Result<Workload> {
        let n = if self == Coalescing::Stride { BENCH_STRIDE_N } else { BENCH_N };
        // The offset buffers are sized for the largest offset, so every offset runs on the same data.
        let len = match self {
            Coalescing::Offset | Coalescing::OffsetCg => self.buffer_len(n, MAX_OFFSET),
            _ => self.buffer_len(n, value),
        };
        let (input, mut output) = random_pair(gpu, len, len)?;
        Ok(Workload::new(8 * n as u64, move |gpu| self.run(gpu, &input, &mut output, n, value)))
    }

    fn model(self, value: u32, sms: u32) -> Result<Option<Counts>> {
        use coalesce::model::coalescing as model;
        Some(match self {
            // The bench's buffers are sized for the largest offset, as in `bench`.
            Coalescing::Offset => model::offset_copy(Load::Cached, BENCH_N, value, MAX_OFFSET),
            Coalescing::OffsetCg => model::offset_copy(Load::L2Only, BENCH_N, value, MAX_OFFSET),
            Coalescing::Stride => model::stride_copy(BENCH_STRIDE_N, value),
            Coalescing::Vec4 => model::vec4_copy(BENCH_N, sms, value, false),
            Coalescing::Vec4Stream => model::vec4_copy(BENCH_N, sms, value, true),
            Coalescing::CpAsync => model::hardware_copy(AsyncCopy::CpAsync, BENCH_N, sms, value),
            Coalescing::Bulk => model::hardware_copy(AsyncCopy::Bulk, BENCH_N, sms, value),
            Coalescing::AnyOffset => {
                let (src, dst) = offset_pair(value);
                model::any_offset_copy(BENCH_N, src, dst)
            }
            Coalescing::MemcpyAt => return Ok(None),
        })
        .transpose()
    }
}

/// The coalescing variants, one row each, in teaching order.
#[rustfmt::skip]
const VARIANTS: &[Row<Coalescing>] = &[
    Row::new(Coalescing::Offset, "offset", "copy starting `offset` floats in: 4 sectors per warp when offset % 8 == 0, else 5").launches(coalescing_offset).swept(OFFSET),
    Row::new(Coalescing::Stride, "stride", "copy every `stride`-th float: a warp needs min(32, 4*stride) sectors for 4 useful ones").launches(coalescing_stride).swept(STRIDE),
    Row::new(Coalescing::OffsetCg, "offset_cg", "offset copy with L2-only ld.global.cg loads: 32-byte sectors, no L1 line fills").launches(coalescing_offset_cg).swept(OFFSET),
    Row::new(Coalescing::Vec4, "vec4", "16-byte loads/stores, 2 in flight per thread, 8 KiB per block: aims at memcpy").launches(coalescing_vec4).swept(GRID),
    Row::new(Coalescing::Vec4Stream, "vec4_stream", "vec4 with ld.global.nc loads and st.global.cs streaming stores").launches(coalescing_vec4_stream).swept(GRID),
    Row::new(Coalescing::CpAsync, "cp_async", "cp.async.cg 16 B into a 4-stage shared ring, stored back with st.global.v4 (sm_90)").launches(coalescing_cp_async).swept(CP_GRID),
    Row::new(Coalescing::Bulk, "bulk", "TMA cp.async.bulk: one thread moves 16 KiB chunks via shared, mbarrier-completed (sm_90)").launches(coalescing_bulk).swept(BULK_GRID),
    Row::new(Coalescing::AnyOffset, "any_offset", "vec4 with a peeled head and tail; unequal alignments shift words between lanes (shfl.down): still 16-byte loads and stores").launches(coalescing_copy_any).swept(OFFSET_PAIRS),
    Row::new(Coalescing::MemcpyAt, "memcpy_at", "cuMemcpyDtoD over the same views as any_offset: the driver's copy at those offsets").swept(OFFSET_PAIRS),
];

impl Coalescing {
    /// Elements each buffer holds for a copy of `n` at parameter `value`.
    fn buffer_len(self, n: usize, value: u32) -> usize {
        match self {
            Coalescing::Offset | Coalescing::OffsetCg => offset_len(n as u64, value) as usize,
            Coalescing::Stride => stride_len(n as u64, value) as usize,
            Coalescing::Vec4 | Coalescing::Vec4Stream | Coalescing::CpAsync | Coalescing::Bulk => n,
            Coalescing::AnyOffset | Coalescing::MemcpyAt => n + 3,
        }
    }

    /// One launch through the library.
    fn run(
        self,
        gpu: &Gpu,
        input: &impl coalesce::DeviceRead<f32>,
        output: &mut impl coalesce::DeviceWrite<f32>,
        n: usize,
        value: u32,
    ) -> Result<()> {
        match self {
            Coalescing::Offset => lib::offset_copy(gpu, Load::Cached, input, output, n, value),
            Coalescing::OffsetCg => lib::offset_copy(gpu, Load::L2Only, input, output, n, value),
            Coalescing::Stride => lib::stride_copy(gpu, input, output, n, value),
            Coalescing::Vec4 => lib::copy_tuned(gpu, input, output, value, false),
            Coalescing::Vec4Stream => lib::copy_tuned(gpu, input, output, value, true),
            Coalescing::CpAsync => lib::copy_async(gpu, AsyncCopy::CpAsync, input, output, value),
            Coalescing::Bulk => lib::copy_async(gpu, AsyncCopy::Bulk, input, output, value),
            Coalescing::AnyOffset | Coalescing::MemcpyAt => {
                // Views `src..` and `dst..` of buffers 3 floats longer than the copy.
                let (src, dst) = offset_pair(value);
                let input = input.slice(src..src + n)?;
                let mut output = output.slice_mut(dst..dst + n)?;
                match self {
                    Coalescing::MemcpyAt => gpu.memcpy(&input, &mut output),
                    _ => gpu.launch(lib::plan_copy_any(&input, &mut output)?),
                }
            }
        }
    }

    /// The CPU reference of one launch.
    fn reference(self, input: &[f32], output: &mut [f32], n: usize, value: u32) -> coalesce::Result<()> {
        match self {
            Coalescing::Offset | Coalescing::OffsetCg => lib::offset_copy_cpu(input, output, n, value as usize),
            Coalescing::Stride => lib::stride_copy_cpu(input, output, n, value as usize),
            Coalescing::Vec4 | Coalescing::Vec4Stream | Coalescing::CpAsync | Coalescing::Bulk => {
                output.copy_from_slice(input);
                Ok(())
            }
            Coalescing::AnyOffset | Coalescing::MemcpyAt => {
                let (src, dst) = offset_pair(value);
                output[dst..dst + n].copy_from_slice(&input[src..src + n]);
                Ok(())
            }
        }
    }
}

/// The device-to-device memcpy of the same 2^26 floats: every report's ceiling.
pub fn bench_memcpy(gpu: &Gpu) -> Result<Workload> {
    let (input, mut output) = random_pair(gpu, BENCH_N, BENCH_N)?;
    Ok(Workload::new(8 * BENCH_N as u64, move |gpu| gpu.memcpy(&input, &mut output)))
}
