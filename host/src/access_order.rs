//! Which element each thread handles: contiguous chunks vs interleaved threads (1-D), and 2-D
//! blocks whose lanes run along x vs along y. Every variant computes `out = in + 1`.
use cust::memory::DeviceSlice;

use crate::check::{Rng, check_f32};
use crate::error::{Error, Result, elements, exactly, in_range};
use crate::gpu::{Gpu, Launch, kernel_args};
use crate::registry::{Param, Variant, Workload};
use crate::util::random_pair;
pub use coalesce_kernels::access_order::*;

/// Elements of the 1-D benchmarks (256 MiB each way).
pub const BENCH_N: usize = 1 << 26;
/// Matrix of the 2-D benchmarks (256 MiB each way).
pub const BENCH_SHAPE: (usize, usize) = (8192, 8192);
/// Shapes the 2-D variants are checked at: single element, odd, non-multiples of the block.
pub const CHECK_SHAPES: [(usize, usize); 5] = [(1, 1), (31, 33), (33, 31), (1000, 1003), (4096, 4100)];

/// Validates a 1-D walk of `n` elements, `per_thread` each.
pub fn plan_1d(n: usize, per_thread: u32, input_len: usize, output_len: usize) -> Result<Launch> {
    let n32 = elements("access order n", n)?;
    in_range("elements per thread", per_thread.into(), 1, MAX_PER_THREAD.into())?;
    if !n.is_multiple_of(per_thread as usize) {
        return Err(Error::Unsupported(format!("n = {n} is not a multiple of {per_thread} elements per thread")));
    }
    exactly("access order input", input_len, n)?;
    exactly("access order output", output_len, n)?;
    Ok(Launch::linear((n32 / per_thread).div_ceil(BLOCK), BLOCK))
}

/// Validates a 2-D walk of a `rows × cols` matrix.
pub fn plan_2d(rows: usize, cols: usize, lanes_along_x: bool, input_len: usize, output_len: usize) -> Result<Launch> {
    elements("rows", rows)?;
    elements("cols", cols)?;
    elements("rows * cols", rows.saturating_mul(cols))?;
    exactly("access order input", input_len, rows * cols)?;
    exactly("access order output", output_len, rows * cols)?;
    let grid = grid_2d(rows as u32, cols as u32, lanes_along_x);
    in_range("grid y", grid.1.into(), 1, 65_535)?;
    Ok(Launch { grid, block: BLOCK_2D, shared_bytes: 0 })
}

/// Each thread handles `per_thread` contiguous elements (`interleaved = false`) or every
/// `n / per_thread`-th element (`interleaved = true`).
pub fn walk_1d(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    n: usize,
    per_thread: u32,
    interleaved: bool,
) -> Result<()> {
    let launch = plan_1d(n, per_thread, input.len(), output.len())?;
    let kernel = if interleaved { "access_order_interleaved" } else { "access_order_chunked" };
    let (src, dst, n) = (input.as_device_ptr(), output.as_device_ptr(), n as u32);
    gpu.launch(kernel, launch, kernel_args![src, dst, n, per_thread])
}

/// 2-D (32, 8) blocks over a row-major `rows × cols` matrix, lanes along x or along y.
pub fn walk_2d(
    gpu: &Gpu,
    input: &DeviceSlice<f32>,
    output: &mut DeviceSlice<f32>,
    rows: usize,
    cols: usize,
    lanes_along_x: bool,
) -> Result<()> {
    let launch = plan_2d(rows, cols, lanes_along_x, input.len(), output.len())?;
    let kernel = if lanes_along_x { "access_order_block_x" } else { "access_order_block_y" };
    let (src, dst, rows, cols) = (input.as_device_ptr(), output.as_device_ptr(), rows as u32, cols as u32);
    gpu.launch(kernel, launch, kernel_args![src, dst, rows, cols])
}

/// CPU reference of every variant: `out = in + 1`.
pub fn plus_one_cpu(input: &[f32], output: &mut [f32]) {
    for (o, &i) in output.iter_mut().zip(input) {
        *o = i + 1.0;
    }
}

