//! [`copy`], the library's copy, and the global-memory coalescing lessons that lead to it: plans,
//! launchers and CPU references for the copies in `kernels-gpu/src/coalescing.rs` (offset,
//! stride, L2-only offset, and the 16-byte copy that is the library's fast copy).

use crate::buffer::{DeviceRead, DeviceWrite};
use crate::error::{
    Error, Result, aligned16, allocatable, at_least, elements32, exactly, in_range, non_empty, product, sum,
};
use crate::gpu::Gpu;
use crate::launch::{Call, In, Launch, Out};
use coalesce_kernels::coalescing::*;
pub use coalesce_kernels::coalescing::{MAX_OFFSET, MAX_STRIDE};
use coalesce_kernels::launch::{MAX_GRID_X, grid_stride_blocks};
use cust::memory::DeviceCopy;

/// Parameter list of the one-element-per-thread copies: input, output, n, offset or stride.
pub(crate) type OffsetSig = fn(*const f32, *mut f32, u32, u32);
/// Parameter list of the 16-byte copies: input, output, n.
pub(crate) type CopySig = fn(*const f32, *mut f32, u64);
/// The copy's kernels that no lesson runs: the byte copy (the `library/` checks and
/// `gpu --types` run it).
pub const ELEMENT_KERNELS: [&str; 1] = [coalescing_copy_bytes.name()];
/// Parameter list of the byte copy: input, output, n (bytes).
pub(crate) type ByteCopySig = fn(*const u8, *mut u8, u64);

/// A copy the hardware moves (Hopper module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncCopy {
    /// `cp.async` 16-byte copies into a 4-stage shared ring, stored back by the threads.
    CpAsync,
    /// TMA bulk copies of 16 KiB chunks global → shared → global, one thread per block.
    Bulk,
}

impl AsyncCopy {
    /// The kernel's typed handle.
    pub const fn kernel(self) -> coalesce_kernels::kernel::Kernel<CopySig> {
        match self {
            AsyncCopy::CpAsync => coalescing_cp_async,
            AsyncCopy::Bulk => coalescing_bulk,
        }
    }

    /// Most resident blocks per SM its shared ring allows on an H100 (the default is the most).
    pub const fn max_blocks_per_sm(self) -> u32 {
        match self {
            AsyncCopy::CpAsync => CP_BLOCKS_PER_SM,
            AsyncCopy::Bulk => BULK_BLOCKS_PER_SM,
        }
    }

    /// The launch over `vectors` 16-byte vectors: a persistent grid of `blocks_per_sm` blocks
    /// on each of `multiprocessors` SMs (never more than there are chunks, at least one), or
    /// with `blocks_per_sm == 0` one block per ring's worth of chunks (each block fills its
    /// ring once and drains it; the hardware schedules blocks as others finish). With the ring.
    /// The block count may pass `u32` only for absurd sizes; the plan checks it.
    pub fn launch(self, vectors: u64, multiprocessors: u32, blocks_per_sm: u32) -> (u64, Launch) {
        // `bulk_chunks` counts bytes (16 a vector): past 2^60 vectors, which no buffer holds,
        // they would wrap; the chunks of 2^60 are already far past any grid.
        let bulk_vectors = vectors.min(u64::MAX / 16);
        let (chunks, stages, threads, shared) = match self {
            AsyncCopy::CpAsync => (cp_chunks(vectors), CP_STAGES, CP_BLOCK, CP_SHARED_BYTES),
            AsyncCopy::Bulk => (bulk_chunks(bulk_vectors), BULK_STAGES, BULK_THREADS, BULK_SHARED_BYTES),
        };
        let blocks = match blocks_per_sm {
            0 => chunks.div_ceil(u64::from(stages)),
            b => chunks.min(u64::from(multiprocessors) * u64::from(b)),
        }
        .max(1);
        (blocks, Launch::linear(blocks.min(u64::from(MAX_GRID_X)) as u32, threads).with_shared(shared))
    }
}

