//! Global-memory coalescing: launchers, CPU references and registry entries for the copies in
//! `kernels-gpu/src/coalescing.rs` (offset, stride, L2-only offset, vectorised grid-stride).
use cust::memory::DeviceSlice;

use crate::check::{Rng, check_f32};
use crate::error::{Result, at_least, check_aligned16, elements, exactly, in_range};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Param, Variant, Workload, range};
use crate::util::random_pair;
pub use coalesce_kernels::coalescing::*;

/// Sizes every copy is checked at: one element, less and more than a warp, a large prime-ish
/// odd size, and 2^26 (256 MiB).
pub const CHECK_SIZES: [usize; 5] = [1, 31, 33, 1_000_003, 1 << 26];
/// Elements of the offset benchmarks: 256 MiB read + 256 MiB written.
pub const BENCH_OFFSET_N: usize = 1 << 26;
/// Elements of the stride benchmarks: 128 MiB useful each way; at stride 32 each buffer spans 4 GiB.
pub const BENCH_STRIDE_N: usize = 1 << 25;

/// Grid of [`copy`]: one unrolled trip per thread. On the H100 this beat every persistent grid
/// (1 to 64 blocks per SM) in the `vec4` sweep; see BENCHMARKS.md.
pub const COPY_BLOCKS_PER_SM: u32 = 0;

/// Validates an offset copy and returns its launch.
pub fn plan_offset(n: usize, offset: u32, input_len: usize, output_len: usize) -> Result<Launch> {
    plan_one_per_thread(n, ("offset", offset, 0, MAX_OFFSET), offset_len, input_len, output_len)
}

/// Validates a stride copy and returns its launch.
pub fn plan_stride(n: usize, stride: u32, input_len: usize, output_len: usize) -> Result<Launch> {
    plan_one_per_thread(n, ("stride", stride, 1, MAX_STRIDE), stride_len, input_len, output_len)
}

/// A copy of `n` elements, one per thread, whose buffers must hold `len(n, value)` elements for
/// `param = (name, value, min, max)`.
fn plan_one_per_thread(
    n: usize,
    (name, value, min, max): (&'static str, u32, u32, u32),
    len: fn(usize, usize) -> usize,
    input_len: usize,
    output_len: usize,
) -> Result<Launch> {
    let n32 = elements("copy n", n)?;
    in_range(name, value.into(), min.into(), max.into())?;
    let needed = len(n, value as usize);
    at_least("copy input", input_len, needed)?;
    at_least("copy output", output_len, needed)?;
    Ok(Launch::linear(n32.div_ceil(BLOCK), BLOCK))
}

/// Validates a whole-buffer copy and returns its grid-stride launch: `blocks_per_sm` blocks on
/// each of `multiprocessors` SMs (fewer if the work is smaller), or with `blocks_per_sm == 0`
/// just enough blocks for every thread to make one unrolled trip.
pub fn plan_copy(input_len: usize, output_len: usize, multiprocessors: u32, blocks_per_sm: u32) -> Result<Launch> {
    elements("copy input", input_len)?;
    exactly("copy output", output_len, input_len)?;
    in_range("blocks per SM", blocks_per_sm.into(), 0, 64)?;
    let (vectors, _) = vec4_split(input_len as u32);
    let blocks = match blocks_per_sm {
        0 => one_trip_blocks(vectors),
        b => grid_stride_blocks(vectors.into(), BLOCK, multiprocessors, b),
    };
    Ok(Launch::linear(blocks, BLOCK))
}

/// Copies elements `offset..offset + n` of `input` to the same positions of `output`, one
/// 4-byte element per thread: the alignment experiment of the CUDA Best Practices Guide.
pub fn offset_copy(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    n: usize,
    offset: u32,
) -> Result<()> {
    offset_kernel(gpu, "coalescing_offset", input, output, n, offset)
}

/// [`offset_copy`] with L2-only (`ld.global.cg`) loads.
pub fn offset_copy_cg(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    n: usize,
    offset: u32,
) -> Result<()> {
    offset_kernel(gpu, "coalescing_offset_cg", input, output, n, offset)
}

fn offset_kernel(
    gpu: &Gpu,
    kernel: &str,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    n: usize,
    offset: u32,
) -> Result<()> {
    let launch = plan_offset(n, offset, input.len(), output.len())?;
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    gpu.launch(kernel, launch, kernel_args![src, dst, n, offset])
}

/// Copies elements `0, stride, 2*stride, ...` (`n` of them) of `input` to the same positions of
/// `output`.
pub fn stride_copy(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    n: usize,
    stride: u32,
) -> Result<()> {
    let launch = plan_stride(n, stride, input.len(), output.len())?;
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    gpu.launch("coalescing_stride", launch, kernel_args![src, dst, n, stride])
}

/// Copies all of `input` into `output` (equal lengths) with 16-byte loads and stores: the
/// library's fast copy.
pub fn copy(gpu: &Gpu, input: &DeviceSlice<f32>, output: &mut DeviceSlice<f32>) -> Result<()> {
    vec4_kernel(gpu, "coalescing_vec4", input, output, COPY_BLOCKS_PER_SM)
}

fn vec4_kernel(
    gpu: &Gpu,
    kernel: &str,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    blocks_per_sm: u32,
) -> Result<()> {
    let launch = plan_copy(input.len(), output.len(), gpu.multiprocessors(), blocks_per_sm)?;
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), input.len() as u32);
    check_aligned16("copy input", src.as_raw())?;
    check_aligned16("copy output", dst.as_raw())?;
    gpu.launch(kernel, launch, kernel_args![src, dst, n])
}

