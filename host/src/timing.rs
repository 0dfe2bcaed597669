//! Timing on the device: CUDA-event clocks for whatever a closure queues, and the
//! [`probe`]s, the microbenchmarks of the device whose times the lesson harness
//! (`coalesce-benches`) turns into its time model's rates. The library's entry points need none
//! of it.

use std::time::Duration;

use cust::event::{Event, EventFlags};

use crate::error::Result;
use crate::gpu::Gpu;

pub mod probe;

/// Time of `iters` back-to-back runs of `f`, measured by CUDA events on `gpu`'s stream.
pub fn time(gpu: &Gpu, iters: u64, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    let stream = gpu.bound_stream()?;
    let start = Event::new(EventFlags::DEFAULT)?;
    let stop = Event::new(EventFlags::DEFAULT)?;
    start.record(stream)?;
    for _ in 0..iters {
        f()?;
    }
    stop.record(stream)?;
    stop.synchronize()?;
    let ms = stop.elapsed_time_f32(&start)?;
    Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
}

/// Median time of one run of `f`: `reps` event-timed samples after `warmup` untimed runs.
///
/// Each sample times a batch of back-to-back runs (enough for about 2 ms) and divides, so
/// the host's work between launches overlaps the GPU's instead of being counted as GPU time.
/// One untimed run goes ahead of each sample's start event: the GPU is still busy with it
/// while the batch is queued, so not even the first launch's latency falls between the
/// events (a batch of one long kernel, e.g. a 4096³ SGEMM, would otherwise count it).
pub fn median_time(gpu: &Gpu, warmup: u32, reps: u32, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    for _ in 0..warmup {
        f()?;
    }
    gpu.synchronize()?;
    let once = time(gpu, 1, &mut f)?;
    let batch = (0.002 / once.as_secs_f64().max(1e-7)).ceil().clamp(1.0, 64.0) as u64;
    let mut times = (0..reps.max(1))
        .map(|_| {
            f()?;
            Ok(time(gpu, batch, &mut f)? / batch as u32)
        })
        .collect::<Result<Vec<_>>>()?;
    times.sort();
    Ok(times[times.len() / 2])
}