/// Which load the offset copy uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Plain `ld.global` (through L1).
    Cached,
    /// `ld.global.cg` (L2 only).
    L2Only,
}

/// Validates an offset copy of elements `offset..offset + n` and returns its launch.
pub fn plan_offset<'a>(
    load: Load,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    n: usize,
    offset: u32,
) -> Result<Call<'a, OffsetSig>> {
    let kernel = match load {
        Load::Cached => coalescing_offset,
        Load::L2Only => coalescing_offset_cg,
    };
    let n32 = elements32("copy n", n)?;
    in_range("offset", offset.into(), 0, MAX_OFFSET.into())?;
    let needed = offset_len(n as u64, offset);
    at_least("copy input", input.len(), needed)?;
    at_least("copy output", output.len(), needed)?;
    let launch = Launch::linear(n32.div_ceil(BLOCK), BLOCK);
    // SAFETY: the kernel touches `offset_index(i, offset)` only for `i < n`, the largest being
    // `n - 1 + offset < offset_len(n, offset)`, which both buffers hold (checked above).
    Ok(unsafe { Call::new(kernel, launch, (In::of(input), Out::of(output), n32, offset)) })
}

/// Validates a stride copy of `n` elements `0, stride, 2 * stride, ...` and returns its launch.
pub fn plan_stride<'a>(
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    n: usize,
    stride: u32,
) -> Result<Call<'a, OffsetSig>> {
    let n32 = elements32("copy n", n)?;
    in_range("stride", stride.into(), 1, MAX_STRIDE.into())?;
    let needed = stride_len(n as u64, stride);
    at_least("copy input", input.len(), needed)?;
    at_least("copy output", output.len(), needed)?;
    let launch = Launch::linear(n32.div_ceil(BLOCK), BLOCK);
    // SAFETY: the kernel touches `stride_index(i, stride)` only for `i < n`, the largest being
    // `(n - 1) * stride < stride_len(n, stride)`, which both buffers hold (checked above).
    Ok(unsafe { Call::new(coalescing_stride, launch, (In::of(input), Out::of(output), n32, stride)) })
}

/// Validates a whole-buffer 16-byte copy (any length) and returns its launch: `blocks_per_sm`
/// resident blocks on each of `multiprocessors` SMs (fewer if the work is smaller), or with
/// `blocks_per_sm == 0` one block per 8 KiB chunk (every thread makes one unrolled trip).
pub fn plan_copy<'a>(
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    multiprocessors: u32,
    blocks_per_sm: u32,
    streaming: bool,
) -> Result<Call<'a, CopySig>> {
    non_empty("copy input", input.len())?;
    exactly("copy output", output.len(), input.len())?;
    in_range("blocks per SM", blocks_per_sm.into(), 0, 64)?;
    aligned16("copy input", input.address())?;
    aligned16("copy output", output.address())?;
    let n = input.len() as u64;
    let (vectors, _) = vec4_split(n);
    let blocks = match blocks_per_sm {
        0 => one_trip_blocks(vectors),
        b => grid_stride_blocks(vectors, CHUNK, multiprocessors, b).into(),
    };
    in_range("copy blocks", blocks, 1, MAX_GRID_X.into())?;
    let kernel = if streaming { coalescing_vec4_stream } else { coalescing_vec4 };
    // SAFETY: the kernel reads and writes vector `vec4_index(..)` only below `vectors = n / 4`
    // and tail floats only below `n`; both buffers hold exactly `n` floats and start on 16-byte
    // boundaries (checked above), and the launch has the `BLOCK` threads the kernel assumes.
    Ok(unsafe { Call::new(kernel, Launch::linear(blocks as u32, BLOCK), (In::of(input), Out::of(output), n)) })
}

