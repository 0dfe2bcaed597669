//! Timing shared by the criterion benches and the report: both measure the same registry with
//! the same CUDA-event timing.
use std::time::Duration;

use coalesce::{Gpu, Result};

use crate::family::Variant;
use crate::workload::Workload;

/// Warm-up runs before a median is taken.
pub const WARMUP: u32 = 3;
/// Timed runs a median is taken over.
pub const REPS: u32 = 21;

/// One measured run of one variant at one parameter value.
#[derive(Debug, Clone)]
pub struct Measured {
    pub id: String,
    pub median: Duration,
    pub bytes: u64,
    pub flops: u64,
    /// Timed on the host clock: CPU work (a driver copy is GPU work without a kernel).
    pub on_cpu: bool,
}

impl Measured {
    /// Effective bandwidth in GB/s (10^9 bytes), bytes read plus written once.
    pub fn gbps(&self) -> f64 {
        self.bytes as f64 / self.median.as_secs_f64() / 1e9
    }

    /// TFLOP/s, for compute-bound variants.
    pub fn tflops(&self) -> f64 {
        self.flops as f64 / self.median.as_secs_f64() / 1e12
    }
}

/// Median time of `workload`: CUDA events for GPU work, the host clock for CPU work.
pub fn measure(gpu: &Gpu, id: String, mut workload: Workload) -> Result<Measured> {
    let median = if workload.on_cpu {
        median_host_time(WARMUP.min(1), 5, || workload.launch(gpu))?
    } else {
        coalesce::timing::median_time(gpu, WARMUP, REPS, || workload.launch(gpu))?
    };
    Ok(Measured { id, median, bytes: workload.bytes, flops: workload.flops, on_cpu: workload.on_cpu })
}

/// The median time of one call of `f` in seconds, timed as every run of the report is (the
/// median of [`REPS`] event-timed batches after [`WARMUP`] warm-ups).
pub fn median_seconds(gpu: &Gpu, f: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(coalesce::timing::median_time(gpu, WARMUP, REPS, f)?.as_secs_f64())
}

/// Median wall-clock time of `reps` runs of CPU work after `warmup` runs.
pub fn median_host_time(warmup: u32, reps: u32, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    for _ in 0..warmup {
        f()?;
    }
    let mut times = Vec::new();
    for _ in 0..reps.max(1) {
        let start = std::time::Instant::now();
        f()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Measures `variant` at parameter `value`.
pub fn measure_variant(gpu: &Gpu, variant: &dyn Variant, value: u32) -> Result<Measured> {
    measure(gpu, variant.run_id(value), variant.bench(gpu, value)?)
}

/// The device-to-device memcpy baseline.
pub fn measure_memcpy(gpu: &Gpu) -> Result<Measured> {
    measure(gpu, "baseline/memcpy_dtod".into(), crate::coalescing::bench_memcpy(gpu)?)
}
