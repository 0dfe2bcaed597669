//! The GPU handle: one context, one stream, the embedded PTX module, and event timing.
use std::ffi::c_void;
use std::time::Duration;

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::event::{Event, EventFlags};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::error::{Error, Result, exactly, four_bytes};

/// Grid, block and dynamic shared memory of one launch, computed (and validated) before any
/// GPU work so that bad input never reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in x and y.
    pub grid: (u32, u32),
    /// Threads per block in x and y.
    pub block: (u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

impl Launch {
    /// A 1-D launch of `blocks` blocks of `threads` threads, no shared memory.
    pub const fn linear(blocks: u32, threads: u32) -> Self {
        Launch { grid: (blocks, 1), block: (threads, 1), shared_bytes: 0 }
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub const fn with_shared(mut self, bytes: u32) -> Self {
        self.shared_bytes = bytes;
        self
    }
}

/// Builds the argument array of a kernel launch: a pointer to each parameter, in order.
macro_rules! kernel_args {
    ($($arg:expr),* $(,)?) => {
        &[$(&$arg as *const _ as *mut ::std::ffi::c_void),*]
    };
}
pub(crate) use kernel_args;

/// A CUDA device ready to run coalesce's kernels.
///
/// Kernels and device-to-device copies are queued on the handle's stream and run in order.
/// The stream is a blocking one, so cust's synchronous copies (`DeviceBuffer::from_slice`,
/// `copy_to`, `as_host_vec`) wait for every kernel queued before them.
pub struct Gpu {
    module: Module,
    stream: Stream,
    name: String,
    multiprocessors: u32,
    // Dropped last: the module and the stream belong to this context.
    _context: Context,
}

impl Gpu {
    /// Opens device 0 and loads the embedded PTX. Fails with [`Error::NoGpu`] where there is no
    /// driver or no device.
    pub fn new() -> Result<Self> {
        Self::with_ptx(crate::PTX)
    }

    /// Like [`Gpu::new`] with another PTX module (e.g. one built for a newer arch).
    pub fn with_ptx(ptx: &str) -> Result<Self> {
        let no_gpu = |e: cust::error::CudaError| Error::NoGpu(e.to_string());
        cust::init(cust::CudaFlags::empty()).map_err(no_gpu)?;
        if Device::num_devices().map_err(no_gpu)? == 0 {
            return Err(Error::NoGpu("the driver reports no device".into()));
        }
        let device = Device::get_device(0).map_err(no_gpu)?;
        let context = Context::new(device)?;
        let module = Module::from_ptx(ptx, &[])?;
        let stream = Stream::new(StreamFlags::DEFAULT, None)?;
        let multiprocessors = device.get_attribute(DeviceAttribute::MultiprocessorCount)? as u32;
        Ok(Gpu { module, stream, name: device.name()?, multiprocessors, _context: context })
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming multiprocessors on the device (sizes grid-stride launches).
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The driver's CUDA version, e.g. "13.0".
    pub fn driver_version(&self) -> Result<String> {
        let v = cust::CudaApiVersion::get()?;
        Ok(format!("{}.{}", v.major(), v.minor()))
    }

    /// Waits for everything queued so far; a kernel that failed reports its error here.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    /// Queues `kernel` with `launch` and `args` (built by `kernel_args!`).
    ///
    /// Callers pass exactly the kernel's parameters in order and have validated every buffer
    /// length against `launch` (each launcher's `plan_*` function does that).
    pub(crate) fn launch(&self, kernel: &str, launch: Launch, args: &[*mut c_void]) -> Result<()> {
        let function = self.module.get_function(kernel)?;
        // SAFETY: `args` points at values matching the kernel's parameter list, and the
        // launcher checked (before this call) that every index the grid computes stays inside
        // the buffers it passed. The buffers are borrowed for the launcher's call, and
        // `cuMemFree` waits for queued work before a buffer's memory is released.
        unsafe {
            self.stream.launch(&function, launch.grid, launch.block, launch.shared_bytes, args)?;
        }
        Ok(())
    }

    /// Device-to-device copy of `src` into `dst` on the stream (`cuMemcpyDtoDAsync`): the
    /// bandwidth baseline every kernel is compared with.
    pub fn memcpy<T: DeviceCopy>(&self, src: &DeviceSlice<T>, dst: &mut DeviceSlice<T>) -> Result<()> {
        exactly("memcpy destination", dst.len(), src.len())?;
        // SAFETY: both slices are live device allocations of equal length, borrowed for the
        // call; the copy is ordered on our stream before any later use of `dst`.
        unsafe { dst.async_copy_from(src, &self.stream)? };
        Ok(())
    }

    /// Queues setting every element of `buffer` to zero (`cuMemsetD32Async`).
    pub fn zero<T: DeviceCopy + bytemuck::Pod>(&self, buffer: &DeviceSlice<T>) -> Result<()> {
        four_bytes::<T>("zeroed buffer")?;
        let mut view = *buffer;
        // SAFETY: `view` covers exactly `buffer`'s live allocation, borrowed for this call;
        // the memset is ordered on our stream before any later kernel that reads it.
        unsafe { view.set_32_async(0, &self.stream)? };
        Ok(())
    }

    /// A device buffer holding a copy of `data`.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        Ok(DeviceBuffer::from_slice(data)?)
    }

    /// A device buffer of `len` 4-byte elements, every one set to the bit pattern `bits`, so an
    /// element the kernel should have written but did not is caught by the comparison.
    pub fn poisoned<T: DeviceCopy + bytemuck::Pod>(&self, len: usize, bits: u32) -> Result<DeviceBuffer<T>> {
        four_bytes::<T>("poisoned buffer")?;
        // SAFETY: every element is written by `set_32` below before anyone reads it, and every
        // bit pattern is a valid value of the 4-byte `DeviceCopy` types used here (f32, i32, u32).
        let mut buffer = unsafe { DeviceBuffer::<T>::uninitialized(len.max(1))? };
        buffer.set_32(bits)?;
        Ok(buffer)
    }

    /// Time of `iters` back-to-back runs of `f`, measured by CUDA events on the stream.
    pub fn time(&self, iters: u64, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
        let start = Event::new(EventFlags::DEFAULT)?;
        let stop = Event::new(EventFlags::DEFAULT)?;
        start.record(&self.stream)?;
        for _ in 0..iters {
            f()?;
        }
        stop.record(&self.stream)?;
        stop.synchronize()?;
        let ms = stop.elapsed_time_f32(&start)?;
        Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
    }

    /// Median time of one run of `f`: `reps` event-timed samples after `warmup` untimed runs.
    ///
    /// Each sample times a batch of back-to-back runs (enough for about 2 ms) and divides, so
    /// the host's work between launches overlaps the GPU's instead of being counted as GPU time.
    pub fn median_time(&self, warmup: u32, reps: u32, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
        for _ in 0..warmup {
            f()?;
        }
        self.synchronize()?;
        let once = self.time(1, &mut f)?;
        let batch = (0.002 / once.as_secs_f64().max(1e-7)).ceil().clamp(1.0, 64.0) as u64;
        let mut times =
            (0..reps.max(1)).map(|_| Ok(self.time(batch, &mut f)? / batch as u32)).collect::<Result<Vec<_>>>()?;
        times.sort();
        Ok(times[times.len() / 2])
    }
}