/// Validates a whole-buffer copy (any length) by `kind` and returns its launch of
/// `blocks_per_sm` (0 ..= [`AsyncCopy::max_blocks_per_sm`], see [`AsyncCopy::launch`]) blocks
/// on each of `multiprocessors` SMs. Errors as [`plan_copy`]: empty input, unequal lengths,
/// buffers not on 16-byte boundaries, blocks per SM out of range, too many blocks.
pub fn plan_async_copy<'a>(
    kind: AsyncCopy,
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
    multiprocessors: u32,
    blocks_per_sm: u32,
) -> Result<Call<'a, CopySig>> {
    in_range("blocks per SM", blocks_per_sm.into(), 0, kind.max_blocks_per_sm().into())?;
    non_empty("copy input", input.len())?;
    allocatable::<f32>("copy input", input.len())?;
    exactly("copy output", output.len(), input.len())?;
    aligned16("copy input", input.address())?;
    aligned16("copy output", output.address())?;
    let n = input.len() as u64;
    let (vectors, _) = vec4_split(n);
    let (blocks, launch) = kind.launch(vectors, multiprocessors, blocks_per_sm);
    in_range("copy blocks", blocks, 1, MAX_GRID_X.into())?;
    // SAFETY: both buffers hold exactly n floats and start on 16-byte boundaries (checked). The
    // cp.async copy touches vector `cp_vector(cp_chunk(b, j, grid), t)` only when it is below
    // `vectors = n / 4`, its shared slots `cp_slot(j, t) < CP_SHARED_BYTES` (launched) with the
    // CP_BLOCK threads it assumes; the bulk copy moves chunk c < bulk_chunks(vectors), bytes
    // [c * BULK_CHUNK_BYTES, + bulk_chunk_bytes(c, vectors)) < 16 * vectors <= 4 n, into ring
    // slots inside the BULK_SHARED_BYTES launched (opted in past 48 KiB by `Gpu::launch`); both
    // copy the tail floats 4 * vectors + t < n only.
    Ok(unsafe { Call::new(kind.kernel(), launch, (In::of(input), Out::of(output), n)) })
}

/// Copies all of `input` into `output` (equal lengths, any size) with the hardware copy `kind`,
/// `blocks_per_sm` resident blocks per SM (Hopper module: [`crate::Error::ModuleUnavailable`] on
/// older devices).
pub fn copy_async(
    gpu: &Gpu,
    kind: AsyncCopy,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    blocks_per_sm: u32,
) -> Result<()> {
    gpu.launch(plan_async_copy(kind, input, output, gpu.multiprocessors(), blocks_per_sm)?)
}

/// Copies elements `offset..offset + n` of `input` to the same positions of `output`, one
/// 4-byte element per thread: the alignment experiment of the CUDA Best Practices Guide.
pub fn offset_copy(
    gpu: &Gpu,
    load: Load,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    n: usize,
    offset: u32,
) -> Result<()> {
    gpu.launch(plan_offset(load, input, output, n, offset)?)
}

/// Copies elements `0, stride, 2 * stride, ...` (`n` of them) of `input` to the same positions
/// of `output`.
pub fn stride_copy(
    gpu: &Gpu,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    n: usize,
    stride: u32,
) -> Result<()> {
    gpu.launch(plan_stride(input, output, n, stride)?)
}

/// Validates a copy of all of `input` into `output` (equal lengths, any size, any element offsets)
/// by `coalescing_copy_any` and returns its launch: one block per 4 KiB chunk of its body.
pub fn plan_copy_any<'a>(
    input: &'a impl DeviceRead<f32>,
    output: &'a mut impl DeviceWrite<f32>,
) -> Result<Call<'a, CopySig>> {
    non_empty("copy input", input.len())?;
    // `shifted_split`'s sums pass u64 for counts near it (stand-ins may claim any length).
    allocatable::<f32>("copy input", input.len())?;
    exactly("copy output", output.len(), input.len())?;
    let n = input.len() as u64;
    let split = shifted_split(input.address(), output.address(), n);
    let blocks = any_blocks(split.vectors);
    in_range("copy blocks", blocks, 1, MAX_GRID_X.into())?;
    // SAFETY: both views hold exactly n floats, 4-byte aligned as every f32 view is, and the
    // kernel derives the same `shifted_split` from the same addresses: it copies floats
    // `shifted_scalar(..) < n` one by one and the body's vectors, which lie inside both views
    // and on 16-byte boundaries (`shifted_split`'s contract, tested over every alignment pair).
    // The launch has the `BLOCK` threads a block the body's chunks and shuffles assume.
    Ok(unsafe {
        Call::new(coalescing_copy_any, Launch::linear(blocks as u32, BLOCK), (In::of(input), Out::of(output), n))
    })
}