fn check_1d(gpu: &Gpu, rng: &mut Rng, per_thread: u32, interleaved: bool) -> Result<String> {
    let mut sizes = Vec::new();
    for threads in [1usize, 33, 1000, 1_000_003] {
        let n = (threads * per_thread as usize).min(1 << 26);
        let n = n - n % per_thread as usize;
        sizes.push(n);
        check_f32(
            gpu,
            rng,
            &format!("n={n}"),
            (n, n),
            |i, o| walk_1d(gpu, i, o, n, per_thread, interleaved),
            plus_one_cpu,
        )?;
    }
    Ok(format!("n in {sizes:?}"))
}

fn check_2d(gpu: &Gpu, rng: &mut Rng, lanes_along_x: bool) -> Result<String> {
    for (r, c) in CHECK_SHAPES {
        check_f32(
            gpu,
            rng,
            &format!("{r}x{c}"),
            (r * c, r * c),
            |i, o| walk_2d(gpu, i, o, r, c, lanes_along_x),
            plus_one_cpu,
        )?;
    }
    Ok(format!("shapes {CHECK_SHAPES:?}"))
}

fn bench_1d(gpu: &Gpu, per_thread: u32, interleaved: bool) -> Result<Workload> {
    let n = BENCH_N;
    let (input, mut output) = random_pair(gpu, n, n)?;
    Ok(Workload::new(8 * n as u64, move |gpu| walk_1d(gpu, &input, &mut output, n, per_thread, interleaved)))
}

fn bench_2d(gpu: &Gpu, lanes_along_x: bool) -> Result<Workload> {
    let (r, c) = BENCH_SHAPE;
    let (input, mut output) = random_pair(gpu, r * c, r * c)?;
    Ok(Workload::new(8 * (r * c) as u64, move |gpu| walk_2d(gpu, &input, &mut output, r, c, lanes_along_x)))
}

const PER_THREAD: Param = Param { name: "per_thread", sweep: &[1, 2, 4, 8, 16, 32, 64, 128], check: &[1, 3, 8, 128] };

/// The access-order family, in teaching order.
pub const VARIANTS: &[Variant] = &[
    Variant {
        family: "access_order",
        name: "chunked",
        kernels: &["access_order_chunked"],
        summary: "each thread walks its own contiguous chunk: lanes 4*per_thread bytes apart",
        param: Some(PER_THREAD),
        check: |gpu, rng, p| check_1d(gpu, rng, p, false),
        bench: |gpu, p| bench_1d(gpu, p, false),
    },
    Variant {
        family: "access_order",
        name: "interleaved",
        kernels: &["access_order_interleaved"],
        summary: "threads interleave: each step the warp reads 128 contiguous bytes",
        param: Some(PER_THREAD),
        check: |gpu, rng, p| check_1d(gpu, rng, p, true),
        bench: |gpu, p| bench_1d(gpu, p, true),
    },
    Variant {
        family: "access_order",
        name: "block_x",
        kernels: &["access_order_block_x"],
        summary: "2-D block, lanes along a row: 4 sectors a warp",
        param: None,
        check: |gpu, rng, _| check_2d(gpu, rng, true),
        bench: |gpu, _| bench_2d(gpu, true),
    },
    Variant {
        family: "access_order",
        name: "block_y",
        kernels: &["access_order_block_y"],
        summary: "2-D block, lanes down a column: 32 sectors a warp",
        param: None,
        check: |gpu, rng, _| check_2d(gpu, rng, false),
        bench: |gpu, _| bench_2d(gpu, false),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_reject_bad_input() {
        assert!(matches!(plan_1d(0, 1, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan_1d(10, 3, 10, 10), Err(Error::Unsupported(_))));
        assert!(matches!(plan_1d(10, 0, 10, 10), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_1d(16, 4, 16, 15), Err(Error::LengthMismatch { .. })));
        assert_eq!(plan_1d(1024, 4, 1024, 1024).unwrap(), Launch::linear(1, 256));
        assert!(matches!(plan_2d(0, 5, true, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan_2d(4, 5, true, 20, 21), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan_2d(1 << 20, 1, true, 1 << 20, 1 << 20), Err(Error::OutOfRange { .. })));
        assert_eq!(plan_2d(33, 31, true, 1023, 1023).unwrap().grid, (1, 5));
    }
}