/// [`copy`] with `blocks_per_sm` resident blocks per SM and the plain or the streaming
/// (`ld.global.nc` / `st.global.cs`) kernel.
pub fn copy_tuned(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    blocks_per_sm: u32,
    streaming: bool,
) -> Result<()> {
    let kernel = if streaming { "coalescing_vec4_stream" } else { "coalescing_vec4" };
    vec4_kernel(gpu, kernel, input, output, blocks_per_sm)
}

/// CPU reference of the offset copy.
pub fn offset_copy_cpu(input: &[f32], output: &mut [f32], n: usize, offset: usize) {
    output[offset..offset + n].copy_from_slice(&input[offset..offset + n]);
}

/// CPU reference of the stride copy.
pub fn stride_copy_cpu(input: &[f32], output: &mut [f32], n: usize, stride: usize) {
    for i in 0..n {
        output[i * stride] = input[i * stride];
    }
}

type CopyLauncher = fn(&Gpu, &DeviceSlice<f32>, &mut DeviceSlice<f32>, usize, u32) -> Result<()>;
type CopyReference = fn(&[f32], &mut [f32], usize, usize);

/// Runs one copy at every check size (see [`check_f32`]); untouched elements must still hold
/// the poison.
fn check_copy(
    gpu: &Gpu,
    rng: &mut Rng,
    param: u32,
    sizes: &[usize],
    len: fn(usize, usize) -> usize,
    launcher: CopyLauncher,
    reference: CopyReference,
) -> Result<String> {
    for &n in sizes {
        let len = len(n, param as usize);
        check_f32(
            gpu,
            rng,
            &format!("n={n}"),
            (len, len),
            |input, output| launcher(gpu, input, output, n, param),
            |input, want| reference(input, want, n, param as usize),
        )?;
    }
    Ok(format!("n in {sizes:?}"))
}

fn check_offset(gpu: &Gpu, rng: &mut Rng, offset: u32) -> Result<String> {
    check_copy(gpu, rng, offset, &CHECK_SIZES, offset_len, offset_copy, offset_copy_cpu)
}

fn check_offset_cg(gpu: &Gpu, rng: &mut Rng, offset: u32) -> Result<String> {
    check_copy(gpu, rng, offset, &CHECK_SIZES, offset_len, offset_copy_cg, offset_copy_cpu)
}

fn check_stride(gpu: &Gpu, rng: &mut Rng, stride: u32) -> Result<String> {
    // The largest size is capped so the strided buffers stay at 512 MiB.
    let mut sizes = CHECK_SIZES;
    sizes[4] = sizes[4].min((1 << 27) / stride as usize);
    check_copy(gpu, rng, stride, &sizes, stride_len, stride_copy, stride_copy_cpu)
}

