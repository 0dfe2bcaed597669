//! Device buffers filled with pseudo-random data by the `util_fill` kernel (for benchmarks).
use cust::memory::{DeviceBuffer, DeviceCopy};

use crate::error::{Result, four_bytes};
use crate::gpu::{Gpu, Launch, kernel_args};
use coalesce_kernels::coalescing::{BLOCK, BLOCKS_PER_SM, grid_stride_blocks};
pub use coalesce_kernels::util::{Fill, fill_value};

/// A device buffer of `len` 4-byte elements filled on the GPU with `fill_value(i, seed, fill)`.
pub fn random_buffer<T: DeviceCopy>(gpu: &Gpu, len: usize, fill: Fill, seed: u32) -> Result<DeviceBuffer<T>> {
    four_bytes::<T>("random buffer")?;
    let len = len.max(1);
    // SAFETY: the fill kernel below writes all `len` elements before the buffer is returned,
    // and every bit pattern is a valid f32, i32 or u32.
    let buffer = unsafe { DeviceBuffer::<T>::uninitialized(len)? };
    let blocks = grid_stride_blocks(len as u64, BLOCK, gpu.multiprocessors(), BLOCKS_PER_SM);
    let (ptr, n, fill) = (buffer.as_device_ptr(), len as u64, fill as u32);
    gpu.launch("util_fill", Launch::linear(blocks, BLOCK), kernel_args![ptr, n, seed, fill])?;
    gpu.synchronize()?;
    Ok(buffer)
}

/// A random f32 input of `in_len` and a random-filled (so never all zeros) output of `out_len`.
pub fn random_pair(gpu: &Gpu, in_len: usize, out_len: usize) -> Result<(DeviceBuffer<f32>, DeviceBuffer<f32>)> {
    Ok((random_buffer(gpu, in_len, Fill::Unit, 1)?, random_buffer(gpu, out_len, Fill::Unit, 2)?))
}
