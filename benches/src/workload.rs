//! Prepared benchmark work: buffers allocated and filled with random data, ready to be launched
//! again and again by the report, the criterion benches and the ncu step.
use coalesce::util::{Fill, fill};
use coalesce::{DeviceBuffer, Gpu, Result};
use cust::memory::DeviceCopy;

/// Queues one run of prepared work.
type Launcher = dyn FnMut(&Gpu) -> Result<()>;

/// Prepared GPU (or CPU) work.
pub struct Workload {
    /// Bytes the work must move through device memory: each input read once plus each output
    /// written once (for sweeps, the useful bytes).
    pub bytes: u64,
    /// Floating-point operations, for compute-bound kernels (0 otherwise).
    pub flops: u64,
    /// Runs on the CPU (time it with a host clock, not CUDA events).
    pub on_cpu: bool,
    launch: Box<Launcher>,
}

impl Workload {
    /// Work that moves `bytes` and is queued by `launch`.
    pub fn new(bytes: u64, launch: impl FnMut(&Gpu) -> Result<()> + 'static) -> Self {
        Workload { bytes, flops: 0, on_cpu: false, launch: Box::new(launch) }
    }

    /// CPU work (a reference the GPU is compared with) that moves `bytes`.
    pub fn cpu(bytes: u64, mut run: impl FnMut() + 'static) -> Self {
        Workload {
            bytes,
            flops: 0,
            on_cpu: true,
            launch: Box::new(move |_| {
                run();
                Ok(())
            }),
        }
    }

    /// The same work, counted as `flops` floating-point operations.
    pub fn with_flops(mut self, flops: u64) -> Self {
        self.flops = flops;
        self
    }

    /// Queues one run on `gpu`'s stream (or, for CPU work, runs it).
    pub fn launch(&mut self, gpu: &Gpu) -> Result<()> {
        (self.launch)(gpu)
    }
}

/// A device buffer of `len` elements (`len >= 1`) filled on the GPU with pseudo-random words.
pub fn random_buffer<T: DeviceCopy + bytemuck::Pod>(
    gpu: &Gpu,
    len: usize,
    kind: Fill,
    seed: u32,
) -> Result<DeviceBuffer<T>> {
    // SAFETY: the fill below writes every word before the buffer is returned, and every bit
    // pattern is a valid `Pod` value.
    let mut buffer = unsafe { gpu.uninitialized::<T>(len)? };
    fill(gpu, &mut buffer, kind, seed)?;
    gpu.synchronize()?;
    Ok(buffer)
}

/// A random f32 input of `in_len` and a random-filled (so never all zeros) output of `out_len`.
pub fn random_pair(gpu: &Gpu, in_len: usize, out_len: usize) -> Result<(DeviceBuffer<f32>, DeviceBuffer<f32>)> {
    Ok((random_buffer(gpu, in_len, Fill::Unit, 1)?, random_buffer(gpu, out_len, Fill::Unit, 2)?))
}