fn check_vec4_with(gpu: &Gpu, rng: &mut Rng, blocks_per_sm: u32, streaming: bool) -> Result<String> {
    let sizes = [1, 2, 3, 4, 5, 31, 33, 1_000_003, 1 << 26];
    let launcher: CopyLauncher = if streaming {
        |gpu, input, output, _, b| copy_tuned(gpu, input, output, b, true)
    } else {
        |gpu, input, output, _, b| copy_tuned(gpu, input, output, b, false)
    };
    let whole_cpu: CopyReference = |input, output, n, _| output[..n].copy_from_slice(&input[..n]);
    check_copy(gpu, rng, blocks_per_sm, &sizes, |n, _| n, launcher, whole_cpu)
}

fn check_vec4(gpu: &Gpu, rng: &mut Rng, blocks_per_sm: u32) -> Result<String> {
    check_vec4_with(gpu, rng, blocks_per_sm, false)
}

fn check_vec4_stream(gpu: &Gpu, rng: &mut Rng, blocks_per_sm: u32) -> Result<String> {
    check_vec4_with(gpu, rng, blocks_per_sm, true)
}

fn bench_offset_with(gpu: &Gpu, offset: u32, launcher: CopyLauncher) -> Result<Workload> {
    let n = BENCH_OFFSET_N;
    let (input, mut output) = random_pair(gpu, offset_len(n, MAX_OFFSET as usize), offset_len(n, MAX_OFFSET as usize))?;
    Ok(Workload::new(8 * n as u64, move |gpu| launcher(gpu, &input, &mut output, n, offset)))
}

fn bench_offset(gpu: &Gpu, offset: u32) -> Result<Workload> {
    bench_offset_with(gpu, offset, offset_copy)
}

fn bench_offset_cg(gpu: &Gpu, offset: u32) -> Result<Workload> {
    bench_offset_with(gpu, offset, offset_copy_cg)
}

fn bench_stride(gpu: &Gpu, stride: u32) -> Result<Workload> {
    let n = BENCH_STRIDE_N;
    let (input, mut output) = random_pair(gpu, stride_len(n, stride as usize), stride_len(n, stride as usize))?;
    Ok(Workload::new(8 * n as u64, move |gpu| stride_copy(gpu, &input, &mut output, n, stride)))
}

fn bench_vec4_with(gpu: &Gpu, blocks_per_sm: u32, streaming: bool) -> Result<Workload> {
    let (input, mut output) = random_pair(gpu, BENCH_OFFSET_N, BENCH_OFFSET_N)?;
    Ok(Workload::new(8 * BENCH_OFFSET_N as u64, move |gpu| {
        copy_tuned(gpu, &input, &mut output, blocks_per_sm, streaming)
    }))
}

fn bench_vec4(gpu: &Gpu, blocks_per_sm: u32) -> Result<Workload> {
    bench_vec4_with(gpu, blocks_per_sm, false)
}

fn bench_vec4_stream(gpu: &Gpu, blocks_per_sm: u32) -> Result<Workload> {
    bench_vec4_with(gpu, blocks_per_sm, true)
}

/// The device-to-device memcpy of the same 2^26 floats: every report's ceiling.
pub fn bench_memcpy(gpu: &Gpu) -> Result<Workload> {
    let (input, mut output) = random_pair(gpu, BENCH_OFFSET_N, BENCH_OFFSET_N)?;
    Ok(Workload::new(8 * BENCH_OFFSET_N as u64, move |gpu| gpu.memcpy(&input, &mut output)))
}

const OFFSETS: [u32; MAX_OFFSET as usize + 1] = range(0);
const STRIDES: [u32; MAX_STRIDE as usize] = range(1);

/// Blocks per SM of the vectorised copies; 0 = one unrolled trip per thread (no loop).
const GRID: Param = Param { name: "blocks_per_sm", sweep: &[1, 2, 4, 8, 16, 32, 64, 0], check: &[0, 1, 8, 64] };
const OFFSET: Param = Param { name: "offset", sweep: &OFFSETS, check: &[0, 1, 2, 7, 8, 16, 31, 32] };