/// Validates a copy of all of `input` into `output` (equal lengths, any size, any byte
/// offsets) by `coalescing_copy_bytes` and returns its launch: one block per 4 KiB chunk of its
/// body.
pub fn plan_copy_bytes<'a>(
    input: &'a impl DeviceRead<u8>,
    output: &'a mut impl DeviceWrite<u8>,
) -> Result<Call<'a, ByteCopySig>> {
    non_empty("copy input", input.len())?;
    // `byte_split`'s sums pass u64 for counts near it (stand-ins may claim any length).
    allocatable::<u8>("copy input", input.len())?;
    exactly("copy output", output.len(), input.len())?;
    let n = input.len() as u64;
    let split = byte_split(input.address(), output.address(), n);
    let blocks = any_blocks(split.vectors);
    in_range("copy blocks", blocks, 1, MAX_GRID_X.into())?;
    // SAFETY: both views hold exactly n bytes, and the kernel derives the same `byte_split` from
    // the same addresses: it copies bytes `byte_scalar(..) < n` one by one and the body's
    // vectors, which lie inside both views and on 16-byte boundaries (`byte_split`'s contract,
    // tested over every pair of 32 alignments). The input is borrowed shared and the output
    // exclusively, so they do not overlap and nothing writes the input meanwhile (its loads
    // take the read-only path). The launch has the `BLOCK` threads a block the body's chunks
    // and shuffles assume.
    Ok(unsafe {
        Call::new(coalescing_copy_bytes, Launch::linear(blocks as u32, BLOCK), (In::of(input), Out::of(output), n))
    })
}

/// Copies all of `input` into `output` (equal lengths, any size, any element offsets) with
/// 16-byte loads and stores: the library's fast copy. Any element type: the kernels move the
/// views' bytes bit for bit. Views whose bytes start and end on 4-byte boundaries (every view
/// of 4-, 8- or 16-byte elements, and of 1- or 2-byte elements at such offsets and lengths)
/// go through `coalescing_copy_any` as 4-byte words (one vector a thread, a head and tail
/// peeled, words shifted between lanes where the two views differ in alignment); any other
/// (1- or 2-byte elements elsewhere) through `coalescing_copy_bytes`, the same plan in bytes.
/// Errors as [`plan_copy_any`], in elements.
pub fn copy<T: DeviceCopy>(gpu: &Gpu, input: &impl DeviceRead<T>, output: &mut impl DeviceWrite<T>) -> Result<()> {
    non_empty("copy input", input.len())?;
    exactly("copy output", output.len(), input.len())?;
    let (from, mut to) = (input.view(), output.view_mut());
    if let (Some(from), Some(to)) = (from.into_words(), to.view_mut().into_words()) {
        let mut to = to;
        return gpu.launch(plan_copy_any(&from, &mut to)?);
    }
    // Bytes are aligned to themselves: every view is a view of bytes.
    let unsupported = || Error::Unsupported(format!("copy of {}-byte elements as bytes", std::mem::size_of::<T>()));
    let from = from.reinterpret::<u8>().ok_or_else(unsupported)?;
    let mut to = to.reinterpret::<u8>().ok_or_else(unsupported)?;
    gpu.launch(plan_copy_bytes(&from, &mut to)?)
}

