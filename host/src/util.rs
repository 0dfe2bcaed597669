//! Filling device buffers with pseudo-random data on the GPU (`util_fill`), so nothing is ever
//! measured or checked on zeros and gigabytes never cross PCIe.
use cust::memory::DeviceCopy;

use crate::buffer::DeviceWrite;
use crate::error::{Result, in_range, non_empty, words};
use crate::gpu::Gpu;
use crate::launch::{Call, Launch, Out};
use coalesce_kernels::launch::grid_stride_blocks;
use coalesce_kernels::util::{FILL_BLOCK, FILL_BLOCKS_PER_SM, util_fill};
pub use coalesce_kernels::util::{Fill, MAX_FILL_WORDS};

/// `util_fill`'s parameter list.
pub(crate) type FillSig = fn(*mut u32, u64, u32, u32);

/// Validates a fill of `buffer` (any `Pod` type of whole 4-byte words, any size) and returns its
/// grid-stride launch over the buffer's words.
pub fn plan_fill<'a, T: DeviceCopy + bytemuck::Pod>(
    buffer: &'a mut impl DeviceWrite<T>,
    fill: Fill,
    seed: u32,
    multiprocessors: u32,
) -> Result<Call<'a, FillSig>> {
    words::<T>("filled buffer")?;
    non_empty("filled buffer", buffer.len())?;
    let words = buffer.len() as u128 * (std::mem::size_of::<T>() / 4) as u128;
    let n = u64::try_from(words).unwrap_or(u64::MAX);
    in_range("filled buffer words", n, 1, MAX_FILL_WORDS)?;
    let blocks = grid_stride_blocks(n, FILL_BLOCK, multiprocessors, FILL_BLOCKS_PER_SM);
    // SAFETY: `T` is `Pod` made of whole words, so any 32-bit pattern written is a valid `T`,
    // and the allocation is at least 4-byte aligned (device slices of such `T` are).
    let out = unsafe { Out::of(buffer).cast::<u32>() };
    // SAFETY: the kernel writes word `i` only for `i < n`, and the buffer holds exactly `n`
    // words; it assumes nothing of the block size (grid-stride over `blockDim * gridDim`,
    // `fill_step`, and from `fill_start`, both in 64 bits: no grid wraps them), and
    // `n <= MAX_FILL_WORDS` keeps `i + step` from overflowing.
    Ok(unsafe { Call::new(util_fill, Launch::linear(blocks, FILL_BLOCK), (out, n, seed, fill as u32)) })
}

/// Queues filling `buffer` with [`fill_value`](coalesce_kernels::util::fill_value)`(i, seed, fill)` for each 32-bit
/// word `i`.
pub fn fill<T: DeviceCopy + bytemuck::Pod>(
    gpu: &Gpu,
    buffer: &mut impl DeviceWrite<T>,
    fill: Fill,
    seed: u32,
) -> Result<()> {
    if buffer.is_empty() {
        return Ok(());
    }
    gpu.launch(plan_fill(buffer, fill, seed, gpu.multiprocessors())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::DeviceViewMut;
    use crate::error::Error;

    #[test]
    fn fill_grids_of_any_size_cover_every_word_once() {
        use coalesce_kernels::launch::MAX_GRID_X;
        use coalesce_kernels::util::{fill_start, fill_step};
        // 2^40 words on a (made-up) GPU of 2^32 - 1 multiprocessors: the largest grid.
        // SAFETY: a descriptor only; nothing is launched.
        let mut huge = unsafe { DeviceViewMut::<u32>::stand_in(0x1000, 1 << 40) };
        let call = plan_fill(&mut huge, Fill::Bits, 1, u32::MAX).unwrap();
        let launch = call.launch();
        assert_eq!(launch, Launch::linear(MAX_GRID_X, FILL_BLOCK));
        assert!(launch.check_limits().is_ok());
        let threads = u64::from(MAX_GRID_X) * u64::from(FILL_BLOCK);
        // The kernel's step is every thread of the grid, and the last thread starts below it.
        assert_eq!(fill_step(launch.block.0, launch.grid.0), threads);
        assert_eq!(fill_start(launch.grid.0 - 1, launch.block.0, launch.block.0 - 1), threads - 1);
        // A buffer whose word count passes u64 bytes is refused, not overflowed.
        // SAFETY: as above.
        let mut absurd = unsafe { DeviceViewMut::<[u32; 4]>::stand_in(0x1000, usize::MAX) };
        assert!(matches!(plan_fill(&mut absurd, Fill::Bits, 1, 132), Err(Error::OutOfRange { .. })));
    }

    #[test]
    fn fill_covers_every_word_of_wide_elements() {
        // SAFETY: a descriptor only; nothing is launched.
        let mut buffer = unsafe { crate::buffer::DeviceViewMut::<[f32; 3]>::stand_in(0x1000, 1000) };
        let call = plan_fill(&mut buffer, Fill::Unit, 3, 132).unwrap();
        assert_eq!(call.args().1, 3000);
        assert_eq!(call.launch(), Launch::linear(12, FILL_BLOCK));
        // SAFETY: as above.
        let mut empty = unsafe { DeviceViewMut::<f32>::stand_in(0x1000, 0) };
        assert!(plan_fill(&mut empty, Fill::Bits, 1, 132).is_err());
    }
}
