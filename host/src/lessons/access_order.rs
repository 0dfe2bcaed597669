//! Which element each thread handles: plans, launchers and the CPU reference for
//! `kernels-gpu/src/access_order.rs`: contiguous chunks vs interleaved threads (1-D), and 2-D
//! blocks whose lanes run along x vs along y. Every variant computes `out = in + 1`.
//!
//! Lesson kernels: 32-bit indices, so counts stay below 2^31 (`MAX_ELEMENTS_32`).

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{Error, Result, elements32, exactly, in_range};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Kernel, Launch, Out};
pub use coalesce_kernels::access_order::MAX_PER_THREAD;
use coalesce_kernels::access_order::*;

/// Parameter list of every walk: input, output, then `(n, per_thread)` (1-D) or `(rows, cols)`
/// (2-D).
pub(crate) type WalkSig = fn(*const f32, *mut f32, u32, u32);

/// How a 1-D walk assigns elements to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Each thread owns `per_thread` contiguous elements ([`chunked_index`]).
    Chunked,
    /// Thread `t` takes elements `t, t + T, t + 2T, ..` ([`interleaved_index`]).
    Interleaved,
}

impl Order {
    /// The kernel that walks in this order.
    pub const fn kernel(self) -> Kernel<WalkSig> {
        match self {
            Order::Chunked => access_order_chunked,
            Order::Interleaved => access_order_interleaved,
        }
    }
}

/// Which way the 32 lanes of a warp run over the matrix in a 2-D walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// Along a row ([`along_x`]): a warp reads 128 contiguous bytes.
    AlongX,
    /// Down a column ([`along_y`]): a warp's addresses are a row apart.
    AlongY,
}

impl Lanes {
    /// The kernel that walks this way.
    pub const fn kernel(self) -> Kernel<WalkSig> {
        match self {
            Lanes::AlongX => access_order_block_x,
            Lanes::AlongY => access_order_block_y,
        }
    }

    /// Whether lanes run along x (the argument `grid_2d` takes).
    pub const fn along_x(self) -> bool {
        matches!(self, Lanes::AlongX)
    }
}

/// Validates a 1-D walk of `n` elements, `per_thread` each, and returns its launch.
///
/// Errors: [`Error::Empty`] for `n == 0`, [`Error::OutOfRange`] for `n` past
/// `MAX_ELEMENTS_32` or `per_thread` outside `1..=MAX_PER_THREAD`, [`Error::Unsupported`] when
/// `n` is not a multiple of `per_thread`, [`Error::LengthMismatch`] unless both buffers hold
/// exactly `n` floats.
pub fn plan_walk<'a>(
    order: Order,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    n: usize,
    per_thread: u32,
) -> Result<Call<'a, WalkSig>> {
    let n32 = elements32("access order n", n)?;
    in_range("elements per thread", per_thread.into(), 1, MAX_PER_THREAD.into())?;
    if !n32.is_multiple_of(per_thread) {
        return Err(Error::Unsupported(format!("n = {n} is not a multiple of {per_thread} elements per thread")));
    }
    exactly("access order input", input.len(), n)?;
    exactly("access order output", output.len(), n)?;
    let launch = Launch::linear(walk_threads(n32, per_thread).div_ceil(BLOCK), BLOCK);
    // SAFETY: the kernel runs `threads = walk_threads(n, per_thread) = n / per_thread` threads'
    // worth of work (the others are guarded out) and thread t < threads touches
    // `chunked_index` / `interleaved_index(t, k, ..)` for k < per_thread only, both
    // < threads * per_thread = n (n is a multiple of per_thread, checked above), the exact
    // length of both buffers. Global thread ids stay below 2^31 + BLOCK (n < 2^31): no wrap.
    Ok(unsafe { Call::new(order.kernel(), launch, (In::of(input), Out::of(output), n32, per_thread)) })
}

/// Validates a 2-D walk of a row-major `rows × cols` matrix and returns its launch of
/// `BLOCK_2D` blocks.
///
/// Errors: [`Error::Empty`] for a zero dimension, [`Error::OutOfRange`] when `rows * cols`
/// passes `MAX_ELEMENTS_32` or the grid passes the driver's limits (`gridDim.y` <= 65 535: rows
/// up to 524 280 along x, 2 097 120 along y), [`Error::LengthMismatch`] unless both buffers
/// hold exactly `rows * cols` floats.
pub fn plan_walk_2d<'a>(
    lanes: Lanes,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<Call<'a, WalkSig>> {
    let rows32 = elements32("rows", rows)?;
    let cols32 = elements32("cols", cols)?;
    elements32("rows * cols", rows.saturating_mul(cols))?;
    exactly("access order input", input.len(), rows * cols)?;
    exactly("access order output", output.len(), rows * cols)?;
    let launch =
        Launch { grid: grid_2d(rows32, cols32, lanes.along_x()), block: BLOCK_2D, shared_bytes: 0, cluster: 1 };
    launch.check_limits()?;
    // SAFETY: the kernel maps (block, thread) with `along_x` / `along_y` to (r, c) (u32: at most
    // rows or cols rounded up to a block side, below 2^31 + 32) and touches only
    // `matrix_index(r, c, cols)` with r < rows and c < cols, so < rows * cols, the exact length
    // of both buffers (checked above); the block is the `BLOCK_2D` the maps assume.
    Ok(unsafe { Call::new(lanes.kernel(), launch, (In::of(input), Out::of(output), rows32, cols32)) })
}