/// [`copy`] with `blocks_per_sm` resident blocks per SM (0: one trip per thread) and the plain or
/// the streaming (`ld.global.nc` / `st.global.cs`) kernel.
pub fn copy_tuned(
    gpu: &Gpu,
    input: &impl DeviceRead<f32>,
    output: &mut impl DeviceWrite<f32>,
    blocks_per_sm: u32,
    streaming: bool,
) -> Result<()> {
    gpu.launch(plan_copy(input, output, gpu.multiprocessors(), blocks_per_sm, streaming)?)
}

/// CPU reference of the offset copy: elements `offset..offset + n` of `input` into `output`.
/// Errors: [`crate::Error::OutOfRange`] if `offset + n` passes `usize`, [`crate::Error::LengthMismatch`] if
/// either slice is shorter than `offset + n`.
pub fn offset_copy_cpu(input: &[f32], output: &mut [f32], n: usize, offset: usize) -> Result<()> {
    let end = sum("offset copy end", offset, n)?;
    at_least("copy input", input.len(), end as u64)?;
    at_least("copy output", output.len(), end as u64)?;
    output[offset..end].copy_from_slice(&input[offset..end]);
    Ok(())
}

/// CPU reference of the stride copy: elements `i * stride` for `i < n`. Errors:
/// [`crate::Error::OutOfRange`] if `(n - 1) * stride + 1` passes `usize`,
/// [`crate::Error::LengthMismatch`] if either slice is shorter than that.
pub fn stride_copy_cpu(input: &[f32], output: &mut [f32], n: usize, stride: usize) -> Result<()> {
    let needed = match n {
        0 => 0,
        n => sum("stride copy end", product("stride copy end", n - 1, stride)?, 1)?,
    };
    at_least("copy input", input.len(), needed as u64)?;
    at_least("copy output", output.len(), needed as u64)?;
    // Stride 0 copies element 0 n times: once is the same copy, and n is not bounded by the
    // slices then (a loop up to usize::MAX).
    let n = if stride == 0 { n.min(1) } else { n };
    for i in 0..n {
        output[i * stride] = input[i * stride];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use crate::error::Error;

    /// Slice descriptors at made-up addresses: plans are checked without a GPU.
    fn slices(a: usize, b: usize) -> (DeviceViewMut<'static, f32>, DeviceViewMut<'static, f32>) {
        // SAFETY: descriptors only; no planned call is launched.
        unsafe { (DeviceViewMut::stand_in(0x10_0000, a), DeviceViewMut::stand_in(0x20_0000, b)) }
    }

    #[test]
    fn offset_plan_rejects_bad_input_before_launch() {
        let plan = |n, offset, a, b| {
            let (i, mut o) = slices(a, b);
            plan_offset(Load::Cached, &i, &mut o, n, offset).map(|c| c.launch())
        };
        assert!(matches!(plan(0, 0, 10, 10), Err(Error::Empty(_))));
        assert!(matches!(plan(10, 33, 100, 100), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(10, 1, 10, 11), Err(Error::LengthMismatch { expected: 11, got: 10, .. })));
        assert!(matches!(plan(10, 1, 11, 10), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(1 << 31, 0, usize::MAX, usize::MAX), Err(Error::OutOfRange { .. })));
        assert_eq!(plan(257, 32, 289, 289).unwrap(), Launch::linear(2, 256));
    }

    #[test]
    fn stride_plan_rejects_bad_input_before_launch() {
        let plan = |n, stride, a, b| {
            let (i, mut o) = slices(a, b);
            plan_stride(&i, &mut o, n, stride).map(|c| c.launch())
        };
        assert!(matches!(plan(10, 0, 100, 100), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(10, 33, 1000, 1000), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan(10, 4, 37, 36), Err(Error::LengthMismatch { expected: 37, .. })));
        assert_eq!(plan(1, 32, 1, 1).unwrap(), Launch::linear(1, 256));
    }

    #[test]
    fn copy_plan_takes_any_size_and_checks_alignment() {
        let plan = |a, b, blocks_per_sm| {
            let (i, mut o) = slices(a, b);
            plan_copy(&i, &mut o, 132, blocks_per_sm, false).map(|c| (c.launch(), c.args().2))
        };
        assert!(matches!(plan(0, 0, 8), Err(Error::Empty(_))));
        assert!(matches!(plan(10, 9, 8), Err(Error::LengthMismatch { .. })));
        assert!(matches!(plan(10, 10, 65), Err(Error::OutOfRange { .. })));
        assert_eq!(plan(1 << 26, 1 << 26, 0).unwrap().0.grid.0, (1 << 24) / CHUNK);
        assert_eq!(plan(3, 3, 8).unwrap().0, Launch::linear(1, 256));
        assert_eq!(plan(1 << 26, 1 << 26, 8).unwrap().0.grid.0, 132 * 8);
        // Past 2^31 elements: 64-bit n, one block per 8 KiB chunk.
        let big = (1usize << 31) + 5;
        assert_eq!(plan(big, big, 0).unwrap(), (Launch::linear((1 << 20) + 1, 256), big as u64));
        // SAFETY: descriptors only.
        let (i, mut o) =
            unsafe { (DeviceViewMut::<f32>::stand_in(0x10_0004, 8), DeviceViewMut::<f32>::stand_in(0x20_0000, 8)) };
        assert!(matches!(plan_copy(&i, &mut o, 132, 0, false), Err(Error::Misaligned { .. })));
    }

    #[test]
    fn async_copy_plans_are_persistent_and_checked() {
        let plan = |kind: AsyncCopy, a, b| {
            let (i, mut o) = slices(a, b);
            plan_async_copy(kind, &i, &mut o, 132, kind.max_blocks_per_sm()).map(|c| c.launch())
        };
        assert!(matches!(plan(AsyncCopy::Bulk, 0, 0), Err(Error::Empty(_))));
        assert!(matches!(plan(AsyncCopy::CpAsync, 10, 11), Err(Error::LengthMismatch { .. })));
        let l = plan(AsyncCopy::CpAsync, 1 << 26, 1 << 26).unwrap();
        assert_eq!((l.grid.0, l.block.0, l.shared_bytes), (132 * 8, 256, CP_SHARED_BYTES));
        let l = plan(AsyncCopy::Bulk, 1 << 26, 1 << 26).unwrap();
        assert_eq!((l.grid.0, l.block.0, l.shared_bytes), (132 * 3, 32, BULK_SHARED_BYTES));
        assert!(l.shared_bytes > coalesce_kernels::launch::DEFAULT_SHARED_BYTES && l.check_limits().is_ok());
        // Tiny copies: one block, which also copies the tail.
        assert_eq!(plan(AsyncCopy::Bulk, 3, 3).unwrap().grid.0, 1);
        assert_eq!(plan(AsyncCopy::CpAsync, 5, 5).unwrap().grid.0, 1);
        // SAFETY: descriptors only.
        let (i, mut o) =
            unsafe { (DeviceViewMut::<f32>::stand_in(0x10_0000, 8), DeviceViewMut::<f32>::stand_in(0x20_0008, 8)) };
        assert!(matches!(plan_async_copy(AsyncCopy::Bulk, &i, &mut o, 132, 1), Err(Error::Misaligned { .. })));
        assert!(matches!(plan_async_copy(AsyncCopy::Bulk, &i, &mut o, 132, 4), Err(Error::OutOfRange { .. })));
        assert!(matches!(plan_async_copy(AsyncCopy::CpAsync, &i, &mut o, 132, 9), Err(Error::OutOfRange { .. })));
        // One ring per block: 2^24 vectors are 16384 bulk chunks (4096 blocks), 65536 cp.async
        // chunks (16384 blocks).
        let one_trip = |kind| {
            let (i, mut o) = slices(1 << 26, 1 << 26);
            plan_async_copy(kind, &i, &mut o, 132, 0).map(|c| c.launch().grid.0)
        };
        assert_eq!((one_trip(AsyncCopy::Bulk).unwrap(), one_trip(AsyncCopy::CpAsync).unwrap()), (4096, 16384));
    }

    #[test]
    fn copies_longer_than_any_allocation_are_refused() {
        // usize::MAX floats, 16-byte aligned: bulk_chunks' byte count (and shifted_split's
        // sums, at a shifted address) overflowed.
        let max = isize::MAX as u64 / 4;
        let too_long = Err(Error::OutOfRange { what: "copy input", value: usize::MAX as u64, min: 0, max });
        for kind in [AsyncCopy::Bulk, AsyncCopy::CpAsync] {
            let (i, mut o) = slices(usize::MAX, usize::MAX);
            assert_eq!(plan_async_copy(kind, &i, &mut o, 132, 0).map(|c| c.launch()), too_long);
        }
        // SAFETY: descriptors only.
        let (i, mut o) = unsafe {
            (DeviceViewMut::<f32>::stand_in(0x10_0004, usize::MAX), DeviceViewMut::stand_in(0x20_0000, usize::MAX))
        };
        assert_eq!(plan_copy_any(&i, &mut o).map(|c| c.launch()), too_long);
        // The launch of 2^64 - 1 vectors is computed, not wrapped: far past the grid.
        let (blocks, _) = AsyncCopy::Bulk.launch(u64::MAX, 132, 0);
        assert!(blocks > u64::from(MAX_GRID_X), "{blocks}");
    }

    #[test]
    fn cpu_references_touch_exactly_their_elements() {
        let input: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let mut out = vec![-1.0; 20];
        offset_copy_cpu(&input, &mut out, 3, 2).unwrap();
        assert_eq!(&out[..6], &[-1.0, -1.0, 2.0, 3.0, 4.0, -1.0]);
        let mut out = vec![-1.0; 20];
        stride_copy_cpu(&input, &mut out, 3, 4).unwrap();
        let touched: Vec<usize> = (0..20).filter(|&i| out[i] != -1.0).collect();
        assert_eq!(touched, [0, 4, 8]);
    }

    #[test]
    fn cpu_references_refuse_what_their_slices_do_not_hold() {
        let (input, mut out) = ([1.0f32; 9], [0.0f32; 9]);
        // offset + n = 10 > 9 (and past usize); (n - 1) * stride + 1 = 10 > 9 (and past usize).
        let short = |r: Result<()>| matches!(r, Err(Error::LengthMismatch { expected: 10, got: 9, .. }));
        assert!(short(offset_copy_cpu(&input, &mut out, 8, 2)));
        assert!(short(stride_copy_cpu(&input, &mut out, 4, 3)));
        assert!(matches!(offset_copy_cpu(&input, &mut out, usize::MAX, 2), Err(Error::OutOfRange { .. })));
        assert!(matches!(stride_copy_cpu(&input, &mut out, 3, usize::MAX), Err(Error::OutOfRange { .. })));
        assert!(matches!(
            offset_copy_cpu(&input, &mut [0.0; 4], 3, 2),
            Err(Error::LengthMismatch { what: "copy output", .. })
        ));
        // Exactly enough, and nothing at all, are fine; the output is untouched on a refusal.
        assert_eq!(out, [0.0; 9]);
        assert!(offset_copy_cpu(&input, &mut out, 7, 2).is_ok() && stride_copy_cpu(&input, &mut out, 0, 5).is_ok());
        assert!(stride_copy_cpu(&input, &mut out, 3, 4).is_ok() && stride_copy_cpu(&input, &mut out, 5, 0).is_ok());
    }

    #[test]
    fn cpu_stride_copy_at_stride_zero_copies_element_zero_once() {
        // Any n fits one element at stride 0: the loop ran n times (usize::MAX: a hang).
        let mut out = [0.0f32];
        assert_eq!(stride_copy_cpu(&[1.5], &mut out, usize::MAX, 0), Ok(()));
        assert_eq!(out, [1.5]);
    }
}