/// The coalescing family, in teaching order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        family: "coalescing",
        name: "offset",
        kernels: &["coalescing_offset"],
        summary: "copy starting `offset` floats in: 4 sectors per warp when offset % 8 == 0, else 5",
        param: Some(OFFSET),
        check: check_offset,
        bench: bench_offset,
    },
    Variant {
        family: "coalescing",
        name: "stride",
        kernels: &["coalescing_stride"],
        summary: "copy every `stride`-th float: a warp needs min(32, 4*stride) sectors for 4 useful ones",
        param: Some(Param { name: "stride", sweep: &STRIDES, check: &[1, 2, 3, 8, 31, 32] }),
        check: check_stride,
        bench: bench_stride,
    },
    Variant {
        family: "coalescing",
        name: "offset_cg",
        kernels: &["coalescing_offset_cg"],
        summary: "offset copy with L2-only ld.global.cg loads: 32-byte sectors, no L1 line fills",
        param: Some(OFFSET),
        check: check_offset_cg,
        bench: bench_offset_cg,
    },
    Variant {
        family: "coalescing",
        name: "vec4",
        kernels: &["coalescing_vec4"],
        summary: "grid-stride copy, 16-byte loads/stores, 4 in flight per thread: aims at the memcpy ceiling",
        param: Some(GRID),
        check: check_vec4,
        bench: bench_vec4,
    },
    Variant {
        family: "coalescing",
        name: "vec4_stream",
        kernels: &["coalescing_vec4_stream"],
        summary: "vec4 with ld.global.nc loads and st.global.cs streaming stores",
        param: Some(GRID),
        check: check_vec4_stream,
        bench: bench_vec4_stream,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn offset_plan_rejects_bad_input_before_launch() {
        assert!(matches!(plan_offset(0, 0, 10, 10), Err(Error::Empty(_))));
        assert!(matches!(plan_offset(10, 33, 100, 100), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_offset(10, 1, 10, 11), Err(Error::LengthMismatch { expected: 11, got: 10, .. })));
        assert!(matches!(plan_offset(10, 1, 11, 10), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan_offset(1 << 31, 0, usize::MAX, usize::MAX), Err(Error::OutOfRange { .. })));
        assert_eq!(plan_offset(257, 32, 289, 289).unwrap(), Launch::linear(2, 256));
    }

    #[test]
    fn stride_plan_rejects_bad_input_before_launch() {
        assert!(matches!(plan_stride(10, 0, 100, 100), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_stride(10, 33, 1000, 1000), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_stride(10, 4, 36, 37), Err(Error::LengthMismatch { expected: 37, .. })));
        assert_eq!(plan_stride(1, 32, 1, 1).unwrap(), Launch::linear(1, 256));
    }

    #[test]
    fn copy_plan_needs_equal_lengths() {
        assert!(matches!(plan_copy(0, 0, 132, 8), Err(Error::Empty(_))));
        assert!(matches!(plan_copy(10, 9, 132, 8), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan_copy(10, 10, 132, 65), Err(Error::OutOfRange { .. })));
        assert_eq!(plan_copy(1 << 26, 1 << 26, 132, 0).unwrap().grid.0, (1 << 24) / (256 * UNROLL));
        assert_eq!(plan_copy(3, 3, 132, 8).unwrap(), Launch::linear(1, 256));
        assert_eq!(plan_copy(1 << 26, 1 << 26, 132, 8).unwrap().grid.0, 132 * 8);
    }

    #[test]
    fn cpu_references_touch_exactly_their_elements() {
        let input: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let mut out = vec![-1.0; 20];
        offset_copy_cpu(&input, &mut out, 3, 2);
        assert_eq!(&out[..6], &[-1.0, -1.0, 2.0, 3.0, 4.0, -1.0]);
        let mut out = vec![-1.0; 20];
        stride_copy_cpu(&input, &mut out, 3, 4);
        let touched: Vec<usize> = (0..20).filter(|&i| out[i] != -1.0).collect();
        assert_eq!(touched, [0, 4, 8]);
    }
}