/// Each thread handles `per_thread` elements of `n`, contiguous or interleaved (`order`):
/// `output = input + 1`.
pub fn walk_1d(
    gpu: &Gpu,
    order: Order,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    n: usize,
    per_thread: u32,
) -> Result<()> {
    gpu.launch(plan_walk(order, input, output, n, per_thread)?)
}

/// 2-D (32, 8) blocks over a row-major `rows × cols` matrix, lanes along x or along y:
/// `output = input + 1`.
pub fn walk_2d(
    gpu: &Gpu,
    lanes: Lanes,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    gpu.launch(plan_walk_2d(lanes, input, output, rows, cols)?)
}

/// CPU reference of every variant: `out = in + 1`. [`Error::LengthMismatch`] unless `output`
/// is as long as `input`.
pub fn plus_one_cpu(input: &[f32], output: &mut [f32]) -> Result<()> {
    exactly("plus-one output", output.len(), input.len())?;
    for (o, &i) in output.iter_mut().zip(input) {
        *o = i + 1.0;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;

    /// Slice descriptors at made-up addresses: plans are checked without a GPU.
    fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe { (DeviceViewMut::stand_in(0x10_0000, a), DeviceViewMut::stand_in(0x20_0000, b)) }
    }

    fn plan_1d(n: usize, per_thread: u32, a: usize, b: usize) -> Result<Launch> {
        let (i, mut o) = slices(a, b);
        plan_walk(Order::Chunked, &i, &mut o, n, per_thread).map(|c| c.launch())
    }

    fn plan_2d(rows: usize, cols: usize, lanes: Lanes, a: usize, b: usize) -> Result<Launch> {
        let (i, mut o) = slices(a, b);
        plan_walk_2d(lanes, &i, &mut o, rows, cols).map(|c| c.launch())
    }

    #[test]
    fn plus_one_reference_refuses_unequal_lengths() {
        let mut out = [0.0f32; 2];
        let refused = plus_one_cpu(&[1.0; 4], &mut out);
        assert!(matches!(refused, Err(Error::LengthMismatch { what: "plus-one output", expected: 4, got: 2 })));
        assert_eq!(out, [0.0; 2]);
        plus_one_cpu(&[1.0, 2.5], &mut out).unwrap();
        assert_eq!(out, [2.0, 3.5]);
    }

    #[test]
    fn walk_plan_rejects_bad_input() {
        assert!(matches!(plan_1d(0, 1, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan_1d(1 << 31, 1, 1 << 31, 1 << 31), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_1d(10, 3, 10, 10), Err(Error::Unsupported(_))));
        assert!(matches!(plan_1d(10, 0, 10, 10), Err(Error::OutOfRange { what: "elements per thread", .. })));
        assert!(matches!(plan_1d(256, 129, 256, 256), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_1d(16, 4, 16, 15), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan_1d(16, 4, 17, 16), Err(Error::LengthMismatch { .. })));
    }

    #[test]
    fn walk_plan_launches_one_thread_per_chunk() {
        assert_eq!(plan_1d(1024, 4, 1024, 1024).unwrap(), Launch::linear(1, 256));
        assert_eq!(plan_1d(1028, 4, 1028, 1028).unwrap(), Launch::linear(2, 256));
        let n = (1 << 31) - 1;
        assert_eq!(plan_1d(n, 1, n, n).unwrap(), Launch::linear(1 << 23, 256));
        let (i, mut o) = slices(24, 24);
        let call = plan_walk(Order::Interleaved, &i, &mut o, 24, 3).unwrap();
        assert_eq!((call.kernel(), call.args().2, call.args().3), (access_order_interleaved, 24, 3));
    }

    #[test]
    fn walk_2d_plan_rejects_bad_input() {
        assert!(matches!(plan_2d(0, 5, Lanes::AlongX, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan_2d(5, 0, Lanes::AlongY, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan_2d(4, 5, Lanes::AlongX, 20, 21), Err(Error::LengthMismatch { .. })));
        assert!(matches!(
            plan_2d(1 << 16, 1 << 15, Lanes::AlongX, 0, 0),
            Err(Error::OutOfRange { what: "rows * cols", .. })
        ));
        // gridDim.y: 2^20 rows are 131 072 blocks of 8 rows (along x), 32 768 of 32 (along y).
        assert!(matches!(
            plan_2d(1 << 20, 1, Lanes::AlongX, 1 << 20, 1 << 20),
            Err(Error::OutOfRange { what: "grid y", .. })
        ));
        assert_eq!(plan_2d(1 << 20, 1, Lanes::AlongY, 1 << 20, 1 << 20).unwrap().grid, (1, 32_768));
    }

    #[test]
    fn walk_2d_plan_sizes_the_grid_for_the_lanes() {
        assert_eq!(plan_2d(33, 31, Lanes::AlongX, 1023, 1023).unwrap().grid, (1, 5));
        assert_eq!(plan_2d(33, 31, Lanes::AlongY, 1023, 1023).unwrap().grid, (4, 2));
        assert_eq!(plan_2d(33, 31, Lanes::AlongY, 1023, 1023).unwrap().block, BLOCK_2D);
    }
}
